"""A private profile directory for every test that saves or lists profiles."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuvs.predicting.profile import ENV_VAR


@pytest.fixture
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's profile directory, empty, for this test alone."""
    where = tmp_path / "profiles"
    monkeypatch.setenv(ENV_VAR, str(where))
    return where
