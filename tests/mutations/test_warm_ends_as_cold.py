"""A fork of the warm process runs and ends as a cold pytest process does, so the two baselines
agree without the differential having to send the gate cold (redfirst.mutations.warmth): it waits
for the threads the run started and runs the `atexit` handlers before its exit status is taken,
and it keeps the signal dispositions a fresh interpreter has (SIGINT raises KeyboardInterrupt).
Each is a `pytest` vs `pytest-warm` differential through `mutate`."""

from __future__ import annotations

import pytest
from mutate_helpers import differential

CALC = '''
def add(a, b):
    return a + b
'''

# Work the run leaves behind that fails the process after pytest has returned: a cold run's exit
# status is 1 (its baseline is not GREEN), where a fork that exits at once said 0.
LEFT_RUNNING = {
    "thread": '''
import os
import threading
import time

from calc import add


def test_add():
    def later():
        time.sleep(0.5)
        os._exit(1)
    threading.Thread(target=later).start()
    assert add(1, 2) == 3
''',
    "atexit": '''
import atexit
import os

from calc import add

atexit.register(lambda: os._exit(1))


def test_add():
    assert add(1, 2) == 3
''',
}


@pytest.mark.parametrize("kind", sorted(LEFT_RUNNING))
def test_a_fork_ends_as_a_cold_process_ends(tmp_path, monkeypatch, kind):
    said: list[str] = []
    got = differential(tmp_path, monkeypatch, {"calc.py": CALC, "tests/test_calc.py": LEFT_RUNNING[kind]},
                       "tests", {"minus": ("calc.py", "a + b", "a - b")}, said=said)
    assert got == {"minus": ("ERROR", "ERROR")}, said[0]
    assert "runs cold" not in said[0], said[0]       # equal at the root, not by the differential
    assert "exit 1" in said[0], said[0]


def test_a_fork_keeps_the_signal_dispositions_of_a_fresh_interpreter(tmp_path, monkeypatch):
    test = '''
import os
import signal

import pytest

from calc import add


def test_add():
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
    assert add(1, 2) == 3
'''
    said: list[str] = []
    got = differential(tmp_path, monkeypatch, {"calc.py": CALC, "tests/test_calc.py": test},
                       "tests", {"minus": ("calc.py", "a + b", "a - b")}, said=said)
    assert got == {"minus": ("KILLED", "KILLED")}, said[0]
    assert "runs cold" not in said[0], said[0]
