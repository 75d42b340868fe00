"""The `pytest-warm` driver, in the process that runs gates: a warm process per root,
working folder, preload list and gate environment (`WarmProcesses`), and each run handed
to it (client.request) or, with none, the same pytest started cold."""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst import process
from redfirst.gates.drivers import Driver, Invocation
from redfirst.gates.drivers.pytest import JUNIT_NAME, private_cache, pytest_argv
from redfirst.gates.drivers.pytest_warm.client import CLIENT, request
from redfirst.gates.model import Gate
from redfirst.verdict import Outcome

READY_TIMEOUT_S = 120.0
# the largest edited file whose next bytes a request carries to the standby (Driver.ahead): a
# larger one costs every request more to send than its patch saves
AHEAD_EDIT_MAX = 1 << 20

_Key = tuple[str, str, tuple[str, ...], tuple[tuple[str, str], ...]]


class _Warm:
    def __init__(self, proc: subprocess.Popen[bytes], sock: Path, warm_up_s: float) -> None:
        self.proc, self.sock = proc, sock
        self.warm_up_s = warm_up_s      # from its start to `ready`: what a cold start of a run pays at most


def _ended(proc: subprocess.Popen[bytes], folder: Path) -> None:
    """A warm process killed (where it still runs) and its socket folder removed: nothing of it
    is left in the temporary folder."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    shutil.rmtree(folder, ignore_errors=True)


class WarmProcesses:
    """The warm processes this process started, one per root, working folder, preload list
    and gate environment; each is killed when this process exits."""

    def __init__(self) -> None:
        self.servers: dict[_Key, _Warm] = {}
        self._lock = threading.Lock()                 # guards _locks and expected
        self._locks: dict[_Key, threading.Lock] = {}
        # The test files of the gates announced for each warm process (`expect`): collected at
        # its warm-up in one pytest session, not one session per gate as they come.
        self.expected: dict[_Key, dict[str, None]] = {}
        atexit.register(self.stop_all)

    @staticmethod
    def key(root: Path, cwd: Path, preload: Sequence[str], gate_env: Sequence[tuple[str, str]]) -> _Key:
        return (str(root), str(cwd), tuple(preload), tuple(gate_env))

    def expect(self, root: Path, cwd: Path, preload: Sequence[str], test_paths: Sequence[str],
               gate_env: Sequence[tuple[str, str]] = ()) -> None:
        """A gate of these test paths will run in this warm process: a warm-up from now on
        collects their files too. A gate whose `run:` holds options is not announced: its files
        cannot join other gates' in one collection."""
        if any(p.startswith("-") for p in test_paths):
            return
        with self._lock:
            self.expected.setdefault(self.key(root, cwd, preload, gate_env), {}).update(
                dict.fromkeys(p.split("::")[0] for p in test_paths))

    def stop_all(self) -> None:
        """Kill every warm process this process started and remove its socket's folder: once this
        returns (at exit at the latest), nothing of theirs is left in the temporary folder."""
        for warm in self.servers.values():
            _ended(warm.proc, warm.sock.parent)

    def ready(self, root: Path, cwd: Path, preload: Sequence[str], test_paths: Sequence[str],
               gate_env: Sequence[tuple[str, str]] = ()) -> Path | None:
        """The socket of a ready warm process for this root, folder, preload list and gate
        environment (import-time code may read it); started when there is none; None when
        it cannot start."""
        key = self.key(root, cwd, preload, gate_env)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
            announced = list(self.expected.get(key, ()))
        # One lock per warm process: two workers' worktrees start theirs at the same time.
        with lock:
            warm = self.servers.get(key)
            if warm is not None and warm.proc.poll() is None:
                return warm.sock
            if warm is not None:        # it died: its folder goes before the next one is made
                _ended(warm.proc, warm.sock.parent)
            # Not through redfirst.tempdirs: the owner it names would lengthen the socket's path past
            # the 107 bytes a sockaddr_un holds under a long TMPDIR (the process then never listens).
            folder = Path(tempfile.mkdtemp(prefix="rf-warm-"))
            sock = folder / "s"
            # Not part of any run's process tree: the runner's kill of a finished run must spare it.
            env = {**{k: v for k, v in os.environ.items() if k != process.RUN_MARKER}, **dict(gate_env)}
            argv = [sys.executable, "-m", "redfirst.gates.drivers.pytest_warm", "--serve", str(sock), "--root", str(root),
                    "--preload", ",".join(preload), "--",
                    *test_paths, *(f for f in announced if f not in {p.split("::")[0] for p in test_paths})]
            started = time.monotonic()
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
            line = proc.stdout.readline() if ready else b""
            proc.stdout.close()
            said = line.decode("utf-8", errors="replace").strip()
            if said.split(" ", 1)[0] != "ready":
                _ended(proc, folder)
                return None
            if said.startswith("ready cold: "):
                # Runs stay correct and get slow: say why, once per warm process.
                print(f"pytest-warm: {cwd}: every run starts pytest cold: {said[len('ready cold: '):]}",
                      file=sys.stderr, flush=True)
            self.servers[key] = _Warm(proc, sock, time.monotonic() - started)
            return sock

    def warm_up_s(self, root: Path, cwd: Path, preload: Sequence[str],
                  gate_env: Sequence[tuple[str, str]] = ()) -> float:
        """How long the warm process for these took to get ready (0: none was started)."""
        warm = self.servers.get(self.key(root, cwd, preload, gate_env))
        return warm.warm_up_s if warm is not None else 0.0


