"""Ending leases and stopping what they left running.

Guarantee: a dead holder's slot is free again within its TTL plus a second (`_reap`: a lease whose
holder died, missed its heartbeats or ran past its maximum runtime is ended in the next transaction,
and its processes get SIGTERM then SIGKILL within the grace).
"""

from __future__ import annotations

import os
import signal
import sqlite3

from redfirst.leases import clock, procs
from redfirst.leases.backends.local.claims import Claims
from redfirst.leases.backends.local.store import STOP_GRACE, _holder, grace
from redfirst.leases.procs import ProcessId


class Reaping(Claims):
    def _reapable(self, row: sqlite3.Row, now: float) -> bool:
        """Whether a held lease is due for a reap at `now` (CLOCK_BOOTTIME)."""
        if (now > row["expires_boot"] - grace(row["ttl"])
                or (row["deadline_boot"] is not None and now > row["deadline_boot"])):
            return True
        holder = _holder(row)
        return holder is not None and not procs.is_alive(holder)

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

    def _stop_all(self, running: list[sqlite3.Row]) -> None:
        # A released lease must not keep running: stop what it started, outside the transaction.
        for p in running:
            procs.stop(ProcessId(p["pid"], p["boot"], p["start"]), p["pgid"], STOP_GRACE)
        if running:
            with self._tx() as conn:
                conn.executemany("DELETE FROM procs WHERE rowid = ?", [(p["rid"],) for p in running])
                self._void_when_stopped(conn, {p["lease_id"] for p in running})
