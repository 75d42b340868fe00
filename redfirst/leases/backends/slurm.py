"""The `slurm` backend: boxes are nodes, a lease is a job allocation, commands run as `srun` steps in it.

- labels: each node feature `f` becomes `f=yes` (and `features=a,b`); GRES `gpu:<type>:<n>` becomes
  `gpu_model=<type>` and `gpus=<n>`; also `partition`, `state`, `cpus`, `memory`.
- acquire: `salloc --no-shell` (returns as soon as the allocation exists) with a short time limit,
  the TTL rounded up to whole minutes (Slurm's unit), never past the maximum runtime; at once and
  at every heartbeat the job's end time is set (`scontrol update EndTime=`, whole seconds) to the
  controller's start + elapsed + TTL. So Slurm itself ends a lease whose client died, watchdog and
  all: within TTL + 1 s + 30 s (slurmctld checks time limits every 30 s, compiled in) + KillWait
  of the last heartbeat, not the maximum runtime. A waiting acquire asks again every RETRY_S with
  `salloc --immediate=1`, which slurmctld itself refuses when the job cannot start now: a client
  killed while it waits leaves no pending job behind (with a longer --immediate the timer is salloc's,
  and its pending job started later, held by nobody, until slurmctld failed to deliver the allocation). The fencing token is `<cluster>:<controller start>:<job id>`
  (job ids only grow). A watchdog `scancel`s the job at once when the acquiring process dies.
- run: `srun --jobid=J --overlap`; a cancelled or finished job refuses new steps (fencing).
- release: `scancel`. Reads and release go through slurmrestd with a JWT when `rest` is
  configured and answers, at the newest API version its OpenAPI listing offers among those read
  (slurm_read.REST_VERSIONS); the Slurm CLI is the fallback, read in its JSON form (`squeue
  --json`, `sinfo --json`) where the installed Slurm has one, else as text. The JWT is never
  printed or logged.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import requests

from redfirst import yamlsrc
from redfirst.leases import procs, wal
from redfirst.leases.backends import LEASE_BACKEND_ENV
from redfirst.leases.backends import slurm_read as read
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

DEFAULT_MAX_RUNTIME = 3600.0
RETRY_S = 0.5            # a waiting acquire asks slurmctld again this often
CLI_TIMEOUT_S = 30.0     # a Slurm client that has not answered by then is taken as a controller that cannot
LIMIT_CHECK_S = 30.0     # slurmctld looks for jobs past their time limit this often (PERIODIC_TIMEOUT)
_TTL_COMMENT = re.compile(r"\bttl=([0-9.]+)")
BOXES_CACHE_S = 30.0
LIVE_STATES = {"RUNNING", "CONFIGURING"}   # COMPLETING is already ending
_GRANTED = re.compile(r"Granted job allocation (\d+)")
_WATCHDOG = """
import subprocess, sys
jobs = set()
for line in sys.stdin:
    line = line.strip()
    if line.startswith("-"):
        jobs.discard(line[1:])
    elif line:
        jobs.add(line)
names = sorted(j[1:] for j in jobs if j.startswith("@"))
ids = sorted(j for j in jobs if not j.startswith("@"))
if ids:
    subprocess.run(["scancel", *ids], check=False)
for name in names:
    subprocess.run(["scancel", "--name=" + name], check=False)
