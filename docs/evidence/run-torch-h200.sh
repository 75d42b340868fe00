#!/usr/bin/env bash
# The device run behind docs/evidence/torch/ (issue #15): torch import root cause old/new, the
# GPU tests, examples/torch-graph through `gates run` (records exported), `mutate hazards`
# on its cuda-graph gates, and `mutate` of the breakable graph's writeback.
# Run from the repository root with the wheels in $WHL (default .whl); writes under $OUT.
set -u
OUT=${OUT:-/tmp/h200-out}; WHL=${WHL:-.whl}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHL"/*.whl
export PYTHONPATH=$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
export XDG_STATE_HOME=/tmp/h200-state
REPO=$PWD
G() { python3 -P -m redfirst.gates.cli "$@"; }
M() { python3 -P -m redfirst.mutations.cli "$@"; }
LOG=$OUT/log.txt
section() { echo; echo "== $*"; }
{
  section identity; date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  python3 -c "import cuda.bindings, torch, cupy, triton, sys; print('python', sys.version.split()[0], 'cuda.bindings', cuda.bindings.__version__, 'torch', torch.__version__, 'cupy', cupy.__version__, 'triton', triton.__version__)"
  section "root cause: NVRTC log into b' ' * 1 (old) and into a bytearray (new), then import torch"
  for m in old new; do python3 docs/evidence/torch-import-repro.py $m; done
} >>"$LOG" 2>&1
section "pytest -m gpu tests/gates/gpu" >>"$LOG"
python3 -m pytest -m gpu tests/gates/gpu -q -p no:cacheprovider -p no:randomly -rA >"$OUT/pytest-gpu.txt" 2>&1
echo "exit $?" >>"$OUT/pytest-gpu.txt"
tail -n 3 "$OUT/pytest-gpu.txt" >>"$LOG"

W=/tmp/tg-work; rm -rf "$W"; mkdir -p "$W/export"
cp -r examples/torch-graph "$W/tg"; rm -rf "$W/tg/.redfirst"
cd "$W/tg"
section "gates run --root examples/torch-graph" >>"$LOG"
G run --root . --json >"$OUT/gates-run.json" 2>>"$LOG"; echo "exit $?" >>"$LOG"
G show "$(python3 -c "import json;print([i['evidence'] for i in json.load(open('$OUT/gates-run.json'))['items'] if i['id']=='tg-g1-lm-host-temperature'][0])")" >>"$LOG" 2>&1 || true
python3 - "$OUT/gates-run.json" "$W/export" >>"$LOG" 2>&1 <<'PY'
import json, subprocess, sys
report, export = sys.argv[1:]
for item in json.load(open(report))["items"]:
    print(item["id"], item["verdict"], item["reason"][:600])
    if item.get("evidence") and item["verdict"] in ("GREEN", "RED"):
        target = f"{export}/{item['verdict'].lower()}/{item['id']}"
        subprocess.run([sys.executable, "-P", "-m", "gates.cli", "export", item["evidence"], target, "--root", "."], check=False)
PY
section "mutate hazards tg-g1-lm-graph-safe tg-g1-lm-graph-safe-stream" >>"$LOG"
M hazards tg-g1-lm-graph-safe tg-g1-lm-graph-safe-stream --json >"$OUT/hazards.json" 2>>"$OUT/hazards-progress.txt"
echo "exit $?" >>"$LOG"
python3 -c "
import json; d=json.load(open('$OUT/hazards.json'))
for i in d['items']: print(i['verdict'], i['id'], i['reason'][:300])
print('exit', d['exit'])" >>"$LOG" 2>&1
section "mutate mutations (breakable graph: drop the writeback)" >>"$LOG"
(git init -q && git add -A && git -c user.email=h200@redfirst.invalid -c user.name=h200 commit -qm "torch-graph as shipped") >>"$LOG" 2>&1
M --root . --json mutations >"$OUT/mutate.json" 2>>"$LOG"; echo "mutate exit $?" >>"$LOG"
python3 - "$OUT/mutate.json" "$W/export" >>"$LOG" 2>&1 <<'PY'
import json, subprocess, sys
report, export = json.load(open(sys.argv[1])), sys.argv[2]
for item in report["items"]:
    print(f"mutation {item['id']}: {item['verdict']}: {item['reason']}")
    for gate in item.get("gates", []):
        print(f"  {gate['gate']} {gate['verdict']}: {gate['reason'][:300]}")
        if gate.get("evidence"):
            subprocess.run([sys.executable, "-P", "-m", "gates.cli", "export", gate["evidence"],
                            f"{export}/red/{gate['gate']}-{item['id']}", "--root", "."], check=False)
PY
(cd "$W/export" && tar czf "$OUT/records.tgz" .)
cd "$REPO"
