"""The device-side bit-exact comparator: one NVRTC kernel, one pass over both buffers.

It counts differing 8/16/32/64-bit elements of two device buffers, finds the exact first
differing index, and hashes each buffer, reading each byte once with 16-byte vector loads
in a grid-stride loop (four loads of each buffer in flight per thread), a block reduction
of count, first index and hashes, and one atomic of each per block. The two bit patterns
at the first index are copied back afterwards (2 x itemsize bytes).

Hashes. `hash64` is computed on the device in the same pass, for buffers of any size:
the sum modulo 2**64 of fmix(w_i ^ (i * PHI)) over the buffer's little-endian 64-bit words
w_i (the last one zero-padded), finished with fmix(sum ^ nbytes). `host_hash64` computes the
same value with numpy. sha256 (the field of `redfirst.gates.compare.Comparison`) is computed on the
host from a copy, and only for buffers of at most `SHA256_LIMIT` bytes; above that it is
None and hash64 is the hash kept.

`compare_host` gives the same raw result from host arrays with numpy, so a host and a
device comparison of the same data make identical reports.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from redfirst.gates import compare, dtypes
from redfirst.gates.cuda.buffers import DeviceBuffer, DeviceView, copy_to_host, fill_async, view_of
from redfirst.gates.cuda.module import Module, arch_of, ptr, u64

SHA256_LIMIT = 256 * 2**20
PHI = 0x9E3779B97F4A7C15
MIX = 0xD6E8FEB86659FD93
MASK = (1 << 64) - 1
BLOCK = 256
UNROLL = 4

SOURCE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 fmix(u64 x) {
    x ^= x >> 32; x *= 0xD6E8FEB86659FD93ull; x ^= x >> 32;
    return x;
}
__device__ __forceinline__ u64 word_hash(u64 w, u64 i) { return fmix(w ^ (i * 0x9E3779B97F4A7C15ull)); }

// differing elements of width W among the 16 bytes of one chunk
template <int W> __device__ __forceinline__ u32 differing(uint4 x, uint4 y);
template <> __device__ __forceinline__ u32 differing<1>(uint4 x, uint4 y) {
    return (__popc(__vcmpne4(x.x, y.x)) + __popc(__vcmpne4(x.y, y.y)) +
            __popc(__vcmpne4(x.z, y.z)) + __popc(__vcmpne4(x.w, y.w))) >> 3;
}
template <> __device__ __forceinline__ u32 differing<2>(uint4 x, uint4 y) {
    return (__popc(__vcmpne2(x.x, y.x)) + __popc(__vcmpne2(x.y, y.y)) +
            __popc(__vcmpne2(x.z, y.z)) + __popc(__vcmpne2(x.w, y.w))) >> 4;
}
template <> __device__ __forceinline__ u32 differing<4>(uint4 x, uint4 y) {
    return (x.x != y.x) + (x.y != y.y) + (x.z != y.z) + (x.w != y.w);
}
template <> __device__ __forceinline__ u32 differing<8>(uint4 x, uint4 y) {
    return (((x.x ^ y.x) | (x.y ^ y.y)) != 0) + (((x.z ^ y.z) | (x.w ^ y.w)) != 0);
}

// byte offset (0..15) of the first differing byte of a chunk known to differ
__device__ __forceinline__ u32 first_byte(uint4 x, uint4 y) {
    u32 d0 = x.x ^ y.x, d1 = x.y ^ y.y, d2 = x.z ^ y.z, d3 = x.w ^ y.w;
    if (d0) return (__ffs(d0) - 1) >> 3;
    if (d1) return 4 + ((__ffs(d1) - 1) >> 3);
    if (d2) return 8 + ((__ffs(d2) - 1) >> 3);
    return 12 + ((__ffs(d3) - 1) >> 3);
}

// chunk c of a buffer that is not 16-byte aligned or ends inside it: bytes past the end read 0
__device__ __forceinline__ uint4 load_slow(const unsigned char* p, u64 c, u64 nbytes) {
    u32 v[4] = {0u, 0u, 0u, 0u};
    u64 base = c * 16;
    for (int k = 0; k < 16; ++k) {
        u64 at = base + k;
        if (at < nbytes) v[k >> 2] |= ((u32)p[at]) << ((k & 3) * 8);
    }
    return make_uint4(v[0], v[1], v[2], v[3]);
}

struct Acc {
    u64 count, first, ha, hb;
};

template <int W, bool HASH>
__device__ __forceinline__ void chunk(Acc& acc, uint4 x, uint4 y, u64 c, u64 nwords) {
    u32 n = differing<W>(x, y);
    if (n) {
        acc.count += n;
        u64 idx = (c * 16 + first_byte(x, y)) / W;
        if (idx < acc.first) acc.first = idx;
    }
    if (HASH) {
        u64 w0 = 2 * c, w1 = w0 + 1;
        if (w0 < nwords) {
            acc.ha += word_hash(((u64)x.y << 32) | x.x, w0);
            acc.hb += word_hash(((u64)y.y << 32) | y.x, w0);
        }
        if (w1 < nwords) {
            acc.ha += word_hash(((u64)x.w << 32) | x.z, w1);
            acc.hb += word_hash(((u64)y.w << 32) | y.z, w1);
        }
    }
}

template <int W, bool HASH>
__device__ void compare_body(const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
                             u64 nbytes, u64* __restrict__ out) {
    const u64 nchunks = (nbytes + 15) / 16;
    const u64 nwords = (nbytes + 7) / 8;
    const bool aligned = ((((u64)a) | ((u64)b)) & 15) == 0;
    const u64 nfull = aligned ? nbytes / 16 : 0;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    Acc acc = {0ull, ~0ull, 0ull, 0ull};
    const uint4* va = reinterpret_cast<const uint4*>(a);
    const uint4* vb = reinterpret_cast<const uint4*>(b);
    for (; c + (UNROLL - 1) * stride < nfull; c += UNROLL * stride) {
        uint4 x[UNROLL], y[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) { x[k] = __ldcs(va + c + k * stride); y[k] = __ldcs(vb + c + k * stride); }
#pragma unroll
        for (int k = 0; k < UNROLL; ++k) chunk<W, HASH>(acc, x[k], y[k], c + k * stride, nwords);
    }
    for (; c < nchunks; c += stride) {
        uint4 x, y;
        if (c < nfull) { x = __ldcs(va + c); y = __ldcs(vb + c); }
        else { x = load_slow(a, c, nbytes); y = load_slow(b, c, nbytes); }
        chunk<W, HASH>(acc, x, y, c, nwords);
    }
    // block reduction: warp shuffles, then one warp over the warps' results
    __shared__ u64 s[4][32];
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        acc.count += __shfl_down_sync(0xffffffffu, acc.count, off);
        u64 f = __shfl_down_sync(0xffffffffu, acc.first, off);
        acc.first = f < acc.first ? f : acc.first;
        if (HASH) {
            acc.ha += __shfl_down_sync(0xffffffffu, acc.ha, off);
            acc.hb += __shfl_down_sync(0xffffffffu, acc.hb, off);
        }
    }
    if (lane == 0) { s[0][warp] = acc.count; s[1][warp] = acc.first; s[2][warp] = acc.ha; s[3][warp] = acc.hb; }
    __syncthreads();
    if (warp == 0) {
        const unsigned nw = blockDim.x >> 5;
        acc.count = lane < nw ? s[0][lane] : 0ull;
        acc.first = lane < nw ? s[1][lane] : ~0ull;
        acc.ha = lane < nw ? s[2][lane] : 0ull;
        acc.hb = lane < nw ? s[3][lane] : 0ull;
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            acc.count += __shfl_down_sync(0xffffffffu, acc.count, off);
            u64 f = __shfl_down_sync(0xffffffffu, acc.first, off);
            acc.first = f < acc.first ? f : acc.first;
            acc.ha += __shfl_down_sync(0xffffffffu, acc.ha, off);
            acc.hb += __shfl_down_sync(0xffffffffu, acc.hb, off);
        }
        if (lane == 0) {
            if (acc.count) { atomicAdd(out + 0, acc.count); atomicMin(out + 1, acc.first); }
            if (HASH) { atomicAdd(out + 2, acc.ha); atomicAdd(out + 3, acc.hb); }
        }
    }
}

#define GATES_COMPARE(W, H, NAME) \
    extern "C" __global__ void __launch_bounds__(256) NAME( \
        const unsigned char* a, const unsigned char* b, u64 nbytes, u64* out) { \
        compare_body<W, H>(a, b, nbytes, out); }
GATES_COMPARE(1, true, gates_compare_w1)
GATES_COMPARE(2, true, gates_compare_w2)
GATES_COMPARE(4, true, gates_compare_w4)
GATES_COMPARE(8, true, gates_compare_w8)
GATES_COMPARE(1, false, gates_count_w1)
GATES_COMPARE(2, false, gates_count_w2)
GATES_COMPARE(4, false, gates_count_w4)
GATES_COMPARE(8, false, gates_count_w8)
"""

