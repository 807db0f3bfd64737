"""RunConfig: what a run measures, from defaults + `[tool.gpuvs]` + flags, validated.

Validation turns every bad value into one `UsageError` that names the value and what
would be accepted, before any worker starts.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from gpuvs import backends, workloads
from gpuvs.errors import UsageError
from gpuvs.measuring import criteria
from gpuvs.workloads.base import ITEMSIZE

VARIANTS = ("as_written", "correct", "tuned")
# How an entry point names each setting in its errors: the command line's flags, or the
# Python API's keyword arguments (`gpuvs.measure(budget_s=…)`).
FLAGS = {"budget_s": "--budget", "timeout_s": "--timeout", "cpu_watts": "--cpu-watts"}
# The most processes a case may be sampled in: a launch-bound loop whose processes fall
# in two groups about 40 % apart needs a score of them before a 20 % change shows.
MAX_PASSES = 32
# How many processes each case's samples come from by default (its passes), on every
# machine: on the H100 VMs a launch-bound loop's speed is decided per process, in two
# groups, the slower holding about two processes in five; five processes all land in one
# group 9 % of the time, two processes 52 % (docs/accuracy.md, "Samples from many
# processes"). The 2-core CPU box showed the same (ten `x * 1.0001` on 10⁴ elements: about
# 41 µs a call in 4 of 12 fresh processes, 58–66 µs in 8), so a machine without a GPU
# samples in five too: with two, a rerun of unchanged code read 1.38× slower.
PASSES = 5


# The longest a case may sample (--budget) or run (--timeout): a week. Past it a number of
# seconds is a typo, and 1e10 once overflowed the deadline's timestamp and left the run
# `running` (OverflowError: timestamp out of range).
MAX_SECONDS = 7 * 24 * 3600
# Seed 003's --epochs: a real fit of CIFAR-100 takes minutes an epoch on a CPU.
MAX_EPOCHS = 1000
# The largest size accepted: far past any memory, and still exact as a float and as the
# store's 64-bit integer.
SIZE_MAX = 10**15
# The most sizes one START:STOP:FACTOR range makes: 1:1e15 doubling is 50, and a factor
# of 1.001 (13,817 sizes over 1:1e6) is a typo, not a plan.
MAX_RANGE_SIZES = 200
KEYWORDS = {"budget_s": "budget_s", "timeout_s": "timeout_s", "cpu_watts": "cpu_watts"}
# What a price may be given for (`--price cpu=0.40,gpu=2.50,kwh=0.30`): an hour of the CPU
# machine, an hour of the GPU machine, a kilowatt-hour. There are no defaults: a made-up
# price would be a wrong answer.
PRICED = ("cpu", "gpu", "kwh")
PRICE_EXAMPLE = "e.g. --price cpu=0.40,gpu=2.50 (an hour of each) or kwh=0.30"


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides which cases run and how long each may take."""

    workloads: tuple[str, ...] = ()     # () = the first-answer suite, or with full_suite
    full_suite: bool = False            #      every workload of the default suite, whole
    variants: tuple[str, ...] = ()      # () = each workload's own variants
    backends: tuple[str, ...] = ()      # () = every registered backend
    devices: tuple[str, ...] = ("cpu", "cuda")
    dtypes: tuple[str, ...] = ()        # () = each workload's default dtypes
    sizes: tuple[int, ...] = ()         # () = each workload's default sizes
    # Sampling seconds a case, shared over its processes. Between-process spread sets a
    # case's interval wherever the host sets its pace: on two pairs of H100 default runs
    # 0.4 s held the other run's figure as often as 1 s did (89 %, 95 % both ways) in
    # three fifths of the time (docs/accuracy.md).
    budget_s: float = 0.4
    timeout_s: float = 300.0
    criterion: str = "median-ci"
    cold: bool = False                  # flush caches before every timed call
    # each case sampled in this many processes, in turns (the plan again in fresh workers)
    passes: int = PASSES
    axes: tuple[str, ...] = ()          # NAME=VALUE: only cases whose parameter has it
    energy: bool = False                # sample each case long enough for an energy figure
    cpu_watts: float | None = None      # a CPU power the user declares (never measured)
    prices: tuple[tuple[str, float], ...] = ()  # (cpu|gpu|kwh, price): cost per call

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def validate(self, names: Mapping[str, str] = FLAGS) -> RunConfig:
        """This config, or a `UsageError` naming the bad value (as `names` spells the
        setting: a flag, or a keyword) and what would be accepted. Every entry point
        validates through here: the commands, `gpuvs.measure`, `gpuvs.compare`, the
        magic and the pytest fixture."""
        for name in self.workloads:
            workloads.get(name)
        for name in self.backends:
            backends.get(name)
        _check_known("variant", self.variants, VARIANTS)
        _check_known("dtype", self.dtypes, tuple(ITEMSIZE))
        check_devices(self.devices)
        for name in self.backends:  # a dtype the user named on a backend the user named
            backend = backends.get(name)
            for dtype in self.dtypes:
                if dtype not in backend.dtypes:
                    raise UsageError(f"{name} has no {dtype}; it supports "
                                     f"{', '.join(backend.dtypes)}")
        for key in ("budget_s", "timeout_s"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool)
                    and math.isfinite(value) and 0 < value <= MAX_SECONDS):
                raise UsageError(f"{names[key]} must be a positive number of seconds up to "
                                 f"{MAX_SECONDS:,} (a week); got {value!r}")
        self._check_values()
        self._check_watts(names)
        if not (isinstance(self.passes, int) and not isinstance(self.passes, bool)
                and 1 <= self.passes <= MAX_PASSES):
            raise UsageError(f"--passes must be a whole number from 1 to {MAX_PASSES}; got "
                             f"{self.passes!r}")
        return self


    def _check_values(self) -> None:
        """Sizes, flags and specs that arrive from Python or TOML as any type."""
        for size in self.sizes:
            if not (isinstance(size, int) and not isinstance(size, bool)
                    and 1 <= size <= SIZE_MAX):
                raise UsageError(f"size {size!r} is not a positive integer up to 1e15; e.g. "
                                 "4096, 1e6, 1e3:1e7 or 64:4096:2")
        if not isinstance(self.cold, bool):
            raise UsageError(f"cold must be true or false; got {self.cold!r}")
        if not isinstance(self.criterion, str):
            raise UsageError(f"criterion must be a string such as 'median-ci:rel=0.01'; got "
                             f"{self.criterion!r}")
        criteria.parse(self.criterion)
        parse_axes(self.axes)
        if not isinstance(self.energy, bool):
            raise UsageError(f"energy must be true or false; got {self.energy!r}")
        check_prices(self.prices)

    def _check_watts(self, names: Mapping[str, str]) -> None:
        w = self.cpu_watts
        if w is not None and not (isinstance(w, (int, float)) and not isinstance(w, bool)
                                  and math.isfinite(w) and w > 0):
            raise UsageError(f"{names.get('cpu_watts', '--cpu-watts')} must be a positive "
                             f"number of watts, e.g. 150; got {w!r}")


