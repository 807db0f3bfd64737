"""The nouns of gpuvs, as frozen dataclasses.

A `Measurement` is self-describing: it carries its `Case`, its status and its raw
samples, so it can be stored, exported and reported as is. Statistics are derived
from the samples (`Measurement.summary`); a stored record or an export keeps them beside
the samples under a key of what they came from (`Measurement.to_record`), so that reading
a run back bootstraps nothing, and a kept summary never disagrees with its samples.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from functools import cached_property
from types import MappingProxyType
from typing import Any

from gpuvs import stats, units

Params = tuple[tuple[str, str], ...]

# The workloads that are the user's own code, not gpuvs's: what `gpuvs.compare`, run-file
# and the magic time is `yours:NAME`, what the pytest fixture times `pytest:TEST`. Their
# version is a hash of the function's source, so a new version is the code changed.
YOURS_PREFIX, PYTEST_PREFIX = "yours:", "pytest:"
# The workload of a run's calibration: one short fixed probe per bound, measured first in
# the run's own workers (`workloads.calibration`), read by `analysis.calibration`, kept
# out of every sweep, answer and crossover, and set beside another run's by `compare`.
CALIBRATION = "calibration"
# Its probes, one per bound a case's time can follow: the host issuing one op (`launch`,
# on every backend and device of the run), the CPU's arithmetic (`cpu`, on one thread and
# on all), the host's memory, the device's arithmetic and memory, and a round trip of
# host↔device copies (`transfer`).
CALIBRATION_BOUNDS = ("launch", "cpu", "host_memory", "device_compute", "device_memory",
                      "transfer")


def on_gpu(device: str) -> bool:
    """Whether `device` names a GPU (`cuda`, `cuda:N`): the one test of it, wherever a
    device string is read."""
    return device.startswith("cuda")


class Status(str, Enum):
    """How a case ended. Only `OK` carries samples; every other status carries a reason."""

    OK = "ok"
    SKIPPED = "skipped"
    UNAVAILABLE = "unavailable"
    OOM = "oom"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    WRONG_RESULT = "wrong_result"

    def __str__(self) -> str:
        return self.value


class Caveat(str, Enum):
    """A named reason to qualify a number; `gpuvs.measuring.caveats.ADVICE` says what to do
    about each."""

    UNSTABLE = "unstable"
    FIRST_CALL_SLOW = "first_call_slow"
    BUDGET_EXHAUSTED = "budget_exhausted"
    FEW_SAMPLES = "few_samples"
    THROTTLED = "throttled"
    DTYPE_MISMATCH = "dtype_mismatch"
    TF32_ON = "tf32_on"
    OUTLIERS = "outliers"
    CONTENDED = "contended"
    MULTIMODAL = "multimodal"
    DRIFTING = "drifting"
    PROCESS_DEPENDENT = "process_dependent"
    THINNED = "thinned"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Case:
    """One cell of a sweep: workload × variant × backend × device × dtype × size (+ params)."""

    workload: str
    variant: str
    backend: str
    device: str
    dtype: str
    size: int
    params: Params = ()

    @property
    def key(self) -> str:
        """Stable identity of the case in the store and on the command line."""
        extra = "".join(f",{k}={v}" for k, v in self.params)
        return (
            f"{self.workload}/{self.variant}/{self.backend}/{self.device}/"
            f"{self.dtype}/{self.size}{extra}"
        )

    def param(self, name: str, default: str = "") -> str:
        return dict(self.params).get(name, default)

    @property
    def users_code(self) -> bool:
        """Whether the case times the user's own code (`YOURS_PREFIX`, `PYTEST_PREFIX`):
        a new version of it is what a gate judges, not a reason to refuse."""
        return self.workload.startswith((YOURS_PREFIX, PYTEST_PREFIX))

    @property
    def calibrates(self) -> bool:
        """Whether the case is one of its run's calibration probes (`CALIBRATION`): it
        describes the machine, not the work, and is shown and judged apart."""
        return self.workload == CALIBRATION

    @property
    def backend_device(self) -> str:
        """'numpy cpu', 'torch cuda:0': who ran the case, as tables, legends and notes
        name it, so that a series reads the same in each of them."""
        return f"{self.backend} {self.device}"

    @property
    def series(self) -> Case:
        """The case with its size zeroed: cases of one series differ only by size."""
        return Case(self.workload, self.variant, self.backend, self.device, self.dtype, 0,
                    self.params)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "params": [list(p) for p in self.params]
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Case:
        params = tuple((str(k), str(v)) for k, v in d.get("params", ()))
        return cls(str(d["workload"]), str(d["variant"]), str(d["backend"]), str(d["device"]),
                   str(d["dtype"]), int(d["size"]), params)


# The run-to-run spread of a median, measured for each timer (docs/accuracy.md): how far
# the next repeat's median lands from this one's, relative, which no CI from one
# process's samples can show. A CI is never narrower. CUDA events: big kernels on an H100
# (a 4096³ float32 product, x.mul_ and CuPy x *= 5 on 10⁸ elements, a bf16 product at the
# power cap) stayed within 0.5 % over ten repeats in one session; two whole runs two
# minutes apart (2026-11-27) put the 1024² and 2048² products and the 2048² probe 0.52 %,
# 0.63 % and 0.68 % apart, so 1 %. Elsewhere not measured, so no floor is claimed.
REPEAT_SPREAD: Mapping[str, float] = MappingProxyType({"cuda_events": 0.01})


def _frozen_mapping(m: Mapping[str, float] | None) -> Mapping[str, float]:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True)
class Measurement:
    """The result of one case.

    `samples` are seconds per call as the device saw them (CUDA events on asynchronous
    devices, the host clock on synchronous ones); `wall_samples` are synchronised host
    seconds per call — what a caller waits — and are only kept where the two differ,
    i.e. on asynchronous devices. `graph_samples` are seconds per call with the calls
    captured as one CUDA graph and replayed (no host launch in them), where a case samples
    them: `gpuvs dist collectives` on NCCL, whose small calls cost the host as much as the
    links. `timer` names how `samples` were taken.
    """

    case: Case
    status: Status
    reason: str = ""
    samples: tuple[float, ...] = ()
    wall_samples: tuple[float, ...] = ()
    loops: int = 1
    first_call_s: float | None = None
    warmups: int = 0
    timer: str = ""
    counters: Mapping[str, float] = field(default_factory=dict)
    caveats: tuple[Caveat, ...] = ()
    workload_version: str = ""
    graph_samples: tuple[float, ...] = ()
    passes: tuple[int, ...] = ()  # samples each pass took, each in a process of its own

    def __post_init__(self) -> None:
        object.__setattr__(self, "counters", _frozen_mapping(self.counters))

    @cached_property
    def summary(self) -> stats.Summary | None:
        """Statistics of `samples`; None when the case produced none. The CI covers every
        pass's median (`passes`), and is never narrower than the run-to-run spread
        measured for its timer (`REPEAT_SPREAD`)."""
        return self._summarized("samples")

    @property
    def one_process(self) -> bool:
        """Whether it finished with its samples from one process: a call too long to
        sample in two, a post's replay, the user's function timed in its own process. Its
        interval shows that process only; a repeat lands where the kind's processes land."""
        return self.status is Status.OK and len(self.passes) < 2

    @cached_property
    def regimes(self) -> stats.Regimes | None:
        """The two groups its processes' medians fell in, where they did (a launch-bound
        loop whose speed each process sets at its start: `stats.regimes`)."""
        return stats.regimes(self.samples, self.passes) if self.samples else None

    @cached_property
    def wall_summary(self) -> stats.Summary | None:
        return self._summarized("wall_samples")

    @cached_property
    def graph_summary(self) -> stats.Summary | None:
        return self._summarized("graph_samples")

    def _summarized(self, name: str) -> stats.Summary | None:
        derived = self._derivation(name)
        return stats.summarize(*derived) if derived[0] else None

    def _derivation(self, name: str) -> tuple[tuple[float, ...], tuple[int, ...], float]:
        """What the summary of the samples field `name` is computed from: the samples, and
        for `samples` the passes and the floor of its timer."""
        if name == "samples":
            return self.samples, self.passes, REPEAT_SPREAD.get(self.timer, 0.0)
        return getattr(self, name), (), 0.0

    def to_record(self) -> dict[str, Any]:
        """`to_dict` with the summary of each samples field, under the key of what it was
        computed from (`stats.summary_key`): what a store saves and an export writes.
        Reading it back (`from_dict`) takes a summary only under the same key, so a stored
        run is shown without a bootstrap, and never with a summary of other samples."""
        kept = {name: asdict(s) | {"of": stats.summary_key(*self._derivation(name))}
                for attribute, name in _SUMMARIES if (s := getattr(self, attribute))}
        return self.to_dict() | ({"summaries": kept} if kept else {})

    def _take_back(self, kept: Any) -> None:
        """Set the summaries a record kept (`to_record`) where each is one of these samples:
        its key matches and its numbers are a summary's; any other is computed again."""
        if not isinstance(kept, Mapping):
            return
        for attribute, name in _SUMMARIES:
            derived = self._derivation(name)
            entry = kept.get(name)
            if (derived[0] and isinstance(entry, Mapping)
                    and entry.get("of") == stats.summary_key(*derived)):
                summary = _summary_from(entry, len(derived[0]))
                if summary is not None:
                    # cached_property's own slot: `summary` and the others read it first
                    self.__dict__[attribute] = summary

    def __repr__(self) -> str:
        """One line, as a timing prints in PyTorch: what was timed, the median with its
        95 % CI, the samples behind it and the first call. The samples themselves stay in
        `samples`; the dataclass's own repr printed every one of them."""
        c = self.case
        what = c.key if c.size or c.dtype else f"{c.workload} on {c.device}"
        s = self.summary
        said = [] if self.status is Status.OK else [str(self.status), *filter(None, [self.reason])]
        if s is not None:
            wall = self.wall_summary
            said += [f"median {units.seconds_ci(s.median, s.ci_halfwidth_rel)} (95 % CI)",
                     f"{s.n} samples of {self.loops} call{'s' if self.loops > 1 else ''}",
                     *([f"wall {units.seconds(wall.median)}"] if wall else []),
                     *([f"first call {units.seconds(self.first_call_s)}"]
                       if self.first_call_s is not None else []),
                     *(str(cv) for cv in self.caveats)]
        return f"Measurement({what}: {', '.join(said)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case.to_dict(),
            "status": self.status.value,
            "reason": self.reason,
            "samples": list(self.samples),
            "wall_samples": list(self.wall_samples),
            "loops": self.loops,
            "first_call_s": self.first_call_s,
            "warmups": self.warmups,
            "timer": self.timer,
            "counters": dict(self.counters),
            "caveats": [c.value for c in self.caveats],
            "workload_version": self.workload_version,
            # Only where sampled: every stored run and export before it reads the same.
            **({"graph_samples": list(self.graph_samples)} if self.graph_samples else {}),
            **({"passes": list(self.passes)} if self.passes else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Measurement:
        """A measurement from `to_dict` or `to_record`, its kept summaries taken back."""
        m = cls(
            case=Case.from_dict(d["case"]),
            status=Status(d["status"]),
            reason=str(d.get("reason", "")),
            samples=tuple(float(x) for x in d.get("samples", ())),
            wall_samples=tuple(float(x) for x in d.get("wall_samples", ())),
            loops=int(d.get("loops", 1)),
            first_call_s=d.get("first_call_s"),
            warmups=int(d.get("warmups", 0)),
            timer=str(d.get("timer", "")),
            counters={str(k): float(v) for k, v in d.get("counters", {}).items()},
            caveats=tuple(Caveat(c) for c in d.get("caveats", ())),
            workload_version=str(d.get("workload_version", "")),
            graph_samples=tuple(float(x) for x in d.get("graph_samples", ())),
            passes=tuple(int(x) for x in d.get("passes", ())),
        )
        m._take_back(d.get("summaries"))
        return m


# The summaries a record keeps: (the attribute, the samples field it summarises).
_SUMMARIES = (("summary", "samples"), ("wall_summary", "wall_samples"),
              ("graph_summary", "graph_samples"))


def _summary_from(entry: Mapping[str, Any], n: int) -> stats.Summary | None:
    """A kept summary's numbers as a `Summary` of `n` samples, or None where they are not
    one (a count that differs, a value that is no finite number, a median outside its
    CI)."""
    values: dict[str, float] = {}
    for f in fields(stats.Summary):
        v = entry.get(f.name)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return None
        values[f.name] = float(v)
    if values.pop("n") != n:
        return None
    summary = stats.Summary(n=n, **values)
    return summary if summary.ci_low <= summary.median <= summary.ci_high else None


# Ops whose host cost differs from an elementwise one's, each with its own `dispatch`
# probe on a GPU: an array made from nothing, a small matrix product (the BLAS's dispatch
# and its shortest kernel), a fused function's call (a compiled function's guards, a
# jitted one's dispatch, a raw kernel's launch). A workload says which family its
# launches are (`Workload.op_family`; "" for elementwise ops); `gpuvs predict` prices
# them at that family's measured cost.
OP_FAMILIES = ("create", "product", "fused")

# What an op costs on a GPU by what it does, each class with its own `op_class` probe on
# a GPU (`gpuvs ceilings`), timed over a handful of sizes: the products, convolutions and
# attention by their FLOPs, the rest by the bytes of their tensors — a sort is many
# passes over its memory, an elementwise op one. `gpuvs.predicting.opclasses` sorts each
# aten op into one; `to_device` and `to_host` are the copies an end-to-end call makes.
# Each name maps to the words an answer uses ("priced as a sort").
OP_CLASSES = {
    "matmul": "a matrix product", "conv": "a convolution", "attention": "an attention",
    "reduction": "a reduction", "scan": "a scan", "sort": "a sort", "topk": "a top-k",
    "unique": "a unique", "select": "a masked selection", "gather": "a gather",
    "scatter": "a scatter", "norm": "a normalisation", "fft": "an FFT",
    "elementwise": "an elementwise op", "create": "an array creation", "copy": "a copy",
    "to_device": "a copy to the device", "to_host": "a copy to the host",
}
# The classes whose size is their FLOPs (the rest: the bytes of their tensors).
FLOP_CLASSES = ("matmul", "conv", "attention")


@dataclass(frozen=True)
class Ceiling:
    """A measured hardware peak (`gpuvs ceilings`): a rate or a cost of one device."""

    name: str      # e.g. "matmul float32 tf32=off"
    device: str    # "cpu" or "cuda:0"
    backend: str
    value: float   # per second for rates, seconds for costs
    unit: str      # "FLOP/s", "B/s" or "s"
    source: str    # the case key it was read from
    contended: bool = False  # its probe ran while other processes held the machine


@dataclass(frozen=True)
class OpCost:
    """One op of a class (`OP_CLASSES`) timed on a device at one size (`gpuvs
    ceilings`): seconds per op, in a loop of them, and its size — the FLOPs of a class of
    `FLOP_CLASSES`, else the bytes of its tensors, counted as `gpuvs predict` counts an
    op of the user's code."""

    op_class: str
    device: str
    backend: str
    amount: float   # FLOPs or bytes
    seconds: float
    source: str     # the probe case's key
    contended: bool = False


@dataclass(frozen=True)
class Environment:
    """What a run ran on. `fingerprint` identifies the machine + software, not the moment."""

    fingerprint: str
    facts: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "facts", MappingProxyType(dict(self.facts)))


class RunKind(str, Enum):
    """What made a run: the closed set of commands and entry points that store runs. A
    stored run's config names its kind (`config["kind"]`), except a sweep's, which
    predates kinds and is the one without."""

    SWEEP = "sweep"          # gpuvs run / gpuvs sweep
    SEEDS = "seeds"          # gpuvs seeds
    DIST = "dist"            # gpuvs dist scaling / collectives
    CEILINGS = "ceilings"    # gpuvs ceilings
    YOURS = "yours"          # gpuvs.compare(...).save(), gpuvs run-file
    PYTEST = "pytest"        # the gpuvs_bench fixture with --gpuvs-save

    def __str__(self) -> str:
        return self.value

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> RunKind:
        return cls(config.get("kind") or cls.SWEEP.value)


@dataclass(frozen=True)
class Run:
    """One invocation of gpuvs: its id, configuration, environment and state."""

    run_id: str
    started_at: str
    config: Mapping[str, Any]
    environment: Environment
    status: str = "running"  # running → finished | interrupted | failed (store.RUN_STATUSES)
    finished_at: str | None = None
    reason: str = ""  # why a run ended early

    @property
    def kind(self) -> RunKind:
        return RunKind.of(self.config)
