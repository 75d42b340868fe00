"""Fixtures of the driver tests. The pytest-warm tests run `gates` and `mutate` on the
repository the mutations tests build (mutate_helpers, a unique module name)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "mutations"))

from mutate_helpers import make_repo  # noqa: E402


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed repository: package `calc`, gates add/sub/clamp/compiles, no mutations yet."""
    return make_repo(tmp_path, monkeypatch)
