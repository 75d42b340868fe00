"""The `sim` backend: numpy buffers, and segments that really record and re-execute.

A segment is the list of kernel launches made while it was open, each a closure over
the stored buffers it reads and writes (as a CUDA graph records kernels over device
pointers). Replay re-runs those closures; nothing is recomputed from the model, so a
buffer the seam forgot to refresh is read stale, exactly as on a GPU. Unlike CUDA
stream capture, the sim also runs each kernel as it records it, which leaves the
buffers as one run over the capture inputs would (the Protocol's `end_segment` promise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from seam.backends import BreakOp, Buffer, Counts

EPS = np.float32(1e-6)


def matmul(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    np.matmul(a, b, out=out)


def rmsnorm(x: np.ndarray, gain: np.ndarray, *, out: np.ndarray) -> None:
    mean_square = np.mean(np.square(x), axis=-1, keepdims=True, dtype=np.float32)
    np.multiply(x, np.float32(1.0) / np.sqrt(mean_square + EPS), out=out)
    np.multiply(out, gain, out=out)


def add(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    np.add(a, b, out=out)


KERNEL_FUNCTIONS: dict[str, Callable[..., None]] = {"matmul": matmul, "rmsnorm": rmsnorm, "add": add}


@dataclass(frozen=True)
class SimSegment:
    kernels: tuple[Callable[[], None], ...]


class SimBackend:
    name = "sim"

    def __init__(self) -> None:
        self._open: list[Callable[[], None]] | None = None
        # counted here, not by the seam, so a gate can check the seam's own bookkeeping
        self.segments_replayed = 0
        self.eager_runs = 0

    def alloc(self, shape: tuple[int, ...], dtype: str = "float32") -> Buffer:
        # uninitialised device memory, made visible: a read before any write yields NaN
        return np.full(shape, np.nan, dtype=dtype)

    def alloc_like(self, like: Buffer) -> Buffer:
        return self.alloc(tuple(like.shape), str(like.dtype))

    def copy_into(self, dst: Buffer, src: Buffer) -> None:
        if dst.shape != src.shape or dst.dtype != src.dtype:
            raise ValueError(f"copy_into: {src.dtype}{list(src.shape)} into {dst.dtype}{list(dst.shape)}")
        self._refuse_open("copy_into")
        np.copyto(dst, src)

    def upload(self, dst: Buffer, host: np.ndarray) -> None:
        self.copy_into(dst, np.asarray(host))

    def from_host(self, host: np.ndarray) -> Buffer:
        return np.array(host, copy=True, order="C")

    def to_host(self, buf: Buffer) -> np.ndarray:
        return np.array(buf, copy=True)

    def fill(self, buf: Buffer, value: float) -> None:
        buf.fill(value)

    def launch(self, name: str, out: Buffer, *args: Buffer) -> None:
        kernel = partial(KERNEL_FUNCTIONS[name], *args, out=out)
        if self._open is not None:
            self._open.append(kernel)
        kernel()

    def begin_segment(self) -> None:
        if self._open is not None:
            raise RuntimeError("begin_segment: a segment is already open")
        self._open = []

    def end_segment(self) -> SimSegment:
        if self._open is None:
            raise RuntimeError("end_segment: no segment is open")
        segment = SimSegment(tuple(self._open))
        self._open = None
        return segment

    def abort_segment(self) -> None:
        self._open = None

    def replay_segment(self, segment: SimSegment) -> None:
        self._refuse_open("replay_segment")
        for kernel in segment.kernels:
            kernel()
        self.segments_replayed += 1

    def run_eager(self, op: BreakOp, *args: Buffer) -> Buffer:
        self._refuse_open("run_eager")
        self.eager_runs += 1
        return op(*args)

    def counts(self) -> Counts:
        return Counts(segments_replayed=self.segments_replayed, eager_runs=self.eager_runs)

    def _refuse_open(self, what: str) -> None:
        # on a GPU these would be captured into the segment instead of running now
        if self._open is not None:
            raise RuntimeError(f"{what} while a segment is open")


def create() -> SimBackend:
    return SimBackend()
