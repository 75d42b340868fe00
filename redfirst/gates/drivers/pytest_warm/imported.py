"""What a warm process imported from under its root, and the tree as it was then: whether
a fork may run the tree as it is now without importing anything again."""

from __future__ import annotations

import ast
import contextlib
import functools
import gc
import importlib.util
import os
import random
import select
import shutil
import signal
import sys
import threading
import time
import types
from collections.abc import Collection, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from redfirst import tempdirs
from redfirst.gates import read_hook
from redfirst.gates.drivers.pytest_warm import patcher, reaper

# Folders no test reads its code or data from: version control, caches, environments.
_NOT_SOURCE = frozenset({".git", ".hg", ".svn", ".venv", ".tox", ".nox", ".eggs", ".mypy_cache", ".pytest_cache",
                         ".ruff_cache", ".redfirst", "__pycache__", "node_modules"})


class Seeds:
    """Whether the code run in this process left the `random` module's generator untouched: it
    drew nothing from it, set nothing, and never looked at its state.

    Python reseeds that generator from the system's randomness in every forked child, as a fresh
    interpreter seeds it at start: each cold run draws its own numbers. A fork keeps that reseed
    only where this process's code left the generator as it found it; else the fork takes this
    process's state back, as a cold run that runs the same code starts from it (a seed, or a draw
    a value kept at import follows from: what a conftest peeked at and put back comes next).
    Told by the state, which any draw or seed changes, and by a watch on reading it
    (`random.getstate`, the generator's own, a copy or pickle of it), the only way to put back a
    state that was drawn from. Then every fork starts from one state, as every run of a value made
    at import shares it. (`random.Random.getstate(random._inst)` is not watched; generators the
    project makes itself, numpy's among them, reach each fork as they are here.)"""

    def __init__(self) -> None:
        self._start: Any = None
        self._getstate = random.getstate
        self.looked = False

    def start(self) -> None:
        """Before any of the root's code runs."""
        self._start = self._getstate()
        own = self._getstate

        @functools.wraps(own)
        def getstate() -> Any:
            self.looked = True
            return own()

        random.getstate = getstate
        random._inst.getstate = getstate     # type: ignore[method-assign]  # (what copy and pickle call)

    def untouched(self) -> bool:
        return self._start is not None and not self.looked and self._getstate() == self._start

    def drawn(self) -> Any:
        """Before a fork: the state it takes back (hand_back), None where it keeps its own."""
        return None if self.untouched() else self._getstate()

    def hand_back(self, state: Any) -> None:
        """In the fork: the watch taken off (the run sees `random` as a cold run does), and the
        state `drawn` gave, if any, put back."""
        random.getstate = self._getstate
        vars(random._inst).pop("getstate", None)
        if state is not None:
            random.setstate(state)