NAMES = tuple(f"gates_{kind}_w{w}" for kind in ("compare", "count") for w in (1, 2, 4, 8))


@dataclass(frozen=True)
class RawComparison:
    """A comparator's raw result, as recorded in evidence (integers, nothing derived)."""

    dtype: str
    shape: tuple[int, ...]
    values: int
    differing: int
    first_index: int | None
    reference_bits: int | None
    candidate_bits: int | None
    reference_hash64: str | None          # "0x..." (16 hex digits), see the module docstring
    candidate_hash64: str | None
    reference_sha256: str | None
    candidate_sha256: str | None
    comparator: str                       # "device" | "host"

    def report(self) -> compare.Comparison:
        """The report in the one shape every comparator of redfirst uses."""
        return compare.from_raw(
            kind="bit_exact", dtype=self.dtype, shape=self.shape, values=self.values,
            differing=self.differing, first_index=self.first_index,
            reference_bits=self.reference_bits, candidate_bits=self.candidate_bits,
            reference_sha256=self.reference_sha256, candidate_sha256=self.candidate_sha256,
        )

    def as_record(self) -> dict[str, Any]:
        data = asdict(self)
        data["shape"] = list(self.shape)
        return data

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> RawComparison:
        fields: dict[str, Any] = {k: data.get(k) for k in cls.__dataclass_fields__}
        fields["shape"] = tuple(int(s) for s in data.get("shape") or ())
        fields["comparator"] = str(data.get("comparator", ""))
        return cls(**fields)


