"""Every command's output written to a full device (`--json > /dev/full`) or a closed pipe is a
message and exit 2, never a traceback and never the decided exit: a caller reading stdout got
nothing (issue 34.3). One place does it: redfirst.clitools.guard_output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS = [
    ["gates", "run", "--json"], ["gates", "check", "--json"], ["gates", "list", "--json"],
    ["gates", "proofs", "--json"], ["gates", "schema"], ["gates", "run"],
    ["mutate", "check", "--json"], ["leases", "status", "--json"], ["checkers", "run", "--json"],
    ["checkers", "list"],
]
MODULES = {"gates": "redfirst.gates.cli", "mutate": "redfirst.mutations.cli", "leases": "redfirst.leases.cli",
           "checkers": "redfirst.checkers.cli"}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("full") / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "mutations").mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(
        "gate: ok\ndriver: {type: command, run: \"echo '1 passed, 0 failed'\", format: plain}\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e.invalid",
                                                              "commit", "-qm", "seed"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_output_to_a_full_device_is_exit_2_and_a_message(project, command, tmp_path):
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-P", "-m", MODULES[command[0]], *command[1:]], cwd=project,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=300, env=env)
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, proc.stderr
    assert f"{command[0]}: cannot write the output: " in proc.stderr


def test_output_to_a_closed_pipe_is_exit_2_and_a_message(project, tmp_path):
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-P", "-m", MODULES["gates"], "schema", "--config"], cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()   # the reader went away before a byte was read
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 2 and "Traceback" not in err, err
    assert "gates: cannot write the output: " in err