class Imported:
    """The warm process's own modules and the tree they came from. Filled at warm-up and
    when later gates' test files are collected; each fork inherits a copy."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.warmup = patcher.Warmup()                   # what ran at warm-up; the root's functions
        self.warmup.roots = tuple(dict.fromkeys(os.path.join(r, "") for r in (str(root), os.path.realpath(root))))
        self.modules: dict[str, str] = {}                # module name -> file, for the warm modules under the root
        self.elsewhere: set[str] = set()                 # modules not from under the root
        self.tree: dict[str, tuple[int, int]] = {}       # file under the root -> (mtime_ns, size) at warm-up
        self.collected: set[str] = set()                 # test paths collected in the warm process
        self.cold_only = ""     # why no fork may run warm (the warm-up left threads or processes running)
        self.one_use: list[str] = []    # one-use sources of cases a collection here was given (one_use_cases)
        # What the root's code read of the environment while it ran here (None: unset), and set in it.
        self.env_read: dict[str, str | None] = {}
        self.env_written: dict[str, str | None] = {}
        self.env_whole: dict[str, str] | None = None    # the environment, where that code listed or copied it
        self.seeds = Seeds()

    @contextlib.contextmanager
    def root_code(self, what: str) -> Iterator[None]:
        """Around code of the root run in the warm process (its imports, a collection, a
        session's making). What it writes or makes on disk there (a folder made at import, a
        disk cache, a log) every fork would share, where each cold run makes its own: no fork
        runs warm after it. What it reads of the environment is noted (`env_fits`), and what it
        sets there each fork sets again."""
        saved = os.environ
        reads = _RootReads(saved, self.root)
        written: list[str] = []
        os.environ = reads  # type: ignore[assignment]  # noqa: B003
        try:
            with read_hook.changes((str(self.root), os.path.realpath(self.root))) as written:
                yield
        finally:
            os.environ = saved  # noqa: B003
            for key, value in reads.read.items():
                self.env_read.setdefault(key, value)
            if reads.whole is not None and self.env_whole is None:
                self.env_whole = reads.whole
            self.env_written.update(reads.written)
            made = [p for p in dict.fromkeys(written) if not _derived(p)]
            if made and not self.cold_only:
                more = f" and {len(made) - 1} more" if len(made) > 1 else ""
                self.cold_only = f"{what} wrote {made[0]}{more}: every fork would share what it made there"

    def env_fits(self, env: Mapping[str, str]) -> bool:
        """Whether the environment a run gets reads, to the root's code that ran here, as it read
        then (a cold run imports that code under the run's environment, pytest's own
        PYTEST_VERSION in it)."""
        import pytest

        seen = {**env, "PYTEST_VERSION": pytest.__version__}
        if self.env_whole is not None and {k: v for k, v in seen.items() if k not in self.env_written} != {
                k: v for k, v in self.env_whole.items() if k not in self.env_written}:
            return False
        return all(seen.get(k) == v for k, v in self.env_read.items() if k not in self.env_written)

    def tree_stat(self) -> dict[str, tuple[int, int]]:
        """Every file under the root (version control, caches and environments aside) with
        its stat."""
        seen: dict[str, tuple[int, int]] = {}
        # os.walk's own reading (a link to a folder is listed, not entered; a file's stat follows
        # its link), on the directory entries themselves: on every request, so on the run's path.
        folders = [str(self.root)]
        while folders:
            try:
                entries = os.scandir(folders.pop())
            except OSError:
                continue
            with entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        if entry.name not in _NOT_SOURCE and not entry.is_symlink():
                            folders.append(entry.path)
                        continue
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    seen[entry.path] = (st.st_mtime_ns, st.st_size)
        # Every module the warm process holds, wherever the walk did not go (a hidden folder,
        # a folder reached through a link): a fork keeps modules whose file is not listed.
        for file in self.modules.values():
            path = os.path.abspath(file)
            if path not in seen:
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                seen[path] = (st.st_mtime_ns, st.st_size)
        return seen

    def _note_modules(self, restat: bool = True) -> None:
        """After warm-up: the modules the warm process holds from under the root (new ones
        only: a later warm-up runs on the same tree). `restat`: the tree is as it was at
        warm-up, so its stat is the new reference."""
        for name, module in list(sys.modules.items()):
            file = getattr(module, "__file__", None)
            if name in self.modules or name in self.elsewhere:
                continue      # seen at an earlier warm-up, on the same tree
            if not file or not under(Path(file), self.root):
                self.elsewhere.add(name)
            else:
                self.modules[name] = file
        if restat:
            self.tree = self.tree_stat()

    def changed_files(self) -> set[str]:
        """Files under the root whose stat differs from the warm-up's (added and removed
        ones included)."""
        now = self.tree_stat()
        return {p for p in now.keys() | self.tree.keys() if now.get(p) != self.tree.get(p)}

    def only_modules(self, changed: set[str]) -> bool:
        """Whether every changed file is a module this process imported already (so importing
        or collecting here now reads none of them)."""
        return changed <= {os.path.abspath(f) for f in self.modules.values()}

    def adopt(self) -> None:
        """After a session was made on a tree that may differ from the warm-up's in modules
        imported already (`only_modules`): note the modules it imported (their files are as at
        warm-up) and their functions, the tree's reference kept as it was; then out of the
        collector's reach, as `settle` does."""
        self._note_modules(restat=False)
        self.warmup.index((name, os.path.abspath(file)) for name, file in self.modules.items())
        gc.collect()
        gc.freeze()

    def warm_enough(self, changed: set[str] | None) -> bool:
        """Whether this fork may run the tree as it is now without importing anything again:
        nothing under the root changed, or only module files, each only in function bodies
        nothing touched at warm-up, whose live functions now get the new code in place
        (patcher). Otherwise the fork must become a fresh interpreter: importing again in
        this process would run import-time code a second time (a registry that refuses a
        second entry, a start method already set), which a fresh import never does.
        `changed`: what the warm process found changed just before it forked this run
        (None: look now)."""
        if self.cold_only:
            return False
        if changed is None:
            changed = self.changed_files()
        if not changed <= {os.path.abspath(f) for f in self.modules.values()}:
            return False     # a data file a module may have read at import, a new file
        return all(patcher.patch(self.warmup, sys.modules[name]) for name, file in self.modules.items()
                   if os.path.abspath(file) in changed and name in sys.modules)

    def settle(self, test_paths: Sequence[str], forked: bool) -> None:
        """After a warm-up: note the root's modules and their functions, then move every warm
        object out of the collector's reach, so a fork's gc.collect (pytest runs several)
        neither walks nor copies them. `forked`: whether any fork was made yet."""
        self.collected.update(p.split("::")[0] for p in test_paths)
        # A fork has only the thread that forked it, and processes started at import are not
        # its own: a warm-up that left either cannot be copied faithfully.
        if threading.active_count() > 1:
            self.cold_only = f"the warm-up left {threading.active_count() - 1} thread(s) running"
        elif not forked and reaper.children(os.getpid()):
            # (Once forks exist they are children too, some still exiting.)
            self.cold_only = "the warm-up left processes running"
        self._note_modules()
        if not self.cold_only:
            self.cold_only = self._shadowed() or self._used_up() or self.warmup.clock
        self.warmup.index((name, os.path.abspath(file)) for name, file in self.modules.items())
        gc.collect()
        gc.freeze()

    def _shadowed(self) -> str:
        """Why one process cannot run every collected gate's tests as pytest runs each alone, or
        "": a module of the root imported by its name alone (pytest puts each test file's first
        folder without `__init__.py` on the import path) while another collected test folder
        holds a module of that name (a helpers.py in each of two test folders, two test files of
        one name): in one process every gate gets the first one imported."""
        bases: set[Path] = set()
        for p in sorted(self.collected):
            path = Path(p) if os.path.isabs(p) else self.root / p
            files = [path] if path.is_file() else sorted(path.rglob("*.py"))[:2000] if path.is_dir() else []
            for f in files:
                base = f.parent
                while (base / "__init__.py").is_file() and base != self.root:
                    base = base.parent
                bases.add(base)
        for name, file in sorted(self.modules.items()):
            if "." in name or name == "conftest":
                continue        # pytest imports each conftest.py by its path
            for base in sorted(bases):
                for candidate in (base / f"{name}.py", base / name / "__init__.py"):
                    if candidate.is_file() and os.path.realpath(candidate) != os.path.realpath(file):
                        return (f"two test folders hold a module named {name} ({file}, {candidate}): one process "
                                "imports one of them for every gate")
        return ""

    def _used_up(self) -> str:
        """Why the forks would not see the test cases a cold run sees, or "": a `parametrize` given
        a one-use source of cases while this process collected (one_use_cases), or a second
        collection that was no repeat of the first (collect_repeatably). Every fork would find
        what this process's collection left (`test[NOTSET]` for cases it used up)."""
        if self.one_use:
            return (f"{self.one_use[0]}: a one-use source of cases, or a collection that does not repeat: "
                    "every fork would find what the warm process's collection left")
        return ""

    def unchanged(self) -> bool:
        """Whether every file under the root holds what it held at warm-up (a file rewritten
        with the same bytes, as a restore does, counts as unchanged where its bytes were
        kept)."""
        now = self.tree_stat()
        if now.keys() != self.tree.keys():
            return False
        for path, stat in now.items():
            if stat != self.tree[path]:
                kept = self.warmup.sources.get(path)
                try:
                    if kept is None or Path(path).read_bytes() != kept:
                        return False
                except OSError:
                    return False
        return True

    def extend(self, test_paths: Sequence[str], forked: bool) -> None:
        """Collect test paths no run has asked for yet in the warm process itself, so every
        later fork finds their modules imported (a baseline runs each gate once, before any
        mutation). Only on a tree that is as it was at warm-up: a mutated module must never
        become part of the warm process."""
        # By file: a gate naming one test of a file warms the whole file for the next one.
        new = list(dict.fromkeys(p.split("::")[0] for p in test_paths if p.split("::")[0] not in self.collected))
        if not new or not self.unchanged():
            return
        self.warmup.start()
        try:
            with self.root_code("collecting a later gate's tests"), one_use_cases(self.one_use):
                collect_repeatably(new, self.one_use, self.root)
        finally:
            self.warmup.stop()
        self.settle(new, forked)


