#!/usr/bin/env bash
# The device run behind h200-leases-2026-12-02.log: every GPU test, then the lease layer on a real
# GPU: the slot named by the GPU's UUID, two lease databases on one machine (two XDG_STATE_HOMEs)
# that must not both hold the one GPU, and the torch gates under a lease.
# Run from the repository root; writes $OUT/log.txt (default /tmp/h200-out).
set -u
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
L() { python3 -P -m redfirst.leases.cli --root . "$@"; }
section() { echo; echo "== $*"; }
{
  section identity; date -u; nvidia-smi -L
  section "pytest -m gpu tests/gates/gpu"
  python3 -m pytest -m gpu tests/gates/gpu -q -p no:cacheprovider -p no:randomly 2>&1 | tail -n 4; echo "pytest exit ${PIPESTATUS[0]}"
  section "leases boxes"
  XDG_STATE_HOME=/tmp/state-a L --json boxes; echo "exit $?"
  section "leases run: the command sees the GPU by its UUID"
  XDG_STATE_HOME=/tmp/state-a L run --box local --gpus 1 -- python3 -c '
import os
from cuda.bindings import driver
print("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
print("cuInit", driver.cuInit(0)[0], "devices", driver.cuDeviceGetCount()[1])'
  echo "exit $?"
  section "two lease databases on one machine: A holds the GPU, B must wait and be refused"
  XDG_STATE_HOME=/tmp/state-a L run --box local --gpus 1 -- sleep 8 &
  sleep 3
  XDG_STATE_HOME=/tmp/state-b L run --box local --gpus 1 --wait 2 -- echo "B RAN WHILE A HELD THE GPU"
  echo "B exit $? (expected: not 0, and no B RAN line)"
  wait; echo "A exit $?"
  XDG_STATE_HOME=/tmp/state-b L run --box local --gpus 1 --wait 5 -- echo "B ran after A released"
  echo "B exit $?"
  section "audits"; XDG_STATE_HOME=/tmp/state-a L audit | tail -n 6; XDG_STATE_HOME=/tmp/state-b L audit | tail -n 4
  section "torch gates under a lease"
  python3 -P -m redfirst.gates.cli run --root examples/torch-graph --device cuda --lease local 2>&1 | tail -n 8
  echo "gates exit ${PIPESTATUS[0]}"
} >"$OUT/log.txt" 2>&1
