"""The few git commands the workspaces need, each one process, with readable failures."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

# A scratch commit must not depend on the user's identity, hooks or signing setup.
SCRATCH_ENV = {
    "GIT_AUTHOR_NAME": "redfirst mutate", "GIT_AUTHOR_EMAIL": "mutate@redfirst.invalid",
    "GIT_COMMITTER_NAME": "redfirst mutate", "GIT_COMMITTER_EMAIL": "mutate@redfirst.invalid",
}


class GitError(Exception):
    pass


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    full_env = {**os.environ, **(env or {})}
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, env=full_env, check=False)
    except OSError as e:
        raise GitError(f"git could not start: {e}") from None
    if check and out.returncode != 0:
        raise GitError(f"git {' '.join(args)} (in {cwd}) failed: {out.stderr.decode(errors='replace').strip()}")
    return out.stdout.decode("utf-8", errors="surrogateescape")


def toplevel(path: Path) -> Path:
    try:
        return Path(git(path, "rev-parse", "--show-toplevel").strip()).resolve()
    except GitError:
        raise GitError(f"{path} is not inside a git repository (worktree and commit modes need one; "
                       "use mode: in-place)") from None


def head(top: Path) -> str:
    try:
        return git(top, "rev-parse", "--verify", "HEAD^{commit}").strip()
    except GitError:
        raise GitError(f"{top} has no commit yet: worktree and commit modes start from HEAD") from None


def resolve_commit(top: Path, rev: str, what: str) -> str:
    """The full sha of commit `rev`. `--verify` takes exactly one revision and `--end-of-options`
    keeps one that reads as an option (`--output=FILE`) from ever being one; GitError names it."""
    out = git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False).strip()
    if not out:
        raise GitError(f"{what} {rev!r} does not resolve to a commit in {top}")
    return out


def z_list(top: Path, command: str, *args: str) -> list[str]:
    return [p for p in git(top, command, "-z", *args).split("\0") if p]


def dirty_paths(top: Path) -> tuple[list[str], list[str]]:
    """(paths whose working file differs from HEAD or is untracked, to copy; paths in HEAD
    the working tree lacks, to remove), relative to `top`. Against HEAD, not the index:
    a staged edit or a staged new file is part of the tree the user sees."""
    differ = z_list(top, "diff", "--name-only", "--no-renames", "--no-ext-diff", "--ignore-submodules", "HEAD")
    deleted = set(z_list(top, "diff", "--name-only", "--no-renames", "--no-ext-diff", "--ignore-submodules",
                         "--diff-filter=D", "HEAD"))
    untracked = z_list(top, "ls-files", "--others", "--exclude-standard")
    changed = dict.fromkeys([*differ, *untracked])
    return [p for p in changed if p not in deleted], sorted(deleted)


def commit_paths(top: Path, message: str, paths: Sequence[str]) -> str:
    git(top, "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", "add", "--", *paths)
    git(top, "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify",
        "--allow-empty", "-m", message, "--", *paths, env=SCRATCH_ENV)
    return git(top, "rev-parse", "HEAD").strip()
