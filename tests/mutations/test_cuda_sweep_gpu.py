"""`mutate sweep` over a CUDA change on the device machine (issue 37, item 5): tree-sitter's
mutants of the changed lines of a `.cu` file, each compiled with `nvcc` and the build's own
flags (from the depfile's make rule) before any gate runs, the rest graded by a real CUDA gate:
a TAP-printing test program the gate's `make` builds with nvcc and runs on the GPU.

The sweep's --json document goes to $REDFIRST_EVIDENCE_OUT/cuda-sweep/ when that is set
(docs/evidence/cuda-sweep/)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

MUTATE = [sys.executable, "-P", "-m", "redfirst.mutations.cli"]

HEADER = "void scale(float* host, int n, float k);\n"
BEFORE = """\
#include "scale.h"
__global__ void scale_kernel(float* x, int n, float k) {
  int i = threadIdx.x;
  x[i] = x[i] * 2.0f;
}
void scale(float* host, int n, float k) {
  float* d = nullptr;
  cudaMalloc(&d, n * sizeof(float));
  cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyHostToDevice);
  scale_kernel<<<(n + 127) / 128, 128>>>(d, n, k);
  cudaMemcpy(host, d, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d);
}
"""
# The change under review: the kernel's index and its bound (lines 3 and 4).
AFTER = BEFORE.replace("  int i = threadIdx.x;\n  x[i] = x[i] * 2.0f;\n",
                       "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = x[i] * k;\n")
TEST = """\
#include <cstdio>
#include "scale.h"
int main() {
  static float a[1000];
  for (int i = 0; i < 1000; i++) a[i] = (float)i;
  scale(a, 1000, 3.0f);
  int bad = 0;
  for (int i = 0; i < 1000; i++) bad += a[i] != 3.0f * (float)i;
  static float b[256];
  for (int i = 0; i < 256; i++) b[i] = 1.0f;
  scale(b, 130, 2.0f);
  int off = 0;
  for (int i = 0; i < 130; i++) off += b[i] != 2.0f;
  for (int i = 130; i < 256; i++) off += b[i] != 1.0f;
  printf("1..2\\n%s 1 - every element scaled by k\\n", bad ? "not ok" : "ok");
  printf("%s 2 - exactly the first n elements\\n", off ? "not ok" : "ok");
  return bad || off;
}
"""
MAKEFILE = """\
build/test_scale: build/scale.o build/test_scale.o
\tnvcc -o $@ build/scale.o build/test_scale.o
build/scale.o: src/scale.cu
\t@mkdir -p build
\tnvcc -O2 -Isrc -MD -MF build/scale.d -c src/scale.cu -o build/scale.o
build/test_scale.o: tests/test_scale.cu src/scale.h
\t@mkdir -p build
\tnvcc -O2 -Isrc -c tests/test_scale.cu -o build/test_scale.o
-include build/scale.d
"""
GATE = """\
gate: scale
build: [make, -s]
build_dir: build
requires: {device: cuda}
driver:
  type: command
  run: [./build/test_scale]
  format: tap
  timeout: 120
"""


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def test_a_cuda_change_is_swept_with_nvcc_and_graded_by_the_cuda_gate(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for tool in ("nvcc", "make", "git"):
        assert shutil.which(tool), f"{tool} is required on the device machine"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    for rel, text in {"src/scale.h": HEADER, "src/scale.cu": BEFORE, "tests/test_scale.cu": TEST,
                      "Makefile": MAKEFILE, "gates/scale.yaml": GATE, ".gitignore": "build/\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "scale")
    (root / "src/scale.cu").write_text(AFTER)
    _git(root, "commit", "-q", "-am", "scale by k, bounded")
    subprocess.run(["make", "-s"], cwd=root, check=True, capture_output=True)
    gate = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "--json", "-q", "--root",
                           str(root)], cwd=root, capture_output=True, text=True, timeout=300)
    assert json.loads(gate.stdout)["items"][0]["verdict"] == "GREEN", gate.stdout + gate.stderr

    proc = subprocess.run([*MUTATE, "sweep", "--root", str(root), "--since", "HEAD~1", "--json"], cwd=root,
                          capture_output=True, text=True, timeout=580)
    assert proc.returncode in (0, 1, 3), proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    out = os.environ.get("REDFIRST_EVIDENCE_OUT")
    if out:
        (Path(out) / "cuda-sweep").mkdir(parents=True, exist_ok=True)
        (Path(out) / "cuda-sweep" / "sweep.json").write_text(proc.stdout)
        (Path(out) / "cuda-sweep" / "sweep.stderr").write_text(proc.stderr)
    items = doc["cxx"]["items"]
    assert items and doc["cxx"]["files"] == ["src/scale.cu"], doc
    reasons = " ".join(i.get("reason") or "" for i in items)
    assert "no nvcc" not in reasons, reasons
    assert {i["line"] for i in items} <= {3, 4}, items                     # the changed lines only
    outcomes = {i["id"]: i["verdict"] for i in items}
    assert "ERROR" not in outcomes.values(), outcomes
    # x[i] * k -> x[i] / k is compiled by nvcc and killed by the GPU run of the gate
    divided = [i for i in items if i["id"].endswith("cxx_mul_to_div")]
    assert divided and all(i["verdict"] == "KILLED" for i in divided), divided
    # every KILLED was graded by the gate's run on the GPU, not decided by the compiler
    assert all(i["verdict"] != "KILLED" or i.get("gates") for i in items), items
