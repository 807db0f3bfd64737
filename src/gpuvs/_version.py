"""The version of gpuvs, in one place: the package, its metadata (pyproject.toml reads
it) and every stored run (`runs.gpuvs_version`) take it from here."""

__version__ = "0.1.0"
