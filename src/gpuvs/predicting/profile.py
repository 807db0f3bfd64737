"""A device profile: one machine's measured ceilings, kept as a versioned JSON file.

`gpuvs ceilings --save-profile NAME` writes one from the machine's ceilings run, with
what a reader needs to judge it: the GPU, the driver, the library versions, the date and
the run it came from. A profile is only ever measured: the ones shipped with gpuvs
(`gpuvs/predicting/profiles/`, found through `importlib.resources`) came from
`gpuvs ceilings` on that GPU, and a user's own live in their profile directory
($GPUVS_PROFILES, else the user data directory) or in any file (`--profile FILE`).

A profile file is untrusted input: anyone may have written it, and a ceiling of 0, NaN,
a string or null once reached the model's divisions. `Profile.from_dict` checks every
field (its type; a ceiling's value finite and positive; text and lists of bounded
length) and `_read` the file (at most MAX_BYTES, nesting refused in one line), so that
each bad file costs one line. A bad file in the profile directory is skipped with one
warning, and the others, the shipped ones first, still load (`scan`).

A name means one profile: the shipped ones come first when a name is looked up, and a
name of theirs is refused when saving (`check_saving`), since `--target h100` promises
the profile measured on an H100 and validated there, with its residuals; a user's file
of that name (saved by an older gpuvs) is read only by its path, `--profile FILE`.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from importlib.resources import files
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from gpuvs.errors import UsageError
from gpuvs.model import Ceiling, OpCost, Run
from gpuvs.store.export import shorten
from gpuvs.store.output import write_atomic

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

# 2 added `op_classes` (each op class timed over sizes); a format 1 profile still loads
# and predicts as it did (the user's code by its total FLOPs, bytes and launches).
FORMAT_VERSION, READABLE = 2, (1, 2)
ENV_VAR = "GPUVS_PROFILES"
SUFFIX = ".json"
# Beside a profile, the residuals of its validation run (`gpuvs.predicting.residuals`).
RESIDUALS_SUFFIX = ".residuals.json"
SHIPPED = "shipped with gpuvs"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# Bounds on a file anyone may have written: the shipped H100 profile is 13 KB with 60
# ceilings.
MAX_BYTES = 1024 * 1024
MAX_ITEMS = 10_000  # ceilings, libraries
MAX_TEXT = 1_000    # characters of one text field


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
    op_classes: tuple[OpCost, ...] = ()  # each op class's cost per op over sizes
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
                "ceilings": [asdict(c) for c in self.ceilings]} | (
            {"op_classes": [asdict(c) for c in self.op_classes]}
            if self.format_version >= 2 else {})

    @classmethod
    def from_dict(cls, d: Any, where: str) -> Profile:
        """A profile from its JSON; UsageError naming `where` and the first field that
        is not what gpuvs writes there."""
        version = d.get("format_version") if isinstance(d, Mapping) else None
        if not isinstance(d, Mapping) or version not in READABLE or isinstance(version,
                                                                               bool):
            raise UsageError(f"{where} is not a gpuvs device profile of format "
                             f"{' or '.join(map(str, READABLE))} (format_version "
                             f"{shorten(repr(version))}); `gpuvs ceilings --save-profile "
                             "NAME` writes one")
        try:
            name = _text(d, "name")
            if not _NAME.match(name):
                raise ValueError(f"its name {shorten(repr(name))} is no profile name")
            libraries = d.get("libraries", {})
            if not isinstance(libraries, Mapping) or len(libraries) > MAX_ITEMS or not all(
                    isinstance(k, str) and isinstance(v, str) and len(v) <= MAX_TEXT
                    for k, v in libraries.items()):
                raise ValueError("'libraries' is not a mapping of names to versions")
            return cls(name, _text(d, "device"), _text(d, "measured_at"),
                       _text(d, "driver", ""), libraries, _text(d, "fingerprint", ""),
                       _text(d, "run_id", ""), _ceilings(d.get("ceilings")),
                       _op_costs(d.get("op_classes", [])) if version >= 2 else (),
                       int(version))
        except (KeyError, ValueError) as err:
            what = f"no {err.args[0]!r}" if isinstance(err, KeyError) else str(err)
            raise UsageError(f"{where} is not a device profile gpuvs can use: {what}"
                             ) from None


def _text(d: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = d[key] if default is None else d.get(key, default)
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise ValueError(f"{key!r} is {shorten(repr(value))}; it is text (up to "
                         f"{MAX_TEXT} characters)")
    return value


def _ceilings(found: Any) -> tuple[Ceiling, ...]:
    """Each ceiling of a profile as gpuvs writes them (at least one)."""
    return _entries(found, ("ceilings", "ceiling"), Ceiling, ("value",), least=1)


def _op_costs(found: Any) -> tuple[OpCost, ...]:  # each op class's measured points
    return _entries(found, ("op_classes", "op cost"), OpCost, ("amount", "seconds"))


def _entries(found: Any, names: tuple[str, str], kind: Any, numbers: tuple[str, ...],
             least: int = 0) -> tuple[Any, ...]:
    """A list of `kind` as gpuvs writes them: text fields, the `numbers` positive and
    finite (the model divides by them), an optional `contended` flag."""
    key, one = names
    if not isinstance(found, list) or not least <= len(found) <= MAX_ITEMS:
        raise ValueError(f"{key!r} is {shorten(repr(found))}; it is a list of {least} to "
                         f"{MAX_ITEMS} measured {one}s")
    texts = [f.name for f in fields(kind) if f.name not in (*numbers, "contended")]
    out = []
    for i, c in enumerate(found, 1):
        if not isinstance(c, Mapping):
            raise ValueError(f"{one} {i} is {shorten(repr(c))}, not an object")
        label = f"{one} {i} ({shorten(repr(c.get(texts[0])), 40)})"
        for name in numbers:
            value = c.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and value > 0):
                raise ValueError(f"{label} has the {name} {shorten(repr(value))}; "
                                 f"{'an' if one[0] in 'aeiou' else 'a'} {one}'s {name} is "
                                 "a positive, finite number")
        contended = c.get("contended", False)
        if not isinstance(contended, bool):
            raise ValueError(f"{label} has contended {shorten(repr(contended))}; it is "
                             "true or false")
        try:
            out.append(kind(**{k: _text(c, k) for k in texts},
                            **{k: float(c[k]) for k in numbers}, contended=contended))
        except ValueError as err:
            raise ValueError(f"{label}: {err}") from None
    return tuple(out)


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


@dataclass(frozen=True)
class Catalog:
    """The profiles that can be named, shipped ones first, and a line for each file of
    the user's profile directory that was skipped (unreadable, or named as a shipped
    profile), which the faces show as warnings."""

    found: tuple[Found, ...]
    skipped: tuple[str, ...] = ()


def from_run(name: str, run: Run, ceilings: Sequence[Ceiling],
             op_classes: Sequence[OpCost] = ()) -> Profile:
    """The profile of a ceilings run: its ceilings, its op classes' costs, and the
    machine they were read on."""
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
                   run.environment.fingerprint, run.run_id, tuple(ceilings),
                   tuple(op_classes))


def save_from_run(name: str, run: Run, store: Any) -> Path:
    """`gpuvs ceilings --save-profile NAME`: the ceilings run `run`, as profile NAME in
    the user's profile directory."""
    from gpuvs.analysis.ceilings import op_costs, read
    measured = store.measurements(run.run_id)
    return save(from_run(name, run, read(measured), op_costs(measured)))


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise UsageError(f"profile name {shorten(repr(name))} is not accepted; use letters, "
                         "digits, '.', '_' or '-' (up to 64), e.g. h100")
    return name


