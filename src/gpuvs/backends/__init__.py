"""The backend registry. A backend is one file that registers itself with `@register`."""

from __future__ import annotations

from gpuvs.backends.base import Backend
from gpuvs.registry import Registry

REGISTRY: Registry[Backend] = Registry(
    "backend",
    ("gpuvs.backends.numpy_", "gpuvs.backends.torch_", "gpuvs.backends.cupy_",
     "gpuvs.backends.jax_"),
)
register = REGISTRY.register
get = REGISTRY.get
names = REGISTRY.names

__all__ = ["Backend", "REGISTRY", "get", "names", "register"]
