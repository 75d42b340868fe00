"""Saying that a command waits for its lease, as `salloc` says "Pending job allocation": once, on stderr.

A lease granted within `SAY_AFTER_S` says nothing; one that keeps the caller waiting prints one line naming what
it waits for and for how long at most, unless -q. The wait itself is the backend's, unchanged."""

from __future__ import annotations

import sys
import threading
from typing import Any

from redfirst import clitools
from redfirst.leases.model import Lease, LeaseRequest

SAY_AFTER_S = 0.5


def wanted(request: LeaseRequest) -> str:
    """What `request` asks for, in words: `thor (1 GPU)`, `a box where gpu_model=h200 (the whole box)`."""
    where = request.box if request.box is not None else f"a box where {request.select}"
    size = ("the whole box" if request.whole_box else f"{request.gpus} GPU{'s' if request.gpus != 1 else ''}"
            if request.gpus else "one slot")
    return f"{where} ({size})"


def acquire_telling(backend: Any, request: LeaseRequest, wait: float, *, who: str = "", **kw: Any) -> Lease:
    """`backend.acquire(request, wait, **kw)`, printing `leases: waiting up to 60s for thor (1 GPU)` (and `who`,
    the gate or command that waits) once it has waited `SAY_AFTER_S`. Raises what acquire raises."""
    if wait <= 0 or clitools.verbosity() < 0:
        return backend.acquire(request, wait, **kw)
    line = f"leases: waiting up to {wait:g}s for {wanted(request)}{f' for {who}' if who else ''}"
    timer = threading.Timer(SAY_AFTER_S, lambda: print(line, file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        return backend.acquire(request, wait, **kw)
    finally:
        timer.cancel()
