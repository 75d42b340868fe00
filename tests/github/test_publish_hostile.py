"""`publish` over a hostile document file (issue 34, third round): a FIFO hung the publish step
(reading waited for a writer for ever) and a deeply nested document was a RecursionError
traceback. Each is ERROR, exit 2, the file named: no document is never a pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.github.test_publish import actions_env, outputs, parsed


@pytest.mark.parametrize("kind", ["fifo", "deep", "twice"])
def test_a_hostile_document_is_an_error_never_a_hang_or_traceback(tmp_path: Path, kind: str) -> None:
    doc = tmp_path / "doc.json"
    if kind == "fifo":
        os.mkfifo(doc)
    elif kind == "deep":
        doc.write_text('{"items":\n' + "[" * 100_000 + "]" * 100_000 + "}")
    else:  # the second `items` (passing) would silently win over the first (failing)
        doc.write_text('{"exit": 0, "items": [{"id": "g", "verdict": "RED"}],\n "items": []}\n')
    run = subprocess.run([sys.executable, "-m", "redfirst.gates.github", "publish", str(doc), "--exit-status", "0"],
                         capture_output=True, text=True, env=actions_env(tmp_path, tmp_path), cwd=tmp_path,
                         timeout=60)  # a bound on the hang (the defect), not a timed assertion
    assert "Traceback" not in run.stderr and run.returncode == 2, run.stderr
    (level, _props, message), = parsed(run.stderr)
    assert level == "error" and str(doc) in message, message
    assert outputs(tmp_path / "output.txt")["verdict"] == "ERROR"