def _hex64(value: int) -> str:
    return f"0x{value & MASK:016x}"


def _fmix_int(x: int) -> int:
    x &= MASK
    x ^= x >> 32
    x = (x * MIX) & MASK
    return x ^ (x >> 32)


def host_hash64(data: np.ndarray[Any, Any] | bytes | memoryview, *, block_words: int = 1 << 22) -> str:
    """The device comparator's hash64 of a buffer's bytes, computed with numpy."""
    raw = (np.ascontiguousarray(data).data if isinstance(data, np.ndarray) else memoryview(data)).cast("B")
    nbytes = raw.nbytes
    nwords = (nbytes + 7) // 8
    total = np.uint64(0)
    with np.errstate(over="ignore"):
        for start in range(0, nwords, block_words):
            stop = min(nwords, start + block_words)
            chunk = bytes(raw[start * 8: min(nbytes, stop * 8)])
            chunk += b"\0" * ((stop - start) * 8 - len(chunk))
            w = np.frombuffer(chunk, dtype="<u8")
            i = np.arange(start, stop, dtype=np.uint64)
            x = w ^ (i * np.uint64(PHI))
            x ^= x >> np.uint64(32)
            x *= np.uint64(MIX)
            x ^= x >> np.uint64(32)
            total = total + x.sum(dtype=np.uint64)
    return _hex64(_fmix_int(int(total) ^ nbytes))


def _sha256(data: np.ndarray[Any, Any]) -> str:
    return hashlib.sha256(np.ascontiguousarray(data).data.cast("B")).hexdigest()


def compare_host(reference: np.ndarray[Any, Any], candidate: np.ndarray[Any, Any], dtype: str) -> RawComparison:
    """The raw result of the host comparator (numpy): the device comparator's twin."""
    dt = dtypes.lookup(dtype)
    ref = dtypes.bit_patterns(np.ascontiguousarray(reference), dt).reshape(-1)
    cand = dtypes.bit_patterns(np.ascontiguousarray(candidate), dt).reshape(-1)
    if ref.shape != cand.shape:
        raise ValueError(f"sizes differ: {ref.size} and {cand.size} values")
    differs = ref != cand
    count = int(np.count_nonzero(differs))
    first = int(np.argmax(differs)) if count else None
    small = ref.nbytes <= SHA256_LIMIT
    return RawComparison(
        dtype=dt.name, shape=tuple(int(s) for s in np.shape(reference)), values=int(ref.size), differing=count,
        first_index=first,
        reference_bits=None if first is None else int(ref[first]),
        candidate_bits=None if first is None else int(cand[first]),
        reference_hash64=host_hash64(ref), candidate_hash64=host_hash64(cand),
        reference_sha256=_sha256(ref) if small else None, candidate_sha256=_sha256(cand) if small else None,
        comparator="host",
    )


