"""Process identity that survives pid reuse: (pid, boot id, start time), and stopping what a lease started."""

from __future__ import annotations

import contextlib
import getpass
import os
import signal
import socket
import time
from dataclasses import dataclass
from functools import cache

from redfirst.leases.clock import namespace_offset

# Clock ticks this process's time namespace adds to the start times /proc shows it (0 in the machine's own).
_TICKS_AHEAD = round(namespace_offset() * os.sysconf("SC_CLK_TCK"))


@cache
def boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def machine_id() -> str:
    """This machine's identity, as a lease file records it beside its boot id: `/etc/machine-id` (else D-Bus's
    copy, else "no-machine-id") @ the hostname, and the machine-wide lock folder when `REDFIRST_LOCK_DIR` names a
    private "machine" (tests, benches). A caller may rely on it being the same in every boot of one machine and
    different on two machines unless both share a cloned machine-id and a hostname (and, when set, the lock
    folder): a lease of another boot is this machine's earlier boot only if its record equals this."""
    ident = "no-machine-id"
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path, encoding="ascii", errors="replace") as f:
                ident = f.read().strip() or ident
        except OSError:
            continue
        break
    ident = f"{ident}@{socket.gethostname()}"
    private = os.environ.get("REDFIRST_LOCK_DIR")
    return f"{ident}:{os.path.abspath(private)}" if private else ident


@dataclass(frozen=True)
class ProcessId:
    pid: int
    boot: str
    start: int          # clock ticks since boot (field 22 of /proc/PID/stat)

    def __str__(self) -> str:
        return f"pid {self.pid} (boot {self.boot[:8]}, start {self.start})"


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a process, or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = data[data.rfind(b")") + 2:].split()
    # The kernel shows start times in the reader's time namespace: taken back to the machine's boot clock,
    # a process has one identity for every reader.
    return fields[0].decode(), int(fields[19]) - _TICKS_AHEAD


def identify(pid: int) -> ProcessId | None:
    st = _stat(pid)
    return ProcessId(pid, boot_id(), st[1]) if st else None


def state(pid: int) -> str | None:
    """The process's state letter (R, S, T stopped, t traced, Z, ...), or None when it does not exist."""
    st = _stat(pid)
    return st[0] if st else None


def user_name(numeric: str = "uid ") -> str:
    """This process's user name, or `<numeric><uid>` for a uid no passwd entry names (a container run with --user N)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"{numeric}{os.getuid()}"


def me() -> ProcessId:
    ident = identify(os.getpid())
    assert ident is not None
    return ident


def is_alive(proc: ProcessId) -> bool:
    """True while this very process (not a later one with its pid) runs; a zombie is dead."""
    if proc.boot != boot_id():
        return False
    st = _stat(proc.pid)
    return st is not None and st[1] == proc.start and st[0] not in ("Z", "X")


def ancestors() -> list[ProcessId]:
    """This process and its ancestors, nearest first, up to (not including) pid 0."""
    chain: list[ProcessId] = []
    pid = os.getpid()
    while pid > 0 and len(chain) < 4096:
        ident, parent = identify(pid), _group(pid, field=1)
        if ident is None or parent is None:
            break
        chain.append(ident)
        pid = parent[1]
    return chain


def cmdline(pid: int) -> str:
    """A process's command line (its title, where it set one), arguments joined by spaces; '' when gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def holders_of(path: str) -> list[int]:
    """Every process with `path` open (an inherited slot lock), wherever its process group or session went."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fds = os.scandir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        with fds:
            for fd in fds:
                with contextlib.suppress(OSError):
                    if os.readlink(fd.path) == path:
                        found.append(int(entry.name))
                        break
    return found


def write_lockers(paths: list[str]) -> list[str]:
    """Who holds a POSIX write lock on any of `paths` (an SQLite file, its -wal and -shm): 'pid N (command line)'
    for each process other than this one, from /proc/locks; [] where none is seen or /proc/locks cannot be read.
    SQLite's writer (a transaction on a WAL file, or a rollback journal's RESERVED/EXCLUSIVE) holds one."""
    inodes = set()
    for path in paths:
        with contextlib.suppress(OSError):
            st = os.stat(path)
            inodes.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    pids: list[int] = []
    try:
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    for line in lines:
        words = line.split()
        if "->" in words or len(words) < 6 or words[1] != "POSIX" or words[3] != "WRITE":
            continue
        with contextlib.suppress(ValueError):
            major, minor, ino = words[5].split(":")
            pid = int(words[4])
            if (int(major, 16), int(minor, 16), int(ino)) in inodes and pid not in (0, os.getpid()) \
                    and pid not in pids:
                pids.append(pid)
    return [f"pid {pid} ({cmdline(pid)[:200] or 'gone'})" for pid in pids]


def with_env(name: str, value: str) -> list[int]:
    """Every process (of the users this one may inspect) whose environment sets `name` to `value`."""
    entry = f"{name}={value}".encode()
    found = []
    for d in os.scandir("/proc"):
        if d.name.isdigit() and int(d.name) != os.getpid():
            try:
                with open(f"/proc/{d.name}/environ", "rb") as f:
                    if entry in f.read().split(b"\0"):
                        found.append(int(d.name))
            except OSError:
                continue
    return found


def group_of(pid: int) -> int | None:
    """The process group of a process, or None when it does not exist."""
    st = _group(pid)
    return st[1] if st else None


def files_named(name: str) -> list[tuple[int, str, str]]:
    """(pid, /proc path of the fd, the file's path) of every open file named `name` (removed or not), in any folder."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            fds = os.scandir(f"/proc/{entry.name}/fd")
        except OSError:
            continue
        with fds:
            for fd in fds:
                with contextlib.suppress(OSError):
                    link = os.readlink(fd.path)
                    if os.path.basename(link.removesuffix(" (deleted)")) == name:
                        found.append((int(entry.name), fd.path, link))
    return found


def signal_tree(proc: ProcessId, pgid: int | None, sig: int) -> bool:
    """Send `sig` to the process group the leased command leads (or the process alone); False if gone.

    The group outlives its leader: a child that exited leaves its own children in the group
    (without the slot lock when they did not inherit it), and they must be stopped too."""
    if proc.boot != boot_id():
        return False
    if pgid is not None and pgid == proc.pid:
        st = _stat(proc.pid)
        if st is not None and st[1] != proc.start:
            return False        # the pid was reused, so the group it led is gone (a group id pins its pid)
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    if not is_alive(proc):
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(proc.pid, sig)
    return True


def running(proc: ProcessId, pgid: int | None) -> bool:
    """True while the process, or the group it led, still has a member that is not a zombie."""
    if is_alive(proc):
        return True
    if not signal_tree(proc, pgid, 0):
        return False
    # The leader is gone but the group answers: it is running only if a member is not a zombie.
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = _group(int(entry.name))
            if st is not None and st[1] == pgid and st[0] not in ("Z", "X"):
                return True
    return False


def _group(pid: int, field: int = 2) -> tuple[str, int] | None:
    """(state, process group) of a process (`field` 1: its parent instead), or None when it does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return fields[0].decode(), int(fields[field])


def stop(proc: ProcessId, pgid: int | None, grace: float = 2.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds, to the process tree of a leased command."""
    if not signal_tree(proc, pgid, signal.SIGTERM):
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        if not running(proc, pgid):
            return
        time.sleep(0.02)
    signal_tree(proc, pgid, signal.SIGKILL)
