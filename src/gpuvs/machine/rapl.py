"""The CPU's energy counters: RAPL (Intel, and AMD since Zen), read through Linux's
powercap tree, `/sys/class/powercap`.

Each RAPL domain is a zone there (`intel-rapl:0`, `intel-rapl:0:2`, …, all listed flat)
with a `name`, an `energy_uj` counter in microjoules and the value it wraps at,
`max_energy_range_uj`. Only the `package-N` and `dram` zones are summed: `core` and
`uncore` are parts of a package, and `psys` (a laptop's whole platform) holds the package
too, so adding them would count joules twice. `intel-rapl-mmio:N` repeats a package
through another interface and is left out for the same reason.

What can stop a reading, each said in words by `gpuvs.machine.energy`: no powercap tree
(most VMs, including the H100 VM gpuvs is validated on, and every non-Linux system); no
package zone; and `energy_uj` readable by root alone — Linux made it so in November 2020
(CVE-2020-8694, "PLATYPUS": the counter leaked what a process computed), and most
distributions kept it. The counters cover the whole package, every process on it: a
figure is the machine's energy over the window, not one process's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

POWERCAP = Path("/sys/class/powercap")
ZONES = "intel-rapl:*"
PACKAGE, DRAM = "package", "dram"


class Unreadable(Exception):
    """RAPL cannot be read here: `permission` when the counters exist but only root may
    read them, else there are none to read."""

    def __init__(self, why: str, permission: bool = False) -> None:
        super().__init__(why)
        self.permission = permission


@dataclass(frozen=True)
class Domain:
    """One summed zone: what it counts (PACKAGE or DRAM), its counter and its wrap."""

    kind: str
    zone: str          # "intel-rapl:0", as powercap names it
    counter: Path      # its energy_uj
    max_range_uj: int  # energy_uj wraps to 0 past this


@functools.cache
def domains(root: Path = POWERCAP) -> tuple[Domain, ...]:
    """The package and DRAM zones under `root`, checked readable now; `Unreadable` says
    why not. Looked up once per process: the tree does not change while gpuvs runs."""
    if not root.is_dir():
        raise Unreadable(f"no {root}")
    found = []
    for zone in sorted(root.glob(ZONES)):
        name = _text(zone / "name")
        kind = PACKAGE if name.startswith("package") else DRAM if name == "dram" else None
        wrap = _text(zone / "max_energy_range_uj")
        if kind is not None and not wrap.isdigit():
            raise Unreadable(f"{zone / 'max_energy_range_uj'} holds no count: {wrap!r}")
        if kind is not None:
            found.append(Domain(kind, zone.name, zone / "energy_uj", int(wrap)))
    if not any(d.kind == PACKAGE for d in found):
        raise Unreadable(f"no package zone under {root}")
    read(tuple(found))
    return tuple(found)


def read(found: tuple[Domain, ...]) -> tuple[int, ...]:
    """Each domain's counter now, in microjoules."""
    try:
        return tuple(int(d.counter.read_text()) for d in found)
    except PermissionError as e:
        raise Unreadable(f"{e.filename} is readable by root alone", permission=True) from None
    except (OSError, ValueError) as e:
        raise Unreadable(f"cannot read a RAPL counter: {e}") from None


def joules(domain: Domain, before_uj: int, after_uj: int) -> float:
    """The energy between two readings of `domain`, across one wrap of its counter (a
    range of about 262 kJ on recent Intel parts: an hour at 70 W; windows are seconds)."""
    delta = after_uj - before_uj
    if delta < 0:
        delta += domain.max_range_uj
    return delta / 1e6


def _text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""
