"""Machine-wide claims: which lease file granted a slot, until when, to which processes (JSON files in
the lock folder, read and written under the writer lock), and the write transaction that keeps them
in step with the lease file (`_committed`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from redfirst import yamlsrc
from redfirst.leases import clock, procs
from redfirst.leases.backends.local.slot_locks import SlotLocks
from redfirst.leases.backends.local.store import BUSY_TIMEOUT, STOP_GRACE, TX_FLOOR, _holder
from redfirst.leases.model import LeaseError, NotGranted
from redfirst.leases.procs import ProcessId


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


def _ident(value: Any, size: int) -> bool:
    """A process as a claim lists it: [pid, boot, start] (and its group's id, or null, when `size` is 4)."""
    return (isinstance(value, list) and len(value) == size and type(value[0]) is int and isinstance(value[1], str)
            and type(value[2]) is int and (size == 3 or value[3] is None or type(value[3]) is int))


_TEXT = ("db", "db_path", "lease", "token", "boot")
_NUMBER = ("expires_boot", "expires", "term_boot")


def claim_read(path: Path) -> dict[str, Any] | None:
    """The claim at `path`, or None when there is none or it is not one redfirst wrote: torn by a crash, or
    whatever a user of the machine put there (the folder is everyone's, like /tmp): a FIFO or device (never
    opened for a blocking read), a file over the loader's bounds (size, nesting), or fields not of the types
    a claim's writer gives them. What a caller may rely on: every text field is a str, every time a number,
    `holder` null or [pid, boot, start], `procs` a list of [pid, boot, start, group], `voided` a mapping of
    mappings. The slot's OS lock still guards a command running on it, so no claim is never a second grant."""
    try:
        claim = yamlsrc.load_json(path)
    except yamlsrc.YamlError:
        return None
    if not isinstance(claim, dict):
        return None
    fits = (all(isinstance(claim.get(k, ""), str) for k in _TEXT)
            and all(isinstance(claim.get(k, 0), (int, float)) and not isinstance(claim.get(k, 0), bool)
                    for k in _NUMBER)
            and (claim.get("holder") is None or _ident(claim["holder"], 3))
            and isinstance(claim.get("procs") or [], list) and all(_ident(p, 4) for p in claim.get("procs") or [])
            and isinstance(claim.get("voided") or {}, dict)
            and all(isinstance(v, dict) for v in (claim.get("voided") or {}).values()))
    return claim if fits else None


def _claim_expired(claim: dict[str, Any], now: clock.Instant) -> bool:
    """Whether a claim's lease has expired or ended: judged on CLOCK_BOOTTIME, and every claim of another boot has.

    A claim an older redfirst wrote has only its wall-clock expiry, and is judged by it."""
    if "expires_boot" in claim:
        expires = claim.get("expires_boot")
        return claim.get("boot") != procs.boot_id() or not isinstance(expires, (int, float)) or now.boot > expires
    expires = claim.get("expires")
    return not isinstance(expires, (int, float)) or now.wall > expires




class Claims(SlotLocks):
    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front so check-then-grant cannot interleave."""
        self._writable()
        with self._faults(), self._tx_raw() as conn:
            self._one_machines(conn)
            yield conn

    @contextlib.contextmanager
    def _tx_raw(self) -> Iterator[sqlite3.Connection]:
        """The write transaction's locks: the machine-wide writer lock(s), then SQLite's own.

        What a caller may rely on: inside `waiting_until(end)` (an `acquire` and its `--wait`) neither lock is
        waited for past `end`, or TX_FLOOR seconds when less is left (a write another redfirst is making takes
        milliseconds), and SQLite's lock is waited for until `end` however long that is (its busy timeout is
        at most BUSY_TIMEOUT, so the BEGIN is tried again until the wait is spent). A lock held past the wait,
        by a stopped or stuck process or another program in a transaction on the lease file, is NotGranted.
        Outside it (release, renew, status, a holder's own writes) SQLite's lock is waited for BUSY_TIMEOUT, as a
        lease's end must not be given up early, then a LeaseError. Either message names the processes holding
        the lease file's write lock (`procs.write_lockers`)."""
        conn = self._conn()
        end = getattr(self._tls, "until", None)
        floor = time.monotonic() + TX_FLOOR
        until = None if end is None else (end if end >= floor else floor)      # a NaN end is the floor
        killed: list[ProcessId] = []
        held: list[int] = []
        try:
            for folder in self._writer_folders():
                gate, stopped = self._writer_lock(folder, until)
                held.append(gate)
                killed += stopped
            self._begin(conn, until)
            with self._committed(conn, killed) as tx:
                yield tx
        finally:
            for gate in reversed(held):
                fcntl.flock(gate, fcntl.LOCK_UN)

    def _begin(self, conn: sqlite3.Connection, until: float | None) -> None:
        """BEGIN IMMEDIATE, waiting for SQLite's write lock until `until` (None: BUSY_TIMEOUT), tried again in
        steps of at most BUSY_TIMEOUT (SQLite's own bound, and an infinite wait): see `_tx_raw`."""
        started = time.monotonic()
        try:
            while True:
                if until is not None:     # the time left, within 1 ms and SQLite's own bound
                    left = min(until - time.monotonic(), BUSY_TIMEOUT)
                    conn.execute(f"PRAGMA busy_timeout = {int(left * 1000) if left > 0.001 else 1}")
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if not any(w in str(exc) for w in ("locked", "busy")):
                        raise
                    if until is not None and time.monotonic() < until - 0.001:
                        time.sleep(0.01)      # an answer without SQLite's busy handler never spins
                        continue
                    who = ", ".join(procs.write_lockers([str(self.db), f"{self.db}-wal", f"{self.db}-shm"]))
                    held = f"held by {who}" if who else "its holder not seen in /proc/locks"
                    took = time.monotonic() - started
                    if until is None:
                        raise LeaseError(f"the lease file {self.db} stayed locked by another program's "
                                         f"transaction for {took:.1f}s ({held})") from None
                    raise NotGranted(f"the lease file {self.db} stayed locked by another program's transaction "
                                     f"past the wait ({held})") from None
        finally:
            if until is not None:
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")

    @contextlib.contextmanager
    def waiting_until(self, end: float) -> Iterator[None]:
        """Every write transaction of this thread in the block is bounded by `end` (`_tx_raw`)."""
        before = getattr(self._tls, "until", None)
        self._tls.until = end
        try:
            yield
        finally:
            self._tls.until = before

    @contextlib.contextmanager
    def _committed(self, conn: sqlite3.Connection, killed: list[ProcessId]) -> Iterator[sqlite3.Connection]:
        """One transaction; what it voids in the machine-wide claims is voided once it has committed.

        Claims are files, outside the transaction: one that grants or extends writes them before its COMMIT
        (a committed lease always has its claim), one that ends voids them after it (a lease that is still
        held, because the ending transaction died or its COMMIT failed, never has a voided claim). A crash
        between the two leaves a claim that outlives its lease until its expiry or its holder's death:
        the slot looks busy a little longer, never free while held."""
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
            issued = yamlsrc.load_json(self._fences_path())     # never a blocking read of a FIFO put there
        except yamlsrc.YamlError:
            return {}       # none yet, the folder was removed, or not a file redfirst wrote: the file's own counter
        return {k: v for k, v in issued.items() if type(v) is int} if isinstance(issued, dict) else {}

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
        """The slot's claim, every field of the type redfirst writes (`claim_read`), or None: none, or torn."""
        return claim_read(self._claim_path(box, slot))

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
