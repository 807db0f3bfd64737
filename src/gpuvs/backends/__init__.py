"""The backend registry. A backend is one file that registers itself with `@register`.

Two questions every entry point asks of a device string are answered here once: which
devices gpuvs accepts (`check_device`, the one place that says "unknown device"), and how
work on a device is timed (`clock_for`: the host clock on the CPU, device events through
the backend that runs the work on a GPU)."""

from __future__ import annotations

import re

from gpuvs.backends.base import Backend
from gpuvs.errors import BackendUnavailable, UsageError
from gpuvs.measuring.protocol import Clock, HostClock
from gpuvs.model import on_gpu
from gpuvs.registry import Registry

REGISTRY: Registry[Backend] = Registry(
    "backend",
    ("gpuvs.backends.numpy_", "gpuvs.backends.torch_", "gpuvs.backends.cupy_",
     "gpuvs.backends.jax_"),
)
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names

DEVICES = "cpu, cuda, cuda:N"
_DEVICE = re.compile(r"^(cpu|cuda(:\d+)?)$")


def check_device(device: object) -> str:
    """`device` when gpuvs accepts it (cpu, cuda, cuda:N); else a UsageError naming it."""
    if not isinstance(device, str) or not _DEVICE.match(device):
        raise UsageError(f"unknown device {device!r}; accepted: {DEVICES}")
    return device


def clock_for(device: str, backend: Backend | str | None = None) -> Clock:
    """How work on `device` is timed: the host clock on the CPU (work there is
    synchronous), else `backend`'s device events (torch's by default), after saying why
    that backend cannot run there, if it cannot. A backend handed in as itself times with
    its own clock (a simulated device's clock is the device)."""
    check_device(device)
    chosen = get(backend) if isinstance(backend, str) else backend
    if not on_gpu(device):
        return HostClock() if chosen is None else chosen.clock(device)
    chosen = chosen or get("torch")
    reason = chosen.unavailable_reason(device)
    if reason is not None:
        raise BackendUnavailable(reason)
    return chosen.clock(device)


__all__ = ["Backend", "DEVICES", "REGISTRY", "check_device", "clock_for", "get", "names",
           "register"]
