"""A fork of the warm process starts and ends as a cold pytest process does.

A cold run is a fresh interpreter: its signal dispositions are the interpreter's own plus what
the project's import set, and after pytest returns it waits for the threads the run left running
(not daemon) and runs the `atexit` handlers before its exit status is known. A fork inherits the
warm process's dispositions and would end with `os._exit` at once; these three calls close both
gaps (the baseline differential, redfirst.mutations.warmth, catches what is left)."""

from __future__ import annotations

import atexit
import signal
import threading
from collections.abc import Mapping
from typing import Any


def begin() -> None:
    """In the warm process before its warm-up: drop the exit handlers of its own modules (a cold
    run has none of them); those the warm-up's imports register are the run's, as in a cold run."""
    atexit._clear()


def settle() -> dict[int, Any]:
    """At the end of the warm-up: the dispositions a cold run has once the project is imported."""
    found: dict[int, Any] = {}
    for sig in signal.valid_signals():
        try:
            handler = signal.getsignal(sig)
        except (OSError, ValueError):
            continue
        if handler is not None:
            found[sig] = handler
    return found


def dispositions(settled: Mapping[int, Any]) -> None:
    """In a fork: the dispositions `settle` saw (SIGINT raises KeyboardInterrupt, as a fresh
    interpreter's does); with none settled, the interpreter's defaults for the signals the warm
    process may have taken."""
    wanted = dict(settled) or {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
                               signal.SIGCHLD: signal.SIG_DFL}
    for sig, handler in wanted.items():
        try:
            if signal.getsignal(sig) is not handler:
                signal.signal(sig, handler)
        except (OSError, ValueError, TypeError):
            continue


def end() -> None:
    """In a fork, once pytest returned: what interpreter shutdown does before the exit status
    (it may never come back: a thread or handler that calls `os._exit`)."""
    threading._shutdown()       # type: ignore[attr-defined]
    atexit._run_exitfuncs()