@contextlib.contextmanager
def one_use_cases(found: list[str]) -> Iterator[None]:
    """While the warm process collects: each value a `parametrize` is given (by a mark at any
    depth, inherited or not, or by a hook) that one pass may use up, noted in `found`: anything
    not a collection (a zip, a generator, a file, a stream). pytest reads it once, here; every
    fork would then see none of its cases."""
    from _pytest.python import Metafunc

    real = Metafunc.parametrize

    def parametrize(self: Metafunc, argnames: Any, argvalues: Any, *args: Any, **kwargs: Any) -> None:
        ids = kwargs.get("ids", args[1] if len(args) > 1 else None)
        for what, value in (("values", argvalues), ("ids", ids)):
            try:
                one_use = value is not None and not callable(value) and not isinstance(value, Collection)
            except Exception:
                one_use = True
            if one_use:
                found.append(f"{self.definition.nodeid}: the parametrize {what} ({type(value).__name__})")
        real(self, argnames, argvalues, *args, **kwargs)

    Metafunc.parametrize = parametrize  # type: ignore[method-assign]
    try:
        yield
    finally:
        Metafunc.parametrize = real  # type: ignore[method-assign]


def _derived(path: str) -> bool:
    """Bytecode Python or pytest writes for an import (beside the source or under a prefix), or a
    device (the null device output is sent to)."""
    prefixes = [p for p in (sys.pycache_prefix, str(bytecode_folder()), "/proc") if p]
    return f"{os.sep}__pycache__" in path or path == os.devnull or any(
        path.startswith(os.path.join(p, "")) for p in prefixes)


