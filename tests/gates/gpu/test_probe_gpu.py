"""`gates probe` on a real device: re-begin is legal on the H200, identity is complete."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu


def _gates(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "redfirst.gates.cli", *args], capture_output=True, text=True, timeout=120)


def test_probe_rebegin_is_legal_with_three_replays() -> None:
    p = subprocess.run([sys.executable, "-m", "redfirst.gates.cuda.probe", "rebegin", "--json"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert doc["legal"] is True and doc["exit"] == 0
    assert [r["differing"] for r in doc["replays"]] == [0, 0, 0]
    assert all(r["values"] == 1 << 16 for r in doc["replays"])
    assert any("zero-work" in s["what"] for s in doc["steps"])


def test_gates_cli_probe_rebegin_exits_0() -> None:
    p = _gates("probe", "rebegin")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "LEGAL on" in p.stdout


def test_gates_probe_device_prints_identity() -> None:
    p = subprocess.run([sys.executable, "-m", "redfirst.gates.cuda.probe", "device", "--json"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    device = json.loads(p.stdout)["device"]
    assert device["name"] and device["compute_capability"] and device["driver_api"] and device["runtime"]
    assert device["uuid"].startswith("GPU-")
