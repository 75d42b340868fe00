"""Every JSON file `mutate` reads (a shard report for `merge`, a report for `--durations`, the
mutation result cache and its durations) goes through the one loader (redfirst.yamlsrc.load_json):
a FIFO is refused before a byte is read, a file nested past the bound or with a key written twice
is a message naming file and line (exit 2 for a file the user named), never a hang or a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from redfirst.mutations import cache


def _hostile(folder: Path, kind: str) -> Path:
    path = folder / f"{kind}.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "deep":
        path.write_text("{\"items\":\n" + "[" * 100_000 + "]" * 100_000 + "}")
    else:
        path.write_text('{"items": [],\n "items": [{"id": "m", "seconds": 1.0}]}\n')
    return path


class Hung(BaseException):   # no reader's `except OSError` or `except Exception` swallows it
    pass


@contextlib.contextmanager
def _no_hang(seconds: int = 20) -> Iterator[None]:  # a reader blocked on a FIFO fails the test instead of hanging it
    def _raise(*_: object) -> None:
        raise Hung(f"still reading after {seconds} s")
    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


SAYS = {"fifo": ":1: not a regular file (a FIFO)", "deep": ":2: JSON error: nested deeper than 64 levels",
        "duplicate": ":2: duplicate key 'items'"}


def _mutate(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", sorted(SAYS))
def test_a_hostile_shard_report_is_exit_2_naming_file_and_line(tmp_path: Path, kind: str) -> None:
    report = _hostile(tmp_path, kind)
    proc = _mutate(tmp_path, "merge", str(report))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{report}{SAYS[kind]}" in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", sorted(SAYS))
def test_a_hostile_durations_report_is_a_usage_error_naming_file_and_line(tmp_path: Path, kind: str) -> None:
    from redfirst.mutations.selection import UsageError
    from redfirst.mutations.shard import read_durations

    report = _hostile(tmp_path, kind)
    with _no_hang(), pytest.raises(UsageError) as caught:
        read_durations(report)
    assert f"{report}{SAYS[kind]}" in str(caught.value)


CACHED: dict[str, object] = {"results": [{"basis": {}, "result": {}}]}


@pytest.mark.parametrize("kind", sorted(SAYS))
def test_a_hostile_cache_file_is_no_cached_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  kind: str) -> None:
    """A cache file of the user's own cache folder: read as none, as a torn one is (the mutation runs)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    key = "ab" + "0" * 62
    cache._file(key).parent.mkdir(parents=True)
    cache._file(key).write_text(json.dumps(CACHED))
    cache._durations_file().write_text('{"m": 1.5}')
    assert len(cache._filed(key)) == 1 and cache.durations() == {"m": 1.5}   # what a good file gives
    for path, good in ((cache._file(key), json.dumps(CACHED)), (cache._durations_file(), '{"m": 1.5}')):
        path.unlink()
        if kind == "duplicate":   # the good document, one key written twice
            path.write_text(good[:-1] + ", " + good[1:])
        else:
            os.replace(_hostile(tmp_path, kind), path)
    with _no_hang():
        assert cache._filed(key) == []
    with _no_hang():
        assert cache.durations() == {}
