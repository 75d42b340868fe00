"""Shared helpers for the checker tests: real git repositories in tmp_path, the real CLI, and the
corpus lane (the real vllm.cpp record, only where REDFIRST_CORPUS names it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from redfirst.checkers.cli import main


def need(what: str) -> None:
    """A missing component fails under CI and skips elsewhere."""
    message = f"{what} is required for this test"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


ENV = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
    "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
}


class Repo:
    """A real git repository in a temporary folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str, input: str | None = None) -> str:
        """git's output as it printed it: bytes decoded, no newline translation (a CR stays a CR)."""
        env = {**os.environ, **ENV, "HOME": str(self.path.parent)}
        proc = subprocess.run(["git", *args], cwd=self.path, env=env, capture_output=True,
                              input=None if input is None else input.encode("utf-8", "surrogateescape"))
        if proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
        return proc.stdout.decode("utf-8", "surrogateescape")

    def write(self, rel: str, text: str) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def commit(self, message: str, files: dict[str, str] | None = None) -> str:
        for rel, text in (files or {}).items():
            self.write(rel, text)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    if shutil.which("git") is None:
        need("git")
    return Repo(tmp_path / "repo")


class Cli:
    """The real `checkers` entry point, run in process with its output captured."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys

    def __call__(self, *argv: str) -> tuple[int, str, str]:
        self._capsys.readouterr()
        rc = main(list(argv))
        out = self._capsys.readouterr()
        return rc, out.out, out.err

    def json(self, *argv: str) -> tuple[int, dict]:
        rc, out, _err = self(*argv, "--format", "json")
        return rc, json.loads(out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(capsys)


@pytest.fixture
def new_repo(tmp_path: Path):
    """A factory of further repositories (clones, replays)."""
    if shutil.which("git") is None:
        need("git")
    return lambda name: Repo(tmp_path / name)


@pytest.fixture
def corpus() -> Path:
    """The real vllm.cpp corpus, an extra lane: REDFIRST_CORPUS names the corpus folder (holding
    `vllm.cpp/`) or `vllm.cpp/` itself. Unset: the lane is skipped; set to a folder without the
    corpus: the test fails (a lane asked for and not run proves nothing)."""
    root = os.environ.get("REDFIRST_CORPUS")
    if not root:
        pytest.skip("corpus lane: REDFIRST_CORPUS is not set")
    for path in (Path(root) / "vllm.cpp", Path(root)):
        if (path / "snapshot-d85906ae").is_dir():
            return path.resolve()
    pytest.fail(f"REDFIRST_CORPUS={root}: no vllm.cpp corpus there ({root}/vllm.cpp/snapshot-d85906ae is missing)")
