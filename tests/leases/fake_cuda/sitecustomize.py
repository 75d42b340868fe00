"""Loaded at start-up by every Python process of a test that puts tests/leases/fake_cuda on PYTHONPATH.

`REDFIRST_FAKE_LOCK_BASE` stands for the machine's lock base (`LOCK_BASES`) in that process: the fake GPUs'
locks and claims live in the test's own folder, never in /run/lock where other processes of this machine look.
"""

import os

if os.environ.get("REDFIRST_FAKE_LOCK_BASE"):
    from pathlib import Path

    import redfirst.leases.backends.local.slot_locks as _local
    _local.LOCK_BASES = (Path(os.environ["REDFIRST_FAKE_LOCK_BASE"]),)
