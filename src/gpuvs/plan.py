"""Axes → the ordered cases of a run.

Sizes ascend (so an out-of-memory stops a series before its larger sizes) and, at each
size, every backend and device runs before the next size: slow drift in the machine's
state then hits all backends alike.
"""

from __future__ import annotations

from itertools import product

from gpuvs import backends, workloads
from gpuvs.config import RunConfig
from gpuvs.model import Case, Params


def expand(config: RunConfig) -> tuple[Case, ...]:
    cases: list[Case] = []
    for name in config.workloads or workloads.default_suite():
        cases.extend(_workload_cases(name, config))
    return tuple(cases)


def _workload_cases(name: str, config: RunConfig) -> list[Case]:
    workload = workloads.get(name)
    # Without --variant a run measures correctly; replays of the posts are asked for.
    variants = [v for v in workload.variants if v in (config.variants or ("correct",))]
    dtypes = config.dtypes or workload.dtypes
    targets = _targets(config)
    cases = []
    for params in workload.param_sets():
        sizes = config.sizes or workload.default_sizes(params)
        for size, dtype, variant in product(sizes, dtypes, variants):
            for backend, device in targets:
                for data in _data_modes(workload.data_modes(params), device):
                    extra = (("cache", "cold"),) if config.cold else ()
                    case = Case(name, variant, backend, device, dtype, size,
                                tuple(sorted((*_with_data(params, data), *extra))))
                    if workload.applies(case):
                        cases.append(case)
    return cases


def _targets(config: RunConfig) -> list[tuple[str, str]]:
    """(backend, device) pairs: each device the backend can run on at all."""
    pairs = []
    for device in config.devices:
        kind = device.partition(":")[0]
        canonical = "cuda:0" if device == "cuda" else device
        for name in config.backends or backends.names():
            if kind in backends.get(name).device_kinds:
                pairs.append((name, canonical))
    return pairs


def _data_modes(modes: tuple[str, ...], device: str) -> tuple[str, ...]:
    # On the CPU there is nothing to copy: every case is resident.
    return modes if device.startswith("cuda") else ("resident",)


def _with_data(params: Params, data: str) -> Params:
    return params if data == "resident" else tuple(sorted((*params, ("data", data))))
