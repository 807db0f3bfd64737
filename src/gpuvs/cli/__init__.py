"""The `gpuvs` command line. Importing it registers every command on `app`; no command
module imports a framework at top level, so `gpuvs --help` stays instant."""

from gpuvs.cli import (  # noqa: F401  (registers the commands)
    ceilings,
    dist,
    history,
    predict,
    report,
    run,
    seeds,
    stored,
    yours,
)
from gpuvs.cli.app import app


def main() -> None:
    """The command; a deliberate gpuvs error raised outside a command's own handling (a
    bad GPUVS_PLUGINS read while the commands list themselves) is one line, exit 2."""
    import sys

    import typer

    from gpuvs.cli.app import usage_errors
    try:
        with usage_errors():
            app()
    except typer.Exit as e:
        sys.exit(e.exit_code)


__all__ = ["app", "main"]
