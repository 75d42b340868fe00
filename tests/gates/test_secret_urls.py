"""The password of a URL in any variable is a secret (issue 34, third round): `DATABASE_URL`,
`PIP_INDEX_URL` or `HTTPS_PROXY` carry credentials as `scheme://user:password@host` under names no
secret pattern matches, and a gate that printed one stored the password in its record. Real
`gates run` over a real command gate in a git project written here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from redfirst import scrub

PASSWORD = "s3cret-Passw0rd"
URL = f"postgres://ci:{PASSWORD}@db.internal:5432/app"


def test_the_password_of_a_url_in_any_variable_is_scrubbed() -> None:
    assert PASSWORD in scrub.secret_values({"DATABASE_URL": URL, "HOME": "/root"})
    assert scrub.secret_values({"SITE": "https://example.org/a:b@c", "HOME": "/root"}) == ()


def test_a_gate_printing_a_database_url_stores_no_password(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(
        'gate: g\ndriver: {type: command, run: "echo $DATABASE_URL; echo 1 passed, 0 failed", format: plain}\n')
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], cwd=root, check=True)
    env = {**os.environ, "DATABASE_URL": URL}
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "--json", "--root", str(root)],
                          capture_output=True, text=True, cwd=root, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stored = [p for p in (root / ".redfirst").rglob("*") if p.is_file()]
    assert any("postgres://ci:" in p.read_text(errors="replace") for p in stored)  # the URL was stored...
    leaked = [str(p) for p in stored if PASSWORD.encode() in p.read_bytes()]
    assert leaked == [] and PASSWORD not in proc.stdout + proc.stderr, leaked  # ...its password never