def check_saving(name: str) -> str:
    """A name a profile may be saved under: a valid one, and not a shipped profile's."""
    check_name(name)
    shipped = next((f for f in _shipped_profiles()[0] if f.profile.name == name), None)
    if shipped is not None:
        raise UsageError(f"profile name {name!r} is the profile {SHIPPED} "
                         f"({shipped.profile.device}), which `--target {name}` means; save "
                         f"yours under another name, e.g. {name}-mine")
    return name


def unusable(profile: Profile) -> str:
    """Why `gpuvs predict` can predict no GPU case from `profile`, or "" where it can:
    it was measured on a GPU and holds that GPU's memory bandwidth. Checked when a
    profile is saved and when it is read for a prediction, in the same words."""
    if not profile.has_gpu:
        return (f"profile {profile.name!r} was measured on a machine without a GPU "
                f"({profile.device}): it predicts no GPU")
    if not any(c.device != "cpu" and c.name.startswith("memory bandwidth")
               for c in profile.ceilings):
        return (f"profile {profile.name!r} holds no GPU memory bandwidth: it predicts no "
                f"GPU case; `gpuvs ceilings --refresh --save-profile {profile.name}` on "
                f"{profile.device} measures it")
    return ""


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
    """Write `profile` as NAME.json in `directory` (the user's profile directory), if
    `gpuvs predict` could use it: refused here, at once, rather than later by predict."""
    directory = directory or user_dir()
    if directory is None:
        raise UsageError(f"no directory for your profiles: set {ENV_VAR} to one")
    path = directory / f"{check_saving(profile.name)}{SUFFIX}"
    if why := unusable(profile):
        raise UsageError(f"{why}; not saved")
    try:
        write_atomic(path, json.dumps(profile.to_dict(), indent=1) + "\n")
    except OSError as e:
        raise UsageError(f"cannot write profile {profile.name!r} to {path}: "
                         f"{e.strerror or e}; set {ENV_VAR} to a writable directory") from None
    return path


