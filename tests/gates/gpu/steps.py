"""cuda-graph factories for the GPU tests: one correct step and one per failure the driver must catch.

Variants (shape = [n]):
- `correct`: y = x * scale + offset, scale and offset read from device memory the inputs write.
- `stale`: the same, but `scale` is a HOST value passed as a kernel argument: a capture bakes
  the capture-time value in. Eager runs and replay 0 (captured inputs) pass; every replay
  on fresh inputs differs: RED, failure class `replay`.
- `sync-in-capture`: synchronises its stream inside the step: refused in a thread-local
  capture: RED, failure class `capture`.
- `nondeterministic`: each call adds a host counter: two eager runs differ: NO_DECISION.
- `no-write`: the graph skips the output (a missing writeback): RED at replay 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from redfirst.gates.cuda import capture, rt
from redfirst.gates.cuda.buffers import DeviceBuffer
from redfirst.gates.cuda.device import identify
from redfirst.gates.cuda.module import Module, arch_of, f32, ptr, u64

SOURCE = r"""
extern "C" __global__ void affine_dev(const float* x, const float* params, float* y, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fadd_rn(__fmul_rn(x[i], params[0]), params[1]);
}
extern "C" __global__ void affine_host(const float* x, const float* params, float* y, unsigned long long n,
                                       float scale) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __fadd_rn(__fmul_rn(x[i], scale), params[1]);
}
"""

_module: Module | None = None


def _kernels() -> Module:
    global _module
    if _module is None:
        _module = Module(SOURCE, ("affine_dev", "affine_host"), arch=arch_of(identify().compute_capability))
    return _module


class AffineStep:
    def __init__(self, variant: str, n: int) -> None:
        self.variant = variant
        self.n = n
        self.x = DeviceBuffer(n * 4, "float32", (n,))
        self.params = DeviceBuffer(8, "float32", (2,))
        self.y = DeviceBuffer(n * 4, "float32", (n,))
        self.scale = 1.0
        self.calls = 0

    def inputs(self, seed: int, stream: int) -> None:
        rng = np.random.default_rng(seed)
        self.scale = 0.25 * (1 + seed % 5)  # differs from the capture seed's for every fresh seed used
        self.x.upload(rng.standard_normal(self.n, dtype=np.float32), stream)
        self.params.upload(np.array([self.scale, 0.5 + seed], dtype=np.float32), stream)

    def __call__(self, stream: int) -> None:
        k = _kernels()
        grid = (self.n + 255) // 256
        self.calls += 1
        if self.variant == "no-write" and capture.capturing(stream):
            return
        if self.variant == "stale":
            k.launch("affine_host", grid, 256, [ptr(self.x.ptr), ptr(self.params.ptr), ptr(self.y.ptr),
                                                u64(self.n), f32(self.scale)], stream)
            return
        if self.variant == "nondeterministic":
            k.launch("affine_host", grid, 256, [ptr(self.x.ptr), ptr(self.params.ptr), ptr(self.y.ptr),
                                                u64(self.n), f32(self.scale + self.calls)], stream)
            return
        k.launch("affine_dev", grid, 256, [ptr(self.x.ptr), ptr(self.params.ptr), ptr(self.y.ptr), u64(self.n)],
                 stream)
        if self.variant == "sync-in-capture":
            rt.synchronize(stream)

    def outputs(self) -> Mapping[str, Any]:
        return {"y": self.y}

    def close(self) -> None:
        for b in (self.x, self.params, self.y):
            b.free()


def make_step(variant: str, shape: tuple[int, ...]) -> AffineStep:
    (n,) = shape
    return AffineStep(variant, n)
