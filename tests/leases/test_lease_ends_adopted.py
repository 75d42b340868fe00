"""A daemon of a leased command that sheds every mark of its lease (its session, descriptors, environment, the
tree's oom_score_adj tag, even its cgroup, which root may leave) is still a descendant of `leases run`, the
subreaper that adopted it: it is ended before the release, audited, and the slot is never granted beside it
(issue 34.5). Real `leases run` processes, real double forks, with and without a cgroup v2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require
from daemon_helpers import alive as _alive
from daemon_helpers import daemon_pid as _pid

from redfirst.process import cgroup_base

# Double fork, setsid, out of the lease's cgroup to the root one (root may), the oom_score_adj tag written back
# down, every descriptor closed, an empty environment: nothing of the lease is left on it but its ancestry.
DAEMON = """\
import os, sys
pidfile = sys.argv[1]
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    if fields[fields.index("-") + 1] == "cgroup2":
        try:
            open(os.path.join(fields[4], "cgroup.procs"), "w").write(str(os.getpid()))
        except OSError:
            pass
try:
    tag = int(open("/proc/self/oom_score_adj").read())
    open("/proc/self/oom_score_adj", "w").write(str(max(tag - 1, 0)))
except OSError:
    pass
os.closerange(0, 1 << 16)
os.execve(sys.executable, [sys.executable, "-c",
          "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)", pidfile], {})
"""

# Runs its arguments in a mount namespace without any cgroup2 mount: a cgroup-v1 host, as the subreaper sees it.
NO_CGROUP2 = ("for m in $(awk '$(NF-2) == \"cgroup2\" {print $5}' /proc/self/mountinfo); do umount \"$m\" || exit 99;"
              " done; exec \"$@\"")


def _leases_argv(root: Path, *args: str) -> list[str]:
    exe = shutil.which("leases") or str(Path(sys.executable).with_name("leases"))
    return [exe, "--root", str(root), *args]




@pytest.mark.parametrize("route", ["cgroup v2", "subreaper"])
def test_a_daemon_that_sheds_its_cgroup_and_tag_is_ended_before_the_slot_is_free(
        repo: Path, lease_db: Path, tmp_path: Path, route: str) -> None:
    prefix: list[str] = []
    if route == "cgroup v2":
        if cgroup_base() is None:
            require("a writable cgroup v2 (root, or a delegated subtree)")
    elif cgroup_base() is not None:       # hide the cgroup2 mount, as a cgroup-v1 host has none
        if os.geteuid() != 0 or shutil.which("unshare") is None:
            require("root and unshare(1), to run `leases run` without a writable cgroup v2")
        prefix = ["unshare", "-m", "--propagation", "private", "sh", "-c", NO_CGROUP2, "no-cgroup2"]
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 1}\n")
    (repo / "daemon.py").write_text(DAEMON)
    pidfile = tmp_path / "daemon.pid"
    first = subprocess.run([*prefix, *_leases_argv(repo, "run", "--box", "thor", "--gpus", "1", "--", "sh", "-c",
                                                   f'"{sys.executable}" daemon.py {pidfile}; '
                                                   f"while [ ! -s {pidfile} ]; do sleep 0.05; done")],
                           cwd=repo, capture_output=True, text=True, timeout=120)
    daemon = _pid(pidfile)
    try:
        assert first.returncode == 0, first.stderr
        assert not _alive(daemon), f"the daemon {daemon} outlived its lease: {first.stderr}"
        second = subprocess.run(_leases_argv(repo, "run", "--box", "thor", "--gpus", "1", "--", "sh", "-c",
                                             f"kill -0 {daemon} && echo BESIDE"),
                                cwd=repo, capture_output=True, text=True, timeout=120)
        assert "BESIDE" not in second.stdout, second.stdout + second.stderr
        audit = subprocess.run(_leases_argv(repo, "audit", "--limit", "50"), capture_output=True, text=True,
                               timeout=60).stdout
        stops = [line for line in audit.splitlines() if " stop " in f" {line} " and f"pid {daemon}" in line]
        assert stops and "at release" in stops[0], audit
    finally:
        if _alive(daemon):
            os.kill(daemon, 9)


# A library caller of `leases run` that is itself a subreaper and started a daemon of its own before the lease
# (a test session's private Slurm, a caller's server): that daemon was re-parented to the caller, so it is a
# descendant, but the leased command never started it.
CALLER = """\
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)          # PR_SET_CHILD_SUBREAPER
pidfile = sys.argv[2]
subprocess.run(["sh", "-c", f"sleep 300 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}"], check=True)
daemon = int(open(pidfile).read())
assert int(open(f"/proc/{daemon}/stat").read().rsplit(")", 1)[1].split()[1]) == os.getpid(), "not adopted"
from redfirst.leases.cli import main
code = main(["--root", sys.argv[1], "run", "--box", "thor", "--gpus", "1", "--", "true"])
print("code", code, "daemon", "alive" if os.path.exists(f"/proc/{daemon}") and
      open(f"/proc/{daemon}/stat").read().rsplit(")", 1)[1].split()[0] != "Z" else "ended")
try:
    os.kill(daemon, 9)
except ProcessLookupError:
    pass
"""


def test_a_daemon_the_caller_started_before_the_lease_is_not_the_leases(repo: Path, lease_db: Path,
                                                                        tmp_path: Path) -> None:
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 1}\n")
    (tmp_path / "caller.py").write_text(CALLER)
    got = subprocess.run([sys.executable, str(tmp_path / "caller.py"), str(repo), str(tmp_path / "d.pid")],
                         cwd=repo, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    assert "code 0 daemon alive" in got.stdout, got.stdout + got.stderr