def load(spec: str) -> Found:
    """A profile by file path (a spec that ends in .json or holds a separator: the
    library's `target=`), else by name (`scan`'s warnings dropped: `named` keeps them)."""
    if spec.endswith(SUFFIX) or os.sep in spec:
        return load_file(Path(spec))
    return named(spec)[0]


def load_file(path: Path) -> Found:
    """The profile in the file at `path`, wherever it is: `--profile` always means a
    file, never a name."""
    path = path.expanduser()
    if not path.is_file():
        raise UsageError(f"no profile file {shorten(repr(str(path)))}; give a file that "
                         "`gpuvs ceilings --save-profile` wrote, or name one of "
                         "`gpuvs profiles` with --target")
    return _read(path, "file")


def named(name: str) -> tuple[Found, tuple[str, ...]]:
    """The profile called `name` (the shipped ones first), and the warnings of the scan."""
    check_name(name)
    catalog = scan()
    found = next((f for f in catalog.found if f.profile.name == name), None)
    if found is not None:
        return found, catalog.skipped
    names = ", ".join(sorted({f.profile.name for f in catalog.found})) or "none yet"
    raise UsageError(f"no device profile {name!r}; available: {names}. "
                     f"`gpuvs ceilings --save-profile {name}` on that machine measures "
                     "one; `--profile FILE` reads one from a file")


def available() -> list[Found]:
    """Every profile this gpuvs can read by name (`scan`'s, without its warnings)."""
    return list(scan().found)


def scan() -> Catalog:
    """The shipped profiles, then the user's: a file of theirs that cannot be read, or
    that is named as a shipped profile, is skipped with a line saying why."""
    found, skipped = _shipped_profiles()
    shipped = {f.profile.name for f in found}
    mine = user_dir()
    try:
        paths = sorted(p for p in mine.iterdir() if _is_profile(p.name)) if (
            mine is not None and mine.is_dir()) else []
    except OSError as e:
        paths = []
        skipped.append(f"skipped your profile directory {mine}: {e.strerror or e}")
    for path in paths:
        try:
            read = _read(path, "yours")
        except UsageError as e:
            skipped.append(f"skipped {e}")
            continue
        if read.profile.name in shipped:
            skipped.append(f"skipped {path}: it is named {read.profile.name!r}, as the "
                           f"profile {SHIPPED}, which --target {read.profile.name} means; "
                           f"read it with --profile {path}")
        else:
            found.append(read)
    return Catalog(tuple(found), tuple(skipped))


def _shipped_profiles() -> tuple[list[Found], list[str]]:
    """The profiles shipped with gpuvs (a broken one, say a bad install, is skipped)."""
    found, skipped = [], []
    for path in sorted(_shipped().iterdir(), key=lambda p: p.name):
        if _is_profile(path.name):
            try:
                found.append(_read(path, SHIPPED))
            except UsageError as e:
                skipped.append(f"skipped {e}")
    return found, skipped


def _is_profile(name: str) -> bool:
    return name.endswith(SUFFIX) and not name.endswith(RESIDUALS_SUFFIX)


def _shipped() -> Traversable:
    return files("gpuvs.predicting") / "profiles"


def _read(path: Traversable, where: str) -> Found:
    """A profile file, read within MAX_BYTES; one line for anything else."""
    doc = read_bounded(path, "profile")
    return Found(Profile.from_dict(doc, f"profile {path}"), where, path)


def read_bounded(path: Traversable, what: str) -> Any:
    """The JSON of a file gpuvs reads but did not necessarily write (a profile, its
    residuals): at most MAX_BYTES, nested no deeper than Python's parser allows; one line
    naming `what` and the file for anything else."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise UsageError(f"{what} {path} is larger than {MAX_BYTES // 1024} KiB: no "
                             f"{what} gpuvs writes is")
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise UsageError(f"{what} {path} nests arrays or objects too deeply: it is no "
                         f"{what} gpuvs writes") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot read {what} {path}: {shorten(str(err))}") from None
