"""Driver `pytest-warm`: pytest in a child forked from a warm process.

The warm process (one per root, working folder, preload list and gate environment, a
child of the process that runs gates) imports pytest, the modules named in `preload:`,
the third-party modules the test files import, and collects the gate's test files; later
gates' test files are collected the same way while the tree is as it was at warm-up.
Each run hands the warm process its stdin, stdout, stderr and environment (from the
runner itself, or `python -S -c CLIENT` for a person), and the warm process forks. The
fork runs pytest with exactly the arguments of driver `pytest` when the tree is what the
warm process imported, or differs only in function bodies it can patch in place
(warm_patch); any other change makes the fork exec a fresh `python -m pytest`. Grading is
driver `pytest`'s.

The fork is a child subreaper and stops what its run started before it answers; the warm
process is one too, and stops what a fork that died left behind. A run whose client goes
away (timeout) has its fork's process group killed. A warm process that breaks with no
answer given is exit 3 (pytest's "internal error": ERROR, never a RED that could pass for
a kill).
"""

from __future__ import annotations

import ast
import atexit
import functools
import gc
import importlib
import importlib.util
import marshal
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gates import process
from gates.drivers import Driver, Invocation, warm_patch
from gates.drivers.pytest import JUNIT_NAME, pytest_argv
from gates.model import Gate
from gates.verdict import Outcome

INTERNAL_ERROR = 3            # pytest's own code for an internal error: graded ERROR
READY_TIMEOUT_S = 120.0
IDLE_EXIT_S = 600.0
RUN_MARKER = "REDFIRST_RUN"   # gates.process marks every process of a run with it
_HEADER = struct.Struct("!Q")


# -- the driver (runs in the process that runs gates) -----------------------------------

class _Warm:
    def __init__(self, proc: subprocess.Popen[bytes], sock: Path) -> None:
        self.proc, self.sock = proc, sock


_servers: dict[tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...]], _Warm] = {}
_lock = threading.Lock()                 # guards _locks
_locks: dict[tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...]], threading.Lock] = {}


def _stop_all() -> None:
    for warm in _servers.values():
        if warm.proc.poll() is None:
            warm.proc.kill()
            warm.proc.wait()


atexit.register(_stop_all)


def warm_process(root: Path, cwd: Path, preload: Sequence[str], test_paths: Sequence[str],
                 gate_env: Sequence[tuple[str, str]] = ()) -> Path | None:
    """The socket of a ready warm process for this root, folder, preload list and gate
    environment (import-time code may read it); started when there is none; None when it
    cannot start."""
    key = (str(root), str(cwd), tuple(preload), tuple(gate_env))
    with _lock:
        lock = _locks.setdefault(key, threading.Lock())
    # One lock per warm process: two workers' worktrees start theirs at the same time.
    with lock:
        warm = _servers.get(key)
        if warm is not None and warm.proc.poll() is None:
            return warm.sock
        folder = Path(tempfile.mkdtemp(prefix="rf-warm-"))
        sock = folder / "s"
        # Not part of any run's process tree: the runner's kill of a finished run must spare it.
        env = {**{k: v for k, v in os.environ.items() if k != RUN_MARKER}, **dict(gate_env)}
        argv = [sys.executable, "-m", "gates.drivers.pytest_warm", "--serve", str(sock), "--root", str(root),
                "--preload", ",".join(preload), "--", *test_paths]
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
        line = proc.stdout.readline() if ready else b""
        proc.stdout.close()
        if line.strip() != b"ready":
            proc.kill()
            proc.wait()
            return None
        _servers[key] = _Warm(proc, sock)
        return sock


