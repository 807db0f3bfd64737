"""One registry shape for backends and workloads: decorator, duplicate check, `get`."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from typing import Generic, TypeVar

from gpuvs.errors import UsageError, one_line

T = TypeVar("T")
# Comma-separated modules that register extra backends or workloads, imported by every
# registry in the parent and in each worker alike.
PLUGINS_ENV = "GPUVS_PLUGINS"


class Registry(Generic[T]):
    """Plug-ins by name. `get('cpy')` raises a UsageError that lists the known names."""

    def __init__(self, kind: str, builtin_modules: Iterable[str] = ()) -> None:
        self.kind = kind
        self._builtin = tuple(builtin_modules)
        self._classes: dict[str, type[T]] = {}
        self._discovered = False

    def register(self, cls: type[T]) -> type[T]:
        name = cls.name  # type: ignore[attr-defined]
        if name in self._classes:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._classes[name] = cls
        return cls

    def discover(self) -> None:
        """Import the built-in plug-ins (cheap: they import no framework), then GPUVS_PLUGINS."""
        if not self._discovered:
            self._discovered = True
            plugins = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",")]
            for module in self._builtin:
                importlib.import_module(module)
            for module in filter(None, plugins):
                try:
                    importlib.import_module(module)
                except Exception as e:  # a user's module: say which, in one line
                    raise UsageError(
                        f"{PLUGINS_ENV} names {module!r}, which cannot be imported "
                        f"({one_line(e)}); set it to importable module names, "
                        "comma-separated") from None

    def names(self) -> tuple[str, ...]:
        self.discover()
        return tuple(sorted(self._classes))

    def get(self, name: str) -> T:
        self.discover()
        if name not in self._classes:
            raise UsageError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}")
        return self._classes[name]()

    def find(self, name: str) -> T | None:
        """The plug-in named `name`, or None: for readers of stored results, whose names
        may come from elsewhere (`yours:` functions, a plug-in not loaded here)."""
        self.discover()
        cls = self._classes.get(name)
        return cls() if cls is not None else None

    def all(self) -> list[T]:
        return [self.get(n) for n in self.names()]

