"""How the `gpuvs_bench` fixture measures a call: in the test's own process, by the one
measuring path (`execute.take`), or in worker processes (`gpuvs.compare(…, processes=N)`'s
path, resident only), named either way as the test's own case; and the first
implementation's output, which every other one's must agree with.

Apart from the plug-in, which pytest imports in every session of an environment with gpuvs
installed: this module is imported only once a test calls the fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from gpuvs.errors import GpuvsError, WrongResult, one_line
from gpuvs.execute.take import take
from gpuvs.execute.wire import Sampling
from gpuvs.measuring.protocol import Prepared
from gpuvs.model import YOURS_PREFIX, Case, Measurement, Status
from gpuvs.yours import moving, workers
from gpuvs.yours.agreement import agreement
from gpuvs.yours.compare import source_hash
from gpuvs.yours.moving import clock_for


@dataclass
class Agreed:
    """The first implementation's output, which every other one's must agree with."""

    name: str
    output: Any = None

    def checker(self, name: str) -> Callable[[Any], None] | None:
        if name == self.name:
            return None

        def check(out: Any) -> None:
            where = (moving.data_devices(out) or ["cpu"])[0]
            found = agreement(out, moving.snapshot(self.output), f"{where} ({name})",
                              f"{where} ({self.name})")
            if found.reason is not None:
                raise WrongResult(found.reason)

        return check


def measure_call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
                 device: str | None, budget_s: float,
                 check: Callable[[Any], None] | None = None) -> tuple[Measurement, Any]:
    """Time `fn(*args, **kwargs)` where its data lives; the measurement and fn's output.
    `check(output)` runs once, outside the timed region: a `WrongResult` it raises makes
    the measurement `wrong_result`."""
    data = (args, kwargs)
    where = device or (moving.data_devices(data) or ["cpu"])[0]
    backend, clock = clock_for(where, moving.leaves(data))
    outputs: list[Any] = []

    def kept(out: Any) -> None:
        outputs.append(out)
        if check is not None:
            check(out)

    case = Case(name, "correct", backend, where, moving.floating_dtype(data),
                moving.batch_size(data))
    prepared = Prepared(call=lambda: fn(*args, **kwargs), check=kept)
    # The one measuring path, with its watches: on a busy machine a case is measured
    # again after a pause, and marked `contended` if it stays so — the gate then says it
    # cannot judge it (`analysis.regression.unjudged`), never that it passed.
    try:
        m = take(case, lambda: prepared, Sampling(budget_s), clock=clock,
                 raising=True).measurement
    except WrongResult as e:
        m = Measurement(case, Status.WRONG_RESULT, str(e))
    return replace(m, workload_version=source_hash(fn)), outputs[0]


def measure_in_processes(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                         names: list[str], device: str | None, budget_s: float,
                         processes: int) -> list[Measurement] | str:
    """`fn` (or several, by name) timed in `processes` worker processes where its data
    lives, resident only: one measurement per implementation, named `names` as the test's
    own would be; or why it cannot move there (a function a worker cannot import by name,
    keyword arguments, arguments that do not pickle)."""
    originals = list(fn.values()) if isinstance(fn, Mapping) else [fn]
    data = (args, kwargs)
    where = device or (moving.data_devices(data) or ["cpu"])[0]
    try:
        compared = workers.run(fn, args, kwargs, processes=processes, devices=(where,),
                               budget_s=budget_s, end_to_end=False)
    except workers.CannotMove as e:
        return e.why
    except GpuvsError as e:
        return one_line(e)
    by_workload = {m.case.workload: m for m in compared.measurements}
    out = []
    for impl, original, name in zip(compared.implementations, originals, names, strict=True):
        m = by_workload[YOURS_PREFIX + impl]
        case = replace(m.case, workload=name, device=where, size=moving.batch_size(data),
                       dtype=moving.floating_dtype(data), params=())
        out.append(replace(m, case=case, workload_version=source_hash(original)))
    return out
