"""Adversarial round 2 of issue 33 on `rests.rests_on`/`holds`: a test may read a file's size,
mode or time without opening it (`os.path.getsize`, `os.access`): what it read is that file's
metadata, and a cached result rests on it as on a file opened."""

from __future__ import annotations

import json
from pathlib import Path

from mutate_helpers import git, mutate, write


def test_a_file_the_tests_only_stat_changed_is_no_cache_hit(repo: Path):
    (repo / "data.bin").write_bytes(b"xx")
    write(repo, "tests/test_add.py", "import os\n\nfrom calc import add\n\n\ndef test_add():\n"
                                     "    size = os.path.getsize('data.bin')\n    assert add(2, size) == 2 + size\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a data file")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return a * b'\nexpect: {red: [add]}\n")
    first = mutate(repo, "--json")
    assert json.loads(first.stdout)["items"][0]["verdict"] == "SURVIVED", first.stdout + first.stderr
    assert "(cached)" in mutate(repo, "--json").stderr       # nothing changed: the result is reused
    (repo / "data.bin").write_bytes(b"xyz")    # 2 * 3 is not 2 + 3: the mutation is killed now
    git(repo, "commit", "-q", "-am", "a longer data file")
    again = mutate(repo, "--json")
    (item,) = json.loads(again.stdout)["items"]
    assert item["verdict"] == "KILLED" and "(cached)" not in again.stderr, again.stderr


def test_a_file_the_tests_only_stat_through_scandir_changed_is_no_cache_hit(repo: Path):
    (repo / "data.bin").write_bytes(b"xx")
    write(repo, "tests/test_add.py", "import os\n\nfrom calc import add\n\n\ndef test_add():\n"
                                     "    size = sum(e.stat().st_size for e in os.scandir('.') if e.name == 'data.bin')\n    assert add(2, size) == 2 + size\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a data file")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return a * b'\nexpect: {red: [add]}\n")
    first = mutate(repo, "--json")
    assert json.loads(first.stdout)["items"][0]["verdict"] == "SURVIVED", first.stdout + first.stderr
    assert "(cached)" in mutate(repo, "--json").stderr       # nothing changed: the result is reused
    (repo / "data.bin").write_bytes(b"xyz")    # 2 * 3 is not 2 + 3: the mutation is killed now
    git(repo, "commit", "-q", "-am", "a longer data file")
    again = mutate(repo, "--json")
    (item,) = json.loads(again.stdout)["items"]
    assert item["verdict"] == "KILLED" and "(cached)" not in again.stderr, again.stderr
