"""What a `gpuvs dist` run measures: the communication backend, the ranks, the cases.

Everything here is validated in the parent before a rank starts, so bad input is one
`UsageError` line instead of N tracebacks from N processes. A `Spec` is the whole order
for the ranks and travels to them as JSON.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gpuvs.distributed import COLLECTIVE_WORKLOAD, SCALING_WORKLOAD
from gpuvs.distributed.bandwidth import COLLECTIVES
from gpuvs.errors import UsageError
from gpuvs.model import Case

BACKENDS = ("nccl", "gloo")
# Without GPUs the ranks are CPU processes; two is the fewest that communicate at all.
DEFAULT_CPU_NPROC = 2
# nccl-tests' usual sweep (1 KiB … 1 GiB, ×4); on the CPU it stops at 64 MiB, which Gloo
# moves in well under a second, so a CPU run stays short.
DEFAULT_SIZES = {"cuda": "1KiB:1GiB:4", "cpu": "1KiB:64MiB:4"}
DEFAULT_FACTOR = 4
SIZES = "bytes: a list (4096,64KiB) or a range START:STOP[:FACTOR] (1KiB:1GiB:4)"
FLOAT32_BYTES = 4
UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1024**2, "mib": 1024**2,
         "g": 1024**3, "gib": 1024**3}
_SIZE = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
NODES_VARIABLE = "GROUP_WORLD_SIZE"  # torchrun's nodes (agents); 1 where unset
# A Gloo rank is a Python process with torch loaded (290 MB resident on the 2-core test
# box after `import torch.distributed`), plus its buffers: 400 MiB each, with margin.
GLOO_RANK_BYTES = 400 * 2**20
# Each rank spends about 2 s of CPU importing torch and joining the group: 8 ranks per
# core start within half of the default --setup-timeout (120 s).
GLOO_RANKS_PER_CORE = 8
# The largest byte size a case may have: past any device's memory, and exact as the
# store's 64-bit integer.
MAX_BYTES = 2**40


@dataclass(frozen=True)
class Setup:
    """The communication backend, the device kind its ranks use, how many ranks, and on
    how many torchrun nodes (the same number of ranks on each)."""

    backend: str
    device: str
    nproc: int
    nodes: int = 1

    @property
    def per_node(self) -> int:
        return self.nproc // self.nodes

    def layout(self) -> tuple[tuple[str, str], ...]:
        """The case parameter that says several nodes ("nodes", "2x2": nodes × ranks per
        node); none on one node, so a one-node case keeps the key it always had. A
        collective across two nodes crosses other links than one inside a node: it is
        another case."""
        return (("nodes", f"{self.nodes}x{self.per_node}"),) if self.nodes > 1 else ()


@dataclass(frozen=True)
class Spec:
    """Everything a rank needs: the command, the cases, how to time them, where to save."""

    command: str  # "collectives" | "scaling"
    setup: Setup
    cases: tuple[Case, ...]
    samples: int = 10  # collectives: at least these, more while the CI is wide …
    budget_s: float = 1.0  # … for at most this long
    steps: int = 10  # scaling: timed steps per rank count and round, with the all-reduce
    rounds: int = 1  # scaling: rounds of every rank count (the cases carry their round)
    energy: bool = False  # scaling: every GPU's energy per step, over ENERGY_WINDOW_S of steps
    timeout_s: float = 300.0
    setup_timeout_s: float = 120.0  # until `ready`: imports, rendezvous, process groups
    run_id: str = ""
    db: str = ""
    status_path: str = ""  # rank 0 reports progress here when a parent launched the ranks
    launched: bool = False  # started by the user's torchrun: no parent keeps the clock
    extra: dict[str, Any] = field(default_factory=dict)  # settings kept in the run config

    def to_json(self) -> str:
        d = asdict(self) | {"cases": [c.to_dict() for c in self.cases]}
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> Spec:
        d = json.loads(text)
        return cls(**d | {"setup": Setup(**d["setup"]),
                          "cases": tuple(Case.from_dict(c) for c in d["cases"])})

    def config(self) -> dict[str, Any]:
        """The run's stored configuration: the command and its settings (its kind, dist,
        is the run's own: `RunKind.DIST`)."""
        keep = {"samples": self.samples, "budget_s": self.budget_s} if (
            self.command == "collectives") else {"steps": self.steps, "rounds": self.rounds,
                                                 "energy": self.energy}
        return {"command": self.command, **asdict(self.setup), **keep,
                "timeout_s": self.timeout_s, "setup_timeout_s": self.setup_timeout_s,
                "launched": self.launched, **self.extra}


