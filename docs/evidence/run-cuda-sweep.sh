#!/usr/bin/env bash
# `mutate sweep` over one CUDA source of vllm.cpp on the device machine (issue 37, last Done-when
# line). Run from the redfirst repository root:
#   bash docs/evidence/run-cuda-sweep.sh [--dry-run]
# Reads the corpus tarball .corpus/vllm.cpp.git.tar.gz (TARBALL=... to override) and wheels from
# .whl/ (where tree-sitter and its grammars are not installed); writes $OUT/cuda-sweep-vllm/
# (default OUT=/tmp/cuda-sweep-out).
#
# The change swept: commit f086b64e of vllm.cpp (ENG-ASYNC-SCHED W3) added
# src/vt/cuda/cuda_combine_tokens.cu, the CUDA port of the async scheduler's combine and scatter
# kernels; it is unchanged up to d85906ae. On a checkout at d85906ae, two commits remove that
# file (the base, as before f086b64e) and put it back, so `--since HEAD~1` is exactly the lines
# f086b64e added to that .cu file (56 mutants) and nothing else of the tree.
#
# The CUDA gate: vllm.cpp's own test of the combine, tests/vllm/v1/worker/test_combine_tokens.cpp
# (7 doctest cases of the host combine_sampled_and_draft_tokens), linked not against the host
# loop (src/vllm/v1/worker/gpu/prepare_inputs.cpp) but against a shim that runs the same call
# through the CUDA kernel: inputs copied to the GPU, vt::cuda::LaunchCombineSampledAndDraftTokens
# on a stream, input ids copied back; logits_indices computed on the host as the host loop does.
# redfirst/cuda.mk builds it with nvcc (sm_90, CUDA_ARCH=... to override) and g++, -MMD depfiles.
# Nothing of vllm.cpp tests the scatter kernel (LaunchScatterLastSampled): its mutants can only
# survive, and the sweep must say so.
#
# --dry-run: everything up to the first nvcc build and the mutants' list (no gate run, no sweep).
# Measured here (nvcc 13.0, no GPU, 2 loaded cores): the dry run 32 s; equivalence alone over the
# 56 mutants 268 s (9 DUPLICATE, 3 DISCARDED "not compiled", 44 left to the gate). The sweep is
# cut at 420 s (timeout) so the whole run stays under 8 minutes of device time.
set -euo pipefail
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
REPO=$PWD
OUT=${OUT:-/tmp/cuda-sweep-out}
DEST=$OUT/cuda-sweep-vllm
TARBALL=${TARBALL:-$REPO/.corpus/vllm.cpp.git.tar.gz}
REV=f086b64e
FILE=src/vt/cuda/cuda_combine_tokens.cu
JOBS=${JOBS:-4}
W=${WORK:-/tmp/cuda-sweep-work}
mkdir -p "$DEST"
exec > >(tee -a "$DEST/run.log") 2>&1
export PYTHONUNBUFFERED=1 XDG_CACHE_HOME=$W/cache
if ! python3 -c "import tree_sitter, tree_sitter_cuda, yaml, jsonschema" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$W/site" "$REPO"/.whl/*.whl
  export PYTHONPATH=$W/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$REPO${PYTHONPATH:+:$PYTHONPATH}
echo "== $(date -u +%FT%TZ) identity"
(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "no nvidia-smi") 2>&1
nvcc --version | tail -n 2; g++ --version | head -n 1; make --version | head -n 1; git --version
python3 -c "import sys, tree_sitter; print('python', sys.version.split()[0], 'tree-sitter', tree_sitter.__version__ if hasattr(tree_sitter, '__version__') else '?')"

