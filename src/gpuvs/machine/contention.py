"""Whether other work shared the machine while a case was measured.

Two busy processes on a 2-core machine turned a 36 µs elementwise case into 7.99 ms
±0.4 %: a tight interval around the wrong number, stored `ok`. A case is **contended**
when, during its samples, other processes took more than OTHERS_SHARE of the CPU time the
case asked for — its threads on the CPU, the one thread that launches work on a GPU —
beyond what the cores it left idle could give them (system-wide busy CPU time minus this
process's own, from psutil), or when another process held the GPU it ran on (NVML, in
`telemetry`). The runner measures such a case again after a pause; if the contention
persists the case is stored with `Caveat.CONTENDED`, and everything built on it says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpuvs import units

if TYPE_CHECKING:
    import psutil

# Other processes' share of the CPU time a case asked for above which it was contended…
OTHERS_SHARE = 0.1
# … once they took at least this much of it: the kernel counts CPU time in ticks of 10 ms,
# on each core, so the machine's busy time and the case's own can each be off by a tick a
# core at either end of the case — and over a case of a few tens of ms the share is noise.
OTHERS_MIN_S = 0.1
TICK_NOISE_S_PER_CORE = 0.02
# `gpuvs run` names a busy machine at the start when the 1-minute load is this share of
# the cores or more, or when other processes were contending since the command began.
BUSY_LOAD_SHARE = 0.75
TOP_PROCESSES = 3


@dataclass(frozen=True)
class Snapshot:
    """CPU time at one instant: the machine's busy seconds (all cores) and this
    process's own (its threads included), with the wall clock. With `tree`, "own" is also
    every live descendant's (`snapshot(tree=True)`): compare it only with another such."""

    wall_s: float
    machine_busy_s: float
    own_s: float
    tree: bool = False


def snapshot(tree: bool = False) -> Snapshot:
    """The machine's busy CPU time and this process's own, with its waited-for children's.

    With `tree`, its live descendants' too, each with its own waited-for children's: a
    command whose worker processes run between two readings (run-file's, its calibration's)
    counts their CPU time as its own, not as another job's. A descendant that exits between
    the readings keeps its time in the tree only once waited for by a parent still in it
    (this process, or a live descendant); an orphaned grandchild's leaves it, and is
    counted as other processes' — an error towards "busy", only for such grandchildren.
    Without `tree` (the sampling watches, around every case), one process is read."""
    import psutil

    total = psutil.cpu_times()
    idle = total.idle + getattr(total, "iowait", 0.0)
    busy = sum(total) - idle - getattr(total, "guest", 0.0) - getattr(total, "guest_nice", 0.0)
    me = psutil.Process()
    own = _cpu_s(me)
    if tree:
        for p in me.children(recursive=True):
            try:
                own += _cpu_s(p)
            except psutil.Error:  # gone since it was listed: its parent's, once waited for
                continue
    return Snapshot(time.monotonic(), busy, own, tree)


def _cpu_s(p: psutil.Process) -> float:
    """A process's CPU seconds, its threads' and its waited-for children's."""
    t = p.cpu_times()
    return float(t.user + t.system + t.children_user + t.children_system)


def others_share(before: Snapshot, after: Snapshot, demand: float,
                 cores: int | None = None) -> float:
    """The share of the CPU time a case asked for (`demand` cores over its wall time) that
    other processes took from it: what they used beyond the cores the case left idle.

    A case at every core has none to spare, so every second others ran came out of it; a
    GPU case asks for one core, and a process busy on another core takes nothing from it.
    The denominator is what the case asked for, not what it got: the share left free by
    a case at every core is nearly nothing, and any background tick would be most of it
    (on a 16-core H100 host that called 33 of a full `gpuvs seeds`'s CPU cases contended,
    each measured again after a pause, with no other process busy)."""
    taken, asked, _ = _taken(before, after, demand, cores)
    return min(taken / asked, 1.0)


def contended(before: Snapshot, after: Snapshot, demand: float,
              cores: int | None = None) -> bool:
    """Other processes took over OTHERS_SHARE of the CPU time the case asked for, and more
    CPU time than the kernel's tick counting can account for on this many cores."""
    return evidence(*_taken(before, after, demand, cores))


def evidence(taken_s: float, asked_s: float, cores: int, windows: int = 1) -> bool:
    """Whether other processes' `taken_s` of the `asked_s` a case asked for, over
    `windows` sampling windows (a case's processes, one window each), is contention:
    over OTHERS_SHARE, and beyond what the kernel's ticks can miscount at each end of
    each window on this many cores. Five processes of 0.06 s each on two cores show
    nothing one by one; together they show two busy loops."""
    noise = max(OTHERS_MIN_S, TICK_NOISE_S_PER_CORE * cores * windows)
    return asked_s > 0 and taken_s >= noise and taken_s / asked_s > OTHERS_SHARE


def can_show(before: Snapshot, after: Snapshot, cores: int | None = None) -> bool:
    """Whether a window this long could hold evidence of contention at all: other
    processes on every core for all of it would take more than the ticks' miscount."""
    import psutil

    cores = cores or psutil.cpu_count() or 1
    wall = after.wall_s - before.wall_s
    return cores * wall >= max(OTHERS_MIN_S, TICK_NOISE_S_PER_CORE * cores)


def cpu_taken(before: Snapshot, after: Snapshot, demand: float, cores: int | None = None
              ) -> tuple[float, float, int]:
    """Other processes' CPU seconds taken from the case, the CPU seconds it asked for, and
    the cores counted (`_taken`): what a case's processes add up to judge it over all of
    them (`evidence`), and what its watch judges one window by."""
    return _taken(before, after, demand, cores)


