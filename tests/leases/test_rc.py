"""Contract tests of the rc backend against a FAKE resource-controller on loopback.

No live mudler/resource-controller can run here. `FakeController` answers the routes and
JSON shapes of the controller's published source (internal/server/server.go,
client_api.go): bearer auth, `POST /v1/jobs` with `kind: hold` (which requires
`max_runtime_seconds` and refuses a command), `no_wait` -> 409 `no_device_available`,
unknown selectors -> 400 `no_matching_device`, one live job per device, kill by submitter.
Its "worker" runs a job's command as a local subprocess.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from leases.backends.rc import RcBackend
from leases.config import load
from leases.model import LeaseError, LeaseRequest, NotGranted, StaleLease, Unsatisfiable
from leases.run import run_leased
from leases.selector import parse

TOKEN = "s3cret-client-token"


class FakeController:
    def __init__(self) -> None:
        self.devices = {
            "thor:gpu0": {"gpu_model": "h200", "sm": "9.0"},
            "spark:gpu0": {"gpu_model": "gb10", "sm": "12.1"},
        }
        self.jobs: dict[str, dict[str, Any]] = {}
        self.logs: dict[str, bytes] = {}
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def busy(self, device: str) -> bool:
        return any(j["device_id"] == device and j["state"] in ("assigned", "running") for j in self.jobs.values())

    def schedule(self) -> None:
        for job in sorted(self.jobs.values(), key=lambda j: j["seq"]):
            if job["state"] == "queued" and not self.busy(job["device_id"]):
                job["state"] = "running"
                if job["kind"] == "job":
                    threading.Thread(target=self.work, args=(job,), daemon=True).start()

    def work(self, job: dict[str, Any]) -> None:
        out = subprocess.run(job["command"], capture_output=True, cwd=job["cwd"] or None)
        with self.lock:
            self.logs[job["id"]] = out.stdout
            job.update(state="succeeded" if out.returncode == 0 else "failed", exit_code=out.returncode)
            self.schedule()


def handler(rc: FakeController) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def reply(self, status: int, body: Any) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def err(self, status: int, code: str, msg: str) -> None:
            self.reply(status, {"error": code, "message": msg})

        def authed(self) -> bool:
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                self.err(401, "unauthorized", "missing or bad token")
                return False
            return True

        def do_GET(self) -> None:
            if not self.authed():
                return
            path = self.path.split("?")[0]
            if path.endswith("/logs") and "follow=false" not in self.path:
                # The real controller streams until the job ends; the fake sends it all at the end.
                while rc.jobs.get(path.split("/")[3], {}).get("state") in ("queued", "assigned", "running"):
                    time.sleep(0.02)
            with rc.lock:
                if path == "/v1/devices":
                    self.reply(200, [{"device": {"id": d, "host": d.split(":")[0], "name": d.split(":")[1],
                                                 "state": "busy" if rc.busy(d) else "ready",
                                                 "labels": [{"key": k, "value": v, "source": "declared"}
                                                            for k, v in labels.items()]}}
                                     for d, labels in rc.devices.items()])
                elif path == "/v1/state":
                    self.reply(200, {"devices": [], "queued": [],
                                     "jobs": [j for j in rc.jobs.values() if j["state"] == "running"]})
                elif path.startswith("/v1/jobs/") and path.endswith("/logs"):
                    job = rc.jobs.get(path.split("/")[3])
                    if job is None:
                        return self.err(404, "not_found", "job not found")
                    self.reply(200, rc.logs.get(job["id"], b""))
                elif path.startswith("/v1/jobs/"):
                    job = rc.jobs.get(path.split("/")[3])
                    if job is None:
                        return self.err(404, "not_found", "job not found")
                    self.reply(200, {"job": job, "queue_position": 0})
                else:
                    self.err(404, "not_found", path)

        def do_POST(self) -> None:
            if not self.authed():
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with rc.lock:
                rc.requests.append(body)
                if self.path == "/v1/jobs":
                    return self.submit(body)
                if self.path.startswith("/v1/jobs/") and self.path.endswith("/kill"):
                    job = rc.jobs.get(self.path.split("/")[3])
                    if job is None:
                        return self.err(404, "not_found", "job not found")
                    if job["submitter"] != body.get("submitter"):
                        return self.err(403, "not_job_owner", "only the submitter or an admin may kill this job")
                    if job["state"] not in ("queued", "assigned", "running"):
                        return self.err(409, "not_cancellable", "job already finished")
                    job.update(state="killed", kill_reason=f"killed by {body.get('submitter')}")
                    rc.schedule()
                    return self.reply(200, b"")
                self.err(404, "not_found", self.path)

        def submit(self, req: dict[str, Any]) -> None:
            kind = req.get("kind") or "job"
            if kind == "hold" and (req.get("command") or req.get("max_runtime_seconds", 0) <= 0):
                return self.err(400, "bad_request", "a hold requires --ttl and no command")
            if bool(req.get("device_id")) == bool(req.get("selector")):
                return self.err(400, "bad_request", "give either device_id or selector, not both")
            if not req.get("submitter"):
                return self.err(400, "bad_request", "submitter required")
            if req.get("selector"):
                sel = parse(req["selector"])
                matching = [d for d, labels in rc.devices.items() if sel.matches(labels)]
                if not matching:
                    return self.err(400, "no_matching_device", f"no device matches {req['selector']}")
                device = next((d for d in matching if not rc.busy(d)), matching[0])
            elif req["device_id"] in rc.devices:
                device = req["device_id"]
            else:
                return self.err(400, "unknown_device", req["device_id"])
            if req.get("no_wait") and rc.busy(device):
                return self.err(409, "no_device_available", f"{device} is not free")
            job = {"id": str(uuid.uuid4()), "seq": len(rc.jobs), "kind": kind, "state": "queued",
                   "device_id": device, "submitter": req["submitter"], "command": req.get("command") or ["hold"],
                   "cwd": req.get("cwd", ""), "max_runtime_seconds": req["max_runtime_seconds"],
                   "reason": req.get("reason", "")}
            rc.jobs[job["id"]] = job
            rc.schedule()
            self.reply(201, job)

    return H


@pytest.fixture
def rc_repo(repo: Path, lease_db: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, FakeController]]:
    rc = FakeController()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(rc))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("RC_TOKEN", TOKEN)
    (repo / "redfirst.yaml").write_text(
        f"leases:\n  backend: rc\n  rc: {{url: 'http://127.0.0.1:{server.server_port}', submitter: ci}}\n")
    yield repo, rc
    server.shutdown()


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
    with pytest.raises(LeaseError, match="controller job"):
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
