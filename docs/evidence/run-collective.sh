#!/usr/bin/env bash
# The device run behind docs/evidence/collective/ (issue 38): identity, then the collective GPU
# tests (tests/gates/gpu/test_collective_gpu.py): the tensor-parallel example's NCCL gates at world
# size 1 through `gates run` (records exported), `mutate hazards` on the graph-safe one, and the
# HF BERT gate's replay-0 ULP distance. Records go to $OUT/collective (REDFIRST_EVIDENCE_OUT):
# commit that folder as docs/evidence/collective/, where tests/gates/test_collective_evidence.py
# regrades it on CPU.
# Run from the repository root. The image lacks some of redfirst's pure-Python dependencies:
# carry them as wheels in .whl/, made on a machine with network access by
#   python3 -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
#     jsonschema GitPython markdown-it-py rich PyYAML
# and, used only where the image cannot import cuda.bindings, the same with --no-deps -d .whl/cuda
#     cuda-python==13.3.1 cuda-bindings==13.3.1 cuda-pathfinder   (the version the H200 runs used)
set -u
OUT=${OUT:-/tmp/collective-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
if ! python3 -c "import cuda.bindings" 2>/dev/null && ls .whl/cuda/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/cuda/*.whl
fi
export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export XDG_STATE_HOME=/tmp/collective-state
export REDFIRST_EVIDENCE_OUT=$OUT/collective
# NVLink multicast stays off (the machine's own setting; kept for programs started with their own env)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
LOG=$OUT/log.txt
{
  echo "== identity"; date -u; nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv
  python3 -c "import sys, torch, transformers, cuda.bindings; print('python', sys.version.split()[0], 'torch', torch.__version__, 'nccl', '.'.join(map(str, torch.cuda.nccl.version())), 'transformers', transformers.__version__, 'cuda.bindings', cuda.bindings.__version__)"
  python3 -P -m redfirst.gates.cli probe device; echo "probe exit $?"
} >>"$LOG" 2>&1
python3 -m pytest -m gpu tests/gates/gpu/test_collective_gpu.py -q -p no:cacheprovider -p no:randomly -rA \
  >"$OUT/pytest-collective.txt" 2>&1
echo "pytest exit $?" >>"$OUT/pytest-collective.txt"
tail -n 12 "$OUT/pytest-collective.txt"
cp "$LOG" "$OUT/pytest-collective.txt" "$REDFIRST_EVIDENCE_OUT/" 2>/dev/null || true
find "$REDFIRST_EVIDENCE_OUT" -type f | sort | head -50
# The record folders are deeper than the device tool brings back: one archive of the whole folder.
tar -C "$OUT" -czf "$OUT/collective.tar.gz" collective
