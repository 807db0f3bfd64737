"""A device profile: one machine's measured ceilings, kept as a versioned JSON file.

`gpuvs ceilings --save-profile NAME` writes one from the machine's ceilings run, with
what a reader needs to judge it: the GPU, the driver, the library versions, the date and
the run it came from. A profile is only ever measured: the ones shipped with gpuvs
(`gpuvs/predicting/profiles/`, found through `importlib.resources`) came from
`gpuvs ceilings` on that GPU, and a user's own live in their profile directory
($GPUVS_PROFILES, else the user data directory) or in any file (`--profile FILE`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from importlib.resources import files
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from gpuvs.errors import UsageError
from gpuvs.model import Ceiling, Run
from gpuvs.store.output import write_atomic

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

FORMAT_VERSION = 1
ENV_VAR = "GPUVS_PROFILES"
SUFFIX = ".json"
# Beside a profile, the residuals of its validation run (`gpuvs.predicting.residuals`).
RESIDUALS_SUFFIX = ".residuals.json"
SHIPPED = "shipped with gpuvs"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Profile:
    """What a machine can do, as `gpuvs ceilings` measured it, and where that was."""

    name: str
    device: str          # the GPU's name, or "no GPU (CPU model)"
    measured_at: str     # when its ceilings run started
    driver: str          # the NVIDIA driver and CUDA version it reports; "" without one
    libraries: Mapping[str, str]
    fingerprint: str     # the environment fingerprint of its ceilings run
    run_id: str
    ceilings: tuple[Ceiling, ...]
    format_version: int = FORMAT_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "libraries", MappingProxyType(dict(self.libraries)))

    @property
    def has_gpu(self) -> bool:
        return any(c.device != "cpu" for c in self.ceilings)

    def describe(self) -> str:
        """'NVIDIA H100 80GB HBM3, measured 2026-11-26 (driver 580.159.04 / CUDA 13.0,
        torch 2.11.0, run 20261126-…)'."""
        libs = ", ".join(f"{k} {v}" for k, v in sorted(self.libraries.items())
                         if k in ("torch", "cupy-cuda12x", "cupy-cuda13x", "jax"))
        facts = ", ".join(x for x in (f"driver {self.driver}" if self.driver else "", libs,
                                      f"run {self.run_id}") if x)
        return f"{self.device}, measured {self.measured_at[:10]} ({facts})"

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": self.format_version, "name": self.name,
                "device": self.device, "measured_at": self.measured_at,
                "driver": self.driver, "libraries": dict(self.libraries),
                "fingerprint": self.fingerprint, "run_id": self.run_id,
                "ceilings": [asdict(c) for c in self.ceilings]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str) -> Profile:
        """A profile from its JSON; UsageError naming `where` for anything else."""
        if not isinstance(d, Mapping) or d.get("format_version") != FORMAT_VERSION:
            version = d.get("format_version") if isinstance(d, Mapping) else None
            raise UsageError(f"{where} is not a gpuvs device profile of format "
                             f"{FORMAT_VERSION} (format_version {version!r}); "
                             "`gpuvs ceilings --save-profile NAME` writes one")
        names = {f.name for f in fields(Ceiling)}
        try:
            return cls(str(d["name"]), str(d["device"]), str(d["measured_at"]),
                       str(d.get("driver", "")), dict(d.get("libraries", {})),
                       str(d.get("fingerprint", "")), str(d.get("run_id", "")),
                       tuple(Ceiling(**{k: v for k, v in c.items() if k in names})
                             for c in d["ceilings"]))
        except (KeyError, TypeError, AttributeError) as err:
            raise UsageError(f"{where} is not a complete device profile: {err}") from None


@dataclass(frozen=True)
class Found:
    """A profile and where it was read: the place decides what is said about it."""

    profile: Profile
    where: str                   # "shipped with gpuvs", "yours", or "file"
    path: Traversable

    def origin(self) -> str:
        """Where the profile came from, for the line above a prediction."""
        place = (f"profile {self.profile.name!r} {SHIPPED}" if self.where == SHIPPED
                 else f"profile {self.profile.name!r} from {self.path}")
        return f"{place}: {self.profile.describe()}"

    def sibling(self, suffix: str) -> Traversable:
        """The file beside the profile with the same stem and `suffix`."""
        stem = self.path.name.removesuffix(SUFFIX)
        parent = self.path.parent if isinstance(self.path, Path) else _shipped()
        return parent / f"{stem}{suffix}"


