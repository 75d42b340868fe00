"""What a verdict rests on (`rests_on`): the one account both mutate's result cache
(redfirst.mutations.cache) and the proofs (redfirst.gates.proven) keep of what a result read, and
check (`holds`) before they trust it again.

It is every file the runs read, wherever it lies: under the root by content, mode and link target
(redfirst.gates.treekey), outside it by `treekey.fingerprint` (pytest's conftest.py and
configuration files above the root always among them, read or not: `treekey.surroundings`), and
the interpreter's installed packages (`installed`: the read set leaves them out). Where what the
runs read is not known, the whole tree and those files stand for it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import sysconfig
from collections.abc import Mapping
from typing import Any

from redfirst.gates.reads import ReadSet
from redfirst.gates.treekey import DERIVED, TreeState, fingerprint

# Variables of the shell or CI session, not of the test run: left out of `environment` (and
# PYTHONDONTWRITEBYTECODE, which `mutate` sets for its own runs and a user's shell does not).
SESSION_VARIABLES = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "TERM", "COLORTERM", "COLUMNS", "LINES", "DISPLAY",
                               "WINDOWID", "STY", "TMUX", "TMUX_PANE", "GPG_TTY", "LS_COLORS", "PS1",
                               "PROMPT_COMMAND", "HISTFILE", "HISTSIZE", "HISTFILESIZE", "HISTCONTROL",
                               "INVOCATION_ID", "JOURNAL_STREAM", "XDG_SESSION_ID", "GITHUB_RUN_ID",
                               "GITHUB_RUN_NUMBER", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB", "GITHUB_ACTION",
                               "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE",
                               "PYTEST_CURRENT_TEST", "PYTHONDONTWRITEBYTECODE"})
SESSION_PREFIXES = ("SSH_", "RUNNER_")


def environment(env: Mapping[str, str] | None = None) -> str:
    """The digest of the environment the gates inherit, but for the session's variables: a result
    decided under one (a PYTEST_ADDOPTS that deselects the killing test) rests on it."""
    env = os.environ if env is None else env
    h = hashlib.sha256()
    for name in sorted(env):
        if name not in SESSION_VARIABLES and not name.startswith(SESSION_PREFIXES):
            h.update(f"{name}={env[name]}".encode("utf-8", errors="surrogateescape") + b"\0")
    return h.hexdigest()


@functools.cache
def installed() -> str:
    """The digest of the interpreter (its version) and of every file of its installed packages
    (each site-packages folder of its prefix, or of the base interpreter, that is on its path) by
    path, size, modification time and mode, bytecode aside. The read set leaves those files out
    (`reads._not_the_trees`), so a result rests on them here: a caller may rely on an upgraded,
    added, removed or edited installed package changing it. Worked out once for the process (a
    `mutate` run or a `gates` command installs nothing as it runs)."""
    schemes = (sysconfig.get_paths(), sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix}))
    site_packages = {os.path.realpath(paths[k]) for paths in schemes for k in ("purelib", "platlib")}
    listed: list[str] = [sys.version]
    for folder in sorted({os.path.realpath(p) for p in sys.path if p} & site_packages):
        _listing(folder, listed)
    return hashlib.sha256("\n".join(listed).encode("utf-8", "surrogateescape")).hexdigest()


def _listing(folder: str, listed: list[str]) -> None:
    try:
        with os.scandir(folder) as found:
            entries = sorted(found, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in DERIVED:
                    _listing(entry.path, listed)
                continue
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        listed.append(f"{entry.path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_mode}")


def rests_on(tree: TreeState, reads: ReadSet | None, whole_tree: bool = False) -> dict[str, Any]:
    """What a result decided on `tree` by runs that read `reads` (None: not known) rests on:
    `{"tree": digest}` (`whole_tree`, or the reads are not known) or `{"reads": {path: content},
    "above": {...}}`, and `{"outside": {path: fingerprint}, "root": root}` for what the runs read
    outside the root. A caller may rely on: while `holds` says so, no file the runs read, nor any
    conftest.py or configuration file above the root, has changed content, mode or link target
    (the paths of the tree are the caller's to key: a file added under the root is not here);
    where the tree's reads are not known, the files known read outside it (`reads.outside`: a
    build's depfiles name them, `builds.outside_reads`) are kept all the same."""
    known = reads is not None and reads.unknown is None
    if reads is None or not known or whole_tree or any(
            rel in reads.written and rel not in tree.entries for rel in reads.paths):
        # Unknown; or a file git does not list was written by the run: its content before is not
        # known. The whole tree, and what git ignores under it (a run may have read that too).
        rests: dict[str, Any] = {"tree": tree.digest, "ignored": tree.ignored}
    else:
        rests = {}
    if reads is not None and known and (not rests or whole_tree):
        # What the runs read, by content, ignored files among them (a proof keeps it beside the tree).
        rests.update({"reads": {rel: tree.content(rel) for rel in sorted(reads.paths)}, "above": dict(tree.above)})
    rests["env"] = environment()
    rests["installed"] = installed()
    if reads is not None and reads.outside:     # known outside the root, even where the tree's reads are not
        rests["outside"] = {path: fingerprint(path) for path in sorted(reads.outside)}
        # Those paths are this checkout's surroundings: another checkout of the same tree (the
        # cache is the user's, not the checkout's) has its own.
        rests["root"] = str(tree.root)
    return rests


def holds(stored: Mapping[str, Any], tree: TreeState) -> bool:
    """Whether what `rests_on` gave then (`stored`) is as it is now on `tree`."""
    outside = stored.get("outside", {})
    if not isinstance(outside, dict) or (outside and stored.get("root") != str(tree.root)):
        return False
    if not all(fingerprint(path) == found for path, found in outside.items()):
        return False
    if "env" in stored and stored["env"] != environment():
        return False
    if "installed" in stored and stored["installed"] != installed():
        return False
    if "tree" in stored and (stored["tree"] != tree.digest or ("ignored" in stored and stored["ignored"] != tree.ignored)):
        return False
    if "reads" not in stored:
        return "tree" in stored
    read = stored.get("reads")
    return isinstance(read, dict) and stored.get("above") == dict(tree.above) and all(
        tree.content(rel) == content for rel, content in read.items())
