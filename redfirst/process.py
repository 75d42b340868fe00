"""Run one program as a process tree we own: output straight to files (a grandchild that
keeps a pipe open cannot hang us), a timeout that kills the whole tree, grandchildren
included, and nothing left running when we return.

The tree is a cgroup v2 of its own when the machine gives a writable one: membership is
inherited by every descendant and cannot be shed by setsid or an empty environment, and
`cgroup.kill` ends them all at once. Without one, we are the subreaper: what the tree
orphans is re-parented to us and killed as our adopted child. A pid that still lives after
the kill is reported (`Exited.escaped`), never passed over in silence."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36
_GRACE_S = 0.5
# How long killed processes get to disappear before the ones left are reported as escaped.
_KILL_WAIT_S = 2.0
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
    escaped: tuple[int, ...] = ()  # pids of the tree still alive after it was killed

    def __post_init__(self) -> None:
        object.__setattr__(self, "escaped", tuple(self.escaped))    # a record's JSON gives a list

    def escape_note(self) -> str:
        if not self.escaped:
            return ""
        pids = ", ".join(f"pid {p}" for p in self.escaped)
        return f"; {pids} escaped the kill and may still be running"

    def describe(self) -> str:
        if not self.started:
            return f"could not start: {self.start_error}"
        if self.timed_out:
            return f"timed out after {self.duration_s:.1f}s{self.escape_note()}"
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


def started_at(pid: int) -> int | None:
    """When `pid` started (clock ticks after boot, /proc's field 22): with the pid, a process's identity."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


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


def adopted(root: int) -> list[int]:
    """Every live process whose parent chain reaches `root` (`root` excluded), by parent links alone: for a
    subreaper `root`, what its program orphaned is among them whatever it did to its session, process group,
    descriptors, environment, oom_score_adj tag or cgroup, since an orphan below a subreaper is re-parented to
    it, never to init. A caller may rely on no process outside that tree being listed (not its session's or
    process group's other members: a shell pipeline beside `root` is no part of it)."""
    children: dict[int, list[int]] = {}
    for child, (ppid, _, _) in _stat_table().items():
        children.setdefault(ppid, []).append(child)
    found: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if pid != root and pid not in found:
            found.append(pid)
            stack.extend(children.get(pid, []))
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


def kill_tree(proc: subprocess.Popen[bytes], marker: bytes | None = None) -> list[int]:
    """SIGTERM, a short grace, then SIGKILL to the process group and every descendant
    (a grandchild that left the group with setsid is still our descendant). Returns the
    pids it signalled, for the caller to check they are gone."""
    exited = proc.poll() is not None     # before the look: what it started is visible then
    victims = descendants(proc.pid, marker)
    if exited and not victims:
        # It had exited and nothing of it is left that could start more: the usual
        # end of a run, settled by one look at /proc.
        _signal_all(proc.pid, [], signal.SIGKILL)
        return []
    _signal_all(proc.pid, [proc.pid, *victims], signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_S
    while time.monotonic() < deadline and (proc.poll() is None or _alive(victims)):
        time.sleep(0.02)
    victims = list({*victims, *descendants(proc.pid, marker)})
    _signal_all(proc.pid, [proc.pid, *victims], signal.SIGKILL)
    _reap(victims)
    return victims


class _Group:
    """A cgroup v2 of one run: every descendant of the program stays in it whatever it
    does to its session or environment (only a privileged process can move itself out)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.procs = str(path / "cgroup.procs")

    @classmethod
    def make(cls) -> _Group | None:
        base = cgroup_base()
        if base is None:
            return None
        try:
            path = base / f"redfirst-{os.getpid()}-{uuid.uuid4().hex[:12]}"
            path.mkdir()
        except OSError:
            return None
        _remove_stale(base)
        return cls(path)

    def enter(self) -> None:
        # In the child between fork and exec: from here on, all it starts is in the group.
        try:
            fd = os.open(self.procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        except OSError:
            pass     # the parent sees it is not a member and falls back to the subreaper

    def pids(self) -> list[int]:
        try:
            with open(self.procs, "rb") as f:
                return [int(p) for p in f.read().split()]
        except OSError:
            return []

    def live(self) -> list[int]:
        return [p for p in self.pids() if _alive([p])]

    def kill(self) -> None:
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            # A kernel before 5.14 has no cgroup.kill: each member, until none is left.
            _signal_each(self.pids(), signal.SIGKILL)

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass     # still populated: what escaped is reported; the empty folder goes with it later


def _remove_stale(base: Path) -> None:
    # A group left by a run whose escapees have died since, made by a process now gone.
    for entry in os.scandir(base):
        owner = entry.name.split("-")[1] if entry.name.startswith("redfirst-") else ""
        if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            try:
                os.rmdir(entry.path)
            except OSError:
                pass


def _cgroup2_folder() -> Path | None:
    """This process's own folder in the cgroup v2 hierarchy, if it is mounted."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            own = next((line[3:].strip() for line in f if line.startswith("0::")), None)
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    if own is None:
        return None
    for fields in mounts:
        if "-" in fields and fields[fields.index("-") + 1] == "cgroup2":
            folder = Path(fields[4]) / own.lstrip("/")
            if (folder / "cgroup.procs").is_file():
                return folder
    return None


def cgroup_base() -> Path | None:
    """The cgroup v2 folder runs make their group in: this process's own, when we may
    write there (root, or a delegated subtree); None sends us to the subreaper instead."""
    folder = _cgroup2_folder()
    if folder is None or not os.access(folder, os.W_OK) or not os.access(folder / "cgroup.procs", os.W_OK):
        return None
    return folder


# Runs in flight in this process: an orphan of one of them is swept when the last ends
# (with runs overlapping, it could be any of theirs that is still running).
_inflight = threading.Lock()
_runs = 0
_direct: set[int] = set()


def _oom_score_adj(pid: int | str) -> int | None:
    try:
        with open(f"/proc/{pid}/oom_score_adj", "rb") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def _tree_tag() -> int | None:
    """The oom_score_adj that marks a run's tree without a cgroup: one above ours. It is
    inherited through fork and exec and kept by setsid and env -i, so an orphan adopted
    by us shows it, and our other children (a warm server, git) do not."""
    own = _oom_score_adj("self")
    return own + 1 if own is not None and own < 1000 else None


def _tagger(tag: int) -> Callable[[], None]:
    def tag_self() -> None:
        # In the child between fork and exec; raising one's own value needs no privilege.
        try:
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            try:
                os.write(fd, str(tag).encode())
            finally:
                os.close(fd)
        except OSError:
            pass
    return tag_self


def _begin_run() -> None:
    global _runs
    with _inflight:
        _runs += 1


def _end_run(tag: int | None) -> list[int]:
    """Kill what the runs of this process orphaned (adopted by us as subreaper, carrying
    the tree's tag), once the last run in flight ends. Returns the pids signalled."""
    global _runs
    with _inflight:
        _runs -= 1
        if _runs or tag is None:
            return []
        me = os.getpid()
        adopted = [pid for pid, (ppid, _, _) in _stat_table().items()
                   if ppid == me and pid not in _direct and _oom_score_adj(pid) == tag]
        _signal_each(adopted, signal.SIGKILL)
        return adopted


def _gone_or_escaped(pids: Sequence[int], group: _Group | None) -> tuple[int, ...]:
    """Wait a little for killed pids to go; those still alive escaped the kill."""
    pids = sorted(set(pids))
    deadline = time.monotonic() + _KILL_WAIT_S
    while True:
        _reap(pids)
        left = {p for p in pids if _alive([p])} | set(group.live() if group else [])
        if not left or time.monotonic() >= deadline:
            return tuple(sorted(left))
        pids = sorted({*pids, *left})
        time.sleep(0.02)


def _end_group(proc: subprocess.Popen[bytes], group: _Group, marker: bytes) -> tuple[int, ...]:
    members = group.live()
    if proc.poll() is not None and not members:
        # The usual end: it exited and nothing of it is left in its group (one read).
        group.remove()
        return ()
    tree = descendants(proc.pid, marker)      # also what a privileged member moved out of the group
    _signal_all(proc.pid, [proc.pid, *members, *tree], signal.SIGTERM)
    deadline = time.monotonic() + _GRACE_S
    while time.monotonic() < deadline and (proc.poll() is None or group.live() or _alive(tree)):
        time.sleep(0.02)
    group.kill()
    seen = [*members, *group.pids(), *tree, *descendants(proc.pid, marker)]
    _signal_all(proc.pid, seen, signal.SIGKILL)
    proc.wait()
    escaped = _gone_or_escaped([p for p in seen if p != proc.pid], group)
    if not escaped:
        group.remove()
    return escaped


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


class Contained:
    """A long-lived program (a leased command) held as `run` holds its tree, for a caller that waits on it itself.

    `preexec` goes to Popen; after the program has been started, `started(proc)`. `end()` then ends every
    process it started, whatever it did to its session, process group, descriptors or environment (a double-
    forking daemon with an empty environment too): the members of its cgroup v2, and every descendant of this
    process (`adopted`: the program, what it orphaned, re-parented to this subreaper, and theirs; a root daemon
    that left the cgroup and reset its tag included), so the process that holds a Contained must start nothing
    else while it runs. What was already below this process when the Contained was made (a daemon its caller
    started, re-parented to it as subreaper) is not the program's and is never listed nor signalled. A caller may
    rely on this:
    `end()` returns only once none of them is alive, except the pids it returns as escaped, and the pids it
    signalled are in `ended` (for the caller's audit)."""

    def __init__(self) -> None:
        _become_subreaper()
        self.before = {(pid, started_at(pid)) for pid in adopted(os.getpid())}
        self.group = _Group.make()
        self.tag = None if self.group else _tree_tag()
        self.proc: subprocess.Popen[bytes] | None = None
        self.ended: list[int] = []

    def preexec(self) -> None:
        if self.group is not None:
            self.group.enter()
        elif self.tag is not None:
            _tagger(self.tag)()

    def started(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        if self.group is not None and proc.pid not in self.group.pids() and proc.poll() is None:
            self.group.remove()     # it could not join: found by tag and tree instead
            self.group = None

    def members(self) -> list[int]:
        """The live processes the program started (the program itself excluded): the members of its cgroup, and
        every descendant of this process (`adopted`), which is the program's subreaper and starts nothing else."""
        found: set[int] = {p for p in adopted(os.getpid()) if (p, started_at(p)) not in self.before}
        if self.group is not None:
            found.update(self.group.live())
        if self.proc is not None:
            found.update(descendants(self.proc.pid))
        own = self.proc.pid if self.proc is not None else None
        return sorted(p for p in found if p != own and p != os.getpid() and _alive([p]))

    def end(self) -> tuple[int, ...]:
        """SIGTERM, a grace, SIGKILL to every member until none is left; the pids that escaped."""
        victims = self.members()
        if victims:
            self.ended = victims
            _signal_each(victims, signal.SIGTERM)
            deadline = time.monotonic() + _GRACE_S
            while time.monotonic() < deadline and self.members():
                _reap(self.ended)
                time.sleep(0.02)
        for _ in range(10):     # a member may fork between a look and the kill: until a look finds none
            if self.group is not None:
                self.group.kill()
            victims = self.members()
            if not victims:
                break
            self.ended = sorted({*self.ended, *victims})
            _signal_each(victims, signal.SIGKILL)
            _reap(victims)
        escaped = _gone_or_escaped(self.ended, self.group)
        if self.group is not None and not escaped:
            self.group.remove()
        return escaped


def run(argv: Sequence[str] | str, *, cwd: Path, env: Mapping[str, str], stdout: Path, stderr: Path | None,
        timeout: float) -> Exited:
    """Run `argv` (a string goes to `sh -c`) to completion or timeout; never raises for
    a program that fails, crashes or cannot start. `stderr=None` merges it into stdout."""
    _become_subreaper()
    command = ["/bin/sh", "-c", argv] if isinstance(argv, str) else list(argv)
    marker = f"{RUN_MARKER}={new_marker()}"
    env = {**env, RUN_MARKER: marker.split("=", 1)[1]}
    start = time.monotonic()
    group = _Group.make()
    tag = None if group else _tree_tag()
    if group is None:
        _begin_run()
    escaped: tuple[int, ...] = ()
    try:
        with open(stdout, "wb") as out, open(stderr or os.devnull, "wb") as err:
            try:
                proc = subprocess.Popen(command, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=err if stderr else subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=group.enter if group else _tagger(tag) if tag else None)
            except OSError as e:
                return Exited(False, None, None, False, time.monotonic() - start, f"{command[0]}: {e.strerror or e}")
            _direct.add(proc.pid)
            try:
                if group is not None and proc.pid not in group.pids() and proc.poll() is None:
                    # It could not join: the subreaper's way, then (without a tag, by tree only).
                    group.remove()
                    group = None
                    _begin_run()
                timed_out = not _wait(proc, timeout)
                # Whatever it left behind (background jobs, daemons) dies with it.
                if group is not None:
                    escaped = _end_group(proc, group, marker.encode())
                else:
                    victims = kill_tree(proc, marker.encode())
                    proc.wait()
                    escaped = _gone_or_escaped(victims, None)
            finally:
                _direct.discard(proc.pid)
    finally:
        adopted = _end_run(tag) if group is None else []
        if group is not None and not escaped:
            group.remove()
    if adopted:
        escaped = tuple(sorted({*escaped, *_gone_or_escaped(adopted, None)}))
    duration = time.monotonic() - start
    code = proc.returncode
    if timed_out:
        return Exited(True, None, None, True, duration, escaped=escaped)
    if code < 0:
        return Exited(True, None, -code, False, duration, escaped=escaped)
    return Exited(True, code, None, False, duration, escaped=escaped)
