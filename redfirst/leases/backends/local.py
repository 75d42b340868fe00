"""The `local` backend: this machine (and boxes declared in redfirst.yaml), leased through one SQLite file.

The guarantee lives in `_attempt`: one `BEGIN IMMEDIATE` transaction reaps dead and expired
holders, serves waiters first come first served, and grants only slots that no live lease
holds (the partial unique index `one_live_lease_per_slot` refuses any double grant), whose
OS lock no process holds, and that no other lease file has claimed. Locks and claims live in one
machine-wide folder (`machine_lock_dir()`), keyed by the GPU's identity (its UUID; `cpu0` for
the CPU slot), whatever lease file or XDG_STATE_HOME is used; every grant of every lease file
is made under that folder's one writer lock. The OS lock (`flock` on `<identity>.lock`) is
taken by the process that runs the leased command (`leases.exec`) and inherited by its children,
so a holder that crashed with a child still running keeps its slot until its TTL stops that
child. Tokens carry the lease file's creation id, so a token of another or a wiped lease file is
never taken for a live one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import socket
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from leases import clock, detect, procs, wal
from leases.backends import LEASE_BACKEND_ENV
from leases.config import LeasesConfig
from leases.model import (
    AuditEvent,
    Box,
    Lease,
    LeaseError,
    LeaseRequest,
    NotGranted,
    StaleLease,
    Unsatisfiable,
)
from leases.procs import ProcessId
from leases.selector import parse

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('creation_id', lower(hex(randomblob(6))));
CREATE TABLE IF NOT EXISTS fences (box TEXT PRIMARY KEY, fence INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
  id TEXT PRIMARY KEY, box TEXT NOT NULL, slots TEXT NOT NULL, whole_box INTEGER NOT NULL,
  fence INTEGER NOT NULL, holder TEXT NOT NULL, holder_pid INTEGER, holder_boot TEXT, holder_start INTEGER,
  ttl REAL NOT NULL, granted_at REAL NOT NULL, expires_at REAL NOT NULL, deadline REAL,
  purpose TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, ended_at REAL, end_reason TEXT,
  expires_boot REAL, deadline_boot REAL);
CREATE INDEX IF NOT EXISTS leases_held ON leases(box) WHERE state = 'held';
CREATE TABLE IF NOT EXISTS lease_slots (
  lease_id TEXT NOT NULL, box TEXT NOT NULL, slot TEXT NOT NULL, live INTEGER NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS one_live_lease_per_slot ON lease_slots(box, slot) WHERE live = 1;
CREATE INDEX IF NOT EXISTS lease_slots_by_lease ON lease_slots(lease_id);
CREATE TABLE IF NOT EXISTS procs (
  lease_id TEXT NOT NULL, pid INTEGER NOT NULL, boot TEXT NOT NULL, start INTEGER NOT NULL,
  pgid INTEGER, term_at REAL, term_boot REAL);
CREATE TABLE IF NOT EXISTS waiters (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, ticket INTEGER, box TEXT NOT NULL,
  pid INTEGER NOT NULL, boot TEXT NOT NULL, start INTEGER NOT NULL, seen REAL NOT NULL,
  gpus INTEGER NOT NULL, whole INTEGER NOT NULL, ttl REAL NOT NULL, max_runtime REAL,
  purpose TEXT NOT NULL, detached INTEGER NOT NULL, seen_boot REAL);
CREATE INDEX IF NOT EXISTS waiters_by_box ON waiters(box, ticket);
CREATE TABLE IF NOT EXISTS granted (ticket INTEGER PRIMARY KEY, lease_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS box_slots (box TEXT PRIMARY KEY, slots TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reservations (box TEXT NOT NULL, slot TEXT NOT NULL, ticket INTEGER NOT NULL,
  PRIMARY KEY (box, slot));
CREATE TABLE IF NOT EXISTS audit (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, event TEXT NOT NULL, lease_id TEXT NOT NULL,
  box TEXT NOT NULL, slots TEXT NOT NULL, fence INTEGER NOT NULL, holder TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '', at_boot REAL, evidence TEXT NOT NULL DEFAULT '');
"""

# Every expiry decision is on CLOCK_BOOTTIME (`leases.clock`): the *_boot columns. The wall-clock columns
# beside them (expires_at, deadline, seen, term_at) are still written, for people and for an older redfirst
# reading the file; these triggers refuse that older redfirst's grants and waiters, which would carry no
# boottime expiry (a lease that never expired), with a message that names why.
TRIGGERS = """
CREATE TRIGGER IF NOT EXISTS leases_expire_on_boottime BEFORE INSERT ON leases WHEN NEW.expires_boot IS NULL
BEGIN SELECT RAISE(ABORT, 'this lease file was upgraded by a newer redfirst (expiry on CLOCK_BOOTTIME): upgrade redfirst to lease from it'); END;
CREATE TRIGGER IF NOT EXISTS waiters_seen_on_boottime BEFORE INSERT ON waiters WHEN NEW.seen_boot IS NULL
BEGIN SELECT RAISE(ABORT, 'this lease file was upgraded by a newer redfirst (expiry on CLOCK_BOOTTIME): upgrade redfirst to lease from it'); END;
"""

# `PRAGMA user_version` of a lease file this code made or upgraded; an older file is upgraded in place
# (`_upgrade`), a newer one refused.
SCHEMA_VERSION = 2
TRANSIENT = ("waiters", "granted", "reservations")   # rows of live processes only: remade when a column cannot be added

# Threads of one process that wait on one lease file wake as soon as one of them frees a slot;
# waiters in other processes notice by polling.
_WAKE: dict[str, threading.Condition] = {}
_WAKE_LOCK = threading.Lock()

STOP_GRACE = 2.0        # seconds between SIGTERM and SIGKILL for a stale lease's processes (at most TTL/3)


def grace(ttl: float) -> float:
    """SIGTERM goes out this long before an unrenewed lease expires, SIGKILL when it does: the grace is
    part of the TTL, so a stopped or hung holder's slot is free again at its TTL, not TTL + grace."""
    return min(STOP_GRACE, ttl / 3.0)
WAITER_STALE = 10.0     # a waiter that has not polled for this long has gone away
STOPPED = ("T", "t")    # /proc states of a process stopped by a signal or a tracer


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


