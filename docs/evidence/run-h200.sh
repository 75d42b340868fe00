#!/usr/bin/env bash
# The device run behind docs/evidence/: identity, probes, GPU tests, the seam's CUDA gates and the
# stale-value gate through `gates run` (each run exported with `gates export`), and the benchmark.
# Run from the repository root; writes under $OUT (default /tmp/h200-out).
set -u
OUT=${OUT:-/tmp/h200-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# the image has no jsonschema: its wheels travel in .whl/ (carried); redfirst itself from the tree
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
REPO=$PWD
# CUDA gates run under a lease of the local box (gates.leasing), whose GPU identity the record keeps
export XDG_STATE_HOME=/tmp/h200-state
G() { python3 -P -m redfirst.gates.cli "$@"; }
LOG=$OUT/log.txt
section() { echo; echo "== $*"; }

{
  section identity; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import cuda.bindings, torch, numpy, sys; print('python', sys.version.split()[0], 'cuda.bindings', cuda.bindings.__version__, 'torch', torch.__version__, 'numpy', numpy.__version__)"
  section gates probe device; G probe device; echo "exit $?"
  section gates probe rebegin; G probe rebegin; echo "exit $?"
} >>"$LOG" 2>&1

section "pytest -m gpu tests/gates/gpu" >>"$LOG"
python3 -m pytest -m gpu tests/gates/gpu -q -p no:cacheprovider -p no:randomly >"$OUT/pytest-gpu.txt" 2>&1
echo "exit $?" >>"$OUT/pytest-gpu.txt"
tail -n 3 "$OUT/pytest-gpu.txt" >>"$LOG"

# the seam's CUDA gates, and the stale-value gates, in tmp copies with their own stores
W=/tmp/h200-work; rm -rf "$W"; mkdir -p "$W/export"
cp -r examples/seam "$W/seam"; rm -rf "$W/seam/.redfirst"
mkdir -p "$W/stale/gates"; cp tests/gates/gpu/steps.py "$W/stale/"; echo "gates: {paths: [gates]}" >"$W/stale/redfirst.yaml"
for v in correct stale; do cat >"$W/stale/gates/affine-$v-cuda.yaml" <<YAML
gate: affine-$v-cuda
claim: the $v affine step replays bit for bit equal to eager runs on fresh inputs
kind: G1
requires: {device: cuda}
driver: {type: cuda-graph, run: "steps:make_step", variants: [$v], shapes: [[500], [4096]], warmup: 2, replays: 4, repeat_eager: 2, timeout: 120}
YAML
done
for root in seam stale; do
  section "gates run --root $root" >>"$LOG"
  (cd "$W/$root" && G run --root . --json >"$OUT/gates-run-$root.json" 2>>"$LOG"; echo "exit $?" >>"$LOG"
   G run --root . >>"$LOG" 2>&1 </dev/null || true)
  python3 - "$W/$root" "$OUT/gates-run-$root.json" "$W/export" >>"$LOG" 2>&1 <<'PY'
import json, subprocess, sys
root, report, export = sys.argv[1:]
for item in json.load(open(report))["items"]:
    if item.get("evidence") and (item["id"].endswith("-cuda")):
        sub = "red" if item["verdict"] == "RED" else ("green" if item["verdict"] == "GREEN" else "other")
        target = f"{export}/{sub}/{item['id']}"
        subprocess.run([sys.executable, "-P", "-m", "gates.cli", "export", item["evidence"], target, "--root", root], check=False)
        print(item["id"], item["verdict"], "->", target)
PY
done
# each seam mutation on the GPU, through `mutate` itself (examples/seam/mutations-cuda/): every one
# must come out KILLED; the RED records of the gates it turned red are exported
section "mutate --root seam mutations-cuda" >>"$LOG"
(cd "$W/seam" && git init -q && git add -A && git -c user.email=h200@redfirst.invalid -c user.name=h200 \
   commit -qm "seam as shipped") >>"$LOG" 2>&1
(cd "$W/seam" && python3 -P -m redfirst.mutations.cli --root . --json mutations-cuda >"$OUT/mutate-cuda.json" 2>>"$LOG"
 echo "mutate exit $?" >>"$LOG")
python3 - "$W" "$OUT/mutate-cuda.json" >>"$LOG" 2>&1 <<'PY'
import json, subprocess, sys
from pathlib import Path
w, report = Path(sys.argv[1]), json.load(open(sys.argv[2]))
for item in report["items"]:
    print(f"mutation {item['id']}: {item['verdict']}: {item['reason']}")
    for gate in item.get("gates", []):
        print(f"  {gate['gate']} {gate['verdict']} ({gate['cause']}): {gate['reason'][:200]}")
        if gate.get("evidence"):
            subprocess.run([sys.executable, "-P", "-m", "gates.cli", "export", gate["evidence"],
                            str(w / "export" / "mutations" / item["id"]), "--root", str(w / "seam")],
                           check=False, capture_output=True)
PY
(cd "$W/export" && tar czf "$OUT/records.tgz" .)

section benchmark >>"$LOG"
python3 bench/cuda_comparator.py --json "$OUT/bench.json" --markdown "$OUT/bench.md" >>"$LOG" 2>&1
echo "exit $?" >>"$LOG"
cd "$REPO"
