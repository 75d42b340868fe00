"""The slurm backend against the real single-node Slurm on loopback (`.ci/slurm-up`).

Under CI a missing or unreachable Slurm fails these tests (see conftest.slurm_node).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redfirst.leases.backends.slurm import SlurmBackend
from redfirst.leases.config import load
from redfirst.leases.model import LeaseRequest, NotGranted, StaleLease, Unsatisfiable


def squeue(job: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True).stdout.strip()


def leases_cli(root: Path, *args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=120, **kw)


def test_nodes_are_boxes_with_gres_and_features_as_labels(slurm_repo: Path, slurm_exclusive: str) -> None:
    box = next(b for b in SlurmBackend(load(slurm_repo)).boxes() if b.name == slurm_exclusive)
    labels = box.label_map
    assert labels["gpu_model"] == "h200" and labels["gpus"] == "1" and labels["thor"] == "yes"
    assert box.slots == ("gpu0",)


def test_leases_run_by_selector_runs_the_command_as_an_srun_step(slurm_repo: Path) -> None:
    out = leases_cli(slurm_repo, "run", "--select", "gpu_model=h200", "--wait", "60", "--",
                     "sh", "-c", 'echo "job=$SLURM_JOB_ID step=$SLURM_STEP_ID gpus=$CUDA_VISIBLE_DEVICES"; exit 7')
    assert out.returncode == 7, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("job="))
    job = line.split()[0].removeprefix("job=")
    assert job.isdigit() and "step=0" in line and "gpus=0" in line
    assert "gates:" in out.stderr and f":{job} on" in out.stderr        # the token names cluster and job
    assert squeue(job) == ""                                             # released: scancel'd


def test_killing_the_client_cancels_the_job(slurm_repo: Path) -> None:
    client = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(slurm_repo), "run", "--select",
                               "gpu_model=h200", "--wait", "60", "--", "sleep", "120"],
                              stderr=subprocess.PIPE, text=True)
    assert client.stderr is not None
    first = client.stderr.readline()
    job = first.split()[1]
    deadline = time.monotonic() + 20
    while squeue(job) != "RUNNING":
        assert time.monotonic() < deadline, f"job {job} never ran: {first}"
        time.sleep(0.1)
    client.send_signal(signal.SIGKILL)
    client.wait()
    deadline = time.monotonic() + 15
    while squeue(job) not in ("", "CANCELLED", "COMPLETED"):
        assert time.monotonic() < deadline, f"job {job} still {squeue(job)} after its client died"
        time.sleep(0.2)


def test_stale_token_is_refused_by_renew_release_and_run(slurm_repo: Path) -> None:
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", max_runtime=120), 60, detached=True)
    assert lease.token.endswith(f":{lease.id}") and lease.fence == int(lease.id)
    assert b.renew(lease.id, lease.token).id == lease.id
    b.release(lease.id, lease.token)
    with pytest.raises(StaleLease):
        b.renew(lease.id, lease.token)
    with pytest.raises(StaleLease):
        b.release(lease.id, lease.token)
    assert leases_cli(slurm_repo, "release", lease.id).returncode == 1
    ran = subprocess.run([*b.run_prefix(lease), "echo", "ran"], capture_output=True, text=True, timeout=60)
    assert ran.returncode != 0 and "ran" not in ran.stdout


def test_a_busy_node_is_not_granted_and_a_missing_label_is_unsatisfiable(slurm_repo: Path) -> None:
    b = SlurmBackend(load(slurm_repo))
    held = b.acquire(LeaseRequest(select="gpu_model=h200", max_runtime=120), 60, detached=True)
    try:
        t0 = time.monotonic()
        with pytest.raises(NotGranted, match="busy"):
            b.acquire(LeaseRequest(select="gpu_model=h200"), 1)
        assert time.monotonic() - t0 < 15
        out = leases_cli(slurm_repo, "run", "--select", "gpu_model=h200", "--wait", "1", "--", "true")
        assert out.returncode == 75
    finally:
        b.release(held.id, held.token)
    with pytest.raises(Unsatisfiable, match="gpu_model=a100"):
        b.acquire(LeaseRequest(select="gpu_model=a100"), 1)


def test_without_slurmrestd_the_cli_is_the_fallback(repo: Path, lease_db: Path, slurm_exclusive: str) -> None:
    (repo / "redfirst.yaml").write_text('leases:\n  backend: slurm\n  slurm: {rest: "http://127.0.0.1:9"}\n')
    b = SlurmBackend(load(repo))
    assert any(x.name == slurm_exclusive for x in b.boxes())


def test_the_jwt_never_appears_in_output(slurm_repo: Path) -> None:
    b = SlurmBackend(load(slurm_repo))
    b.boxes()
    token = b._token()
    assert token is not None and token.reveal() not in repr(token) and token.reveal() not in str(vars(b))
    env = dict(os.environ, SLURM_JWT=token.reveal())
    out = leases_cli(slurm_repo, "--json", "boxes", env=env)
    assert out.returncode == 0 and token.reveal() not in out.stdout + out.stderr


def _tree(pid: int) -> list[int]:
    """`pid` and every process below it, found by parent pid."""
    parents: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(parents.get(p, []))
    return out


def _kill_wait() -> float:
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    return float(next(x for x in out.splitlines() if x.startswith("KillWait")).split("=")[1].split()[0])


def test_a_lease_whose_whole_client_tree_died_ends_within_its_ttl_bound_not_the_max_runtime(
        slurm_repo: Path) -> None:
    from redfirst.leases.backends.slurm import dead_client_bound

    ttl = 5.0
    client = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(slurm_repo), "run", "--select",
                               "gpu_model=h200", "--ttl", str(ttl), "--wait", "60", "--", "sleep", "600"],
                              stderr=subprocess.PIPE, text=True)
    assert client.stderr is not None
    first = client.stderr.readline()
    job = first.split()[1]
    deadline = time.monotonic() + 20
    while squeue(job) != "RUNNING" or len(_tree(client.pid)) < 3:     # client, watchdog, srun
        assert time.monotonic() < deadline, f"job {job} never ran: {first}"
        time.sleep(0.1)
    time.sleep(ttl / 3 + 0.5)                    # at least one heartbeat landed
    tree = _tree(client.pid)
    for pid in tree:                             # all at once: no watchdog survives to scancel
        os.kill(pid, signal.SIGKILL)
    died = time.monotonic()
    client.wait()
    bound = dead_client_bound(ttl, _kill_wait())
    try:
        while squeue(job) not in ("", "CANCELLED", "COMPLETED", "TIMEOUT"):
            assert time.monotonic() - died < bound + 5, \
                f"job {job} still {squeue(job)} {bound + 5:.0f}s after its whole client tree died"
            time.sleep(0.5)
    finally:
        subprocess.run(["scancel", job], check=False)


def _end_minus_now(job: str) -> float:
    """The job's end time less the controller's now (its start plus its run time), in seconds."""
    from datetime import datetime

    out = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True, check=True).stdout
    f = dict(kv.split("=", 1) for kv in out.split() if "=" in kv)
    h, m, sec = (int(x) for x in f["RunTime"].split("-")[-1].split(":"))
    start, end = datetime.fromisoformat(f["StartTime"]), datetime.fromisoformat(f["EndTime"])
    return (end - start).total_seconds() - (h * 3600 + m * 60 + sec)


def test_slurm_ends_a_lease_a_ttl_after_its_last_heartbeat_at_second_grain_not_the_whole_minute(
        slurm_repo: Path) -> None:
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", ttl=5, max_runtime=600), 60, detached=True)
    try:
        assert 0 <= _end_minus_now(lease.id) <= 5 + 1, "the job ends a TTL after its grant, not at its time limit"
        time.sleep(2)
        b.renew(lease.id, lease.token)
        assert 0 <= _end_minus_now(lease.id) <= 5 + 1, "a heartbeat moves the end to its own time plus the TTL"
        assert "end time" in b.audit()[-1].detail
    finally:
        b.release(lease.id, lease.token)


def test_a_heartbeat_never_moves_the_end_past_the_maximum_runtime(slurm_repo: Path) -> None:
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", ttl=59, max_runtime=8), 60, detached=True)
    try:
        time.sleep(1)
        b.renew(lease.id, lease.token)
        assert _end_minus_now(lease.id) <= 8
    finally:
        b.release(lease.id, lease.token)


def test_a_heartbeat_across_a_clock_change_of_the_clients_time_zone_keeps_the_end_a_ttl_away(
        slurm_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Slurm's clients print and parse times in the local zone: across a fall-back (here a zone whose
    # summer time ends 4 s from now) start + elapsed names an hour that is still to come.
    from datetime import UTC, datetime

    change = datetime.fromtimestamp(time.time() + 4, UTC)
    summer = datetime.fromtimestamp(change.timestamp() + 3600, UTC)    # the change, on the summer clock
    day = summer.timetuple().tm_yday
    monkeypatch.setenv("TZ", f"RFS0RFD-1,J1/0,J{day}/{summer:%H:%M:%S}")
    time.tzset()
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", ttl=5, max_runtime=600), 60, detached=True)
    try:
        while time.time() < change.timestamp() + 1:
            time.sleep(0.2)
        b.renew(lease.id, lease.token)
        monkeypatch.setenv("TZ", "UTC0")
        time.tzset()
        assert 0 <= _end_minus_now(lease.id) <= 5 + 1, "a heartbeat after the change moved the end an hour away"
    finally:
        b.release(lease.id, lease.token)
        monkeypatch.setenv("TZ", "UTC0")
        time.tzset()


def squeue_name(prefix: str) -> str:
    """The jobs whose name starts with `prefix` (a lease's job name may carry a suffix), as "ID STATE" lines."""
    out = subprocess.run(["squeue", "-h", "-o", "%i %T %j"], capture_output=True, text=True).stdout
    return "\n".join(" ".join(x.split()[:2]) for x in out.splitlines() if x.split()[2:3] and
                     x.split()[2].startswith(prefix))


# -- slurm ---------------------------------------------------------------------------------------------


def test_a_slurm_token_from_another_controller_start_is_refused(slurm_repo: Path) -> None:
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", max_runtime=120), 60, detached=True)
    try:
        cluster, start, job = lease.token.split(":")
        forged = f"{cluster}:{int(start) - 1000}:{job}"
        with pytest.raises(StaleLease):
            b.renew(lease.id, forged)
        with pytest.raises(StaleLease):
            b.release(lease.id, forged)
    finally:
        b.release(lease.id, lease.token)


def test_a_client_killed_while_salloc_waits_leaves_no_job_allocated(slurm_repo: Path, slurm_exclusive: str,
                                                                    salloc_calls: Path) -> None:
    blocker = subprocess.run(["salloc", "--no-shell", "-N1", "--exclusive", "--gres=gpu:h200:1", "--time=2",
                              "--job-name=review-blocker", f"--nodelist={slurm_exclusive}"],
                             capture_output=True, text=True, timeout=60)
    job = blocker.stderr.split("Granted job allocation")[1].split()[0]
    purpose = f"review-{os.getpid()}"
    client = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(slurm_repo), "run", "--box",
                               slurm_exclusive, "--purpose", purpose, "--wait", "60", "--", "true"],
                              stderr=subprocess.DEVNULL)
    try:
        # It asks with salloc --immediate=1 (slurmctld refuses at once, nothing pends): kill it as it asks.
        _wait_until_asked(salloc_calls, "the lease's salloc never ran")
        client.send_signal(signal.SIGKILL)
        client.wait()
    finally:
        subprocess.run(["scancel", job], check=False)
    deadline = time.monotonic() + 10
    while squeue_name(f"leases:{purpose}"):
        left = squeue_name(f"leases:{purpose}")
        if time.monotonic() > deadline:
            subprocess.run(["scancel", *[x.split()[0] for x in left.splitlines()]], check=False)
            pytest.fail(f"job left allocated after its client died: {left}")
        time.sleep(0.2)


