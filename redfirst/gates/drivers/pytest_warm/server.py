"""The warm process: `python -m redfirst.gates.drivers.pytest_warm --serve SOCK --root R --preload
M,N -- TESTS`, a child of the process that runs gates.

It imports pytest, the modules named in `preload:`, the third-party modules the test
files import, and collects the gate's test files (imported.Imported keeps what came from
under the root). Each request forks a child that runs pytest with the request's
arguments, descriptors, folder and environment: in place when the tree is what the warm
process imported or differs only in function bodies the patcher can swap, else by
exec'ing a fresh `python -m pytest`. The fork answers the runner itself; the warm process
answers for a fork that died without answering, and stops what dead forks left. While a run
goes on, a standby (standby.py) is forked and collects the next run, guessed to be this one
again; the next request goes to it where it is the fork this process would make then.
"""

from __future__ import annotations

import contextlib
import importlib
import marshal
import os
import select
import socket
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from redfirst.gates import read_hook
from redfirst.gates.drivers.pytest_warm import as_cold, prepared, reaper, standby, wire
from redfirst.gates.drivers.pytest_warm.imported import (
    Imported,
    collect_outside,
    collect_repeatably,
    one_use_cases,
    third_party_imports,
    under_root,
)
from redfirst.gates.drivers.pytest_warm.preconfig import Prebuilt

IDLE_EXIT_S = 600.0


