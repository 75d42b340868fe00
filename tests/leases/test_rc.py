"""Contract tests of the rc backend against a FAKE resource-controller on loopback.

No live mudler/resource-controller can run here: `fake_rc.FakeController` answers the routes
and JSON shapes of the controller's published source (see there).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_rc import TOKEN, FakeController, serve

from redfirst.leases.backends.rc import RcBackend
from redfirst.leases.config import load
from redfirst.leases.model import LeaseError, LeaseRequest, NotGranted, StaleLease, Unsatisfiable
from redfirst.leases.run import run_leased


@pytest.fixture
def rc_repo(repo: Path, lease_db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, FakeController]]:
    with serve() as (url, rc):
        monkeypatch.setenv("RC_TOKEN", TOKEN)
        (repo / "redfirst.yaml").write_text(f"leases:\n  backend: rc\n  rc: {{url: '{url}', submitter: ci}}\n")
        yield repo, rc


def test_devices_are_boxes_with_their_labels(rc_repo: tuple[Path, FakeController]) -> None:
    boxes = {b.name: b.label_map for b in RcBackend(load(rc_repo[0])).boxes()}
    assert boxes["thor:gpu0"]["gpu_model"] == "h200" and boxes["spark:gpu0"]["sm"] == "12.1"


def test_acquire_is_a_hold_with_a_maximum_runtime_and_the_token_is_never_shown(
        rc_repo: tuple[Path, FakeController]) -> None:
    root, rc = rc_repo
    b = RcBackend(load(root))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", max_runtime=600, purpose="bench"), 0)
    sent = rc.requests[-1]
    assert sent["kind"] == "hold" and sent["max_runtime_seconds"] == 600 and sent["selector"] == "gpu_model=h200"
    assert sent["submitter"] == "ci" and "command" not in sent
    assert lease.box == "thor:gpu0" and lease.token == f"rc:{lease.id}"
    assert TOKEN not in repr(b.__dict__) and TOKEN not in repr(b.audit())


def test_a_busy_device_is_not_granted_and_a_queued_hold_is_withdrawn(rc_repo: tuple[Path, FakeController]) -> None:
    root, rc = rc_repo
    b = RcBackend(load(root))
    b.acquire(LeaseRequest(box="thor:gpu0"), 0)
    with pytest.raises(NotGranted, match="not free"):
        b.acquire(LeaseRequest(box="thor:gpu0"), 0)
    with pytest.raises(NotGranted, match="still queued"):
        b.acquire(LeaseRequest(box="thor:gpu0"), 0.5)
    assert [j["state"] for j in rc.jobs.values()] == ["running", "killed"]


def test_released_lease_is_stale_for_renew_and_release(rc_repo: tuple[Path, FakeController]) -> None:
    b = RcBackend(load(rc_repo[0]))
    lease = b.acquire(LeaseRequest(box="spark:gpu0"), 0)
    assert b.renew(lease.id, lease.token).id == lease.id
    b.release(lease.id, lease.token)
    with pytest.raises(StaleLease, match="killed"):
        b.renew(lease.id, lease.token)
    with pytest.raises(StaleLease):
        b.release(lease.id, lease.token)
    with pytest.raises(StaleLease, match="not its token"):
        b.renew(lease.id, "rc:someone-else")


def test_a_selector_no_device_matches_is_unsatisfiable(rc_repo: tuple[Path, FakeController]) -> None:
    with pytest.raises(Unsatisfiable, match="no_matching_device"):
        RcBackend(load(rc_repo[0])).acquire(LeaseRequest(select="gpu_model=a100"), 0)


def test_leases_run_submits_the_command_as_a_job_and_exits_with_its_status(
        rc_repo: tuple[Path, FakeController], capfd: pytest.CaptureFixture[str]) -> None:
    b = RcBackend(load(rc_repo[0]))
    code = run_leased(b, LeaseRequest(select="gpu_model=gb10"), 5, ["sh", "-c", "echo from-the-worker; exit 4"])
    assert code == 4 and "from-the-worker" in capfd.readouterr().out
    with pytest.raises(Unsatisfiable, match="jobs of its controller"):
        b.run_prefix(b.acquire(LeaseRequest(box="spark:gpu0"), 0))


def test_without_the_token_the_controller_refuses(rc_repo: tuple[Path, FakeController],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RC_TOKEN")
    with pytest.raises(LeaseError, match="HTTP 401"):
        RcBackend(load(rc_repo[0])).boxes()


def test_gates_run_lease_with_the_rc_backend_is_no_decision_naming_why_and_holds_nothing(
        rc_repo: tuple[Path, FakeController]) -> None:
    import shutil
    import sys

    root, rc = rc_repo
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "gates").mkdir()
    (root / "gates" / "g.yaml").write_text(
        'gate: g\nclaim: c\ndriver:\n  type: command\n  run: [sh, -c, "echo ran-here"]\nexit_only: "x"\n')
    exe = shutil.which("gates") or str(Path(sys.executable).with_name("gates"))
    # The controller runs in this process, so the CLI runs in a thread's subprocess while it serves.
    out = subprocess.run([exe, "run", "--lease", "thor:gpu0", "--lease-wait", "5", "--json"], cwd=root,
                         capture_output=True, text=True, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == 3, out.stdout + out.stderr
    item = json.loads(out.stdout)["items"][0]
    assert item["verdict"] == "NO_DECISION"
    assert "rc" in item["reason"] and "controller" in item["reason"], item["reason"]
    assert "ran-here" not in out.stdout
    # No hold was left on the device, and no record claims this machine's GPUs as the box's.
    assert not [j for j in rc.jobs.values() if j["state"] in ("assigned", "running", "queued")]
    for rec in root.joinpath(".redfirst").rglob("record.json"):
        assert '"thor:gpu0"' not in rec.read_text() or '"boot_id"' not in rec.read_text()
