"""`gpuvs.measure(fn)`: the protocol for any callable, on the CPU or a CUDA device."""

from __future__ import annotations

from collections.abc import Callable

from gpuvs import backends, criteria
from gpuvs.errors import BackendUnavailable, UsageError
from gpuvs.model import Case, Measurement
from gpuvs.protocol import Budget, Clock, HostClock, Prepared
from gpuvs.protocol import measure as _measure


def _no_check(out: object) -> None:
    return None


def measure(fn: Callable[[], object], *, device: str = "cpu", budget_s: float = 1.0,
            criterion: str = "median-ci", check: Callable[[object], None] | None = None,
            single_call: bool = False, name: str = "custom") -> Measurement:
    """Time `fn()` by the gpuvs protocol.

    On `device="cuda"` / `"cuda:N"` the work is timed with CUDA events through PyTorch
    and the host clock is only read after synchronising. `check(output)` runs once,
    outside the timed region, and should raise `gpuvs.errors.WrongResult` on a bad output.
    The first call is timed alone and kept apart as `first_call_s`.
    """
    if budget_s <= 0:
        raise UsageError(f"budget_s must be a positive number of seconds; got {budget_s}")
    clock = _clock(device)
    case = Case(name, "correct", "torch" if device != "cpu" else "python", device, "", 0)
    prepared = Prepared(call=fn, check=check or _no_check, single_call=single_call)
    return _measure(prepared, case, clock, criteria.parse(criterion)(), Budget(seconds=budget_s))


def _clock(device: str) -> Clock:
    if device == "cpu":
        return HostClock()
    if not device.startswith("cuda"):
        raise UsageError(f"unknown device {device!r}; accepted: cpu, cuda, cuda:N")
    torch = backends.get("torch")
    reason = torch.unavailable_reason(device)
    if reason is not None:
        raise BackendUnavailable(reason)
    return torch.clock(device)