def resolve(backend: str | None, nproc: int | None, launched: bool) -> Setup:
    """The backend (nccl with CUDA, else gloo), its device kind and the rank count."""
    if nproc is not None and nproc < 1:
        raise UsageError(f"--nproc must be a whole number from 1; got {nproc}")
    if backend is not None and backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}; accepted: {', '.join(BACKENDS)}")
    world, nodes = _launched_world(nproc) if launched else (None, 1)
    if backend == "gloo" and world is None:  # before torch's import: said at once
        check_host_runs(nproc or DEFAULT_CPU_NPROC)
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        raise UsageError("gpuvs dist needs torch (pip install 'gpuvs[torch]')") from None
    if not dist.is_available():
        raise UsageError(f"torch {torch.__version__} was built without torch.distributed")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    chosen = backend or ("nccl" if gpus else "gloo")
    if chosen == "gloo":
        return replace(_gloo(world or nproc or DEFAULT_CPU_NPROC, checked=world is not None
                             or backend == "gloo"), nodes=nodes)
    if not gpus:
        raise UsageError("--backend nccl needs a CUDA device and this machine has none; "
                         "use --backend gloo")
    if not dist.is_nccl_available():
        raise UsageError(f"torch {torch.__version__} was built without NCCL; use --backend "
                         "gloo")
    return _nccl(world or nproc or gpus, nodes, gpus, launched)


def _nccl(n: int, nodes: int, gpus: int, launched: bool) -> Setup:
    """N NCCL ranks, one GPU each: the GPUs of this machine, or under the user's torchrun
    those of each node, taken by LOCAL_RANK."""
    if not launched and n > gpus:
        raise UsageError(f"--nproc {n} with nccl needs {n} CUDA devices; this machine has "
                         f"{gpus}")
    local = n // nodes
    if launched and local > gpus:
        raise UsageError(f"LOCAL_WORLD_SIZE {local} with nccl needs {local} CUDA devices on "
                         f"this node; it shows {gpus}")
    return Setup("nccl", "cuda", n, nodes)


def _gloo(nproc: int, checked: bool) -> Setup:
    """Gloo's ranks, counted against the host unless `checked` already (or launched by
    the user's torchrun, which started them)."""
    if not checked:
        check_host_runs(nproc)
    return Setup("gloo", "cpu", nproc)


