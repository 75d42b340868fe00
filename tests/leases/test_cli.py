"""The `leases` command, run as a user runs it (the console script, real processes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from redfirst.leases.config import ConfigError, load


def leases(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("leases") or str(Path(sys.executable).with_name("leases"))
    return subprocess.run([exe, "--root", str(root), *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def root(repo: Path, lease_db: Path) -> Path:
    (repo / "redfirst.yaml").write_text("leases:\n  boxes:\n    thor: {gpus: 2, labels: {gpu_model: h200}}\n")
    return repo


def test_run_exits_with_the_command_status_and_streams_its_output(root: Path) -> None:
    out = leases(root, "run", "--box", "thor", "--gpus", "1", "--", "sh", "-c",
                 'echo "visible=$CUDA_VISIBLE_DEVICES"; echo oops >&2; exit 9')
    assert out.returncode == 9
    assert "visible=0" in out.stdout and "oops" in out.stderr


def test_run_not_granted_in_time_exits_75(root: Path) -> None:
    held = leases(root, "acquire", "thor", "--whole-box", "--ttl", "30")
    assert held.returncode == 0
    lease_id, token = held.stdout.split()
    t0 = time.monotonic()
    out = leases(root, "run", "--select", "gpu_model=h200", "--wait", "0.5", "--", "true")
    assert out.returncode == 75 and "busy" in out.stderr and time.monotonic() - t0 < 10
    assert leases(root, "release", lease_id, "--token", token).returncode == 0
    assert leases(root, "run", "--select", "gpu_model=h200", "--", "true").returncode == 0


def test_stale_token_is_refused_by_renew_release_and_run(root: Path) -> None:
    lease_id, token = leases(root, "acquire", "thor", "--ttl", "0.3").stdout.split()
    time.sleep(0.5)
    newer = leases(root, "acquire", "thor", "--ttl", "30").stdout.split()
    renew = leases(root, "renew", lease_id, "--token", token)
    assert renew.returncode == 1 and "superseded" in renew.stderr
    assert leases(root, "release", lease_id, "--token", token).returncode == 1
    exe = [sys.executable, "-m", "redfirst.leases.exec", "--db", str(root.parent / "state" / "leases.db"),
           "--lease", lease_id, "--token", token, "--", "echo", "ran"]
    ran = subprocess.run(exe, capture_output=True, text=True)
    assert ran.returncode == 75 and "ran" not in ran.stdout
    assert leases(root, "release", newer[0], "--token", newer[1]).returncode == 0


@pytest.mark.parametrize(("args", "message"), [
    (("run", "--select", "gpu_model==h200", "--", "true"), "bad selector"),
    (("run", "--box", "nowhere", "--", "true"), "no box named 'nowhere'"),
    (("run", "--select", "gpu_model=a100", "--", "true"), "no box has label gpu_model=a100"),
    (("run", "--box", "thor"), "needs a command"),
    (("acquire", "thor", "--gpus", "3"), "gpus>=3"),
])
def test_usage_errors_exit_2_with_a_message(root: Path, args: tuple[str, ...], message: str) -> None:
    out = leases(root, *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr


def test_config_error_names_file_and_line(repo: Path, lease_db: Path) -> None:
    (repo / "redfirst.yaml").write_text("gates: {}\nleases:\n  backend: local\n  bakend: slurm\n")
    out = leases(repo, "boxes")
    assert out.returncode == 2 and f"{repo / 'redfirst.yaml'}:4: leases.bakend: unknown key" in out.stderr


def test_boxes_status_and_audit(root: Path) -> None:
    boxes = json.loads(leases(root, "--json", "boxes", "--select", "gpu_model=H200").stdout)["boxes"]
    assert [b["name"] for b in boxes] == ["thor"] and boxes[0]["slots"] == ["gpu0", "gpu1"]
    lease_id, token = leases(root, "acquire", "--select", "gpu_model=h200", "--gpus", "2").stdout.split()
    status = json.loads(leases(root, "--json", "status").stdout)["leases"]
    assert [(x["id"], x["token"]) for x in status] == [(lease_id, token)]
    assert leases(root, "renew", lease_id).returncode == 0
    assert leases(root, "release", lease_id).returncode == 0
    events = json.loads(leases(root, "--json", "audit").stdout)["events"]
    assert [e["event"] for e in events] == ["grant", "renew", "release"]
    assert "grant" in leases(root, "audit").stdout


def leases_cli(root: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redfirst.leases.cli", "--root", str(root), *args],
                          capture_output=True, text=True, timeout=timeout)


# -- bad input: a clear message and exit 2, never a traceback ------------------------------------------


@pytest.mark.parametrize("args", [
    ("--ttl", "nan"), ("--ttl", "inf"), ("--max-runtime", "-1"), ("--max-runtime", "0"), ("--ttl", "0"),
])
def test_bad_numbers_for_leases_run_are_usage_errors(repo: Path, lease_db: Path, args: tuple[str, str]) -> None:
    out = leases_cli(repo, "run", "--box", "local", *args, "--", "sh", "-c", "echo ran")
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and "ran" not in out.stdout


@pytest.mark.parametrize("limit", ["99999999999999999999", "-99999999999999999999", "-1"])
def test_an_audit_limit_sqlite_cannot_hold_is_a_usage_error(repo: Path, lease_db: Path, limit: str) -> None:
    out = leases_cli(repo, "audit", "--limit", limit)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and "--limit" in out.stderr


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



def inproc(capfd: pytest.CaptureFixture[str], root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `leases` entry point in this process (its commands still run as real processes), output captured."""
    from redfirst.leases import cli

    code = cli.main(["--root", str(root), *args])
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)

