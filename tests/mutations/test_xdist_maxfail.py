"""Adversarial round 3 of issue 33: pytest-xdist stops a run that reached `-x` (mutate's
maxfail) as interrupted, exit 2. That is a test failing as it ran, not a collection break: the
mutation is KILLED, not DISCARDED."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write


def test_an_xdist_run_stopped_at_maxfail_is_a_kill_not_a_collection_break(repo: Path, monkeypatch: pytest.MonkeyPatch):
    if importlib.util.find_spec("xdist") is None:
        message = "pytest-xdist is not installed"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-n 2")
    write(repo, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n"
                                     "    assert add(2, 3) == 5\n\n\ndef test_other():\n    pass\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two tests")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return a * b'\nexpect: {red: [add]}\n")
    (item,) = json.loads(mutate(repo, "--json").stdout)["items"]
    assert item["verdict"] == "KILLED", item
    # A collection error under xdist is still no kill.
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return a +'\nexpect: {red: [add]}\n")
    (item,) = json.loads(mutate(repo, "--json").stdout)["items"]
    assert item["verdict"] != "KILLED", item
