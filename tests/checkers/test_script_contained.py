"""A `script` check runs contained, as a gate's command does (redfirst.process.run): a helper the script
starts and leaves running (holding its output pipe, or detached with setsid) neither holds checkers until the
script's timeout nor outlives the check."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

POLICY = "checkers:\n  script:\n    - {path: scripts/check.py, timeout: 30}\n"
LEAVES = """\
import os, subprocess, sys
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]{detach})
open(os.path.join("..", "helper.pid"), "w").write(str(helper.pid))     # outside the checkout, as scripts may
print("checked")
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("detach", ["", ", start_new_session=True, stdout=subprocess.DEVNULL, "
                                        "stderr=subprocess.DEVNULL"], ids=["holds-the-pipe", "setsid"])
def test_a_helper_the_script_leaves_running_neither_holds_the_check_nor_outlives_it(repo, cli, detach: str):
    """The script exited 0 at once, but its helper held the output pipe: checkers waited the script's whole
    timeout (600 s by default), then said ERROR 'ran past' it, and the helper kept running after checkers."""
    repo.commit("seed", {"redfirst.yaml": POLICY, "scripts/check.py": LEAVES.format(detach=detach)})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("a change", {"a.txt": "a\n"})
    start = time.monotonic()
    rc, out, err = cli("run", "--root", str(repo.path), "--base", "main")
    took = time.monotonic() - start
    pid = int((Path(repo.path).parent / "helper.pid").read_text())
    left = _alive(pid)
    if left:
        os.kill(pid, 9)
    assert rc == 0 and "All 1 checks green" in out, (out, err)
    assert took < 10, took
    assert not left, f"the script's helper (pid {pid}) outlived the check"
