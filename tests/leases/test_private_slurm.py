"""The test Slurm is private (issue #16): its own conf, key, socket, ports and state; no daemon outlives it.

Also checked after the whole session by `pytest_sessionfinish` in conftest.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from redfirst.leases import minislurm

CI = Path(__file__).resolve().parents[2] / ".ci"


def test_the_session_slurm_reads_nothing_under_etc(slurm_cluster) -> None:
    conf = slurm_cluster.conf.read_text()
    paths = re.findall(r"=(?:[a-z_]+=)?(/[^\s,]+)", conf)
    assert paths and all(p.startswith(str(slurm_cluster.prefix)) for p in paths), paths
    assert "/etc/" not in conf and "/dev/" not in conf


def test_a_private_cluster_stops_every_daemon_and_step_it_started(slurm_cluster, etc_slurm_before) -> None:
    prefix = Path(tempfile.mkdtemp(prefix="rf-slurm-t-"))
    c = minislurm.up(prefix, rest=False)
    env = {**c.env(), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
    try:
        assert {x.split()[0] for x in minislurm.running(prefix)} == {"munged", "slurmctld", "slurmd"}
        got = subprocess.run(["salloc", "--no-shell", "--gres=gpu:h200:1", "--time=1", "-J", "t"], env=env,
                             capture_output=True, text=True, timeout=60)
        job = got.stderr.split("Granted job allocation")[1].split()[0]
        step = subprocess.Popen(["srun", f"--jobid={job}", "--overlap", "sleep", "300"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 20
        while not minislurm.steps_of(prefix):
            assert time.monotonic() < end, "the job step never started"
            time.sleep(0.1)
    finally:
        minislurm.down(prefix)
    step.wait(30)
    assert minislurm.running(prefix) == []
    assert minislurm.steps_of(prefix) == []
    assert minislurm.etc_digest() == etc_slurm_before
    shutil.rmtree(prefix)


def test_ci_scripts_never_write_etc_slurm_nor_make_device_nodes() -> None:
    for script in (CI / "setup", CI / "slurm-up", Path(minislurm.__file__)):
        text = script.read_text()
        assert "mknod" not in text.replace("no mknod", "").replace("never creates a device node", ""), script
        assert not re.search(r"(>|write_text\(|cp |tee ).*?/etc/(slurm|munge)", text), script
    # .ci/setup starts no daemon: the suite starts its own Slurm and stops it.
    setup = "\n".join(x for x in (CI / "setup").read_text().splitlines() if not x.lstrip().startswith("#"))
    assert "slurm-up" not in setup and "munged" not in setup and "slurmctld" not in setup


def test_without_the_slurm_packages_the_slurm_tests_fail_under_ci_and_skip_otherwise(tmp_path: Path) -> None:
    import os
    import sys

    bin_dir = tmp_path / "bin"          # a PATH with python but no Slurm or munge
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    test = f"{Path(__file__)}::test_the_session_slurm_reads_nothing_under_etc"
    base = {k: v for k, v in os.environ.items() if k not in ("CI", "SLURM_CONF")}
    for ci, want in (({"CI": "true"}, "1 error"), ({}, "1 skipped")):
        out = subprocess.run([sys.executable, "-m", "pytest", test, "-q", "-p", "no:xdist", "-rs"],
                             env={**base, **ci, "PATH": str(bin_dir)}, capture_output=True, text=True, timeout=120,
                             cwd=Path(__file__).resolve().parents[2])
        assert want in out.stdout and "not installed" in out.stdout, out.stdout[-2000:]
        assert (out.returncode != 0) == bool(ci), out.stdout[-2000:]