class WarmPytestDriver(Driver):
    name = "pytest-warm"
    default_format = "junit"
    option_keys: frozenset[str] = frozenset({"preload"})
    counts_format = "junit"
    runner = "pytest"

    def __init__(self) -> None:
        self.warm = WarmProcesses()

    def expect(self, gates: Sequence[Gate], root: Path) -> None:
        for gate in gates:
            self.warm.expect(root.resolve(), (root / gate.driver.cwd).resolve(), _preload(gate), gate.driver.words(),
                             gate.driver.env)

    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation:
        junit = evidence_dir.parent / JUNIT_NAME
        cwd = (root / gate.driver.cwd).resolve()
        cache = private_cache() if brief else None
        scratch = (Path(cache),) if cache else ()
        cold = pytest_argv(gate, junit, brief, cache)
        tests = gate.driver.words()
        preload = _preload(gate)
        sock = self.warm.ready(root.resolve(), cwd, preload, tests, gate.driver.env)
        if sock is None:
            # No warm process: the same pytest, cold. Slower, the same verdict.
            return Invocation(argv=cold, cwd=cwd, junit=junit, scratch=scratch)
        argv = (sys.executable, "-S", "-c", CLIENT, str(sock), *tests, "--", *cold[3:])
        return Invocation(argv=argv, cwd=cwd, junit=junit, in_process=functools.partial(request, sock, tests,
                                                                                          cold[3:]), scratch=scratch)

    def ahead(self, inv: Invocation, gate: Gate, then: Gate, root: Path, brief: bool = False,
              edit: tuple[str, bytes] | None = None) -> Invocation:
        """The request names `then`'s run, where the same warm process serves it: that process
        collects it while this one runs (server.Server.make_standby). Its JUnit path and cache
        folder are this run's (each run has its own; no standby depends on them). The edited file's
        next bytes let the standby work out its patch ahead (patcher.Warmup.predict)."""
        if then.driver.type != self.name or not isinstance(inv.in_process, functools.partial) or inv.junit is None \
                or (root / then.driver.cwd).resolve() != inv.cwd or _preload(then) != _preload(gate) \
                or tuple(then.driver.env) != tuple(gate.driver.env):
            return inv
        from redfirst.gates.drivers.pytest_warm.prepared import cache_dir

        cache = cache_dir(inv.in_process.args[2])
        upcoming: dict[str, Any] = {"tests": list(then.driver.words()),
                                    "args": list(pytest_argv(then, inv.junit, brief, cache)[3:])}
        if edit is not None and len(edit[1]) <= AHEAD_EDIT_MAX:
            upcoming["files"] = {str((root / edit[0]).resolve()): edit[1]}
        return dataclasses.replace(inv, in_process=functools.partial(inv.in_process, then=upcoming))

    def cold_start_s(self, gate: Gate, root: Path) -> float:
        """A run the warm process cannot serve in place (an edit to code that ran at import, a
        signature) execs a fresh pytest that imports and collects again: at most its warm-up."""
        return self.warm.warm_up_s(root.resolve(), (root / gate.driver.cwd).resolve(), _preload(gate), gate.driver.env)

    def cold(self, gate: Gate) -> Gate:
        """The same gate under driver `pytest`: the cold run a warm one must equal."""
        options = tuple((k, v) for k, v in gate.driver.options if k not in self.option_keys)
        return dataclasses.replace(gate, driver=dataclasses.replace(gate.driver, type="pytest", options=options))

    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None:
        return None

    def exit_problem(self, gate: Gate, code: int | None, stderr: str) -> Outcome | None:
        from redfirst.gates.drivers.pytest import not_installed

        return not_installed(gate, code, stderr)


def _preload(gate: Gate) -> tuple[str, ...]:
    return tuple(gate.driver.option("preload") or ())


DRIVER = WarmPytestDriver()
