"""What a gate run read under its root: the read set, kept in the run's record as
`reads.json` (sealed with the raw files; nothing is graded from it).

A run of a driver that reports (pytest, pytest-warm, python: redfirst.gates.read_hook in the
program) names the files it opened for reading and the modules it imported, and adds
the files the runner knows it read for it (the gate's test files and their conftest.py
files, its `values:` files). Installed packages are not the tree, even in a virtual
environment under the root. Anything else is UNKNOWN, with the reason: a driver that
cannot report (command, cuda-graph), a build command, a run on a leased box, a run that
started a process (what that process read is not seen), a run that wrote no report
(killed, timed out, a plugin turned off). A result keyed by an UNKNOWN read set keys
on the whole tree. Files read outside the root (a conftest.py or ini file above a sub-project's
root, a sibling package on the path) are kept apart (`outside`, absolute paths): the tree key does
not cover them, so a result rests on their content too; the interpreter's, the installed
packages' (a result rests on those as a whole: redfirst.gates.rests.installed), redfirst's own,
the system's (/dev, /proc, /sys) and temporary files are not kept.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from redfirst.gates.record import READS as FILE
from redfirst.gates.treekey import DERIVED
from redfirst.yamlsrc import YamlError, load_json, load_json_object

VERSION = 1


@dataclass(frozen=True)
class ReadSet:
    """Root-relative paths a run read, or UNKNOWN (`unknown` says why; `paths` then mean nothing)."""

    paths: frozenset[str] = frozenset()
    unknown: str | None = None
    written: frozenset[str] = frozenset()    # paths it opened for writing (what they held before is not known)
    outside: frozenset[str] = frozenset()    # absolute paths it read outside the root (what is not the tree)

    @classmethod
    def not_known(cls, why: str, outside: frozenset[str] = frozenset()) -> ReadSet:
        """Not known in the tree; `outside`: files known to be read outside the root all the same
        (what a build's depfiles name), which a result rests on beside the whole tree."""
        return cls(unknown=why, outside=outside)

    def union(self, other: ReadSet) -> ReadSet:
        if self.unknown is not None or other.unknown is not None:
            return ReadSet.not_known(self.unknown or other.unknown or "", self.outside | other.outside)
        return ReadSet(self.paths | other.paths, None, self.written | other.written, self.outside | other.outside)

    def to_json(self) -> dict[str, object]:
        if self.unknown is not None:     # what was read outside the root is kept all the same
            return {"version": VERSION, "unknown": self.unknown, **({"outside": sorted(self.outside)} if self.outside
                                                                     else {})}
        return {"version": VERSION, "paths": sorted(self.paths), "written": sorted(self.written),
                "outside": sorted(self.outside)}

    @classmethod
    def from_json(cls, data: object) -> ReadSet:
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return cls.not_known("the read set is not one this redfirst reads")
        paths, written, outside = data.get("paths"), data.get("written", []), data.get("outside", [])
        if isinstance(data.get("unknown"), str):
            if not isinstance(outside, list) or not all(isinstance(p, str) for p in outside):
                return cls.not_known("the read set is malformed")
            return cls.not_known(data["unknown"], frozenset(outside))
        if not isinstance(paths, list) or not isinstance(written, list) or not isinstance(outside, list) or not all(
                isinstance(p, str) for p in (*paths, *written, *outside)):
            return cls.not_known("the read set is malformed")
        return cls(frozenset(paths), None, frozenset(written), frozenset(outside))


def of_record(folder: Path) -> ReadSet:
    """The read set kept in a record folder; UNKNOWN for a record without one (made before them)."""
    data = load_json_object(folder / FILE)
    if data is None:
        return ReadSet.not_known(f"the record {folder.name[:12]} keeps no read set")
    return ReadSet.from_json(data)


def write(folder: Path, reads: ReadSet) -> None:
    (folder / FILE).write_text(json.dumps(reads.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")


_FOLDERS: dict[str, str] = {}


def _realpath(path: str, folders: dict[str, str]) -> str:
    """os.path.realpath(path), resolving each folder once (`folders`): a report names hundreds of
    files in a few dozen folders, and realpath walks every component of each."""
    folder, name = os.path.split(path)
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = os.path.realpath(folder)
    full = os.path.join(real, name)
    return os.path.realpath(full) if os.path.islink(full) else full


@functools.lru_cache(maxsize=1 << 16)
def _relative(path: str, roots: tuple[str, ...], skip: tuple[str, ...]) -> str | None:
    """`path` relative to the root (as given or resolved), or None: outside it, or in derived
    state (bytecode is mapped back to its source), or under the state folders."""
    norm = os.path.normpath(path)
    # Cached for the process: every run of a mutation run reports much the same files (a warm
    # process's imports), and a tree's folders are not re-linked while its gates run.
    for candidate in dict.fromkeys((norm, _realpath(norm, _FOLDERS))):
        if not candidate.startswith(tuple(root + os.sep for root in roots)) and candidate not in roots:
            continue        # most of a report: the interpreter's and redfirst's own files
        if candidate.endswith(".pyc") and os.path.basename(os.path.dirname(candidate)) == "__pycache__":
            try:
                candidate = importlib.util.source_from_cache(candidate)
            except ValueError:
                continue
        if any(candidate == s or candidate.startswith(s + os.sep) for s in skip):
            continue
        for root in roots:
            if candidate == root:
                return "."        # the root itself, listed
            if candidate.startswith(root + os.sep):
                rel = candidate[len(root) + 1:]
                if not DERIVED.intersection(rel.split(os.sep)):
                    return rel
    return None


@functools.cache
def _not_the_trees() -> tuple[str, ...]:
    """Folders outside any root whose files are not what a result rests on (each ends in a
    separator): the system's, the interpreter's prefixes, redfirst's own packages (its version is
    in every key)."""
    folders = {"/dev", "/proc", "/sys", sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    module = sys.modules.get("redfirst")
    if module is not None and module.__file__:
        folders.add(os.path.dirname(module.__file__))
    return tuple(sorted({os.path.join(f, "") for f in folders} | {os.path.join(os.path.realpath(f), "")
                                                                   for f in folders}))


@functools.cache
def _temporary() -> frozenset[str]:
    folder = tempfile.gettempdir()
    return frozenset({os.path.normpath(folder), os.path.realpath(folder)})


def _redfirsts_own() -> tuple[str, ...]:
    """Folders (and name prefixes) of what redfirst keeps for its runs outside the tree: the pytest
    driver's cache folders (one per run), the bytecode warm processes and Python keep under a
    prefix (the sources of that bytecode are installed packages)."""
    from redfirst.gates.config import cache_home

    return _own_under(str(cache_home()), os.environ.get("PYTHONPYCACHEPREFIX"), sys.pycache_prefix,
                      tempfile.gettempdir())


@functools.lru_cache(maxsize=16)
def _own_under(cache: str, env_prefix: str | None, prefix: str | None, temp: str) -> tuple[str, ...]:
    """`_redfirsts_own` for these settings: worked out once, not for every read report (it
    resolves links)."""
    folders: list[str] = [os.path.join(cache, "pycache"), *(p for p in (env_prefix, prefix) if p)]
    own = [os.path.join(temp, "redfirst-pytest-cache-")]
    for f in folders:
        own += [os.path.join(os.path.abspath(f), ""), os.path.join(os.path.realpath(f), "")]
    return tuple(own)


def _outside(paths: object, written: object, roots: tuple[str, ...], skip: tuple[str, ...]) -> frozenset[str]:
    """The files and folders of `paths` outside the roots that are not in `_not_the_trees` or
    `skip`, nor ones the run wrote (its own temporary files), nor the temporary folder itself (its
    listing changes with every run on the machine). A folder stands for its listing: a module
    added to a path entry outside the root shadows one the run imported from a later entry."""
    if not isinstance(paths, list):
        return frozenset()
    own = {os.path.normpath(w) for w in written if isinstance(w, str)} if isinstance(written, list) else set()
    ignored = (*_not_the_trees(), *_redfirsts_own(), *(os.path.join(s, "") for s in skip))
    out = set()
    for p in paths:
        if isinstance(p, str) and (kept := _outside_one(p, roots, ignored)) is not None and kept not in own:
            out.add(kept)
    return frozenset(out)


@functools.lru_cache(maxsize=1 << 16)
def _outside_one(path: str, roots: tuple[str, ...], ignored: tuple[str, ...]) -> str | None:
    """`path` as `_outside` keeps it, or None. Cached for the process, as `_relative` is: every run
    of a mutation run reports much the same files."""
    if not os.path.isabs(path):
        return None
    inside = tuple(os.path.join(r, "") for r in roots)
    norm = os.path.normpath(path)
    if norm.endswith(".pyc") and os.path.basename(os.path.dirname(norm)) == "__pycache__":
        try:
            norm = importlib.util.source_from_cache(norm)     # bytecode stands for its source
        except ValueError:
            return None
    if norm in roots or norm.startswith(inside) or os.path.join(norm, "") in ignored or norm.startswith(ignored):
        return None
    real = _realpath(norm, _FOLDERS)
    if real in roots or real.startswith(inside) or real.startswith(ignored) or real in _temporary():
        return None
    return norm


def observed(report: Path, root: Path, state_dirs: Iterable[Path], known: Iterable[str] = ()) -> ReadSet:
    """The read set of a run from the report its program wrote (redfirst.gates.read_hook), with `known`
    (root-relative files the runner knows it read)."""
    try:  # written by json.dumps (ASCII: a path's undecodable bytes are \udcXX escapes); the one loader
        data = load_json(report)  # a FIFO, nesting past the bound or a key twice (a second `opened`) is none
    except YamlError:
        return ReadSet.not_known("the program wrote no report of what it read (killed, timed out, or the "
                                 "redfirst plugin not loaded)")
    if not isinstance(data, dict) or not isinstance(data.get("opened"), list):
        return ReadSet.not_known("the program's report of what it read is malformed")
    roots = tuple(dict.fromkeys((os.path.normpath(str(root)), os.path.realpath(root))))
    installed = [p for p in data.get("installed") or [] if isinstance(p, str)]
    # A virtual environment under the root holds installed packages, not the tree (a prefix that
    # is the root, or holds it, is no such folder).
    venvs = [p for p in {*installed, *map(os.path.realpath, installed)} if any(p.startswith(r + os.sep) for r in roots)]
    skip = (*(os.path.realpath(d) for d in state_dirs), *(os.path.normpath(str(d)) for d in state_dirs), *venvs)

    def inside(paths: object) -> frozenset[str]:
        return frozenset(rel for p in paths if isinstance(p, str) and (rel := _relative(p, roots, skip))) \
            if isinstance(paths, list) else frozenset()

    # What it read outside the root is known whether or not what it read under the root is: a
    # result rests on those files either way (rests.rests_on keeps them beside the whole tree).
    outside = _outside(data["opened"], data.get("written"), roots, skip)
    spawned = [str(s) for s in data.get("spawned") or []]
    if spawned:
        return ReadSet.not_known(f"the run started a process ({spawned[0]}): what it read is not seen", outside)
    unseen = sorted(inside(data.get("imported_unseen")))
    if unseen:
        return ReadSet.not_known(f"{unseen[0]} was imported before the read hook was in place (a warm process "
                                 "that does not call redfirst.gates.read_hook.install() first): what it read then is not seen",
                                 outside)
    return ReadSet(inside(data["opened"]) | frozenset(known), None, inside(data.get("written")), outside)
