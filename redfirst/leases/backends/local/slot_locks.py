"""The machine-wide lock folder and the OS locks in it: one lock file per slot identity (a GPU's
UUID, whatever lease file names it), and the writer lock every grant of every lease file is made under.

Guarantee: nothing is granted on a lost lock (`_writer_lock`: a lock on a file that was removed or
replaced excludes no one, so it is taken again on the file the path names now).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import stat
import threading
import time
from pathlib import Path

from redfirst.leases import procs
from redfirst.leases.backends.local.store import LeaseFile
from redfirst.leases.model import (
    LeaseError,
    NotGranted,
)
from redfirst.leases.procs import ProcessId

# Where the machine-wide lock folder may live, first fit wins. Fixed paths, never TMPDIR: every process of
# the machine must pick the same one whatever its environment (two folders would grant one GPU twice).
LOCK_BASES = (Path("/run/lock"), Path("/dev/shm"), Path("/tmp"))


def machine_lock_dir() -> Path:
    """The folder where the locks and claims of declared boxes and the CPU slot live: the machine's own
    (`gpu_lock_dir`), or `REDFIRST_LOCK_DIR`, a private "machine" for tests and benches.

    A real GPU's lock and claim always live in `gpu_lock_dir()`, whatever REDFIRST_LOCK_DIR says: two
    processes that set it differently must still exclude each other on the machine's GPUs."""
    env = os.environ.get("REDFIRST_LOCK_DIR")
    if env:
        return Path(env)
    return gpu_lock_dir()


def gpu_lock_dir() -> Path:
    """The one folder of this machine where the locks and claims of its GPUs live.

    `<base>/redfirst` in the first of LOCK_BASES that is a world-writable sticky folder: a property of
    the machine, the same for root and every user (whether this user could write a root-only /run/lock
    would split root's processes from the others'). LeaseError names the bases when none is."""
    for base in LOCK_BASES:
        try:
            mode = os.stat(base).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) and mode & 0o1002 == 0o1002:     # others may write, sticky: like /tmp
            return base / "redfirst"
    raise LeaseError(f"no machine-wide lock folder: none of {', '.join(map(str, LOCK_BASES))} is a world-writable "
                     f"sticky folder (mode 1777), so leases of one machine could not exclude each other")


WRITER_STOPPED_AFTER = 0.5    # a writer lock holder stopped this long is killed (the lock is held for milliseconds)
def _flock_holders(path: Path) -> list[int]:
    """The pids that hold (not wait for) a flock on `path`, from /proc/locks."""
    try:
        st = os.stat(path)
        text = Path("/proc/locks").read_text()
    except OSError:
        return []
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    return [int(f[4]) for f in (line.split() for line in text.splitlines())
            if len(f) >= 8 and f[1] == "FLOCK" and f[5] == key and f[4].isdigit()]


def _wait_for_writer_lock(gate: int, path: Path, until: float | None = None) -> list[ProcessId]:
    """Take the machine-wide writer lock; the writers SIGKILLed because SIGSTOP froze them inside it.
    With `until` (time.monotonic()), NotGranted once it has passed without the lock (a stopped holder, about
    to be killed, is waited for up to twice WRITER_STOPPED_AFTER longer).

    Held only for a transaction (milliseconds), the lock held by a stopped process would stall every
    grant of every lease file on the machine for as long as it stays stopped. Such a holder is never
    resumed (it would run on, a lease holder acting while others judge it stopped): it is killed, which
    rolls its transaction back, so it writes nothing late. A traced process, or another user's, is waited for."""
    killed: list[ProcessId] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(WRITER_STOPPED_AFTER):
            for pid in _flock_holders(path):
                if pid != os.getpid() and procs.state(pid) == "T":
                    proc = _kill_stopped(pid)
                    if proc is not None:
                        killed.append(proc)

    watcher = threading.Thread(target=watch, name="writer-lock-watch", daemon=True)
    watcher.start()
    try:
        if until is None:
            fcntl.flock(gate, fcntl.LOCK_EX)
        else:
            pause = 0.001
            while True:
                try:
                    fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    now = time.monotonic()
                    # A holder stopped inside the lock is the watcher's to kill (WRITER_STOPPED_AFTER): waited for.
                    stopped = now < until + 2 * WRITER_STOPPED_AFTER and any(
                        procs.state(pid) in ("T", "t") for pid in _flock_holders(path))
                    if now >= until and not stopped:
                        raise NotGranted(f"the machine-wide writer lock {path} stayed held by "
                                         f"{', '.join(map(str, _flock_holders(path))) or 'another process'} "
                                         f"past the wait") from None
                    time.sleep(pause)
                    pause = min(pause * 2, 0.01)
    finally:
        done.set()
        watcher.join()
    return killed


def _kill_stopped(pid: int) -> ProcessId | None:
    """SIGKILL `pid` if it is (still) that stopped process; through a pidfd, so a reused pid is never hit."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        proc = procs.identify(pid)     # read after the pidfd pins the process: it is the one the fd names
        if proc is None or procs.state(pid) != "T":
            return None
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        return proc
    except OSError:         # another user's process: we can only wait
        return None
    finally:
        os.close(fd)


def _open_shared(path: Path, mark: bytes = b"") -> int:
    """A lock file every user of the machine can open (the umask would narrow the mode), holding `mark` if new.

    An existing file is opened without O_CREAT: in a sticky world-writable folder, fs.protected_regular refuses
    O_CREAT on another user's file, even one every user may write."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR)
            break
        except FileNotFoundError:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
                break
            except FileExistsError:
                continue        # made meanwhile by another process: open that one
    with contextlib.suppress(OSError):
        st = os.fstat(fd)
        if st.st_mode & 0o777 != 0o666:
            os.fchmod(fd, 0o666)
        if mark and st.st_size == 0:
            os.pwrite(fd, mark, 0)
    return fd


