"""A standby: a fork of the warm process, made while a run goes on, that makes the next run's
prepared session (prepared.py) up to the end of its collection before that run is asked for.

A gate's runs under a mutation differ from the run before only in the patch, the descriptors
and two per-run variables: the standby guesses that the next request is the last one again,
forks, collects that request's test paths on descriptors of its own (memory files) and waits.
A standby is made only for test files whose collection, profiled in an earlier fork from the same
warm process, ran none of the project's code (server.Server.clean): a conftest's collection hook or
an object pytest looks at could act (empty a folder, append to a log), read the clock, the run's
cache folder or arguments, or the environment, and would do so ahead of its run, while another run
goes on, and again where the standby is dropped (helper-18: F1-F4). Nor where a plugin other than
pytest's, redfirst's or a known one implements a collection hook. When the request comes, the warm
process hands it over (the client's socket and descriptors) only where the standby's run is the
run a fresh fork would make:
- nothing in the warm process changed since the standby was forked (`generation`);
- the request has the same folder, session (prepared.key), test paths and environment, less
  the run's marker, read report and evidence folder (`PER_RUN`);
- the collection ended without raising, and started no thread, process or program, wrote no
  file, imported no module, and read none of `PER_RUN`;
- no file the tree changed in since the warm-up (`changed`, as the warm process found it for
  this request) is one that collection read other than by importing it;
- the tree differs from the warm-up's only in modules this process imported, and the prepared
  session takes the request (its environment, `untouched`).
Else the standby is dropped and the run forked as before. The standby then patches as a fork
does (and starts pytest cold where the patch cannot be made), moves what it wrote so far onto
the run's descriptors, and runs the rest of the session (`Prepared.run` with `ahead`).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from redfirst import process
from redfirst.gates import evidence, read_hook
from redfirst.gates.drivers.pytest_warm import as_cold, prepared, reaper, wire

# The variables each run of a gate gets its own value of: its marker, read report and evidence folder.
PER_RUN = frozenset({process.RUN_MARKER, read_hook.ENV, evidence.ENV})
WAIT_S = 1.0            # how long a request waits for a standby still collecting (a fresh fork would collect too)


def fit(request: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """What a request must share with the one a standby was made for (None: no standby serves it)."""
    k = prepared.key(request["cwd"], request["args"])
    if k is None:
        return None
    env = tuple(sorted((name, value) for name, value in request["env"].items() if name not in PER_RUN))
    return k, tuple(prepared.test_paths(request["args"])), env


class Standby:
    """The warm process's handle on its standby."""

    def __init__(self, pid: int, ctrl: socket.socket, ready: int, report: int, fits: tuple[Any, ...],
                 generation: tuple[Any, ...]) -> None:
        self.pid = pid
        self.ctrl = ctrl            # the activation goes here
        self.ready = ready          # read end: the collection's outcome, once made
        self.report = report        # read end of the run's pipe, as a fork's (server.Server.serve)
        self.fits = fits
        self.generation = generation
        self.said: dict[str, Any] | None = None

    def outcome(self, wait_s: float) -> dict[str, Any] | None:
        """What the standby's collection came to, waiting up to `wait_s` for it; None: not yet."""
        if self.said is None:
            readable, _, _ = select.select([self.ready], [], [], wait_s)
            if not readable:
                return None
            data = b""
            while chunk := os.read(self.ready, 1 << 16):
                data += chunk
            try:
                self.said = marshal.loads(data)
            except (EOFError, ValueError, TypeError):
                self.said = {"ok": False}
        return self.said

    def takes(self, request: Mapping[str, Any], changed: set[str] | None, generation: tuple[Any, ...],
              ready: prepared.Prepared | None, env_fits: bool, only_modules: bool) -> bool:
        if generation != self.generation or ready is None or changed is None or not only_modules or not env_fits:
            return False
        if fit(request) != self.fits or not ready.usable(request["env"]) or not ready.untouched(changed):
            return False
        said = self.outcome(WAIT_S)
        if not said or not said.get("ok"):
            return False
        files = {p for f in changed for p in (os.path.abspath(f), os.path.realpath(f))}
        return not files & set(said["read"])

    def hand_over(self, raw: bytes, conn: socket.socket, fds: Iterable[int], changed: set[str],
                  forked_at: float) -> bool:
        try:
            wire.send(self.ctrl, marshal.dumps({"request": raw, "changed": sorted(changed), "at": forked_at}),
                      [conn.fileno(), *fds])
        except OSError:
            return False
        self.close()
        return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.ready)
        self.ctrl.close()

    def drop(self) -> None:
        reaper.kill_group(self.pid)
        self.close()
        with contextlib.suppress(OSError):
            os.close(self.report)


