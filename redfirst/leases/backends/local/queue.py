"""The line of waiters and the grant: first come, first served per box, in one `BEGIN IMMEDIATE`
transaction under the machine-wide writer lock.

Guarantee: one live holder per slot identity (`_free_slots` via `_pick`: a slot is granted only when no
live lease of this file holds it (the partial unique index `one_live_lease_per_slot` refuses a second),
no other lease file's claim or leftover process holds it, and no process holds its OS lock).
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from redfirst.leases import clock, procs
from redfirst.leases.backends.local.claims import _store
from redfirst.leases.backends.local.reaping import Reaping
from redfirst.leases.model import (
    Box,
    Lease,
    LeaseRequest,
    NotGranted,
    Unsatisfiable,
)
from redfirst.leases.procs import ProcessId
from redfirst.leases.selector import parse

# Threads of one process that wait on one lease file wake as soon as one of them frees a slot;
# waiters in other processes notice by polling.
_WAKE: dict[str, threading.Condition] = {}


_WAKE_LOCK = threading.Lock()
WAITER_STALE = 10.0     # a waiter that has not polled for this long has gone away
STOPPED = ("T", "t")    # /proc states of a process stopped by a signal or a tracer


class Queue(Reaping):
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

    def acquire(self, request: LeaseRequest, wait: float, *, detached: bool = False) -> Lease:
        # A detached lease (`leases acquire`) has no holder process: it lives by TTL and `renew` alone.
        boxes = self.candidates(request)
        end = time.monotonic() + max(wait, 0.0)
        with self.waiting_until(end):       # no lock is waited for past the wait (`Claims._tx_raw`)
            return self._acquire(request, boxes, end, detached)

    def _acquire(self, request: LeaseRequest, boxes: list[Box], end: float, detached: bool) -> Lease:
        me = procs.me()
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
        pool = box.slots if (request.whole_box or request.gpus == 0) else box.gpu_slots
        free, held, elsewhere = self._free_slots(conn, box, pool, now)
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

    def _free_slots(self, conn: sqlite3.Connection, box: Box, pool: Sequence[str], now: clock.Instant
                    ) -> tuple[list[str], dict[str, str], dict[str, dict[str, Any]]]:
        """One live holder per slot identity: of `pool`, the slots that may be granted now, with who holds
        the others (this file's live leases by slot; other lease files' claims by slot).

        A slot is free only when no live lease of this file holds it (the partial unique index
        `one_live_lease_per_slot` would refuse a second), no process of an ended lease still runs on it,
        no other lease file's live claim or leftover process holds it, and no process holds its OS lock
        (keyed by the slot's identity, a GPU's UUID: the same lock whatever lease file names the GPU)."""
        held = {r["slot"]: r["lease_id"] for r in conn.execute(
            "SELECT slot, lease_id FROM lease_slots WHERE box = ? AND live = 1", (box.name,))}
        # An ended lease's processes that run on without the lock (a child that did not inherit it) still use its slots.
        lingering = self._lingering(conn, "lease_id IN (SELECT id FROM leases WHERE box = ? AND state != 'held')",
                                    box.name)
        elsewhere = {s: c for s in pool if s not in held and ((c := self._stop_leftovers(box.name, s, now)) is not None
                                                              or (c := self._claim_elsewhere(box.name, s, now)) is not None
                                                              or (c := self._removed_lock_holders(box.name, s, now)))}
        free = [s for s in pool if s not in held and s not in lingering and s not in elsewhere
                and self._lock_free(box.name, s)]
        return free, held, elsewhere

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
            " ttl, granted_at, expires_at, deadline, expires_boot, deadline_boot, purpose, holder_machine, state)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'held')",
            (lease_id, box.name, ",".join(slots), int(request.whole_box), fence, who,
             holder.pid if holder else None, holder.boot if holder else None, holder.start if holder else None,
             request.ttl, now.wall, expires.wall, deadline.wall if deadline else None, expires.boot,
             deadline.boot if deadline else None, request.purpose, procs.machine_id()))
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
