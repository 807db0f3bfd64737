"""The `gpuvs` command line. Importing it registers every command on `app`; no command
module imports a framework at top level, so `gpuvs --help` stays instant."""

from gpuvs.cli import (  # noqa: F401  (registers the commands)
    ceilings,
    dist,
    history,
    report,
    run,
    seeds,
    stored,
    yours,
)
from gpuvs.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
