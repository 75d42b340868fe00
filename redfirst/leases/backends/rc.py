"""The `rc` backend: mudler/resource-controller's HTTP API (`/v1`, bearer token).

Written from the controller's published source (internal/server/server.go routes and
client_api.go request shapes). No live controller can run here, so its tests are contract
tests against a fake server on loopback that answers with those shapes (tests/leases/test_rc.py).

- boxes: `GET /v1/devices`; a box is one device (`host:name`) whose labels are its labels.
- acquire: `POST /v1/jobs` with `kind: hold`, `device_id` or `selector`, `max_runtime_seconds`
  (the lease's maximum runtime: the controller ends the hold then) and `no_wait` when not
  waiting; then `GET /v1/jobs/{id}` until the hold runs. A hold still queued at the end of
  the wait is killed (`POST /v1/jobs/{id}/kill`) and the lease is not granted.
- the token is `rc:<job id>`; the controller's own lease table (one live lease per device)
  is the fence, and a killed or finished job refuses renew and release.
- run: `leases run` submits the command itself as a controller job on the device and streams
  its log (`GET /v1/jobs/{id}/logs`); a held device runs nothing from here, so `run_prefix`
  is refused with that explanation.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from redfirst import yamlsrc
from redfirst.leases import procs
from redfirst.leases.backends import LEASE_BACKEND_ENV
from redfirst.leases.backends import slurm_read as read
from redfirst.leases.backends.slurm import Secret
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import (
    AuditEvent,
    Box,
    Lease,
    LeaseError,
    LeaseRequest,
    NotGranted,
    StaleLease,
    Unsatisfiable,
)
from redfirst.leases.selector import parse

DEFAULT_MAX_RUNTIME = 3600
RUNNING = {"assigned", "running"}
TERMINAL = {"succeeded", "failed", "killed", "lost"}


def _strs(doc: dict[str, Any], *keys: str) -> bool:
    """Each of `keys` absent, null or a string."""
    return all(doc.get(k) is None or isinstance(doc.get(k), str) for k in keys)


def _is_job(doc: Any) -> bool:
    """A job as client_api.go's JobView writes it: an id and a state, its exit code an exit status (0-255, or
    Go's -1 for a process a signal ended) where it has one."""
    code = doc.get("exit_code") if isinstance(doc, dict) else None
    return isinstance(doc, dict) and isinstance(doc.get("id"), str) and isinstance(doc.get("state"), str) \
        and _strs(doc, "device_id", "kill_reason", "submitter", "reason") \
        and (code is None or (type(code) is int and -1 <= code <= 255))


def _is_device_view(view: Any) -> bool:
    dev = view.get("device") if isinstance(view, dict) else None
    labels = dev.get("labels") if isinstance(dev, dict) else None
    return isinstance(dev, dict) and isinstance(dev.get("id"), str) and _strs(dev, "host", "state", "name") \
        and (labels is None or (isinstance(labels, list) and all(
            isinstance(lab, dict) and isinstance(lab.get("key"), str) and "value" in lab
            and not isinstance(lab["value"], (dict, list)) for lab in labels)))


# Each document the backend reads: what it must be, and how a message names it.
SHAPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "any": (lambda doc: True, "a JSON document"),
    "devices": (lambda doc: isinstance(doc, list) and all(_is_device_view(v) for v in doc),
                "a list of devices ({device: {id, labels: [{key, value}]}})"),
    "job": (_is_job, "a job ({id, state, exit_code})"),
    "wrapped job": (lambda doc: isinstance(doc, dict) and _is_job(doc.get("job")), "{job: {id, state, exit_code}}"),
    "state": (lambda doc: isinstance(doc, dict) and (doc.get("jobs") is None or (
        isinstance(doc["jobs"], list) and all(_is_job(j) for j in doc["jobs"]))), "{jobs: [{id, state, ...}]}"),
}


def _path(resp: requests.Response) -> str:
    return str(resp.request.path_url) if resp.request is not None else "?"


class RcError(LeaseError):
    """The controller refused or could not be reached; the message carries its error code."""


