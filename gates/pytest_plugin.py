"""pytest plugin of redfirst (entry point `pytest11: redfirst`).

Gives every test session the `gates_evidence` fixture. Kept import-light: it loads in
every pytest run of every project that has redfirst installed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gates import evidence


@pytest.fixture
def gates_evidence() -> Iterator[evidence.Recorder]:
    """A recorder for the running gate's evidence folder (inactive outside a gate)."""
    yield from evidence.gates_evidence_fixture()
