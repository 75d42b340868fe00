"""Holding a lease: a heartbeat thread renews it every TTL/3 until it is released or found stale."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from redfirst.leases.backends import Backend
from redfirst.leases.model import Lease, LeaseRequest, StaleLease


class Holding:
    """A granted lease plus its heartbeat; `lost` is set (with `lost_reason`) when a renew is refused."""

    def __init__(self, backend: Backend, lease: Lease, on_lost: Callable[[str], None] | None = None) -> None:
        self.backend = backend
        self.lease = lease
        self.lost = threading.Event()
        self.lost_reason = ""
        self._on_lost = on_lost
        self._renewed = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat {lease.id}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        interval = max(self.lease.ttl / 3.0, 0.05)
        while not self._stop.wait(interval):
            asked = time.monotonic()    # the renewed expiry counts from when the renew was asked
            try:
                self.lease = self.backend.renew(self.lease.id, self.lease.token)
                self._renewed = asked
            except StaleLease as exc:
                self._lose(str(exc))
                return
            except Exception as exc:    # a backend hiccup is retried until the TTL decides
                last = f"heartbeat failed: {exc}"
                if self.lost.is_set():
                    return
                self.lost_reason = last

    def overdue(self) -> str | None:
        """Why a local lease must count as lost although no renew was refused: none landed for a whole TTL.

        A renew can hang (the lease file's writer lock held by a stopped process) or keep failing;
        past its TTL the lease is expired for everyone else, so its holder must stop too."""
        if self.lease.backend != "local" or self.lost.is_set():
            return None
        late = time.monotonic() - self._renewed
        if late <= self.lease.ttl:
            return None
        return f"no heartbeat landed for {late:.1f}s (TTL {self.lease.ttl:g}s){': ' + self.lost_reason if self.lost_reason else ''}"

    def _lose(self, reason: str) -> None:
        self.lost_reason = reason
        self.lost.set()
        if self._on_lost is not None:
            self._on_lost(reason)

    def release(self) -> str | None:
        """Stop the heartbeat and release; the reason when the lease was already stale, else None."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        if self.lost.is_set():
            return self.lost_reason
        try:
            self.backend.release(self.lease.id, self.lease.token)
        except StaleLease as exc:
            return str(exc)
        return None


@contextlib.contextmanager
def hold(backend: Backend, request: LeaseRequest, wait: float,
         on_lost: Callable[[str], None] | None = None) -> Iterator[Holding]:
    """Acquire (NotGranted / Unsatisfiable propagate), heartbeat while inside, release on the way out."""
    lease = backend.acquire(request, wait)
    holding = Holding(backend, lease, on_lost)
    try:
        yield holding
    finally:
        holding.release()
