"""Adversarial review findings: each test is one way the lease guarantees broke, and now hold."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leases.backends.local import LocalBackend
from leases.backends.slurm import SlurmBackend
from leases.config import ConfigError, load
from leases.model import LeaseRequest, NotGranted, StaleLease
from leases.selector import compare, parse


def leases_cli(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "leases.cli", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=timeout)


def squeue_name(prefix: str) -> str:
    """The jobs whose name starts with `prefix` (a lease's job name may carry a suffix), as "ID STATE" lines."""
    out = subprocess.run(["squeue", "-h", "-o", "%i %T %j"], capture_output=True, text=True).stdout
    return "\n".join(" ".join(x.split()[:2]) for x in out.splitlines() if x.split()[2:3] and
                     x.split()[2].startswith(prefix))


# -- local: what a leased command leaves behind ------------------------------------------------------


def test_a_background_child_left_after_release_is_stopped_and_the_slot_granted_again(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    out = leases_cli(repo, "run", "--box", "local", "--", "sh", "-c",
                     f"sleep 60 >/dev/null 2>&1 & echo $! > {pidfile}; exit 0")
    assert out.returncode == 0, out.stderr
    bg = int(pidfile.read_text())
    try:
        t0 = time.monotonic()
        again = leases_cli(repo, "run", "--box", "local", "--wait", "8", "--", "true")
        assert again.returncode == 0, again.stderr
        assert time.monotonic() - t0 < 8
        assert not _alive(bg), "the released lease's background child still runs"
    finally:
        _kill(bg)


def test_a_child_that_left_the_process_group_is_stopped_too(repo: Path, lease_db: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    out = leases_cli(repo, "run", "--box", "local", "--", "sh", "-c", f"setsid sleep 60 >/dev/null 2>&1 & echo $! > {pidfile}")
    assert out.returncode == 0, out.stderr
    bg = int(pidfile.read_text())
    try:
        again = leases_cli(repo, "run", "--box", "local", "--wait", "8", "--", "true")
        assert again.returncode == 0, again.stderr
        assert not _alive(bg)
    finally:
        _kill(bg)


def test_a_child_that_did_not_inherit_the_slot_lock_is_stopped_when_its_leader_has_exited(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    # Python's subprocess closes inherited fds: the child runs without the slot lock, so only its
    # process group ties it to the lease. The lease must not end while it runs on unstopped.
    pidfile = tmp_path / "bg.pid"
    script = ("import subprocess as s; p = s.Popen(['sleep', '60'], stdout=s.DEVNULL, stderr=s.DEVNULL); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid))")
    out = leases_cli(repo, "run", "--box", "local", "--", sys.executable, "-c", script)
    assert out.returncode == 0, out.stderr
    bg = int(pidfile.read_text())
    try:
        deadline = time.monotonic() + 5
        while _alive(bg) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(bg), "the lease was released while a process it started still runs"
    finally:
        _kill(bg)


def test_a_dead_client_whose_grandchild_runs_without_the_lock_keeps_the_slot(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "bg.pid"
    script = ("import subprocess as s, time; p = s.Popen(['sleep', '60'], stdout=s.DEVNULL, stderr=s.DEVNULL); "
              f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(0.5)")
    client = subprocess.Popen([sys.executable, "-m", "leases.cli", "--root", str(repo), "run", "--box", "local",
                               "--ttl", "60", "--", sys.executable, "-c", script], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    bg = int(pidfile.read_text())
    try:
        client.send_signal(signal.SIGKILL)
        client.wait()
        time.sleep(1.0)                  # the leased command itself has exited; its child runs on
        b = LocalBackend(load(repo))
        with pytest.raises(NotGranted):
            b.acquire(LeaseRequest(box="local"), 1.0)
        assert _alive(bg)
    finally:
        _kill(bg)
    lease = LocalBackend(load(repo)).acquire(LeaseRequest(box="local"), 5)
    assert lease.box == "local"


def test_an_expired_lease_s_lockless_child_blocks_the_slot_until_it_is_gone(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    b = LocalBackend(load(repo))
    # A TTL long enough for the exec wrapper to start and register under load, short enough to wait out.
    lease = b.acquire(LeaseRequest(box="local", ttl=3.0), 0, detached=True)
    # A process of the lease that ignores SIGTERM and holds no lock (a child that did not inherit it).
    child = subprocess.Popen([*b.run_prefix(lease), sys.executable, "-c",
                              "import os, signal, time; os.closerange(3, 4096); "
                              "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"],
                             stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while b._conn().execute("SELECT COUNT(*) FROM procs").fetchone()[0] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(3.1)                  # past its TTL: the next grant ends it and SIGTERMs the child
        after = b.acquire(LeaseRequest(box="local"), 10)
        assert child.poll() is not None, f"{after.id} granted while the expired lease's child still ran"
    finally:
        child.kill()
        child.wait()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- bad input: a clear message and exit 2, never a traceback ------------------------------------------


@pytest.mark.parametrize("args", [
    ("--ttl", "nan"), ("--ttl", "inf"), ("--max-runtime", "-1"), ("--max-runtime", "0"), ("--ttl", "0"),
])
def test_bad_numbers_for_leases_run_are_usage_errors(repo: Path, lease_db: Path, args: tuple[str, str]) -> None:
    out = leases_cli(repo, "run", "--box", "local", *args, "--", "sh", "-c", "echo ran")
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and "ran" not in out.stdout


@pytest.mark.parametrize("text, message", [
    ("leases:\n  boxes:\n    a/b: {gpus: 1}\n", "box name"),
    ("leases:\n  boxes:\n    y: {labels: {a: {b: c}}}\n", "labels"),
    ("leases:\n  ttl: .inf\n", "ttl"),
])
def test_bad_leases_sections_are_config_errors_with_file_and_line(repo: Path, text: str, message: str) -> None:
    (repo / "redfirst.yaml").write_text(text)
    with pytest.raises(ConfigError, match=rf"redfirst.yaml:\d+: .*{message}"):
        load(repo)


def test_an_unwritable_lease_file_is_a_clear_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDFIRST_LEASES_DB", "/proc/no-such-dir/leases.db")
    out = leases_cli(repo, "status")
    assert out.returncode == 2 and "Traceback" not in out.stderr and "leases.db" in out.stderr, out.stderr


# -- labels and selectors ------------------------------------------------------------------------------


def test_declared_label_values_keep_the_text_written_in_yaml(repo: Path, lease_db: Path) -> None:
    (repo / "redfirst.yaml").write_text(
        "leases:\n  boxes:\n    thor:\n      gpus: 1\n      labels: {cuda: 12.10, fast: yes, sm: 9.0}\n")
    thor = next(b for b in LocalBackend(load(repo)).boxes() if b.name == "thor")
    assert thor.label_map["cuda"] == "12.10" and thor.label_map["fast"] == "yes"
    assert parse("cuda>=12.4,fast=yes,sm>=9.0").matches(thor.label_map)


@pytest.mark.parametrize("have, want", [("h200", "h100"), ("t4", "h100"), ("zeta", "alpha")])
def test_an_ordering_between_words_never_matches(have: str, want: str) -> None:
    assert not compare(have, ">=", want)
    assert not compare(want, "<=", have)


def test_orderings_of_numbers_sizes_and_versions_still_hold() -> None:
    assert compare("12.10", ">=", "12.4") and compare("80GiB", ">=", "64G") and compare("8", "<=", "9")
    assert compare("H200", "=", "h200") and compare("h200", "!=", "h100")


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


def test_a_client_killed_while_salloc_waits_leaves_no_job_allocated(slurm_repo: Path, slurm_exclusive: str) -> None:
    blocker = subprocess.run(["salloc", "--no-shell", "-N1", "--exclusive", "--gres=gpu:h200:1", "--time=2",
                              "--job-name=review-blocker", f"--nodelist={slurm_exclusive}"],
                             capture_output=True, text=True, timeout=60)
    job = blocker.stderr.split("Granted job allocation")[1].split()[0]
    purpose = f"review-{os.getpid()}"
    client = subprocess.Popen([sys.executable, "-m", "leases.cli", "--root", str(slurm_repo), "run", "--box",
                               slurm_exclusive, "--purpose", purpose, "--wait", "60", "--", "true"],
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while "PENDING" not in squeue_name(f"leases:{purpose}"):
            assert time.monotonic() < deadline, "the lease's salloc never queued"
            time.sleep(0.1)
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


# -- gates run --lease -----------------------------------------------------------------------------------


def test_gates_run_lease_with_a_bad_leases_section_is_a_config_error_naming_file_and_line(
        repo: Path, lease_db: Path) -> None:
    import shutil

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "gates").mkdir()
    (repo / "gates" / "g.yaml").write_text(
        'gate: g\nclaim: c\ndriver:\n  type: command\n  run: [sh, -c, "echo ok"]\nexit_only: "x"\n'
        "requires: {select: gpu_model=h200}\n")
    (repo / "redfirst.yaml").write_text("leases:\n  ttl: -1\n")
    exe = shutil.which("gates") or str(Path(sys.executable).with_name("gates"))
    out = subprocess.run([exe, "run", "--lease", "auto", "--lease-wait", "1"], cwd=repo, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "redfirst.yaml:2" in out.stdout + out.stderr


def test_a_command_not_found_in_a_slurm_step_exits_127_not_the_usage_code(slurm_repo: Path) -> None:
    out = leases_cli(slurm_repo, "run", "--select", "gpu_model=h200", "--wait", "60", "--", "no-such-command-here")
    assert out.returncode == 127, out.stderr
    ok = leases_cli(slurm_repo, "run", "--select", "gpu_model=h200", "--wait", "60", "--", "sh", "-c",
                    'echo "args:$#:$1"; exit 5', "zero", "one two")
    assert ok.returncode == 5 and "args:1:one two" in ok.stdout, ok.stdout + ok.stderr


def test_a_holder_that_cannot_heartbeat_stops_its_command_when_its_ttl_runs_out(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    import fcntl

    pidfile = tmp_path / "cmd.pid"
    client = subprocess.Popen([sys.executable, "-m", "leases.cli", "--root", str(repo), "run", "--box", "local",
                               "--ttl", "1", "--", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 30"],
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cmd = int(pidfile.read_text())
    # Every write to the lease file queues on this lock: held here, no heartbeat can land (as when a
    # process is stopped inside a transaction, or the disk refuses writes).
    with open(Path(os.environ["REDFIRST_LOCK_DIR"]) / "writer.lock", "w") as gate:
        fcntl.flock(gate, fcntl.LOCK_EX)
        stopped = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4:
            if not _alive(cmd):
                stopped = time.monotonic() - t0
                break
            time.sleep(0.05)
        fcntl.flock(gate, fcntl.LOCK_UN)
    try:
        assert stopped is not None, "the command ran on past its lease's TTL without a heartbeat"
        assert client.wait(15) == 128 + signal.SIGTERM
    finally:
        _kill(cmd)
        client.kill()


def test_gates_run_lease_without_the_slurm_client_is_no_decision_naming_it(
        repo: Path, lease_db: Path, tmp_path: Path) -> None:
    import json
    import shutil

    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "gates").mkdir()
    (repo / "gates" / "g.yaml").write_text(
        'gate: g\nclaim: c\ndriver:\n  type: command\n  run: [sh, -c, "echo ok"]\nexit_only: "x"\n'
        "requires: {select: gpu_model=h200}\n")
    (repo / "redfirst.yaml").write_text("leases:\n  backend: slurm\n")
    bin_dir = tmp_path / "bin"          # a PATH with git and sh but no Slurm client
    bin_dir.mkdir()
    for tool in ("git", "sh"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    env = dict(os.environ, PATH=str(bin_dir))
    out = subprocess.run([sys.executable, "-c", "import sys; from gates.cli import main; sys.exit(main())", "run",
                          "--root", str(repo), "--lease", "auto", "--lease-wait", "1", "--json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 3, out.stdout + out.stderr
    item = json.loads(out.stdout)["items"][0]
    assert item["verdict"] == "NO_DECISION" and "sinfo not found" in item["reason"]


def test_a_lease_past_its_maximum_runtime_is_audited_as_such(lease_db: Path) -> None:
    b = LocalBackend(load(None))
    lease = b.acquire(LeaseRequest(box="local", ttl=30, max_runtime=0.2), 0, detached=True)
    time.sleep(0.3)
    assert b.status() == []
    expiry = next(e for e in b.audit() if e.event == "expire" and e.lease_id == lease.id)
    assert "maximum runtime" in expiry.detail, expiry.detail


def test_slurm_release_refuses_a_job_that_is_not_a_lease(slurm_repo: Path, slurm_exclusive: str) -> None:
    other = subprocess.run(["salloc", "--no-shell", "-N1", "--time=2", "--job-name=someone-elses-job",
                            f"--nodelist={slurm_exclusive}"], capture_output=True, text=True, timeout=60)
    job = other.stderr.split("Granted job allocation")[1].split()[0]
    try:
        out = leases_cli(slurm_repo, "release", job)
        assert out.returncode == 1, out.stderr
        assert "RUNNING" in subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True,
                                           text=True).stdout
        with pytest.raises(StaleLease):
            SlurmBackend(load(slurm_repo)).renew(job)
    finally:
        subprocess.run(["scancel", job], check=False)