class DeviceComparator:
    """The comparator kernel compiled for the current device; one per process (`get()`)."""

    def __init__(self) -> None:
        from redfirst.gates.cuda.device import identify

        self.identity = identify()
        self.module = Module(SOURCE.replace("UNROLL", str(UNROLL)), NAMES,
                             arch=arch_of(self.identity.compute_capability))
        per_sm = max(1, self.module.max_blocks_per_sm("gates_compare_w4", BLOCK))
        self.grid = per_sm * self.identity.multiprocessors
        self._result = DeviceBuffer(32, "uint64", (4,))

    def enqueue(self, a: DeviceView, b: DeviceView, out_ptr: int, stream: int, *, hashes: bool = True) -> None:
        """Queue the comparison of two buffers of equal size into a 4-word result buffer:
        (count, first index or 2**64-1, hash64 sum of a, of b). Capturable."""
        itemsize = dtypes.lookup(a.dtype).itemsize
        fill_async(out_ptr, 0, 32, stream)
        fill_async(out_ptr + 8, 0xFF, 8, stream)
        if a.nbytes == 0:
            return
        name = f"gates_{'compare' if hashes else 'count'}_w{itemsize}"
        chunks = (a.nbytes + 15) // 16
        grid = max(1, min(self.grid, (chunks + BLOCK - 1) // BLOCK))
        self.module.launch(name, grid, BLOCK, [ptr(a.ptr), ptr(b.ptr), u64(a.nbytes), ptr(out_ptr)], stream)

    def compare(self, reference: Any, candidate: Any, stream: int = 0, *, sha256: bool | None = None) -> RawComparison:
        """Compare two device buffers bit for bit; ValueError when dtype or size differ."""
        a, b = view_of(reference), view_of(candidate)
        dt = dtypes.lookup(a.dtype)
        if dtypes.lookup(b.dtype).itemsize != dt.itemsize or a.nbytes != b.nbytes:
            raise ValueError(f"cannot compare {a.dtype}{list(a.shape)} with {b.dtype}{list(b.shape)}")
        if dt.itemsize not in (1, 2, 4, 8):
            raise ValueError(f"no device comparator for {dt.itemsize}-byte elements")
        self.enqueue(a, b, self._result.ptr, stream)
        count, first, ha, hb = (int(v) for v in copy_to_host(self._result.ptr, 32, stream).view("<u8"))
        first_index = first if count else None
        ref_bits = cand_bits = None
        if first_index is not None:
            off = first_index * dt.itemsize
            ref_bits = int(copy_to_host(a.ptr + off, dt.itemsize, stream).view(dt.bits)[0])
            cand_bits = int(copy_to_host(b.ptr + off, dt.itemsize, stream).view(dt.bits)[0])
        small = a.nbytes <= SHA256_LIMIT if sha256 is None else sha256
        return RawComparison(
            dtype=dt.name, shape=a.shape, values=a.nbytes // dt.itemsize, differing=count, first_index=first_index,
            reference_bits=ref_bits, candidate_bits=cand_bits,
            reference_hash64=_hex64(_fmix_int(ha ^ a.nbytes)), candidate_hash64=_hex64(_fmix_int(hb ^ b.nbytes)),
            reference_sha256=_sha256(copy_to_host(a.ptr, a.nbytes, stream)) if small else None,
            candidate_sha256=_sha256(copy_to_host(b.ptr, b.nbytes, stream)) if small else None,
            comparator="device",
        )


_lock = threading.Lock()
_instance: DeviceComparator | None = None


def get() -> DeviceComparator:
    """The process's comparator (compiled once); rt.Unavailable without a device."""
    global _instance
    with _lock:
        if _instance is None:
            _instance = DeviceComparator()
        return _instance


def bit_exact(reference: Any, candidate: Any, dtype: str | None = None, stream: int = 0) -> RawComparison:
    """Device comparator when both sides are device arrays; numpy on the host otherwise."""
    from redfirst.gates.cuda.buffers import is_device_array

    if is_device_array(reference) and is_device_array(candidate):
        return get().compare(reference, candidate, stream)
    ref, cand = np.asarray(reference), np.asarray(candidate)
    return compare_host(ref, cand, dtype or dtypes.lookup(str(ref.dtype)).name)
