"""Whether the build a C, C++ or CUDA mutation was graded on compiled it: its outputs, as each
worker had them before its first mutation, against what the mutated build wrote."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from redfirst.verdict import MutationOutcome

# The files whose mutation only a compiler turns into code the tests run.
COMPILED = frozenset({".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".cu", ".cuh"})
# A build tool's own log, rewritten by every build whatever it compiled (ninja's).
_BOOKKEEPING = frozenset({".ninja_log", ".ninja_deps"})
_NAMED_UP_TO = 1 << 30      # bytes read of one output when looking for a source's name

Stamp = tuple[int, int, int]        # mtime_ns, ctime_ns, size: any write moves one


def compiled(file: str) -> bool:
    """Whether `file` is a C, C++ or CUDA source or header."""
    return os.path.splitext(file)[1].lower() in COMPILED


def stamps(folders: Iterable[Path], skip: Iterable[Path] = ()) -> dict[str, Stamp]:
    """Every regular file under `folders` (or a folder that is a file itself) and its stamp."""
    left_out = {os.path.abspath(p) for p in skip}
    found: dict[str, Stamp] = {}

    def add(path: str) -> None:
        if os.path.basename(path) in _BOOKKEEPING:
            return
        with contextlib.suppress(OSError):
            st = os.lstat(path)
            if not os.path.islink(path):
                found[path] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size)

    for folder in folders:
        if not folder.is_dir():
            add(str(folder))
            continue
        for path, dirs, names in os.walk(folder):
            dirs[:] = [d for d in dirs if os.path.abspath(os.path.join(path, d)) not in left_out and d != ".git"]
            for name in names:
                add(os.path.join(path, name))
    return found


def _digest(path: str) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


@dataclass(frozen=True)
class Judged:
    outcome: MutationOutcome
    reason: str


def _names(path: str, pattern: re.Pattern[bytes]) -> bool:
    try:
        with open(path, "rb") as f:
            return pattern.search(f.read(_NAMED_UP_TO)) is not None
    except OSError:
        return False


def judge(file: str, base: Mapping[str, tuple[Stamp, str | None]], before: Mapping[str, Stamp],
          after: Mapping[str, Stamp], where: str = "") -> Judged | None:
    """Whether the mutated build compiled mutation `file`, from its outputs: `base` as the worker
    had them before its first mutation (stamp and content), `before` and `after` the mutated
    build. None: some output the build wrote differs from the base (the gates then decide).
    DISCARDED "not built": the build wrote none of its outputs, or what it wrote is the base's
    and none of its outputs names `file` (a depfile, an object's file symbol). EQUIVALENT: it wrote
    outputs, each byte for byte the base's, and one names `file`: the compiler made the same code.
    A caller may rely on this: never None where no output differs from the base. `where`: the
    outputs' folders, as the reason names them."""
    written = sorted(p for p in {*before, *after} if before.get(p) != after.get(p))
    if not written:
        return Judged(MutationOutcome.DISCARDED, f"not built: with {file} mutated the build wrote none of its "
                                                 f"outputs{f' ({where})' if where else ''}: no build step compiles it")
    differs = [p for p in written if p not in after or p not in base or (
        base[p][0] != after[p] and (base[p][1] is None or _digest(p) != base[p][1]))]
    if differs:
        return None
    name = re.compile(rb"(?<![\w.-])" + re.escape(os.fsencode(os.path.basename(file))) + rb"(?![\w.-])")
    if not any(_names(p, name) for p in after):
        return Judged(MutationOutcome.DISCARDED, f"not built: what the build wrote with {file} mutated is the "
                                                 f"baseline's byte for byte and no output names {file}")
    return Judged(MutationOutcome.EQUIVALENT, f"the build's outputs are byte-identical to the baseline's "
                                              f"({len(written)} rewritten): the compiler made the same code "
                                              "of the mutation, which no test can tell apart")


class Outputs:
    """Each worker's build outputs as they were before its first mutation, taken once per worker."""

    def __init__(self, skip: Iterable[Path] = ()) -> None:
        self.skip = tuple(skip)
        self._lock = threading.Lock()
        self._base: dict[str, dict[str, tuple[Stamp, str | None]]] = {}

    def base(self, root: Path, folders: Iterable[Path]) -> dict[str, tuple[Stamp, str | None]]:
        """The worker's base (stamp and sha256 of every output), taken on the first call for `root`."""
        key = str(root)
        with self._lock:
            if key in self._base:
                return self._base[key]
        taken = {p: (st, _digest(p)) for p, st in stamps(folders, self.skip).items()}
        with self._lock:
            return self._base.setdefault(key, taken)

    def stamps(self, folders: Iterable[Path]) -> dict[str, Stamp]:
        return stamps(folders, self.skip)

    def judge(self, root: Path, file: str, before: Mapping[str, Stamp], folders: Sequence[Path]) -> Judged | None:
        """`judge` of the mutated build in the worker at `root`, its outputs in `folders`."""
        where = ", ".join(sorted(os.path.relpath(f, root) + ("/" if f.is_dir() else "") for f in folders))
        return judge(file, self.base(root, folders), before, self.stamps(folders), where)
