"""gpuvs: is the GPU faster than the CPU for this work, by how much, from what size on, and why?

The public API is loaded lazily so that `import gpuvs` (and `gpuvs --help`) stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuvs._version import __version__

__all__ = ["__version__", "Case", "Comparison", "Measurement", "Status", "Timer", "compare",
           "measure"]

if TYPE_CHECKING:
    from gpuvs.api import compare, measure
    from gpuvs.model import Case, Measurement, Status
    from gpuvs.yours.comparison import Comparison
    from gpuvs.yours.timer import Timer

_LAZY = {"measure": "gpuvs.api", "compare": "gpuvs.api", "Case": "gpuvs.model",
         "Measurement": "gpuvs.model", "Status": "gpuvs.model", "Timer": "gpuvs.yours.timer",
         "Comparison": "gpuvs.yours.comparison"}


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext gpuvs`: registers the `%gpuvs` / `%%gpuvs` magics (IPython is imported
    only now, never by `import gpuvs`)."""
    from gpuvs.yours.ipython import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gpuvs' has no attribute {name!r}")
