"""The workload registry. A workload is one file that registers itself with `@register`."""

from __future__ import annotations

from gpuvs.registry import Registry
from gpuvs.workloads.base import Workload

REGISTRY: Registry[Workload] = Registry(
    "workload", ("gpuvs.workloads.matmul", "gpuvs.workloads.elementwise")
)
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names

__all__ = ["REGISTRY", "Workload", "get", "names", "register"]
