"""The cuda-python bindings, loaded on demand, and one way of checking their results.

cuda-python (`cuda.bindings`) binds the versioned, capture-aware driver entry points
through cuGetProcAddress; a bare dlsym of an unversioned name would bind legacy ones
that refuse work inside a capture. Every call returns `(status, *values)`; `ok` turns a
bad status into `CudaError` naming the call and the status.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any


class Unavailable(Exception):
    """No cuda-python, no driver or no device: the reason is the NO_DECISION reason."""


class CudaError(RuntimeError):
    """A CUDA call returned an error status."""

    def __init__(self, what: str, status: Any) -> None:
        self.what = what
        self.status = status
        super().__init__(f"{what} failed: {getattr(status, 'name', status)}")


@dataclass(frozen=True)
class Bindings:
    driver: ModuleType
    runtime: ModuleType
    nvrtc: ModuleType
    version: str


_lock = threading.Lock()
_bindings: Bindings | None = None
_device: int | None = None


def bindings() -> Bindings:
    """cuda.bindings' driver, runtime and nvrtc modules; Unavailable without cuda-python."""
    global _bindings
    if _bindings is None:
        try:
            import cuda.bindings as cb
            from cuda.bindings import driver, nvrtc, runtime
        except ImportError as exc:
            raise Unavailable(
                f"cuda-python is not installed ({exc}); install the extra: pip install '.[cuda]' in the redfirst checkout"
            ) from exc
        _bindings = Bindings(driver, runtime, nvrtc, str(getattr(cb, "__version__", "unknown")))
    return _bindings


def ok(ret: Any, what: str) -> Any:
    """The values of a cuda-python call; CudaError when its status is not success.

    Returns None for a call that returns only a status, the value for one value, and
    the tuple otherwise.
    """
    if not isinstance(ret, tuple):
        ret = (ret,)
    status, values = ret[0], ret[1:]
    if int(status) != 0:
        raise CudaError(what, status)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def error_name(status: Any) -> str:
    return str(getattr(status, "name", status))


def device(index: int = 0) -> int:
    """Make device `index` current on this thread (its primary context); Unavailable without one.

    Both the runtime API (streams, capture) and the driver API (NVRTC modules) then work
    in the same primary context that PyTorch and CuPy use.
    """
    global _device
    b = bindings()
    with _lock:
        try:
            status, count = b.runtime.cudaGetDeviceCount()
        except RuntimeError as exc:  # cuda-python raises when libcuda.so.1 cannot be loaded
            raise Unavailable(f"no CUDA driver: {exc}") from exc
        if int(status) != 0:
            raise Unavailable(f"no CUDA device: cudaGetDeviceCount returned {error_name(status)}")
        if count < 1:
            raise Unavailable("no CUDA device: cudaGetDeviceCount found 0 devices")
        if index >= count:
            raise Unavailable(f"no CUDA device {index}: {count} device(s) present")
        ok(b.runtime.cudaSetDevice(index), "cudaSetDevice")
        ok(b.runtime.cudaFree(0), "cudaFree(0) (context creation)")
        _device = index
    return index


def synchronize(stream: int) -> None:
    b = bindings()
    ok(b.runtime.cudaStreamSynchronize(stream), "cudaStreamSynchronize")


def new_stream() -> int:
    """A non-blocking stream (never implicitly synchronised with the legacy default stream)."""
    b = bindings()
    s = ok(b.runtime.cudaStreamCreateWithFlags(b.runtime.cudaStreamNonBlocking), "cudaStreamCreateWithFlags")
    return int(s)
