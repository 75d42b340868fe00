"""What the gate-engine tests share: a project in a tmp folder, the `gates` command run on it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

# -P: the project folder `gates/` (gate files) must not shadow the installed package.

# -P: the project folder `gates/` (gate files) must not shadow the installed package.
GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]


def project(tmp_path: Path, gates_yaml: str, files: dict[str, str] | None = None) -> Path:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(textwrap.dedent(gates_yaml))
    for name, text in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def gates(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GATES, *args, "--root", str(root)] if args and args[0] in (
        "run", "check", "list", "gc", "proofs") else [*GATES, *args], capture_output=True, text=True,
        timeout=timeout, cwd=root)


def run_json(root: Path, *ids: str) -> tuple[int, dict[str, dict[str, Any]]]:
    proc = gates(root, "run", "--json", "-q", *ids)
    doc = json.loads(proc.stdout)
    assert doc["version"] == 1 and doc["exit"] == proc.returncode, proc.stderr
    return proc.returncode, {item["id"]: item for item in doc["items"]}


def evidence_line(record: dict[str, Any]) -> str:
    return f"echo '{json.dumps(record)}' >> \"$GATES_EVIDENCE/evidence.jsonl\""


COUNTER_WRITER = """
import json, os, sys
with open(os.path.join(os.environ["GATES_EVIDENCE"], "evidence.jsonl"), "a") as f:
    f.write(json.dumps({"counter": sys.argv[1], "value": int(sys.argv[2])}) + "\\n")
"""


def one_record(root: Path) -> Path:
    (folder,) = (root / ".redfirst" / "evidence").iterdir()
    return folder
