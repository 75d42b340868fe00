"""`worktree` (the default): a detached git worktree of the whole repository under the
user cache directory, holding HEAD plus the user's uncommitted edits; the gates run in
the same subfolder the root is in. Removed when the run ends, and by the next run if a
kill left it behind."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from redfirst import journal
from redfirst.mutations import git
from redfirst.mutations.paths import repo_cache
from redfirst.mutations.workspaces.base import WorkspaceError


class Worktree:
    parallel = True
    mirrors: tuple[Path, Path] | None       # (the worktree's top, the user's): Workspace.mirrors
    overlaid: list[str]                     # the user's uncommitted edits, relative to the top (_overlay)

    def __init__(self, root: Path, worker: int) -> None:
        try:
            self.top = git.toplevel(root)
            self.base = git.head(self.top)
        except git.GitError as e:
            raise WorkspaceError(str(e)) from None
        self.path = repo_cache(self.top, "worktrees") / f"{os.getpid()}-w{worker}"
        self.root = self.path / root.resolve().relative_to(self.top)
        self.mirrors = (self.path, self.top)
        self._journal = repo_cache(self.top, "journal") / f"{os.getpid()}-w{worker}"
        _remove(self.top, self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        git.git(self.top, "worktree", "add", "--detach", "--force", str(self.path), self.base)
        self._real = self.path.resolve()    # what a mutated file must lie under, resolved once
        self._overlay()

    def _overlay(self) -> None:
        # The untouched tree is what the user sees, uncommitted edits included.
        changed, deleted = git.dirty_paths(self.top)
        self.overlaid = [*changed, *deleted]     # relative to the top: the user's uncommitted edits
        for rel in changed:
            src, dst = self.top / rel, self.path / rel
            if src.is_symlink() or src.is_file():
                dst.parent.mkdir(parents=True, exist_ok=True)
                if dst.is_symlink() or dst.exists():
                    dst.unlink()
                shutil.copy2(src, dst, follow_symlinks=False)
        for rel in deleted:
            (self.path / rel).unlink(missing_ok=True)

    @contextmanager
    def mutated(self, rel_file: str, new_bytes: bytes, label: str) -> Iterator[None]:
        # A scratch tree: a killed run's worktree is removed whole (recover), so no journal entry.
        with journal.swapped(self.root / rel_file, new_bytes, self._journal, inside=self._real):
            yield

    def close(self) -> None:
        _remove(self.top, self.path)
        shutil.rmtree(self._journal, ignore_errors=True)


def _remove(top: Path, path: Path) -> None:
    git.git(top, "worktree", "remove", "--force", "--force", str(path), check=False)
    shutil.rmtree(path, ignore_errors=True)
    git.git(top, "worktree", "prune", check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(root: Path) -> list[str]:
    """Remove worktrees of runs that are no longer alive."""
    try:
        top = git.toplevel(root)
    except git.GitError:
        return []
    folder = repo_cache(top, "worktrees")
    listed = [line[len("worktree "):] for line in git.git(top, "worktree", "list", "--porcelain").splitlines()
              if line.startswith("worktree ")]
    candidates = {Path(p) for p in listed if Path(p).parent == folder}
    if folder.is_dir():
        candidates |= set(folder.iterdir())
    repaired = []
    for path in sorted(candidates):
        pid = path.name.split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            _remove(top, path)
            shutil.rmtree(repo_cache(top, "journal") / path.name, ignore_errors=True)
            repaired.append(f"removed the worktree {path} of a killed run")
    return repaired


def open_workspace(root: Path, worker: int) -> Worktree:
    return Worktree(root, worker)


# pytest's configuration files, and what makes one hold pytest's section (_pytest.config.findpaths).
_PYTEST_SECTIONS = {"pytest.ini": "", ".pytest.ini": "", "tox.ini": "[pytest]", "setup.cfg": "[tool:pytest]",
                    "pyproject.toml": "[tool.pytest"}


def _pytest_config(folder: Path) -> Path | None:
    for name, section in _PYTEST_SECTIONS.items():
        file = folder / name
        try:
            if file.is_file() and section in file.read_text(encoding="utf-8", errors="replace"):
                return file
        except OSError:
            continue
    return None


def outer_pytest_config(root: Path) -> Path | None:
    """A pytest configuration above the repository that pytest uses for the tree's tests (none
    inside it on the way from the root up): a worktree under the cache folder has none above it,
    so its gates would run with another configuration (and without the conftest.py files beside
    it) than on the user's tree. None where there is none, or `root` is in no repository."""
    try:
        top = git.toplevel(root).resolve()
    except git.GitError:
        return None
    here = root.resolve()
    for folder in (here, *here.parents):
        if folder != top and top not in folder.parents:
            break
        if _pytest_config(folder) is not None:
            return None
    return next((found for folder in top.parents if (found := _pytest_config(folder)) is not None), None)