def check_devices(devices: Sequence[str] | str) -> tuple[str, ...]:
    """`cpu`, `cuda`, `cuda:N`, each once; a comma-separated string is a list too."""
    given = devices.split(",") if isinstance(devices, str) else list(devices)
    names = tuple(backends.check_device(d.strip() if isinstance(d, str) else d)
                  for d in given)
    if not names:
        raise UsageError("no device to run on; accepted: cpu, cuda, cuda:N")
    if len(set(names)) != len(names):
        raise UsageError(f"device listed twice in {', '.join(names)}; name each once")
    return names


def _check_known(kind: str, given: Sequence[str], known: Sequence[str]) -> None:
    for value in given:
        if value not in known:
            raise UsageError(f"unknown {kind} {value!r}; known: {', '.join(known)}")


def parse_sizes(specs: Sequence[str]) -> tuple[int, ...]:
    """`['1e3:1e6']` → 1000, 10000, 100000, 1000000; `['64:1024:2']` doubles; `['5,7']`."""
    out: list[int] = []
    for spec in specs:
        for part in filter(None, (p.strip() for p in spec.split(","))):
            if ":" in part:
                out.extend(_size_range(part))
            else:
                out.append(_positive_int(part))
    return tuple(sorted(set(out)))


def _size_range(spec: str) -> list[int]:
    bits = spec.split(":")
    if len(bits) not in (2, 3):
        raise UsageError(f"size range {spec!r} must be START:STOP or START:STOP:FACTOR")
    start, stop = _positive_int(bits[0]), _positive_int(bits[1])
    factor = 10.0 if len(bits) == 2 else float(bits[2]) if _is_number(bits[2]) else math.nan
    if not (math.isfinite(factor) and factor > 1):
        raise UsageError(f"size range factor {bits[-1]!r} must be a number above 1 and "
                         "finite, e.g. 2 or 10")
    if stop < start:
        raise UsageError(f"size range {spec!r} ends before it starts")
    steps = math.floor(math.log(stop / start) / math.log(factor) + 1e-9) + 1
    if steps > MAX_RANGE_SIZES:
        raise UsageError(f"size range {spec!r} makes {steps:,} sizes; a range makes at most "
                         f"{MAX_RANGE_SIZES}: use a larger factor, e.g. {start}:{stop}:2")
    sizes, s = [], float(start)
    while s <= stop * (1 + 1e-9):
        sizes.append(round(s))
        s *= factor
    return sizes


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _positive_int(text: str) -> int:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 1 <= value <= SIZE_MAX and value == int(value)):
        raise UsageError(f"size {text!r} is not a positive integer up to 1e15; e.g. 4096, "
                         "1e6, 1e3:1e7 or 64:4096:2")
    return int(value)


