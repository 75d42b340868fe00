"""Helpers of the mutations tests: a small git repository with a Python package, pytest-driven
built fresh for each test in tmp_path (real git, real pytest subprocesses)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

CALC = '''\
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
'''

TEST_ADD = '''\
from calc import add


def test_add():
    assert add(2, 3) == 5
'''

TEST_SUB = '''\
from calc import sub


def test_sub():
    assert sub(5, 3) == 2
'''

TEST_CLAMP = '''\
from calc import clamp


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5
'''


def require_git() -> None:
    if shutil.which("git") is None:
        message = "git is not installed"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def gate(gate_id: str, test: str, build: str | None = None) -> str:
    text = f"gate: {gate_id}\n"
    if build:
        text += f"build: {build}\n"
    return text + f"driver:\n  type: pytest\n  run: [{test}]\n  timeout: 60\n"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def make_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed repository: package `calc`, gates add/sub/clamp/compiles, no mutations yet."""
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    root.mkdir()
    write(root, "calc/__init__.py", CALC)
    write(root, "tests/test_add.py", TEST_ADD)
    write(root, "tests/test_sub.py", TEST_SUB)
    write(root, "tests/test_clamp.py", TEST_CLAMP)
    write(root, "gates/add.yaml", gate("add", "tests/test_add.py"))
    write(root, "gates/sub.yaml", gate("sub", "tests/test_sub.py"))
    write(root, "gates/clamp.yaml", gate("clamp", "tests/test_clamp.py"))
    write(root, "gates/compiles.yaml", gate("compiles", "tests/test_add.py",
                                             build="python -m py_compile calc/__init__.py"))
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    return root


def mutate(root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed `mutate` command as a user would."""
    return subprocess.run(["mutate", "--root", str(root), *args] if args[:1] not in (("check",), ("sweep",),
                          ("promote",)) else ["mutate", args[0], "--root", str(root), *args[1:]],
                          cwd=cwd or root, capture_output=True, text=True, env={**os.environ}, timeout=300)


def differential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], tests: str,
                 mutations: dict[str, tuple[str, str, str]], warm_extra: str = "",
                 said: list[str] | None = None, extra: str = "") -> dict[str, tuple[str, str]]:
    """Mutation name -> (outcome under `pytest`, outcome under `pytest-warm`); `said`: gets
    mutate's stderr; `extra`: more lines of both gates' `driver:` (`warm_extra`: the warm one's)."""
    said = said if said is not None else []
    require_git()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # The run's temporary files (the project's own, redfirst's warm sockets and caches) go in a folder
    # of the test's: nothing is left in the machine's /tmp, and the test sees what the run left there.
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    root = tmp_path / "repo"
    for rel, text in files.items():
        write(root, rel, text)
    for kind, driver in (("cold", "pytest"), ("warm", "pytest-warm")):
        more = extra + (warm_extra if kind == "warm" else "")
        write(root, f"gates/g_{kind}.yaml", f"gate: g_{kind}\ndriver:\n  type: {driver}\n  run: [{tests}]\n"
                                           f"  timeout: 120\n{more}")
        for name, (file, anchor, replace) in mutations.items():
            doc = {"mutation": f"{name}-{kind}", "file": file, "anchor": anchor, "replace": replace,
                   "expect": {"red": [f"g_{kind}"]}}
            write(root, f"mutations/{name}-{kind}.yaml", json.dumps(doc))
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "project")
    proc = mutate(root, "-n", "1", "--json", "--no-cache")
    said.append(proc.stderr)
    left = sorted(p.name for p in temp.iterdir() if p.name.startswith(("rf-warm-", "redfirst-")))
    assert left == [], f"mutate left its temporary folders behind: {left}"
    doc = json.loads(proc.stdout)
    got = {i["id"]: i["verdict"] for i in doc["items"]}
    return {name: (got[f"{name}-cold"], got[f"{name}-warm"]) for name in mutations}


# The variables a test's own runs must not see (tests/conftest.py `_not_under_github_actions` drops
# them for each test; a fixture of a wider scope drops them itself).
GITHUB_VARIABLES = ("GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ENV", "RUNNER_TEMP")


class Snapshot:
    """A folder (a repository, its cache) kept as it was after an expensive set-up, such as a first
    `mutate` run, and put back for each test at the very path it was made at: the cache keys a
    result by the checkout's path too (`rests_on` keeps the root where the runs read outside it),
    so a copy elsewhere would not be the same state. One per module and xdist worker; each test
    gets the state whole, whatever the test before it did to the folder."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self._kept = work.with_name(work.name + "-kept")

    def save(self) -> None:
        shutil.rmtree(self._kept, ignore_errors=True)
        shutil.copytree(self.work, self._kept, symlinks=True)

    def restore(self) -> Path:
        shutil.rmtree(self.work)
        shutil.copytree(self._kept, self.work, symlinks=True)
        return self.work


T = TypeVar("T")


def keep(tmp_path_factory: pytest.TempPathFactory, set_up: Callable[[Path, pytest.MonkeyPatch], T]
         ) -> tuple[Snapshot, T]:
    """Run `set_up(work, monkeypatch)` once, with the cache in work/cache (XDG_CACHE_HOME) and no
    GitHub variables, as a test would (typically: make a repository under `work` and run `mutate`
    on it), and keep `work` as it left it; with what `set_up` gave. For a fixture of module scope:
    `put_back` gives each test that state."""
    work = tmp_path_factory.mktemp("kept") / "work"
    work.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        for name in GITHUB_VARIABLES:
            mp.delenv(name, raising=False)
        mp.setenv("XDG_CACHE_HOME", str(work / "cache"))
        made = set_up(work, mp)
    kept = Snapshot(work)
    kept.save()
    return kept, made


def put_back(kept: Snapshot, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder `keep` kept, as it was, at its path, with its cache as the test's."""
    work = kept.restore()
    monkeypatch.setenv("XDG_CACHE_HOME", str(work / "cache"))
    return work
