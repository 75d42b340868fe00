"""`.pre-commit-hooks.yaml` run through pre-commit itself, one hook per stage.

Installing a `language: python` hook makes pre-commit build this package in a fresh virtualenv,
which needs the network; so the hooks are copied into a `repo: local` config with
`language: system` (the installed `checkers` script). Ids, entries, stages and pass_filenames are
the ones shipped in .pre-commit-hooks.yaml."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

HOOKS = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"
POLICY = """checkers:
  append_only:
    - {path: index.md}
  commit_style:
    subject: "^(feat|fix|docs): "
    body: required
"""


@pytest.fixture
def hooked(repo, tmp_path):
    if shutil.which("pre-commit") is None or shutil.which("checkers") is None:
        pytest.fail("pre-commit and checkers are required") if os.environ.get("CI") else \
            pytest.skip("pre-commit and checkers are required")
    hooks = yaml.safe_load(HOOKS.read_text())
    assert {h["id"] for h in hooks} == {"checkers-commit-msg", "checkers-records", "checkers-range"}
    assert {s for h in hooks for s in h["stages"]} == {"commit-msg", "pre-commit", "pre-push"}
    local = [{**h, "language": "system"} for h in hooks]
    config = yaml.safe_dump({"repos": [{"repo": "local", "hooks": local}]})
    repo.commit("docs: seed\n\nthe seed\n", {"redfirst.yaml": POLICY, "index.md": "a\nb\n",
                                              ".pre-commit-config.yaml": config})
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "HOME": str(tmp_path)}

    def pre_commit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["pre-commit", "run", *args], cwd=repo.path, env=env, capture_output=True, text=True)

    return repo, pre_commit


def test_commit_msg_hook_through_pre_commit(hooked, tmp_path):
    repo, pre_commit = hooked
    msg = tmp_path / "MSG"
    msg.write_text("feat: good\n\nwhy it matters\n")
    ok = pre_commit("--hook-stage", "commit-msg", "--commit-msg-filename", str(msg), "checkers-commit-msg")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    msg.write_text("bad subject\n")
    bad = pre_commit("--hook-stage", "commit-msg", "--commit-msg-filename", str(msg), "checkers-commit-msg")
    assert bad.returncode != 0
    assert "subject-pattern" in bad.stdout and "body-required" in bad.stdout


def test_pre_commit_hook_judges_the_index_not_the_working_tree(hooked):
    repo, pre_commit = hooked
    repo.write("index.md", "a\nB!\n")  # unstaged edit of an old line: not what would be committed
    ok = pre_commit("--hook-stage", "pre-commit", "checkers-records")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    repo.git("add", "index.md")
    bad = pre_commit("--hook-stage", "pre-commit", "checkers-records")
    assert bad.returncode != 0 and "index.md:2: append-only" in bad.stdout


def test_pre_push_hook_judges_the_pushed_range(hooked):
    repo, pre_commit = hooked
    base = repo.git("rev-parse", "HEAD").strip()
    repo.commit("feat: rewrite\n\nedits an old line\n", {"index.md": "A\nb\n"})
    bad = pre_commit("--hook-stage", "pre-push", "--from-ref", base, "--to-ref", "HEAD", "checkers-range")
    assert bad.returncode != 0
    assert "index.md:1: append-only" in bad.stdout
