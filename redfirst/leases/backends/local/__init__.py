"""The `local` backend: this machine (and boxes declared in redfirst.yaml), leased through one SQLite file.

One module per concern, each class built on the one below it:
- `store.LeaseFile`: the lease file (schema, upgrade, read-only use, boxes, tokens, audit);
- `slot_locks.SlotLocks`: the machine-wide lock folder, one OS lock per slot identity, the writer lock;
- `claims.Claims`: which lease file granted a slot, and the transaction that keeps claims in step;
- `reaping.Reaping`: ending leases and stopping what they left running;
- `queue.Queue`: the line of waiters and the grant;
- `backend.LocalBackend`: opening it all, and what a holder does with its lease.

Its guarantees, each one function (with the selftest mutation that breaks it, selftest/mutations/leases.yaml):
- one live holder per GPU identity: `Queue._free_slots`;
- a dead holder's slot free again within TTL + 1 s: `Reaping._reap`;
- nothing granted on a lost lock: `SlotLocks._writer_lock`.

The grant is one `BEGIN IMMEDIATE` transaction that reaps dead and expired holders, serves waiters
first come first served, and grants only free slots. Locks and claims live in one machine-wide folder
(`machine_lock_dir()`), keyed by the GPU's identity (its UUID; `cpu0` for the CPU slot), whatever lease
file or XDG_STATE_HOME is used; every grant of every lease file is made under that folder's one writer
lock. The OS lock (`flock` on `<identity>.lock`) is taken by the process that runs the leased command
(`redfirst.leases.exec`) and inherited by its children, so a holder that crashed with a child still
running keeps its slot until its TTL stops that child. Tokens carry the lease file's creation id, so a
token of another or a wiped lease file is never taken for a live one.
"""

from redfirst.leases.backends.local.backend import LocalBackend
from redfirst.leases.backends.local.queue import WAITER_STALE
from redfirst.leases.backends.local.slot_locks import gpu_lock_dir, machine_lock_dir
from redfirst.leases.backends.local.store import SCHEMA_VERSION

__all__ = ["SCHEMA_VERSION", "WAITER_STALE", "LocalBackend", "gpu_lock_dir", "machine_lock_dir"]
