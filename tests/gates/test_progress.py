"""Progress of `gates run` and `mutate` on stderr: a rich progress bar on a terminal (a real
pseudo-terminal here), plain lines in a log, and the final verdict last either way."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def project(make_project) -> Path:
    return make_project({f"g{n}.yaml": f"gate: g{n}\ndriver: {{type: command, run: \"sleep 0.3; grep -qx good value.txt && "
                         "echo '1 passed, 0 failed' || { echo '0 passed, 1 failed'; exit 1; }\", format: plain}\n"
                         for n in range(3)}, value_check=False)


def on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal; stdout to a pipe. Returns the exit status and
    everything written to the terminal."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100"}
    env.pop("CI", None)
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:      # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.stdout.read()
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
MUTATE = [sys.executable, "-P", "-m", "redfirst.mutations.cli"]


def test_gates_run_draws_a_bar_on_a_terminal_and_plain_lines_in_a_log(project: Path):
    code, terminal = on_a_terminal([*GATES, "run", "--root", str(project)], project)
    assert code == 0, terminal
    assert "━" in terminal and "3/3" in terminal, terminal       # rich's bar and its count
    last = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.rstrip().splitlines()[-1]).strip()
    assert last.startswith("gates: All 3 gates GREEN"), terminal[-500:]
    log = subprocess.run([*GATES, "run", "--root", str(project)], capture_output=True, text=True, timeout=120)
    assert log.returncode == 0
    assert "━" not in log.stderr and "\r" not in log.stderr and "\x1b" not in log.stderr
    assert {"gates: g0: GREEN", "gates: g1: GREEN", "gates: g2: GREEN"} <= set(log.stderr.splitlines())


def test_mutate_draws_a_bar_on_a_terminal(project: Path):
    argv = [*MUTATE, "--root", str(project), "--file", "value.txt", "--anchor", "good", "--replace", "bad",
            "--gate", "g0", "--gate", "g1"]
    code, terminal = on_a_terminal(argv, project)
    assert code == 0, terminal
    assert "━" in terminal and "mutations" in terminal, terminal
    log = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=project)
    assert "━" not in log.stderr and "\x1b" not in log.stderr and "KILLED" in log.stderr



def test_lines_from_many_workers_never_run_into_each_other(tmp_path: Path):
    # mutate -n 2: each worker thread reports its mutations; print() writes the text and the line end
    # apart (stderr writes through), so a thread switch between them ran two lines into one
    # ("...x_combiner (exit)mutate: [4/1012] ...") and left an empty line after.
    script = """
import sys, threading, time
from redfirst.gates.progress import Progress
say = Progress("mutate")
def work(w):
    for i in range(2000):
        say(f"[{i}/2000] m{w}-{i} KILLED 0.1s: RED: g{w} (exit)")
        time.sleep(0.0001)
threads = [threading.Thread(target=work, args=(w,)) for w in range(2)]
[t.start() for t in threads]
[t.join() for t in threads]
"""
    with open(tmp_path / "stderr", "wb") as err:
        subprocess.run([sys.executable, "-c", script], stderr=err, check=True, timeout=120)
    lines = (tmp_path / "stderr").read_text().split("\n")[:-1]
    assert len(lines) == 4000
    bad = [line for line in lines if not re.fullmatch(r"mutate: \[\d+/2000\] m\d-\d+ KILLED 0\.1s: RED: g\d \(exit\)", line)]
    assert bad == [], bad[:3]
