"""redfirst/gates/leasing.py: the leases a gate runs under, and the `gates run --lease` path end to end."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from redfirst.gates.leasing import NotGranted, Unsatisfiable, lease_for, placement_order
from redfirst.gates.model import DriverSpec, Gate, Requires, Source
from redfirst.leases import procs
from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.backends.slurm import SlurmBackend
from redfirst.leases.config import load
from redfirst.leases.model import LeaseRequest, StaleLease

FLEET = """\
leases:
  boxes:
    thor: {gpus: 2, labels: {gpu_model: h200, sm: "9.0", cuda: "12.6"}}
    ada: {gpus: 1, labels: {gpu_model: l4, sm: "8.9", cuda: "12.4"}}
"""


def gate(gid: str = "g", *, device: str = "cpu", gpus: int = 0, select: str | None = None,
         whole_box: bool = False, kind: str | None = None) -> Gate:
    return Gate(gid, DriverSpec("command", ("true",), timeout=30), Source(Path("gates/g.yaml"), 1), kind=kind,
                requires=Requires(device, gpus, select, whole_box))


@pytest.fixture
def fleet(repo: Path, lease_db: Path) -> Path:
    (repo / "redfirst.yaml").write_text(FLEET)
    return repo


def test_a_cuda_gate_without_lease_is_leased_on_the_local_box_and_without_gpus_is_unsatisfiable(
        fleet: Path) -> None:
    with pytest.raises(Unsatisfiable, match="box local lacks label gpus>=1"), \
            lease_for(gate(device="cuda", gpus=1), None, 1, root=fleet):
        pass


def test_auto_names_the_label_no_box_has(fleet: Path) -> None:
    with pytest.raises(Unsatisfiable, match="no box has label gpu_model=a100"), \
            lease_for(gate(select="gpu_model=a100"), "auto", 1, root=fleet):
        pass


def test_auto_leases_a_fitting_box_and_the_identity_holds_token_box_boot_and_window(fleet: Path) -> None:
    t0 = time.time()
    with lease_for(gate(device="cuda", gpus=1, select="sm>=9.0"), "auto", 5, root=fleet) as run:
        ident = run.identity
        assert run.box == "thor" and ident["box"] == "thor" and ident["slots"] == ["gpu0"]
        assert ident["token"] == run.token and ident["lease_id"] == run.lease_id
        assert ident["boot_id"] == procs.boot_id() and ident["granted_utc"].endswith("Z")
        assert run.env["CUDA_VISIBLE_DEVICES"] == "0"
        out = subprocess.run([*run.run_prefix, "sh", "-c", 'echo "$REDFIRST_LEASE_TOKEN"'],
                             capture_output=True, text=True, env={**os.environ, **run.env})
        assert out.returncode == 0 and out.stdout.strip() == run.token
        assert run.lost() is None
    grant = next(e for e in LocalBackend(load(fleet)).audit() if e.event == "grant" and e.lease_id == run.lease_id)
    assert t0 <= grant.at <= time.time()


def test_a_busy_box_past_the_wait_is_not_granted_naming_the_box(fleet: Path) -> None:
    with lease_for(gate(whole_box=True), "ada", 1, root=fleet), \
            pytest.raises(NotGranted, match="box ada busy"), \
            lease_for(gate(), "ada", 0.3, root=fleet):
        pass


def test_a_named_box_without_the_required_label_is_unsatisfiable(fleet: Path) -> None:
    with pytest.raises(Unsatisfiable, match="box ada lacks label gpu_model=h200"), \
            lease_for(gate(select="gpu_model=h200"), "ada", 1, root=fleet):
        pass


def test_a_lease_released_under_the_runner_is_reported_lost(fleet: Path) -> None:
    with lease_for(gate(), "ada", 1, root=fleet) as run:
        LocalBackend(load(fleet)).release(run.lease_id, run.token)
        assert "released" in (run.lost() or "")


def test_threads_lease_concurrently_across_boxes_and_never_share_a_slot(fleet: Path) -> None:
    spans: list[tuple[str, str, float, float]] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        with lease_for(gate(f"g{i}", device="cuda", gpus=1), "auto", 30, root=fleet) as run:
            t0 = time.time()
            time.sleep(0.05)
            with lock:
                for s in run.identity["slots"]:
                    spans.append((run.box, s, t0, time.time()))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(spans) == 12
    assert {b for b, *_ in spans} == {"thor", "ada"}             # spread over both boxes
    for key in {(b, s) for b, s, *_ in spans}:
        mine = sorted((a, z) for b, s, a, z in spans if (b, s) == key)
        assert all(z <= a2 for (_, z), (a2, _) in zip(mine, mine[1:], strict=False))


def test_placement_puts_the_scarcest_requirement_first(fleet: Path) -> None:
    easy, whole, picky = gate("easy"), gate("whole", whole_box=True), gate("picky", select="gpu_model=l4")
    ordered = placement_order([easy, whole, picky], "auto", root=fleet)
    assert [g.id for g in ordered][0] == "picky" and [g.id for g in ordered][-1] == "easy"


def test_slurm_lease_identity_records_the_token(slurm_repo: Path, slurm_exclusive: str) -> None:
    with lease_for(gate(device="cuda", gpus=1), slurm_exclusive, 60, root=slurm_repo) as run:
        ident = run.identity
        cluster, _start, job = run.token.split(":")
        assert cluster == "gates" and job == run.lease_id == str(ident["job_id"])
        assert ident["boot_id"] == procs.boot_id()        # the node answered through a step of the job
        assert run.run_prefix[:2] == ["srun", f"--jobid={job}"]


# -- `gates run --lease` end to end (the runner is the lead's; these check what it records) --

GATE = """\
gate: {gid}
claim: leased run
driver:
  type: command
  run: [sh, -c, "echo ok"]
