"""Adversarial round 3 of issue 33 on `rests.rests_on`/`holds` (the read set,
`redfirst.gates.read_hook`): a test may look at a path without opening it or calling `os.stat`
on it by name: a link's target (`os.readlink`), a path relative to an open folder (`dir_fd`),
`posix.stat` (os.stat by another name), a file libc reads through ctypes (unseen: the read set
is then not whole, and the whole tree stands for it).
What it looked at is read, and a cached result rests on it as on a file opened."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write

# Each test reads a number n from the tree without opening it by its name: the mutation
# (a + b -> a * b) survives while n is 2 and is killed once n is 3.
LOOKS = {
    "readlink": ("    n = len(os.readlink('data.lnk'))\n", lambda repo, n: _link(repo, "x" * n)),
    "open-dir-fd": ("    d = os.open('data', os.O_RDONLY)\n"
                    "    n = len(os.read(os.open('n.txt', os.O_RDONLY, dir_fd=d), 9).strip())\n",
                    lambda repo, n: _data(repo, "x" * n)),
    "stat-dir-fd": ("    d = os.open('data', os.O_RDONLY)\n    n = os.stat('n.txt', dir_fd=d).st_size\n",
                    lambda repo, n: _data(repo, "x" * n)),
    "scandir-fd": ("    d = os.open('data', os.O_RDONLY)\n    n = sum(e.stat().st_size for e in os.scandir(d))\n",
                   lambda repo, n: _data(repo, "x" * n)),
    "posix-stat": ("    import posix\n    n = posix.stat('data/n.txt').st_size\n", lambda repo, n: _data(repo, "x" * n)),
    "libc-read": ("    import ctypes\n    libc = ctypes.CDLL(None)\n    fd = libc.open(b'data/n.txt', os.O_RDONLY)\n"
                  "    buf = ctypes.create_string_buffer(9)\n    libc.read(fd, buf, 9)\n    libc.close(fd)\n"
                  "    n = len(buf.value.strip())\n", lambda repo, n: _data(repo, "x" * n)),
}


def _link(repo: Path, target: str) -> None:
    (repo / "data.lnk").unlink(missing_ok=True)
    os.symlink(target, repo / "data.lnk")


def _data(repo: Path, text: str) -> None:
    (repo / "data").mkdir(exist_ok=True)
    (repo / "data" / "n.txt").write_text(text)


@pytest.mark.parametrize("look", sorted(LOOKS))
def test_a_path_the_tests_look_at_without_opening_it_changed_is_no_cache_hit(repo: Path, look: str):
    body, make = LOOKS[look]
    make(repo, 2)
    write(repo, "tests/test_add.py", "import os\n\nfrom calc import add\n\n\ndef test_add():\n"
                                     + body + "    assert add(2, n) == 2 + n\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a data file")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: 'return a + b'\n"
                                    "replace: 'return a * b'\nexpect: {red: [add]}\n")
    first = mutate(repo, "--json")
    assert json.loads(first.stdout)["items"][0]["verdict"] == "SURVIVED", first.stdout + first.stderr
    assert "(cached)" in mutate(repo, "--json").stderr       # nothing changed: the result is reused
    make(repo, 3)     # 2 * 3 is not 2 + 3: the mutation is killed now
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "n is 3")
    again = mutate(repo, "--json")
    (item,) = json.loads(again.stdout)["items"]
    assert item["verdict"] == "KILLED" and "(cached)" not in again.stderr, again.stderr
