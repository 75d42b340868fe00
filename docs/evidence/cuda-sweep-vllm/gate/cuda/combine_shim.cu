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
