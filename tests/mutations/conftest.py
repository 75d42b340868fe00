"""Fixtures of the mutations tests; helpers live in mutate_helpers (a unique module name,
so it cannot clash with another part's conftest under --import-mode=importlib)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from mutate_helpers import make_repo  # noqa: E402


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed repository: package `calc`, gates add/sub/clamp/compiles, no mutations yet."""
    return make_repo(tmp_path, monkeypatch)
