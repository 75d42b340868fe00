"""SQLite files that several processes share (the local lease file, the Slurm backend's audit log):
opened in write-ahead logging mode."""

from __future__ import annotations

import sqlite3
import time
from typing import Any


def connect(path: Any, timeout: float = 30.0, **kwargs: Any) -> sqlite3.Connection:
    """A connection in autocommit mode with write-ahead logging on. Switching a file to it takes
    a lock without SQLite's busy handler: a process that opens the file while another switches it
    is answered "database is locked" at once. That answer is tried again until `timeout` has
    passed, as the busy handler would; any other error is raised as it is."""
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, **kwargs)
    deadline = time.monotonic() + timeout
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() >= deadline:
                conn.close()
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn
