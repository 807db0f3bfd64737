"""gpuvs: is the GPU faster than the CPU for this work, by how much, from what size on, and why?

The public API is loaded lazily so that `import gpuvs` (and `gpuvs --help`) stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Case", "Measurement", "Status", "measure"]

if TYPE_CHECKING:
    from gpuvs.api import measure
    from gpuvs.model import Case, Measurement, Status

_LAZY = {"measure": "gpuvs.api", "Case": "gpuvs.model", "Measurement": "gpuvs.model",
         "Status": "gpuvs.model"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gpuvs' has no attribute {name!r}")
