"""The five posts gpuvs grew from (docs/seeds.md), one file each."""

from __future__ import annotations

from gpuvs.registry import Registry
from gpuvs.seeds.base import Found, Pick, Ratio, Row, Seed

REGISTRY: Registry[Seed] = Registry("seed", ("gpuvs.seeds.seed000", "gpuvs.seeds.seed002",
                                              "gpuvs.seeds.seed001", "gpuvs.seeds.seed003",
                                              "gpuvs.seeds.seed004"))
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names

__all__ = ["REGISTRY", "Found", "Pick", "Ratio", "Row", "Seed", "get", "names", "register"]
