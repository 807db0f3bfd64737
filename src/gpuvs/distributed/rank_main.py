"""A rank: `python -m gpuvs.distributed.rank_main SPEC.json` under torchrun, or `serve(spec)` inside
the user's own `torchrun` (`gpuvs dist … --launched`), on one node or several.

Every rank runs every case (collectives: small ones in turns, `collectives.run_cases`;
scaling: each rank count on ranks 0…N−1 while the others wait, round after round);
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

Where the ranks run is asked of every rank when they meet (`hosts.Layout`): a GPU is
LOCAL_RANK's within its node, and threads and host memory are counted over the ranks of
the machine, whichever node they belong to. Each rank keeps a clock of its own on the case
in hand (`watchdog.Watchdog`) and dies with the torchrun agent that started it. Inside the
user's torchrun no parent is there to record a failure, so rank 0 does: a rank lost in a
case (a node died: its peers' collectives fail) or a case past `--timeout` (its peers'
watchdogs fire) ends that case with its status, and the cases the broken world cannot
take are recorded `skipped`, with the reason, on every node's word.

Test hook: GPUVS_DIST_FAULT=exit:RANK:TEXT (or hang:RANK:TEXT; several joined by ';')
makes rank RANK exit with code 1 (or sleep) at the start of a case whose key contains
TEXT, or during set-up (after joining the process group, before `ready`) when TEXT is
`setup`: how the tests kill or hang a rank.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from gpuvs import errors
from gpuvs.distributed import collectives, hosts, scaling, tries
from gpuvs.distributed.agent import AGENT_VARIABLE
from gpuvs.distributed.rank import Ranks, cpu_threads, every_rank
from gpuvs.distributed.spec import Spec
from gpuvs.distributed.watchdog import Watchdog
from gpuvs.execute import policy
from gpuvs.execute.supervisor import die_with_parent
from gpuvs.execute.wire import Measured, Message, Ready, Started, encode
from gpuvs.machine.energy import NOT_ASKED, EnergyOptions
from gpuvs.measuring.protocol import CONTENDED_RETRIES
from gpuvs.model import Case, Measurement, Status
from gpuvs.store.runs import RunHandle, resume_run

ERROR_PREFIX = "gpuvs-dist-error"
FAULT_VARIABLE = "GPUVS_DIST_FAULT"
HANG_S = 3600.0
# Ranks started by a parent wait this much longer than its clock before giving up on a
# peer, so that the parent — which knows the case in flight — is the one that ends a hang;
# the process groups' own timeouts are this much longer than every rank's clock.
PARENT_GRACE_S = 60.0
# A case is taken at most this many times (once, again when its samples split, again when
# contended): a rank that a scaling case leaves out waits that long for it.
MOST_TRIES = 2 + CONTENDED_RETRIES
PASSED_PREFIXES = ("NCCL_", "TORCH_NCCL_")
# torchrun's agent sets it in every rank it starts: the rank's parent is that agent.
TORCHRUN_VARIABLE = "TORCHELASTIC_RUN_ID"


def serve(spec: Spec, on_done: Callable[[Measurement], None] = lambda m: None
          ) -> dict[str, Any]:
    """Run the spec's cases on this rank; on rank 0 save each one. Returns what the ranks
    run with (versions, the NCCL variables every rank saw, where they run) on every
    rank, with `lost` added where a failure ended the world (inside the user's torchrun:
    the cases were recorded as it left them)."""
    import torch.distributed as dist

    _tie_to_agent()
    world, layout = _connect(spec)
    _planted_fault("setup", world.rank)
    if shared := layout.shared_gpu():
        raise errors.UsageError(shared)
    groups = _subgroups(world, spec, layout) if spec.command == "scaling" else {}
    info = _ready(world, layout, spec)
    # Every rank's GPU idle at once, before any case: the base of "above idle".
    power = tries.energy_options(world) if spec.energy else NOT_ASKED
    _emit(spec, world, Ready(info))
    store = _store(spec) if world.rank == 0 else None
    # The run was started before the ranks (by the parent's command skeleton, or by rank
    # 0's under --launched): rank 0 records into it, the other ranks only measure.
    progress = _Progress(spec, world, resume_run(store, spec.run_id) if store else None)
    try:
        for case, mine, threads, again in _results(spec, world, groups, progress, power):
            m = _gathered(spec, world, case, mine, threads)
            if m is not None and progress.run is not None:
                progress.run.record(m)
                progress.saved.add(case.key)
                _emit(spec, world, Measured(m, resaved=again))  # again: counted before
                if not again:
                    on_done(m)
            # No rank goes on before this case is saved: a rank that dies in the next
            # step must not take this case's result down with it.
            dist.barrier(group=world.ctrl)
            progress.watchdog.disarm()
    except Exception as e:  # said once, for the parent's reason; then the rank dies
        lost = progress.failed(e)
        if not spec.launched:
            raise
        return info | {"lost": lost}
    finally:
        progress.watchdog.stop()
        if store is not None:
            store.close()
    _leave(world)
    return info


def _leave(world: Ranks) -> None:
    """Every rank leaves the world together, once nothing of a case is left in it. A
    scaling case's DistributedDataParallel model and reducer sit in reference cycles
    (the reducer's hooks hold the module), so only the garbage collector frees them; left
    to the interpreter's exit, they were freed while it was torn down, with the process
    groups gone, and the rank died of SIGABRT after every case was saved (two gloo
    scaling tests, about one run in twenty on the 2-core box: torchrun then failed the
    command). Collected here, and the groups destroyed after a last barrier."""
    import gc

    import torch.distributed as dist

    gc.collect()
    dist.barrier(group=world.ctrl)
    dist.destroy_process_group()


class _Progress:
    """The case in hand on this rank: announced to the parent (rank 0's events), armed on
    this rank's watchdog, and — inside the user's torchrun, where no parent records a
    failure — recorded by rank 0 with its status when the world cannot finish it."""

    def __init__(self, spec: Spec, world: Ranks, run: RunHandle | None) -> None:
        self.spec, self.world, self.run = spec, world, run
        self.in_flight = ""
        self.saved: set[str] = set()
        grace = 0.0 if spec.launched else PARENT_GRACE_S / 2  # a parent's clock comes first
        self.watchdog = Watchdog(spec.timeout_s + grace, self._expired)

    def step(self, case: Case, replay: bool = False, waiting: bool = False) -> None:
        """A step of `case` begins (`replay`: its graph replays; `waiting`: on a rank the
        case leaves out, for all of its tries): the parent hears of it, and this rank's
        clock starts again."""
        _emit(self.spec, self.world, Started(case, replay))
        self.in_flight = case.key
        self.watchdog.arm(case.key, MOST_TRIES if waiting else 1)

    def failed(self, e: Exception) -> str:
        """Say why this rank fails, in the line the parent reads; inside the user's
        torchrun, rank 0 also records the case in hand and the cases left. Returns what
        ended the world."""
        self.watchdog.disarm()
        status, said = _status_of(e), errors.one_line(e)[:300]
        print(f"{ERROR_PREFIX} rank {self.world.rank}: {status.value}: {said}",
              file=sys.stderr, flush=True)
        reason = f"rank {self.world.rank} of {self.world.size} failed: {said}"
        if self.spec.launched and self.run is not None:
            if threading.current_thread() is threading.main_thread():
                # torchrun stops rank 0 once a sibling exits; the record comes first.
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            _ended(self.spec, self.run, self.saved, self.in_flight, status, reason)
        return reason

    def _expired(self, key: str) -> None:
        """The watchdog's thread, past the deadline: the main thread is stuck in a
        collective. Say so; inside the user's torchrun rank 0 records the case as
        `timeout` (through a store of its own: the main thread's belongs to it) and
        finishes the run; then the rank ends, and with it every collective it was in."""
        why = (f"no result within {self.watchdog.timeout_s:g} s; every rank was stopped by its "
               "own watchdog (a rank stopped answering: it hung, or its node was lost)")
        print(f"{ERROR_PREFIX} rank {self.world.rank}: timeout: {why}", file=sys.stderr,
              flush=True)
        if self.spec.launched and self.run is not None:
            store = _store(self.spec)
            run = resume_run(store, self.spec.run_id)
            _ended(self.spec, run, self.saved, key, Status.TIMEOUT, why)
            run.finish()
            print(f"run {run.run_id} ended: {key} timeout: {why}. Saved to {store.location}; "
                  f"`gpuvs show {run.run_id}` prints it.", flush=True)
            store.close()
        os._exit(1)


def _ended(spec: Spec, run: RunHandle, saved: set[str], in_flight: str, status: Status,
           reason: str) -> None:
    """The record of a world that cannot go on: the case in hand with its `status`, and
    every case not yet saved `skipped`, with the reason (a case saved before keeps what
    it had: a failure in its graph replays costs it only them)."""
    for case in spec.cases:
        if case.key in saved:
            continue
        run.record(Measurement(case, status, reason=reason) if case.key == in_flight else
                   Measurement(case, Status.SKIPPED, reason="not measured: the ranks could "
                               f"not go on after {in_flight or 'set-up'} failed"))


def _tie_to_agent() -> None:
    """Die with the torchrun agent that started this rank (SIGTERM, which rank 0 of a run
    inside the user's torchrun turns into an interrupted run): gpuvs's own agent names
    itself (AGENT_VARIABLE); a user's torchrun is the rank's parent. A rank that another
    launcher started is left alone: its parent may well exit before it."""
    agent = os.environ.get(AGENT_VARIABLE)
    if agent or TORCHRUN_VARIABLE in os.environ:
        die_with_parent(signal.SIGTERM, int(agent) if agent else None)


def _status_of(e: BaseException) -> Status:
    """What this rank's failure is recorded as, by the one case policy: `oom` only on
    the framework's own out-of-memory error (the evidence), else `crashed`."""
    from gpuvs import backends

    return Status.OOM if policy.out_of_memory(backends.get("torch"), e) else Status.CRASHED


def _connect(spec: Spec) -> tuple[Ranks, hosts.Layout]:
    """Join the process group torchrun's variables describe, on this rank's device (the
    GPU of LOCAL_RANK within its node), and learn where every rank runs: a CPU rank takes
    its share of its machine's cores among the ranks there, whichever node they are of."""
    import torch
    import torch.distributed as dist

    rank, size, local = (int(os.environ[v]) for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    timeout = _group_timeout(spec)
    if spec.setup.backend == "gloo":
        dist.init_process_group("gloo", timeout=timeout)
        world = Ranks(rank, size, local, "cpu", dist.group.WORLD, dist.group.WORLD, 0)
    else:
        torch.cuda.set_device(local)
        # No device_id: binding one makes NCCL communicators eager, and then creating any
        # sub-group — even a Gloo one — makes the ranks left out of it call ncclCommSplit,
        # which the members never match, and every rank hangs. Lazily, each communicator
        # is made by its first collective, among its members only.
        dist.init_process_group("nccl", timeout=timeout)
        ctrl = dist.new_group(backend="gloo", timeout=timeout)
        world = Ranks(rank, size, local, f"cuda:{local}", dist.group.WORLD, ctrl, 0)
    layout = hosts.Layout(tuple(every_rank(world, hosts.here(world.device))))
    on_host = layout.on_host(rank)
    return replace(world, on_host=on_host,
                   threads=0 if world.cuda else cpu_threads(on_host)), layout


def _group_timeout(spec: Spec) -> timedelta:
    """The process groups' own timeout: past every rank's clock (`_Progress`), a rank
    waiting out every try of a case it is not in included, so that a hang is ended by a
    clock that says so in words, not by NCCL's watchdog tearing the process down."""
    return timedelta(seconds=MOST_TRIES * spec.timeout_s + PARENT_GRACE_S)


def _subgroups(world: Ranks, spec: Spec, layout: hosts.Layout) -> dict[int, Ranks]:
    """Ranks 0…n−1 for every smaller n a case needs: scaling runs N ranks while the
    others wait. Every rank must create every group, in the same order."""
    import torch.distributed as dist

    timeout = _group_timeout(spec)
    out = {world.size: world}
    for n in sorted({c.size for c in spec.cases} - {world.size}):
        group = dist.new_group(list(range(n)), backend=spec.setup.backend, timeout=timeout)
        ctrl = group if not world.cuda else dist.new_group(list(range(n)), backend="gloo",
                                                           timeout=timeout)
        out[n] = replace(world, size=n, group=group, ctrl=ctrl,
                         on_host=layout.on_host(world.rank, n))
    return out


def _results(spec: Spec, world: Ranks, groups: dict[int, Ranks], progress: _Progress,
             power: EnergyOptions = NOT_ASKED) -> Iterator[tuple[Case, Any, int, bool]]:
    """This rank's part of each case as the case ends: (case, its RankResult — None on a
    rank a scaling case leaves out —, the CPU threads it ran with, whether the case was
    yielded before: its graph replays, added once every eager sample is taken). Each step
    of a case (`start`, or `replay`) is announced before it is taken (`_Progress.step`),
    which restarts the clocks and names the case a crash or a hang belongs to; a planted
    fault fires at a case's first step. With --energy, each rank count's energy is read
    in the last round only: one window of ENERGY_WINDOW_S per N, as before rounds."""
    seen: set[str] = set()

    def visit(case: Case, waiting: bool = False) -> None:
        progress.step(case, waiting=waiting)
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
                lambda case: progress.step(case, replay=True)):
            yield case, mine, world.threads, True
        return
    last = max(_round(c) for c in spec.cases)
    for case in spec.cases:
        member = world.rank < case.size
        visit(case, waiting=not member)
        r = groups[case.size]
        threads = 0 if r.cuda else cpu_threads(r.on_host)
        asked = power if _round(case) == last else NOT_ASKED
        yield case, (scaling.run_case(r, case, spec.steps, threads, partial(visit, case),
                                      asked) if member else None), threads, False


def _round(case: Case) -> int:
    return int(case.param("round") or 1)


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


def _ready(world: Ranks, layout: hosts.Layout, spec: Spec) -> dict[str, Any]:
    """What every rank runs with, known to every rank: versions, the NCCL variables each
    rank inherited (multicast settings included), where the ranks run and which machines
    were busy (each machine's first rank looks, once), and rank 0's run and store — so
    that every node can say where its results went."""
    import torch

    from gpuvs.machine import contention

    mine = {k: v for k, v in sorted(os.environ.items()) if k.startswith(PASSED_PREFIXES)}
    # Rank 0's machine was looked at before the ranks met: by the parent, or by rank 0
    # itself under --launched; another machine's first rank looks at its own.
    looks = (spec.launched and layout.first_on_host(world.rank)
             and layout.places[world.rank].host != layout.places[0].host)
    busy = (contention.busy_line() or "") if looks else ""
    every = every_rank(world, (mine, busy, spec.run_id, spec.db))
    nccl = ""
    if world.cuda:
        v = torch.cuda.nccl.version()
        nccl = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
    placed = hosts.Layout(tuple(replace(p, busy=e[1]) for p, e in zip(layout.places, every,
                                                                        strict=True)))
    return {"torch": torch.__version__, "nccl": nccl, "rank_env": [e[0] for e in every],
            "layout": placed.described(), "busy": list(placed.busy()),
            "run_id": every[0][2], "db": every[0][3], "host": layout.places[0].host}


def _store(spec: Spec) -> Any:
    from gpuvs.store import open_store
    return open_store(spec.db)


def _emit(spec: Spec, world: Ranks, event: Message) -> None:
    """One event for the parent (rank 0 only, and only under a parent), on the wire every
    child answers on: `Ready` with what the ranks run with, `Started` before each step of
    a case (its graph replays: `replay`), `Measured` once a case is saved (`resaved`:
    saved again with its replays)."""
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
