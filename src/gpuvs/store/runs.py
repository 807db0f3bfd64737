"""A run's lifecycle, owned here: started, each case recorded as it finishes, then
finished or interrupted. Every command and entry point that stores a run goes through
`start_run` (or `resume_run`), so a run id, its timestamps and its kind are made in one
place.

    run = start_run(store, RunKind.SEEDS, {"seeds": ["000"]})
    for m in measurements:
        run.record(m)          # committed at once: a killed run keeps what it measured
    run.finish()
"""

from __future__ import annotations

import secrets
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from gpuvs.errors import Interrupted, StoreError, UsageError
from gpuvs.model import Caveat, Environment, Measurement, Run, RunKind, Status

RUN_ID_FORMAT = "%Y%m%d-%H%M%S"
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%S%z"


def new_run_id() -> str:
    """'20261123-204613-757c': sortable by start time, unique by its random tail."""
    return time.strftime(RUN_ID_FORMAT) + "-" + secrets.token_hex(2)


def now() -> str:
    """The local time with its offset, as runs record `started_at` and `finished_at`."""
    return time.strftime(TIMESTAMP_FORMAT)


class RunHandle:
    """A run being recorded in a store. Closing the store is the caller's business.

    A run started `lazily` is written at its first case: a command whose input is found
    bad before any case (run-file's worker finds no such function) leaves no run behind;
    `on_create` hears when it is written."""

    def __init__(self, store: Any, started: Run, created: bool = True,
                 on_create: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.started = started  # the run as it was created (or found, when resumed)
        self.created = created
        self._on_create = on_create

    def _create(self) -> None:
        if not self.created:
            self.store.create_run(self.started)
            self.created = True
            if self._on_create is not None:
                self._on_create(self.run_id)

    @property
    def run_id(self) -> str:
        return self.started.run_id

    @property
    def kind(self) -> RunKind:
        return self.started.kind

    def record(self, m: Measurement) -> None:
        """Save one finished case, committed before this returns."""
        self._create()
        self.store.save(self.run_id, m)

    def finished_keys(self) -> set[str]:
        """The cases already recorded (a resumed run skips them)."""
        return set(self.store.finished_keys(self.run_id)) if self.created else set()

    def measurements(self) -> list[Measurement]:
        return list(self.store.measurements(self.run_id)) if self.created else []

    def finish(self) -> None:
        self._create()
        self.store.finish_run(self.run_id, "finished", now())

    def interrupt(self, reason: str = "") -> None:
        """The run stopped before its last case, by a signal: `--resume` finishes it."""
        if self.created:
            self.store.finish_run(self.run_id, "interrupted", now(), reason)

    def fail(self, reason: str) -> None:
        """The run cannot go on (its store failed mid-run); every case recorded stays. The
        store is asked once, not waited for: it has just failed."""
        if self.created:
            self.store.finish_run(self.run_id, "failed", now(), reason, patience=0.0)

    def stored(self) -> Run:
        """The run as the store holds it now (status and finish time included)."""
        found: Run = self.store.get_run(self.run_id)
        return found


@contextmanager
def guarded(run: RunHandle, how_to_finish: str,
            finished: Callable[[], int] | None = None) -> Iterator[RunHandle]:
    """A run never left `running` by something that stops it early:

    - Ctrl-C (SIGINT) and SIGTERM end it as `interrupted`, and `Interrupted` says how to
      finish it (`how_to_finish`, a sentence). SIGTERM is turned into the same exception
      as Ctrl-C while the block runs (from the main thread only, where Python delivers
      signals).
    - A storage failure (a full disk, a lock held too long, a corrupt file, a server
      gone past the store's patience) ends it as `failed` with the reason, where the
      store can still say so, and the `StoreError` goes on, naming what was kept and how
      to finish it (`--resume latest` finds a failed run as it finds an interrupted one).
      So does bad input found mid-run (`UsageError`: a builder of run-file's inputs that
      raised at the third size).

    Either way the cases recorded so far stay. The message counts them by status, the
    calibration's probes apart (`_kept`), and `finished` says how many of the cases (the
    probes not among them) need nothing more (a case stored after its first pass of two
    is measured again by `--resume`); by default, all of them. A run written lazily and
    stopped before its first case was never stored: the message names no run."""
    caught: list[str] = []

    def terminated(signum: int, frame: Any) -> None:
        caught.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main else None
    try:
        yield run
    except KeyboardInterrupt:
        name = caught[0] if caught else "SIGINT"
        if not run.created:  # a run written lazily, stopped before its first case
            raise Interrupted(f"stopped by {name} before any case was recorded: no run was "
                              f"saved. {how_to_finish}") from None
        run.interrupt(f"stopped by {name}")
        raise Interrupted(f"run {run.run_id} stopped by {name}; {_kept(run, finished)}. "
                          f"{how_to_finish}") from None
    except UsageError as e:  # bad input met mid-run (a builder that raised at a size)
        if not run.created:  # before any case: nothing was stored, nothing to say of it
            raise
        run.fail(str(e))
        raise UsageError(f"{e}; run {run.run_id} is marked failed; "
                         f"{_kept(run, finished)}") from None
    except StoreError as e:
        try:
            run.fail(str(e))
            marked = f"run {run.run_id} is marked failed"
        except StoreError:
            marked = f"run {run.run_id} could not be marked failed (it reads running)"
        raise StoreError(f"{e}; {marked}; every case finished before it is kept. "
                         f"{how_to_finish}") from None
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


def _kept(run: RunHandle, finished: Callable[[], int] | None) -> str:
    """'its recorded cases are kept: 30 ok (12 of them after their first pass only, which
    finishing it measures again), 77 unavailable, with the machine's calibration (12
    probes)' — the cases counted by status, the calibration's probes (which describe the
    machine, not the work) apart; together, what `gpuvs runs` counts. How to finish it is
    the command's to say (seeds has no --resume)."""
    ms = run.measurements()
    counts = Counter(m.status for m in ms if not m.case.calibrates)
    probes = len(ms) - sum(counts.values())
    also = (f", with the machine's calibration ({probes} probe{'s' * (probes != 1)})"
            if probes else "")
    if not counts:
        return f"no case was recorded{also}"
    partial = sum(counts.values()) - finished() if finished is not None else 0
    said = [f"{n} {status}" + (f" ({partial} of them after their first pass only, which "
                                "finishing it measures again)"
                                if status is Status.OK and partial > 0 else "")
            for status, n in sorted(counts.items(), key=lambda sn: list(Status).index(sn[0]))]
    return f"its recorded cases are kept: {', '.join(said)}{also}"


def start_run(store: Any, kind: RunKind, config: Mapping[str, Any],
              environment: Environment | None = None, lazily: bool = False,
              on_create: Callable[[str], None] | None = None) -> RunHandle:
    """Create the run in `store` now, so that even a run killed at once leaves its trace.
    `config` is what the run measures; its kind is written into it (a sweep's is left
    implicit, as sweeps have always been stored). The environment is this machine's
    unless given, and carries the run's provenance (`env.provenance`: git commit, command
    line, machine label) under `facts["provenance"]`. A run started `lazily` is written
    at its first case (`RunHandle`)."""
    record = new_run(kind, config, environment)
    if lazily:
        return RunHandle(store, record, created=False, on_create=on_create)
    store.create_run(record)
    return RunHandle(store, record)


def new_run(kind: RunKind, config: Mapping[str, Any],
            environment: Environment | None = None) -> Run:
    """A run's record, not yet stored: what `start_run` stores, and what a comparison
    exports as its run (`Comparison.to_json`, in the one run format)."""
    from gpuvs.machine import env
    if environment is None:
        environment = env.collect()
    if "provenance" not in environment.facts:  # a comparison made elsewhere keeps its own
        environment = Environment(environment.fingerprint,
                                  {**environment.facts, "provenance": env.provenance()})
    stored = dict(config) if kind is RunKind.SWEEP else {"kind": kind.value, **config}
    return Run(new_run_id(), now(), stored, environment)


def resume_run(store: Any, run_id: str) -> RunHandle:
    """The stored run `run_id`, to record its remaining cases into."""
    return RunHandle(store, store.get_run(run_id))


def latest_unfinished(store: Any, kind: RunKind) -> Run | None:
    """The most recent run of `kind` that stopped before its last case (interrupted,
    failed by its store, or still `running` because its process was killed outright):
    what `--resume latest` finishes."""
    for record in store.runs(200):
        if record.kind is kind and record.status in ("interrupted", "failed", "running"):
            found: Run = record
            return found
    return None


def find_ceilings_run(store: Any, environment: Environment) -> Run | None:
    """The `gpuvs ceilings` run whose figures are this set-up's peaks: a machine's
    ceilings are measured once and reused by every run on it.

    The latest finished one of the same fingerprint — recomputed from each run's facts,
    so a ceilings run stored under an older fingerprint still serves — measured on a quiet
    machine. One whose probes other processes disturbed (`contended`) read low: a float32
    peak below its own one-thread figure, and shares of it up to 229 % "of peak". It is
    used only while no clean one exists, and what uses it says so (`Ceiling.contended`;
    `gpuvs ceilings --refresh` measures again)."""
    from gpuvs.machine import env
    wanted = env.fingerprint(environment.facts)
    disturbed: Run | None = None
    for record in store.runs(200):
        if (record.kind is not RunKind.CEILINGS or record.status != "finished"
                or env.fingerprint(record.environment.facts) != wanted):
            continue
        if not any(Caveat.CONTENDED in m.caveats for m in store.measurements(record.run_id)):
            found: Run = record
            return found
        disturbed = disturbed or record
    return disturbed
