"""`python -m redfirst.leases.exec --db DB --lease ID --token T -- CMD`: run CMD as the holder of a local lease's slots.

It takes the OS lock of every slot (inherited by CMD and its children, so an orphaned child
keeps the slot), records its own identity so an expired lease can stop it, refuses a stale
token (exit 75), and then becomes CMD (exec: same pid, same lock).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
import time
from pathlib import Path

from redfirst.leases import procs
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseError, StaleLease
from redfirst.leases.verdicts import EXIT_LEASE_NOT_GRANTED

LOCK_WAIT = 10.0    # a stale wrapper that lost the race lets go of the lock within milliseconds


# Where a caller (redfirst.gates.runner) wants the wrapper's refusal written, so that the refusal's exit
# status is never read as the command's own.
REFUSED_FILE = "REDFIRST_LEASE_REFUSED"


def _refuse(message: str) -> int:
    print(f"leases: {message}", file=sys.stderr)
    path = os.environ.pop(REFUSED_FILE, None)
    if path:
        try:
            Path(path).write_text(f"leases: {message}; the command did not run\n")
        except OSError:
            pass    # the caller then reads the exit status alone, as without this file
    return EXIT_LEASE_NOT_GRANTED


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m redfirst.leases.exec")
    ap.add_argument("--db", required=True)
    ap.add_argument("--lease", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--identities", help="what the leased slots are (GPU UUIDs, cpu0), comma-separated, in slot order")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        ap.error("no command after --")
    os.environ["REDFIRST_LEASES_DB"] = args.db
    try:
        return _run(args.lease, args.token, cmd, args.identities.split(",") if args.identities else None)
    except (LeaseError, OSError) as exc:   # a fault of the lease file or lock folder: the command did not run
        return _refuse(f"{exc}; the command did not run")


def _run(lease_id: str, token: str, cmd: list[str], identities: list[str] | None = None) -> int:
    from redfirst.leases.backends.local import LocalBackend

    backend = LocalBackend(LeasesConfig())
    try:
        lease = backend.lease(lease_id)
    except StaleLease as exc:
        return _refuse(f"refused: {exc}")
    here = [backend.slot_identity(lease.box, s) for s in lease.slots]
    if identities is not None and identities != here:
        # Its lock would be another GPU's, or no GPU's: the machine's GPUs changed, or cannot be detected here.
        return _refuse(f"refused: lease {lease_id} holds {', '.join(identities)}, but this process finds "
                       f"{', '.join(here)} in its slots {', '.join(lease.slots)} (GPUs detected: "
                       f"{', '.join(g.uuid or g.slot for g in backend.boxes()[0].gpus) or 'none'})")
    fds = []
    for slot in lease.slots:
        fd = backend.open_lock(lease.box, slot)
        end = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > end:
                    return _refuse(f"refused: slot {slot} of {lease.box} is still locked by another process")
                time.sleep(0.01)
        fds.append(fd)
    try:
        os.setpgid(0, 0)    # its own process group, so stopping the lease stops the whole tree
    except OSError:
        pass                # already a session leader (started with a new session): its group is its own
    pgid = os.getpgid(0)
    try:
        # Lock first, then check the token: a wrapper whose lease was superseded never runs its command.
        lease = backend.register_process(lease_id, token, procs.me(), pgid if pgid == os.getpid() else None)
    except StaleLease as exc:
        return _refuse(f"refused: {exc}")
    for fd in fds:
        os.set_inheritable(fd, True)
    os.environ.pop(REFUSED_FILE, None)     # the command's own environment does not carry it
    env = dict(os.environ)
    env.update(backend.env(lease))
    try:
        os.execvpe(cmd[0], cmd, env)
    except FileNotFoundError:
        print(f"leases: {cmd[0]}: command not found", file=sys.stderr)
        return 127
    except PermissionError:
        print(f"leases: {cmd[0]}: permission denied", file=sys.stderr)
        return 126
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())