def _taken(before: Snapshot, after: Snapshot, demand: float, cores: int | None
           ) -> tuple[float, float, int]:
    """Other processes' CPU time beyond what the cores the case left idle could hold, the
    CPU time the case asked for, and the cores counted."""
    import psutil

    cores = cores or psutil.cpu_count() or 1
    demand = min(max(demand, 1.0), cores)
    wall = max(after.wall_s - before.wall_s, 1e-9)
    own = max(after.own_s - before.own_s, 0.0)
    others = max(after.machine_busy_s - before.machine_busy_s - own, 0.0)
    return max(others - (cores - demand) * wall, 0.0), demand * wall, cores


# A worker's own threads after its case: a thread pool spins on after its work (OpenBLAS
# about 0.1 s, XLA's and OpenMP's theirs) and takes that CPU from whatever is measured
# next in another process. On an H100 host, torch's 16-thread CPU products right after
# NumPy's were `contended` in 6–9 of 60 passes a run, each paused 2 s and taken again.
# The worker waits, after the case and before it answers, until its threads take less
# than QUIET_SHARE of a core over a QUIET_STEP_S step, at most QUIET_MOST_S.
QUIET_STEP_S = 0.005
QUIET_SHARE = 0.2
QUIET_MOST_S = 1.0


def quiet(most_s: float = QUIET_MOST_S, step_s: float = QUIET_STEP_S,
          clock: Callable[[], float] = time.perf_counter,
          own: Callable[[], float] = time.process_time,
          sleep: Callable[[float], None] = time.sleep) -> float:
    """Wait until this process's own threads stop taking CPU (`own`: every thread's CPU
    time), at most `most_s`; the seconds waited. Outside anything timed: what a thread
    pool does after its work belongs to the case it worked for, not to the next one."""
    began = clock()
    before = own()
    while clock() - began < most_s:
        sleep(step_s)
        now = own()
        if now - before < QUIET_SHARE * step_s:
            break
        before = now
    return clock() - began


# The load averages `os.getloadavg` gives, by the minutes each spans.
LOAD_MINUTES = (1, 5, 15)


def load_average(minutes: int = 1) -> float:
    """The load over the last `minutes` (1, 5 or 15); 0 where the system keeps none."""
    return os.getloadavg()[LOAD_MINUTES.index(minutes)] if hasattr(os, "getloadavg") else 0.0


def loaded(minutes: int = 1) -> bool:
    """Whether the load over the last `minutes` (1, 5 or 15) is BUSY_LOAD_SHARE of the
    cores or more: a run started now finds its cases contended, and measures most of them
    again. The 1-minute load says so at a run's start; a plan's estimate reads the
    15-minute one, which moves too slowly to change between two estimates a minute apart."""
    return _heavy(load_average(minutes))


def _heavy(load: float) -> bool:
    import psutil

    return load >= BUSY_LOAD_SHARE * (psutil.cpu_count() or 1)


def busy_line(since: Snapshot | None = None, load_at_start: float | None = None
              ) -> str | None:
    """One line naming a busy machine before a run starts (None when it is quiet): the
    load against the cores, or other processes' share of the CPU `since` the command
    began (a load started seconds ago, which the 1-minute load average hardly shows
    yet), and the processes using the most CPU.

    A command that writes the line only once its own workers have run (run-file's, at its
    first case, after its calibration) reads `load_at_start` (`load_average()`) and
    `since` (`snapshot(tree=True)`) before it starts any: its workers raise the load
    themselves, and a tree snapshot counts their CPU time as its own, and leaves them out
    of the processes named (a quiet 2-core box read 'busy: python (99 %)', its own
    worker). Without them, the load is read now and only this process is its own."""
    import psutil

    cores = psutil.cpu_count() or 1
    load = load_average() if load_at_start is None else load_at_start
    if _heavy(load):
        why = f"load {load:.1f} on {cores} cores"
    elif since is not None and contended(since, now := snapshot(tree=since.tree), cores,
                                           cores):
        # a run may use every core: the machine's share that others took
        why = (f"other processes took {others_share(since, now, cores, cores):.0%} of the "
               f"CPU in the last {units.seconds(now.wall_s - since.wall_s)}")
    else:
        return None
    top = ", ".join(f"{name} ({pct:.0f} %)" for pct, name in
                    _top(_mine(since is not None and since.tree)) if pct >= 1)
    return (f"this machine is busy: {why}"
            + (f"; using the CPU: {top}" if top else "")
            + "; timings may be slow and noisy, and cases measured under contention are "
              "marked 'contended'")


def _mine(tree: bool) -> set[int]:
    """This process's id, with its live descendants' under `tree`."""
    import psutil

    me = psutil.Process()
    return {me.pid} | ({p.pid for p in me.children(recursive=True)} if tree else set())


def _top(mine: set[int]) -> list[tuple[float, str]]:
    """The TOP_PROCESSES other processes using the most CPU over 0.3 s, but `mine`: each's
    percent of a core and its name."""
    import psutil

    procs = list(psutil.process_iter(["pid", "name"]))
    for p in procs:
        try:
            p.cpu_percent(None)
        except psutil.Error:
            continue
    time.sleep(0.3)
    usage = []
    for p in procs:
        try:
            if p.pid not in mine:
                usage.append((p.cpu_percent(None), p.info["name"] or str(p.pid)))
        except psutil.Error:
            continue
    return sorted(usage, reverse=True)[:TOP_PROCESSES]
