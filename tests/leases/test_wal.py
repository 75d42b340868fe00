"""redfirst.leases.wal: a SQLite file that several processes open at once for the first time. Switching
it to write-ahead logging can answer "database is locked" at once, without waiting out the busy
timeout (SQLite takes that lock without its busy handler); every opener must still get a
connection. Real SQLite, real processes (fork), a fresh file per round."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

from redfirst.leases import wal


def _open_and_write(path: str, results: multiprocessing.Queue, start: Any) -> None:
    start.wait(30)      # every opener at once: the race is in the first moments of the file
    try:
        conn = wal.connect(path, timeout=30.0)
        conn.execute("CREATE TABLE IF NOT EXISTS t (a)")
        conn.execute("INSERT INTO t VALUES (1)")
        results.put("ok")
    except Exception as e:  # noqa: BLE001  (reported to the test as it is)
        results.put(f"{type(e).__name__}: {e}")


def test_processes_opening_a_new_file_at_once_all_get_a_write_ahead_logged_connection(tmp_path: Path):
    context = multiprocessing.get_context("fork")
    failures: list[str] = []
    for n in range(120):
        path = str(tmp_path / f"audit{n}.db")
        results: multiprocessing.Queue = context.Queue()
        start = context.Barrier(4)
        openers = [context.Process(target=_open_and_write, args=(path, results, start)) for _ in range(4)]
        for p in openers:
            p.start()
        for p in openers:
            p.join(60)
        failures += [r for r in (results.get(timeout=10) for _ in openers) if r != "ok"]
        assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert failures == []


def test_an_error_other_than_a_lock_is_raised_at_once(tmp_path: Path):
    folder = tmp_path / "a-folder.db"
    folder.mkdir()
    try:
        wal.connect(str(folder), timeout=30.0)
    except sqlite3.Error as e:
        assert "locked" not in str(e)
    else:
        raise AssertionError("a folder opened as a database")