class Server:
    """One warm process: what it imported, whether it is a child subreaper, and the
    request being forked."""

    def __init__(self, sock: str, root: Path) -> None:
        self.sock = sock
        self.root = root
        self.imported = Imported(root)
        self.libc: Any = None     # the C library once this process is a child subreaper: prctl in its forks
        self.dispositions: dict[int, Any] = {}    # signal dispositions once the project is imported (as_cold)
        self.forks_made = 0
        # What the warm process found changed for the request it is forking (None: a fork
        # looks for itself).
        self.changed: set[str] | None = None
        self.prebuilt: Prebuilt | None = None     # pytest's config, built here once, used by forks
        self.sessions = prepared.Sessions()       # sessions made ready up to their first test, run by forks
        self.standby: standby.Standby | None = None   # the next run's fork, collected ahead (standby.py)
        self.dropped: list[int] = []              # standbys killed, not yet reaped
        self.ahead: prepared.Ahead | None = None  # in a standby: its collection, made
        # (folder, test files) -> whether a fork's collection of them, profiled, ran none of the
        # project's code: only then is a standby made for them (standby.py)
        self.clean: dict[tuple[str, frozenset[str]], bool] = {}
        self.unions: set[tuple[str, ...]] = set()     # sessions whose test files were probed at once (probe_union)

    def warm_up(self, preload: Sequence[str], test_paths: Sequence[str]) -> None:
        # Before anything under the root is imported: what it reads as it is imported lands
        # in every fork's read set (the result cache keys mutations by what their gates read).
        read_hook.install()
        self.imported.seeds.start()
        # A fork that dies before it stops what it started (killed, os._exit) hands that to
        # us, not to init: reaper.stop_below finds it. Refused: no claim of clean runs.
        self.libc = reaper.subreaper_libc()
        import _pytest.junitxml
        import _pytest.python  # noqa: F401
        import pytest  # (warm: imported once, inherited by every fork)

        # JUnit's escape compiles its pattern on every call (`re` caches it): compiled once here,
        # not in every fork (a fifth of a short run's cost).
        _pytest.junitxml.bin_xml_escape("")

        # The plugin every pytest-family run loads (`-p redfirst.gates.pytest_plugin`): imported once here.
        preload = [*preload, "redfirst.gates.pytest_plugin"]
        ours = [name for name in preload if under_root(name, self.root)]
        # Outside pytest's session and its warning filters: a warning at import is what a cold run's
        # filters decide on (`filterwarnings = error`), so a module that warns is never imported here.
        warned = imports_in_silence([*(n for n in preload if n not in ours), *third_party_imports(test_paths, self.root)])
        if warned:
            self.imported.cold_only = warned
        # pytest's plugins import more as a session runs (Hypothesis's at its summary): done once
        # here, outside the root and before noting, not under the profile hook.
        collect_outside(self.root)
        # From here on the root's code runs: note what of it runs (patcher), and what it writes
        # and reads of the environment (Imported.root_code), as pytest runs it (PYTEST_VERSION set).
        os.environ["PYTEST_VERSION"] = pytest.__version__
        self.imported.warmup.start()
        try:
            with self.imported.root_code("the warm-up"):
                for name in ours:
                    _import(name)
                with one_use_cases(self.imported.one_use):
                    collect_repeatably(test_paths, self.imported.one_use, self.root)
        finally:
            self.imported.warmup.stop()
            os.environ.pop("PYTEST_VERSION", None)
        if self.prebuilt is None:
            self.prebuilt = Prebuilt.build()
        self.imported.settle(test_paths, self.forks_made > 0)
        self.dispositions = as_cold.settle()
        read_hook.prime()

    def prepare(self, request: dict[str, Any]) -> None:
        """Make the session this request runs ready up to its first test (prepared.py), once per
        folder and arguments, where the tree differs from the warm-up's at most in modules
        imported here (so nothing edited is imported into this process) and nothing made
        a fork run cold."""
        k = prepared.key(request["cwd"], request["args"])
        if k is None or k in self.sessions.refused or self.sessions.get(k) is not None or self.imported.cold_only:
            return
        if self.changed is None or not self.imported.only_modules(self.changed):
            return
        args, plugins = prepared.with_plugin_objects(request["args"])
        with self.imported.warmup.calls() as ran, self.imported.root_code("making a session"):
            made = prepared.Prepared.make(args, plugins, request["cwd"], request["env"], self.root)
        if isinstance(made, prepared.Prepared):
            try:
                made.reaches = prepared.reached(ran, self.root)
            except Exception:   # not known: no fork that patches a module takes this session
                made.reaches = None
        self.imported.adopt()
        self.sessions.add(k, made)

    def generation(self) -> tuple[Any, ...]:
        """What a fork inherits from this process that a request can change (a later gate's tests
        collected, a session made or refused, modules imported): a standby made under another
        one is not the fork this process would make now."""
        return (len(self.imported.collected), len(self.imported.modules), len(self.imported.warmup.ran),
                len(self.imported.warmup.functions), tuple(self.sessions.kept), len(self.sessions.refused),
                self.imported.cold_only, len(sys.modules))

    def take(self, raw: bytes, conn: socket.socket, fds: list[int], forked_at: float) -> tuple[int, int] | None:
        """Work out what the warm process knows of this request (its gate's tests collected here,
        what changed in the tree, its session made) and hand it to the standby where that one
        runs it as a fork would (standby.py): its pid and report pipe; else None (and no standby
        is left), and the request is forked."""
        self.changed = None
        waiting, self.standby = self.standby, None
        handed = False
        try:
            request = marshal.loads(raw)
            self.imported.extend(request["tests"], self.forks_made > 0)
            self.changed = self.imported.changed_files()
            if waiting is not None:
                k = prepared.key(request["cwd"], request["args"])
                handed = waiting.takes(request, self.changed, self.generation(),
                                       self.sessions.kept.get(k) if k else None,
                                       not self.imported.cold_only and self.imported.env_fits(request["env"]),
                                       self.imported.only_modules(self.changed)) \
                    and waiting.hand_over(raw, conn, fds, self.changed, forked_at)
                if handed:
                    return waiting.pid, waiting.report
            # The old version of each edited module, parsed once here rather than in every fork
            # (patcher.Shape).
            self.imported.warmup.prepare(self.changed)
            self.prepare(request)
            read_hook.prime()       # what a collection or a session made here imported
        except Exception:   # a bad request or a broken collection: the run reports it
            pass
        finally:
            if waiting is not None and not handed:
                waiting.drop()
                self.dropped.append(waiting.pid)
        return None

    def make_standby(self, raw: bytes, closing: list[Any]) -> None:
        """Fork the standby for the next run (standby.py), where its session is prepared here: the
        run the request names as the caller's next ("next": its test paths and arguments), else
        this one's again."""
        try:
            request = marshal.loads(raw)
            upcoming = request.get("next")
            predicted: dict[str, bytes] = {}     # file -> its bytes in the run guessed (Warmup.predict)
            if isinstance(upcoming, dict) and all(isinstance(upcoming.get(f), list) and all(
                    isinstance(a, str) for a in upcoming[f]) for f in ("tests", "args")):
                request = {**request, "tests": upcoming["tests"], "args": upcoming["args"]}
                files = upcoming.get("files")
                if isinstance(files, dict):
                    predicted = {f: b for f, b in files.items() if isinstance(f, str) and isinstance(b, bytes)}
            k = prepared.key(request["cwd"], request["args"])
        except Exception:
            return
        ready = self.sessions.kept.get(k) if k else None
        fits = standby.fit(request)
        if ready is None or self.imported.cold_only or not self.imported.env_fits(request["env"]) \
                or not ready.usable(request["env"]) or fits is None or not self.known_clean(collection_key(request)):
            return
        try:
            # the files this run's edit touched, parsed as imported once here, not by each standby
            # that patches them (a worker's next mutations edit the same module)
            self.imported.warmup.learn_shapes(self.changed or ())
        except Exception:       # (a fork parses it itself, as before)
            pass
        ctrl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ready_r, ready_w = os.pipe()
        report_r, report_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        drawn = self.imported.seeds.drawn()
        generation = self.generation()
        pid = os.fork()
        if pid == 0:
            self.imported.seeds.hand_back(drawn)
            for other in (*closing, ctrl, ready_r, report_r):
                _close(other)
            self.run_standby(request, theirs, ready_w, report_w, predicted)
        theirs.close()
        os.close(ready_w)
        os.close(report_w)
        self.standby = standby.Standby(pid, ctrl, ready_r, report_r, fits, generation)

    def known_clean(self, key: tuple[str, frozenset[str]]) -> bool | None:
        """Whether a fork's collection of these test files (collection_key) runs none of the
        project's code: known from a profiled collection of them, or of files that hold them in
        the same folder (it ran every hook and module theirs runs); None: not known yet."""
        if key in self.clean:
            return self.clean[key]
        if any(ok and cwd == key[0] and key[1] <= files for (cwd, files), ok in self.clean.items()):
            return True
        return None

    def probe_union(self, raw: bytes, closing: list[Any]) -> tuple[int, int, tuple[str, frozenset[str]]] | None:
        """Once per prepared session: fork a prober that collects every test file collected here
        under that session's folder and test anchors, as a standby would. It stops before the
        first line of any code not pytest's own (prepared.pytests_own), so no project code runs
        for it. Where it got to the end, each of those files is known clean before its own first
        run (a baseline runs each gate once, so a run's own probe would leave none to serve). Its
        pid, the read end of its report pipe, and the key it answers for; None: no prober."""
        try:
            request = marshal.loads(raw)
            k = prepared.key(request["cwd"], request["args"])
        except Exception:
            return None
        if k is None or k in self.unions or self.sessions.kept.get(k) is None or self.imported.cold_only:
            return None
        self.unions.add(k)
        anchors = set(k[k.index("--") + 1:])
        files = sorted(f for f in self.imported.collected if prepared._anchor(request["cwd"], f) in anchors)
        union = {**request, "args": prepared.with_tests(request["args"], files), "tests": files}
        key = collection_key(union)
        if len(key[1]) < 2 or self.known_clean(key) is not None:
            return None
        report_r, report_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                for other in (*closing, report_r):
                    _close(other)

                own = prepared.pytests_own()
                seen: dict[types.CodeType, bool] = {}

                def guard(frame: types.FrameType, event: str, arg: Any) -> None:
                    # Before the first line of any code not pytest's own: no project code runs
                    # here, at a time no run of it asked for (its side effects would be extra).
                    if event == "call":
                        code = frame.f_code
                        if code not in seen:
                            seen[code] = own(code)
                        if not seen[code]:
                            os.write(report_w, b"d")
                            os._exit(0)

                def guarded(collect: Callable[[], None]) -> None:
                    sys.setprofile(guard)
                    try:
                        collect()
                    finally:
                        sys.setprofile(None)
                    os.write(report_w, b"c")

                null = os.open(os.devnull, os.O_WRONLY)
                standby.collect(self, union, null, watch=guarded)
            finally:
                os._exit(0)
        os.close(report_w)
        os.set_blocking(report_r, False)
        return pid, report_r, key

    def run_standby(self, predicted: dict[str, Any], ctrl: socket.socket, ready_w: int, report: int,
                    edits: dict[str, bytes] | None = None) -> None:
        """The standby's whole life: collect, work out the patch to the files the guessed run
        finds edited (`edits`: file -> its bytes then), wait for its run or the end, run it as a
        fork. Never returns into the server loop."""
        try:
            standby.collect(self, predicted, ready_w)
            with contextlib.suppress(Exception):     # (not worked out: the fork does it, as before)
                self.imported.warmup.predict(edits or {})
            raw, fds = wire.receive(ctrl, with_fds=4)
            if len(fds) != 4:
                os._exit(0)
            handed = marshal.loads(raw)
            self.changed = set(handed["changed"])
        except BaseException:   # dropped, or the warm process is gone
            os._exit(0)
        ctrl.close()
        self.run_fork(handed["request"], fds[1:], report, socket.socket(fileno=fds[0]), handed["at"])

    def serve(self) -> int:
        """Answer requests until the process that runs gates is gone, or none came for
        IDLE_EXIT_S."""
        parent = os.getppid()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.sock)
        listener.listen(64)
        # "ready", and why every run will start pytest cold where that is known already
        print("ready" + (f" cold: {' '.join(self.imported.cold_only.split())}" if self.imported.cold_only else ""),
              flush=True)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 1)
        running: dict[socket.socket, int] = {}
        gone: set[socket.socket] = set()    # clients that hung up: their run was killed, no need to watch them
        exits: dict[int, int] = {}    # pidfd -> pid: readable the moment the fork exits
        forked: dict[int, float] = {}  # pid -> when it was forked
        reports: dict[int, int] = {}   # pid -> read end of its pipe: b"1" once nothing of it is left
        probing: dict[int, tuple[str, frozenset[str]]] = {}  # pid -> what its collection tells (self.clean)
        heard: dict[int, bytes] = {}   # pid -> what it wrote to its pipe so far
        unions: dict[int, tuple[int, tuple[str, frozenset[str]]]] = {}  # prober pid -> its pipe, its key

        def hear_unions() -> None:
            for pid, (report, key) in list(unions.items()):
                try:
                    said = os.read(report, 8)
                except BlockingIOError:
                    continue
                if b"c" in said or b"d" in said:
                    self.clean.setdefault(key, b"c" in said)
                os.close(report)      # said, or gone without a word (not known: per-file probes go on)
                del unions[pid]
                self.dropped.append(pid)

        def hear(pid: int, report: int) -> bytes:
            try:
                heard[pid] = heard.get(pid, b"") + os.read(report, 8)
            except BlockingIOError:
                pass
            said = heard.get(pid, b"")
            if pid in probing and (b"c" in said or b"d" in said):
                self.clean[probing.pop(pid)] = b"c" in said
            return said

        last = time.monotonic()
        while True:
            watched: list[Any] = [listener, *(c for c in running if c not in gone), *exits]
            readable, _, _ = select.select(watched, [], [], 0.5)
            for conn in readable:
                if isinstance(conn, int):
                    continue
                if conn is listener:
                    client_conn, _ = listener.accept()
                    request, fds = wire.receive(client_conn, with_fds=3)
                    forked_at = time.monotonic()
                    closing = [listener, *running, *reports.values(), *(fd for fd, _ in unions.values())]
                    handed = self.take(request, client_conn, fds, forked_at)
                    if handed is not None:
                        pid, report_r = handed
                    else:
                        sys.stdout.flush()
                        sys.stderr.flush()
                        report_r, report_w = os.pipe()
                        drawn = self.imported.seeds.drawn()     # (imported.Seeds)
                        probe = self.probe(request)
                        pid = os.fork()
                        if pid == 0:
                            self.imported.seeds.hand_back(drawn)
                            for other in closing:
                                _close(other)
                            os.close(report_r)
                            self.run_fork(request, fds, report_w, client_conn, forked_at, probe is not None)
                        os.close(report_w)
                        if probe is not None:
                            probing[pid] = probe
                    self.forks_made += 1
                    os.set_blocking(report_r, False)
                    reports[pid] = report_r
                    for fd in fds:
                        os.close(fd)
                    running[client_conn] = pid
                    forked[pid] = forked_at
                    exits[os.pidfd_open(pid)] = pid
                    for other in list(probing):     # what the forks' collections told so far
                        hear(other, reports[other])
                    hear_unions()
                    prober = self.probe_union(request, [listener, *running, *reports.values(),
                                                        *(fd for fd, _ in unions.values())])
                    if prober is not None:
                        unions[prober[0]] = prober[1:]
                    self.make_standby(request, [listener, *running, *reports.values(),
                                                *(fd for fd, _ in unions.values())])
                elif _gone(conn):
                    # The client is gone (killed for a timeout, or done with the answer): so is its run.
                    reaper.kill_group(running[conn])
                    gone.add(conn)
            for conn, pid in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    answer: dict[str, Any] = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else \
                        {"exit": os.WEXITSTATUS(status)}
                    answer["seconds"] = time.monotonic() - forked.pop(pid, time.monotonic())
                    report = reports.pop(pid)
                    # Written before the fork exited, or never: a helper the run forked may still
                    # hold the write end, so never wait for more. "c"/"d": its profiled collection
                    # ran none / some of the project's code; then "A": it answered itself, or "1":
                    # it did not, and nothing of it is left.
                    said = hear(pid, report)
                    os.close(report)
                    probing.pop(pid, None)
                    heard.pop(pid, None)
                    said = b"A" if b"A" in said else b"1" if b"1" in said else b""
                    reaper.kill_group(pid)
                    # (a fork killed once its client had the answer, before it said so, lands here too:
                    # the standby waiting for the next run is kept)
                    keep = frozenset(running.values()) | ({self.standby.pid} if self.standby is not None else set()) \
                        | frozenset(unions)
                    answer["clean"] = said == b"1" or (said != b"A" and self.libc is not None
                                                       and reaper.stop_below(keep))
                    for fd in [fd for fd, p in exits.items() if p == pid]:
                        os.close(fd)
                        del exits[fd]
                    if said != b"A":        # the fork did not answer itself
                        try:
                            wire.send(conn, marshal.dumps(answer))
                        except OSError:
                            pass
                    conn.close()
                    del running[conn]
                    gone.discard(conn)
                    last = time.monotonic()
            self.dropped = [pid for pid in self.dropped if not _reaped(pid)]
            if os.getppid() != parent or (not running and time.monotonic() - last > IDLE_EXIT_S):
                if self.standby is not None:
                    self.standby.drop()
                # The process that ran gates is gone: no one will read these runs (nor a prober's word).
                for pid in [*running.values(), *unions]:
                    reaper.kill_group(pid)
                return 0

    def probe(self, raw: bytes) -> tuple[str, frozenset[str]] | None:
        """What a fork of this request tells the warm process, where it is not known yet: whether its
        collection runs any of the project's code (self.clean)."""
        try:
            key = collection_key(marshal.loads(raw))
        except Exception:
            return None
        return key if self.known_clean(key) is None and not self.imported.cold_only else None

    def run_fork(self, raw: bytes, fds: list[int], report: int, conn: socket.socket, forked_at: float,
                 probe: bool = False) -> None:
        """The fork's whole life: run the request, stop what it started, answer, exit.
        Never returns into the server loop. `probe`: profile the collection and say whether it ran
        any of the project's code (as "c" or "d" on the report pipe)."""
        code = wire.INTERNAL_ERROR
        # or "prepared" (prepared.py), "standby" (standby.py); a fresh interpreter answers through exec'd pytest
        how = "warm"
        subreaper = False
        held: list[int] = []      # a standby's stdout and stderr so far
        try:
            request = marshal.loads(raw)
            if self.ahead is not None:
                sys.stdout.flush()
                sys.stderr.flush()
                held = [os.dup(1), os.dup(2)]
            os.setpgid(0, 0)
            # Whatever the run starts and orphans is re-parented here, not to init: at the end
            # the fork can stop it all itself (no scan of every process for the run marker).
            subreaper = self.libc is not None and reaper.become_subreaper(self.libc)
            as_cold.dispositions(self.dispositions)
            for target, fd in enumerate(fds[:3]):
                os.dup2(fd, target)
                os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
            args = list(request["args"])
            changed = self.changed if self.changed is not None else self.imported.changed_files()
            k = prepared.key(request["cwd"], request["args"])
            ready = self.sessions.kept.get(k) if k else None
            if self.ahead is not None:
                # The warm process hands a request over without working out its patches (patcher.Shape).
                self.imported.warmup.prepare(changed)
            if not self.imported.env_fits(os.environ) or not self.imported.warm_enough(changed) or (
                    self.ahead is not None and not (ready is not None and ready.usable(os.environ)
                                                    and ready.untouched(changed))):
                # The same pytest as driver `pytest`, in a fresh interpreter (this process, so
                # the warm process still waits for it and adopts what it leaves).
                sys.stdout.flush()
                sys.stderr.flush()
                os.execve(sys.executable, [sys.executable, "-m", "pytest", *args], dict(os.environ))
            for key, value in self.imported.env_written.items():
                # what the root's code set in the environment here, as its import in a cold run sets it
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            sys.argv = ["pytest", *args]
            sys.path[0] = request["cwd"]
            import pytest

            args, plugins = prepared.with_plugin_objects(args)
            if self.ahead is not None and ready is not None:
                how = "standby"
                standby.move_output(held, ready.config)
                code = ready.run(args, plugins, self.ahead)
            elif ready is not None and ready.usable(os.environ) and ready.untouched(changed):
                how = "prepared"

                def profiled(collect: Callable[[], None]) -> None:
                    with self.imported.warmup.calls() as ran:
                        collect()
                    os.write(report, b"c" if prepared.only_pytest(ran) else b"d")

                code = ready.run(args, plugins, watch=profiled if probe else None)
            else:
                if self.prebuilt is not None and self.prebuilt.usable(args, os.environ):
                    self.prebuilt.install()
                code = int(pytest.main(args, plugins=plugins))
            as_cold.end()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else wire.INTERNAL_ERROR
        except BaseException as e:  # the fork must never return into the server loop
            print(f"pytest-warm: {type(e).__name__}: {e}", file=sys.stderr)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
                clean = subreaper and reaper.stop_below()
                # The answer goes straight to the runner, which need not wait for this process
                # to be torn down; the warm process learns through the pipe that it was sent
                # (and answers itself for a fork that never gets here: a signal).
                try:
                    wire.send(conn, marshal.dumps({"exit": code, "clean": clean, "how": how,
                                                   "seconds": time.monotonic() - forked_at}))
                    os.write(report, b"A")
                except OSError:
                    if clean:     # nothing of this run is left
                        os.write(report, b"1")
            finally:
                os._exit(code)


