"""`python -m gpuvs` is the `gpuvs` command."""

from gpuvs.cli import main

main()
