"""The slurm backend reads Slurm as Slurm users script it (issue 35 item 8): the JSON form of
squeue and sinfo where the installed Slurm has one (Debian 12's 22.05 does), the text form where
it has none; slurmrestd at the newest API version the server lists, not a fixed v0.0.38. Against
the real private Slurm on loopback (conftest.slurm_cluster)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from redfirst.leases import minislurm
from redfirst.leases.backends import slurm_read
from redfirst.leases.backends.slurm import SlurmBackend
from redfirst.leases.config import load
from redfirst.leases.model import LeaseRequest


def test_a_lease_whose_purpose_holds_a_bar_is_listed_and_renewed_by_its_ttl(slurm_repo: Path) -> None:
    # squeue's text columns are split on `|`: such a job name shifted the columns, so status
    # lost the lease and renew read no TTL (and did not push the job's end time).
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", ttl=45, max_runtime=120, purpose="build|test"), 60,
                      detached=True)
    try:
        listed = {x.id: x for x in b.status()}
        assert lease.id in listed, listed
        assert listed[lease.id].purpose == "build|test"
        renewed = b.renew(lease.id, lease.token)
        assert renewed.ttl == 45 and renewed.purpose == "build|test"
    finally:
        b.release(lease.id, lease.token)
    assert lease.id not in {x.id for x in b.status()}


def _no_json(folder: Path, log: Path) -> None:
    """`squeue` and `sinfo` of a Slurm without their JSON form (the real ones, refusing --json),
    each ask for it written to `log`: a stand-in, named as such, for an older Slurm."""
    folder.mkdir()
    for name in ("squeue", "sinfo"):
        real = next(p for p in os.environ["PATH"].split(os.pathsep) if (Path(p) / name).is_file())
        script = folder / name
        script.write_text(f'#!/bin/sh\nfor a in "$@"; do\n  if [ "$a" = --json ]; then\n'
                          f'    echo {name} >> {log}\n'
                          f'    echo "{name}: unrecognized option \'--json\'" >&2; exit 1\n  fi\ndone\n'
                          f'exec {real}/{name} "$@"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_where_slurm_has_no_json_form_the_text_form_is_read(slurm_repo: Path, slurm_exclusive: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    asked = tmp_path / "asked-json"
    _no_json(tmp_path / "bin", asked)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    (slurm_repo / "redfirst.yaml").write_text("leases:\n  backend: slurm\n")      # no REST: the CLI only
    b = SlurmBackend(load(slurm_repo))
    box = next(x for x in b.boxes() if x.name == slurm_exclusive)
    assert box.label_map["gpu_model"] == "h200"
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", ttl=45, max_runtime=120, purpose="plain"), 60,
                      detached=True)
    try:
        assert lease.slots == ("gpu0",)
        assert lease.id in {x.id for x in b.status()}
        assert b.renew(lease.id, lease.token).ttl == 45
    finally:
        b.release(lease.id, lease.token)
    # Asked once per command, then read as text: not a second process for every read.
    assert sorted(asked.read_text().split()) == ["sinfo", "squeue"]


def _newer_shape(folder: Path, log: Path) -> None:
    """`squeue` and `sinfo` whose JSON is in a shape this backend does not read: the real
    document, its meta and job states as Slurm 23.02 and later print them (`data_parser/v0.0.40`,
    `job_state: ["RUNNING"]`). A stand-in, named as such, for a newer Slurm."""
    folder.mkdir()
    for name in ("squeue", "sinfo"):
        real = next(p for p in os.environ["PATH"].split(os.pathsep) if (Path(p) / name).is_file())
        script = folder / name
        script.write_text(
            f"#!{sys.executable}\nimport json, subprocess, sys\n"
            f"out = subprocess.run([{str(Path(real) / name)!r}, *sys.argv[1:]], capture_output=True, text=True)\n"
            f"if '--json' not in sys.argv or out.returncode:\n"
            f"    sys.stdout.write(out.stdout); sys.stderr.write(out.stderr); sys.exit(out.returncode)\n"
            f"open({str(log)!r}, 'a').write({name!r} + '\\n')\n"
            f"doc = json.loads(out.stdout)\n"
            f"doc['meta'] = {{'plugins': {{'data_parser': 'data_parser/v0.0.40'}}}}\n"
            f"for j in doc.get('jobs', []):\n    j['job_state'] = [j['job_state']]\n"
            f"print(json.dumps(doc))\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_json_of_a_shape_this_backend_does_not_read_is_left_for_the_text_form(
        slurm_repo: Path, slurm_exclusive: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Read as v0.0.38, the newer `job_state: ["RUNNING"]` is no live state: the lease vanished
    # from status and renew took it for ended.
    asked = tmp_path / "asked-json"
    _newer_shape(tmp_path / "bin", asked)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    (slurm_repo / "redfirst.yaml").write_text("leases:\n  backend: slurm\n")
    b = SlurmBackend(load(slurm_repo))
    lease = b.acquire(LeaseRequest(select="gpu_model=h200", ttl=45, max_runtime=120, purpose="newer"), 60,
                      detached=True)
    try:
        assert lease.id in {x.id for x in b.status()}
        assert b.renew(lease.id, lease.token).ttl == 45
    finally:
        b.release(lease.id, lease.token)
    assert sorted(asked.read_text().split()) == ["sinfo", "squeue"]


def test_the_rest_api_version_is_the_newest_the_server_lists(slurm_repo: Path, slurm_cluster) -> None:
    if slurm_cluster.rest is None:
        pytest.skip("slurmrestd is not installed") if not os.environ.get("CI") else pytest.fail("no slurmrestd")
    # A server of another release: v0.0.36 and v0.0.37 only (a fixed v0.0.38 read nothing from it).
    with minislurm.other_rest(slurm_cluster, "openapi/v0.0.36,openapi/v0.0.37") as url:
        (slurm_repo / "redfirst.yaml").write_text(f'leases:\n  backend: slurm\n  slurm: {{rest: "{url}"}}\n')
        b = SlurmBackend(load(slurm_repo))
        nodes = b._nodes_rest()
        assert nodes is not None and [n["name"] for n in nodes] == [slurm_cluster.node]
        assert b.rest_api() == "/slurm/v0.0.37"
    # The session's own server lists v0.0.38.
    (slurm_repo / "redfirst.yaml").write_text(f'leases:\n  backend: slurm\n  slurm: {{rest: "{slurm_cluster.rest}"}}\n')
    assert SlurmBackend(load(slurm_repo)).rest_api() == "/slurm/v0.0.38"


@pytest.mark.parametrize("paths, chosen", [
    (["/slurm/v0.0.36/nodes", "/slurm/v0.0.38/nodes", "/slurm/v0.0.37/ping"], "v0.0.38"),
    (["/slurm/v0.0.40/nodes", "/slurm/v0.0.37/nodes", "/openapi/v3"], "v0.0.37"),
    (["/slurm/v0.0.41/nodes", "/slurmdb/v0.0.38/jobs"], None),
])
def test_the_version_chosen_is_one_the_listing_offers_and_this_backend_reads(paths, chosen) -> None:
    assert slurm_read.rest_version({"paths": dict.fromkeys(paths, {})}) == chosen


@pytest.mark.parametrize("gres", ["gpu:h200:1(IDX:0-999999999999)", "gpu:1(IDX:4097)", "gpu:1(IDX:3-1)",
                                  "gpu:1(IDX:0,0)"])
def test_a_gres_index_list_no_box_can_hold_is_refused_at_once(gres: str) -> None:
    """A job's GPU indices (squeue's gres_detail, scontrol's GRES=) are a box's slots: a range of 10**12 was a
    list that never finished building (a hang eating memory, as a box of 10**12 declared GPUs was), a
    descending range gave the lease no slot at all, a repeated index one slot twice (round 4 of issue 34)."""
    from redfirst.leases.model import LeaseError

    with pytest.raises(LeaseError, match="GRES"):
        slurm_read.gpu_indices(gres)
    assert slurm_read.gpu_indices("gpu:h200:2(IDX:0-1),gpu:1(IDX:3)") == [0, 1]
    assert slurm_read.gpu_indices("gpu:h200:3(IDX:0,2-3)") == [0, 2, 3]


@pytest.mark.parametrize("stdout", ["[" * 100_000 + "]" * 100_000,
                                    '{"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "jobs": [], "jobs": [{"a": 1}]}'])
def test_a_json_document_past_the_loaders_bounds_is_read_as_no_json_form(stdout: str) -> None:
    """`squeue --json` / `sinfo --json` go through the one bounded JSON loader: nested 100,000 deep (a squeue
    wrapper, another build's plugin) it was a RecursionError traceback; a key written twice was read as its
    second value (round 4 of issue 34). Either is a document this backend does not read: the text form."""
    import subprocess

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 0, stdout, "")

    missing: set[str] = set()
    assert slurm_read.cli_json(run, ["squeue"], "jobs", missing) is None and missing == {"squeue"}


def test_slurmrestd_answers_past_the_loaders_bounds_are_no_answer(repo: Path, lease_db: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """slurmrestd's answers go through the one bounded JSON loader: an OpenAPI listing nested 100,000 deep (a
    server on the configured URL, over real HTTP on loopback) was a RecursionError traceback out of every
    command (round 4 of issue 34); now it is no answer, and the backend reads the Slurm CLI."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = ("[" * 100_000 + "]" * 100_000).encode()

    class Deep(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Deep)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("SLURM_JWT", "jwt-for-the-test")
        (repo / "redfirst.yaml").write_text(
            f"leases:\n  backend: slurm\n  slurm: {{rest: 'http://127.0.0.1:{server.server_port}'}}\n")
        assert SlurmBackend(load(repo)).rest_api() is None
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("drip", [False, True], ids=["endless", "drip"])
def test_a_slurmrestd_answer_that_never_ends_is_no_answer_within_its_bound(
        repo: Path, lease_db: Path, monkeypatch: pytest.MonkeyPatch, drip: bool) -> None:
    """A server on slurmrestd's URL sending without end (memory grew until the machine killed the client) or a
    byte at a time (requests' 10 s timeout bounds each read, never the answer): no answer once it passes
    slurm_read.ANSWER_BYTES or ANSWER_SECONDS (1 s here), the sibling of the resource controller's."""
    import contextlib
    import threading
    import time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Endless(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(2**40))
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(600 if drip else 1024):
                    self.wfile.write(b" " if drip else b" " * 2**20)
                    if drip:
                        self.wfile.flush()
                        time.sleep(0.05)

    monkeypatch.setattr(slurm_read, "ANSWER_SECONDS", 1.0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("SLURM_JWT", "jwt-for-the-test")
        (repo / "redfirst.yaml").write_text(
            f"leases:\n  backend: slurm\n  slurm: {{rest: 'http://127.0.0.1:{server.server_port}'}}\n")
        start = time.monotonic()
        assert SlurmBackend(load(repo)).rest_api() is None
        assert time.monotonic() - start < 10
    finally:
        server.shutdown()
        server.server_close()