def test_a_client_killed_while_it_waits_leaves_no_pending_job_to_start_after_it_died(slurm_repo: Path,
                                                                                    salloc_calls: Path) -> None:
    # salloc's own --immediate=N timer dies with the client: the pending job used to start once the node
    # freed, held by nobody, until slurmctld failed to send the allocation to the dead salloc.
    b = SlurmBackend(load(slurm_repo))
    held = b.acquire(LeaseRequest(select="gpu_model=h200", ttl=60, max_runtime=600), 60, detached=True)
    waiter = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(slurm_repo), "run", "--select",
                               "gpu_model=h200", "--ttl", "5", "--wait", "120", "--", "true"],
                              stderr=subprocess.DEVNULL)
    try:
        _wait_until_asked(salloc_calls, "the waiter never asked Slurm")
        for pid in _tree(waiter.pid):       # all at once: no watchdog survives to scancel
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        waiter.wait()
        deadline = time.monotonic() + 5      # a salloc --immediate=1 already sent is answered at once
        while (pending := subprocess.run(["squeue", "-h", "-t", "PENDING", "-o", "%i %j"], capture_output=True,
                                         text=True).stdout.strip()):
            assert time.monotonic() < deadline, f"a dead waiter's request still pends: {pending}"
            time.sleep(0.2)
    finally:
        b.release(held.id, held.token)


