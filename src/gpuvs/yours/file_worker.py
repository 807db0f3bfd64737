"""run-file's worker: the user's files loaded, and their functions compared, in a process of
its own (`python -m gpuvs.yours.file_worker FD`, started by `gpuvs.yours.file_runner`),
so that a segfault, an `os._exit` or a hang in it ends this process, not gpuvs.

Two lines on stdin. The first brings the request (`execute.wire.RunFile`): the worker
loads the user's files (torch and whatever else they import), finds FUNC and BUILDER,
starts each GPU asked for with the frameworks the files imported (`Backend.preload`),
and says it is `Ready`. It builds no inputs and times nothing before the second line,
`Go(done)`, which brings the cases earlier workers already did (this one carries on
after them): the parent starts a later pass's worker ahead, while nothing is measured,
and tells it to go only in its turn, when the cases it is to skip are known. Inputs are
built after the go (and are part of their case's clock): a score of workers waiting
never holds a score of copies of them. An end of input instead: its turn never came,
and it exits.

Events go out on file descriptor FD, a pipe of their own, one `execute.wire` message a
line — never on stdout, which the user's prints share:

- `Ready()` once the files are loaded;
- `Planned(cases)` once a size's inputs are built: what its cases are called;
- `Started(case)` before a case's inputs go to its device and it runs;
- `Again` when a contended case is measured again (the parent's clock restarts);
- `Measured(m)` when it has its result;
- `Explained(ceilings, kernels)` at the end, once every case is timed: the dispatch costs
  timed here, then the user's function profiled (`yours.explaining.observed_here`): what
  only the process where the function is can observe;
- or `Refused(message)`, in place of `Ready` or later: the file cannot be loaded,
  BUILDER is missing or raised, the function raised on the reference device — nothing
  to compare.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gpuvs import backends
from gpuvs.errors import UsageError
from gpuvs.execute.wire import (
    Again,
    Explained,
    Go,
    Measured,
    Message,
    Planned,
    Ready,
    Refused,
    RunFile,
    Started,
    decode,
    encode,
)
from gpuvs.model import Measurement
from gpuvs.yours import compare
from gpuvs.yours.comparison import Comparison
from gpuvs.yours.explaining import observed_here
from gpuvs.yours.run_file import check_builder, load_targets, spread

EXIT_USAGE = 2
# The frameworks whose GPU context a worker starts before it says it is ready, where the
# user's files imported them: the backends `moving.backend_for` picks on a GPU.
GPU_FRAMEWORKS = ("torch", "cupy")

Send = Callable[[Message], None]


@dataclass(frozen=True)
class _Loaded:
    """The user's functions (one, or several by name) and BUILDER, loaded and checked."""

    fn: compare.Functions
    builder: Callable[..., Any]


def main(argv: list[str]) -> int:
    events = os.fdopen(int(argv[0]), "w", encoding="utf-8")
    # Processes the user's code starts must not hold the pipe open: its end tells the
    # parent that this worker died.
    os.set_inheritable(events.fileno(), False)

    def send(event: Message) -> None:
        events.write(encode(event) + "\n")
        events.flush()

    request = decode(sys.stdin.readline())
    if not isinstance(request, RunFile):
        raise SystemExit(f"run-file's worker takes a run-file request, not {request.kind}")
    try:
        loaded = _loaded(request)
    except UsageError as e:
        send(Refused(str(e)))
        return EXIT_USAGE
    send(Ready())
    line = sys.stdin.readline()
    if not line:  # closed unused: every case was settled before its turn
        return 0
    go = decode(line)
    if not isinstance(go, Go):
        raise SystemExit(f"run-file's worker, ready, waits to go, not {go.kind}")
    try:
        result = _compared(request, loaded, go.done, send)
    except UsageError as e:
        send(Refused(str(e)))
        return EXIT_USAGE
    assert result.fresh_call is not None
    send(Explained(*observed_here(result.measurements, result.fresh_call))
         if request.explain else Explained())
    return 0


def _loaded(request: RunFile) -> _Loaded:
    """What a worker does before it is ready, timing nothing: the files imported, FUNC and
    BUILDER found and checked, the GPUs started."""
    functions, builder = load_targets(request.targets, request.inputs)
    check_builder(builder, request.inputs, bool(request.sizes))
    _gpus_started(request.devices)
    fn = next(iter(functions.values())) if len(functions) == 1 else functions
    return _Loaded(fn, builder)


def _gpus_started(devices: Sequence[str]) -> None:
    """Each GPU asked for started by each framework the user's files imported (a CUDA
    context: most of a second), so that a worker waiting for its turn does not pay it in
    its turn. Which framework runs a case is the inputs', known once they are built: a
    framework the files did not import is not imported here. Whatever fails here fails
    again at the case, which records why."""
    for device in (d for d in devices if d != "cpu"):
        for backend in map(backends.get, GPU_FRAMEWORKS):
            if backend.module in sys.modules:
                with contextlib.suppress(Exception):
                    backend.preload(device)


def _compared(request: RunFile, loaded: _Loaded, done: Sequence[Measurement], send: Send
              ) -> Comparison:
    builder = loaded.builder
    args = () if request.sizes else spread(_built(builder, request.inputs))
    return compare.run(
        loaded.fn, args, {}, devices=request.devices,
        batch=builder if request.sizes else None, sizes=request.sizes or None,
        budget_s=request.sampling.budget_s, criterion=request.sampling.criterion,
        tolerance=request.tolerance, done=done, end_to_end=request.end_to_end,
        on_plan=lambda cases: send(Planned(tuple(cases))),
        on_start=lambda case: send(Started(case)), on_again=lambda: send(Again()),
        on_result=lambda m: send(Measured(m)))


def _built(builder: Callable[[], Any], name: str) -> Any:
    """BUILDER(), or a UsageError that says what it raised and where."""
    try:
        return builder()
    except Exception as e:
        raise UsageError(f"{name}() raised {type(e).__name__}{compare.raised_at(e)}: "
                         f"{e}") from e


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
