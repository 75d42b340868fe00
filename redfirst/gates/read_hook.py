"""What a gate's Python program read, seen from inside it: an audit hook (`sys.addaudithook`)
notes each file opened for reading (and for writing) or whose metadata it read (os.stat, lstat,
access), each link whose target it read (os.readlink), each folder listed (by name or descriptor;
a path relative to a folder's descriptor, `dir_fd`, is that folder's: `_where`), and each process started; `report`
writes that, and the files of every module imported, to the file `$GATES_READS` names
(redfirst.gates.reads turns it into the run's read set).

Loaded by the pytest plugin (drivers pytest and pytest-warm) and by driver python's
child. Nothing is installed unless the runner asks (`$GATES_READS` is set) or a warm
process calls `install()` for its forks. What modules imported before the hook was in
place read as they were imported is not seen: the report names them (`imported_unseen`),
and one of them under the root makes the read set UNKNOWN (a warm process that imported
the code under test before installing it). Kept import-light, and the hook never raises:
an audit hook that raises fails the operation it watches.
"""

from __future__ import annotations

import _thread
import contextlib
import heapq
import os
import posix
import sys
import types
from collections.abc import Iterable, Iterator
from typing import Any

ENV = "GATES_READS"

# Events that start a process: what that process reads is not seen here.
_SPAWN = frozenset({"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.startfile"})
# Started by a fork of this process: counted only once a run is armed (a warm process forks every run).
_FORK = frozenset({"os.fork", "os.forkpty"})

_opened: set[str] = set()
_opened_log: list[str] = []     # the same paths in the order first seen: what came after a point is a slice
_written: set[str] = set()
_spawned: list[str] = []
_state: dict[str, Any] = {"installed": False, "armed": False, "report": None, "children": None, "own": 0,
                         "before": (), "changes": None, "installed_folders": ("\0",)}
# Python's own library (and frozen modules): a write made through it is its caller's.
_PYTHONS_OWN = ("<", os.path.join(os.path.dirname(os.__file__), ""))
_own: set[int] = set()     # threads running redfirst's own lookups (not the program's processes)


_readlink = os.readlink     # the original: `_where` reads descriptors' paths through it, unwatched


def _where(path: Any, dir_fd: Any = None) -> str:
    """The absolute path a call given `path` (a name, or an open descriptor) and `dir_fd` (a
    folder's open descriptor, or None: the working folder) looks at. A caller may rely on it
    naming the file the call saw, or raising OSError (no /proc: the read set is then not whole)."""
    if isinstance(path, int):
        return _readlink(f"/proc/self/fd/{path}")
    name = os.fsdecode(path)
    if dir_fd is None or os.path.isabs(name):
        return os.path.abspath(name)
    return os.path.join(_readlink(f"/proc/self/fd/{int(dir_fd)}"), name)


