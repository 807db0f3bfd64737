"""A rank: `python -m gpuvs.distributed.rank_main SPEC.json` under torchrun, or `serve(spec)` inside
the user's own `torchrun` (`gpuvs dist … --launched`).

Every rank runs every case (collectives: small ones in turns, `collectives.run_cases`);
rank 0 gathers the other ranks' results, saves the case's measurement the moment the case
ends and, when a parent launched the ranks, reports progress in `spec.status_path`, one
`execute.wire` event a line — `Ready`, then `Started` before each step of a case and
`Measured` once it is saved — so the parent knows which case a crash or a hang belongs
to. On CUDA the collectives' graph replays come after the last eager sample
(`collectives.replay_cases`): each case is saved again with them, announced by
`Started(replay=True)` and `Measured(resaved=True)`, so a rank lost then leaves every
eager result saved. A rank
that fails prints one `gpuvs-dist-error` line to stderr — its status by the case policy
(`oom` only on the framework's own out-of-memory error) and its error — which the parent
makes the case's status and reason.

Test hook: GPUVS_DIST_FAULT=exit:RANK:TEXT (or hang:RANK:TEXT; several joined by ';')
makes rank RANK exit with code 1 (or sleep) at the start of a case whose key contains
TEXT, or during set-up (after joining the process group, before `ready`) when TEXT is
`setup`: how the tests kill or hang a rank.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from gpuvs import errors
from gpuvs.distributed import collectives, scaling, tries
from gpuvs.distributed.rank import Ranks, cpu_threads
from gpuvs.distributed.spec import Spec
from gpuvs.execute import policy
from gpuvs.execute.wire import Measured, Message, Ready, Started, encode
from gpuvs.machine.energy import NOT_ASKED, EnergyOptions
from gpuvs.model import Case, Measurement, Status
from gpuvs.store.runs import resume_run

ERROR_PREFIX = "gpuvs-dist-error"
FAULT_VARIABLE = "GPUVS_DIST_FAULT"
HANG_S = 3600.0
# Ranks started by a parent wait this much longer than its clock before giving up on a
# peer, so that the parent — which knows the case in flight — is the one that ends a hang.
PARENT_GRACE_S = 60.0
PASSED_PREFIXES = ("NCCL_", "TORCH_NCCL_")


def serve(spec: Spec, on_done: Callable[[Measurement], None] = lambda m: None
          ) -> dict[str, Any]:
    """Run the spec's cases on this rank; on rank 0 save each one. Returns what the ranks
    run with (versions, the NCCL variables every rank saw), on rank 0."""
    import torch.distributed as dist

    world = _connect(spec)
    _planted_fault("setup", world.rank)
    groups = _subgroups(world, spec) if spec.command == "scaling" else {}
    info = _ready(world)
    # Every rank's GPU idle at once, before any case: the base of "above idle".
    power = tries.energy_options(world) if spec.energy else NOT_ASKED
    _emit(spec, world, Ready(info))
    store = _store(spec) if world.rank == 0 else None
    # The parent started the run (its command skeleton); rank 0 records into it.
    run = resume_run(store, spec.run_id) if store is not None else None
    try:
        for case, mine, threads, again in _results(spec, world, groups, power):
            m = _gathered(spec, world, case, mine, threads)
            if m is not None and run is not None:
                run.record(m)
                _emit(spec, world, Measured(m, resaved=again))  # again: counted before
                if not again:
                    on_done(m)
            # No rank goes on before this case is saved: a rank that dies in the next
            # step must not take this case's result down with it.
            dist.barrier(group=world.ctrl)
    except Exception as e:  # said once, for the parent's reason; then the rank dies
        print(f"{ERROR_PREFIX} rank {world.rank}: {_status_of(e).value}: "
              f"{errors.one_line(e)[:300]}", file=sys.stderr, flush=True)
        raise
    finally:
        if store is not None:
            store.close()
    dist.destroy_process_group()
    return info


def _status_of(e: BaseException) -> Status:
    """What this rank's failure is recorded as, by the one case policy: `oom` only on
    the framework's own out-of-memory error (the evidence), else `crashed`."""
    from gpuvs import backends

    return Status.OOM if policy.out_of_memory(backends.get("torch"), e) else Status.CRASHED


