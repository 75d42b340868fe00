"""`LocalBackend`: the lease file opened for this machine, and what a holder does with its lease
(renew, release, register a process, run under it).
"""

from __future__ import annotations

import errno
import os
import socket
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

from redfirst.leases import clock, detect, procs
from redfirst.leases.backends import LEASE_BACKEND_ENV
from redfirst.leases.backends.local.claims import _store
from redfirst.leases.backends.local.queue import _WAKE, _WAKE_LOCK, Queue
from redfirst.leases.backends.local.slot_locks import machine_lock_dir
from redfirst.leases.backends.local.store import SCHEMA_VERSION, _holder, _read_only_fs, another_machine
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import (
    Box,
    Lease,
    LeaseError,
    StaleLease,
)
from redfirst.leases.procs import ProcessId


class LocalBackend(Queue):
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

    def _end_what_another_boot_held(self) -> None:
        """A lease file last used in another boot of this machine: every lease it held has ended (its processes
        died with that boot, and its CLOCK_BOOTTIME readings mean nothing in this one); its waiters are gone.

        Only a lease proven this machine's is ended so (`_earlier_boot_of_this_machine`); a file that holds a
        lease of another machine is refused (LeaseError naming both machines) and nothing of it is changed."""
        with self._faults():
            meta = dict(self._conn().execute("SELECT key, value FROM meta WHERE key IN ('boot_id', 'machine_id')"))
            if meta.get("boot_id") == procs.boot_id() and "machine_id" in meta:
                return
            with self._tx_raw() as conn:
                meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('boot_id', 'machine_id')"))
                boot = str(meta.get("boot_id", "unknown"))
                if boot != procs.boot_id():
                    t = clock.now()
                    rebooted = t.at(0.0)    # it ended no later than this boot began
                    held = conn.execute("SELECT * FROM leases WHERE state = 'held'").fetchall()
                    for lease in held:
                        refusal = self._earlier_boot_of_this_machine(lease, meta.get("machine_id"), rebooted.wall)
                        if refusal:
                            raise LeaseError(another_machine(self.db, str(lease["holder_boot"] or boot), refusal,
                                                             str(lease["holder_machine"] or meta.get("machine_id")
                                                                 or "unrecorded")))
                    for lease in held:
                        self._end(conn, lease, rebooted, "expire", f"the machine rebooted (boot {boot[:8]} ended)")
                    for table in ("waiters", "granted", "procs", "reservations"):
                        conn.execute(f"DELETE FROM {table}")
                    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('boot_id', ?)", (procs.boot_id(),))
                conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('machine_id', ?)", (procs.machine_id(),))

    @staticmethod
    def _earlier_boot_of_this_machine(lease: sqlite3.Row, file_machine: str | None, booted_wall: float) -> str:
        """Why a held lease of another boot may NOT be ended as this machine's reboot ("" when it may).

        A caller may rely on "" only for a lease whose machine record (its own, else the file's) is this
        machine's id (`procs.machine_id`) and that was last renewed before this boot began: renewal times alone
        never prove it, since a machine that booted within a heartbeat of another's last one sees that live lease
        as renewed before it booted (a lease an older redfirst wrote, with no machine record, has only them)."""
        machine = lease["holder_machine"] or file_machine
        if machine is not None and machine != procs.machine_id():
            return (f"holds its lease {lease['id']} ({lease['holder']}), which this machine never ends whatever its "
                    f"renewal times; nothing of it was ended")
        if (lease["expires_at"] or 0) - (lease["ttl"] or 0) > booted_wall + 1.0:
            # Even with the same record: two machines cloned with one machine-id and hostname are told apart so.
            return (f"holds its lease {lease['id']} ({lease['holder']}), renewed after this machine booted; "
                    f"nothing of it was ended")
        return ""

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

    def note_stopped(self, lease_id: str, token: str, detail: str) -> None:
        """Audit (event `stop`) that the holder of the live lease stopped processes its command left running."""
        with self._tx() as conn:
            now = clock.now()
            row = self._live_row(conn, lease_id, token, now)
            self._audit(conn, now, "stop", lease_id, row["box"], row["slots"].split(","), row["fence"], row["holder"],
                        detail)

    def why_not_inside(self, lease_id: str) -> str | None:
        # Its holder, or a process it runs (`redfirst.leases.exec` registers itself), is this process or an ancestor;
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

    def status(self) -> list[Lease]:
        if self.read_only:      # nothing can be reaped: the live ones are those not yet past their expiry
            with self._faults():
                return [self._lease(r) for r in self._unexpired()]
        with self._tx() as conn:
            self._reap(conn, clock.now())
            rows = conn.execute("SELECT * FROM leases WHERE state = 'held' ORDER BY granted_at").fetchall()
        return [self._lease(r) for r in rows]

    def why_cannot_run(self) -> str | None:
        return None

    def identity(self, lease: Lease, box: Box | None) -> dict[str, Any]:
        # This machine's own answer: the leased slots' GPUs as cuda-python sees them.
        gpus, labels = detect.local_gpus()
        by_slot = {g.slot: g for g in gpus} if lease.box == "local" else {}
        # What detection finds where the command runs (here): a declared box's command runs here with none of
        # this machine's GPUs (`env`), so none of its declared labels is detected.
        detected = detect.local_labels() if lease.box == "local" else {"host": socket.gethostname(), "gpus": "0"}
        return {
            "detected": {k: v for k, v in detected.items() if detect.is_detected_label(k)},
            # its GPUs and labels are redfirst.yaml's word only: the command runs on this machine
            "declared_only": lease.box != "local",
            "boot_id": procs.boot_id(),
            "gpus": [{"slot": s, "name": by_slot[s].name, "sm": by_slot[s].sm, "uuid": by_slot[s].uuid}
                     for s in lease.slots if s in by_slot],
            "driver": labels.get("driver"),
            "cuda_driver_api": labels.get("cuda"),
            "toolkit": detect.toolkit(),
        }

    def run_prefix(self, lease: Lease) -> list[str]:
        # The slots' identities as this process knows them: the wrapper refuses to lock other ones.
        return [sys.executable, "-m", "redfirst.leases.exec", "--db", str(self.db), "--lease", lease.id,
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