class WarmPytestDriver(Driver):
    name = "pytest-warm"
    default_format = "junit"
    option_keys: frozenset[str] = frozenset({"preload"})
    counts_format = "junit"
    runner = "pytest"

    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation:
        junit = evidence_dir.parent / JUNIT_NAME
        cwd = (root / gate.driver.cwd).resolve()
        cold = pytest_argv(gate, junit, brief)
        run = gate.driver.run
        tests = run.split() if isinstance(run, str) else list(run)
        sock = warm_process(root.resolve(), cwd, tuple(gate.driver.option("preload") or ()), tests, gate.driver.env)
        if sock is None:
            # No warm process: the same pytest, cold. Slower, the same verdict.
            return Invocation(argv=cold, cwd=cwd, junit=junit)
        argv = (sys.executable, "-S", "-c", CLIENT, str(sock), *tests, "--", *cold[3:])
        return Invocation(argv=argv, cwd=cwd, junit=junit, in_process=functools.partial(request, sock, tests,
                                                                                          cold[3:]))

    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None:
        return None

    def exit_problem(self, gate: Gate, code: int | None, stderr: str) -> Outcome | None:
        from gates.drivers.pytest import not_installed

        return not_installed(gate, code, stderr)


DRIVER = WarmPytestDriver()


# -- the client -------------------------------------------------------------------------

def request(sock: Path, tests: Sequence[str], args: Sequence[str], cwd: Path, env: dict[str, str],
            stdout: Path, stderr: Path, timeout: float,
            while_running: Callable[[], None] | None = None) -> process.Exited:
    """What CLIENT does, from the process that runs gates (no interpreter to start): hand
    the warm process the run's stdin, stdout and stderr and environment, and wait for the
    fork's end, the timeout, or the warm process's failure (exit 3: ERROR, never RED).
    `while_running` is called once the request is handed over (the caller's other work
    overlaps the run; the duration is the warm process's measure of the fork). Anything
    of the run still alive afterwards (the run marker finds what left the fork's process
    group) is killed, as process.run does for its own programs."""
    marker = process.new_marker()
    env = {**env, process.RUN_MARKER: marker}
    start = time.monotonic()
    exited: process.Exited | None = None
    raised: BaseException | None = None
    clean = False
    with open(stdout, "wb") as out, open(stderr, "wb") as err, open(os.devnull, "rb") as null, \
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            conn.connect(str(sock))
            body = marshal.dumps({"args": list(args), "tests": list(tests), "cwd": str(cwd), "env": env})
            _send(conn, body, [null.fileno(), out.fileno(), err.fileno()])
        except OSError as e:
            err.write(f"pytest-warm: the warm process failed: {e}\n".encode())
            exited = process.Exited(True, INTERNAL_ERROR, None, False, time.monotonic() - start)
        if while_running is not None:
            try:
                while_running()
            except BaseException as e:  # this run still ends properly first
                raised = e
        if exited is None:
            try:
                ready, _, _ = select.select([conn], [], [], max(0.0, timeout - (time.monotonic() - start)))
                if not ready:
                    exited = process.Exited(True, None, None, True, time.monotonic() - start)
                else:
                    status = marshal.loads(_receive(conn)[0])
                    clean = bool(status.get("clean"))
                    code, sig = status.get("exit"), status.get("signal")
                    exited = process.Exited(True, INTERNAL_ERROR if code is None and sig is None else code, sig,
                                            False, float(status.get("seconds", time.monotonic() - start)))
            except (OSError, ConnectionError, ValueError, EOFError, TypeError) as e:
                err.write(f"pytest-warm: the warm process failed: {e}\n".encode())
                exited = process.Exited(True, INTERNAL_ERROR, None, False, time.monotonic() - start)
    # The connection is closed: a warm process still running the fork kills its group.
    # Unless the fork stopped all it started (it said so), look for the run's marker.
    if not clean:
        process.kill_marked(marker)
    if raised is not None:
        raise raised
    return exited


def _send(conn: socket.socket, payload: bytes, fds: Sequence[int] = ()) -> None:
    data = _HEADER.pack(len(payload)) + payload
    sent = socket.send_fds(conn, [data], list(fds)) if fds else conn.send(data)
    conn.sendall(data[sent:])


def _receive(conn: socket.socket, with_fds: int = 0) -> tuple[bytes, list[int]]:
    fds: list[int] = []
    if with_fds:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 16, with_fds)
    else:
        data = conn.recv(1 << 16)
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
        more = conn.recv(1 << 16)
        if not more:
            raise ConnectionError("connection closed mid-message")
        data += more
    size = _HEADER.unpack_from(data)[0]
    return data[_HEADER.size:_HEADER.size + size], fds