class LocalBackend:
    name = "local"

    def __init__(self, config: LeasesConfig) -> None:
        self.config = config
        self.db = config.db_path()
        self.locks = machine_lock_dir()
        self._private_locks = bool(os.environ.get("REDFIRST_LOCK_DIR"))     # a test's own "machine" (`_folder`)
        self.read_only = False
        self._absent = ""       # why the lease file, which does not exist, cannot be made (a read-only state folder)
        try:
            self.db.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise LeaseError(f"cannot create the lease file {self.db}: {exc.strerror or exc}") from None
            self._absent = f"its folder cannot be made: {exc.strerror or exc}"
        if self.db.exists() and not self.db.is_file():
            raise LeaseError(f"the lease file {self.db} is not a file (a folder or device is in its place)")
        try:
            if not self.locks.is_dir():
                self.locks.mkdir(parents=True, exist_ok=True)
                self.locks.chmod(0o1777)    # every user of the machine shares it, like /tmp
        except OSError as exc:
            raise LeaseError(f"cannot create the machine-wide lock folder {self.locks}: "
                             f"{exc.strerror or exc}") from None
        self._tls = threading.local()
        self._boxes: list[Box] | None = None
        self._gpu_folder: Path | None = None
        with _WAKE_LOCK:
            self._wake = _WAKE.setdefault(str(self.db.resolve()), threading.Condition())
        try:
            if not self._absent and not self.db.exists() and (not os.access(self.db.parent, os.W_OK | os.X_OK)
                                                              or _read_only_fs(self.db)):
                self._absent = "its folder is read-only"
            if self._absent:
                self._open_read_only()      # nothing was ever leased from it: reads answer, writes are refused
            elif self.db.exists() and not os.access(self.db.parent, os.W_OK | os.X_OK) or _read_only_fs(self.db):
                self._open_read_only()
                self._refuse_newer(self._version())
            elif self._refuse_newer(self._version()) < SCHEMA_VERSION:
                # Made (or upgraded) once, under the writer lock: a process stopped in a write outside it would
                # hold the file's SQLite lock while every writer, inside the machine-wide lock, waited for it.
                with self._faults(), self._tx_raw() as conn:
                    if self._refuse_newer(self._version()) < SCHEMA_VERSION:
                        self._upgrade(conn)
            if not self.read_only:
                self._renew_creation_id_of_a_copy()
            row = self._conn().execute("SELECT value FROM meta WHERE key = 'creation_id'").fetchone()
            self.creation_id = str(row[0]) if row else "0"
            if not self.read_only:
                self._end_what_another_boot_held()
        except sqlite3.Error as exc:
            raise LeaseError(f"cannot open the lease file {self.db}: {exc}") from None

    def _version(self) -> int:
        return int(self._conn().execute("PRAGMA user_version").fetchone()[0])

    def _refuse_newer(self, version: int) -> int:
        if version > SCHEMA_VERSION:
            raise LeaseError(f"the lease file {self.db} was made by a newer redfirst (schema {version}; this one "
                             f"knows up to {SCHEMA_VERSION}): upgrade redfirst, or set REDFIRST_LEASES_DB to "
                             f"another lease file")
        return version

    def _upgrade(self, conn: sqlite3.Connection) -> None:
        """Make a new lease file, or bring one an older redfirst made up to SCHEMA, keeping its leases.

        Tables and columns it lacks are added; its wall-clock expiries are carried over to CLOCK_BOOTTIME
        (a lease that expired before this boot comes out expired); a table of live processes' rows
        (TRANSIENT) that lacks a column SQLite cannot add is remade empty (its waiters join the line again)."""
        fresh = sqlite3.connect(":memory:")
        fresh.executescript(SCHEMA)
        wanted = {table: fresh.execute(f"PRAGMA table_info({table})").fetchall() for (table,) in fresh.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%'").fetchall()}
        fresh.close()
        for table, columns in wanted.items():
            have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
            if not have:
                continue        # made by the script below
            for _, col, kind, notnull, default, _ in columns:
                if col in have:
                    continue
                if notnull and default is None:
                    if table not in TRANSIENT:
                        raise LeaseError(f"the lease file {self.db} was made by an older redfirst whose table "
                                         f"{table} lacks column {col}, which cannot be added: move the file away "
                                         f"(its leases end by their TTL) or set REDFIRST_LEASES_DB to another")
                    conn.execute(f"DROP TABLE {table}")
                    break
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {col} {kind}"
                             + (f" NOT NULL DEFAULT {default}" if notnull else ""))
        for statement in (SCHEMA + TRIGGERS).split(";\n"):
            if statement.strip():
                conn.execute(statement)
        t = clock.now()
        shift = t.wall - t.boot     # a wall-clock time minus this, the same moment on CLOCK_BOOTTIME
        conn.execute("UPDATE leases SET expires_boot = expires_at - ?, deadline_boot = deadline - ?"
                     " WHERE expires_boot IS NULL", (shift, shift))
        conn.execute("UPDATE waiters SET seen_boot = seen - ? WHERE seen_boot IS NULL", (shift,))
        conn.execute("UPDATE procs SET term_boot = term_at - ? WHERE term_boot IS NULL AND term_at IS NOT NULL",
                     (shift,))
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('boot_id', ?)", (procs.boot_id(),))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _end_what_another_boot_held(self) -> None:
        """A lease file last used in another boot: every lease it held has ended (its processes died with that
        boot, and its CLOCK_BOOTTIME readings mean nothing in this one); its waiters are gone."""
        with self._faults():
            row = self._conn().execute("SELECT value FROM meta WHERE key = 'boot_id'").fetchone()
            if row is not None and row[0] == procs.boot_id():
                return
            with self._tx_raw() as conn:
                row = conn.execute("SELECT value FROM meta WHERE key = 'boot_id'").fetchone()
                if row is not None and row[0] == procs.boot_id():
                    return
                t = clock.now()
                rebooted = t.at(0.0)    # it ended no later than this boot began
                for lease in conn.execute("SELECT * FROM leases WHERE state = 'held'").fetchall():
                    self._end(conn, lease, rebooted, "expire",
                              f"the machine rebooted (boot {str(row[0] if row else 'unknown')[:8]} ended)")
                for table in ("waiters", "granted", "procs", "reservations"):
                    conn.execute(f"DELETE FROM {table}")
                conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('boot_id', ?)", (procs.boot_id(),))

    def _renew_creation_id_of_a_copy(self) -> None:
        """A copied lease file (a restored cache, a template state folder) gets a creation id of its own.

        The copy's rows and tokens are the original's: with one id, each file would take the other's
        claims for its own and grant a slot the other holds, under the same token. SQLite never moves
        its file to another inode, so another inode than the one it was made on means a copy."""
        with self._faults():
            here = str(os.stat(self.db).st_ino)
            row = self._conn().execute("SELECT value FROM meta WHERE key = 'file_id'").fetchone()
            if row is not None and row[0] == here:
                return
            with self._tx_raw() as conn:
                row = conn.execute("SELECT value FROM meta WHERE key = 'file_id'").fetchone()
                if row is not None and row[0] != here:
                    conn.execute("UPDATE meta SET value = lower(hex(randomblob(6))) WHERE key = 'creation_id'")
                    # Its leases and waiters are the original's processes: the original's claims speak for them.
                    conn.execute("UPDATE leases SET state = 'expired', ended_at = ?, end_reason = ? WHERE state"
                                 " = 'held'", (time.time(), "copied with its lease file: the original holds it"))
                    conn.execute("UPDATE lease_slots SET live = 0")
                    conn.execute("DELETE FROM waiters")
                    conn.execute("DELETE FROM granted")
                    conn.execute("DELETE FROM procs")
                conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('file_id', ?)", (here,))

    def _open_read_only(self) -> None:
        """Reads only (`status`, `audit`): a folder that cannot be written cannot hold WAL's -shm either."""
        self.read_only = True
        if self._absent:
            # No lease file, and none can be made: an empty one in memory (no lease, no audit) answers the reads.
            conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=True)
            conn.executescript(SCHEMA + TRIGGERS)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("INSERT INTO meta (key, value) VALUES ('boot_id', ?)", (procs.boot_id(),))
        else:
            uri = f"file:{self.db}?mode=ro"
            if not (self.db.parent / (self.db.name + "-shm")).exists():
                uri += "&immutable=1"     # nobody can write a read-only folder, so nothing changes under us
            conn = sqlite3.connect(uri, uri=True, timeout=30.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        self._tls.conn = conn

    def _writable(self) -> None:
        if self.read_only:
            what = f"cannot be made ({self._absent})" if self._absent else "is read-only"
            raise LeaseError(f"the lease file {self.db} {what}: only `leases status`, `leases audit` and "
                             f"`leases boxes` work on a read-only state folder")

    # -- connections ---------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._tls, "conn", None)
        if conn is None and self.read_only:
            self._open_read_only()      # another thread's reads: opened as this thread's were
            conn = self._tls.conn
        if conn is None:
            conn = wal.connect(self.db, timeout=30.0, check_same_thread=True)
            conn.row_factory = sqlite3.Row
            self._tls.conn = conn
        return conn

    @contextlib.contextmanager
    def _faults(self) -> Iterator[None]:
        """SQLite and file-system faults (corrupt pages, disk full, a lost folder) as a LeaseError naming the file."""
        try:
            yield
        except sqlite3.Error as exc:
            raise LeaseError(f"lease file {self.db}: {exc}") from None
        except OSError as exc:
            raise LeaseError(f"lease file {self.db} (locks in {self.locks}): "
                             f"{exc.strerror or exc}{': ' + exc.filename if exc.filename else ''}") from None

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front so check-then-grant cannot interleave."""
        self._writable()
        with self._faults(), self._tx_raw() as conn:
            yield conn

    def _writer_folders(self) -> list[Path]:
        """The folders whose writer lock a transaction holds, in the one order every process takes them.

        One writer lock for the whole machine: a grant in one lease file sees the claims of all others.
        With REDFIRST_LOCK_DIR on a machine with GPUs, the GPUs' folder is the machine's, so its writer
        lock is taken first, then the private one."""
        if not self._private_locks or not any(g.uuid for g in self._box("local").gpus):
            return [self.locks]
        return [self._gpu_locks(), self.locks]

    def _gpu_locks(self) -> Path:
        if self._gpu_folder is None:
            self._gpu_folder = gpu_lock_dir() if self._private_locks else self.locks
        return self._gpu_folder

    @contextlib.contextmanager
    def _tx_raw(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        killed: list[ProcessId] = []
        held: list[int] = []
        try:
            for folder in self._writer_folders():
                gate, stopped = self._writer_lock(folder)
                held.append(gate)
                killed += stopped
            with self._committed(conn, killed) as tx:
                yield tx
        finally:
            for gate in reversed(held):
                fcntl.flock(gate, fcntl.LOCK_UN)

    def _writer_lock(self, folder: Path) -> tuple[int, list[ProcessId]]:
        """Hold `folder`'s writer lock: (its fd, the writers SIGKILLed because SIGSTOP froze them inside it)."""
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
                killed += _wait_for_writer_lock(gate, path)
            try:
                if os.stat(path).st_ino == os.fstat(gate).st_ino:
                    return gate, killed
            except FileNotFoundError:
                pass
            # The folder was removed (or the file replaced): a lock on the old file no longer excludes anyone.
            fcntl.flock(gate, fcntl.LOCK_UN)
            os.close(gate)
            del gates[folder]

    @contextlib.contextmanager
    def _committed(self, conn: sqlite3.Connection, killed: list[ProcessId]) -> Iterator[sqlite3.Connection]:
        """One transaction; what it voids in the machine-wide claims is voided once it has committed.

        Claims are files, outside the transaction: one that grants or extends writes them before its COMMIT
        (a committed lease always has its claim), one that ends voids them after it (a lease that is still
        held, because the ending transaction died or its COMMIT failed, never has a voided claim). A crash
        between the two leaves a claim that outlives its lease until its expiry or its holder's death:
        the slot looks busy a little longer, never free while held."""
        conn.execute("BEGIN IMMEDIATE")
        voids = self._tls.voids = []
        try:
            yield conn
            for proc in killed:     # after the body: the first transaction makes the audit table
                self._audit(conn, clock.now(), "stop", "", "", [], 0, "",
                            f"SIGKILL to {proc}: SIGSTOP froze it inside the machine-wide writer lock")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):     # a failed COMMIT may have rolled back already
                conn.execute("ROLLBACK")
            raise
        finally:
            self._tls.voids = None
        conn.execute("COMMIT")
        for box, slot, lease_id in voids:
            with contextlib.suppress(OSError):     # committed: a claim left unvoided only holds the slot longer
                self._void(box, slot, lease_id)

    # -- boxes ---------------------------------------------------------------------------------

    def boxes(self) -> list[Box]:
        if self._boxes is None:
            gpus, _ = detect.local_gpus()
            local_labels = detect.local_labels()
            declared_local = self.config.declared("local")
            if declared_local is not None and declared_local.gpus is not None:
                slots = _slots(declared_local.gpus)
                # A declared slot that is a GPU of this machine is that GPU (its UUID names its lock), as for
                # a repository that declares nothing: one GPU, one lock, whatever each repository declares.
                gpus = tuple(g for g in gpus if g.slot in slots)
                local_labels["gpus"] = str(declared_local.gpus)
            else:
                slots = tuple(g.slot for g in gpus) or ("cpu0",)
            if declared_local is not None:
                local_labels.update(declared_local.labels)
            note = detect.why_no_gpu() if not gpus and declared_local is None else ""
            boxes = [Box("local", self.name, slots, tuple(sorted(local_labels.items())), gpus, note)]
            for d in self.config.boxes:
                if d.name == "local":
                    continue
                labels = {"gpus": str(d.gpus or 0)}
                labels.update(d.labels)
                boxes.append(Box(d.name, self.name, _slots(d.gpus or 0), tuple(sorted(labels.items()))))
            self._boxes = boxes
        return list(self._boxes)

    def _box(self, name: str) -> Box:
        for b in self.boxes():
            if b.name == name:
                return b
        raise Unsatisfiable(f"no box named {name!r} (boxes: {', '.join(b.name for b in self.boxes())})")

    def candidates(self, request: LeaseRequest) -> list[Box]:
        """The boxes that could ever satisfy `request`; Unsatisfiable names what none has."""
        boxes = [self._box(request.box)] if request.box else self.boxes()
        if request.select:
            sel = parse(request.select)
            matching = [b for b in boxes if sel.matches(b.label_map)]
            if not matching:
                unmet = sel.first_unmet(boxes[0].label_map) if len(boxes) == 1 else None
                term = unmet or sel.terms[0]
                raise Unsatisfiable(f"no box has label {term} (selector {sel}; boxes: "
                                    f"{', '.join(b.name for b in boxes)})")
            boxes = matching
        fitting = [b for b in boxes if len(b.gpu_slots) >= request.gpus]
        if not fitting:
            raise Unsatisfiable(f"no box has gpus>={request.gpus} "
                                f"({', '.join(f'{b.name}: {len(b.gpu_slots)}' for b in boxes)})")
        return fitting

    # -- the grant ----------------------------------------------------------------------------

    def acquire(self, request: LeaseRequest, wait: float, *, detached: bool = False) -> Lease:
        # A detached lease (`leases acquire`) has no holder process: it lives by TTL and `renew` alone.
        boxes = self.candidates(request)
        me = procs.me()
        end = time.monotonic() + max(wait, 0.0)
        lease, ticket, reason = self._enqueue(request, boxes, me, detached)
        if lease is not None:
            return lease
        last_write = time.monotonic()
        queued = True
        try:
            while time.monotonic() < end:
                # The grant is made for this ticket by whoever frees the slots; a waiter only looks
                # for it, and takes the write lock itself when it sees something to reap or serve.
                with self._faults():
                    granted, urgent, place = self._look(ticket, boxes)
                now = time.monotonic()
                if granted or (urgent and now - last_write > 0.05) or now - last_write > 1.0:
                    last_write = now
                    lease, reason, gone = self._serve_and_claim(ticket, boxes)
                    if lease is not None:
                        queued = False
                        return lease
                    if gone:    # stopped or starved past WAITER_STALE, then dropped: join the line again
                        lease, ticket, reason = self._enqueue(request, boxes, me, detached)
                        if lease is not None:
                            queued = False
                            return lease
                with self._wake:
                    self._wake.wait(min(0.001 * (1 + place), 0.02))
            queued = False
            lease, reason, _ = self._serve_and_claim(ticket, boxes, give_up=True)
            if lease is not None:
                return lease
            raise NotGranted(reason)
        finally:
            if queued:     # interrupted while waiting: leave the queue
                with self._tx() as conn:
                    self._leave(conn, ticket)

    def _enqueue(self, request: LeaseRequest, boxes: list[Box], me: ProcessId,
                 detached: bool) -> tuple[Lease | None, int, str]:
        """Join the queue of every candidate box and serve it at once (in one transaction)."""
        with self._tx() as conn:
            now = clock.now()
            self._reap(conn, now, [b.name for b in boxes])
            ticket: int | None = None
            for box in boxes:
                # Whoever frees a slot serves this box's queue, maybe from a repository that never declared it.
                conn.execute("INSERT OR REPLACE INTO box_slots (box, slots) VALUES (?, ?)",
                             (box.name, ",".join(box.slots)))
                cur = conn.execute(
                    "INSERT INTO waiters (ticket, box, pid, boot, start, seen, seen_boot, gpus, whole, ttl,"
                    " max_runtime, purpose, detached) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (ticket, box.name, me.pid, me.boot, me.start, now.wall, now.boot, request.gpus,
                     int(request.whole_box), request.ttl, request.max_runtime, request.purpose, int(detached)))
                if ticket is None:
                    ticket = int(cur.lastrowid or 0)
                    conn.execute("UPDATE waiters SET ticket = ? WHERE seq = ?", (ticket, ticket))
            assert ticket is not None
            reasons = [self._serve(conn, box.name, now) for box in boxes]
            lease = self._claim(conn, ticket)
        return lease, ticket, "; ".join(r for r in reasons if r) or "queued behind earlier waiters"

    def _look(self, ticket: int, boxes: list[Box]) -> tuple[bool, bool, int]:
        """A read-only look: (granted to me, something to reap or serve, my place in the longest line)."""
        conn = self._conn()
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        seen = getattr(self._tls, "looked", None)
        if seen is not None and seen[0] == (ticket, version) and time.monotonic() - seen[1] < 0.1:
            return False, False, seen[2]     # nothing committed since the last look
        conn.execute("BEGIN")
        try:
            if conn.execute("SELECT 1 FROM granted WHERE ticket = ?", (ticket,)).fetchone():
                return True, False, 0
            now = clock.boottime()
            place = 0
            for box in boxes:
                ahead = conn.execute("SELECT COUNT(*) FROM waiters WHERE box = ? AND ticket < ?",
                                     (box.name, ticket)).fetchone()[0]
                place = max(place, ahead)
                self._tls.looked = ((ticket, version), time.monotonic(), place)
                if ahead > len(box.slots):
                    continue        # far back in line: only the front watches for dead holders
                held = conn.execute("SELECT * FROM leases WHERE state = 'held' AND box = ?", (box.name,)).fetchall()
                if any(self._reapable(r, now) for r in held):
                    return False, True, place
                if ahead == 0:
                    used = {slot for r in held for slot in r["slots"].split(",")}
                    if len(used) < len(box.slots):
                        return False, True, 0    # first in line and slots look free: serve (locks decide)
            return False, False, place
        finally:
            conn.execute("COMMIT")

    def _reapable(self, row: sqlite3.Row, now: float) -> bool:
        """Whether a held lease is due for a reap at `now` (CLOCK_BOOTTIME)."""
        if (now > row["expires_boot"] - grace(row["ttl"])
                or (row["deadline_boot"] is not None and now > row["deadline_boot"])):
            return True
        holder = _holder(row)
        return holder is not None and not procs.is_alive(holder)

    def _serve_and_claim(self, ticket: int, boxes: list[Box],
                         give_up: bool = False) -> tuple[Lease | None, str, bool]:
        """(the lease granted to `ticket`, why not, whether the ticket left the line: dropped as gone)."""
        with self._tx() as conn:
            now = clock.now()
            self._reap(conn, now, [b.name for b in boxes])
            conn.execute("UPDATE waiters SET seen = ?, seen_boot = ? WHERE ticket = ?", (now.wall, now.boot, ticket))
            reasons = [self._serve(conn, box.name, now) for box in boxes]
            lease = self._claim(conn, ticket)
            if lease is None and give_up:
                self._leave(conn, ticket)
            gone = lease is None and not conn.execute("SELECT 1 FROM waiters WHERE ticket = ?", (ticket,)).fetchone()
        return lease, "; ".join(r for r in reasons if r), gone

    def _claim(self, conn: sqlite3.Connection, ticket: int) -> Lease | None:
        row = conn.execute("SELECT lease_id FROM granted WHERE ticket = ?", (ticket,)).fetchone()
        if row is None:
            return None
        conn.execute("DELETE FROM granted WHERE ticket = ?", (ticket,))
        lease = conn.execute("SELECT * FROM leases WHERE id = ?", (row[0],)).fetchone()
        if lease["state"] != "held":
            # Expired before its waiter (descheduled, stopped) took it: the ticket is spent, so the
            # waiter joins the line again while its wait lasts. Never revived: another file may hold the slot now.
            return None
        return self._lease(lease)

    def _leave(self, conn: sqlite3.Connection, ticket: int) -> None:
        conn.execute("DELETE FROM waiters WHERE ticket = ?", (ticket,))
        row = conn.execute("SELECT lease_id FROM granted WHERE ticket = ?", (ticket,)).fetchone()
        if row is not None:    # granted after its waiter gave up: hand the slots back
            conn.execute("DELETE FROM granted WHERE ticket = ?", (ticket,))
            lease = conn.execute("SELECT * FROM leases WHERE id = ?", (row[0],)).fetchone()
            if lease["state"] == "held":
                self._end(conn, lease, clock.now(), "release", "its waiter gave up before taking it")

    def _serve(self, conn: sqlite3.Connection, name: str, now: clock.Instant) -> str:
        """Grant the box's free slots to its waiters strictly in arrival order; why the first one waits."""
        known = conn.execute("SELECT slots FROM box_slots WHERE box = ?", (name,)).fetchone()
        if known is None:
            return ""
        slots_all = tuple(known[0].split(","))
        box = Box(name, self.name, slots_all)
        skipped: set[int] = set()
        while True:
            w = conn.execute(f"SELECT * FROM waiters WHERE box = ? AND ticket NOT IN ({','.join('?' * len(skipped))})"
                             f" ORDER BY ticket LIMIT 1", (box.name, *skipped)).fetchone()
            if w is None:
                return ""
            waiter = ProcessId(w["pid"], w["boot"], w["start"])
            if not procs.is_alive(waiter) or now.boot - w["seen_boot"] > WAITER_STALE:
                conn.execute("DELETE FROM waiters WHERE ticket = ?", (w["ticket"],))
                continue
            if procs.state(waiter.pid) in STOPPED:
                # A stopped waiter cannot take a grant: it would sit on the slots for a whole TTL while live
                # waiters behind it wait. It keeps its place and is served once it runs again.
                skipped.add(w["ticket"])
                continue
            request = LeaseRequest(box=box.name, gpus=w["gpus"], whole_box=bool(w["whole"]), ttl=w["ttl"],
                                   max_runtime=w["max_runtime"], purpose=w["purpose"])
            slots, why, free = self._pick(conn, box, request, now)
            if slots is None:
                self._reserve(conn, box, w, free, now)
                return why
            lease = self._grant(conn, box, slots, request, None if w["detached"] else waiter, now)
            conn.execute("DELETE FROM waiters WHERE ticket = ?", (w["ticket"],))
            conn.execute("INSERT INTO granted (ticket, lease_id) VALUES (?, ?)", (w["ticket"], lease.id))

    def _reserve(self, conn: sqlite3.Connection, box: Box, w: sqlite3.Row, free: list[str],
                 now: clock.Instant) -> None:
        """Hand the free slots the head of the line cannot use yet to it, in the transaction that freed them.

        First come, first served without backfilling (a lease has no known end, so a backfilled one could
        delay the head without bound): a slot freed while the head waits for more is the head's from then
        on; no later waiter of this lease file is granted it. The audit records the hand-over as `reserve`."""
        conn.execute("DELETE FROM reservations WHERE box = ? AND ticket NOT IN (SELECT ticket FROM waiters)",
                     (box.name,))
        mine = {r[0] for r in conn.execute("SELECT slot FROM reservations WHERE box = ? AND ticket = ?",
                                          (box.name, w["ticket"]))}
        new = [s for s in free if s not in mine]
        if not new:
            return
        conn.executemany("INSERT OR REPLACE INTO reservations (box, slot, ticket) VALUES (?, ?, ?)",
                         [(box.name, s, w["ticket"]) for s in new])
        need = len(box.slots) if w["whole"] else max(w["gpus"], 1)
        self._audit(conn, now, "reserve", f"waiter.{w['ticket']}", box.name, sorted(mine | set(new)), 0,
                    f"pid {w['pid']}", f"the head of the line holds {len(mine) + len(new)} of the {need} slots"
                    f" it waits for")

    def _pick(self, conn: sqlite3.Connection, box: Box, request: LeaseRequest,
              now: clock.Instant) -> tuple[list[str] | None, str, list[str]]:
        """(the slots to grant or None, why not, the slots free now)."""
        # `now` is the transaction's one clock reading, the grant's stamp too: a claim judged expired by a
        # later reading would be granted over at a stamp before its expiry (the audit would show two holders).
        held = {r["slot"]: r["lease_id"] for r in conn.execute(
            "SELECT slot, lease_id FROM lease_slots WHERE box = ? AND live = 1", (box.name,))}
        pool = box.slots if (request.whole_box or request.gpus == 0) else box.gpu_slots
        # An ended lease's processes that run on without the lock (a child that did not inherit it) still use its slots.
        lingering = self._lingering(conn, "lease_id IN (SELECT id FROM leases WHERE box = ? AND state != 'held')",
                                    box.name)
        elsewhere = {s: c for s in pool if s not in held and ((c := self._stop_leftovers(box.name, s, now)) is not None
                                                              or (c := self._claim_elsewhere(box.name, s, now)) is not None
                                                              or (c := self._removed_lock_holders(box.name, s, now)))}
        free = [s for s in pool if s not in held and s not in lingering and s not in elsewhere
                and self._lock_free(box.name, s)]
        need = len(box.slots) if request.whole_box else max(request.gpus, 1)
        if len(free) >= need and (not request.whole_box or len(free) == len(box.slots)):
            return free[:need], "", free
        busy = [s for s in pool if s not in free]
        owners = sorted({held[s] for s in busy if s in held})
        others = sorted({f"{elsewhere[s]['lease']} of lease file {elsewhere[s]['db_path']}" for s in busy
                         if s in elsewhere and s not in held})
        who = (f"held by lease {', '.join(owners + others)}" if owners or others
               else "still locked by a stale lease's processes")
        return None, f"box {box.name} busy: {', '.join(busy)} {who}", free

    def _grant(self, conn: sqlite3.Connection, box: Box, slots: list[str], request: LeaseRequest,
               holder: ProcessId | None, now: clock.Instant) -> Lease:
        conn.execute("INSERT INTO fences (box, fence) VALUES (?, 1) "
                     "ON CONFLICT(box) DO UPDATE SET fence = fence + 1", (box.name,))
        fence = int(conn.execute("SELECT fence FROM fences WHERE box = ?", (box.name,)).fetchone()[0])
        issued = self._fences_issued()
        if int(issued.get(box.name) or 0) >= fence:
            # The file lost commits (a corrupt WAL, a torn write) that issued this fence: never issue it again.
            fence = int(issued[box.name]) + 1
            conn.execute("UPDATE fences SET fence = ? WHERE box = ?", (fence, box.name))
        _store(self._fences_path(), {**issued, box.name: fence})     # before the COMMIT, as claims are
        lease_id = f"{box.name}.{fence}"
        token = self._token(box.name, fence)
        deadline = now.after(request.max_runtime) if request.max_runtime else None
        expires = now.after(request.ttl)
        if deadline is not None and deadline.boot < expires.boot:
            expires = deadline
        who = f"{procs.user_name()}@{socket.gethostname()} " + (f"pid {holder.pid}" if holder else "detached")
        conn.execute(
            "INSERT INTO leases (id, box, slots, whole_box, fence, holder, holder_pid, holder_boot, holder_start,"
            " ttl, granted_at, expires_at, deadline, expires_boot, deadline_boot, purpose, state) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'held')",
            (lease_id, box.name, ",".join(slots), int(request.whole_box), fence, who,
             holder.pid if holder else None, holder.boot if holder else None, holder.start if holder else None,
             request.ttl, now.wall, expires.wall, deadline.wall if deadline else None, expires.boot,
             deadline.boot if deadline else None, request.purpose))
        conn.executemany("INSERT INTO lease_slots (lease_id, box, slot, live) VALUES (?, ?, ?, 1)",
                         [(lease_id, box.name, s) for s in slots])
        conn.executemany("DELETE FROM reservations WHERE box = ? AND slot = ?", [(box.name, s) for s in slots])
        over = [v for s in slots if (v := self._void_claim(box.name, s, now)) is not None]
        self._audit(conn, now, "grant", lease_id, box.name, slots, fence, who,
                    "; ".join([request.purpose] * bool(request.purpose) + [v["note"] for v in over]),
                    json.dumps({"over": over}) if over else "")
        for s in slots:
            found = [v for v in over if v["slot"] == s and v["void"] == "dead" and v["db"] != "removed"]
            self._write_claim(box.name, s, lease_id, token, expires, holder, found)
        return Lease(lease_id, self.name, box.name, tuple(slots), request.whole_box, token,
                     fence, who, request.ttl, now.wall, expires.wall, deadline.wall if deadline else None,
                     request.purpose)

    def _reap(self, conn: sqlite3.Connection, now: clock.Instant, boxes: list[str] | None = None) -> None:
        """End leases whose holder missed its TTL, ran past its maximum runtime, or died with no child left."""
        if boxes is None:
            rows = conn.execute("SELECT * FROM leases WHERE state = 'held'").fetchall()
        else:
            rows = conn.execute(f"SELECT * FROM leases WHERE state = 'held' AND box IN ({','.join('?' * len(boxes))})",
                                boxes).fetchall()
        # Each end is dated when it took effect (the audit of every lease file orders by it), not when it was
        # found: an expiry at its expiry, a holder's death when a grant of another lease file first found it dead.
        for row in rows:
            holder = _holder(row)
            slots = row["slots"].split(",")
            dead = holder is not None and not procs.is_alive(holder)
            # Another lease file granted its slots when it found the holder dead: it ended then, whatever holds
            # the lock now and however much later its TTL ran out.
            found = self._found_dead_elsewhere(row) if dead else None
            expiry = row["expires_boot"] if row["deadline_boot"] is None else min(row["deadline_boot"],
                                                                                  row["expires_boot"])
            if found is not None and found["at_boot"] <= expiry:
                self._end(conn, row, now, "expire", f"holder {holder} died (found dead by lease {found['by']} "
                          f"of lease file {found['by_path']})", min(now.boot, found["at_boot"]))
            elif row["deadline_boot"] is not None and now.boot > row["deadline_boot"]:    # the expiry is capped at it
                self._end(conn, row, now, "expire", "ran past its maximum runtime", expiry)
            elif now.boot > row["expires_boot"]:
                self._end(conn, row, now, "expire", "missed heartbeats for its TTL", expiry)
            elif dead and (all(self._lock_free(row["box"], s) for s in slots)
                           and not self._lingering(conn, "lease_id = ?", row["id"])):
                self._end(conn, row, now, "expire", f"holder {holder} died")
        self._adopt_orphans(conn, boxes, now)
        # A held lease within its grace of expiring unrenewed: what holds its slots' locks outside its registered
        # process group (a child in a session of its own), or runs with its token having left both (a daemon),
        # gets the SIGTERM now and the SIGKILL at its expiry too.
        for row in conn.execute("SELECT * FROM leases WHERE state = 'held' AND ? > expires_boot - MIN(?, ttl / 3.0) AND"
                                " NOT EXISTS (SELECT 1 FROM procs WHERE lease_id = leases.id AND term_boot IS NOT NULL)",
                                (now.boot, STOP_GRACE)).fetchall():     # once: the SIGTERM goes out in this reap
            if boxes is None or row["box"] in boxes:
                for slot in row["slots"].split(","):
                    if not self._lock_free(row["box"], slot) and not self._claimed_elsewhere(row["box"], slot, now):
                        self._adopt_lock_holders(conn, row["id"], row["box"], slot)
                self._adopt_by_token(conn, row)
        # Processes of ended leases, and of held ones within their grace of expiring unrenewed.
        stopped: set[str] = set()
        for p in conn.execute("SELECT procs.rowid AS rid, procs.*, leases.state AS lease_state, leases.ttl AS ttl"
                              " FROM procs JOIN leases ON leases.id = procs.lease_id WHERE leases.state != 'held'"
                              " OR ? > leases.expires_boot - MIN(?, leases.ttl / 3.0)",
                              (now.boot, STOP_GRACE)).fetchall():
            proc = ProcessId(p["pid"], p["boot"], p["start"])
            if not procs.running(proc, p["pgid"]):
                if p["lease_state"] != "held":
                    conn.execute("DELETE FROM procs WHERE rowid = ?", (p["rid"],))
                    stopped.add(p["lease_id"])
            elif p["term_boot"] is None:
                procs.signal_tree(proc, p["pgid"], signal.SIGTERM)
                procs.signal_tree(proc, p["pgid"], signal.SIGCONT)    # a stopped process acts on SIGTERM only once continued
                conn.execute("UPDATE procs SET term_at = ?, term_boot = ? WHERE rowid = ?",
                             (now.wall, now.boot, p["rid"]))
                self._audit(conn, now, "stop", p["lease_id"], "", [], 0, "", f"SIGTERM to {proc}")
            elif p["lease_state"] != "held" and now.boot - p["term_boot"] >= grace(p["ttl"]) - 0.01:
                procs.signal_tree(proc, p["pgid"], signal.SIGKILL)
        self._void_when_stopped(conn, stopped)
        # Gone waiters are dropped by `_serve` when they reach the front of their line.

    def _void_when_stopped(self, conn: sqlite3.Connection, lease_ids: set[str]) -> None:
        """Void the claims of the ended leases among `lease_ids` whose processes have all stopped (see `_end`)."""
        for lease_id in lease_ids:
            row = conn.execute("SELECT * FROM leases WHERE id = ? AND state != 'held'", (lease_id,)).fetchone()
            if row is not None and not self._lingering(conn, "lease_id = ?", lease_id):
                for s in row["slots"].split(","):
                    self._drop_claim(row["box"], s, lease_id)

    def _lingering(self, conn: sqlite3.Connection, where: str, arg: str) -> set[str]:
        """The slots of the leases matching `where` that a recorded process (or its group) still runs on."""
        slots: set[str] = set()
        for p in conn.execute(f"SELECT procs.*, (SELECT slots FROM leases WHERE id = procs.lease_id) AS slots"
                              f" FROM procs WHERE {where}", (arg,)).fetchall():
            if procs.running(ProcessId(p["pid"], p["boot"], p["start"]), p["pgid"]):
                slots.update((p["slots"] or "").split(","))
        return slots

    def _adopt_orphans(self, conn: sqlite3.Connection, boxes: list[str] | None, now: clock.Instant) -> None:
        """Processes that still hold the lock of a slot no live lease of any lease file claims are stopped as
        this file's last lease's.

        A leased command's background child (in its process group or a session of its own)
        inherits the slot lock and outlives the command; unstopped it would keep the slot forever.
        Every lock probe runs inside a write transaction, so under it only such leftovers hold the lock,
        and the commands of other lease files' live leases: those are theirs (see `_claimed_elsewhere`)."""
        names = boxes if boxes is not None else [r[0] for r in conn.execute("SELECT box FROM box_slots")]
        for name in names:
            known = conn.execute("SELECT slots FROM box_slots WHERE box = ?", (name,)).fetchone()
            if known is None:
                continue
            held = {r[0] for r in conn.execute("SELECT slot FROM lease_slots WHERE box = ? AND live = 1", (name,))}
            for slot in known[0].split(","):
                if slot in held or self._lock_free(name, slot) or self._claimed_elsewhere(name, slot, now):
                    continue
                last = conn.execute("SELECT lease_id FROM lease_slots WHERE box = ? AND slot = ? ORDER BY rowid DESC"
                                    " LIMIT 1", (name, slot)).fetchone()
                if last is not None:
                    self._adopt_lock_holders(conn, last[0], name, slot)

    def _adopt_by_token(self, conn: sqlite3.Connection, row: sqlite3.Row) -> None:
        """Record as the lease's the processes that run with its token but outside its registered process groups.

        A leased command's child that left its process group and session and closed the slot's lock (a daemon)
        is found by nothing else; it still has the environment the lease gave (`REDFIRST_LEASE_TOKEN`), and
        recorded it keeps the lease's slots busy until it is stopped (`_lingering`). This process and its
        ancestors are left alone (a command that releases its own lease stops its group, as before)."""
        token = self._token(row["box"], row["fence"])
        groups = {r[0] for r in conn.execute("SELECT pgid FROM procs WHERE lease_id = ? AND pgid IS NOT NULL",
                                             (row["id"],))}
        mine = {p.pid for p in procs.ancestors()}
        for pid in procs.with_env("REDFIRST_LEASE_TOKEN", token):
            proc = procs.identify(pid)
            if pid in mine or proc is None or procs.group_of(pid) in groups or conn.execute(
                    "SELECT 1 FROM procs WHERE pid = ? AND start = ?", (proc.pid, proc.start)).fetchone():
                continue
            conn.execute("INSERT INTO procs (lease_id, pid, boot, start, pgid) VALUES (?, ?, ?, ?, NULL)",
                         (row["id"], proc.pid, proc.boot, proc.start))

    def _adopt_lock_holders(self, conn: sqlite3.Connection, lease_id: str, box: str, slot: str) -> None:
        """Record the processes that hold the slot's lock, and are not recorded yet, as `lease_id`'s."""
        for pid in procs.holders_of(os.path.realpath(self.lock_path(box, slot))):
            proc = procs.identify(pid)
            if proc is None or conn.execute("SELECT 1 FROM procs WHERE pid = ? AND start = ?",
                                            (proc.pid, proc.start)).fetchone():
                continue
            conn.execute("INSERT INTO procs (lease_id, pid, boot, start, pgid) VALUES (?, ?, ?, ?, NULL)",
                         (lease_id, proc.pid, proc.boot, proc.start))

    def _end(self, conn: sqlite3.Connection, row: sqlite3.Row, now: clock.Instant, event: str, reason: str,
             took_effect: float | None = None) -> None:
        """End a lease, audited at `took_effect` (CLOCK_BOOTTIME; `now` when None) with when it was written."""
        at = now if took_effect is None or took_effect >= now.boot else now.at(took_effect)
        if at != now:
            reason += (f" (took effect at boottime {at.boot:.6f}, recorded at {now.boot:.6f}: "
                       f"{now.boot - at.boot:.3f} s later)")
        conn.execute("UPDATE leases SET state = ?, ended_at = ?, end_reason = ? WHERE id = ?",
                     ("released" if event == "release" else "expired", at.wall, reason, row["id"]))
        conn.execute("UPDATE lease_slots SET live = 0 WHERE lease_id = ?", (row["id"],))
        self._adopt_by_token(conn, row)     # its daemons are stopped with its other processes
        if not self._lingering(conn, "lease_id = ?", row["id"]):
            # Else its claims stay, naming its processes (other lease files judge the slots by them, and stop them
            # past the claims' expiry): voided once they are stopped (`_void_when_stopped`).
            for s in row["slots"].split(","):
                self._drop_claim(row["box"], s, row["id"])
        self._audit(conn, at, event, row["id"], row["box"], row["slots"].split(","), row["fence"],
                    row["holder"], reason)

    def _audit(self, conn: sqlite3.Connection, now: clock.Instant, event: str, lease_id: str, box: str,
               slots: list[str], fence: int, holder: str, detail: str, evidence: str = "") -> None:
        """One audit event, stamped on both clocks: `at` (wall) for people, `at_boot` to order and judge by."""
        conn.execute("INSERT INTO audit (at, at_boot, event, lease_id, box, slots, fence, holder, detail, evidence)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (now.wall, now.boot, event, lease_id, box,
                                                                ",".join(slots), fence, holder, detail, evidence))

    # -- OS locks --------------------------------------------------------------------------------

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

    # -- machine-wide claims: which lease file granted a slot (read and written under the writer lock) --

    def _claim_path(self, box: str, slot: str) -> Path:
        return self._folder(box, slot) / f"{self.slot_identity(box, slot)}.claim"

    def _write_claim(self, box: str, slot: str, lease_id: str, token: str, expires: clock.Instant | None,
                     holder: ProcessId | None, found_dead: Sequence[dict[str, Any]] = ()) -> None:
        """This file's claim on a slot until `expires` (None: voided, the lease ended).

        `voided` carries, from claim to claim, when a grant found another file's lease of the slot dead,
        until that file has recorded the end (`_found_dead_elsewhere`, `_drop_claim`)."""
        voided = dict((self._read_claim(box, slot) or {}).get("voided") or {})
        for v in found_dead:
            voided.setdefault(f"{v['db']}/{v['lease']}", {"at_boot": v["at_boot"], "by": lease_id,
                                                          "by_db": self.creation_id, "by_path": str(self.db)})
        claim = {"db": self.creation_id, "db_path": str(self.db), "lease": lease_id, "token": token,
                 "boot": procs.boot_id(), "expires_boot": expires.boot if expires else 0.0,
                 "expires": expires.wall if expires else 0.0,      # for an older redfirst, which reads only this
                 "holder": [holder.pid, holder.boot, holder.start] if holder else None,
                 "ended": expires is None, "voided": _newest(voided)}
        _store(self._claim_path(box, slot), claim)

    def _fences_path(self) -> Path:
        return self.locks / f"fences.{self.creation_id}.json"

    def _fences_issued(self) -> dict[str, Any]:
        """The highest fence this lease file issued per box, kept outside it: a grant whose commit the file lost
        (its WAL corrupted, a write torn) is still known here, so its fence and token are never issued again."""
        try:
            issued = json.loads(self._fences_path().read_text())
        except (OSError, ValueError):
            return {}       # none yet, or the folder was removed: the file's own counter
        return {k: v for k, v in issued.items() if isinstance(v, int)} if isinstance(issued, dict) else {}

    def _own(self, claim: dict[str, Any] | None) -> bool:
        """Whether this lease file's own rows decide for `claim`: it wrote it for a lease it still records.

        A claim it wrote for a grant whose commit it lost (a corrupt WAL, a torn write) names a lease the file no
        longer has, or not with that token: that holder may still run, so the claim is judged as another file's."""
        if claim is None or claim.get("db") != self.creation_id:
            return False
        if not claim.get("token"):
            return True         # voided by this file: the end is recorded
        row = self._conn().execute("SELECT box, fence FROM leases WHERE id = ?", (claim.get("lease"),)).fetchone()
        return row is not None and self._token(row["box"], row["fence"]) == claim.get("token")

    def _void_claim(self, box: str, slot: str, now: clock.Instant) -> dict[str, Any] | None:
        """The claim of another lease file that a grant of this slot at `now` goes over, and why it is void.

        The grant's audit names it (event `grant`, `evidence`): `ended` (its file recorded the end, an
        event before this grant), `expired` at its expiry, `dead` (its holder and processes, found dead
        now), `another boot`. None when the slot's last claim is this file's own, or there is none."""
        claim = self._read_claim(box, slot)
        if claim is None or self._own(claim):
            return None
        expires = claim.get("expires_boot")
        legacy = "expires_boot" not in claim
        if legacy:     # an older redfirst's claim: only a wall-clock expiry
            expires = claim.get("expires")
            expires = now.boot - (now.wall - expires) if isinstance(expires, (int, float)) else 0.0
        why: str = "dead"
        at: float | None = now.boot     # granted over while unexpired: `_claim_elsewhere` found its holder dead
        if claim.get("ended") or (not claim.get("token") and claim.get("db") != "removed"):
            why, at = "ended", None
        elif not legacy and claim.get("boot") != procs.boot_id():
            why, at = "another boot", 0.0
        elif not isinstance(expires, (int, float)) or now.boot > expires:
            why, at = "expired", float(expires or 0.0)
        holder = claim.get("holder")
        note = {"ended": "ended by its own lease file", "another boot": "made in another boot",
                "expired": f"expired at boottime {at}",
                "dead": f"holder pid {holder[0] if holder else '?'} and its processes dead at boottime {at}"}[why]
        return {"slot": slot, "db": claim.get("db"), "db_path": claim.get("db_path"), "lease": claim.get("lease"),
                "void": why, "at_boot": at, "note": f"over lease {claim.get('lease')} of lease file "
                                                     f"{claim.get('db_path')} on {slot}: {note}"}

    def _found_dead_elsewhere(self, row: sqlite3.Row) -> dict[str, Any] | None:
        """The earliest grant of another lease file that found this lease's holder dead, or None."""
        key = f"{self.creation_id}/{row['id']}"
        found = [v for s in row["slots"].split(",")
                 if isinstance(v := ((self._read_claim(row["box"], s) or {}).get("voided") or {}).get(key), dict)
                 and isinstance(v.get("at_boot"), (int, float))]
        return min(found, key=lambda v: v["at_boot"]) if found else None

    def _read_claim(self, box: str, slot: str) -> dict[str, Any] | None:
        try:
            claim: dict[str, Any] = json.loads(self._claim_path(box, slot).read_text())
        except (OSError, ValueError):
            return None     # none, or torn by a crash: the OS lock still guards a running command
        return claim if isinstance(claim, dict) else None

    def _claim_elsewhere(self, box: str, slot: str, now: clock.Instant) -> dict[str, Any] | None:
        """The live claim another lease file holds on this slot, or None."""
        claim = self._read_claim(box, slot)
        if claim is None or self._own(claim):
            return None     # this lease file's own rows decide for its claims
        if _claim_expired(claim, now):
            return None
        holder = claim.get("holder")
        if holder and not procs.is_alive(ProcessId(int(holder[0]), str(holder[1]), int(holder[2]))):
            # As in its own file, the processes its lease runs keep the slot after its holder died: the command's
            # group outlives the command, and a member that did not inherit the slot's lock still uses the slot.
            running = [p for p in claim.get("procs") or []
                       if isinstance(p, list) and len(p) == 4
                       and procs.running(ProcessId(int(p[0]), str(p[1]), int(p[2])), p[3])]
            # And a daemon it left (out of the group, without the lock) still has the lease's token in its environment.
            mine = {p.pid for p in procs.ancestors()}
            loose = [pid for pid in procs.with_env("REDFIRST_LEASE_TOKEN", str(claim.get("token") or "-"))
                     if pid not in mine]
            return claim if running or loose else None
        return claim

    def _stop_leftovers(self, box: str, slot: str, now: clock.Instant) -> dict[str, Any] | None:
        """Stop what another lease file's unrenewed lease of this slot still runs; its claim while that runs, or None.

        Its own file stops a lease's processes when it expires, but only when a process uses that file again:
        a holder that died (or was stopped) with its file idle would leave them running on the slot, beside the
        next holder, when no lock shows them (a child of its command that did not inherit the slot's lock, a
        daemon). So the claim's processes (its command's group, those with its token in their environment) get
        SIGTERM (and SIGCONT) from a grant of any lease file a grace before the claim expires, SIGKILL a grace
        later, and the slot is busy until they are gone."""
        claim = self._read_claim(box, slot)
        if (claim is None or self._own(claim) or claim.get("ended") or not claim.get("token")
                or claim.get("boot") != procs.boot_id()):
            return None     # its file's own rows decide, it ended, it names no lease (a removed lock), or another boot
        expires = claim.get("expires_boot")
        if not isinstance(expires, (int, float)) or now.boot <= expires - STOP_GRACE:
            return None     # renewed: its own file looks after it (`_claim_elsewhere` says whether it is live)
        groups = [(ProcessId(int(p[0]), str(p[1]), int(p[2])), p[3]) for p in claim.get("procs") or []
                  if isinstance(p, list) and len(p) == 4]
        mine = {p.pid for p in procs.ancestors()}
        loose = [(proc, None) for pid in procs.with_env("REDFIRST_LEASE_TOKEN", str(claim["token"]))
                 if pid not in mine and (proc := procs.identify(pid)) is not None]
        running = [(p, g) for p, g in groups + loose if procs.running(p, g)]
        if not running:
            return None
        term = claim.get("term_boot")
        if not isinstance(term, (int, float)):
            for p, g in running:
                procs.signal_tree(p, g, signal.SIGTERM)
                procs.signal_tree(p, g, signal.SIGCONT)    # a stopped process acts on SIGTERM only once continued
            claim["term_boot"] = now.boot
            _store(self._claim_path(box, slot), claim)
        elif now.boot - term >= STOP_GRACE - 0.01 or now.boot > expires:
            for p, g in running:
                procs.signal_tree(p, g, signal.SIGKILL)
        return {**claim, "lease": f"{claim.get('lease')} (its processes {', '.join(str(p.pid) for p, _ in running)}"
                                  f" being stopped)"}

    def _claimed_elsewhere(self, box: str, slot: str, now: clock.Instant) -> bool:
        """Whether another lease file's lease still claims this slot: granted, neither ended nor expired.

        Its holder may have died: a command it started keeps the slot (and its lock) until that lease's TTL,
        as in its own file, so the lock's holders are that lease's processes, never another file's orphans."""
        claim = self._read_claim(box, slot)
        if claim is None or self._own(claim):
            return False
        if claim.get("db") == "removed":     # the holders of a removed lock file (see `_removed_lock_holders`)
            return self._claim_elsewhere(box, slot, now) is not None
        return not _claim_expired(claim, now)

    def _renew_claims(self, row: sqlite3.Row, expires: clock.Instant, now: clock.Instant) -> str | None:
        """Push the lease's claims out to `expires`; who holds a slot another lease file granted meanwhile.

        A claim that is gone (the lock folder was removed) is written again, so other lease files see
        the slot held from this heartbeat on; one that another file wrote after that means it granted the slot."""
        for s in row["slots"].split(","):
            claim = self._read_claim(row["box"], s)
            if claim is not None and claim.get("db") == self.creation_id and claim.get("lease") == row["id"]:
                claim.update(boot=procs.boot_id(), expires_boot=expires.boot, expires=expires.wall)
                _store(self._claim_path(row["box"], s), claim)
            elif (other := self._claim_elsewhere(row["box"], s, now)) is not None:
                return f"slot {s} is held by lease {other.get('lease')} of lease file {other.get('db_path')}"
            else:
                self._write_claim(row["box"], s, row["id"], self._token(row["box"], row["fence"]), expires,
                                  _holder(row))
        return None

    def _drop_claim(self, box: str, slot: str, lease_id: str) -> None:
        """Void this file's claim of `lease_id` on a slot once the transaction commits (see `_committed`)."""
        voids = getattr(self._tls, "voids", None)
        if voids is None:
            raise RuntimeError("a claim is voided inside a write transaction only")
        voids.append((box, slot, lease_id))

    def _void(self, box: str, slot: str, lease_id: str) -> None:
        claim = self._read_claim(box, slot)
        if claim is None:
            return
        voided = claim.get("voided") or {}
        if f"{self.creation_id}/{lease_id}" in voided:     # its end is recorded now: the note has done its work
            claim["voided"] = {k: v for k, v in voided.items() if k != f"{self.creation_id}/{lease_id}"}
            _store(self._claim_path(box, slot), claim)
        if claim.get("db") == self.creation_id and claim.get("lease") == lease_id:
            # Voided, not removed: a missing claim means a wiped folder (see `_removed_lock_holders`).
            self._write_claim(box, slot, lease_id, "", None, None)

    def _removed_lock_holders(self, box: str, slot: str, now: clock.Instant) -> dict[str, Any] | None:
        """A claim for the processes that still hold this slot's lock file after it was removed, or None.

        Run only when the slot has no claim at all: its first use on this machine, or the folder
        was removed while a command held the lock, which the lock file made anew no longer shows."""
        if self._claim_path(box, slot).exists():
            return None
        holders = self._former_lock_holders(box, slot)
        if not holders:
            return None
        forever = now.after(10.0**9)
        claim = {"db": "removed", "db_path": f"unknown: its lock file was removed while pid {holders[0].pid} held it",
                 "lease": "(unknown)", "token": "", "boot": procs.boot_id(), "expires_boot": forever.boot,
                 "expires": forever.wall, "holder": [holders[0].pid, holders[0].boot, holders[0].start]}
        _store(self._claim_path(box, slot), claim)      # later looks see it, while that process lives
        return claim

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

    # -- holder operations ------------------------------------------------------------------------

    def _live_row(self, conn: sqlite3.Connection, lease_id: str, token: str | None,
                  now: clock.Instant) -> sqlite3.Row:
        row = conn.execute("SELECT * FROM leases WHERE id = ?", (lease_id,)).fetchone()
        if row is None:
            raise StaleLease(f"no lease {lease_id}")
        if token is not None and token != self._token(row["box"], row["fence"]):
            raise StaleLease(f"lease {lease_id}: token {token} is not its token {self._token(row['box'], row['fence'])}")
        if row["state"] == "held" and (now.boot > row["expires_boot"]
                                       or (row["deadline_boot"] is not None and now.boot > row["deadline_boot"])):
            self._reap(conn, now, [row["box"]])
            row = conn.execute("SELECT * FROM leases WHERE id = ?", (lease_id,)).fetchone()
        if row["state"] != "held":
            newer = conn.execute("SELECT MAX(fence) FROM leases WHERE box = ?", (row["box"],)).fetchone()[0]
            raise StaleLease(f"lease {lease_id} is {row['state']} ({row['end_reason']}); "
                             f"token {self._token(row['box'], row['fence'])} superseded"
                             + (f" by {self._token(row['box'], newer)}" if newer and newer > row["fence"] else ""))
        return row

    def renew(self, lease_id: str, token: str | None = None) -> Lease:
        stale: StaleLease | None = None
        with self._tx() as conn:
            now = clock.now()    # read under the writer lock: a clock read before it may be seconds stale
            try:
                row = self._live_row(conn, lease_id, token, now)
                if conn.execute("SELECT 1 FROM procs WHERE lease_id = ? AND term_boot IS NOT NULL",
                                (lease_id,)).fetchone():
                    # Too late: its processes got SIGTERM in the grace before expiry; it must not live on.
                    self._end(conn, row, now, "expire", "missed heartbeats: its processes were being stopped")
                    raise StaleLease(f"lease {lease_id} expired: it missed heartbeats until its processes "
                                     f"were being stopped")
            except StaleLease as exc:
                stale = exc     # commit the reaping that found it stale
            else:
                expires = now.after(row["ttl"])
                if row["deadline_boot"] is not None and row["deadline_boot"] < expires.boot:
                    expires = now.at(row["deadline_boot"])
                taken = self._renew_claims(row, expires, now)
                if taken is not None:
                    # The lock folder was removed while it was held: the newer grant stands, this holder stops.
                    self._end(conn, row, now, "expire", f"superseded: {taken}")
                    stale = StaleLease(f"lease {lease_id} superseded: {taken} (the lock folder {self.locks} "
                                       f"was removed while it was held)")
                else:
                    conn.execute("UPDATE leases SET expires_at = ?, expires_boot = ? WHERE id = ?",
                                 (expires.wall, expires.boot, lease_id))
                    self._audit(conn, now, "renew", lease_id, row["box"], row["slots"].split(","), row["fence"],
                                row["holder"], "")
                    row = conn.execute("SELECT * FROM leases WHERE id = ?", (lease_id,)).fetchone()
        if stale is not None:
            raise stale
        return self._lease(row)

    def release(self, lease_id: str, token: str | None = None) -> None:
        stale: StaleLease | None = None
        with self._tx() as conn:
            now = clock.now()
            try:
                row = self._live_row(conn, lease_id, token, now)
            except StaleLease as exc:
                stale = exc
            else:
                self._end(conn, row, now, "release", "released by its holder")
                self._serve(conn, row["box"], now)
                running = conn.execute("SELECT rowid AS rid, * FROM procs WHERE lease_id = ?", (lease_id,)).fetchall()
        with self._wake:
            self._wake.notify_all()
        if stale is not None:
            raise stale
        self._stop_all(running)

    def _stop_all(self, running: list[sqlite3.Row]) -> None:
        # A released lease must not keep running: stop what it started, outside the transaction.
        for p in running:
            procs.stop(ProcessId(p["pid"], p["boot"], p["start"]), p["pgid"], STOP_GRACE)
        if running:
            with self._tx() as conn:
                conn.executemany("DELETE FROM procs WHERE rowid = ?", [(p["rid"],) for p in running])
                self._void_when_stopped(conn, {p["lease_id"] for p in running})

    def register_process(self, lease_id: str, token: str, proc: ProcessId, pgid: int | None) -> Lease:
        """Record a process the lease runs (so expiry can stop it); StaleLease when the token is stale."""
        with self._tx() as conn:
            row = self._live_row(conn, lease_id, token, clock.now())
            conn.execute("INSERT INTO procs (lease_id, pid, boot, start, pgid) VALUES (?, ?, ?, ?, ?)",
                         (lease_id, proc.pid, proc.boot, proc.start, pgid))
            for s in row["slots"].split(","):
                # Other lease files judge the slot by its claim: it names the processes, as `procs` does here.
                claim = self._read_claim(row["box"], s)
                if claim is not None and claim.get("db") == self.creation_id and claim.get("lease") == lease_id:
                    claim["procs"] = [*(claim.get("procs") or []), [proc.pid, proc.boot, proc.start, pgid]]
                    _store(self._claim_path(row["box"], s), claim)
        return self._lease(row)

    def why_not_inside(self, lease_id: str) -> str | None:
        # Its holder, or a process it runs (`leases.exec` registers itself), is this process or an ancestor;
        # or this process is in the process group a live registered process leads (a child that was re-parented).
        with self._faults():
            conn = self._conn()
            row = conn.execute("SELECT * FROM leases WHERE id = ?", (lease_id,)).fetchone()
            ran = conn.execute("SELECT pid, boot, start, pgid FROM procs WHERE lease_id = ?", (lease_id,)).fetchall()
        if row is None:
            return f"no lease {lease_id} in lease file {self.db}"
        members = [ProcessId(r["pid"], r["boot"], r["start"]) for r in ran]
        holder = _holder(row)
        chain = procs.ancestors()
        if any(p in chain for p in ([holder] if holder else []) + members):
            return None
        group = os.getpgid(0)
        if any(r["pgid"] == group and procs.is_alive(p) for r, p in zip(ran, members, strict=True)):
            return None
        who = [f"holder {holder}" if holder else "no holder process (leases acquire)"]
        who += [f"its command {p}" for p in members]
        return (f"lease {lease_id} is held by {', '.join(who)}: neither is this process (pid {os.getpid()}) or one of "
                f"its ancestors, so it is not inside that lease (its REDFIRST_LEASE_* variables came from another "
                f"process)")

    def lease(self, lease_id: str) -> Lease:
        with self._faults():
            row = self._conn().execute("SELECT * FROM leases WHERE id = ?", (lease_id,)).fetchone()
        if row is None:
            raise StaleLease(f"no lease {lease_id}")
        return self._lease(row)

    def status(self) -> list[Lease]:
        if self.read_only:      # nothing can be reaped: the live ones are those not yet past their expiry
            with self._faults():
                return [self._lease(r) for r in self._unexpired()]
        with self._tx() as conn:
            self._reap(conn, clock.now())
            rows = conn.execute("SELECT * FROM leases WHERE state = 'held' ORDER BY granted_at").fetchall()
        return [self._lease(r) for r in rows]

    def _unexpired(self) -> list[sqlite3.Row]:
        """The held leases not yet past their expiry, read without reaping (a read-only lease file)."""
        conn = self._conn()
        now = clock.now()
        if self._version() < SCHEMA_VERSION:     # an older redfirst's file: only its wall-clock expiries
            return conn.execute("SELECT * FROM leases WHERE state = 'held' AND expires_at >= ? AND (deadline IS NULL"
                                " OR deadline >= ?) ORDER BY granted_at", (now.wall, now.wall)).fetchall()
        boot = conn.execute("SELECT value FROM meta WHERE key = 'boot_id'").fetchone()
        if boot is None or boot[0] != procs.boot_id():
            return []       # written in another boot: every lease it held has ended
        return conn.execute("SELECT * FROM leases WHERE state = 'held' AND expires_boot >= ? AND (deadline_boot IS"
                            " NULL OR deadline_boot >= ?) ORDER BY granted_at", (now.boot, now.boot)).fetchall()

    def audit(self, limit: int = 100) -> list[AuditEvent]:
        with self._faults():
            rows = self._conn().execute("SELECT * FROM audit ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
        both = bool(rows) and "at_boot" in rows[0].keys()      # noqa: SIM118 (`in` a Row looks at its values)
        return [AuditEvent(r["seq"], r["at"], r["event"], r["lease_id"], r["box"],
                           tuple(s for s in r["slots"].split(",") if s), r["fence"], r["holder"], r["detail"],
                           *((r["at_boot"], r["evidence"]) if both else ()))
                for r in reversed(rows)]

    def _lease(self, row: sqlite3.Row) -> Lease:
        return _lease(row, self._token(row["box"], row["fence"]))

    def _token(self, box: str, fence: int) -> str:
        # The creation id: a token of another lease file, or of this path before it was wiped, never matches.
        return f"local:{box}:{self.creation_id}:{fence}"

    def why_cannot_run(self) -> str | None:
        return None

    def identity(self, lease: Lease, box: Box | None) -> dict[str, Any]:
        # This machine's own answer: the leased slots' GPUs as cuda-python sees them.
        gpus, labels = detect.local_gpus()
        by_slot = {g.slot: g for g in gpus} if lease.box == "local" else {}
        return {
            "boot_id": procs.boot_id(),
            "gpus": [{"slot": s, "name": by_slot[s].name, "sm": by_slot[s].sm, "uuid": by_slot[s].uuid}
                     for s in lease.slots if s in by_slot],
            "driver": labels.get("driver"),
            "cuda_driver_api": labels.get("cuda"),
            "toolkit": detect.toolkit(),
        }

    def run_prefix(self, lease: Lease) -> list[str]:
        # The slots' identities as this process knows them: the wrapper refuses to lock other ones.
        return [sys.executable, "-m", "leases.exec", "--db", str(self.db), "--lease", lease.id,
                "--token", lease.token, "--identities", ",".join(self.slot_identity(lease.box, s) for s in lease.slots),
                "--"]

    def env(self, lease: Lease) -> dict[str, str]:
        # By UUID where known: an index means another GPU under an inherited CUDA_VISIBLE_DEVICES.
        gpus = [self._visible(lease.box, s) for s in lease.slots if s.startswith("gpu")]
        if lease.box != "local" and self._box("local").gpus:
            # A declared box's GPUs are not this machine's: its index would name the local box's GPU of that index,
            # which another lease may hold. Where this machine has no GPU, the index names none.
            gpus = []
        return {"CUDA_VISIBLE_DEVICES": ",".join(gpus), "REDFIRST_LEASE_ID": lease.id,
                "REDFIRST_LEASE_TOKEN": lease.token, "REDFIRST_LEASES_DB": str(self.db), LEASE_BACKEND_ENV: self.name}


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


def _wait_for_writer_lock(gate: int, path: Path) -> list[ProcessId]:
    """Take the machine-wide writer lock; the writers SIGKILLed because SIGSTOP froze them inside it.

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
        fcntl.flock(gate, fcntl.LOCK_EX)
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


def _store(path: Path, claim: dict[str, Any]) -> None:
    """Write a claim whole or not at all (readers never see a torn one), writable by every user of the machine.

    Replaced by a renamed copy; where the file is another user's, which a sticky folder lets no other user
    replace, it is written in place by one write of the whole text, padded with blanks to the old length (JSON
    allows them), so a writer killed at any point leaves the old claim or the new one (all writes and reads of
    claims are under the folder's writer lock; a crash of the machine ends every claim with its boot)."""
    data = json.dumps(claim).encode()
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        os.fchmod(fd, 0o666)
        os.write(fd, data)
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
        return
    except PermissionError:
        os.unlink(tmp)
    fd = os.open(path, os.O_RDWR)
    try:
        os.pwrite(fd, data + b" " * max(0, os.fstat(fd).st_size - len(data)), 0)
    finally:
        os.close(fd)


VOIDED_KEPT = 64     # notes of other files' leases found dead, per slot, until their files record the ends


def _newest(voided: dict[str, Any]) -> dict[str, Any]:
    """At most VOIDED_KEPT notes, the newest: a lease file that never comes back must not grow a claim forever."""
    ranked = sorted(voided.items(), key=lambda kv: kv[1].get("at_boot", 0.0) if isinstance(kv[1], dict) else 0.0)
    return dict(ranked[-VOIDED_KEPT:])


def _claim_expired(claim: dict[str, Any], now: clock.Instant) -> bool:
    """Whether a claim's lease has expired or ended: judged on CLOCK_BOOTTIME, and every claim of another boot has.

    A claim an older redfirst wrote has only its wall-clock expiry, and is judged by it."""
    if "expires_boot" in claim:
        expires = claim.get("expires_boot")
        return claim.get("boot") != procs.boot_id() or not isinstance(expires, (int, float)) or now.boot > expires
    expires = claim.get("expires")
    return not isinstance(expires, (int, float)) or now.wall > expires


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _slots(gpus: int) -> tuple[str, ...]:
    return tuple(f"gpu{i}" for i in range(gpus)) or ("cpu0",)




def _holder(row: sqlite3.Row) -> ProcessId | None:
    if row["holder_pid"] is None:
        return None
    return ProcessId(row["holder_pid"], row["holder_boot"], row["holder_start"])


def _lease(row: sqlite3.Row, token: str) -> Lease:
    return Lease(row["id"], "local", row["box"], tuple(row["slots"].split(",")), bool(row["whole_box"]),
                 token, row["fence"], row["holder"], row["ttl"], row["granted_at"],
                 row["expires_at"], row["deadline"], row["purpose"])