class _RootReads(MutableMapping[str, str]):
    """os.environ, noting the variables code under the root looks up (and sets), not those the
    interpreter's or pytest's own code looks up."""

    def __init__(self, env: MutableMapping[str, str], root: Path) -> None:
        self.env = env
        self.prefix = os.path.join(str(root), "")
        self.read: dict[str, str | None] = {}
        self.written: dict[str, str | None] = {}
        self.whole: dict[str, str] | None = None     # the whole environment, where it was listed or copied

    def _by_root(self) -> bool:
        frame: types.FrameType | None = sys._getframe(2)
        for _ in range(8):      # through os.getenv, Mapping.get and the like
            if frame is None:
                return False
            name = frame.f_code.co_filename
            if name.startswith(self.prefix):
                return True
            if not (name.startswith("<frozen") or os.path.basename(name) in ("os.py", "_collections_abc.py")):
                return False
            frame = frame.f_back
        return False

    def __getitem__(self, key: str) -> str:
        if key not in self.read and key not in self.written and self._by_root():
            self.read[key] = self.env.get(key)
        return self.env[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str) and key not in self.read and key not in self.written and self._by_root():
            self.read[key] = self.env.get(key)
        return key in self.env

    def __iter__(self) -> Iterator[str]:
        if self._by_root():
            self._whole()
        return iter(list(self.env))

    def _whole(self) -> None:
        # every variable seen, and which are not there: the run's must be the same set
        if self.whole is None:
            self.whole = dict(self.env)

    def __len__(self) -> int:
        return len(self.env)

    def copy(self) -> dict[str, str]:
        """os.environ.copy(): every variable seen."""
        if self._by_root():
            self._whole()
        return dict(self.env)

    def __or__(self, other: Mapping[str, str]) -> dict[str, str]:
        if self._by_root():
            self._whole()
        return {**self.env, **other}

    def __ror__(self, other: Mapping[str, str]) -> dict[str, str]:
        if self._by_root():
            self._whole()
        return {**other, **self.env}

    def __ior__(self, other: Mapping[str, str]) -> _RootReads:
        by_root = self._by_root()
        for key, value in other.items():
            if by_root:
                self.written[key] = value
            self.env[key] = value
        return self

    def __setitem__(self, key: str, value: str) -> None:
        if self._by_root():
            self.written[key] = value
        self.env[key] = value

    def __delitem__(self, key: str) -> None:
        if self._by_root():
            self.written[key] = None
        del self.env[key]