echo "== checkout vllm.cpp at d85906ae, $FILE back to before $REV and forward"
rm -rf "$W/vllm" && mkdir -p "$W/vllm"
sh "$REPO/examples/vllm.cpp/prepare.sh" "$TARBALL" "$W/vllm" >/dev/null
ROOT=$W/vllm/vllm.cpp
cd "$ROOT"
g() { git -c user.name=redfirst -c user.email=redfirst@localhost -c commit.gpgsign=false -c core.hooksPath=/dev/null "$@"; }
git log --format='%h %ad %s' --date=short -1 "$REV" -- "$FILE"
test "$(git rev-list --count "$REV"..HEAD -- "$FILE")" = 0     # unchanged since f086b64e
mkdir -p redfirst/cuda
cat > redfirst/cuda/combine_shim.cu <<'CU'
// redfirst's harness, not vllm.cpp's code: vllm::v1::combine_sampled_and_draft_tokens (the host
// oracle's signature, include/vllm/v1/worker/gpu/prepare_inputs.h) run through the CUDA kernel of
// src/vt/cuda/cuda_combine_tokens.cu, so vllm.cpp's own test of the combine grades the kernel.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "vllm/v1/worker/gpu/prepare_inputs.h"
#include "vt/cuda/combine_tokens.h"

namespace vt {
uint64_t NextQueueId() noexcept { static uint64_t n = 0; return ++n; }  // src/vt/backend.cpp's, alone
}  // namespace vt

namespace {
void Ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) { std::fprintf(stderr, "combine_shim: %s: %s\n", what, cudaGetErrorString(e)); std::abort(); }
}
int32_t* On(const std::vector<int32_t>& v) {
  int32_t* d = nullptr;
  Ok(cudaMalloc(&d, (v.size() + 1) * sizeof(int32_t)), "cudaMalloc");
  Ok(cudaMemcpy(d, v.data(), v.size() * sizeof(int32_t), cudaMemcpyHostToDevice), "to device");
  return d;
}
}  // namespace

namespace vllm::v1 {
std::vector<int32_t> combine_sampled_and_draft_tokens(
    std::vector<int32_t>& input_token_ids, const std::vector<int32_t>& idx_mapping,
    const std::vector<int32_t>& last_sampled_tokens, const std::vector<int32_t>& query_start_loc,
    const std::vector<int32_t>& seq_lens, const std::vector<int32_t>& prefill_len, int num_new_sampled_tokens) {
  const int num_reqs = static_cast<int>(idx_mapping.size());
  std::vector<int32_t> logits_indices;
  for (int b = 0; b < num_reqs; ++b)
    for (int j = 0; j < num_new_sampled_tokens; ++j) logits_indices.push_back(query_start_loc[b + 1] - num_new_sampled_tokens + j);
  cudaStream_t stream;
  Ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  vt::Queue queue;
  queue.device.type = vt::DeviceType::kCUDA;
  queue.handle = stream;
  int32_t *ids = On(input_token_ids), *map = On(idx_mapping), *last = On(last_sampled_tokens),
          *qsl = On(query_start_loc), *seq = On(seq_lens), *pf = On(prefill_len);
  vt::cuda::LaunchCombineSampledAndDraftTokens(queue, ids, map, last, qsl, seq, pf, num_reqs, num_new_sampled_tokens);
  Ok(cudaStreamSynchronize(stream), "the combine kernel");
  Ok(cudaMemcpy(input_token_ids.data(), ids, input_token_ids.size() * sizeof(int32_t), cudaMemcpyDeviceToHost),
     "to host");
  for (int32_t* p : {ids, map, last, qsl, seq, pf}) cudaFree(p);
  cudaStreamDestroy(stream);
  return logits_indices;
}
}  // namespace vllm::v1
CU
cat > redfirst/cuda.mk <<MK
# vllm.cpp's test of the combine (tests/vllm/v1/worker/test_combine_tokens.cpp) over the CUDA kernel
# of src/vt/cuda/cuda_combine_tokens.cu, through redfirst/cuda/combine_shim.cu: make -s -f redfirst/cuda.mk
B := build-cuda
NVCC ?= nvcc
CUDA_ARCH ?= ${CUDA_ARCH:-sm_90}
INC := -Iinclude -Isrc -Ithird_party
OBJS := \$(B)/tests/doctest_main.o \$(B)/tests/vllm/v1/worker/test_combine_tokens.o \\
        \$(B)/src/vt/cuda/cuda_combine_tokens.o \$(B)/redfirst/cuda/combine_shim.o
\$(B)/test_combine_cuda: \$(OBJS)
	\$(NVCC) -arch=\$(CUDA_ARCH) -o \$@ \$(OBJS)
