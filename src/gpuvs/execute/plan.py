"""Axes → the ordered cases of a run.

Sizes ascend (so an out-of-memory stops a series before its larger sizes) and, at each
size, every backend and device runs before the next size: slow drift in the machine's
state then hits all backends alike.
"""

from __future__ import annotations

from itertools import product

from gpuvs import backends, workloads
from gpuvs.config import RunConfig, parse_axes
from gpuvs.errors import UsageError
from gpuvs.model import Case, Params, on_gpu

# What a case without the parameter has: data left on the device.
AXIS_DEFAULTS = {"data": "resident"}
# A plan of more cases than this starts only with --yes: `gpuvs run --all` is 227 cases,
# and `-s 1:1e6:1.001` once planned 23,733 — a typo that would have measured for a day.
CONFIRM_CASES = 1000


def expand(config: RunConfig) -> tuple[Case, ...]:
    """The run's cases; a config that selects none is bad usage (an empty run stored as
    if it had measured something would say nothing)."""
    cases: list[Case] = []
    names = config.workloads or workloads.default_suite()
    for name in names:
        cases.extend(_workload_cases(name, config))
    axes = parse_axes(config.axes)
    kept = tuple(c for c in cases if all(_value(c, k) == v for k, v in axes.items()))
    if not kept:
        raise UsageError(_why_empty(names, config, cases, axes))
    return kept


def confirm(cases: tuple[Case, ...], yes: bool) -> None:
    """A plan above CONFIRM_CASES cases is refused unless the user said --yes."""
    if len(cases) > CONFIRM_CASES and not yes:
        raise UsageError(f"this plan has {len(cases):,} cases, more than {CONFIRM_CASES:,}; "
                         "--dry-run shows it, -w, -s or -a narrow it, --yes starts it")


def check_gpu_here(config: RunConfig) -> None:
    """A run that asks only for CUDA devices on a machine that shows none would store a
    run of unavailable cases and exit 0: refused before anything is stored, naming what
    runs here. Asked beside the CPU, the GPU's cases are said unavailable as usual."""
    from gpuvs.backends.base import machine_has_gpu

    if {d.partition(":")[0] for d in config.devices} != {"cuda"} or machine_has_gpu():
        return
    here = [name for name in config.backends or backends.names()
            if "cpu" in backends.get(name).device_kinds
            and backends.get(name).unavailable_reason("cpu") is None]
    runs = f"-d cpu runs {', '.join(here)}" if here else "no backend runs on its CPU either"
    raise UsageError(f"-d {', '.join(config.devices)}: this machine shows no NVIDIA device, "
                     f"so no case would run; here {runs}")


def first_answer(config: RunConfig) -> bool:
    """Whether the run is the first-answer suite: no workload, variant or axis named and
    no --all. A user who names any of them gets every case that matches it; `--all` gets
    every workload of the default suite."""
    return not (config.workloads or config.full_suite or config.variants or config.axes)


def _value(case: Case, name: str) -> str | None:
    return case.param(name, AXIS_DEFAULTS.get(name, "")) or None


def _why_empty(names: tuple[str, ...], config: RunConfig, cases: list[Case],
               axes: dict[str, str]) -> str:
    if not cases and config.variants:
        offered = {n: workloads.get(n).variants for n in names}
        return (f"no case to run: no variant {', '.join(config.variants)} in "
                + "; ".join(f"{n} (it has {', '.join(v)})" for n, v in offered.items()))
    if not cases:
        return "no case to run with these options; `gpuvs list` shows what each workload runs"
    seen: dict[str, set[str]] = {}
    for c in cases:
        for k in axes:
            if (v := _value(c, k)) is not None:
                seen.setdefault(k, set()).add(v)
    bad = next((k for k in axes if axes[k] not in seen.get(k, set())), None)
    if bad is None:
        return (f"no case has {' and '.join(f'{k}={v}' for k, v in axes.items())} at once; "
                "drop an --axis")
    accepted = ", ".join(sorted(seen.get(bad, set()))) or "none: no case has this parameter"
    return f"no case has {bad}={axes[bad]}; accepted values of {bad} here: {accepted}"


def _workload_cases(name: str, config: RunConfig) -> list[Case]:
    workload = workloads.get(name)
    # Without --variant a run measures correctly; replays of the posts are asked for.
    variants = [v for v in workload.variants if v in (config.variants or ("correct",))]
    dtypes = config.dtypes or workload.dtypes
    targets = _targets(config)
    first = first_answer(config)
    cases = []
    for params in workload.param_sets():
        sizes = workload.first_answer_sizes(params) if first else workload.default_sizes(params)
        if not sizes:
            continue
        sizes = config.sizes or sizes
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
    return modes if on_gpu(device) else ("resident",)


def _with_data(params: Params, data: str) -> Params:
    return params if data == "resident" else tuple(sorted((*params, ("data", data))))
