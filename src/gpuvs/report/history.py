"""Runs side by side, as tables of strings: the list of stored runs, what differs between
two runs' environments, and case by case how B compares with A (regression.py's verdicts).
Pure, like layout.py: the commands print these, in plain text, markdown or JSON."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from gpuvs import units
from gpuvs.analysis.regression import FAILED, FAMILY, Change, Gate, Mean, Unmatched, unjudged
from gpuvs.machine.env import setup_changes
from gpuvs.model import Measurement, Run, Status
from gpuvs.table import Table

RUN_COLUMNS = ("run", "kind", "started", "status", "machine", "GPU", "commit", "ok",
               "failed")
CHANGE_COLUMNS = ("case", "A", "B", "B ÷ A (95 % CI)", "rank test p", "verdict")
MEAN_COLUMNS = ("workload", "cases", "geometric mean B ÷ A (95 % CI)")


def machine_of(run: Run) -> str:
    return str(provenance(run).get("machine") or run.environment.facts.get("hostname") or "—")


def provenance(run: Run) -> Mapping[str, Any]:
    found = run.environment.facts.get("provenance")
    return found if isinstance(found, Mapping) else {}


def commit_of(run: Run) -> str:
    p = provenance(run)
    commit = p.get("git_commit")
    if not commit:
        return "—"
    return str(commit)[:10] + ("+dirty" if p.get("git_dirty") else "")


def gpus_of(run: Run) -> str:
    names = [str(g.get("name")) for g in run.environment.facts.get("gpus", []) or []]
    return ", ".join(dict.fromkeys(names)) or "none"


def runs_table(found: Sequence[tuple[Run, Sequence[Measurement]]]) -> Table:
    """One row per run, newest first, with its cases counted by outcome."""
    rows = []
    for run, ms in found:
        counts = Counter(m.status for m in ms)
        rows.append((run.run_id, run.kind.value, run.started_at, run.status, machine_of(run),
                     gpus_of(run),
                     commit_of(run), str(counts[Status.OK]),
                     str(sum(counts[s] for s in FAILED))))
    return Table("stored runs, most recent first", RUN_COLUMNS, tuple(rows),
                 notes=("failed: crashed, wrong result, timeout or out of memory",))


# What is compared between environments: label → how to read it from the facts.
_ENV_FIELDS = (
    ("GPU", lambda f: ", ".join(str(g.get("name")) for g in f.get("gpus", []) or []) or "none"),
    ("driver", lambda f: f"{f.get('driver') or '—'} (CUDA {f.get('cuda_driver') or '—'})"),
    ("CPU", lambda f: f"{f.get('cpu_model')}, {f.get('cores_logical')} threads"),
    ("BLAS threads", lambda f: ", ".join(f"{p.get('api')} {p.get('threads')}"
                                         for p in f.get("blas", []) or []) or "—"),
    ("variables", lambda f: ", ".join(f"{k}={v}" for k, v in
                                      sorted((f.get("variables") or {}).items())) or "none set"),
    ("libraries", lambda f: ", ".join(f"{k} {v}" for k, v in
                                      sorted((f.get("libraries") or {}).items())) or "—"),
    ("Python", lambda f: str(f.get("python"))),
)
BY_DESIGN = "this compares the machines and their software, by design"


def environment_rows(a: Run, b: Run, clocks: tuple[str, str] = ("", "")
                     ) -> list[tuple[str, str, str]]:
    """(what, A's, B's) for each part of the environment compared, the SM clocks each
    run's GPU cases ran at (where read) last."""
    return [*(_read(label, read, a, b) for label, read in _ENV_FIELDS), ("SM clock", *clocks)]


def environment_diff(a: Run, b: Run, clocks: tuple[str, str] = ("", ""),
                     across: str = BY_DESIGN) -> list[str]:
    """Lines: first whether the two ran on one set-up — what changed that moves timings
    (`env.setup_changes`), then `across`, what comparing them anyway means — then what
    differs, then what is the same."""
    lines = []
    changes = setup_changes(a.environment.facts, b.environment.facts)
    if changes:
        lines.append(f"A ({machine_of(a)}, {gpus_of(a)}) and B ({machine_of(b)}, {gpus_of(b)}) "
                     f"ran on different set-ups ({'; '.join(changes)}): {across}")
    same = []
    for label, va, vb in environment_rows(a, b, clocks):
        if va == vb:
            same.append(label)
        else:
            lines.append(f"{label}: A {va or '—'}; B {vb or '—'}")
    lines.append(f"same in both: {', '.join(same)}" if same else "nothing else is the same")
    return lines


def _read(label: str, read: Any, a: Run, b: Run) -> tuple[str, str, str]:
    return label, str(read(a.environment.facts)), str(read(b.environment.facts))


