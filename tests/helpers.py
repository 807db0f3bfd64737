"""Small helpers the tests share."""

from __future__ import annotations

import re

_RUN = re.compile(r"\brun (\d{8}-\d{6}-[0-9a-f]{4})\b")


def run_id(output: str) -> str:
    """The id of the run a command started, from its output (a line before it, such as
    the busy-machine warning, does not matter)."""
    found = _RUN.search(output)
    assert found is not None, output
    return found.group(1)