class _Cases:
    """The node ids a collection ended with, and the names of each one's marks (a plugin object)."""

    def __init__(self) -> None:
        self.ids: list[str] | None = None
        self.marks: list[tuple[str, ...]] | None = None

    def pytest_collection_finish(self, session: Any) -> None:
        self.ids = [item.nodeid for item in session.items]
        self.marks = [tuple(m.name for m in item.iter_markers()) for item in session.items]


def collect(test_paths: Sequence[str], options: Sequence[str] = (), cases: _Cases | None = None) -> None:
    """Warm-up as mutmut's default does: a collection pass imports conftest files and
    plugins once; its output goes nowhere. `cases`: gets the node ids it collected."""
    import pytest

    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *options, *test_paths],
                    plugins=[cases] if cases is not None else [])
    except BaseException:  # a broken collection is the real run's to report
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def collect_repeatably(test_paths: Sequence[str], found: list[str], root: Path) -> None:
    """Collect as `collect` does; then again in a fork of this process, as each run's fork will
    collect, unprofiled, leaving this process as the first collection left it. Where the fork's
    collection ends with other cases than the first, or marks one otherwise, something a
    collection uses up or keeps (a generator a hook drains into a list, a counter, a set of the
    cases seen) would be spent in every fork of this process; where it writes under the root,
    each fork would write there: why is noted in `found`, so where the fork cannot be made or
    says nothing in time."""
    first = _Cases()
    started = time.monotonic()
    collect(test_paths, cases=first)
    if first.ids is None:
        return      # a broken collection: each run reports it
    said = f"a second collection of {', '.join(test_paths)}"
    again = _collect_in_fork(test_paths, root, wait_s=30 + 5 * (time.monotonic() - started))
    if again is None:
        found.append(f"{said}, in a fork, could not be made, or told nothing in time")
    elif again["ids"] != first.ids:
        lost = sorted(set(first.ids) - set(again["ids"] or ()))
        found.append(f"{said} found other cases than the first"
                     + (f" ({lost[0]} and {len(lost) - 1} more missing)" if lost else ""))
    elif again["marks"] != first.marks:
        case = next(i for i, m, n in zip(first.ids, first.marks or (), again["marks"], strict=True) if m != n)
        found.append(f"{said} marked {case} otherwise than the first")
    elif again["wrote"]:
        found.append(f"{said} wrote {again['wrote'][0]}")


def _collect_in_fork(test_paths: Sequence[str], root: Path, wait_s: float) -> dict[str, Any] | None:
    """The node ids a collection in a fork ended with, each one's mark names, and the files it
    wrote under the root; None where no fork could be made, or it said nothing within `wait_s`."""
    import marshal

    sys.stdout.flush()
    sys.stderr.flush()
    try:
        report_r, report_w = os.pipe()
        pid = os.fork()
    except OSError:
        return None
    if pid == 0:
        try:
            os.close(report_r)
            sys.setprofile(None)        # (the warm-up's hook: nothing here is kept)
            threading.setprofile(None)
            cases = _Cases()
            with read_hook.changes((str(root), os.path.realpath(root))) as written:
                collect(test_paths, cases=cases)
            said = memoryview(marshal.dumps({"ids": cases.ids, "marks": cases.marks,
                                             "wrote": [p for p in dict.fromkeys(written) if not _derived(p)]}))
            while said:
                said = said[os.write(report_w, said):]
        finally:
            os._exit(0)
    os.close(report_w)
    chunks: list[bytes] = []
    # Read until the end of the pipe or the fork's exit (a process it left may hold the pipe
    # open), or the time is up (a hook that blocks the second time): then it is killed, told nothing.
    exited = os.pidfd_open(pid)
    os.set_blocking(report_r, False)
    until = time.monotonic() + wait_s
    try:
        ended = False
        while not ended:
            ready, _, _ = select.select([report_r, exited], [], [], max(0.0, until - time.monotonic()))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return None
            ended = exited in ready     # (all it wrote is in the pipe by then)
            while True:
                try:
                    chunk = os.read(report_r, 65536)
                except BlockingIOError:
                    break
                if not chunk:
                    ended = True
                    break
                chunks.append(chunk)
    finally:
        os.close(report_r)
        os.close(exited)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    try:
        told = marshal.loads(b"".join(chunks))
    except (EOFError, ValueError, TypeError):
        return None
    return told if isinstance(told, dict) else None