exit_only: "a leasing test only needs the command to start"
requires: {requires}
"""


def gates_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The console script, as a user runs it: `python -m redfirst.gates.cli` from the root would import its gates/ folder.
    exe = shutil.which("gates") or str(Path(sys.executable).with_name("gates"))
    return subprocess.run([exe, *args], cwd=root, capture_output=True, text=True, timeout=300)


def _repo_with_gate(root: Path, requires: str) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "gates").mkdir()
    (root / "gates" / "leased.yaml").write_text(GATE.format(gid="leased", requires=requires))


def test_gates_run_lease_auto_with_a_missing_label_is_no_decision_naming_it(fleet: Path) -> None:
    _repo_with_gate(fleet, "{select: gpu_model=a100}")
    out = gates_cli(fleet, "run", "--lease", "auto", "--lease-wait", "1", "--json")
    assert out.returncode == 3, out.stdout + out.stderr
    item = json.loads(out.stdout)["items"][0]
    assert item["verdict"] == "NO_DECISION" and "gpu_model=a100" in item["reason"]


def test_gates_run_lease_on_the_slurm_node_records_the_token(slurm_repo: Path, slurm_exclusive: str) -> None:
    _repo_with_gate(slurm_repo, "{device: cpu}")
    out = gates_cli(slurm_repo, "run", "--lease", slurm_exclusive, "--lease-wait", "60", "--json")
    item = json.loads(out.stdout)["items"][0]
    records = list((slurm_repo / ".redfirst").rglob("record.json"))
    assert records, out.stdout + out.stderr
    record = json.loads(records[-1].read_text())
    context = record["context"]
    assert context["backend"] == "slurm" and context["token"].startswith("gates:"), context
    assert item["evidence"] and item["verdict"] == "GREEN", item
    # The gate's command ran as a step of the allocation, not on the client.
    assert record["main"]["argv"][0] == "srun" and any(a.startswith("--jobid=") for a in record["main"]["argv"])
    assert context["ran_sha256"]


def test_gates_run_lease_box_records_token_identity_and_the_audit_shows_the_grant_inside_the_window(
        fleet: Path) -> None:
    _repo_with_gate(fleet, "{device: cpu}")
    out = gates_cli(fleet, "run", "--lease", "thor", "--lease-wait", "10", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    record = json.loads(next((fleet / ".redfirst").rglob("record.json")).read_text())
    ctx = record["context"]
    assert ctx["backend"] == "local" and ctx["box"] == "thor" and re.fullmatch(r"local:thor:[0-9a-f]{12}:" + ctx["lease_id"][5:], ctx["token"])
    assert ctx["boot_id"] == procs.boot_id() and "gpus" in ctx
    audit = LocalBackend(load(fleet)).audit()
    grant = next(e for e in audit if e.event == "grant" and e.lease_id == ctx["lease_id"])
    release = next(e for e in audit if e.event == "release" and e.lease_id == ctx["lease_id"])
    utc = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(grant.at)) + f".{int(grant.at % 1 * 1000):03d}Z"
    assert record["started_utc"] <= utc <= record["finished_utc"]
    assert release.at >= grant.at


def test_a_malformed_selector_in_requires_is_reported_with_file_and_line(fleet: Path) -> None:
    with pytest.raises(Unsatisfiable, match=r"gates/g.yaml:1: requires.select: term 'gpu_model' has no operator"), \
            lease_for(gate(select="gpu_model"), "auto", 1, root=fleet):
        pass


def test_a_relative_lease_file_is_the_same_file_for_a_gate_run_from_another_folder(fleet: Path) -> None:
    # `REDFIRST_LEASES_DB=leases.db` from the root: the gate's wrapper runs in its `cwd`, and must find the lease there.
    _repo_with_gate(fleet, "{device: cpu}")
    (fleet / "sub").mkdir()
    text = (fleet / "gates" / "leased.yaml").read_text().replace('"echo ok"]', '"echo ok"]\n  cwd: sub')
    (fleet / "gates" / "leased.yaml").write_text(text)
    out = subprocess.run([shutil.which("gates") or str(Path(sys.executable).with_name("gates")), "run", "--lease",
                          "thor", "--lease-wait", "10", "--json"], cwd=fleet, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "REDFIRST_LEASES_DB": "rel-leases.db"})
    item = json.loads(out.stdout)["items"][0]
    assert item["verdict"] == "GREEN", out.stdout + out.stderr
    assert not (fleet / "sub" / "rel-leases.db").exists(), "the wrapper made a second lease file in the gate's cwd"


def leases_cli(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=timeout)


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
    client = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(repo), "run", "--box", "local",
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
    out = subprocess.run([sys.executable, "-c", "import sys; from redfirst.gates.cli import main; sys.exit(main())", "run",
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


ENCLOSING = """
import json, sys
from pathlib import Path
from redfirst.gates import leasing
from redfirst.gates.model import DriverSpec, Gate, Requires, Source
g = Gate("g", DriverSpec("command", ("true",), timeout=30), Source(Path("gates/g.yaml"), 1),
         requires=Requires("cuda", 1, None, False))
