"""run-file's worker: the user's files loaded, and their functions compared, in a process of
its own (`python -m gpuvs.yours.file_worker FD`, started by `gpuvs.yours.file_runner`),
so that a segfault, an `os._exit` or a hang in it ends this process, not gpuvs.

One JSON line on stdin brings the request and the cases an earlier worker already did
(this one carries on after them). Events go out on file descriptor FD, a pipe of their
own, one JSON object a line — never on stdout, which the user's prints share:

- `{"plan": [case, …]}` once a size's inputs are built: what its cases are called;
- `{"start": case}` before a case's inputs go to its device and it runs;
- `{"again": why}` when a contended case is measured again (the parent's clock restarts);
- `{"measurement": m}` when it has its result;
- `{"explained": [line, …]}` at the end, once every case is timed: the dispatch costs
  timed here, then the user's function profiled (`yours.explaining.explained_here`), so it
  is said here, where the function is;
- or `{"usage_error": message}`: the file cannot be loaded, BUILDER is missing or
  raised, the function raised on the reference device — nothing to compare.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gpuvs.errors import UsageError
from gpuvs.model import Measurement
from gpuvs.yours import compare
from gpuvs.yours.comparison import Comparison
from gpuvs.yours.explaining import explained_here
from gpuvs.yours.run_file import Request, check_builder, load_targets, spread

EXIT_USAGE = 2

Send = Callable[[str, Any], None]


def main(argv: list[str]) -> int:
    events = os.fdopen(int(argv[0]), "w", encoding="utf-8")
    # Processes the user's code starts must not hold the pipe open: its end tells the
    # parent that this worker died.
    os.set_inheritable(events.fileno(), False)

    def send(key: str, value: Any) -> None:
        events.write(json.dumps({key: value}) + "\n")
        events.flush()

    message = json.loads(sys.stdin.readline())
    try:
        result = _compared(Request.from_dict(message["request"]),
                           [Measurement.from_dict(m) for m in message["done"]], send)
    except UsageError as e:
        send("usage_error", str(e))
        return EXIT_USAGE
    assert result.fresh_call is not None
    send("explained", str(explained_here(result.measurements, result.fresh_call)).splitlines())
    return 0


def _compared(request: Request, done: Sequence[Measurement], send: Send) -> Comparison:
    functions, builder = load_targets(request.targets, request.inputs)
    check_builder(builder, request.inputs, bool(request.sizes))
    args = () if request.sizes else spread(_built(builder, request.inputs))
    fn = next(iter(functions.values())) if len(functions) == 1 else functions
    return compare.run(
        fn, args, {}, devices=request.devices, batch=builder if request.sizes else None,
        sizes=request.sizes or None, budget_s=request.budget_s, tolerance=request.tolerance,
        done=done, on_plan=lambda cases: send("plan", [c.to_dict() for c in cases]),
        on_start=lambda case: send("start", case.to_dict()),
        on_again=lambda: send("again", "contended: measuring it again"),
        on_result=lambda m: send("measurement", m.to_dict()))


def _built(builder: Callable[[], Any], name: str) -> Any:
    """BUILDER(), or a UsageError that says what it raised and where."""
    try:
        return builder()
    except Exception as e:
        raise UsageError(f"{name}() raised {type(e).__name__}{compare.raised_at(e)}: "
                         f"{e}") from e


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
