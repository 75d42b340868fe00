"""The two clocks of the local leases: CLOCK_BOOTTIME decides, the wall clock stamps what people read.

Every expiry decision (a lease's expiry and deadline, a waiter's last poll, the SIGTERM sent to a
stale lease's processes, a machine-wide claim's expiry) is taken on CLOCK_BOOTTIME: it never
steps (an NTP step, a bad RTC, `date -s`), it counts time suspended, and it is one clock for every
process of one boot, so two processes always agree whether a lease has expired. Its values mean
nothing in another boot: whatever a lease file or claim of another boot held has ended. The wall
clock is only read for stamps shown to people (the audit's `at`, a lease's `granted_utc`).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass


def boottime() -> float:
    """Seconds since this boot, suspend included; the same reading for every process of the machine.

    CLOCK_BOOTTIME is per time namespace (`unshare --time`, a container, a CRIU restore): this process's
    namespace offset is taken out, so every namespace reads the machine's clock."""
    return time.clock_gettime(time.CLOCK_BOOTTIME) - namespace_offset()


@functools.cache
def namespace_offset() -> float:
    """Seconds this process's time namespace adds to CLOCK_BOOTTIME (0 in the machine's own namespace).

    Fixed for a process's life: a process cannot enter another time namespace once it has threads, and
    a time namespace's offsets are set before its first process starts."""
    try:
        with open("/proc/self/timens_offsets") as f:
            for line in f:
                name, secs, nsecs = line.split()
                if name in ("boottime", "7"):      # older kernels name the clock by its id
                    return int(secs) + int(nsecs) / 1e9
    except (OSError, ValueError):
        pass        # no time namespaces on this kernel: the machine's clock
    return 0.0


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
