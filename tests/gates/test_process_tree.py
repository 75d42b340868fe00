"""The timeout kills the whole process tree, including a grandchild that left the session
(setsid) and cleared its environment (env -i), so neither the process group nor the run
marker finds it; what cannot be killed is named by pid in the verdict's reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from redfirst import process

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
FREEZER = Path("/sys/fs/cgroup/freezer")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def wait_for_pid(pidfile: Path) -> int:
    # The grandchild writes its pid before it sleeps; the run's own timeout is long past.
    text = pidfile.read_text().strip() if pidfile.exists() else ""
    assert text, f"the grandchild never wrote {pidfile}"
    return int(text)


def escaper(pidfile: Path, then: str = "sleep 300") -> str:
    """A program whose grandchild leaves everything a process group or an environment
    marker could find: its parent exits, it calls setsid and runs with an empty environment."""
    inner = f"echo $$ > {pidfile}; exec {then}"
    return f"(setsid env -i /bin/sh -c '{inner}' &) ; while [ ! -s {pidfile} ]; do sleep 0.05; done; exec sleep 300"


@pytest.fixture
def reap() -> Iterator[list[int]]:
    # Whatever a failing test leaves running is killed afterwards, by pid.
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def gate_project(tmp_path: Path, run: str) -> Path:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(textwrap.dedent(f"""\
        gate: hangs
        exit_only: "a hang test"
        driver:
          type: command
          run: [/bin/sh, -c, {json.dumps(run)}]
          timeout: 1
    """))
    return root


def test_gates_timeout_kills_a_setsid_grandchild_with_an_empty_environment(tmp_path: Path, reap: list[int]):
    pidfile = tmp_path / "grandchild.pid"
    root = gate_project(tmp_path, escaper(pidfile))
    proc = subprocess.run([*GATES, "run", "--json", "-q", "--root", str(root)], capture_output=True, text=True,
                          timeout=120, cwd=root)
    pid = wait_for_pid(pidfile)
    reap.append(pid)
    item = json.loads(proc.stdout)["items"][0]
    assert proc.returncode == 1 and item["cause"] == "timeout", proc.stdout + proc.stderr
    assert not alive(pid), f"grandchild {pid} (setsid, env -i) is still running after the gate's timeout"


@pytest.mark.parametrize("cgroup", ["cgroup", "subreaper"])
def test_run_kills_the_escaper_with_and_without_a_cgroup(tmp_path: Path, reap: list[int], monkeypatch, cgroup: str):
    if cgroup == "cgroup" and process.cgroup_base() is None:
        pytest.skip("this machine gives no writable cgroup v2")
    if cgroup == "subreaper":
        # Stands in for a machine without a writable cgroup v2 (this one has one).
        monkeypatch.setattr(process, "cgroup_base", lambda: None)
    pidfile = tmp_path / "grandchild.pid"
    exited = process.run(escaper(pidfile), cwd=tmp_path, env=dict(os.environ), stdout=tmp_path / "out",
                         stderr=None, timeout=1)
    pid = wait_for_pid(pidfile)
    reap.append(pid)
    assert exited.timed_out and exited.escaped == ()
    assert not alive(pid), f"grandchild {pid} survived the timeout ({cgroup})"


def test_a_run_that_exits_takes_its_setsid_env_cleared_daemon_with_it(tmp_path: Path, reap: list[int]):
    pidfile = tmp_path / "daemon.pid"
    program = (f"(setsid env -i /bin/sh -c 'echo $$ > {pidfile}; exec sleep 300' &) ; "
               f"while [ ! -s {pidfile} ]; do sleep 0.05; done; echo done")
    exited = process.run(program, cwd=tmp_path, env=dict(os.environ), stdout=tmp_path / "out", stderr=None,
                         timeout=60)
    pid = wait_for_pid(pidfile)
    reap.append(pid)
    assert exited.returncode == 0 and not exited.timed_out
    assert not alive(pid), f"daemon {pid} outlived the run that started it"


@pytest.fixture
def frozen_group() -> Iterator[Path]:
    # A cgroup v1 freezer holds a task in the kernel's refrigerator, where SIGKILL waits
    # until it is thawed: a real process that survives every kill.
    if os.geteuid() != 0 or not (FREEZER / "tasks").exists():
        pytest.skip("needs root and the cgroup v1 freezer")
    group = FREEZER / f"redfirst-test-{os.getpid()}-{time.monotonic_ns()}"
    group.mkdir()
    yield group
    (group / "freezer.state").write_text("THAWED")
    deadline = time.monotonic() + 10
    while (group / "tasks").read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    group.rmdir()


def test_a_grandchild_that_cannot_be_killed_is_named_in_the_reason(tmp_path: Path, frozen_group: Path,
                                                                   reap: list[int]):
    pidfile = tmp_path / "grandchild.pid"
    freeze = (f"echo $(cat {pidfile}) > {frozen_group}/tasks && echo FROZEN > {frozen_group}/freezer.state && "
              f"touch {tmp_path}/frozen")
    run = escaper(pidfile).replace("; exec sleep 300", f"; {freeze}; exec sleep 300")
    root = gate_project(tmp_path, run)
    proc = subprocess.run([*GATES, "run", "--json", "-q", "--root", str(root)], capture_output=True, text=True,
                          timeout=120, cwd=root)
    pid = wait_for_pid(pidfile)
    reap.append(pid)
    assert (tmp_path / "frozen").exists(), proc.stderr
    item = json.loads(proc.stdout)["items"][0]
    assert proc.returncode == 1 and item["cause"] == "timeout", item
    assert f"pid {pid}" in item["reason"] and "escaped" in item["reason"], item["reason"]


def test_without_a_cgroup_a_server_started_beside_a_run_outlives_it(tmp_path: Path, monkeypatch, reap: list[int]):
    # A warm pytest server is our own child in a session of its own, like an orphan we
    # adopted: started while a run is in flight, it must not be swept as that run's.
    import threading

    monkeypatch.setattr(process, "cgroup_base", lambda: None)    # as on a machine without a cgroup v2
    go = tmp_path / "go"
    results: list[process.Exited] = []
    runner = threading.Thread(target=lambda: results.append(process.run(
        f"touch {tmp_path}/started; while [ ! -e {go} ]; do sleep 0.05; done", cwd=tmp_path, env=dict(os.environ),
        stdout=tmp_path / "out", stderr=None, timeout=60)))
    runner.start()
    while not (tmp_path / "started").exists() and runner.is_alive():
        time.sleep(0.01)
    server = subprocess.Popen(["sleep", "300"], start_new_session=True)
    reap.append(server.pid)
    go.touch()
    runner.join()
    assert results and results[0].returncode == 0
    assert server.poll() is None, f"the server (pid {server.pid}) was killed with the run"
    server.kill()
    server.wait()
