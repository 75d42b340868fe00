"""A FAKE mudler/resource-controller on loopback, for the rc backend's contract tests.

No live controller can run here. `FakeController` answers the routes and JSON shapes of the
controller's published source (internal/server/server.go, client_api.go): bearer auth,
`POST /v1/jobs` with `kind: hold` (which requires `max_runtime_seconds` and refuses a command),
`no_wait` -> 409 `no_device_available`, unknown selectors -> 400 `no_matching_device`, one live
job per device, kill by submitter. Its "worker" runs a job's command as a local subprocess.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from redfirst.leases.selector import parse

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


def send_json(h: BaseHTTPRequestHandler, status: int, body: Any) -> None:
    """One answer: `body` as JSON (bytes as they are), with its length."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def handler(rc: FakeController) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def reply(self, status: int, body: Any) -> None:
            send_json(self, status, body)

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



@contextmanager
def serve() -> Iterator[tuple[str, FakeController]]:
    """A fake controller on a free loopback port: (its base URL, its state)."""
    rc = FakeController()
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(rc))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", rc
    finally:
        server.shutdown()
