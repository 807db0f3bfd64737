"""The wire: the one vocabulary that crosses a process boundary in gpuvs.

Every child gpuvs starts — a run's worker (`execute.worker`), run-file's worker
(`yours.file_worker`), a `gpuvs dist` rank (`distributed.rank_main`) — is told what to do
in **requests** and answers in **events**, each a frozen dataclass written as one JSON
line (`encode`) and read back as the same type (`decode`). Nothing else crosses: no dict
assembled in one module and taken apart key by key in another.

How a case is sampled is one value, `Sampling` (the budget, the stopping criterion, the
energy asked for, a declared CPU power, the loops a sample holds when they are fixed),
made once from a validated `RunConfig` (`Sampling.of`), and divided over a run's passes
in one place (`Sampling.shared`). The protocol's `Budget` is made from it at the last
moment (`Sampling.budget`), in whichever process times the case.

The anchors were torch.utils.benchmark's `TaskSpec` (a frozen description of a timing
task that can be sent to a subprocess) and pyperf's worker, whose command line the same
parser reads on both sides: here the same types are read on both sides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar, TypeVar

from gpuvs import stats
from gpuvs.machine.energy import NOT_ASKED, EnergyOptions
from gpuvs.measuring.protocol import Budget
from gpuvs.model import Case, Ceiling, Measurement

# A sample of fixed loops (`%gpuvs -n`) is never cut short to reach a target length.
FIXED_LOOPS_TARGET_S = 1e9


@dataclass(frozen=True)
class Sampling:
    """How to sample one case in one process: `budget_s` seconds of sampling after the
    first call, until `criterion` is met (or at least `min_sampling_s`, an energy
    counter's window), the case's energy watch told `power`, and with `loops` every
    sample holds exactly that many calls (else the protocol calibrates them).
    `processes` is how many processes share the case's budget (`shared`): from
    `stats.REPEAT_FROM_PROCESSES` on, a case whose samples drift or fall in groups is not
    sampled again for longer in one process (`Budget.remeasure`) — the other processes
    are where a repeat looks, and three times the budget in each was most of a GPU run's
    time (docs/accuracy.md)."""

    budget_s: float = 1.0
    criterion: str = "median-ci"
    min_sampling_s: float = 0.0
    power: EnergyOptions = NOT_ASKED
    loops: int | None = None
    processes: int = 1

    @classmethod
    def of(cls, config: Any, passes: int = 1) -> Sampling:
        """A validated config's sampling, its budget shared over `passes` processes: each
        process of a case samples its share, so a case costs the budget it was given."""
        power = EnergyOptions(asked=bool(config.energy), declared_w=config.cpu_watts)
        return cls(config.budget_s, config.criterion, power=power).shared(passes)

    def shared(self, parts: int) -> Sampling:
        """This sampling's budget divided over `parts` processes."""
        parts = max(parts, 1)
        return replace(self, budget_s=self.budget_s / parts, processes=parts)

    def budget(self) -> Budget:
        """The protocol's budget for this sampling."""
        budget = Budget(seconds=self.budget_s, min_sampling_s=self.min_sampling_s,
                        remeasure=self.processes < stats.REPEAT_FROM_PROCESSES)
        if self.loops is not None:
            return replace(budget, target_sample_s=FIXED_LOOPS_TARGET_S, max_loops=self.loops)
        return budget

    def to_dict(self) -> dict[str, Any]:
        p = self.power
        return {"budget_s": self.budget_s, "criterion": self.criterion,
                "min_sampling_s": self.min_sampling_s, "loops": self.loops,
                "processes": self.processes,
                "power": {"asked": p.asked, "idle_w": p.idle_w, "declared_w": p.declared_w}}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sampling:
        p = d.get("power") or {}
        return cls(float(d["budget_s"]), str(d["criterion"]), float(d["min_sampling_s"]),
                   EnergyOptions(bool(p.get("asked")), _opt_float(p.get("idle_w")),
                                 _opt_float(p.get("declared_w"))),
                   None if d.get("loops") is None else int(d["loops"]),
                   int(d.get("processes", 1)))


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


class Message:
    """A request or an event: `kind` names it on the wire."""

    kind: ClassVar[str]

    def fields(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Message:
        raise NotImplementedError


_KINDS: dict[str, type[Message]] = {}
M = TypeVar("M", bound=type[Message])


def _on_the_wire(cls: M) -> M:
    _KINDS[cls.kind] = cls
    return cls


def encode(message: Message) -> str:
    """One JSON line, without its newline."""
    return json.dumps({"kind": message.kind, **message.fields()}, separators=(",", ":"))


def decode(line: str) -> Message:
    """The message a line holds; ValueError if it holds none gpuvs sends."""
    d = json.loads(line)
    if not isinstance(d, dict) or d.get("kind") not in _KINDS:
        raise ValueError(f"not a gpuvs message: {line[:200]!r}")
    try:
        return _KINDS[d["kind"]].read(d)
    except (KeyError, TypeError) as e:
        raise ValueError(f"a {d['kind']} message without what it needs ({e}): "
                         f"{line[:200]!r}") from None


# -- requests: what a parent asks of its child --------------------------------------------

@_on_the_wire
@dataclass(frozen=True)
class Preload(Message):
    """A worker's first line: one case of each kind it will run, whose imports it makes
    before it says it is ready."""

    kind: ClassVar[str] = "preload"
    cases: tuple[Case, ...] = ()

    def fields(self) -> dict[str, Any]:
        return {"cases": [c.to_dict() for c in self.cases]}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Preload:
        return cls(tuple(Case.from_dict(c) for c in d["cases"]))


@_on_the_wire
@dataclass(frozen=True)
class Take(Message):
    """Time `case`. `samples_only`: a later pass, whose output was checked before. `peaks`
    are (size, bytes) the case's series reached at smaller sizes: the memory guard's slope."""

    kind: ClassVar[str] = "take"
    case: Case
    sampling: Sampling = Sampling()
    samples_only: bool = False
    peaks: tuple[tuple[int, float], ...] = ()

    def fields(self) -> dict[str, Any]:
        return {"case": self.case.to_dict(), "sampling": self.sampling.to_dict(),
                "samples_only": self.samples_only, "peaks": [list(p) for p in self.peaks]}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Take:
        return cls(Case.from_dict(d["case"]), Sampling.from_dict(d["sampling"]),
                   bool(d["samples_only"]),
                   tuple((int(s), float(b)) for s, b in d["peaks"]))


@_on_the_wire
@dataclass(frozen=True)
class Observe(Message):
    """Observe a timed case after the worker's last timed sample: `what` is `parts`,
    `profile` or `graph` (`execute.observe.observations`)."""

    kind: ClassVar[str] = "observe"
    case: Case
    what: str
    sampling: Sampling = Sampling()

    def fields(self) -> dict[str, Any]:
        return {"case": self.case.to_dict(), "what": self.what,
                "sampling": self.sampling.to_dict()}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Observe:
        return cls(Case.from_dict(d["case"]), str(d["what"]), Sampling.from_dict(d["sampling"]))


@_on_the_wire
@dataclass(frozen=True)
class RunFile(Message):
    """What `gpuvs run-file` runs: SCRIPT.py::FUNC, one or several (`targets`: several
    implementations of one function, the first the reference), the BUILDER of their
    arguments (`inputs`, in the first target's file), the sizes (() = BUILDER() once), the
    devices, how each case is sampled, the tolerance between outputs; and whether it
    explains the run after its last case (`explain`: the first process only; profiling
    the function again in a later one would tell nothing new); and whether a GPU's cases
    are timed end-to-end beside resident (`end_to_end`: not for the pytest fixture, which
    times the call where its data lives). A run-file worker's first line: it loads the
    files, says it is `Ready`, and measures nothing before `Go`."""

    kind: ClassVar[str] = "run_file"
    targets: tuple[str, ...]
    inputs: str
    sizes: tuple[int, ...]
    devices: tuple[str, ...]
    sampling: Sampling
    tolerance: float | None = None
    explain: bool = True
    end_to_end: bool = True

    def fields(self) -> dict[str, Any]:
        return {"targets": list(self.targets), "inputs": self.inputs,
                "sizes": list(self.sizes), "devices": list(self.devices),
                "sampling": self.sampling.to_dict(), "tolerance": self.tolerance,
                "explain": self.explain, "end_to_end": self.end_to_end}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> RunFile:
        return cls(tuple(str(t) for t in d["targets"]), str(d["inputs"]),
                   tuple(int(s) for s in d["sizes"]),
                   tuple(str(x) for x in d["devices"]), Sampling.from_dict(d["sampling"]),
                   _opt_float(d["tolerance"]), bool(d["explain"]), bool(d["end_to_end"]))


@_on_the_wire
@dataclass(frozen=True)
class Go(Message):
    """A ready run-file worker's second line: measure now, carrying on after the cases
    `done` (those earlier workers finished or died in: the first process's before a
    death, the earlier processes' settled cases). Apart from `RunFile`, so that a later
    pass's worker can start ahead, load the user's file and wait ready before what it
    is to skip is known."""

    kind: ClassVar[str] = "go"
    done: tuple[Measurement, ...] = ()

    def fields(self) -> dict[str, Any]:
        return {"done": [m.to_dict() for m in self.done]}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Go:
        return cls(tuple(Measurement.from_dict(m) for m in d["done"]))


# -- events: what a child tells its parent ------------------------------------------------

@_on_the_wire
@dataclass(frozen=True)
class Ready(Message):
    """The child has loaded what it needs: a run's worker its framework and device,
    run-file's worker the user's files, each then waiting for its work (a worker started
    ahead of its pass); `info` is what it runs with (a dist rank: versions and the NCCL
    variables every rank saw)."""

    kind: ClassVar[str] = "ready"
    info: Mapping[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return {"info": dict(self.info)}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Ready:
        return cls(dict(d["info"]))


@_on_the_wire
@dataclass(frozen=True)
class Planned(Message):
    """The cases of one size, named once their inputs are built (run-file)."""

    kind: ClassVar[str] = "planned"
    cases: tuple[Case, ...]

    def fields(self) -> dict[str, Any]:
        return {"cases": [c.to_dict() for c in self.cases]}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Planned:
        return cls(tuple(Case.from_dict(c) for c in d["cases"]))


@_on_the_wire
@dataclass(frozen=True)
class Started(Message):
    """A step of `case` starts (its inputs built, or a dist step; `replay`: its graph
    replays): the case a death or a hang from here on belongs to."""

    kind: ClassVar[str] = "started"
    case: Case
    replay: bool = False

    def fields(self) -> dict[str, Any]:
        return {"case": self.case.to_dict(), "replay": self.replay}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Started:
        return cls(Case.from_dict(d["case"]), bool(d["replay"]))


@_on_the_wire
@dataclass(frozen=True)
class Again(Message):
    """The case in hand is measured again (it was contended): the parent's clock on it
    starts again."""

    kind: ClassVar[str] = "again"
    why: str = "contended: measuring it again"

    def fields(self) -> dict[str, Any]:
        return {"why": self.why}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Again:
        return cls(str(d["why"]))


@_on_the_wire
@dataclass(frozen=True)
class Measured(Message):
    """A case's measurement. `fatal`: the process is poisoned (a sticky device error) and
    exits. `resaved`: a case saved before, saved again with more (a dist collective's
    graph replays), which the parent has already counted."""

    kind: ClassVar[str] = "measured"
    measurement: Measurement
    fatal: bool = False
    resaved: bool = False

    def fields(self) -> dict[str, Any]:
        return {"measurement": self.measurement.to_dict(), "fatal": self.fatal,
                "resaved": self.resaved}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Measured:
        return cls(Measurement.from_dict(d["measurement"]), bool(d["fatal"]),
                   bool(d["resaved"]))


@_on_the_wire
@dataclass(frozen=True)
class Observed(Message):
    """What one observation found (counters; none when it failed: the case's own
    measurement stands)."""

    kind: ClassVar[str] = "observed"
    counters: Mapping[str, float] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return {"counters": dict(self.counters)}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Observed:
        return cls({str(k): float(v) for k, v in d["counters"].items()})


@_on_the_wire
@dataclass(frozen=True)
class Explained(Message):
    """What only the process where the user's function is can observe to explain the
    GPU cases (run-file's worker, after its last case): the dispatch costs timed there
    and each profiled case's kernels. The parent words the explanation over the samples
    of every process (`analysis.explain.explain`), not the worker's alone."""

    kind: ClassVar[str] = "explained"
    ceilings: tuple[Ceiling, ...] = ()
    kernels: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return {"ceilings": [asdict(c) for c in self.ceilings],
                "kernels": {k: dict(v) for k, v in self.kernels.items()}}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Explained:
        return cls(tuple(Ceiling(**c) for c in d["ceilings"]),
                   {str(k): {str(n): float(x) for n, x in v.items()}
                    for k, v in d["kernels"].items()})


@_on_the_wire
@dataclass(frozen=True)
class Refused(Message):
    """Nothing can be measured, for a reason the user must fix (run-file: the file does
    not load, BUILDER is missing, the function raised on the reference device)."""

    kind: ClassVar[str] = "refused"
    message: str

    def fields(self) -> dict[str, Any]:
        return {"message": self.message}

    @classmethod
    def read(cls, d: Mapping[str, Any]) -> Refused:
        return cls(str(d["message"]))