def _note(path: str) -> None:
    if path not in _opened:
        _opened.add(path)
        _opened_log.append(path)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    try:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            access = (flags or 0) & os.O_ACCMODE
            reading = ("r" in mode or "+" in mode) if isinstance(mode, str) else access != os.O_WRONLY
            writing = any(c in mode for c in "wax+") if isinstance(mode, str) else access != os.O_RDONLY
            full = os.path.abspath(os.fsdecode(path))
            if reading:
                _note(full)
            if writing:
                _written.add(full)
                # Appending (a log) leaves what was there; creating or rewriting is a change.
                appending = ("a" in mode and "+" not in mode) if isinstance(mode, str) else \
                    bool((flags or 0) & os.O_APPEND) and access == os.O_WRONLY
                if not appending:
                    _change(full)
        elif event == "os.mkdir":
            path = args[0] if args else None
            if isinstance(path, str | bytes | os.PathLike):
                full = os.path.abspath(os.fsdecode(path))
                if _state["changes"] is not None and not os.path.isdir(full):
                    _change(full)       # makedirs(exist_ok=True) on a folder that is there makes nothing
        elif event == "os.rename":     # os.rename and os.replace: an atomic write's last step
            if len(args) > 1 and isinstance(args[1], str | bytes | os.PathLike):
                _change(os.path.abspath(os.fsdecode(args[1])))
        elif event in ("os.listdir", "os.scandir"):
            # A folder listed (glob, os.walk, iterdir): what is in it is read. Not the import
            # system's listing of each folder on sys.path (FileFinder's cache).
            path = args[0] if args else None
            caller = sys._getframe(1).f_code
            if caller.co_name == "_fill_cache" and caller.co_filename == "<frozen importlib._bootstrap_external>":
                return
            folder = _where(path if path is not None else ".")
            _note(folder)
            if event == "os.scandir" and _users_call():
                # Its entries' DirEntry.stat() (a size, a time) raises nothing: the program's own
                # listing reads each file in the folder (this listing is redfirst's: not noted).
                with contextlib.suppress(OSError), os.scandir(folder) as entries:     # none: the call raises
                    for entry in entries:
                        _note(entry.path)
        elif event == "import":
            if len(args) > 1 and isinstance(args[1], str):
                _note(os.path.abspath(args[1]))
        elif event == "ctypes.dlopen":
            if args and isinstance(args[0], str) and os.sep in args[0]:
                _note(os.path.abspath(args[0]))
        elif event == "ctypes.dlsym" and _users_call():
            # A foreign function the program's own code looks up (libc's open and read) reads
            # what it likes, unseen: the read set is not whole.
            _spawned.append(f"{event} {args[1] if len(args) > 1 else ''}: foreign code reads unseen")
        elif event == "sqlite3.connect":     # opened in C: no open event
            if args and isinstance(args[0], str | bytes | os.PathLike) and os.fsdecode(args[0]) != ":memory:":
                name = os.fsdecode(args[0])
                if name.startswith("file:"):     # a URI (uri=True): the file is its path
                    name = name[len("file:"):].split("?")[0]
                    name = name[2:] if name.startswith("//") else name
                full = os.path.abspath(name)
                _note(full)
                _written.add(full)
                _change(full)
        elif (event in _SPAWN or (event in _FORK and _state["armed"])) and _thread.get_ident() not in _own:
            _spawned.append(event)
    except Exception as e:   # never raise into the watched call: note that the set is not whole
        _spawned.append(f"the read hook failed on {event}: {type(e).__name__}")


def _change(full: str) -> None:
    """A file written or a folder made, noted inside `changes` only, where the code nearest the
    call that is not Python's own library lies under its roots."""
    watching = _state["changes"]
    if watching is None:
        return
    roots, made = watching
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PYTHONS_OWN):
        frame = frame.f_back
    if frame is not None and frame.f_code.co_filename.startswith(roots):
        made.append(full)


@contextlib.contextmanager
def changes(roots: Iterable[str]) -> Iterator[list[str]]:
    """Inside: the files written and folders made by code under `roots`, itself or through
    Python's own library (a warm process's: pytest's and the plugins' own files are theirs).
    Nothing is noted outside, so a run's writes cost no more than before (installed hooks only
    see them)."""
    made: list[str] = []
    saved = _state["changes"]
    _state["changes"] = (tuple(os.path.join(r, "") for r in roots), made)
    try:
        yield made
    finally:
        _state["changes"] = saved


def _watch_fork_exec() -> None:
    # multiprocessing's spawn and forkserver start processes through _posixsubprocess.fork_exec,
    # which raises no audit event: note its calls (subprocess's raise subprocess.Popen too).
    try:
        import _posixsubprocess
    except ImportError:
        return
    original = _posixsubprocess.fork_exec
    if getattr(original, "_gates_read_hook", False):
        return

    def fork_exec(*args: Any, **kwargs: Any) -> Any:
        if _thread.get_ident() not in _own:
            _spawned.append("_posixsubprocess.fork_exec")
        return original(*args, **kwargs)

    fork_exec._gates_read_hook = True  # type: ignore[attr-defined]
    _posixsubprocess.fork_exec = fork_exec


