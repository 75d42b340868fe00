"""The `cuda` backend: device buffers, NVRTC kernels, and segments made by real stream capture.

Every launch goes onto one non-blocking stream. `begin_segment` begins a thread-local
capture on it (cuda-python, `cudaStreamBeginCapture`); `end_segment` ends the capture,
instantiates the graph and launches it once, so the buffers hold the result of one run,
as the Protocol promises (stream capture itself executes nothing). Between segments the
seam runs the break op eagerly on the same stream and copies its result into the
capture-time destination: the end-capture / eager work / begin-capture sequence that
`gates probe rebegin` checks the device allows.

No device memory is allocated while a segment is open (cudaMalloc is refused inside a
thread-local capture): buffers come from one arena allocated up front, bumped and never
reused, filled with NaN first so a read before any write is visible, as in `sim`.
The kernels are plain fixed-order loops: the same inputs give the same bits every run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from redfirst.gates.cuda import capture, rt
from redfirst.gates.cuda.buffers import DeviceBuffer, copy_async, copy_to_device, copy_to_host
from redfirst.gates.cuda.device import identify
from redfirst.gates.cuda.module import Module, arch_of, f32, ptr, u32
from seam.backends import BreakOp, Buffer, Counts

ARENA_BYTES = 64 * 2**20
ALIGN = 256
BLOCK = 128
NAN32 = 0x7FC00000

SOURCE = r"""
extern "C" __global__ void matmul(const float* a, const float* b, float* out, unsigned m, unsigned k, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m * n) return;
    unsigned row = i / n, col = i % n;
    float acc = 0.0f;
    for (unsigned j = 0; j < k; ++j) acc = __fmaf_rn(a[row * k + j], b[j * n + col], acc);
    out[i] = acc;
}
extern "C" __global__ void rmsnorm(const float* x, const float* gain, float* out, unsigned rows, unsigned h, float eps) {
    unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float ss = 0.0f;
    for (unsigned j = 0; j < h; ++j) ss = __fmaf_rn(x[r * h + j], x[r * h + j], ss);
    float inv = 1.0f / sqrtf(ss / (float)h + eps);
    for (unsigned j = 0; j < h; ++j) out[r * h + j] = __fmul_rn(__fmul_rn(x[r * h + j], inv), gain[j]);
}
extern "C" __global__ void add(const float* a, const float* b, float* out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = __fadd_rn(a[i], b[i]);
}
extern "C" __global__ void fill32(unsigned* out, unsigned value, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
"""


@dataclass(frozen=True)
class CudaBuffer:
    """A region of the backend's arena: device pointer, shape, dtype."""

    ptr: int
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": np.dtype(self.dtype).str, "data": (self.ptr, False), "version": 3}


@dataclass(frozen=True)
class CudaSegment:
    graph: capture.Graph


class CudaBackend:
    name = "cuda"

    def __init__(self, device: int = 0, arena_bytes: int = ARENA_BYTES, stream: int | None = None) -> None:
        self.identity = identify(device)  # rt.Unavailable without cuda-python or a device
        self.module = Module(SOURCE, ("matmul", "rmsnorm", "add", "fill32"),
                             arch=arch_of(self.identity.compute_capability))
        # every launch, copy and capture goes on this stream (a cuda-graph step sets the driver's)
        self.stream = rt.new_stream() if stream is None else stream
        self._arena = DeviceBuffer(arena_bytes)
        self._used = 0
        self._open = False
        self.segments: list[CudaSegment] = []
        self.segments_replayed = 0
        self.eager_runs = 0
        words = arena_bytes // 4
        self.module.launch("fill32", (words + 1023) // 1024, 1024, [ptr(self._arena.ptr), u32(NAN32), u32(words)],
                           self.stream)
        rt.synchronize(self.stream)

    def alloc(self, shape: tuple[int, ...], dtype: str = "float32") -> CudaBuffer:
        buf = CudaBuffer(self._arena.ptr + self._used, tuple(int(s) for s in shape), str(np.dtype(dtype)))
        size = -(-max(1, buf.nbytes) // ALIGN) * ALIGN
        if self._used + size > self._arena.nbytes:
            raise MemoryError(f"cuda backend arena of {self._arena.nbytes} bytes is full")
        self._used += size
        return buf

    def alloc_like(self, like: Buffer) -> CudaBuffer:
        return self.alloc(tuple(like.shape), str(like.dtype))

    def copy_into(self, dst: Buffer, src: Buffer) -> None:
        if tuple(dst.shape) != tuple(src.shape) or dst.dtype != src.dtype:
            raise ValueError(f"copy_into: {src.dtype}{list(src.shape)} into {dst.dtype}{list(dst.shape)}")
        self._refuse_open("copy_into")
        copy_async(dst.ptr, src.ptr, src.nbytes, self.stream)

    def upload(self, dst: Buffer, host: np.ndarray) -> None:
        data = np.ascontiguousarray(host, dtype=dst.dtype)
        if data.shape != tuple(dst.shape):
            raise ValueError(f"upload: {data.dtype}{list(data.shape)} into {dst.dtype}{list(dst.shape)}")
        self._refuse_open("upload")
        copy_to_device(dst.ptr, data, self.stream)

    def from_host(self, host: np.ndarray) -> CudaBuffer:
        data = np.ascontiguousarray(host)
        buf = self.alloc(data.shape, str(data.dtype))
        self.upload(buf, data)
        return buf

    def to_host(self, buf: Buffer) -> np.ndarray:
        self._refuse_open("to_host")
        return copy_to_host(buf.ptr, buf.nbytes, self.stream).view(buf.dtype).reshape(buf.shape)

    def fill(self, buf: Buffer, value: float) -> None:
        if np.dtype(buf.dtype).itemsize != 4:
            self.upload(buf, np.full(buf.shape, value, dtype=buf.dtype))
            return
        bits = int(np.array([value], dtype=buf.dtype).view(np.uint32)[0])
        n = math.prod(buf.shape)
        self.module.launch("fill32", (n + BLOCK - 1) // BLOCK, BLOCK, [ptr(buf.ptr), u32(bits), u32(n)], self.stream)

    def launch(self, name: str, out: Buffer, *args: Buffer) -> None:
        if name == "matmul":
            a, b = args
            (m, k), (k2, n) = a.shape[-2:], b.shape
            if k != k2 or tuple(out.shape) != (m, n):
                raise ValueError(f"matmul: {list(a.shape)} x {list(b.shape)} into {list(out.shape)}")
            self._grid("matmul", m * n, [ptr(a.ptr), ptr(b.ptr), ptr(out.ptr), u32(m), u32(k), u32(n)])
        elif name == "rmsnorm":
            x, gain = args
            h = x.shape[-1]
            rows = math.prod(x.shape) // h
            self._grid("rmsnorm", rows, [ptr(x.ptr), ptr(gain.ptr), ptr(out.ptr), u32(rows), u32(h), f32(1e-6)])
        elif name == "add":
            a, b = args
            n = math.prod(out.shape)
            self._grid("add", n, [ptr(a.ptr), ptr(b.ptr), ptr(out.ptr), u32(n)])
        else:
            raise KeyError(f"unknown kernel {name!r}")

    def _grid(self, name: str, threads: int, args: list[Any]) -> None:
        self.module.launch(name, max(1, (threads + BLOCK - 1) // BLOCK), BLOCK, args, self.stream)

    def begin_segment(self) -> None:
        if self._open:
            raise RuntimeError("begin_segment: a segment is already open")
        capture.begin(self.stream)
        self._open = True

    def end_segment(self) -> CudaSegment:
        if not self._open:
            raise RuntimeError("end_segment: no segment is open")
        self._open = False
        graph = capture.end(self.stream)
        segment = CudaSegment(capture.Graph(graph, capture.node_count(graph)))
        segment.graph.launch(self.stream)  # capture ran nothing: run it once, as the Protocol promises
        self.segments.append(segment)
        return segment

    def abort_segment(self) -> None:
        if self._open:
            self._open = False
            try:
                capture.end(self.stream)
            except capture.CaptureError:
                pass

    def replay_segment(self, segment: CudaSegment) -> None:
        self._refuse_open("replay_segment")
        segment.graph.launch(self.stream)
        self.segments_replayed += 1

    def run_eager(self, op: BreakOp, *args: Buffer) -> Buffer:
        self._refuse_open("run_eager")
        self.eager_runs += 1
        return op(*args)

    def counts(self) -> Counts:
        return Counts(segments_replayed=self.segments_replayed, eager_runs=self.eager_runs)

    def _refuse_open(self, what: str) -> None:
        # inside a thread-local capture these would be refused by CUDA or captured silently
        if self._open:
            raise RuntimeError(f"{what} while a segment is open")


def create() -> CudaBackend:
    return CudaBackend()