class RcBackend:
    name = "rc"
    def __init__(self, config: LeasesConfig) -> None:
        cfg = dict(config.rc)
        self.url = (cfg.get("url") or os.environ.get("RC_URL") or "").rstrip("/")
        if not self.url:
            raise LeaseError(f"{config.source}: leases.rc.url is not set (the controller's base URL)")
        token = os.environ.get(cfg.get("token_env", "RC_TOKEN"), "")
        self._token = Secret(token) if token else None
        self.submitter = cfg.get("submitter") or f"{procs.user_name()}@{socket.gethostname()}"
        self._session = requests.Session()
        self._audit: list[AuditEvent] = []

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              stream: bool = False) -> requests.Response:
        """One request to the controller. A caller may rely on: a failure to reach it is an RcError, and an
        answer (not `stream`) is read whole within slurm_read's bounds (`bounded_body`): a controller sending
        without end, or a byte at a time, is an RcError naming it, never a hang or memory without end."""
        headers = {"Authorization": f"Bearer {self._token.reveal()}"} if self._token else {}
        try:
            resp = self._session.request(method, f"{self.url}{path}", json=body, headers=headers, timeout=30,
                                         stream=True)
            if not stream:
                with resp:
                    resp._content = read.bounded_body(resp)
        except read.AnswerUnbounded as exc:
            raise RcError(f"resource-controller at {self.url}: {method} {path.split('?')[0]} {exc}") from None
        except requests.RequestException as exc:
            raise RcError(f"resource-controller at {self.url} unreachable: {type(exc).__name__}") from None
        return resp

    def _json(self, resp: requests.Response, ok: tuple[int, ...] = (200, 201), shape: str = "any") -> Any:
        """The controller's answer as the document `shape` names (SHAPES), the only way an answer is read.

        A caller may rely on: a refusal is a LeaseError of its kind (Unsatisfiable, NotGranted, StaleLease, RcError),
        and a document that is no JSON, nested past the loader's bound, or not of the published shape (a proxy's
        page, another version's fields, a job's exit code that is no exit status) is an RcError naming the
        controller and what it sent: never a KeyError/TypeError traceback, nor a status read from a wrong field."""
        where = f"resource-controller at {self.url}"
        if resp.status_code not in ok:
            err = self._parsed(resp)
            code = err.get("error") if isinstance(err, dict) else None
            msg = err.get("message") if isinstance(err, dict) else None
            code = code if isinstance(code, str) else str(resp.status_code)
            msg = msg if isinstance(msg, str) else resp.text[:200]
            if code in ("no_matching_device", "unknown_device", "bad_selector", "runtime_above_ceiling"):
                raise Unsatisfiable(f"resource-controller: {code}: {msg}")
            if code == "no_device_available":
                raise NotGranted(f"resource-controller: {msg}")
            if resp.status_code == 404:
                raise StaleLease(f"resource-controller: {msg or 'not found'}")
            raise RcError(f"resource-controller: HTTP {resp.status_code} {code}: {msg}")
        if not resp.content:
            if shape == "any":
                return None
            raise RcError(f"{where}: {resp.request.method} {_path(resp)} answered HTTP {resp.status_code} with no "
                          f"document, expected {SHAPES[shape][1]}")
        doc = self._parsed(resp, strict=True)
        check, expected = SHAPES[shape]
        if not check(doc):
            raise RcError(f"{where}: {resp.request.method} {_path(resp)} answered a document that is not "
                          f"{expected}: {resp.text[:200]!r}")
        return doc

    def _parsed(self, resp: requests.Response, strict: bool = False) -> Any:
        """The body through the one bounded JSON loader (duplicate keys, depth); None (strict: RcError) if none."""
        try:
            return yamlsrc.load_json_text(resp.content.decode("utf-8"), Path(_path(resp)))
        except (UnicodeDecodeError, yamlsrc.YamlError) as exc:
            if not strict:
                return None
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else "; ".join(str(p) for p in exc.problems)
            raise RcError(f"resource-controller at {self.url}: {resp.request.method} {_path(resp)} answered "
                          f"HTTP {resp.status_code} with no JSON document ({why}): {resp.text[:200]!r}") from None

    # -- boxes ------------------------------------------------------------------------------------

    def boxes(self) -> list[Box]:
        out = []
        for view in self._json(self._call("GET", "/v1/devices"), shape="devices"):
            dev = view["device"]
            labels = {lab["key"].lower(): str(lab["value"]) for lab in dev.get("labels") or []}
            labels.update({"host": dev.get("host", ""), "state": dev.get("state", ""), "gpus": "1"})
            out.append(Box(dev["id"], self.name, ("gpu0",), tuple(sorted(labels.items()))))
        return out

    # -- leases -----------------------------------------------------------------------------------

    def _submit(self, request: LeaseRequest, wait: float, body: dict[str, Any]) -> dict[str, Any]:
        if request.gpus > 1 or request.whole_box:
            raise Unsatisfiable("the rc backend leases one device per lease (gpus<=1, no whole box)")
        if request.select:
            parse(request.select)
            body["selector"] = request.select
        else:
            body["device_id"] = request.box
        body.update({"submitter": self.submitter, "no_wait": wait <= 0,
                     "max_runtime_seconds": int(request.max_runtime or DEFAULT_MAX_RUNTIME)})
        job: dict[str, Any] = self._json(self._call("POST", "/v1/jobs", body), shape="job")
        end = time.monotonic() + max(wait, 0.0)
        while job["state"] == "queued":
            if time.monotonic() >= end:
                self._withdraw(job["id"], wait)
                raise NotGranted(f"resource-controller: job {job['id']} still queued after {wait:g}s")
            time.sleep(0.2)
            job = self._json(self._call("GET", f"/v1/jobs/{job['id']}"), shape="wrapped job")["job"]
        if job["state"] in TERMINAL:
            raise NotGranted(f"resource-controller: job {job['id']} ended {job['state']} before it ran")
        return job

    def _withdraw(self, job_id: str, wait: float) -> None:
        """Kill a hold still queued at the end of the wait. A kill the controller refuses is an RcError naming
        the job (it may still run later, held by nobody until its maximum runtime), never passed over."""
        try:
            self._json(self._call("POST", f"/v1/jobs/{job_id}/kill", {"submitter": self.submitter}),
                       ok=(200, 201, 202, 204))
        except StaleLease:
            return      # gone already: nothing is left queued
        except LeaseError as exc:
            raise RcError(f"resource-controller: job {job_id} was still queued after {wait:g}s and its kill was "
                          f"refused ({exc}): it may still run, held by nobody; kill it (POST /v1/jobs/{job_id}/kill)"
                          ) from None

    def acquire(self, request: LeaseRequest, wait: float, *, detached: bool = False) -> Lease:
        job = self._submit(request, wait, {"kind": "hold", "reason": request.purpose or "leases"})
        return self._lease(job, request)

    def _lease(self, job: dict[str, Any], request: LeaseRequest) -> Lease:
        now = time.time()
        runtime = float(job.get("max_runtime_seconds") or request.max_runtime or DEFAULT_MAX_RUNTIME)
        lease = Lease(job["id"], self.name, job.get("device_id", ""), ("gpu0",), False, f"rc:{job['id']}",
                      int(now * 1000), self.submitter, request.ttl, now, now + runtime, now + runtime,
                      request.purpose, (("job_id", job["id"]),))
        self._record("grant", lease)
        return lease

    def _live(self, lease_id: str, token: str | None) -> dict[str, Any]:
        if token is not None and token != f"rc:{lease_id}":
            raise StaleLease(f"lease {lease_id}: token {token} is not its token")
        job: dict[str, Any] = self._json(self._call("GET", f"/v1/jobs/{lease_id}"), shape="wrapped job")["job"]
        if job["state"] not in RUNNING:
            raise StaleLease(f"lease {lease_id}: job is {job['state']}" +
                             (f" ({job['kill_reason']})" if job.get("kill_reason") else ""))
        return job

    def renew(self, lease_id: str, token: str | None = None) -> Lease:
        job = self._live(lease_id, token)
        now = time.time()
        lease = Lease(lease_id, self.name, job.get("device_id", ""), ("gpu0",), False, f"rc:{lease_id}", 0,
                      self.submitter, 0.0, now, now)
        self._record("renew", lease)
        return lease

    def release(self, lease_id: str, token: str | None = None) -> None:
        job = self._live(lease_id, token)
        self._json(self._call("POST", f"/v1/jobs/{lease_id}/kill", {"submitter": self.submitter}), ok=(200,))
        now = time.time()
        self._record("release", Lease(lease_id, self.name, job.get("device_id", ""), ("gpu0",), False,
                                      f"rc:{lease_id}", 0, self.submitter, 0.0, now, now))

    def status(self) -> list[Lease]:
        state = self._json(self._call("GET", "/v1/state"), shape="state")
        now = time.time()
        return [Lease(j["id"], self.name, j.get("device_id", ""), ("gpu0",), False, f"rc:{j['id']}", 0,
                      j.get("submitter", ""), 0.0, now, now, None, j.get("reason", ""))
                for j in state.get("jobs") or [] if j.get("submitter") == self.submitter]

    def _record(self, event: str, lease: Lease) -> None:
        self._audit.append(AuditEvent(len(self._audit) + 1, time.time(), event, lease.id, lease.box, lease.slots,
                                      lease.fence, lease.holder, lease.token))

    def audit(self, limit: int = 100) -> list[AuditEvent]:
        """This process's own grant/renew/release calls; the controller keeps the fleet's history."""
        return self._audit[-limit:]

    # -- running ----------------------------------------------------------------------------------

    def why_cannot_run(self) -> str | None:
        # A hold runs nothing: the controller runs a command only as a job of its own (`run_job`), and
        # one live job per device means it would queue behind the hold.
        return ("lease backend rc runs commands only as jobs of its controller (`leases run`); a command "
                "started on this machine cannot run on the leased device, so `gates run --lease` cannot use it")

    def run_prefix(self, lease: Lease) -> list[str]:
        raise Unsatisfiable(str(self.why_cannot_run()))

    def identity(self, lease: Lease, box: Box | None) -> dict[str, Any]:
        """The device as the controller describes it (`GET /v1/devices`): this machine knows nothing of it."""
        dev = next((v["device"] for v in self._json(self._call("GET", "/v1/devices"), shape="devices")
                    if v["device"]["id"] == lease.box), None)
        if dev is None:
            raise StaleLease(f"lease {lease.id}: the controller no longer lists device {lease.box}")
        labels = {lab["key"].lower(): str(lab["value"]) for lab in dev.get("labels") or []}
        return {
            "boot_id": labels.get("boot_id"),
            "gpus": [{"slot": "gpu0", "name": labels.get("gpu_model") or dev.get("name"), "sm": labels.get("sm"),
                      "uuid": labels.get("uuid")}],
            "driver": labels.get("driver"),
            "toolkit": labels.get("cuda"),
            "host": dev.get("host"),
            "job_id": lease.id,
            "source": f"resource-controller {self.url}",
        }

    def env(self, lease: Lease) -> dict[str, str]:
        return {"REDFIRST_LEASE_ID": lease.id, "REDFIRST_LEASE_TOKEN": lease.token, LEASE_BACKEND_ENV: self.name}

    def why_not_inside(self, lease_id: str) -> str | None:
        return (f"lease {lease_id} is a resource-controller job: its commands run on the controller's device, so no "
                f"process of this machine is inside it")

    def run_job(self, request: LeaseRequest, wait: float, cmd: list[str],
                on_grant: Callable[[Lease], None] | None = None, out: int | None = None) -> int:
        """Run `cmd` as a controller job on the device, stream its log (to descriptor `out`, default stdout),
        and return its exit code; `on_grant` is handed the lease once the job runs."""
        job = self._submit(request, wait, {"command": cmd, "cwd": os.getcwd()})
        lease = self._lease(job, request)
        if on_grant is not None:
            on_grant(lease)
        with self._call("GET", f"/v1/jobs/{job['id']}/logs?follow=true", stream=True) as resp:
            try:
                for chunk in resp.iter_content(chunk_size=None) if resp.status_code == 200 else ():
                    if out is None:
                        sys.stdout.buffer.write(chunk)
                        sys.stdout.flush()
                    else:
                        os.write(out, chunk)
            except requests.RequestException as exc:    # the log is cut; the job's status is still the controller's
                print(f"leases: resource-controller at {self.url}: the log of job {job['id']} broke off "
                      f"({type(exc).__name__}); waiting for the job's status", file=sys.stderr)
        while True:
            job = self._json(self._call("GET", f"/v1/jobs/{job['id']}"), shape="wrapped job")["job"]
            if job["state"] in TERMINAL:
                break
            time.sleep(0.2)
        code = job.get("exit_code")
        if code is not None and code >= 0:
            return int(code)
        return 137 if job["state"] in ("killed", "lost") else 1