def test_a_secret_in_a_purpose_never_reaches_the_lease_file_or_any_output(root: Path, lease_db: Path,
                                                                          monkeypatch: pytest.MonkeyPatch,
                                                                          capfd: pytest.CaptureFixture[str]) -> None:
    """`--purpose` is free text stored in the audit: a token or password the caller pasted there (or a
    URL carrying one) was kept in the lease file and printed by `audit` and `status` (round 4 of issue 34)."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_RoundFourSecret1")
    monkeypatch.setenv("DEPLOY_PASS", "p&ss<w>rd-42")
    purpose = "deploy ghp_RoundFourSecret1 with p&ss<w>rd-42 to https://u:hunter2hunter@host/x"
    held = inproc(capfd, root, "acquire", "thor", "--gpus", "1", "--purpose", purpose)
    assert held.returncode == 0, held.stderr
    ran = inproc(capfd, root, "run", "--box", "thor", "--gpus", "1", "--purpose", purpose, "--", "true")
    assert ran.returncode == 0, ran.stderr
    shown = "".join(inproc(capfd, root, *cmd).stdout for cmd in (("audit",), ("audit", "--json"), ("status",),
                                                              ("status", "--json")))
    stored = b"".join(p.read_bytes() for p in lease_db.parent.iterdir() if p.is_file())
    assert "deploy REDACTED with REDACTED" in shown
    for secret in ("ghp_RoundFourSecret1", "p&ss<w>rd-42", "hunter2hunter"):
        assert secret not in shown and secret.encode() not in stored, secret


def test_the_projects_own_secret_names_are_scrubbed_from_a_purpose_and_the_messages(
        repo: Path, lease_db: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """`secrets: {names: [...]}` in redfirst.yaml applies to a lease purpose and to what leases says, as it
    does to a gate's record: only the default secret-looking names were scrubbed there (round 5 of issue 34)."""
    (repo / "redfirst.yaml").write_text("secrets: {names: [SIGNING_MATERIAL]}\nleases:\n  boxes:\n    thor: {gpus: 1}\n")
    monkeypatch.setenv("SIGNING_MATERIAL", "vault-Unlock-5150")
    purpose = "sign with vault-Unlock-5150"
    held = inproc(capfd, repo, "acquire", "thor", "--whole-box", "--purpose", purpose)
    assert held.returncode == 0, held.stderr
    busy = inproc(capfd, repo, "run", "--json", "--box", "thor", "--gpus", "1", "--purpose", purpose, "--", "true")
    assert busy.returncode == 75
    monkeypatch.setenv("RC_URL", "http://ci:vault-Unlock-5150@127.0.0.1:9")
    shown = "".join(p.stdout + p.stderr for p in [held, busy] + [inproc(capfd, repo, *cmd) for cmd in (
        ("audit",), ("audit", "--json"), ("status",), ("status", "--json"))])
    stored = b"".join(p.read_bytes() for p in lease_db.parent.iterdir() if p.is_file())
    assert "sign with REDACTED" in shown
    assert "vault-Unlock-5150" not in shown and b"vault-Unlock-5150" not in stored


