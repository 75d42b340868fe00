"""`leases run`: acquire, run the command inside the lease with heartbeats and streamed output, release."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from redfirst import scrub
from redfirst.leases import procs, waiting
from redfirst.leases.backends import Backend
from redfirst.leases.hold import Holding
from redfirst.leases.model import Lease, LeaseError, LeaseRequest, NotGranted, Unsatisfiable
from redfirst.leases.verdicts import EXIT_ERROR, EXIT_LEASE_NOT_GRANTED
from redfirst.process import Contained

STOP_GRACE = 5.0


def _status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _stop(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM the leased command's process group, SIGKILL after a grace period."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                child.send_signal(sig)
            except ProcessLookupError:
                return
        try:
            child.wait(STOP_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue


def _end_what_it_left(backend: Backend, holding: Holding, contained: Contained) -> None:
    """Nothing the command started outlives its lease: called before the release, while the lease still holds
    its slots, it ends every process of the command's containment (`Contained.end`) and audits their pids.

    One it could not end is registered as the lease's (the released lease's slots stay busy while it lives, and
    its release stops it), so the slot is never granted beside it."""
    lease = holding.lease
    escaped = contained.end()
    if not contained.ended:
        return
    pids = ", ".join(f"pid {p}" for p in contained.ended)
    detail = (f"at release: stopped {len(contained.ended)} process(es) the command left running ({pids})"
              + (f"; {', '.join(f'pid {p}' for p in escaped)} escaped the kill" if escaped else ""))
    print(f"leases: {detail}", file=sys.stderr)
    note = getattr(backend, "note_stopped", None)
    register = getattr(backend, "register_process", None)
    try:
        if note is not None:
            note(lease.id, lease.token, detail)
        for pid in escaped:
            ident = procs.identify(pid)
            if ident is not None and register is not None:
                register(lease.id, lease.token, ident, None)
    except LeaseError as exc:      # the lease was lost meanwhile: its reap stops what it finds
        print(f"leases: could not record it under lease {lease.id}: {exc}", file=sys.stderr)


NEVER_RAN = "the command never ran: this 75 is redfirst's (no lease), not the command's"


def run_leased(backend: Backend, request: LeaseRequest, wait: float, cmd: Sequence[str],
               report: dict[str, Any] | None = None) -> int:
    """The command's exit status; 75 when no lease was granted in time; 2 when none can ever be.

    DESIGN fixes 75 for "not granted", and a command may exit 75 itself: stderr says which it was (NEVER_RAN, or
    that the command itself exited 75). `report`, when given (`leases run --json`), is filled with `granted`,
    `lease` (its fields, None when none was granted) and `status` (the command's own exit status, None when it
    never ran); the command's stdout then goes to stderr, so stdout holds the one document alone."""
    out = None if report is None else sys.stderr.fileno()
    if report is not None:
        report.update(granted=False, lease=None, status=None)

    def granted(lease: Lease) -> None:
        if report is not None:
            report.update(granted=True, lease=asdict(lease))

    def not_granted(exc: LeaseError) -> int:
        message = scrub.typed_text(f"not granted within {wait:g}s: {exc}", names=request.secret_names)
        print(f"leases: {message}; {NEVER_RAN}", file=sys.stderr)
        if report is not None:
            report["errors"] = [message]
        return EXIT_LEASE_NOT_GRANTED

    def unsatisfiable(exc: LeaseError) -> int:
        message = scrub.typed_text(str(exc), names=request.secret_names)
        print(f"leases: {message}", file=sys.stderr)
        if report is not None:
            report["errors"] = [message]
        return EXIT_ERROR

    def ran(status: int) -> int:
        if report is not None:
            report["status"] = status
        if status == EXIT_LEASE_NOT_GRANTED:
            print(f"leases: the command itself exited {status} (its lease was granted and has been released)",
                  file=sys.stderr)
        return status

    run_job = getattr(backend, "run_job", None)
    if run_job is not None:
        # A backend whose leases run commands remotely (rc): the lease is the job itself.
        try:
            return ran(int(run_job(request, wait, list(cmd), on_grant=granted, out=out)))
        except NotGranted as exc:
            return not_granted(exc)
        except Unsatisfiable as exc:
            return unsatisfiable(exc)
    try:
        lease = waiting.acquire_telling(backend, request, wait)
    except NotGranted as exc:
        return not_granted(exc)
    except Unsatisfiable as exc:
        return unsatisfiable(exc)
    granted(lease)
    from redfirst import clitools

    if clitools.verbosity() >= 0:   # -q: the command's own output only
        print(f"leases: {lease.id} token {lease.token} on {lease.box} ({', '.join(lease.slots)})", file=sys.stderr)
    # Counted on a clock that never steps: a wall clock set forward must not end the command early.
    runtime_end = None if lease.deadline is None else time.monotonic() + (lease.deadline - lease.granted_at)
    holding = Holding(backend, lease)
    env = dict(os.environ)
    env.update(backend.env(lease))
    interrupted: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        interrupted.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    contained = Contained()
    try:
        # Its own process group, so stopping the lease stops the whole tree; contained, so what leaves the group
        # (a daemon) is still the lease's.
        child = subprocess.Popen([*backend.run_prefix(lease), *cmd], env=env, process_group=0,
                                 preexec_fn=contained.preexec, stdout=out)
        contained.started(child)
        while True:
            try:
                code = child.wait(0.05)
                break
            except subprocess.TimeoutExpired:
                pass
            overdue = holding.overdue()
            if holding.lost.is_set() or overdue:
                print(f"leases: lease lost, stopping the command: {overdue or holding.lost_reason}", file=sys.stderr)
                _stop(child)
                code = child.wait()
                break
            if runtime_end is not None and time.monotonic() > runtime_end:
                print(f"leases: maximum runtime of {request.max_runtime:g}s reached, stopping the command",
                      file=sys.stderr)
                _stop(child)
                code = child.wait()
                break
            if interrupted:
                _stop(child)
                code = -interrupted[0]
                break
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        _end_what_it_left(backend, holding, contained)
        try:
            stale = holding.release()
        except LeaseError as exc:
            # The command's own status stands: a fault in releasing is not the command's failure, and
            # the lease ends by its TTL (`leases audit` shows the expiry).
            stale = f"release of {lease.id} failed, it expires by its TTL ({lease.ttl:g}s): {exc}"
        if stale:
            print(f"leases: {stale}", file=sys.stderr)
    return ran(_status(code))