def collect_outside(root: Path) -> None:
    """A collection pass in an empty folder, with no configuration file and no conftest: the
    installed plugins load and finish a session (what they import lazily, they import now)
    and nothing of the root is read or run. The conftest cut (`--confcutdir`) is the folder
    itself: without it pytest starts from `/` and lists every folder on the way (a shared
    /tmp of thousands of entries: over a second per warm process)."""
    with tempdirs.folder("rf-warm-empty-") as folder, bytecode_kept(root):
        empty = str(folder)
        collect([empty], ["--noconftest", "-c", os.devnull, "--rootdir", empty, "--confcutdir", empty])


def bytecode_folder() -> Path:
    """Where warm processes keep the bytecode of what they import from outside the root:
    redfirst's cache folder, never beside a source."""
    from redfirst.gates.config import cache_home

    return cache_home() / "pycache"


@contextlib.contextmanager
def bytecode_kept(root: Path) -> Iterator[None]:
    """Inside: what is imported keeps its bytecode under bytecode_folder() (Python's
    `pycache_prefix`), and so does pytest's assertion rewriting of the installed plugins'
    modules (Hypothesis: about a second per warm process), whatever PYTHONDONTWRITEBYTECODE
    says: that variable keeps bytecode out of source folders, and none is written there. The
    next warm process reads it back, checked against each source's time and size as Python
    and pytest check their own `__pycache__`. Where the folder cannot be made, nothing is kept.

    Never for a module under the root (a project that is itself a pytest plugin is imported
    here): a mutation may keep a file's size and second (`+` for `-`), which that check would
    pass. The cache's copy of the root's folders is removed before (nothing is read back) and
    after (nothing is kept). (Module origins are absolute: the import system makes every
    path entry absolute since Python 3.10, so both Python's and pytest's copies of a module
    under the root lie below that copy.)"""
    folder = bytecode_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        yield
        return
    mirrors = {folder / str(p).lstrip(os.sep) for p in (root.absolute(), root.resolve())}
    saved = sys.pycache_prefix, sys.dont_write_bytecode
    for mirror in mirrors:
        shutil.rmtree(mirror, ignore_errors=True)
    sys.pycache_prefix, sys.dont_write_bytecode = str(folder), False
    try:
        yield
    finally:
        sys.pycache_prefix, sys.dont_write_bytecode = saved
        for mirror in mirrors:
            shutil.rmtree(mirror, ignore_errors=True)


def third_party_imports(test_paths: Sequence[str], root: Path) -> list[str]:
    """Top-level modules the test files import that live outside the root."""
    files: list[Path] = []
    for p in test_paths:
        path = Path(p.split("::")[0])
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.suffix == ".py" else [])
    names: set[str] = set()
    # Each file once: a gate naming 40 tests of one file named it 40 times (more-itertools'
    # test_more.py, 6000 lines: 12 s of parsing before the warm process was ready).
    for file in list(dict.fromkeys(files))[:200]:
        try:
            tree = ast.parse(file.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    outside = []
    for name in sorted(names - tree_modules(root)):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        origin = spec.origin if spec else None
        if origin and origin not in ("built-in", "frozen") and not under(Path(origin), root):
            outside.append(name)
    return outside


def tree_modules(root: Path, depth: int = 3) -> set[str]:
    """Top-level module names the tree holds (`x.py`, a folder `x`) within `depth` folders of the
    root: found outside it, such a module is another copy (an installed one) that a conftest may put
    the tree's ahead of, so it is never imported before pytest's session."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(root):
        level = len(Path(folder).relative_to(root).parts)
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        found.update(d for d in dirs if d.isidentifier())
        found.update(f[:-3] for f in files if f.endswith(".py"))
        if level >= depth - 1:
            dirs.clear()
    return found


def under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
        return True
    except ValueError:
        return False


def under_root(name: str, root: Path) -> bool:
    """Whether a top-level module lives under the root (unknown counts as under it).
    Only the top-level name is looked up: finding `a.b` would import `a`."""
    try:
        spec = importlib.util.find_spec(name.split(".")[0])
    except (ImportError, ValueError):
        return True
    origin = spec.origin if spec else None
    if origin in ("built-in", "frozen"):
        return False
    return origin is None or under(Path(origin), root)
