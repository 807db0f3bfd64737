"""run-file's worker: the user's files loaded, and their functions compared, in a process of
its own (`python -m gpuvs.yours.file_worker FD`, started by `gpuvs.yours.file_runner`),
so that a segfault, an `os._exit` or a hang in it ends this process, not gpuvs.

One line on stdin brings the request (`execute.wire.RunFile`), with the cases an earlier
worker already did (this one carries on after them). Events go out on file descriptor
FD, a pipe of their own, one `execute.wire` message a line — never on stdout, which the
user's prints share:

- `Planned(cases)` once a size's inputs are built: what its cases are called;
- `Started(case)` before a case's inputs go to its device and it runs;
- `Again` when a contended case is measured again (the parent's clock restarts);
- `Measured(m)` when it has its result;
- `Explained(ceilings, kernels)` at the end, once every case is timed: the dispatch costs
  timed here, then the user's function profiled (`yours.explaining.observed_here`): what
  only the process where the function is can observe;
- or `Refused(message)`: the file cannot be loaded, BUILDER is missing or raised, the
  function raised on the reference device — nothing to compare.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.execute.wire import (
    Again,
    Explained,
    Measured,
    Message,
    Planned,
    Refused,
    RunFile,
    Started,
    decode,
    encode,
)
from gpuvs.yours import compare
from gpuvs.yours.comparison import Comparison
from gpuvs.yours.explaining import observed_here
from gpuvs.yours.run_file import check_builder, load_targets, spread

EXIT_USAGE = 2

Send = Callable[[Message], None]


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
        result = _compared(request, send)
    except UsageError as e:
        send(Refused(str(e)))
        return EXIT_USAGE
    assert result.fresh_call is not None
    send(Explained(*observed_here(result.measurements, result.fresh_call))
         if request.explain else Explained())
    return 0


def _compared(request: RunFile, send: Send) -> Comparison:
    functions, builder = load_targets(request.targets, request.inputs)
    check_builder(builder, request.inputs, bool(request.sizes))
    args = () if request.sizes else spread(_built(builder, request.inputs))
    fn = next(iter(functions.values())) if len(functions) == 1 else functions
    return compare.run(
        fn, args, {}, devices=request.devices, batch=builder if request.sizes else None,
        sizes=request.sizes or None, budget_s=request.sampling.budget_s,
        criterion=request.sampling.criterion, tolerance=request.tolerance,
        done=request.done, on_plan=lambda cases: send(Planned(tuple(cases))),
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
