"""gpuvs: is the GPU faster than the CPU for this work, by how much, from what size on, and why?

The public API is loaded lazily so that `import gpuvs` (and `gpuvs --help`) stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpuvs._version import __version__

__all__ = ["__version__", "Case", "Comparison", "Measurement", "Status", "Timer", "compare",
           "measure", "predict"]

if TYPE_CHECKING:
    from gpuvs.api import compare, measure, predict
    from gpuvs.model import Case, Measurement, Status
    from gpuvs.yours.comparison import Comparison
    from gpuvs.yours.timer import Timer
def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext gpuvs`: registers the `%gpuvs` / `%%gpuvs` magics (IPython is imported
    only now, never by `import gpuvs`)."""
    from gpuvs.yours.ipython import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    """The public names, each imported on first use (plain imports, which the layer test
    reads like any other)."""
    if name in ("measure", "compare", "predict"):
        from gpuvs import api

        return getattr(api, name)
    if name in ("Case", "Measurement", "Status"):
        from gpuvs import model

        return getattr(model, name)
    if name == "Timer":
        from gpuvs.yours.timer import Timer

        return Timer
    if name == "Comparison":
        from gpuvs.yours.comparison import Comparison

        return Comparison
    raise AttributeError(f"module 'gpuvs' has no attribute {name!r}")