def _installed() -> tuple[str, ...]:
    import sysconfig
    folders = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    folders |= {sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})[k]
                for k in ("purelib", "platlib")}
    folders.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))     # redfirst's own
    return tuple(os.path.join(f, "") for f in sorted(folders))


def _users_call() -> bool:
    """Whether the code nearest this call that is not Python's own library is the program's own
    (a test, a conftest, the code under test): not an installed package's (pytest looking for its
    configuration, a plugin's) nor redfirst's."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PYTHONS_OWN):
        frame = frame.f_back
    return frame is not None and not frame.f_code.co_filename.startswith(_state["installed_folders"])


def _watch_stat() -> None:
    # A file's size, mode or times read without opening it (os.path.getsize, exists, isfile,
    # Path.stat, os.access) raise no audit event: note the paths os.stat, os.lstat and os.access
    # are given by the program's own code (`_users_call`), as files read (what a result rests on
    # is then their content, a superset).
    _state["installed_folders"] = _installed()
    for name in ("stat", "lstat", "access", "readlink", "open"):
        original = getattr(os, name)
        if getattr(original, "_gates_read_hook", False):
            continue

        def watched(path: Any, *args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            dir_fd = kwargs.get("dir_fd")
            # os.open's audit event names the path alone: one relative to a folder's descriptor
            # is noted here (the event noted it under the working folder, a path not looked at).
            if isinstance(path, str | bytes | os.PathLike) and (_name != "open" or dir_fd is not None):
                try:
                    if _users_call():
                        _note(_where(path, dir_fd))
                except Exception as e:
                    _spawned.append(f"os.{_name} of a path the read hook could not place: {type(e).__name__}")
            return _original(path, *args, **kwargs)

        watched._gates_read_hook = True  # type: ignore[attr-defined]
        if getattr(posix, name, None) is original:
            setattr(posix, name, watched)      # `posix.stat` is os.stat by another name
        for supports in (os.supports_dir_fd, os.supports_fd, os.supports_follow_symlinks, os.supports_effective_ids):
            if original in supports:
                supports.add(watched)      # what shutil and os.walk test (`os.stat in os.supports_dir_fd`)
        setattr(os, name, watched)


@contextlib.contextmanager
def redfirst_own() -> Iterator[None]:
    """A process redfirst's own plugin starts in this thread (git, to find the project of a
    YAML file pytest visits): not one the program under test started."""
    me = _thread.get_ident()
    _own.add(me)
    before = _children_reaped()
    try:
        yield
    finally:
        _own.discard(me)
        _state["own"] += _children_reaped() - before     # its children are not the run's


def install() -> None:
    """Note reads from now on in this process and in the forks it makes (a warm process calls
    this before it imports the code under test, so its forks inherit what that read)."""
    if not _state["installed"]:
        _state["installed"] = True
        # What they read as they were imported was not seen (redfirst's own modules, a warm
        # process's __main__ among them, read nothing there).
        ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep     # the redfirst package
        _state["before"] = tuple(sorted(f for f in _module_files(sys.modules) if not f.startswith(ours)))
        # What `start` and `report` use to count child processes, imported before anything is
        # noted: a run that imports it first does not read it as the run's.
        with contextlib.suppress(ImportError):
            import resource  # noqa: F401
        sys.addaudithook(_hook)
        _watch_fork_exec()
        _watch_stat()


def start() -> None:
    """Where the runner asked for a report ($GATES_READS): install, arm (a fork from here on
    counts as a process started) and take the variable out of the environment, so a program
    the run starts never reports into the same file."""
    target = os.environ.pop(ENV, None)
    if target is None:
        return
    install()
    _state["armed"] = True
    _state["report"] = target
    _state["children"] = _children_reaped() - _state["own"]


def _module_files(names: Any) -> set[str]:
    # A name that is no path (an import hook's, '<stdin>') names no file.
    files = (getattr(sys.modules.get(name), "__file__", None) for name in list(names))
    return {f for f in files if isinstance(f, str) and os.path.isabs(f)}


def _children_reaped() -> int:
    try:
        import resource
    except ImportError:
        return 0
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt


def _live_children() -> bool:
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                if f.read().strip():
                    return True
        except OSError:
            continue
    return False


_real_folders: dict[str, str] = {}   # folder -> its realpath + sep, kept for the process (and its forks)


def prime() -> None:
    """In a warm process, once it has imported what its forks inherit: what it imported and
    opened so far, outside the installed packages, worked out once; a fork's report adds only
    what came after."""
    primed = _state.get("primed")
    if primed is not None and len(primed[0]) == len(sys.modules) and primed[1] == len(_opened_log):
        return      # nothing imported or opened since (both only grow)
    packages = _package_folders()
    kept = _not_installed({*_opened, *_module_files(sys.modules)}, packages)
    # Each fork reports these (and what it adds): sorted once here, not in every fork.
    _state["primed"] = (frozenset(sys.modules), len(_opened_log), frozenset(kept), tuple(kept))
    _state["unseen"] = _not_installed(_state["before"], packages)


def _read_files(packages: list[str], extra: Iterable[str]) -> list[str]:
    """Every file this process opened or imported, outside the installed packages."""
    primed = _state.get("primed")
    if primed is None:
        return _not_installed({*_opened, *_module_files(sys.modules), *extra}, packages)
    modules, opened, kept, in_order = primed
    # What was opened since is the log's tail; the primed list is sorted: merged, not sorted again.
    new = {*_opened_log[opened:], *_module_files(sys.modules.keys() - modules), *extra}
    added = _not_installed(new.difference(kept), packages)
    return list(heapq.merge(in_order, added)) if added else list(in_order)


def report(extra: tuple[str, ...] = ()) -> None:
    """Write what this run read to the file the runner named (once); `extra`: files the caller
    knows the run read before the hook was in place (pytest's ini file)."""
    target = _state["report"]
    if target is None:
        return
    _state["report"] = None
    packages = _package_folders()
    # What the run read and wrote, taken before the look for child processes below (its reads of
    # /proc are the hook's own, not the run's).
    opened = _read_files(packages, (os.path.abspath(f) for f in extra))
    written = _not_installed(_written, packages)
    spawned = list(_spawned)
    if _state["children"] is not None and _children_reaped() - _state["own"] != _state["children"]:
        spawned.append("a child process ended")    # one no event named (started from native code)
    if _live_children():
        spawned.append("a child process is still running")
    unseen = _state.get("unseen")
    import json

    try:
        with open(target, "x", encoding="utf-8", errors="surrogateescape") as f:
            f.write(json.dumps({"opened": opened, "written": written, "spawned": spawned,
                                "imported_unseen": unseen if unseen is not None else
                                _not_installed(_state["before"], packages),
                                "installed": sorted({*packages, sys.prefix, sys.exec_prefix}), "pid": os.getpid()}))
    except (OSError, ValueError):
        # Never the run's failure; a partial report, or one not this run's, is no report (UNKNOWN).
        with contextlib.suppress(OSError):
            os.unlink(target)


def _package_folders() -> list[str]:
    """Where the standard library and installed packages are: no more the tree than anything
    else outside it, even in a virtual environment under the root. Looked up once per process
    (a warm process's forks inherit it)."""
    known: list[str] | None = _state.get("packages")
    if known is None:
        known = _state["packages"] = _find_package_folders()
    return known


def _find_package_folders() -> list[str]:
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    found = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    with contextlib.suppress(AttributeError):
        found.update(site.getsitepackages())
    return sorted(os.path.abspath(p) for p in found)


def _not_installed(paths: Iterable[str], packages: list[str]) -> list[str]:
    """`paths` but those of installed packages (one reached through a symbolic link from
    elsewhere, as some editable installs make, is kept). Keeps the report small."""
    inside = tuple(p + os.sep for p in packages)
    real = _real_folders
    kept = []
    for path in paths:
        folder = os.path.dirname(path)
        if folder not in real:
            real[folder] = os.path.realpath(folder) + os.sep
        if not (path.startswith(inside) and real[folder].startswith(inside)):
            kept.append(path)
    return sorted(kept)