def _lock_mark(folder: Path) -> bytes:
    """What a slot's lock file holds: the folder it was made in, by the path every process names it by."""
    return f"redfirst slot lock in {os.path.abspath(folder)}\n".encode()


def _flocked() -> set[int]:
    """The inodes of the files some process holds a flock on, from /proc/locks (whose device numbers are the
    superblock's, which a file system such as btrfs does not show in stat: the lock file's mark tells its folder)."""
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return set()
    return {int(f[5].rsplit(":", 1)[1]) for f in (line.split() for line in text.splitlines())
            if len(f) >= 8 and f[1] == "FLOCK" and f[5].count(":") == 2 and f[5].rsplit(":", 1)[1].isdigit()}




class SlotLocks(LeaseFile):
    def slot_identity(self, box: str, slot: str) -> str:
        """What a slot is on this machine, whichever lease file names it: a GPU's UUID, `cpu0`, or `<box>.<slot>`."""
        if box != "local":
            return f"{box}.{slot}"
        for g in self._box("local").gpus:
            if g.slot == slot and g.uuid:
                return g.uuid
        return slot

    def _visible(self, box: str, slot: str) -> str:
        named = self.slot_identity(box, slot)
        return named if named.startswith("GPU-") else slot[3:]

    def lock_path(self, box: str, slot: str) -> Path:
        return self._folder(box, slot) / f"{self.slot_identity(box, slot)}.lock"

    def _folder(self, box: str, slot: str) -> Path:
        # A real GPU (named by its UUID) is the machine's: its lock and claim live in the machine's folder.
        return self._gpu_locks() if self.slot_identity(box, slot).startswith("GPU-") else self.locks

    def _gpu_locks(self) -> Path:
        if self._gpu_folder is None:
            self._gpu_folder = gpu_lock_dir() if self._private_locks else self.locks
        return self._gpu_folder

    def _writer_folders(self) -> list[Path]:
        """The folders whose writer lock a transaction holds, in the one order every process takes them.

        One writer lock for the whole machine: a grant in one lease file sees the claims of all others.
        With REDFIRST_LOCK_DIR on a machine with GPUs, the GPUs' folder is the machine's, so its writer
        lock is taken first, then the private one."""
        if not self._private_locks or not any(g.uuid for g in self._box("local").gpus):
            return [self.locks]
        return [self._gpu_locks(), self.locks]

    def _writer_lock(self, folder: Path, until: float | None = None) -> tuple[int, list[ProcessId]]:
        """Hold `folder`'s writer lock: (its fd, the writers SIGKILLed because SIGSTOP froze them inside it);
        NotGranted when `until` (time.monotonic()) passes first."""
        gates: dict[Path, int] = self._tls.__dict__.setdefault("gates", {})
        path = folder / "writer.lock"
        killed: list[ProcessId] = []
        while True:
            if folder not in gates:
                if not folder.is_dir():     # removed under us: made again, for every user (the umask would narrow it)
                    folder.mkdir(parents=True, exist_ok=True)
                    with contextlib.suppress(OSError):
                        folder.chmod(0o1777)
                gates[folder] = _open_shared(path)
            gate = gates[folder]
            # Writers queue on a kernel lock that wakes the next one at once; SQLite's own busy
            # handler sleeps up to 100 ms between retries, which is most of a grant's latency under load.
            try:
                fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                killed += _wait_for_writer_lock(gate, path, until)
            try:
                if os.stat(path).st_ino == os.fstat(gate).st_ino:
                    return gate, killed
            except FileNotFoundError:
                pass
            # The folder was removed (or the file replaced): a lock on the old file no longer excludes anyone.
            fcntl.flock(gate, fcntl.LOCK_UN)
            os.close(gate)
            del gates[folder]

    def open_lock(self, box: str, slot: str) -> int:
        """An fd of the slot's lock file, made (for every user, marked with its folder) if it is not there."""
        return _open_shared(self.lock_path(box, slot), _lock_mark(self._folder(box, slot)))

    def _lock_free(self, box: str, slot: str) -> bool:
        fd = self.open_lock(box, slot)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)    # closing drops the probe's lock too
        return True

    def _former_lock_holders(self, box: str, slot: str) -> list[ProcessId]:
        """The processes that hold a lock on a file that was this slot's lock file, not the one its path names now.

        The folder was removed (the file shows as deleted), moved away, or replaced by a symlink while a command
        held the lock. Each lock file says which folder it was made in (`_lock_mark`), so one of another
        folder (a test's own "machine") is never taken for it."""
        path = self.lock_path(box, slot)
        try:
            st = os.stat(path)
            current: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            current = None
        gone = os.path.realpath(path) + " (deleted)"
        mark = _lock_mark(self._folder(box, slot))
        locked = _flocked()
        found: list[ProcessId] = []
        for pid, fd_path, link in procs.files_named(path.name):
            try:
                st = os.stat(fd_path)
                if (st.st_dev, st.st_ino) == current or st.st_ino not in locked:
                    continue
                if link != gone:
                    with open(fd_path, "rb") as f:
                        if f.read(len(mark) + 1) != mark:
                            continue
            except OSError:
                continue
            proc = procs.identify(pid)
            if proc is not None and proc not in found:
                found.append(proc)
        return found