def _connect(spec: Spec) -> Ranks:
    """Join the process group torchrun's variables describe, on this rank's device."""
    import torch
    import torch.distributed as dist

    rank, size, local = (int(os.environ[v]) for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", size))
    timeout = timedelta(seconds=spec.timeout_s + (0 if spec.launched else PARENT_GRACE_S))
    if spec.setup.backend == "gloo":
        dist.init_process_group("gloo", timeout=timeout)
        return Ranks(rank, size, local, "cpu", dist.group.WORLD, dist.group.WORLD,
                     cpu_threads(local_world))
    device = f"cuda:{local}"
    torch.cuda.set_device(local)
    # No device_id: binding one makes NCCL communicators eager, and then creating any
    # sub-group — even a Gloo one — makes the ranks left out of it call ncclCommSplit,
    # which the members never match, and every rank hangs. Lazily, each communicator is
    # made by its first collective, among its members only.
    dist.init_process_group("nccl", timeout=timeout)
    ctrl = dist.new_group(backend="gloo", timeout=timeout)
    return Ranks(rank, size, local, device, dist.group.WORLD, ctrl, 0)


def _subgroups(world: Ranks, spec: Spec) -> dict[int, Ranks]:
    """Ranks 0…n−1 for every smaller n a case needs: inside the user's torchrun, scaling
    runs N ranks while the others wait (a parent launches each N on its own, so it needs
    none). Every rank must create every group, in the same order."""
    import torch.distributed as dist

    timeout = timedelta(seconds=spec.timeout_s + (0 if spec.launched else PARENT_GRACE_S))
    out = {world.size: world}
    for n in sorted({c.size for c in spec.cases} - {world.size}):
        group = dist.new_group(list(range(n)), backend=spec.setup.backend, timeout=timeout)
        ctrl = group if not world.cuda else dist.new_group(list(range(n)), backend="gloo",
                                                           timeout=timeout)
        out[n] = replace(world, size=n, group=group, ctrl=ctrl)
    return out


def _results(spec: Spec, world: Ranks, groups: dict[int, Ranks],
             power: EnergyOptions = NOT_ASKED) -> Iterator[tuple[Case, Any, int, bool]]:
    """This rank's part of each case as the case ends: (case, its RankResult — None on a
    rank a scaling case leaves out —, the CPU threads it ran with, whether the case was
    yielded before: its graph replays, added once every eager sample is taken). Rank 0
    reports each step of a case (`start`, or `replay`) before it is taken, which restarts
    the parent's clock and names the case a crash or a hang belongs to; a planted fault
    fires at a case's first step."""
    seen: set[str] = set()

    def visit(case: Case) -> None:
        _emit(spec, world, Started(case))
        if case.key not in seen:
            seen.add(case.key)
            _planted_fault(case.key, world.rank)

    if spec.command == "collectives":
        finished = []
        for case, mine in collectives.run_cases(world, spec.cases, spec.samples,
                                                spec.budget_s, visit):
            finished.append((case, mine))
            yield case, mine, world.threads, False
        for case, mine in collectives.replay_cases(
                world, finished, spec.samples, spec.budget_s,
                lambda case: _emit(spec, world, Started(case, replay=True))):
            yield case, mine, world.threads, True
        return
    for case in spec.cases:
        visit(case)
        r = groups[case.size]
        active = min(case.size, int(os.environ.get("LOCAL_WORLD_SIZE", world.size)))
        threads = 0 if r.cuda else cpu_threads(active)
        yield case, (scaling.run_case(r, case, spec.steps, threads, partial(visit, case),
                                      power) if world.rank < case.size else None), threads, False


def _gathered(spec: Spec, world: Ranks, case: Case, mine: Any, threads: int
              ) -> Measurement | None:
    """Every rank's result of a case at rank 0, as the case's measurement (None on the
    other ranks)."""
    import torch.distributed as dist

    gathered: list[Any] | None = [None] * world.size if world.rank == 0 else None
    dist.gather_object(mine, gathered, dst=0, group=world.ctrl)
    if gathered is None:
        return None
    results = [g for g in gathered if g is not None]
    record = collectives.record if spec.command == "collectives" else scaling.record
    return record(case, results, threads)


def _ready(world: Ranks) -> dict[str, Any]:
    """Versions, and the NCCL variables each rank inherited (multicast settings included)."""
    import torch
    import torch.distributed as dist

    mine = {k: v for k, v in sorted(os.environ.items()) if k.startswith(PASSED_PREFIXES)}
    every: list[Any] = [None] * world.size
    dist.all_gather_object(every, mine, group=world.ctrl)
    nccl = ""
    if world.cuda:
        v = torch.cuda.nccl.version()
        nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    return {"torch": torch.__version__, "nccl": nccl, "rank_env": every}


def _store(spec: Spec) -> Any:
    from gpuvs.store import open_store
    return open_store(spec.db)


def _emit(spec: Spec, world: Ranks, event: Message) -> None:
    """One event for the parent (rank 0 only, and only under a parent)."""
    if world.rank != 0 or not spec.status_path:
        return
    with open(spec.status_path, "a", encoding="utf-8") as f:
        f.write(encode(event) + "\n")


def _planted_fault(key: str, rank: int) -> None:
    for plan in filter(None, os.environ.get(FAULT_VARIABLE, "").split(";")):
        kind, _, rest = plan.partition(":")
        who, _, text = rest.partition(":")
        if who != str(rank) or text not in key:
            continue
        if kind == "exit":
            os._exit(1)
        time.sleep(HANG_S)


def main(argv: list[str] | None = None) -> None:
    serve(Spec.from_json(Path((argv or sys.argv[1:])[0]).read_text()))


if __name__ == "__main__":
    main()