# Run as `python -S -c CLIENT SOCK TESTS -- ARGS`: built-in modules only (marshal, _socket,
# _signal) and no site import, so a run costs one bare interpreter start (about 10 ms;
# json and socket would double it). Same framing as _send/_receive; the socket sits in a
# folder only this user can enter.
CLIENT = r"""
import marshal, os, sys, time, _signal, _socket
def main(sock, tests, args):
    try:
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        conn.connect(sock)
        body = marshal.dumps({"args": args, "tests": tests, "cwd": os.getcwd(), "env": dict(os.environ)})
        data = len(body).to_bytes(8, "big") + body
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2))
        sent = conn.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        while sent < len(data):
            sent += conn.send(data[sent:])
        answer = b""
        while len(answer) < 8 or len(answer) < 8 + int.from_bytes(answer[:8], "big"):
            more = conn.recv(65536)
            if not more:
                raise ConnectionError("the warm process closed the connection")
            answer += more
        status = marshal.loads(answer[8:8 + int.from_bytes(answer[:8], "big")])
    except (OSError, ConnectionError, ValueError, EOFError, TypeError) as e:
        print("pytest-warm: the warm process failed: %s" % e, file=sys.stderr)
        return 3
    if status.get("signal"):
        sys.stdout.flush()
        _signal.signal(status["signal"], _signal.SIG_DFL)
        os.kill(os.getpid(), status["signal"])
        time.sleep(1)
    return int(status.get("exit", 3))
cut = sys.argv.index("--")
sys.exit(main(sys.argv[1], sys.argv[2:cut], sys.argv[cut + 1:]))
"""


# -- the warm process ---------------------------------------------------------------------

def _third_party_imports(test_paths: Sequence[str], root: Path) -> list[str]:
    """Top-level modules the test files import that live outside the root."""
    files: list[Path] = []
    for p in test_paths:
        path = Path(p.split("::")[0])
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.suffix == ".py" else [])
    names: set[str] = set()
    for file in files[:200]:
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
    for name in sorted(names):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        origin = spec.origin if spec else None
        if origin and origin not in ("built-in", "frozen") and not _under(Path(origin), root):
            outside.append(name)
    return outside