@pytest.fixture
def salloc_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file that gets a line each time a client starts salloc: a `salloc` first on PATH that writes the line and
    execs the real one. Each salloc --immediate=1 lives a few ms, too short to be seen reliably in /proc."""
    real = shutil.which("salloc")
    assert real, "salloc is not installed"
    calls, shim = tmp_path / "salloc-calls", tmp_path / "shim"
    shim.mkdir()
    (shim / "salloc").write_text(f'#!/bin/sh\necho "$$" >> "{calls}"\nexec "{real}" "$@"\n')
    (shim / "salloc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    return calls


def _wait_until_asked(calls: Path, message: str) -> None:
    deadline = time.monotonic() + 60
    while not (calls.exists() and calls.read_text().strip()):
        assert time.monotonic() < deadline, message
        time.sleep(0.02)


def test_only_a_step_of_the_job_runs_inside_a_slurm_lease(slurm_repo: Path) -> None:
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", ttl=60), 60, detached=True)
    try:
        ask = (f"from pathlib import Path; from redfirst.leases.backends.slurm import SlurmBackend; from redfirst.leases.config import "
               f"load; print(SlurmBackend(load(Path({str(slurm_repo)!r}))).why_not_inside({lease.id!r}))")
        step = subprocess.run([*b.run_prefix(lease), sys.executable, "-c", ask], capture_output=True, text=True,
                              timeout=60, env={**os.environ, **b.env(lease)})
        assert step.stdout.strip() == "None", step.stdout + step.stderr
        outside = b.why_not_inside(lease.id)        # this process has the lease's variables, not its step
        assert outside is not None and f"no slurmstepd of job {lease.id}" in outside
    finally:
        b.release(lease.id, lease.token)


def test_a_slurm_conf_that_does_not_exist_is_named_at_once_not_waited_on(repo: Path, lease_db: Path,
                                                                          tmp_path: Path) -> None:
    """Slurm's clients retry a missing configuration file for 60 s before they fail; the lease
    layer names the file at once instead of timing out on a controller that was never there."""
    missing = tmp_path / "no-such-slurm.conf"
    (repo / "redfirst.yaml").write_text("leases:\n  backend: slurm\n")
    try:
        proc = subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(repo), "boxes"],
                              capture_output=True, text=True, timeout=15,
                              env={**os.environ, "SLURM_CONF": str(missing)})
    except subprocess.TimeoutExpired:
        pytest.fail("leases boxes waited on a Slurm configuration file that does not exist")
    assert proc.returncode not in (0, 1), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"SLURM_CONF={missing}" in proc.stderr and "does not exist" in proc.stderr, proc.stderr


def test_status_shows_a_slurm_lease_with_its_end_and_its_gpus(slurm_repo: Path) -> None:
    """`leases status` on Slurm said `expires in 0.0s`, `slots: []` and `ttl 0` for a live lease whose job
    Slurm ends a TTL later (round 6 of issue 34): the end is the job's end time and the slots its GPUs."""
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", gpus=1, ttl=120, max_runtime=300), 60, detached=True)
    try:
        (shown,) = [x for x in b.status() if x.id == lease.id]
        assert shown.slots == lease.slots and shown.slots, (shown, lease)
        assert shown.ttl == 120
        assert time.time() + 60 < shown.expires_at <= time.time() + 125, (shown.expires_at, time.time())
    finally:
        b.release(lease.id, lease.token)