def check_tolerance(value: float | None, name: str = "--tolerance") -> float | None:
    """A relative tolerance between devices' outputs: None (the dtype's own) or a finite
    number from 0 (0: identical outputs)."""
    if value is not None and not (isinstance(value, (int, float)) and not isinstance(
            value, bool) and math.isfinite(value) and value >= 0):
        raise UsageError(f"{name} must be a finite number from 0, e.g. 1e-3; got {value!r}")
    return value


def parse_axes(specs: Sequence[str]) -> dict[str, str]:
    """`['shape=square', 'data=resident']` → {'shape': 'square', 'data': 'resident'}: the
    parameter values a run keeps (`--axis`); a case without the parameter reads it as
    its workload's default (`data=resident` for data left on the device)."""
    out: dict[str, str] = {}
    for spec in specs:
        name, eq, value = (spec.partition("=") if isinstance(spec, str) else ("", "", ""))
        if not (eq and name.strip() and value.strip()):
            raise UsageError(f"axis {spec!r} must be NAME=VALUE, e.g. shape=square or "
                             "data=resident")
        out[name.strip()] = value.strip()
    return out


def parse_prices(specs: Sequence[str]) -> tuple[tuple[str, float], ...]:
    """`['cpu=0.40,gpu=2.50', 'kwh=0.3']` → (('cpu', 0.4), ('gpu', 2.5), ('kwh', 0.3))."""
    out: dict[str, float] = {}
    for spec in specs:
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, eq, value = part.partition("=")
            if not (eq and _is_number(value)):
                raise UsageError(f"price {part!r} must be NAME=NUMBER with NAME one of "
                                 f"{', '.join(PRICED)}; {PRICE_EXAMPLE}")
            out[name.strip()] = float(value)
    return check_prices(tuple(out.items()))


def check_prices(prices: Sequence[Sequence[Any]]) -> tuple[tuple[str, float], ...]:
    """Prices as (name, positive number) pairs, each name one of PRICED, once."""
    out: dict[str, float] = {}
    for pair in prices:
        name, value = (pair if isinstance(pair, (tuple, list)) and len(pair) == 2
                       else ("", None))
        if name not in PRICED:
            raise UsageError(f"unknown price {name or pair!r}; known: {', '.join(PRICED)}; "
                             f"{PRICE_EXAMPLE}")
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)
                and math.isfinite(value) and value > 0):
            raise UsageError(f"price {name}={value!r} must be a positive number; "
                             f"{PRICE_EXAMPLE}")
        if name in out:
            raise UsageError(f"price {name} given twice; give each once")
        out[name] = float(value)
    return tuple(out.items())


def project_pyproject(start: Path | None = None) -> Path | None:
    """The project's pyproject.toml that holds a `[tool.gpuvs]` table: the nearest one in
    `start` (the current directory) or a directory above it, as pytest finds its own
    settings, so that a command run from `tests/` or `src/pkg/` reads the project's. The
    search stops at the repository's root (a directory with `.git`): a pyproject.toml
    above it belongs to another project."""
    here = (start or Path.cwd()).absolute()
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and "gpuvs" in _toml(candidate).get("tool", {}):
            return candidate
        if (directory / ".git").exists():
            break
    return None


def _toml(path: Path) -> dict[str, Any]:
    """A TOML file's contents; one line naming the file when it cannot be read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{_shown(path)} is not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{_shown(path)} is not valid TOML: byte {e.start} is not UTF-8, "
                         "which TOML files must be") from None
    except RecursionError:
        raise UsageError(f"{_shown(path)} is not TOML gpuvs reads: its arrays or tables are "
                         "nested too deeply") from None
    except OSError as e:
        raise UsageError(f"cannot read {_shown(path)}: {e.strerror or e}") from None


def _shown(path: Path) -> Path:
    """A file in the current directory by its name, as the user sees it; others whole."""
    return Path(path.name) if path.absolute().parent == Path.cwd() else path


def from_pyproject(path: Path) -> dict[str, Any]:
    """The `[tool.gpuvs]` table of the user's pyproject.toml, or {}."""
    if not path.is_file():
        return {}
    table = _toml(path).get("tool", {}).get("gpuvs", {})
    shown = _shown(path)
    if not isinstance(table, dict):
        raise UsageError(f"[tool.gpuvs] in {shown} must be a table of settings")
    kinds = {f.name: f.type for f in fields(RunConfig)}
    unknown = sorted(set(table) - set(kinds))
    if unknown:
        raise UsageError(f"unknown key {unknown[0]!r} in [tool.gpuvs] of {shown}; "
                         f"known: {', '.join(sorted(kinds))}")
    return {k: _prices_table(v, shown) if k == "prices" else _typed(k, v, str(kinds[k]), shown)
            for k, v in table.items()}