def _under(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
        return True
    except ValueError:
        return False


_root_modules: dict[str, str] = {}   # module name -> file, for the warm modules under the root
_tree_at_warmup: dict[str, tuple[int, int]] = {}   # file under the root -> (mtime_ns, size)
_warmup = warm_patch.Warmup()                       # what ran at warm-up; the root's functions


# Folders no test reads its code or data from: version control, caches, environments.
_NOT_SOURCE = frozenset({".git", ".hg", ".svn", ".venv", ".tox", ".nox", ".eggs", ".mypy_cache", ".pytest_cache",
                         ".ruff_cache", ".redfirst", "__pycache__", "node_modules"})


def _tree_stat(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under the root (version control, caches and environments aside) with its
    stat."""
    seen: dict[str, tuple[int, int]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _NOT_SOURCE]
        for name in files:
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            seen[path] = (st.st_mtime_ns, st.st_size)
    # Every module the warm process holds, wherever the walk did not go (a hidden folder,
    # a folder reached through a link): a fork keeps modules whose file is not listed.
    for file in _root_modules.values():
        path = os.path.abspath(file)
        if path not in seen:
            try:
                st = os.stat(path)
            except OSError:
                continue
            seen[path] = (st.st_mtime_ns, st.st_size)
    return seen


def _note_root_modules(root: Path) -> None:
    """After warm-up: the modules the warm process holds from under the root (new ones
    only: a later warm-up runs on the same tree)."""
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name in _root_modules or name in _elsewhere:
            continue      # seen at an earlier warm-up, on the same tree
        if not file or not _under(Path(file), root):
            _elsewhere.add(name)
        else:
            _root_modules[name] = file
    _tree_at_warmup.clear()
    _tree_at_warmup.update(_tree_stat(root))


_request_changed: list[set[str]] = []   # what the warm process found changed for this run
_elsewhere: set[str] = set()             # modules not from under the root


def _changed_files(root: Path) -> set[str]:
    """Files under the root whose stat differs from the warm-up's (added and removed
    ones included)."""
    now = _tree_stat(root)
    return {p for p in now.keys() | _tree_at_warmup.keys() if now.get(p) != _tree_at_warmup.get(p)}


def _warm_enough(root: Path) -> bool:
    """Whether this fork may run the tree as it is now without importing anything again:
    nothing under the root changed, or only module files, each only in function bodies
    nothing touched at warm-up, whose live functions now get the new code in place
    (warm_patch). Otherwise the fork must become a fresh interpreter: importing again in
    this process would run import-time code a second time (a registry that refuses a
    second entry, a start method already set), which a fresh import never does."""
    if _cold_only:
        return False
    # The warm process looked just before it forked this run.
    changed = _request_changed[0] if _request_changed else _changed_files(root)
    if not changed <= {os.path.abspath(f) for f in _root_modules.values()}:
        return False     # a data file a module may have read at import, a new file
    return all(warm_patch.patch(_warmup, sys.modules[name]) for name, file in _root_modules.items()
               if os.path.abspath(file) in changed and name in sys.modules)


_cold_only = ""     # why no fork may run warm (the warm-up left threads or processes running)
_forks_made = 0


_PR_SET_CHILD_SUBREAPER = 36
_LIBC: Any = None                  # loaded by the warm process: prctl in its forks


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return found


def _stop_below(keep: frozenset[int] = frozenset()) -> bool:
    """Stop every process below this one except the children in `keep` (and what is below
    them), as process.run does for a program's tree: SIGTERM, up to half a second's
    grace, SIGKILL; our own children that ended are reaped by pid (never waitpid(-1),
    which would take a kept child's status). True when none is left.

    In a fork: everything its run started (the fork is a subreaper, so what left its
    process group or session is still below it). In the warm process, keeping the live
    forks: what dead forks left (their leftovers come up to us when a fork dies, and
    only then)."""
    me = os.getpid()
    deadline = time.monotonic() + 0.5
    warned: set[int] = set()
    for _ in range(1000):
        for pid in _children(me):
            if pid not in keep:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        tree, stack = [], [pid for pid in _children(me) if pid not in keep]
        while stack:
            pid = stack.pop()
            tree.append(pid)
            stack.extend(_children(pid))
        if not tree:
            return True
        late = time.monotonic() >= deadline
        for pid in tree:
            if late or pid not in warned:
                warned.add(pid)
                try:
                    os.kill(pid, signal.SIGKILL if late else signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
        time.sleep(0.005)
    return False


def _run_child(raw: bytes, fds: list[int], root: Path, report: int, conn: socket.socket,
               forked_at: float) -> None:
    code = INTERNAL_ERROR
    reaper = False
    try:
        request = marshal.loads(raw)
        os.setpgid(0, 0)
        # Whatever the run starts and orphans is re-parented here, not to init: at the end
        # the fork can stop it all itself (no scan of every process for the run marker).
        reaper = _LIBC is not None and _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
        args = list(request["args"])
        if not _warm_enough(root):
            # The same pytest as driver `pytest`, in a fresh interpreter (this process, so
            # the warm process still waits for it and adopts what it leaves).
            sys.stdout.flush()
            sys.stderr.flush()
            os.execve(sys.executable, [sys.executable, "-m", "pytest", *args], dict(os.environ))
        sys.argv = ["pytest", *args]
        sys.path[0] = request["cwd"]
        import pytest

        plugins: list[Any] = []
        if "gates.pytest_plugin" in args and args[args.index("gates.pytest_plugin") - 1] == "-p":
            # The same plugin, handed over imported: `-p NAME` makes pytest search every
            # installed distribution's entry points for NAME first, on every run.
            import gates.pytest_plugin

            del args[args.index("gates.pytest_plugin") - 1:args.index("gates.pytest_plugin") + 1]
            plugins.append(gates.pytest_plugin)
        code = int(pytest.main(args, plugins=plugins))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else INTERNAL_ERROR
    except BaseException as e:  # the fork must never return into the server loop
        print(f"pytest-warm: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            clean = reaper and _stop_below()
            # The answer goes straight to the runner, which need not wait for this process
            # to be torn down; the warm process learns through the pipe that it was sent
            # (and answers itself for a fork that never gets here: a signal).
            try:
                _send(conn, marshal.dumps({"exit": code, "clean": clean,
                                           "seconds": time.monotonic() - forked_at}))
                os.write(report, b"A")
            except OSError:
                if clean:     # nothing of this run is left
                    os.write(report, b"1")
        finally:
            os._exit(code)


def _collect(test_paths: Sequence[str]) -> None:
    """Warm-up as mutmut's default does: a collection pass imports conftest files and
    plugins once; its output goes nowhere."""
    import pytest

    saved = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *test_paths])
    except BaseException:  # a broken collection is the real run's to report
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, devnull):
            os.close(fd)


def _under_root(name: str, root: Path) -> bool:
    """Whether a top-level module lives under the root (unknown counts as under it).
    Only the top-level name is looked up: finding `a.b` would import `a`."""
    try:
        spec = importlib.util.find_spec(name.split(".")[0])
    except (ImportError, ValueError):
        return True
    origin = spec.origin if spec else None
    if origin in ("built-in", "frozen"):
        return False
    return origin is None or _under(Path(origin), root)


_warmed: set[str] = set()     # test paths collected in the warm process


def _settle(root: Path, test_paths: Sequence[str]) -> None:
    """After a warm-up: note the root's modules and their functions, then move every warm
    object out of the collector's reach, so a fork's gc.collect (pytest runs several)
    neither walks nor copies them."""
    global _cold_only
    _warmed.update(p.split("::")[0] for p in test_paths)
    # A fork has only the thread that forked it, and processes started at import are not
    # its own: a warm-up that left either cannot be copied faithfully.
    if threading.active_count() > 1:
        _cold_only = f"the warm-up left {threading.active_count() - 1} thread(s) running"
    elif not _forks_made and _children(os.getpid()):
        # (Once forks exist they are children too, some still exiting.)
        _cold_only = "the warm-up left processes running"
    _note_root_modules(root)
    _warmup.index((name, os.path.abspath(file)) for name, file in _root_modules.items())
    gc.collect()
    gc.freeze()


def _tree_unchanged(root: Path) -> bool:
    """Whether every file under the root holds what it held at warm-up (a file rewritten
    with the same bytes, as a restore does, counts as unchanged where its bytes were kept)."""
    now = _tree_stat(root)
    if now.keys() != _tree_at_warmup.keys():
        return False
    for path, stat in now.items():
        if stat != _tree_at_warmup[path]:
            kept = _warmup.sources.get(path)
            try:
                if kept is None or Path(path).read_bytes() != kept:
                    return False
            except OSError:
                return False
    return True


def _extend(root: Path, test_paths: Sequence[str]) -> None:
    """Collect test paths no run has asked for yet in the warm process itself, so every
    later fork finds their modules imported (a baseline runs each gate once, before any
    mutation). Only on a tree that is as it was at warm-up: a mutated module must never
    become part of the warm process."""
    # By file: a gate naming one test of a file warms the whole file for the next one.
    new = list(dict.fromkeys(p.split("::")[0] for p in test_paths if p.split("::")[0] not in _warmed))
    if not new or not _tree_unchanged(root):
        return
    _warmup.start()
    try:
        _collect(new)
    finally:
        _warmup.stop()
    _settle(root, new)


def serve(sock: str, root: Path, preload: Sequence[str], test_paths: Sequence[str]) -> int:
    global _LIBC, _forks_made
    try:
        import ctypes

        _LIBC = ctypes.CDLL(None, use_errno=True)
        # A fork that dies before it stops what it started (killed, os._exit) hands that
        # to us, not to init: _stop_below finds it. Refused: no claim of clean runs.
        if _LIBC.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            _LIBC = None
    except (OSError, ImportError, AttributeError):
        _LIBC = None      # no prctl: the runner looks for the run's leftovers itself
    import _pytest.junitxml  # noqa: F401
    import _pytest.python  # noqa: F401
    import pytest  # noqa: F401  (warm: imported once, inherited by every fork)

    # The plugin every pytest-family run loads (`-p gates.pytest_plugin`): imported once here.
    preload = [*preload, "gates.pytest_plugin"]
    ours = [name for name in preload if _under_root(name, root)]
    for name in [*(n for n in preload if n not in ours), *_third_party_imports(test_paths, root), None, *ours]:
        if name is None:
            # From here on the root's code is imported: note what of it runs (warm_patch).
            _warmup.start()
            continue
        try:
            importlib.import_module(name)
        except Exception:
            # A module that does not import is the test run's to report, not ours.
            continue
    try:
        _collect(test_paths)
    finally:
        _warmup.stop()
    _settle(root, test_paths)
    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock)
    listener.listen(64)
    print("ready", flush=True)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    running: dict[socket.socket, int] = {}
    exits: dict[int, int] = {}    # pidfd -> pid: readable the moment the fork exits
    forked: dict[int, float] = {}  # pid -> when it was forked
    reports: dict[int, int] = {}   # pid -> read end of its pipe: b"1" once nothing of it is left
    last = time.monotonic()
    while True:
        watched: list[Any] = [listener, *running, *exits]
        readable, _, _ = select.select(watched, [], [], 0.5)
        for conn in readable:
            if isinstance(conn, int):
                continue
            if conn is listener:
                client_conn, _ = listener.accept()
                request, fds = _receive(client_conn, with_fds=3)
                _request_changed.clear()
                try:
                    _extend(root, marshal.loads(request)["tests"])
                    # The old version of each edited module, parsed once here rather than
                    # in every fork (warm_patch.Shape).
                    _request_changed[:] = [_changed_files(root)]
                    _warmup.prepare(_request_changed[0])
                except Exception:   # a bad request or a broken collection: the run reports it
                    pass
                sys.stdout.flush()
                sys.stderr.flush()
                report_r, report_w = os.pipe()
                forked_at = time.monotonic()
                _forks_made += 1
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for other in running:
                        other.close()
                    for fd in reports.values():
                        os.close(fd)
                    os.close(report_r)
                    _run_child(request, fds, root, report_w, client_conn, forked_at)
                os.close(report_w)
                os.set_blocking(report_r, False)
                reports[pid] = report_r
                for fd in fds:
                    os.close(fd)
                running[client_conn] = pid
                forked[pid] = forked_at
                exits[os.pidfd_open(pid)] = pid
            elif _gone(conn):
                # The client is gone (killed for a timeout): so is its run.
                _kill_group(running[conn])
        for conn, pid in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                answer: dict[str, Any] = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else \
                    {"exit": os.WEXITSTATUS(status)}
                answer["seconds"] = time.monotonic() - forked.pop(pid, time.monotonic())
                report = reports.pop(pid)
                try:
                    # Written before the fork exited, or never: a helper the run forked may
                    # still hold the write end, so never wait for more.
                    said = os.read(report, 1)
                except BlockingIOError:
                    said = b""
                finally:
                    os.close(report)
                _kill_group(pid)
                answer["clean"] = said == b"1" or (said != b"A" and _LIBC is not None
                                                   and _stop_below(frozenset(running.values())))
                for fd in [fd for fd, p in exits.items() if p == pid]:
                    os.close(fd)
                    del exits[fd]
                if said != b"A":        # the fork did not answer itself
                    try:
                        _send(conn, marshal.dumps(answer))
                    except OSError:
                        pass
                conn.close()
                del running[conn]
                last = time.monotonic()
        if os.getppid() != parent or (not running and time.monotonic() - last > IDLE_EXIT_S):
            # The process that ran gates is gone: no one will read these runs.
            for pid in running.values():
                _kill_group(pid)
            return 0


def _gone(conn: socket.socket) -> bool:
    try:
        return not conn.recv(1, socket.MSG_PEEK)
    except OSError:
        return True


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    rest = args[args.index("--") + 1:] if "--" in args else []
    if args[:1] == ["--serve"]:
        root = Path(args[args.index("--root") + 1]).resolve()
        preload = [p for p in args[args.index("--preload") + 1].split(",") if p]
        return serve(args[1], root, preload, rest)
    print("usage: python -m gates.drivers.pytest_warm --serve SOCK --root R --preload M,N -- TESTS",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