def change_table(changes: Sequence[Change], threshold: float, names: tuple[str, str],
                 together: int = 0) -> Table:
    """Each case, slowest first: A's and B's medians, the ratio, the rank test, the word;
    `together`: the number of cases a gate judged as one family, its intervals widened
    for them (`regression.family_widening`)."""
    order = sorted(changes, key=lambda c: (c.workload, -c.ratio))
    rows = tuple((c.key, units.seconds(c.a), units.seconds(c.b),
                  f"{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]", f"{c.p_value:.2g}",
                  verdict_cell(c, threshold)) for c in order)
    t = 100 * threshold
    machine = (("machine: the case's change is within the threshold of its bound's "
                "calibration probe's (B ÷ A of the probe beside it): the machine's, not the "
                "code's; a word with a probe beside it was judged by the case's ratio over "
                "that probe's",) if any(c.machine for c in changes) else ())
    return Table(f"B ({names[1]}) against A ({names[0]}), case by case", CHANGE_COLUMNS, rows,
                 notes=(f"slower / faster: the whole CI above {1 + threshold:.3g} / below "
                        f"{1 / (1 + threshold):.3g} (threshold {t:g} %); same: the whole CI "
                        "within them; ambiguous: the CI straddles a threshold", *machine,
                        *((f"judged together: each CI is {100 * (1 - (1 - FAMILY) / together):.4g} "
                           f"%, so that all {together} hold at {100 * FAMILY:g} % "
                           "(Bonferroni): meant to pass a rerun of unchanged code 19 times in 20",)
                          if together > 1 else ()),
                        "rank test: Mann–Whitney U on the two runs' samples, two-sided"),
                 wrapping=frozenset({"verdict"}))


def verdict_cell(c: Change, threshold: float) -> str:
    """The verdict, and whose it is: 'machine (launch (torch cuda:0) 1.35×)' where the
    case's bound's probe explains it; 'slower (1.21× over launch (numpy cpu) at 1.00×)'
    where it was judged by its ratio over that probe's; 'ambiguous: slower by its ratio,
    CI above 1' where a gate cannot pass it (`regression.unjudged`); a post's replay as
    written is marked not gated; the word alone where no probe was set against it."""
    m = c.machine
    contended = " (contended)" if c.contended else ""
    replay = " (replay as written: not gated)" if c.replay else ""
    if m is None and not c.contended and c.verdict == "ambiguous" and unjudged(c, threshold):
        return "ambiguous: slower by its ratio, CI above 1" + replay
    if m is None or c.verdict == "same":
        return c.verdict + contended + replay
    if c.verdict == "machine":
        return f"machine ({m.probe} {m.ratio:.3f}×)" + contended + replay
    return f"{c.verdict} ({m.residual:.3f}× over {m.probe} at {m.ratio:.3f}×)" + contended + replay


def means_table(means: Sequence[Mean]) -> Table:
    rows = tuple((m.workload, str(m.cases), f"{m.ratio:.3f} [{m.low:.3f}, {m.high:.3f}]")
                 for m in means)
    return Table("per workload", MEAN_COLUMNS, rows,
                 notes=("geometric mean of the cases' ratios; its CI resamples the cases "
                        "(one case: that case's own CI)",))


def code_changed_lines(changes: Sequence[Change]) -> list[str]:
    """The user's own functions whose source differs between A and B: judged, as the new
    version of the same function, where a registered workload's would be refused."""
    changed = sorted({c.workload for c in changes if c.code_changed})
    return [f"the code changed: {w} ran another version of its source in B than in A; "
            "B is judged as its new version" for w in changed]


def one_process_lines(*runs: Sequence[Measurement]) -> list[str]:
    """Where the user's own code was timed in one process (its own, by `gpuvs.compare`,
    the magic or the fixture): its intervals show that process only, and a new process
    may land outside them, which a verdict on them must be read with."""
    found = sorted({m.case.workload for ms in runs for m in ms if one_process(m)})
    return ([f"one process's interval: {', '.join(found)} timed in one process (your "
             "own); a new process may land outside it (`gpuvs run-file` samples several)"]
            if found else [])


def one_process(m: Measurement) -> bool:
    """Whether a finished case of the user's own code took its samples in one process."""
    return m.case.users_code and m.one_process


def unmatched_lines(unmatched: Sequence[Unmatched], forced: bool) -> list[str]:
    versions = [u for u in unmatched if u.why.startswith("workload version")]
    lines = [f"not compared, {u.why}: {u.key}" for u in unmatched if u not in versions]
    lines += [f"{'compared anyway (--force)' if forced else 'refused'}, {u.why}: {u.key}"
              for u in versions]
    return lines


def not_measured_lines(gate: Gate, allow_failed: bool) -> list[str]:
    """Each case of the judged run that fails the gate by not ending ok, named with its
    status and reason; the cases neither run could measure here, counted."""
    how = "allowed (--allow-failed)" if allow_failed else "fails the gate"
    lines = [f"not ok in B, {how}: {n.key}: {n.status}" + (f": {n.reason}" if n.reason else "")
             for n in gate.failing]
    idle = Counter(n.status for n in gate.not_measured if not n.failing)
    if idle:
        lines.append("not measured in B, nor compared: " + ", ".join(
            f"{count} {status}" for status, count in sorted(idle.items())))
    return lines


def verdict_counts(changes: Sequence[Change]) -> str:
    counts = Counter(c.verdict for c in changes)
    return ", ".join(f"{counts[v]} {v}" for v in ("slower", "faster", "same", "ambiguous",
                                                   "machine")
                     if counts[v]) or "no case in common"