def collect(server: Any, predicted: Mapping[str, Any], ready_w: int,
            watch: Callable[[Callable[[], None]], None] | None = None) -> None:
    """In the standby: the predicted run's set-up and collection, on memory files for stdout and
    stderr; what came of it written to `ready_w` (Standby.outcome). Only made where a fork's
    collection of the same test files from this warm process ran none of the project's code
    (server.Server.clean): this one runs the same pytest code, unprofiled."""
    os.setpgid(0, 0)
    as_cold.dispositions(server.dispositions)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.close(null)
    for target, name in ((1, "stdout"), (2, "stderr")):
        held = os.memfd_create(name)
        os.dup2(held, target)
        os.close(held)
    os.chdir(predicted["cwd"])
    os.environ.clear()
    os.environ.update({k: v for k, v in predicted["env"].items() if k not in PER_RUN})
    for key, value in server.imported.env_written.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    sys.argv = ["pytest", *predicted["args"]]
    sys.path[0] = predicted["cwd"]
    ready = server.sessions.kept[prepared.key(predicted["cwd"], predicted["args"])]
    args, plugins = prepared.with_plugin_objects(predicted["args"])
    warmup = server.imported.warmup
    threads, spawned, written = threading.active_count(), len(read_hook._spawned), len(read_hook._written)
    read_before, modules = set(warmup.read_as_text), len(sys.modules)
    why = _collecting_plugins(ready.config, server.root)
    ahead: prepared.Ahead | str = why
    if not why:
        real = os.environ
        recording = prepared._Environment(dict(real))
        os.environ = recording  # type: ignore[assignment]  # noqa: B003
        warmup._note_reads(True)
        try:
            ahead = ready.collect_ahead(args, plugins, watch)
        finally:
            warmup._note_reads(False)
            os.environ = real  # noqa: B003
        why = ahead if isinstance(ahead, str) else ""
        # (What collect_ahead sets itself aside, as Prepared.run sets it: PYTEST_VERSION, what the
        # session's making set.)
        if not why and (PER_RUN & recording.read.keys() or
                        recording.written.keys() - {"PYTEST_VERSION", *ready.written}):
            why = "its collection read a variable the run it guessed had its own value of, or set one"
    if not why and threading.active_count() > threads:
        why = "its collection started a thread"
    if not why and (len(read_hook._spawned) > spawned or reaper.children(os.getpid())):
        why = "its collection started a process"
    if not why and len(read_hook._written) > written:
        why = "its collection wrote a file"
    if not why and len(sys.modules) != modules:
        why = "its collection imported a module"
    if not why:     # (the capture is started by collect_ahead: its internals are known from here)
        why = _unknown_internals(ready.config)
    server.ahead = None if why or isinstance(ahead, str) else ahead
    said = marshal.dumps({"ok": not why, "why": why, "read": sorted(warmup.read_as_text - read_before)})
    view = memoryview(said)
    while view:
        view = view[os.write(ready_w, view):]
    os.close(ready_w)


# Hooks pytest calls while it collects: a plugin implementing one runs its own code there.
COLLECTION_HOOKS = frozenset({
    "pytest_collection", "pytest_collection_modifyitems", "pytest_collection_finish", "pytest_collect_file",
    "pytest_collect_directory", "pytest_pycollect_makemodule", "pytest_pycollect_makeitem", "pytest_generate_tests",
    "pytest_make_parametrize_id", "pytest_collectstart", "pytest_make_collect_report", "pytest_itemcollected",
    "pytest_collectreport", "pytest_deselected", "pytest_ignore_collect", "pytest_collection_ignore"})


def _collecting_plugins(config: Any, root: Any) -> str:
    """Why a plugin other than pytest's, redfirst's, the project's own (profiled) or a known one
    runs code of its own while pytest collects, or ""."""
    manager = config.pluginmanager
    for name, plugin in manager.list_name_plugin():
        if plugin is None:
            continue
        module = plugin.__name__ if isinstance(plugin, type(sys)) else type(plugin).__module__
        if module.split(".")[0] in ("_pytest", "pytest") or module.startswith("redfirst.") or name in prepared.KNOWN_PLUGINS:
            continue
        file = getattr(plugin, "__file__", None)
        if file and prepared.under_root(file, root):
            continue
        if {caller.name for caller in manager.get_hookcallers(plugin) or ()} & COLLECTION_HOOKS:
            return f"plugin {name} ({module}) runs its own code while pytest collects"
    return ""


def _unknown_internals(config: Any) -> str:
    """Why the hand-over (move_output, the clocks of Prepared.run) would not know this pytest's
    capture or clocks, or ""."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    multi = getattr(capman, "_global_capturing", None) if capman is not None else None
    for cap in (getattr(multi, "in_", None), getattr(multi, "out", None), getattr(multi, "err", None)):
        if cap is not None and hasattr(cap, "targetfd") and not isinstance(getattr(cap, "targetfd_save", None), int):
            return "a pytest whose descriptor capture this version of redfirst does not know"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    clock = getattr(reporter, "_session_start", None) if reporter is not None else None
    if reporter is not None and not prepared.Ahead.knows(clock):
        return "a pytest whose clock this version of redfirst does not know"
    return ""


def move_output(held: list[int], config: Any) -> None:
    """At the hand-over, once descriptors 0-2 are the run's: what the standby wrote to its stdout
    and stderr so far (`held`: its memory files) goes first to the run's, and the copies pytest's
    capture keeps of 0-2 to write back to become the run's too."""
    for target, fd in zip((1, 2), held, strict=True):
        size = os.fstat(fd).st_size
        view = memoryview(os.pread(fd, size, 0) if size else b"")
        while view:
            view = view[os.write(target, view):]
        os.close(fd)
    capman = config.pluginmanager.get_plugin("capturemanager")
    multi = getattr(capman, "_global_capturing", None) if capman is not None else None
    for cap in (getattr(multi, "in_", None), getattr(multi, "out", None), getattr(multi, "err", None)):
        saved, kept_for = getattr(cap, "targetfd_save", None), getattr(cap, "targetfd", None)
        if isinstance(saved, int) and kept_for in (0, 1, 2):
            os.dup2(kept_for, saved)