def _prices_table(value: Any, path: Path) -> tuple[tuple[str, float], ...]:
    """`[tool.gpuvs.prices]`: a table such as `cpu = 0.40`, `gpu = 2.50`, `kwh = 0.30`."""
    if not isinstance(value, dict):
        _bad(f"prices in [tool.gpuvs] of {path}", value,
             "a table, e.g. [tool.gpuvs.prices] with cpu = 0.40 and gpu = 2.50")
    try:
        return check_prices(tuple(value.items()))
    except UsageError as e:
        raise UsageError(f"[tool.gpuvs.prices] of {path}: {e}") from None


# A value each list setting of `[tool.gpuvs]` could hold, for its error messages.
LIST_EXAMPLES = {"sizes": "[1000, 4096]", "backends": '["numpy", "torch"]',
                 "devices": '["cpu", "cuda"]', "workloads": '["matmul"]',
                 "dtypes": '["float32"]', "variants": '["correct"]',
                 "axes": '["shape=square"]'}


def _typed(key: str, value: Any, kind: str, path: Path) -> Any:
    """A `[tool.gpuvs]` value checked against its setting's type, in one line if not."""
    where = f"{key} in [tool.gpuvs] of {path}"
    if kind.startswith("tuple"):
        item = "int" if "int" in kind else "str"
        example = LIST_EXAMPLES.get(key, '["numpy", "torch"]')
        if not isinstance(value, list):
            raise UsageError(f"{where} must be a list, e.g. {key} = {example}; got {value!r}")
        if not value:  # read as "not given", `sizes = []` silently ran the default sizes
            raise UsageError(f"{where} is empty; list at least one, e.g. {key} = {example}, "
                             "or leave the key out for gpuvs's default")
        if item == "int":
            return parse_sizes([str(v) for v in value]) if all(
                isinstance(v, int) and not isinstance(v, bool) for v in value) else _bad(
                    where, value, "a list of whole numbers")
        if not all(isinstance(v, str) for v in value):
            _bad(where, value, "a list of strings")
        return tuple(value)
    if kind == "bool" and not isinstance(value, bool):
        _bad(where, value, "true or false")
    if kind == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        _bad(where, value, "a number")
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        _bad(where, value, "a whole number")
    if kind == "str" and not isinstance(value, str):
        _bad(where, value, "a string")
    return value


def _bad(where: str, value: Any, accepted: str) -> Any:
    raise UsageError(f"{where} must be {accepted}; got {value!r}")


def build(flags: Mapping[str, Any], pyproject: Path | None = None,
          defaults: Mapping[str, Any] | None = None,
          names: Mapping[str, str] = FLAGS) -> RunConfig:
    """The one path every command and face takes to its settings: RunConfig's defaults,
    overridden by the entry point's own (`defaults`: a seeds run's shorter budget), by
    `[tool.gpuvs]` (of `pyproject`, else the project's: `project_pyproject`), then by
    what was given (None is "not given"; a 0 is given, and refused where it is no
    setting), validated with each setting named as the entry point spells it (`names`:
    the command line's flags, or the Python API's keywords)."""
    given = {k: v for k, v in flags.items() if v is not None and v != ()}
    found = pyproject if pyproject is not None else project_pyproject()
    table = from_pyproject(found) if found is not None else {}
    return RunConfig(**(dict(defaults or {}) | table | given)).validate(names)


def positive(name: str, value: float, most: float | None = None) -> None:
    """A count or a number of seconds that must be above zero (and at most `most`): every
    setting outside a `RunConfig` (dist's samples, steps and timeouts) is checked here, so
    that a bad value reads the same whichever command it was given to."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0
            and (most is None or value <= most)):
        raise UsageError(f"{name} must be above 0{_up_to(most)}; got {value:g}")


def not_negative(name: str, value: float, most: float | None = None) -> None:
    """A count or seconds that may be zero (a budget of 0: exactly the samples asked for;
    seeds' --epochs 0: no fit), and at most `most`."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0
            and (most is None or value <= most)):
        raise UsageError(f"{name} must be 0 or more{_up_to(most)}; got {value:g}")


def _up_to(most: float | None) -> str:
    return "" if most is None else f", up to {most:,g}"
