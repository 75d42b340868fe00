"""The lease file: its SQLite schema, opening, upgrading and read-only use, the boxes it leases, its
tokens and its audit table. Every other part of the backend stands on this one.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from redfirst.leases import clock, detect, procs, wal
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import (
    AuditEvent,
    Box,
    Lease,
    LeaseError,
    StaleLease,
    Unsatisfiable,
)
from redfirst.leases.procs import ProcessId

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('creation_id', lower(hex(randomblob(6))));
CREATE TABLE IF NOT EXISTS fences (box TEXT PRIMARY KEY, fence INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
  id TEXT PRIMARY KEY, box TEXT NOT NULL, slots TEXT NOT NULL, whole_box INTEGER NOT NULL,
  fence INTEGER NOT NULL, holder TEXT NOT NULL, holder_pid INTEGER, holder_boot TEXT, holder_start INTEGER,
  ttl REAL NOT NULL, granted_at REAL NOT NULL, expires_at REAL NOT NULL, deadline REAL,
  purpose TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, ended_at REAL, end_reason TEXT,
  expires_boot REAL, deadline_boot REAL, holder_machine TEXT);
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
# Every expiry decision is on CLOCK_BOOTTIME (`redfirst.leases.clock`): the *_boot columns. The wall-clock columns
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
BUSY_TIMEOUT = 30.0      # seconds SQLite waits for another connection's write lock (outside an acquire's wait)
TX_FLOOR = 0.25         # an acquire waits this long for a write lock even under --wait 0 (`Claims._tx_raw`)
STOP_GRACE = 2.0        # seconds between SIGTERM and SIGKILL for a stale lease's processes (at most TTL/3)
def grace(ttl: float) -> float:
    """SIGTERM goes out this long before an unrenewed lease expires, SIGKILL when it does: the grace is
    part of the TTL, so a stopped or hung holder's slot is free again at its TTL, not TTL + grace."""
    return min(STOP_GRACE, ttl / 3.0)


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _slots(gpus: int) -> tuple[str, ...]:
    return tuple(f"gpu{i}" for i in range(gpus)) or ("cpu0",)


def another_machine(db: Path, boot: str, what: str, machine: str = "") -> str:
    """The refusal of a lease file another machine (another boot, or `machine`, another machine id) uses."""
    here = f" (machine {procs.machine_id()})" if machine else ""
    there = f" of machine {machine}" if machine else ""
    return (f"lease file {db} is another machine's: boot {boot[:8]}{there} {what}, this machine runs boot "
            f"{procs.boot_id()[:8]}{here}. A lease file is one machine's (its leases are judged by that machine's clock "
            f"and processes): give each machine its own, on a local disk (REDFIRST_LEASES_DB, or `leases: db:` in "
            f"redfirst.yaml, or a local XDG_STATE_HOME)")


def _holder(row: sqlite3.Row) -> ProcessId | None:
    if row["holder_pid"] is None:
        return None
    return ProcessId(row["holder_pid"], row["holder_boot"], row["holder_start"])


def _lease(row: sqlite3.Row, token: str) -> Lease:
    return Lease(row["id"], "local", row["box"], tuple(row["slots"].split(",")), bool(row["whole_box"]),
                 token, row["fence"], row["holder"], row["ttl"], row["granted_at"],
                 row["expires_at"], row["deadline"], row["purpose"])




class LeaseFile:
    """The lease file and what it leases. Its attributes are set by `LocalBackend.__init__`, which
    opens the file; the parts above this one (slot locks, claims, reaping, the queue) add to it."""

    config: LeasesConfig
    db: Path
    locks: Path
    creation_id: str
    read_only: bool
    _absent: str
    _private_locks: bool
    _tls: threading.local
    _boxes: list[Box] | None
    _gpu_folder: Path | None
    _wake: threading.Condition

    name = "local"

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

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._tls, "conn", None)
        if conn is None and self.read_only:
            self._open_read_only()      # another thread's reads: opened as this thread's were
            conn = self._tls.conn
        if conn is None:
            conn = wal.connect(self.db, timeout=BUSY_TIMEOUT, check_same_thread=True)
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

    def _one_machines(self, conn: sqlite3.Connection) -> None:
        """A lease file is one machine's: refuse it (LeaseError) when another boot than this one uses it.

        Its leases are judged by this boot's clock and processes, so another machine's live lease would look
        dead here and be ended (an NFS `XDG_STATE_HOME` shared by two machines). Each write transaction of an
        opened lease file asks this first: the file's boot is this one's (`_end_what_another_boot_held` made it
        so at open, or refused), else another machine took it over since, and nothing of it is ended here."""
        row = conn.execute("SELECT value FROM meta WHERE key = 'boot_id'").fetchone()
        if row is not None and row[0] != procs.boot_id():
            raise LeaseError(another_machine(self.db, str(row[0]), "uses it now"))

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

    def _audit(self, conn: sqlite3.Connection, now: clock.Instant, event: str, lease_id: str, box: str,
               slots: list[str], fence: int, holder: str, detail: str, evidence: str = "") -> None:
        """One audit event, stamped on both clocks: `at` (wall) for people, `at_boot` to order and judge by."""
        conn.execute("INSERT INTO audit (at, at_boot, event, lease_id, box, slots, fence, holder, detail, evidence)"
                     " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (now.wall, now.boot, event, lease_id, box,
                                                                ",".join(slots), fence, holder, detail, evidence))

    def _lease(self, row: sqlite3.Row) -> Lease:
        return _lease(row, self._token(row["box"], row["fence"]))

    def _token(self, box: str, fence: int) -> str:
        # The creation id: a token of another lease file, or of this path before it was wiped, never matches.
        return f"local:{box}:{self.creation_id}:{fence}"

    def lease(self, lease_id: str) -> Lease:
        with self._faults():
            row = self._conn().execute("SELECT * FROM leases WHERE id = ?", (lease_id,)).fetchone()
        if row is None:
            raise StaleLease(f"no lease {lease_id}")
        return self._lease(row)

    def audit(self, limit: int = 100) -> list[AuditEvent]:
        with self._faults():
            rows = self._conn().execute("SELECT * FROM audit ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
        both = bool(rows) and "at_boot" in rows[0].keys()      # noqa: SIM118 (`in` a Row looks at its values)
        return [AuditEvent(r["seq"], r["at"], r["event"], r["lease_id"], r["box"],
                           tuple(s for s in r["slots"].split(",") if s), r["fence"], r["holder"], r["detail"],
                           *((r["at_boot"], r["evidence"]) if both else ()))
                for r in reversed(rows)]

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