def test_a_purpose_never_prints_a_line_of_its_own_in_audit_or_status(root: Path, capfd: pytest.CaptureFixture[str]
                                                                     ) -> None:
    """A purpose holding a newline and an escape sequence printed a forged `grant` line (in red) in `leases
    audit` (round 5 of issue 34): each event is one line, its control characters escaped."""
    forged = "2026-12-07T00:00:00.000Z grant    forged.1  thor gpu1 fence 9"
    purpose = f"x\n{forged}\x1b[31m\u2028\r"
    assert inproc(capfd, root, "acquire", "thor", "--purpose", purpose).returncode == 0
    for cmd in (("audit",), ("status",)):
        lines = inproc(capfd, root, *cmd).stdout.splitlines()
        assert not [line for line in lines if line.startswith(forged)], lines
        assert "\x1b" not in "".join(lines) and "\r" not in "".join(lines) and "\u2028" not in "".join(lines)
        assert any("x\\n2026-12-07T00:00:00.000Z grant" in line for line in lines), lines


def test_run_json_tells_a_lease_not_granted_from_a_command_that_exits_75(root: Path,
                                                                        capfd: pytest.CaptureFixture[str]) -> None:
    """DESIGN fixes 75 for "no lease granted in time", and a command may exit 75 itself (EX_TEMPFAIL): the
    exit status alone cannot tell them apart, so `leases run --json` prints one document saying whether a lease
    was granted, on which box, and the command's own status (its stdout goes to stderr, leaving stdout to the
    document), and without --json stderr says which it was (Part B of round 4 of issue 34)."""
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("redfirst.gates").joinpath("schema/output.schema.json").read_text())
    ran = inproc(capfd, root, "run", "--json", "--box", "thor", "--gpus", "1", "--", "sh", "-c", "echo out; exit 75")
    doc = json.loads(ran.stdout)
    jsonschema.validate(doc, schema)
    assert ran.returncode == 75 and "out" in ran.stderr, ran.stderr
    assert doc["command"] == "leases run" and doc["exit"] == 75 and doc["granted"] is True and doc["status"] == 75
    assert doc["lease"]["box"] == "thor" and doc["lease"]["slots"] == ["gpu0"]
    plain = inproc(capfd, root, "run", "--box", "thor", "--gpus", "1", "--", "sh", "-c", "exit 75")
    assert plain.returncode == 75 and "the command itself exited 75" in plain.stderr, plain.stderr

    held = inproc(capfd, root, "acquire", "thor", "--whole-box", "--ttl", "30")
    lease_id, token = held.stdout.split()
    refused = inproc(capfd, root, "run", "--json", "--box", "thor", "--wait", "0.3", "--", "sh", "-c", "echo out; exit 75")
    doc = json.loads(refused.stdout)
    jsonschema.validate(doc, schema)
    assert refused.returncode == 75 and "out" not in refused.stdout + refused.stderr
    assert doc["exit"] == 75 and doc["granted"] is False and doc["status"] is None and doc["lease"] is None
    assert "not granted" in " ".join(doc["errors"])
    plain = inproc(capfd, root, "run", "--box", "thor", "--wait", "0.3", "--", "true")
    assert plain.returncode == 75 and "the command never ran" in plain.stderr, plain.stderr
    assert inproc(capfd, root, "release", lease_id, "--token", token).returncode == 0


@pytest.mark.parametrize("config", ["secrets: {names: SIGNING_MATERIAL}\n", "secrets: [SIGNING_MATERIAL]\n",
                                    "secrets: {names: [SIGNING_MATERIAL, 7]}\n"])
def test_a_secrets_section_of_another_shape_is_refused_not_read_as_no_names(
        repo: Path, lease_db: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
        config: str) -> None:
    """`secrets: {names: SIGNING_MATERIAL}` (a string where the list goes) was read as no names: the purpose was
    stored with the secret in it. The one reader refuses the section at its line (exit 2), before anything."""
    (repo / "redfirst.yaml").write_text(config + "leases:\n  boxes:\n    thor: {gpus: 1}\n")
    monkeypatch.setenv("SIGNING_MATERIAL", "vault-Unlock-5150")
    got = inproc(capfd, repo, "run", "--box", "thor", "--purpose", "sign with vault-Unlock-5150", "--", "true")
    assert got.returncode == 2 and f"{repo / 'redfirst.yaml'}:1: " in got.stderr and "secrets" in got.stderr, \
        got.stderr
    stored = b"".join(p.read_bytes() for p in lease_db.parent.iterdir() if p.is_file()) if lease_db.parent.exists() \
        else b""
    assert b"vault-Unlock-5150" not in stored
