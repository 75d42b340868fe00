"""The two clocks of the local leases: CLOCK_BOOTTIME decides, the wall clock stamps what people read.

Every expiry decision (a lease's expiry and deadline, a waiter's last poll, the SIGTERM sent to a
stale lease's processes, a machine-wide claim's expiry) is taken on CLOCK_BOOTTIME: it never
steps (an NTP step, a bad RTC, `date -s`), it counts time suspended, and it is one clock for every
process of one boot, so two processes always agree whether a lease has expired. Its values mean
nothing in another boot: whatever a lease file or claim of another boot held has ended. The wall
clock is only read for stamps shown to people (the audit's `at`, a lease's `granted_utc`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass


def boottime() -> float:
    """Seconds since this boot, suspend included; the same reading for every process of the machine."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


@dataclass(frozen=True)
class Instant:
    """One moment on both clocks: `boot` decides, `wall` is for people."""

    wall: float
    boot: float

    def at(self, boot: float) -> Instant:
        """The moment `boot` (a CLOCK_BOOTTIME reading), with the wall time it had if the wall clock did not step."""
        return Instant(self.wall - (self.boot - boot), boot)

    def after(self, seconds: float) -> Instant:
        return Instant(self.wall + seconds, self.boot + seconds)


def now() -> Instant:
    return Instant(time.time(), boottime())
