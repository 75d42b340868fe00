"""The Backend Protocol every lease backend implements, and the registry that names them.

A new backend is one module here plus one line in `_REGISTRY`.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import AuditEvent, Box, Lease, LeaseRequest


class Backend(Protocol):
    name: str

    # Every box this backend can lease, with its labels.
    def boxes(self) -> list[Box]: ...

    # A lease on `request`, waiting up to `wait` s; raises NotGranted (busy) or Unsatisfiable (never).
    # It ends when the calling process dies, unless `detached` (then only its TTL or runtime ends it).
    def acquire(self, request: LeaseRequest, wait: float, *, detached: bool = False) -> Lease: ...

    # The lease with its expiry pushed out by its TTL; raises StaleLease when it is no longer live.
    def renew(self, lease_id: str, token: str | None = None) -> Lease: ...

    # Ends the lease and stops what it started; raises StaleLease when it is no longer live.
    def release(self, lease_id: str, token: str | None = None) -> None: ...

    # The live leases.
    def status(self) -> list[Lease]: ...

    # The newest `limit` audit events, oldest first.
    def audit(self, limit: int = 100) -> list[AuditEvent]: ...

    # Why a command started on this machine cannot run on this backend's leased boxes, or None when
    # `run_prefix` runs it. Asked before acquiring, so a refusal holds nothing.
    def why_cannot_run(self) -> str | None: ...

    # The argv prefix that runs a command on the leased box (fenced: it refuses a stale token);
    # raises Unsatisfiable, naming why, when `why_cannot_run` says it cannot.
    def run_prefix(self, lease: Lease) -> list[str]: ...

    # What the leased box is, as the box itself (or its controller) reports it, for the evidence record:
    # `boot_id`, `gpus` (slot, name, sm, uuid), `driver`, `toolkit`, plus facts of this backend.
    def identity(self, lease: Lease, box: Box | None) -> dict[str, Any]: ...

    # Environment a leased command gets (CUDA_VISIBLE_DEVICES, the lease id and token).
    def env(self, lease: Lease) -> dict[str, str]: ...

    # Why this process does not run inside lease `lease_id` (it is not the lease's holder, a process the lease
    # runs, or a descendant of one), or None when it does. Asked before anything is renewed: a lease's
    # variables copied into another shell name a live lease that encloses nothing there.
    def why_not_inside(self, lease_id: str) -> str | None: ...


# Where a gate runs without `--lease` (a CUDA gate still holds its GPUs): this machine.
THIS_MACHINE_BACKEND = "local"
THIS_MACHINE_BOX = "local"
# Every backend's `env` names itself here, so a gate inside a leased command asks that backend about the lease.
LEASE_BACKEND_ENV = "REDFIRST_LEASE_BACKEND"

_REGISTRY = {
    "local": "redfirst.leases.backends.local:LocalBackend",
    "slurm": "redfirst.leases.backends.slurm:SlurmBackend",
    "rc": "redfirst.leases.backends.rc:RcBackend",
}


def open_backend(config: LeasesConfig, name: str | None = None) -> Backend:
    """The backend `name` (default: the configured one) built from `config`."""
    module, _, cls = _REGISTRY[name or config.backend].partition(":")
    backend: Backend = getattr(importlib.import_module(module), cls)(config)
    return backend