"""
_NONCE = re.compile(r"~[0-9a-f]{12}$")


class Secret:
    """A credential that prints as <redacted>, so it cannot leak through a log line or a repr."""

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<redacted>"

    __str__ = __repr__


class SlurmUnavailable(LeaseError):
    """Neither slurmrestd nor the Slurm CLI answered."""


class SlurmTimeout(SlurmUnavailable):
    """A Slurm client did not answer in time (a hung or stopped controller)."""


def _run(argv: list[str], timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    timeout = CLI_TIMEOUT_S if timeout is None else timeout
    if shutil.which(argv[0]) is None:
        raise SlurmUnavailable(f"{argv[0]} not found: is the Slurm client installed?")
    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.exists(conf):
        # Slurm's clients would retry it for 60 s, then fail: a timeout that names nothing.
        raise SlurmUnavailable(f"SLURM_CONF={conf} does not exist: no Slurm configuration to reach a controller by")
    # Slurm's clients print and parse times in the local zone; in UTC a time is one instant, even across a
    # change of the zone's clock (a fall-back repeats an hour: start + elapsed would name the later one).
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              env={**os.environ, "TZ": "UTC0"})
    except subprocess.TimeoutExpired:     # a LeaseError like any other controller fault, never a traceback
        raise SlurmTimeout(f"{argv[0]} did not answer within {timeout:g}s: is slurmctld hung?") from None


class SlurmBackend:
    name = "slurm"

    def __init__(self, config: LeasesConfig) -> None:
        cfg = dict(config.slurm)
        self.config = config
        self.rest = cfg.get("rest", "").rstrip("/") or None
        self.user = cfg.get("user") or procs.user_name(numeric="")     # squeue -u takes a uid too
        self.partition = cfg.get("partition") or None
        self.token_env = cfg.get("token_env", "SLURM_JWT")
        self._jwt: Secret | None = None
        self._session = requests.Session()
        self._cluster: tuple[str, int] | None = None
        self._api: str | None = None          # slurmrestd's API path, chosen from its OpenAPI listing
        self._textual: set[str] = set()       # Slurm commands with no JSON form here (slurm_read.cli_json)
        self._watchdog: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        self._boxes: tuple[float, list[Box]] | None = None
        self.audit_db = config.db_path()
        self._tls = threading.local()

    # -- transport -------------------------------------------------------------------------------

    def _token(self) -> Secret | None:
        if self._jwt is None:
            value = os.environ.get(self.token_env)
            if not value:
                try:
                    out = _run(["scontrol", "token", f"username={self.user}", "lifespan=3600"], timeout=10)
                except SlurmUnavailable:
                    return None
                m = re.search(r"SLURM_JWT=(\S+)", out.stdout)
                value = m.group(1) if out.returncode == 0 and m else ""
            self._jwt = Secret(value) if value else None
        return self._jwt

    def _rest_get(self, method: str, url: str) -> dict[str, Any] | None:
        token = self._token()
        if token is None:
            return None
        try:
            with self._session.request(method, url, timeout=10, stream=True, headers={
                    "X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": token.reveal()}) as resp:
                resp._content = read.bounded_body(resp)      # sent without end or a byte at a time: no answer
        except (requests.RequestException, read.AnswerUnbounded):
            return None
        if resp.status_code >= 500 or resp.status_code in (401, 403):
            return None
        try:   # the one bounded loader: nesting past its depth or a key written twice is no answer
            data = yamlsrc.load_json_text(resp.content.decode("utf-8"), Path(url))
        except (UnicodeDecodeError, yamlsrc.YamlError):
            return None
        return data if isinstance(data, dict) else None

    def rest_api(self) -> str | None:
        """slurmrestd's API path (`/slurm/v0.0.38`) at the newest version its OpenAPI listing offers
        among those this backend reads (slurm_read.rest_version); None when REST is not configured,
        not answering or offers none of them. Chosen once a listing was read."""
        if self._api is None and self.rest is not None:
            for path in read.OPENAPI_PATHS:
                listing = self._rest_get("GET", f"{self.rest}{path}")
                if listing is not None and "paths" in listing:
                    version = read.rest_version(listing)
                    self._api = f"/slurm/{version}" if version else ""
                    break
        return self._api or None

    def _rest_call(self, method: str, path: str) -> dict[str, Any] | None:
        """The decoded answer of slurmrestd, or None when it is not configured or not answering."""
        api = self.rest_api()
        return None if api is None else self._rest_get(method, f"{self.rest}{api}{path}")

    def _cli_json(self, argv: list[str], key: str) -> list[dict[str, Any]] | None:
        return read.cli_json(_run, argv, key, self._textual)

    # -- cluster identity ---------------------------------------------------------------------------

    def cluster(self) -> tuple[str, int]:
        """(cluster name, controller start as a Unix time), for the fencing token."""
        if self._cluster is None:
            out = _run(["scontrol", "show", "config"])
            if out.returncode != 0:
                raise SlurmUnavailable(f"scontrol show config failed: {out.stderr.strip()}")
            name = re.search(r"^ClusterName\s*=\s*(\S+)", out.stdout, re.M)
            boot = re.search(r"^BOOT_TIME\s*=\s*(\S+)", out.stdout, re.M)
            start = int(datetime.fromisoformat(boot.group(1)).replace(tzinfo=UTC).timestamp()) if boot else 0
            self._cluster = (name.group(1) if name else "slurm", start)
        return self._cluster

    def _token_of(self, job: int) -> str:
        cluster, start = self.cluster()
        return f"{cluster}:{start}:{job}"

    # -- boxes ------------------------------------------------------------------------------------

    def boxes(self) -> list[Box]:
        # Node features and GRES change by an admin's hand, not per job: a short cache keeps the
        # controller's answer off every acquire's path (salloc still decides what is free).
        with self._lock:
            if self._boxes is not None and time.monotonic() - self._boxes[0] < BOXES_CACHE_S:
                return list(self._boxes[1])
        nodes = self._nodes_rest()
        if nodes is None:
            nodes = self._nodes_cli()
        boxes = [self._box(n) for n in nodes]
        with self._lock:
            self._boxes = (time.monotonic(), boxes)
        return list(boxes)

    def _nodes_rest(self) -> list[dict[str, str]] | None:
        data = self._rest_call("GET", "/nodes")
        if data is None or "nodes" not in data:
            return None
        return [read.node_fields(n) for n in data["nodes"]]

    def _nodes_cli(self) -> list[dict[str, str]]:
        found = self._cli_json(["sinfo"], "nodes")
        if found is not None:
            return [read.node_fields(n) for n in found]
        out = _run(["sinfo", "-h", "-N", "-o", "%N|%f|%G|%T|%c|%m|%P"])
        if out.returncode != 0:
            raise SlurmUnavailable(f"sinfo failed: {out.stderr.strip()}")
        nodes: dict[str, dict[str, str]] = {}
        for line in out.stdout.splitlines():
            name, features, gres, state, cpus, mem, part = (line.split("|") + [""] * 7)[:7]
            if name in nodes:     # one line per partition
                nodes[name]["partition"] += "," + part.rstrip("*")
                continue
            nodes[name] = {"name": name, "features": features, "gres": gres, "state": state.rstrip("*"),
                           "cpus": cpus, "memory": mem, "partition": part.rstrip("*")}
        return list(nodes.values())

    def _box(self, n: dict[str, str]) -> Box:
        labels = {"state": n["state"], "cpus": n["cpus"], "memory": f"{n['memory']}M", "partition": n["partition"]}
        feats = [f for f in re.split(r"[,&|]", n["features"]) if f and f != "(null)"]
        for f in feats:
            labels[f.lower()] = "yes"
        labels["features"] = ",".join(feats)
        gpus = 0
        for g in n["gres"].split(","):
            parts = re.sub(r"\(.*?\)", "", g).split(":")
            if parts[0] != "gpu":
                continue
            count = parts[-1] if parts[-1].isdigit() else "1"
            gpus += int(count)
            if len(parts) == 3:
                labels["gpu_model"] = parts[1].lower()
        labels["gpus"] = str(gpus)
        slots = tuple(f"gpu{i}" for i in range(gpus)) or ("cpu0",)
        return Box(n["name"], self.name, slots, tuple(sorted(labels.items())))

    def candidates(self, request: LeaseRequest) -> list[Box]:
        boxes = self.boxes()
        if request.box:
            boxes = [b for b in boxes if b.name == request.box]
            if not boxes:
                raise Unsatisfiable(f"no Slurm node named {request.box!r}")
        if request.select:
            sel = parse(request.select)
            matching = [b for b in boxes if sel.matches(b.label_map)]
            if not matching:
                term = (sel.first_unmet(boxes[0].label_map) if len(boxes) == 1 else None) or sel.terms[0]
                raise Unsatisfiable(f"no Slurm node has label {term} (selector {sel})")
            boxes = matching
        fitting = [b for b in boxes if len(b.gpu_slots) >= request.gpus]
        if not fitting:
            raise Unsatisfiable(f"no Slurm node has gpus>={request.gpus}")
        return fitting

    # -- leases -----------------------------------------------------------------------------------

    def acquire(self, request: LeaseRequest, wait: float, *, detached: bool = False) -> Lease:
        boxes = self.candidates(request)
        runtime = request.max_runtime or DEFAULT_MAX_RUNTIME
        end = time.monotonic() + max(wait, 0.0)
        reason = ""
        while True:
            for box in boxes:
                # `--immediate=1` is the one value slurmctld enforces itself (it starts the job now or refuses
                # it); a longer wait is salloc's own timer, so a client killed meanwhile left a pending job
                # that started later with nobody to shorten its time limit. The wait is this loop's instead.
                job, reason = self._salloc(box, request, runtime, 1)
                if job is not None:
                    return self._granted(job, box, request, runtime, detached)
            left = end - time.monotonic()
            if left <= 0:
                raise NotGranted(reason)
            time.sleep(min(RETRY_S, left))

    def _salloc(self, box: Box, request: LeaseRequest, runtime: float, immediate: int) -> tuple[int | None, str]:
        gpus = len(box.gpu_slots) if request.whole_box else max(request.gpus, 1 if box.gpu_slots else 0)
        model = box.label_map.get("gpu_model")
        # A name of its own, so the watchdog can cancel the request if this process dies while salloc waits.
        name = f"leases:{request.purpose or 'lease'}~{secrets.token_hex(6)}"
        # The job's time limit is the TTL (heartbeats raise it), never past the maximum runtime; the
        # TTL rides in the comment so any renewing process knows it.
        argv = ["salloc", "--no-shell", "-N1", f"--nodelist={box.name}", f"--immediate={immediate}",
                f"--time={_minutes(min(request.ttl, runtime))}", f"--job-name={name}",
                f"--comment=ttl={request.ttl:g} max={runtime:g}"]
        if gpus:
            argv.append(f"--gres=gpu:{model}:{gpus}" if model else f"--gres=gpu:{gpus}")
        if request.whole_box:
            argv.append("--exclusive")
        if self.partition:
            argv.append(f"--partition={self.partition}")
        self._watch(f"@{name}\n")
        try:
            out = _run(argv, timeout=immediate + 30)
        except SlurmTimeout:
            with contextlib.suppress(SlurmUnavailable):     # else the watchdog cancels it when this process ends
                _run(["scancel", f"--name={name}"])
            return None, f"node {box.name} busy: salloc did not answer within {immediate + 30}s"
        m = _GRANTED.search(out.stderr + out.stdout)
        if out.returncode == 0 and m:
            self._watch(f"{m.group(1)}\n-@{name}\n")
            return int(m.group(1)), ""
        self._watch(f"-@{name}\n")
        msg = (out.stderr.strip().splitlines() or ["salloc failed"])[-1].replace("salloc: error: ", "")
        if "not available" in msg or "Invalid" in msg:
            raise Unsatisfiable(f"node {box.name}: {msg}")
        return None, f"node {box.name} busy: {msg}"

    def _granted(self, job: int, box: Box, request: LeaseRequest, runtime: float, detached: bool) -> Lease:
        now = time.time()
        token = self._token_of(job)
        cluster, _ = self.cluster()
        if detached:     # it lives by its time limit alone once acquire returns
            self._watch(f"-{job}\n")
        gpus = len(box.gpu_slots) if request.whole_box else max(request.gpus, 1 if box.gpu_slots else 0)
        try:
            slots = self._gpu_slots(job, box, gpus) if gpus else ("cpu0",)
        except LeaseError:
            with contextlib.suppress(SlurmUnavailable):
                _run(["scancel", str(job)])     # a lease that cannot say which GPUs it holds is not granted
            self._watch(f"-{job}\n")
            raise
        lease = Lease(str(job), self.name, box.name, slots, request.whole_box,
                      token, job, f"{self.user} pid {os.getpid()}", request.ttl, now, now + runtime, now + runtime,
                      request.purpose, (("cluster", cluster), ("job_id", str(job))))
        # From here Slurm ends the job a TTL after its last heartbeat, not at the whole minute salloc set.
        try:
            end = self._push_limit(str(job), {}, request.ttl)
            self._audit("grant", lease, f"salloc --time {_minutes(min(request.ttl, runtime))} min, {end} (TTL "
                                        f"{request.ttl:g}s, max runtime {runtime:g}s)")
        except LeaseError:
            # A lease Slurm would not end by its TTL, or whose grant the audit cannot show, is not granted.
            with contextlib.suppress(SlurmUnavailable):
                _run(["scancel", str(job)])
            self._watch(f"-{job}\n")
            raise
        return lease

    def _gpu_slots(self, job: int, box: Box, gpus: int) -> tuple[str, ...]:
        """The GPUs Slurm gave the job (`GRES=gpu:h200:1(IDX:1)` of `scontrol show job -d`), as slots `gpuN`.

        Not the first `gpus` slots of the box: two jobs of one GPU each on one node hold gpu0 and gpu1."""
        found = self._cli_json(["squeue", "-j", str(job)], "jobs")
        mine = [j for j in found or [] if str(j.get("job_id")) == str(job)]
        if found is not None and mine:
            gres = ",".join(str(g) for g in mine[0].get("gres_detail") or [])
        else:
            out = _run(["scontrol", "show", "job", "-d", str(job)])
            if out.returncode != 0:
                raise SlurmUnavailable(f"scontrol show job {job} failed: {out.stderr.strip()}")
            gres = " ".join(re.findall(r"\bGRES=(\S+)", out.stdout))
        indices = read.gpu_indices(gres)
        if indices is None:      # a GRES without device files has no index: Slurm itself cannot tell the GPUs apart
            return box.gpu_slots[:gpus]
        return tuple(f"gpu{i}" for i in indices)

    def _watch(self, line: str) -> None:
        """Tell this process's watchdog about a job (`J`) or its release (`-J`).

        The watchdog reads a pipe only this process writes: when the process dies, however it
        dies, the pipe closes and the watchdog `scancel`s every job still listed, so the job's
        steps are cancelled and nothing stays allocated."""
        with self._lock:
            if self._watchdog is None or self._watchdog.poll() is not None:
                self._watchdog = subprocess.Popen(
                    [sys.executable, "-c", _WATCHDOG], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True, text=True)
            assert self._watchdog.stdin is not None
            self._watchdog.stdin.write(line)
            self._watchdog.stdin.flush()

    def _job(self, job: str) -> dict[str, str] | None:
        data = self._rest_call("GET", f"/job/{job}")
        if data is not None and data.get("jobs"):
            return read.job_fields(data["jobs"][0], LIVE_STATES)
        found = self._cli_json(["squeue", "-j", job], "jobs")      # Slurm 22.05 lists every job: filtered here
        if found is not None:
            return next((read.job_fields(j, LIVE_STATES) for j in found if str(j.get("job_id")) == job), None)
        # %M is the elapsed time as the controller counts it: no clock of this machine enters the limit.
        out = _run(["squeue", "-h", "-j", job, "-o", "%T|%N|%j|%k|%l|%M"])
        line = out.stdout.strip()
        if out.returncode != 0 or not line:
            return None
        state, node, name, comment, limit, elapsed = (line.split("|") + [""] * 6)[:6]
        return {"state": state, "node": node, "name": name, "comment": comment,
                "limit": str(_duration(limit) // 60), "elapsed": str(_duration(elapsed))}

    def _live(self, lease_id: str, token: str | None) -> dict[str, str]:
        if not lease_id.isdigit():
            raise StaleLease(f"no Slurm lease {lease_id} (lease ids are job ids)")
        if token is not None:
            cluster, _ = self.cluster()
            parts = token.split(":")
            if len(parts) != 3 or parts[0] != cluster or parts[1] != str(self.cluster()[1]) or parts[2] != lease_id:
                raise StaleLease(f"lease {lease_id}: token {token} is not its token")
        job = self._job(lease_id)
        if job is None or job["state"] not in LIVE_STATES:
            raise StaleLease(f"lease {lease_id}: job {lease_id} is {job['state'] if job else 'gone'}")
        if not job["name"].startswith("leases:"):
            # A job id is not a lease by itself: never renew or scancel someone else's allocation.
            raise StaleLease(f"job {lease_id} ({job['name']}) is not a lease")
        return job

    def renew(self, lease_id: str, token: str | None = None) -> Lease:
        job = self._live(lease_id, token)
        now = time.time()
        m = _TTL_COMMENT.search(job["comment"])
        ttl = float(m.group(1)) if m else 0.0
        detail = "job still running"
        if ttl:
            detail = self._push_limit(lease_id, job, ttl)
        lease = Lease(lease_id, self.name, job["node"], (), False, token or self._token_of(int(lease_id)),
                      int(lease_id), self.user, ttl, now, now + ttl, None, _purpose(job["name"]))
        self._audit("renew", lease, detail)
        return lease

    def _push_limit(self, lease_id: str, job: dict[str, str], ttl: float) -> str:
        """Set the job's end time to the controller's now plus the TTL (whole seconds), never past its maximum.

        A time limit is whole minutes; an end time is seconds, and slurmctld ends a job past its end
        time at its next time-limit check (LIMIT_CHECK_S), whatever the limit says."""
        # The start and elapsed time come from squeue (the controller's clock and count), REST has no elapsed.
        out = _run(["squeue", "-h", "-j", lease_id, "-o", "%M|%S|%k"])
        elapsed_s, start_s, comment = ((out.stdout.strip().splitlines() or [""])[0].split("|") + ["", "", ""])[:3]
        if out.returncode != 0 or not elapsed_s:
            raise StaleLease(f"lease {lease_id}: job {lease_id} is gone")
        try:
            start = datetime.fromisoformat(start_s)     # UTC, as `_run` has squeue and scontrol speak
        except ValueError:
            raise LeaseError(f"lease {lease_id}: squeue gave no start time for job {lease_id} ({start_s!r})") from None
        m = re.search(r"\bmax=([0-9.]+)", comment)
        want = _duration(elapsed_s) + math.ceil(ttl)
        if m:
            want = min(want, math.ceil(float(m.group(1))))
        end = (start + timedelta(seconds=want)).strftime("%Y-%m-%dT%H:%M:%S")
        upd = _run(["scontrol", "update", f"JobId={lease_id}", f"EndTime={end}"])
        if upd.returncode != 0:
            # Not renewed means the job ends at its current end time: the holder must know now, not then.
            raise LeaseError(f"lease {lease_id}: scontrol update EndTime={end} refused: "
                             f"{(upd.stderr or upd.stdout).strip()} (moving a job's end time may need "
                             f"Slurm operator rights)")
        return f"end time {end} (elapsed {elapsed_s} + TTL {ttl:g}s)"

    def release(self, lease_id: str, token: str | None = None) -> None:
        job = self._live(lease_id, token)
        if self._rest_call("DELETE", f"/job/{lease_id}") is None:
            out = _run(["scancel", lease_id])
            if out.returncode != 0:
                raise SlurmUnavailable(f"scancel {lease_id} failed: {out.stderr.strip()}")
        self._watch(f"-{lease_id}\n")
        now = time.time()
        self._audit("release", Lease(lease_id, self.name, job["node"], (), False, token or "", int(lease_id),
                                     self.user, 0.0, now, now), "scancel")

    def status(self) -> list[Lease]:
        found = self._cli_json(["squeue", "-u", self.user], "jobs")
        if found is not None:      # Slurm 22.05 lists every user's jobs: filtered here
            rows = [(str(j.get("job_id")), str(j.get("name", "")), str(j.get("nodes", "")), str(j.get("job_state", "")))
                    for j in found if self.user in (str(j.get("user_name")), str(j.get("user_id")))]
        else:
            out = _run(["squeue", "-h", "-u", self.user, "-o", "%i|%j|%N|%T"])
            rows = [tuple((line.split("|") + [""] * 4)[:4]) for line in out.stdout.splitlines()]  # type: ignore[misc]
        leases = []
        now = time.time()
        for job, name, node, state in rows:
            if name.startswith("leases:") and state in LIVE_STATES:
                slots, ttl, end = self._held(job)
                leases.append(Lease(job, self.name, node, slots, False, self._token_of(int(job)), int(job), self.user,
                                    ttl, now, now if end is None else end, None, _purpose(name)))
        return leases

    def _held(self, job: str) -> tuple[tuple[str, ...], float, float | None]:
        """What `status` shows of a lease's job: (its GPUs as slots, its TTL, the end Slurm will end it at as a
        Unix time, None where squeue gives none). A GRES no box can hold shows no slot, never a traceback."""
        out = _run(["squeue", "-h", "-j", job, "-o", "%e|%k"])
        end_s, comment = ((out.stdout.strip().splitlines() or [""])[0].split("|") + [""])[:2]
        m = _TTL_COMMENT.search(comment)
        try:     # UTC, as `_run` has squeue speak
            end: float | None = datetime.fromisoformat(end_s).replace(tzinfo=UTC).timestamp()
        except ValueError:
            end = None
        shown = _run(["scontrol", "show", "job", "-d", job])
        try:
            indices = read.gpu_indices(" ".join(re.findall(r"\bGRES=(\S+)", shown.stdout))) \
                if shown.returncode == 0 else None
        except LeaseError:
            indices = None
        return tuple(f"gpu{i}" for i in indices or []), float(m.group(1)) if m else 0.0, end

    # -- the client-side audit log (Slurm keeps its own accounting) ------------------------------------

    @contextlib.contextmanager
    def _audit_faults(self) -> Iterator[None]:
        # A folder where the file should be, corrupt pages, a full disk: a LeaseError naming the file, never a traceback.
        try:
            yield
        except (sqlite3.Error, OSError) as exc:
            self._tls.conn = None
            raise LeaseError(f"the lease audit file {self.audit_db} cannot be used: {exc}") from None

    def _audit_conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._tls, "conn", None)
        if conn is None:
            self.audit_db.parent.mkdir(parents=True, exist_ok=True)
            conn = wal.connect(self.audit_db, timeout=30.0)
            conn.execute("CREATE TABLE IF NOT EXISTS slurm_audit (seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL,"
                         " event TEXT, lease_id TEXT, box TEXT, slots TEXT, fence INTEGER, holder TEXT, detail TEXT)")
            self._tls.conn = conn
        return conn

    def _audit(self, event: str, lease: Lease, detail: str) -> None:
        with self._audit_faults():
            self._audit_conn().execute(
            "INSERT INTO slurm_audit (at, event, lease_id, box, slots, fence, holder, detail)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (time.time(), event, lease.id, lease.box, ",".join(lease.slots),
                                                     lease.fence, lease.holder, f"{lease.token} {detail}"))

    def audit(self, limit: int = 100) -> list[AuditEvent]:
        with self._audit_faults():
            rows = self._audit_conn().execute(
                "SELECT seq, at, event, lease_id, box, slots, fence, holder, detail FROM slurm_audit"
                " ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
        return [AuditEvent(r[0], r[1], r[2], r[3], r[4], tuple(s for s in r[5].split(",") if s), r[6], r[7], r[8])
                for r in reversed(rows)]

    # -- running ----------------------------------------------------------------------------------

    def why_cannot_run(self) -> str | None:
        return None

    def identity(self, lease: Lease, box: Box | None) -> dict[str, Any]:
        """The node's own answer, through a step of the allocation itself."""
        script = ("cat /proc/sys/kernel/random/boot_id; command -v nvidia-smi >/dev/null && nvidia-smi "
                  "--query-gpu=name,compute_cap,driver_version,uuid --format=csv,noheader || true")
        try:
            out = _run([*self.run_prefix(lease), "sh", "-c", script], timeout=60)
        except SlurmTimeout:
            raise LeaseError(f"lease {lease.id}: the identity step of job {lease.fence} did not answer in 60 s") from None
        lines = out.stdout.splitlines()
        gpus = []
        for line in lines[1:]:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 4:
                gpus.append({"name": parts[0], "sm": parts[1], "driver": parts[2], "uuid": parts[3]})
        labels = box.label_map if box else {}
        return {
            "boot_id": lines[0].strip() if out.returncode == 0 and lines else None,
            "gpus": gpus or [{"slot": s, "name": labels.get("gpu_model"), "sm": labels.get("sm")} for s in lease.slots
                             if s.startswith("gpu")],
            "driver": gpus[0]["driver"] if gpus else labels.get("driver"),
            "toolkit": labels.get("cuda"),
            "job_id": lease.fence,
            "cluster": lease.extra_map.get("cluster"),
        }

    def run_prefix(self, lease: Lease) -> list[str]:
        # Through `sh -c 'exec "$@"'`: slurmstepd reports a command it cannot start as exit 2 (the usage
        # code); the shell gives 127 or 126 as everywhere else.
        return ["srun", f"--jobid={lease.fence}", "--overlap", "--quiet", "-N1", "-n1", "--kill-on-bad-exit=1",
                "sh", "-c", 'exec "$@"', "leases"]

    def env(self, lease: Lease) -> dict[str, str]:
        return {"REDFIRST_LEASE_ID": lease.id, "REDFIRST_LEASE_TOKEN": lease.token, LEASE_BACKEND_ENV: self.name}

    def why_not_inside(self, lease_id: str) -> str | None:
        # A step of the job runs under the node's slurmstepd, which titles itself `slurmstepd: [JOB.STEP]`.
        for p in procs.ancestors():
            if procs.cmdline(p.pid).startswith(f"slurmstepd: [{lease_id}."):
                return None
        return (f"lease {lease_id} is Slurm job {lease_id}: this process (pid {os.getpid()}) does not run in one of "
                f"its steps (no slurmstepd of job {lease_id} among its ancestors), so it is not inside that lease")