def check_host_runs(nproc: int) -> None:
    """Gloo ranks are processes of this host: refuse more than its cores and memory can
    start (GLOO_RANKS_PER_CORE, GLOO_RANK_BYTES each), in one line, before torchrun
    starts any — 100,000 of them once ran for five minutes into the OOM killer."""
    import psutil

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    free = psutil.virtual_memory().available
    most = max(1, min(cores * GLOO_RANKS_PER_CORE, free // GLOO_RANK_BYTES))
    if nproc > most:
        raise UsageError(
            f"--nproc {nproc} with gloo: this host runs at most {most} ranks "
            f"({GLOO_RANKS_PER_CORE} per core on {cores} cores; {free / 2**30:.1f} GiB of "
            f"memory free, about {GLOO_RANK_BYTES // 2**20} MiB a rank)")


def _launched_world(nproc: int | None) -> tuple[int, int]:
    """(WORLD_SIZE, nodes) as the user's torchrun set them; --nproc, if given, must agree.
    Every node must run as many ranks (WORLD_SIZE = GROUP_WORLD_SIZE × LOCAL_WORLD_SIZE):
    the tables say nodes × ranks per node, and a case's span of nodes follows from it."""
    missing = [v for v in RANK_VARIABLES if v not in os.environ]
    if missing:
        raise UsageError(f"--launched expects torchrun's {', '.join(missing)} in the "
                         "environment; start gpuvs with `torchrun --nproc-per-node N -m gpuvs "
                         "dist … --launched`, or drop --launched")
    world, local = _count("WORLD_SIZE"), _count("LOCAL_WORLD_SIZE")
    # A launcher other than torchrun may not say how many nodes: as many as fill the world.
    nodes = _count(NODES_VARIABLE) if NODES_VARIABLE in os.environ else max(1, world // local)
    if nproc is not None and nproc != world:
        raise UsageError(f"--nproc {nproc} disagrees with torchrun's WORLD_SIZE {world}")
    if world != nodes * local:
        raise UsageError(f"WORLD_SIZE {world} is not {NODES_VARIABLE} {nodes} × "
                         f"LOCAL_WORLD_SIZE {local}: --launched needs the same "
                         "--nproc-per-node on every node")
    return world, nodes


def _count(variable: str) -> int:
    """A positive count torchrun set."""
    text = os.environ[variable]
    if not text.strip().isdigit() or int(text) < 1:
        raise UsageError(f"{variable} {text!r} is not a whole number from 1; --launched "
                         "reads it from torchrun")
    return int(text)


def parse_bytes(text: str) -> int:
    """'64KiB' → 65536. K, M, G are binary (as in nccl-tests), KiB/MiB/GiB the same."""
    m = _SIZE.match(text)
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in UNITS:
        raise UsageError(f"size {text!r} is not a byte count; write e.g. 4096, 64KiB, 16MiB, "
                         "1GiB")
    n = int(m.group(1)) * UNITS[unit]
    if n > MAX_BYTES:
        raise UsageError(f"size {text!r} is more than 1 TiB; write e.g. 4096, 64KiB, 16MiB, "
                         "1GiB")
    if n < FLOAT32_BYTES or n % FLOAT32_BYTES:
        raise UsageError(f"size {text!r} is not a whole number of float32 elements (a "
                         f"positive multiple of {FLOAT32_BYTES} bytes)")
    return n


def parse_sizes(specs: Sequence[str]) -> tuple[int, ...]:
    """'1KiB:1MiB' (×4 steps), '1KiB:1MiB:2' (doubling) or '4096,64KiB' → sorted bytes."""
    out: set[int] = set()
    for spec in specs:
        bits = spec.split(":")
        if len(bits) == 1:
            out.add(parse_bytes(spec))
            continue
        if len(bits) > 3:
            raise UsageError(f"size range {spec!r} must be START:STOP or START:STOP:FACTOR")
        start, stop = parse_bytes(bits[0]), parse_bytes(bits[1])
        factor = bits[2].strip() if len(bits) == 3 else str(DEFAULT_FACTOR)
        if not factor.isdigit() or int(factor) < 2:
            raise UsageError(f"size range factor {factor!r} must be a whole number from 2")
        if stop < start:
            raise UsageError(f"size range {spec!r} ends before it starts")
        size = start
        while size <= stop:
            out.add(size)
            size *= int(factor)
    return tuple(sorted(out))


def collective_cases(setup: Setup, sizes: Sequence[str], names: Sequence[str]
                     ) -> tuple[Case, ...]:
    """Every collective at every size, collectives interleaved per size (drift hits all)."""
    for name in names:
        if name not in COLLECTIVES:
            raise UsageError(f"unknown collective {name!r}; accepted: {', '.join(COLLECTIVES)}")
    chosen = names or COLLECTIVES
    byte_sizes = parse_sizes(sizes or (DEFAULT_SIZES[setup.device],))
    return tuple(Case(COLLECTIVE_WORKLOAD, "correct", setup.backend, setup.device, "float32",
                      size, (("collective", name), ("nproc", str(setup.nproc)),
                             *setup.layout()))
                 for size in byte_sizes for name in COLLECTIVES if name in chosen)


def scaling_cases(setup: Setup, batch: int, strong: bool, rounds: int = 1
                  ) -> tuple[Case, ...]:
    """One case per rank count 1…N in each of `rounds` rounds (`round=1`…); `size` is N.
    The batch is per rank (weak scaling) or global and split over the ranks (strong
    scaling), where only the counts that divide it run: on four GPUs, seed 003's 32
    images run on 1, 2 and 4 ranks, not on 3.

    Rounds interleave the rank counts (1, 2, 1, 2, …), so that each N is paired with the
    N = 1 measured just before it: the host's pace moves between them (on two H100s N = 1
    moved −11 % to +35 % between launches minutes apart), and a ratio within a round
    pairs that drift out where a ratio of two far-apart cases adds it. The efficiency's
    interval is then taken over the rounds' ratios (`analysis.scaling`)."""
    if batch < 1:
        raise UsageError(f"--batch must be a whole number from 1; got {batch}")
    counts = list(range(1, setup.nproc + 1))
    if strong:
        if batch % setup.nproc:
            raise UsageError(f"--strong splits the global --batch {batch} over the ranks; "
                             f"{batch} is not divisible by {setup.nproc}")
        counts = [n for n in counts if batch % n == 0]
    mode = "strong" if strong else "weak"
    return tuple(Case(SCALING_WORKLOAD, "correct", setup.backend, setup.device, "float32", n,
                      (("scaling", mode), ("batch", str(batch)), ("round", str(r)),
                       *setup.layout()))
                 for r in range(1, rounds + 1) for n in counts)


def per_rank_batch(case: Case) -> int:
    """Images each rank trains on per step."""
    batch = int(case.param("batch"))
    return batch // case.size if case.param("scaling") == "strong" else batch
