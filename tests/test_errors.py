"""An exception shown in one line: its message's first line, with or without its type."""

from __future__ import annotations

from gpuvs.errors import first_line, one_line


def test_the_first_line_of_a_message_or_the_type_when_there_is_none() -> None:
    e = RuntimeError("\n  CUDA error: out of memory\nCUDA kernel errors might be reported\n")
    assert first_line(e) == "CUDA error: out of memory"
    assert first_line(RuntimeError("  ")) == "RuntimeError"


def test_one_line_names_the_type_and_stays_short() -> None:
    assert one_line(KeyError("x")) == "KeyError: 'x'"
    assert one_line(ValueError()) == "ValueError"
    assert one_line(RuntimeError("t" * 2000 + "\nmore")) == "RuntimeError: " + "t" * 486