def dead_client_bound(ttl: float, kill_wait: float) -> float:
    """Seconds after its last heartbeat by which Slurm itself ends a lease whose whole client tree died.

    The TTL (rounded up to a second: an end time is whole seconds, and one more for the elapsed
    time squeue reports in whole seconds), plus slurmctld's time-limit check period (a compiled-in
    30 s), plus KillWait (SIGTERM to SIGKILL of the steps)."""
    return math.ceil(ttl) + 1.0 + LIMIT_CHECK_S + kill_wait


def _minutes(seconds: float) -> int:
    """Seconds as a Slurm time limit: whole minutes, rounded up, at least one."""
    return max(1, math.ceil(seconds / 60.0))


def _duration(text: str) -> int:
    """Seconds of a Slurm duration `[days-][[hours:]minutes:]seconds` (squeue %M, %l); 0 for what is not one."""
    days, _, rest = text.strip().rpartition("-")
    try:
        parts = [int(x) for x in rest.split(":")]
        total = int(days) * 86400 if days else 0
    except ValueError:
        return 0
    if len(parts) > 3:
        return 0
    seconds = 0
    for p in parts:
        seconds = seconds * 60 + p
    return total + seconds


def _purpose(job_name: str) -> str:
    return _NONCE.sub("", job_name.removeprefix("leases:"))
