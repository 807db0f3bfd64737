"""The `gpuvs` command's root: the Typer app, the options of `gpuvs` itself, and how an
error reaches the user — one line and an exit code. Each family of commands is a module
of this package; what they share lives in `options` (flags and their parsing), `output`
(tables, files, exit codes) and `planning` (a plan and how long it takes).

Exit codes: 0 a run that finished (cases may still be skipped, unavailable, OOM or timed
out: those are results); 1 a run with a wrong result or a crashed case; 2 bad usage.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from gpuvs.errors import GpuvsError, Interrupted
from gpuvs.report.console import console

EXIT_FAILED_RUN, EXIT_USAGE = 1, 2
EXIT_INTERRUPTED = 130  # as a shell reports a command ended by Ctrl-C


class OneLineErrors(TyperGroup):
    """The `gpuvs` group, whose parser's own errors (a value that is not a number, an
    unknown option, a missing argument) print as one line, as gpuvs's errors do, instead
    of click's usage, hint and message on three: an error is one line in a terminal and
    in a CI log alike. A reader gone from a pipe (`gpuvs show | head -1`) is no error, in
    the help as in a command's output: click's answer to one, exit 1, fails a `pipefail`
    pipeline. Everything else is click's: help, exit codes, Ctrl-C."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _reader_may_go():  # the root's --help is printed as it is parsed
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _reader_may_go():  # a command, and its own --help
            return super().invoke(ctx)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        standalone = kwargs.get("standalone_mode", True)
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except _click_exception() as e:
            parsed: Any = e
            if type(e).__name__ == "NoArgsIsHelpError":  # `gpuvs` alone: the help
                parsed.show()
            else:
                print_error(_parser_message(e))
            if not standalone:
                raise
            sys.exit(parsed.exit_code)
        except typer.Abort:
            if not standalone:
                raise
            console(stderr=True).print("aborted", markup=False)
            sys.exit(EXIT_FAILED_RUN)
        if not standalone:
            return code
        sys.exit(code if isinstance(code, int) else 0)


@contextmanager
def _reader_may_go() -> Iterator[None]:
    """A closed pipe met outside the console (which handles its own: `console`), the end
    of the output: exit 0."""
    from gpuvs.report.console import reader_gone
    try:
        yield
    except BrokenPipeError:
        reader_gone(sys.stdout)
        raise typer.Exit(0) from None


def _click_exception() -> type[Exception]:
    """click's ClickException, which typer vendors from 0.28 on and re-exported before."""
    base: type[Exception] = next(c for c in typer.BadParameter.__mro__
                                 if c.__name__ == "ClickException")
    return base


def _parser_message(e: Any) -> str:
    """click's message, and where to read what the command accepts."""
    ctx = getattr(e, "ctx", None)
    # The root's name is how gpuvs was started ("python -m gpuvs" too): say `gpuvs`.
    path = ("gpuvs" + ctx.command_path.removeprefix(ctx.find_root().info_name or "")
            if ctx is not None else "")
    hint = f"; `{path} --help` lists what it accepts" if path else ""
    return f"{e.format_message().rstrip('.')}{hint}"


def print_error(message: str) -> None:
    """One red line on stderr: what every deliberate error of gpuvs looks like."""
    from rich.markup import escape

    console(stderr=True).print(f"[red]error:[/red] {escape(_joined(message))}",
                               soft_wrap=True)


app = typer.Typer(
    cls=OneLineErrors,
    help="Is the GPU faster than the CPU for this work, by how much, from what size on, "
         "and why? gpuvs runs the same workload on NumPy, PyTorch (CPU and CUDA), CuPy and "
         "JAX, times each case correctly (synchronised, device events, warm-up, CIs) in "
         "isolated workers, and saves every result as it finishes.",
    no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)


def _print_version(asked: bool) -> None:
    if asked:
        from gpuvs._version import __version__
        console().print(f"gpuvs {__version__}", markup=False, highlight=False)
        raise typer.Exit(0)


@app.callback()
def _options(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print gpuvs's version and exit.")] = False,
) -> None:
    """The options of `gpuvs` itself, before any command: `gpuvs --version` answers as
    every installed Python tool does, so a bug report can name the version it ran."""


@contextmanager
def usage_errors() -> Iterator[None]:
    """Every deliberate gpuvs error becomes one red line and exit code 2."""
    try:
        yield
    except Interrupted as e:
        console(stderr=True).print(f"interrupted: {e}", soft_wrap=True, markup=False,
                                   highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except GpuvsError as e:
        print_error(str(e))
        raise typer.Exit(EXIT_USAGE) from None


def _joined(text: str) -> str:
    """A message that a library wrote over several lines (tarfile, pickle), joined: an
    error is one line, in a terminal and in a CI log alike."""
    import re

    return "; ".join(re.sub(r"^\s*(- )?", "", part).rstrip()
                     for part in text.splitlines() if part.strip())