try:
    print(json.dumps({"held": leasing.enclosing(g, root=Path(sys.argv[1]))[0]}))
except leasing.Unsatisfiable as exc:
    print(json.dumps({"unsatisfiable": str(exc)}))
"""


def test_an_enclosing_lease_counts_only_for_its_own_process_tree(repo: Path, lease_db: Path) -> None:
    """A lease's variables copied into another shell: the lease is live, but this process is not inside it."""
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    local: {gpus: 1}\n")
    script = repo / "enclosing.py"
    script.write_text(ENCLOSING)
    leased = subprocess.Popen([sys.executable, "-m", "redfirst.leases.cli", "--root", str(repo), "run", "--box", "local",
                               "--gpus", "1", "--ttl", "60", "--", "sh", "-c",
                               f"{sys.executable} {script} {repo}; env | grep -E '^REDFIRST_LEASE_(ID|TOKEN|BACKEND)=';"
                               " sleep 30"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert leased.stdout is not None
        inside = json.loads(leased.stdout.readline())
        assert inside.get("held", {}).get("lease_id") == "local.1", inside      # its own command: inside
        copied = dict(line.strip().split("=", 1) for line in (leased.stdout.readline(), leased.stdout.readline(),
                                                              leased.stdout.readline()))
        renews = [e.seq for e in LocalBackend(load(repo)).audit() if e.event == "renew"]
        outside = subprocess.run([sys.executable, str(script), str(repo)], capture_output=True, text=True, timeout=60,
                                 env={**os.environ, **copied})
        verdict = json.loads(outside.stdout)
        assert "unsatisfiable" in verdict, verdict
        assert re.search(r"not inside|not .*ancestors", verdict["unsatisfiable"]), verdict
        assert [e.seq for e in LocalBackend(load(repo)).audit() if e.event == "renew"] == renews, \
            "a process outside the lease renewed it"
    finally:
        leased.kill()
        leased.wait()
