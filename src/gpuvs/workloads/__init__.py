"""What is measured: the workload registry, one file a workload that registers itself with
`@register` (`matmul`, `elementwise`, `gru`, `cnn` with `cifar`, `jacobian`, the
ceiling `probes` and `op_classes`, and a run's `calibration`), each a `base.Workload`."""

from __future__ import annotations

from gpuvs.registry import Registry
from gpuvs.workloads.base import SizeAxis, Workload

REGISTRY: Registry[Workload] = Registry(
    "workload",
    ("gpuvs.workloads.matmul", "gpuvs.workloads.elementwise", "gpuvs.workloads.probes",
     "gpuvs.workloads.op_classes",
     "gpuvs.workloads.gru", "gpuvs.workloads.cnn",
     "gpuvs.workloads.jacobian", "gpuvs.workloads.calibration"),
)
register = REGISTRY.register
get = REGISTRY.get
find = REGISTRY.find
names = REGISTRY.names


def default_suite() -> tuple[str, ...]:
    """What `gpuvs run` measures when no workload is named."""
    return tuple(w.name for w in REGISTRY.all() if w.in_default_suite)

__all__ = ["REGISTRY", "SizeAxis", "Workload", "default_suite", "find", "get", "names",
           "register"]
