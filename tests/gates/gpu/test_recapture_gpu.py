"""The recapture that tells kernel selection from staleness (issue 38, item 5) is made by a step
the factory builds anew: a step that keeps a value from its first capture (here a host scalar it
caches while a capture is open) would reproduce its own stale replay in a second capture of the
same object, and `max_ulp` would pass it as "within N ULP". Device only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from redfirst.gates.drivers.cuda_graph import DRIVER, grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.verdict import Verdict

pytestmark = pytest.mark.gpu

FACTORY = '''\
import torch
from torch import nn

from redfirst.gates.cuda.torch_step import Native, Tensor


class CachesAtCapture(nn.Module):
    """Scales by a host scalar; the scalar seen at its first capture is kept for every later capture."""

    def __init__(self):
        super().__init__()
        self.kept = None

    def forward(self, x, scale):
        if torch.cuda.is_current_stream_capturing():
            if self.kept is None:
                self.kept = scale
            scale = self.kept
        return {"y": x * scale}


def build(variant, shape):
    # scales one ULP of 1.0 apart per seed: a stale one is a few ULP off, inside a generous max_ulp
    return Native(CachesAtCapture().cuda().eval(), {"x": Tensor(tuple(shape))},
                  host=lambda seed: {"scale": 1.0 + (seed % 7) * 2.0 ** -23})
'''


def _gate(max_ulp: int | None = None) -> Gate:
    options: list[tuple[str, Any]] = [("capture", "torch"), ("replays", 3), ("repeat_eager", 2),
                                      ("shapes", ((64,),)), ("variants", ("cached",)), ("warmup", 1)]
    if max_ulp is not None:
        options.append(("max_ulp", max_ulp))
    return Gate(id="cached", source=Source(Path("g.yaml"), 1),
                driver=DriverSpec(type="cuda-graph", run="caches_at_capture:build", options=tuple(sorted(options))))


def test_a_step_that_keeps_its_first_captures_value_is_stale_whatever_max_ulp_says(tmp_path: Path) -> None:
    (tmp_path / "caches_at_capture.py").write_text(FACTORY)
    inv = DRIVER.invocation(_gate(), tmp_path, tmp_path / "ev")
    (tmp_path / "ev").mkdir()
    env = {**os.environ, **dict(inv.env), "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run(inv.argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    observations = [json.loads(line) for line in (tmp_path / "ev" / "evidence.jsonl").read_text().splitlines()
                    if '"observation"' in line]
    red = grade(_gate(), observations)
    assert red.verdict is Verdict.RED and "(fresh inputs)" in red.reason, red.reason
    outcome = grade(_gate(max_ulp=1000), observations)
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert "a stale capture" in outcome.reason, outcome.reason