def _import(name: str) -> None:
    try:
        importlib.import_module(name)
    except Exception:
        pass        # a module that does not import is the test run's to report, not ours


def imports_in_silence(names: Sequence[str]) -> str:
    """Import each module ahead (see `_import`); the first that warned, as the reason every run
    starts cold (a cold run imports it under pytest's filters), or ""."""
    import warnings

    for name in names:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            _import(name)
        if said:
            first = said[0]
            return (f"importing {name} warned ({first.category.__name__}: {first.message}); a cold run imports "
                    "it under pytest's warning filters")
    return ""


def collection_key(request: dict[str, Any]) -> tuple[str, frozenset[str]]:
    """The folder and test files a request collects (what runs while pytest collects them depends on
    their conftests and modules, whatever the options)."""
    return request["cwd"], frozenset(os.path.normpath(os.path.join(request["cwd"], p.split("::")[0]))
                                     for p in prepared.test_paths(request["args"]))


def _reaped(pid: int) -> bool:
    try:
        return bool(os.waitpid(pid, os.WNOHANG)[0])
    except ChildProcessError:     # reaped already (reaper.stop_below)
        return True


def _close(thing: Any) -> None:
    if isinstance(thing, int):
        os.close(thing)
    else:
        thing.close()


def _gone(conn: socket.socket) -> bool:
    try:
        return not conn.recv(1, socket.MSG_PEEK)
    except OSError:
        return True


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    rest = args[args.index("--") + 1:] if "--" in args else []
    if args[:1] == ["--serve"]:
        root = Path(args[args.index("--root") + 1]).resolve()
        preload = [p for p in args[args.index("--preload") + 1].split(",") if p]
        as_cold.begin()
        server = Server(args[1], root)
        server.warm_up(preload, rest)
        return server.serve()
    print("usage: python -m redfirst.gates.drivers.pytest_warm --serve SOCK --root R --preload M,N -- TESTS",
          file=sys.stderr)
    return 2
