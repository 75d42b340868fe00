"""The Backend Protocol every lease backend implements, and the registry that names them.

A new backend is one module here plus one line in `_REGISTRY`.
"""

from __future__ import annotations

import importlib
from typing import Protocol

from leases.config import LeasesConfig
from leases.model import AuditEvent, Box, Lease, LeaseRequest


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

    # The argv prefix that runs a command inside the lease (fenced: it refuses a stale token).
    def run_prefix(self, lease: Lease) -> list[str]: ...

    # Environment a leased command gets (CUDA_VISIBLE_DEVICES, the lease id and token).
    def env(self, lease: Lease) -> dict[str, str]: ...


_REGISTRY = {
    "local": "leases.backends.local:LocalBackend",
    "slurm": "leases.backends.slurm:SlurmBackend",
    "rc": "leases.backends.rc:RcBackend",
}


def open_backend(config: LeasesConfig, name: str | None = None) -> Backend:
    """The backend `name` (default: the configured one) built from `config`."""
    module, _, cls = _REGISTRY[name or config.backend].partition(":")
    backend: Backend = getattr(importlib.import_module(module), cls)(config)
    return backend