\$(B)/%.o: %.cu
	@mkdir -p \$(dir \$@)
	\$(NVCC) -std=c++20 -O2 -arch=\$(CUDA_ARCH) \$(INC) -MMD -MP -c \$< -o \$@
\$(B)/%.o: %.cpp
	@mkdir -p \$(dir \$@)
	\$(CXX) -std=c++20 -O0 \$(INC) -MMD -MP -c \$< -o \$@
-include \$(OBJS:.o=.d)
MK
cat > redfirst/gates/combine-tokens-cuda.yaml <<'YAML'
gate: combine-tokens-cuda
claim: vllm.cpp's combine test (tests/vllm/v1/worker/test_combine_tokens.cpp) holds for the CUDA combine kernel of src/vt/cuda/cuda_combine_tokens.cu
kind: unit
requires: {device: cuda}
build: [make, -s, -f, redfirst/cuda.mk]
build_dir: build-cuda
driver:
  type: command
  run: [build-cuda/test_combine_cuda]
  format: doctest
  timeout: 120
assert:
  cases: {min: 7}
YAML
rm -f redfirst/gates/vt-*.yaml      # the example's CPU gates: they never build a .cu file
printf 'build-cuda/\n' >> .git/info/exclude
g add -A redfirst && g commit -q --no-verify -m "redfirst: a CUDA gate over vllm.cpp's combine test and kernel"
keep=$(mktemp); cp "$FILE" "$keep"
g rm -q "$FILE" && g commit -q --no-verify -m "sweep base: $FILE as before $REV (absent)"
cp "$keep" "$FILE"; rm -f "$keep"
g add "$FILE" && g commit -q --no-verify -m "sweep change: $FILE as $REV added it"
git log --oneline -3
mkdir -p "$DEST/gate" && cp -R redfirst/cuda redfirst/cuda.mk redfirst/gates/combine-tokens-cuda.yaml "$DEST/gate/"

echo "== the mutants of the change (tree-sitter's CUDA grammar)"
python3 - "$FILE" <<'PY' | tee "$DEST/mutants.txt"
import collections, sys
from redfirst.mutations.cxx_mutants import mutants
file = sys.argv[1]
found = mutants(file, open(file, "rb").read())
print(len(found), "mutants:", dict(collections.Counter(m.operator for m in found)))
for m in found:
    print(f"{m.file}:{m.line}:{m.col}: {m.operator}: {m.description}")
PY

echo "== $(date -u +%FT%TZ) the gate's build (nvcc) on the untouched tree"
start=$(date +%s)
make -s -f redfirst/cuda.mk
echo "built in $(( $(date +%s) - start )) s"
make -n -W "$FILE" -f redfirst/cuda.mk | grep -- "-c $FILE"     # the command equivalence compiles with
if [ "$DRY" = 1 ]; then
  echo "== dry run: stopped before the gate runs and the sweep"
  exit 0
fi

echo "== $(date -u +%FT%TZ) gates run (the untouched tree: must be GREEN)"
python3 -P -m redfirst.gates.cli run --root . --json > "$DEST/gates-run.json" || true
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print([(i['id'], i['verdict'], i['reason']) for i in d['items']])" "$DEST/gates-run.json"

echo "== $(date -u +%FT%TZ) mutate sweep --since HEAD~1 -n $JOBS"
start=$(date +%s)
set +e
timeout "${SWEEP_TIMEOUT:-420}" python3 -P -m redfirst.mutations.cli sweep --root . --since HEAD~1 --json -n "$JOBS" \
  --sarif "$DEST/sweep.sarif" --junit "$DEST/sweep-junit.xml" > "$DEST/sweep.json" 2> "$DEST/sweep.stderr"
rc=$?
set -e
echo "exit $rc in $(( $(date +%s) - start )) s"
python3 - "$DEST/sweep.json" <<'PY' | tee "$DEST/summary.txt"
import json, sys
doc = json.load(open(sys.argv[1]))
cxx = doc["cxx"]
print("counts", cxx["counts"], "seconds", cxx["seconds"])
for note in cxx["notes"]:
    print("note:", note)
for i in cxx["items"]:
    print(i["verdict"], i["id"], f"{i['seconds']:.2f}s", (i["reason"] or "")[:160])
PY
git status --porcelain | head