def from_run(name: str, run: Run, ceilings: Sequence[Ceiling]) -> Profile:
    """The profile of a ceilings run: its ceilings and the machine they were read on."""
    check_name(name)
    if not ceilings:
        raise UsageError(f"ceilings run {run.run_id} has no finished ceiling to save "
                         f"as profile {name!r}")
    facts = run.environment.facts
    gpus = facts.get("gpus") or []
    device = (str(gpus[0].get("name")) if gpus else
              f"no GPU ({facts.get('cpu_model') or 'CPU'})")
    driver = " / CUDA ".join(str(facts[k]) for k in ("driver", "cuda_driver")
                             if facts.get(k))
    return Profile(name, device, run.started_at, driver, dict(facts.get("libraries", {})),
                   run.environment.fingerprint, run.run_id, tuple(ceilings))


def save_from_run(name: str, run: Run, store: Any) -> Path:
    """`gpuvs ceilings --save-profile NAME`: the ceilings run `run`, as profile NAME in
    the user's profile directory."""
    from gpuvs.analysis.ceilings import read
    return save(from_run(name, run, read(store.measurements(run.run_id))))


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise UsageError(f"profile name {name!r} is not accepted; use letters, digits, "
                         "'.', '_' or '-' (up to 64), e.g. h100")
    return name


def user_dir() -> Path | None:
    """$GPUVS_PROFILES, else `profiles` in the user data directory (beside the store);
    None where neither is known: gpuvs run from its source without platformdirs."""
    chosen = os.environ.get(ENV_VAR)
    if chosen:
        return Path(chosen).expanduser()
    try:
        from platformdirs import user_data_dir
    except ImportError:
        return None
    return Path(user_data_dir("gpuvs")) / "profiles"


def save(profile: Profile, directory: Path | None = None) -> Path:
    """Write `profile` as NAME.json in `directory` (the user's profile directory)."""
    directory = directory or user_dir()
    if directory is None:
        raise UsageError(f"no directory for your profiles: set {ENV_VAR} to one")
    path = directory / f"{check_name(profile.name)}{SUFFIX}"
    try:
        write_atomic(path, json.dumps(profile.to_dict(), indent=1) + "\n")
    except OSError as e:
        raise UsageError(f"cannot write profile {profile.name!r} to {path}: "
                         f"{e.strerror or e}; set {ENV_VAR} to a writable directory") from None
    return path


def load(spec: str) -> Found:
    """A profile by name (the user's first, then those shipped) or by file path."""
    if spec.endswith(SUFFIX) or os.sep in spec:
        path = Path(spec).expanduser()
        if not path.is_file():
            raise UsageError(f"no profile file {spec!r}; give a file that "
                             "`gpuvs ceilings --save-profile` wrote, or a name of "
                             "`gpuvs profiles`")
        return _read(path, "file")
    check_name(spec)
    for found in available():
        if found.profile.name == spec:
            return found
    names = ", ".join(sorted({f.profile.name for f in available()})) or "none yet"
    raise UsageError(f"no device profile {spec!r}; available: {names}. "
                     f"`gpuvs ceilings --save-profile {spec}` on that machine measures "
                     "one; `--profile FILE` reads one from a file")


def available() -> list[Found]:
    """Every profile this gpuvs can read by name: the user's, then those shipped (a
    user's profile of the same name comes first, and hides the shipped one)."""
    found: list[Found] = []
    mine = user_dir()
    if mine is not None and mine.is_dir():
        found += [_read(p, "yours") for p in sorted(mine.iterdir()) if _is_profile(p.name)]
    found += [_read(p, SHIPPED) for p in sorted(_shipped().iterdir(), key=lambda p: p.name)
              if _is_profile(p.name)]
    return found


def _is_profile(name: str) -> bool:
    return name.endswith(SUFFIX) and not name.endswith(RESIDUALS_SUFFIX)


def _shipped() -> Traversable:
    return files("gpuvs.predicting") / "profiles"


def _read(path: Traversable, where: str) -> Found:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot read profile {path}: {err}") from None
    return Found(Profile.from_dict(doc, str(path)), where, path)
