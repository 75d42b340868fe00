"""Secret values are scrubbed from everything stored (stdout, stderr, build output, JUnit XML,
evidence, the record itself) before sealing, and `gates regrade` still reproduces the verdict.
Real `gates` processes over real gate files in tmp folders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
DECLARED = "s3cr3t-declared-9f2"
INHERITED = "ghp_inheritedTOKENvalue77"

PROGRAM = textwrap.dedent("""\
    import os, sys
    secret, inherited = os.environ["API_TOKEN"], os.environ.get("GITHUB_TOKEN", "")
    ev = os.environ["GATES_EVIDENCE"]
    with open(os.path.join(ev, "evidence.jsonl"), "w") as f:
        f.write('{"counter": "c", "value": 3}\\n{"counter": "seen-%s", "value": 1}\\n' % secret)
    with open(os.path.join(ev, "log.txt"), "w") as f:
        f.write("evidence log " + secret + " " + inherited + "\\n")
    with open(os.path.join(ev, "raw.bin"), "wb") as f:
        f.write(b"\\xff\\xfe" + secret.encode() + b"\\x00\\x01")
    with open("report.xml", "w") as f:
        f.write('<testsuite tests="1" failures="0" errors="0" skipped="0"><testcase name="t" classname="c" time="0.01">'
                '<system-out>token=%s</system-out></testcase></testsuite>\\n' % secret)
    print("the token is", secret, "and", inherited)
    print("token again:", secret, file=sys.stderr)
""")


def project(tmp_path: Path, gate: str) -> Path:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(textwrap.dedent(gate))
    (root / "prog.py").write_text(PROGRAM)
    return root


def gates(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GATES, *args, "--root", str(root)], capture_output=True, text=True, timeout=120,
                          cwd=root, env={**os.environ, **(env or {})})


def stored_bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def the_record(root: Path) -> Path:
    (folder,) = (root / ".redfirst" / "evidence").iterdir()
    return folder


def items(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in json.loads(proc.stdout)["items"]}


def test_secret_values_are_scrubbed_from_every_stored_file_and_regrade_agrees(tmp_path: Path) -> None:
    root = project(tmp_path, f"""
        gate: leaky
        build: "echo building with {DECLARED}"
        driver:
          type: command
          run: [python3, prog.py]
          format: junit
          junit: report.xml
          env: {{API_TOKEN: "{DECLARED}", MODE: fast}}
        assert: {{counters: {{c: {{min: 1}}}}}}
    """)
    proc = gates(root, "run", "--json", "-q", env={"GITHUB_TOKEN": INHERITED})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert items(proc)["leaky"]["verdict"] == "GREEN"
    folder = the_record(root)
    files = stored_bytes(folder)
    for name in ("stdout", "stderr", "build.out", "junit.xml", "evidence/evidence.jsonl", "evidence/log.txt",
                 "evidence/raw.bin", "record.json"):
        assert name in files, sorted(files)
    for name, data in files.items():
        assert DECLARED.encode() not in data and INHERITED.encode() not in data, f"{name} holds a secret"
    assert files["stdout"].decode() == "the token is REDACTED and REDACTED\n"
    assert b"token=REDACTED" in files["junit.xml"] and b"with REDACTED" in files["build.out"]
    # A binary file keeps its length (a tensor's shape): the secret becomes as many '*'.
    assert files["evidence/raw.bin"] == b"\xff\xfe" + b"*" * len(DECLARED) + b"\x00\x01"
    record = json.loads(files["record.json"])
    assert record["context"]["secrets_scrubbed"]
    assert record["env"]["API_TOKEN"] == "<redacted>" and record["env"]["MODE"] == "fast"
    # Regrade reproduces the verdict from the scrubbed record (its id is the hash of what is stored).
    again = gates(root, "regrade", folder.name)
    assert again.returncode == 0 and "GREEN" in again.stdout, again.stdout + again.stderr


def test_a_short_secret_is_left_alone_rather_than_blanking_every_digit(tmp_path: Path) -> None:
    root = project(tmp_path, """
        gate: short
        driver:
          type: command
          run: "echo '12 passed, 0 failed'; echo the key is $API_KEY"
          format: plain
          env: {API_KEY: "12"}
        assert: {cases: {min: 12}}
    """)
    proc = gates(root, "run", "--json", "-q")
    assert proc.returncode == 0 and items(proc)["short"]["counts"]["cases"] == 12, proc.stdout + proc.stderr
    folder = the_record(root)
    assert (folder / "stdout").read_text() == "12 passed, 0 failed\nthe key is 12\n"
    assert gates(root, "regrade", folder.name).returncode == 0
