"""Whether the build a C, C++ or CUDA mutation was graded on compiled it: its outputs, as each
worker had them before its first mutation, against what the mutated build wrote."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from redfirst.mutations.outcome import BuildStatus
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


Taken = dict[str, tuple[Stamp, str | None]]     # each output's stamp and sha256


def take(folders: Iterable[Path], skip: Iterable[Path] = (), known: Mapping[str, tuple[Stamp, str | None]] = {}
         ) -> Taken:
    """Every output's stamp and sha256; `known`'s digest where the stamp is the same."""
    return {p: (st, known[p][1] if p in known and known[p][0] == st else _digest(p))
            for p, st in stamps(folders, skip).items()}


def volatile(before: Mapping[str, tuple[Stamp, str | None]], after: Mapping[str, tuple[Stamp, str | None]]
             ) -> frozenset[str]:
    """The outputs a rebuild of the untouched tree, `before` -> `after`, shows to prove nothing
    about what a later build compiled: each one it wrote with other bytes (a date, a counter) or
    wrote anew, and, where it left any output alone (the build is incremental: it writes what
    changed), every one it rewrote at all (a phony stamp; `git describe --dirty`, which any mutation
    changes, compiled or not). A caller may rely on this: an output outside the set was left alone
    by that rebuild, or the rebuild rewrote every output, that one with the same bytes."""
    rewritten = {p for p in after if before.get(p, (None,))[0] != after[p][0]}
    changed = {p for p in rewritten if p not in before or before[p][1] != after[p][1]}
    return frozenset(rewritten if rewritten != set(after) else changed)


def _after_the_second_of(taken: Mapping[str, tuple[Stamp, str | None]]) -> None:
    """Wait (a second at most) until the clock is past the whole second of the newest output: a
    stamp in whole seconds (`date`) then differs between that build and the next."""
    newest = max((st[0] for st, _ in taken.values()), default=0) // 1_000_000_000
    left = (newest + 1) * 1_000_000_000 - time.time_ns()
    if 0 < left <= 1_000_000_000:
        time.sleep(left / 1e9)


def judge(file: str, base: Mapping[str, tuple[Stamp, str | None]], before: Mapping[str, Stamp],
          after: Mapping[str, Stamp], where: str = "", ignored: Collection[str] = (), root: str = ""
          ) -> Judged | None:
    """Whether the mutated build compiled mutation `file`, from its outputs: `base` as the worker
    had them, built from the untouched tree (stamp and content), `before` and `after` the mutated
    build; `ignored`: the outputs that prove nothing (`volatile`), as if the build never wrote them.
    None: some output the build wrote differs from the base (the gates then decide).
    DISCARDED "not built": the build wrote none of its outputs, or what it wrote is the base's
    and none of the outputs it wrote names `file` (a depfile, an object's file symbol). EQUIVALENT:
    it wrote outputs, each byte for byte the base's, and one names `file`: the compiler made the
    same code. A caller may rely on this: never None where no output outside `ignored` differs from
    the base. `where`: the outputs' folders, as the reason names them; `root`: what paths are named from."""
    rewritten = sorted(p for p in {*before, *after} if before.get(p) != after.get(p))
    written = [p for p in rewritten if p not in ignored]
    if not written:
        also = [os.path.relpath(p, root) if root else p for p in rewritten]
        but = (f" but {', '.join(also[:3])}{' ...' if len(also) > 3 else ''}, which a rebuild of the untouched "
               "tree rewrites as well" if also else "")
        return Judged(MutationOutcome.DISCARDED, f"not built: with {file} mutated the build wrote none of its "
                                                 f"outputs{f' ({where})' if where else ''}{but}: no build step "
                                                 "compiled it")
    differs = [p for p in written if p not in after or p not in base or (
        base[p][0] != after[p] and (base[p][1] is None or _digest(p) != base[p][1]))]
    if differs:
        return None
    name = re.compile(rb"(?<![\w.-])" + re.escape(os.fsencode(os.path.basename(file))) + rb"(?![\w.-])")
    if not any(_names(p, name) for p in written):
        return Judged(MutationOutcome.DISCARDED, f"not built: what the build wrote with {file} mutated is the "
                                                 f"baseline's byte for byte and none of it names {file}")
    return Judged(MutationOutcome.EQUIVALENT, f"the build's outputs are byte-identical to the baseline's "
                                              f"({len(written)} rewritten): the compiler made the same code "
                                              "of the mutation, which no test can tell apart")


@dataclass(frozen=True)
class Base:
    """A worker's outputs built from its untouched tree, and those a rebuild of it showed to be
    `volatile`; `failed`: why that rebuild did not succeed (then nothing is known)."""

    outputs: Taken
    volatile: frozenset[str] = frozenset()
    failed: str | None = None


class Outputs:
    """Each worker's build outputs built from its untouched tree, taken once per worker and
    output folders, before the first mutation that builds into them."""

    def __init__(self, skip: Iterable[Path] = ()) -> None:
        self.skip = tuple(skip)
        self._lock = threading.Lock()
        self._base: dict[tuple[str, tuple[str, ...]], Base] = {}

    def base(self, root: Path, folders: Sequence[Path], rebuild: Callable[[], BuildStatus] | None = None) -> Base:
        """The base of the worker at `root`, taken on the first call for these `folders`: where
        `rebuild` is given (the builds, in the untouched tree), it runs until it writes no new
        output (twice at most: once where the worker was built), and the last run tells `volatile`."""
        key = (str(root), tuple(sorted(map(str, folders))))
        with self._lock:
            if key in self._base:
                return self._base[key]
        taken, found, failed = take(folders, self.skip), frozenset[str](), None
        for _ in range(2) if rebuild is not None else ():
            _after_the_second_of(taken)
            status = rebuild() if rebuild is not None else BuildStatus("none")
            if status.state != "ok":
                failed = f"{status.state}: {status.reason}" if status.reason else status.state
                break
            again = take(folders, self.skip, taken)
            found, fresh, taken = volatile(taken, again), again.keys() - taken.keys(), again
            if not fresh:
                break
        with self._lock:
            return self._base.setdefault(key, Base(taken, found, failed))

    def stamps(self, folders: Iterable[Path]) -> dict[str, Stamp]:
        return stamps(folders, self.skip)

    def judge(self, root: Path, file: str, before: Mapping[str, Stamp], folders: Sequence[Path]) -> Judged | None:
        """`judge` of the mutated build in the worker at `root`, its outputs in `folders`, against
        its `base` (taken before): where the untouched tree's rebuild failed, DISCARDED."""
        where = ", ".join(sorted(os.path.relpath(f, root) + ("/" if f.is_dir() else "") for f in folders))
        at_start = self.base(root, folders)
        if at_start.failed is not None:
            return Judged(MutationOutcome.DISCARDED, f"not built: a rebuild of the untouched tree ({where}) failed "
                                                     f"({at_start.failed}), so what the build compiled is not known")
        return judge(file, at_start.outputs, before, self.stamps(folders), where, at_start.volatile, str(root))
