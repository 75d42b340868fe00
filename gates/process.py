"""Run one program as a process tree we own: output straight to files (a grandchild that
keeps a pipe open cannot hang us), a timeout that kills the whole tree, grandchildren
included, and nothing left running when we return."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36
_GRACE_S = 0.5
# Every process of a run inherits this variable, so even one that called setsid is found.
RUN_MARKER = "REDFIRST_RUN"


@dataclass(frozen=True)
class Exited:
    """How a process tree ended: raw facts only, the grader interprets them."""

    started: bool                 # False: the program could not be started at all
    returncode: int | None        # exit status when it exited
    signal: int | None            # the signal that killed it
    timed_out: bool
    duration_s: float
    start_error: str = ""         # why it could not start

    def describe(self) -> str:
        if not self.started:
            return f"could not start: {self.start_error}"
        if self.timed_out:
            return f"timed out after {self.duration_s:.1f}s"
        if self.signal is not None:
            return f"killed by {signal_name(self.signal)}"
        return f"exit {self.returncode}"


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _become_subreaper() -> None:
    # Orphaned grandchildren are re-parented to us instead of init, so we can find them.
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _stat_table() -> dict[int, tuple[int, int, int]]:
    """pid -> (ppid, pgid, session) for every process, from /proc."""
    table: dict[int, tuple[int, int, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue
        # Fields after the command name, which may itself hold spaces and parentheses.
        rest = stat[stat.rfind(")") + 2:].split()
        if len(rest) > 3 and rest[0] != "Z":
            table[int(entry.name)] = (int(rest[1]), int(rest[2]), int(rest[3]))
    return table


def _marked(marker: bytes) -> set[int]:
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as f:
                    if marker in f.read().split(b"\0"):
                        found.add(int(entry.name))
            except OSError:
                continue
    return found


def descendants(pid: int, marker: bytes | None = None) -> list[int]:
    """Every live process of the tree started as `pid`: its descendants, and whatever
    still runs in its session or process group after its parent died (re-parented to us
    as subreaper, or to init)."""
    table = _stat_table()
    children: dict[int, list[int]] = {}
    for child, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(child)
    found: set[int] = set()
    # The run marker in the environment finds what double-forked and called setsid.
    marked = _marked(marker) if marker else set()
    stack = [*marked, *children.get(pid, []), *(p for p, (_, pgid, sid) in table.items() if pid in (sid, pgid))]
    while stack:
        child = stack.pop()
        if child == pid or child in found:
            continue
        found.add(child)
        stack.extend(children.get(child, []))
    return sorted(found)


def _signal_all(pgid: int, pids: Sequence[int], sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_tree(proc: subprocess.Popen[bytes], marker: bytes | None = None) -> None:
    """SIGTERM, a short grace, then SIGKILL to the process group and every descendant
    (a grandchild that left the group with setsid is still our descendant)."""
    exited = proc.poll() is not None     # before the look: what it started is visible then
    victims = descendants(proc.pid, marker)
    if exited and not victims:
        # It had exited and nothing of it is left that could start more: the usual
        # end of a run, settled by one look at /proc.
        _signal_all(proc.pid, [], signal.SIGKILL)
        return
    _signal_all(proc.pid, [proc.pid, *victims], signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_S
    while time.monotonic() < deadline and (proc.poll() is None or _alive(victims)):
        time.sleep(0.02)
    victims = list({*victims, *descendants(proc.pid, marker)})
    _signal_all(proc.pid, [proc.pid, *victims], signal.SIGKILL)
    _reap(victims)


def new_marker() -> str:
    """The value of RUN_MARKER for one run."""
    return uuid.uuid4().hex


def kill_marked(marker: str) -> None:
    """SIGTERM, a short grace, then SIGKILL to every process that carries the run's
    marker (and their descendants): for a run whose processes are not our children."""
    tag = f"{RUN_MARKER}={marker}".encode()
    if not _marked(tag):
        return     # nothing carries the marker: no tree to look for (one read per process)
    victims = descendants(-1, tag)
    _signal_each(victims, signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_S
    while time.monotonic() < deadline and _alive(victims):
        time.sleep(0.02)
    victims = list({*victims, *descendants(-1, tag)})
    _signal_each(victims, signal.SIGKILL)
    _reap(victims)


def _signal_each(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _alive(pids: Sequence[int]) -> bool:
    for pid in pids:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().split(b")")[-1].split()[0] == b"Z":
                    continue
            return True
        except (OSError, IndexError):
            continue
    return False


def _reap(pids: Sequence[int]) -> None:
    # Descendants re-parented to us (subreaper) would otherwise stay zombies.
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Whether the process exited within the timeout. A pidfd wakes us the moment it
    exits; subprocess's own timed wait polls with sleeps growing to 50 ms, which put up
    to 50 ms on every short run."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    return proc.poll() is not None


def run(argv: Sequence[str] | str, *, cwd: Path, env: Mapping[str, str], stdout: Path, stderr: Path | None,
        timeout: float) -> Exited:
    """Run `argv` (a string goes to `sh -c`) to completion or timeout; never raises for
    a program that fails, crashes or cannot start. `stderr=None` merges it into stdout."""
    _become_subreaper()
    command = ["/bin/sh", "-c", argv] if isinstance(argv, str) else list(argv)
    marker = f"{RUN_MARKER}={new_marker()}"
    env = {**env, RUN_MARKER: marker.split("=", 1)[1]}
    start = time.monotonic()
    with open(stdout, "wb") as out, open(stderr or os.devnull, "wb") as err:
        try:
            proc = subprocess.Popen(command, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err if stderr else subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            return Exited(False, None, None, False, time.monotonic() - start, f"{command[0]}: {e.strerror or e}")
        timed_out = not _wait(proc, timeout)
        # Whatever it left behind (background jobs, daemons) dies with it.
        kill_tree(proc, marker.encode())
        proc.wait()
    duration = time.monotonic() - start
    code = proc.returncode
    if timed_out:
        return Exited(True, None, None, True, duration)
    if code < 0:
        return Exited(True, None, -code, False, duration)
    return Exited(True, code, None, False, duration)
