"""Boxes, GPUs, lease requests and leases: plain frozen data that every backend speaks (DESIGN section 4)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from redfirst import scrub


class LeaseError(Exception):
    """A lease operation a user can act on; `str()` is the one-line reason."""


class NotGranted(LeaseError):
    """No lease was granted before the wait ran out (the box is busy)."""


class Unsatisfiable(LeaseError):
    """No box can ever satisfy the request (a missing label, too few GPUs, an unknown box)."""


class StaleLease(LeaseError):
    """The lease id or token is no longer the live holder of its slots (expired, released or superseded)."""


@dataclass(frozen=True)
class Gpu:
    slot: str                      # gpu0, gpu1, ...
    index: int
    name: str | None = None
    sm: str | None = None          # compute capability, "9.0"
    vram: int | None = None        # bytes
    uuid: str | None = None


@dataclass(frozen=True)
class Box:
    """A machine that can be leased: its slots (`gpu0..gpuN`, or `cpu0` without GPUs) and its labels."""

    name: str
    backend: str
    slots: tuple[str, ...]
    labels: tuple[tuple[str, str], ...] = ()
    gpus: tuple[Gpu, ...] = ()
    note: str = ""                 # why it has fewer GPUs than one may expect (no cuda-python, ...)

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def gpu_slots(self) -> tuple[str, ...]:
        return tuple(s for s in self.slots if s.startswith("gpu"))


@dataclass(frozen=True)
class LeaseRequest:
    """What a caller asks for: one named box or a selector, and how much of it.

    `gpus=0` asks for any one slot (the CPU slot of a box without GPUs); `gpus=N` for N GPUs;
    `whole_box` for every slot of the box.
    """

    box: str | None = None
    select: str | None = None
    gpus: int = 0
    whole_box: bool = False
    ttl: float = 30.0
    max_runtime: float | None = None
    purpose: str = ""
    # The project's own `secrets: names` (redfirst.yaml): their values are scrubbed from the purpose too.
    secret_names: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if (self.box is None) == (self.select is None):
            raise ValueError("a lease request names a box or a selector, not both and not neither")
        if self.gpus < 0:
            raise ValueError("gpus must be >= 0")
        if not math.isfinite(self.ttl) or self.ttl <= 0:
            raise ValueError("ttl must be a finite number of seconds > 0")
        if self.max_runtime is not None and (not math.isfinite(self.max_runtime) or self.max_runtime <= 0):
            raise ValueError("max runtime must be a finite number of seconds > 0")
        # The purpose is stored (the audit, a Slurm job name, the controller's reason) and printed: never a secret.
        object.__setattr__(self, "purpose", scrub.typed_text(self.purpose, names=self.secret_names))

    def describe(self) -> str:
        what = "the whole box" if self.whole_box else (f"{self.gpus} GPU(s)" if self.gpus else "one slot")
        where = f"box {self.box}" if self.box else f"--select {self.select}"
        return f"{what} of {where}"


@dataclass(frozen=True)
class Lease:
    """Exclusive use of `slots` of `box` until `expires_at` (renewed by heartbeats) and never past `deadline`.

    `token` is the fencing token: it names the grant, and a later grant of the same slots
    always carries a larger `fence`.
    """

    id: str
    backend: str
    box: str
    slots: tuple[str, ...]
    whole_box: bool
    token: str
    fence: int
    holder: str
    ttl: float
    granted_at: float
    expires_at: float
    deadline: float | None = None
    purpose: str = ""
    extra: tuple[tuple[str, str], ...] = field(default=())   # backend facts (slurm: cluster, job id)

    @property
    def extra_map(self) -> dict[str, str]:
        return dict(self.extra)


@dataclass(frozen=True)
class AuditEvent:
    """One event of a lease file's audit; `at` is wall-clock time, for people.

    `at_boot` (local leases) is the same moment on CLOCK_BOOTTIME, one clock for every process of
    the machine that never steps: events of several lease files order by it. `evidence` is JSON a
    checker can judge by (local grants: the other lease files' claims the grant found void, and why)."""

    seq: int
    at: float
    event: str                     # grant | renew | release | expire | stop | reserve
    lease_id: str
    box: str
    slots: tuple[str, ...]
    fence: int
    holder: str
    detail: str = ""
    at_boot: float | None = None
    evidence: str = ""
