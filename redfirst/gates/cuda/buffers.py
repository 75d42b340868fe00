"""Device buffers as the comparator and the capture driver see them: pointer, bytes, dtype, shape."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from redfirst.gates.cuda import rt
from redfirst.gates.evidence import dtype_name

# __cuda_array_interface__ typestrs (little-endian) -> protocol dtype names
_TYPESTR = {
    "|i1": "int8", "<i2": "int16", "<i4": "int32", "<i8": "int64",
    "|u1": "uint8", "<u2": "uint16", "<u4": "uint32", "<u8": "uint64",
    "<f2": "float16", "<f4": "float32", "<f8": "float64", "|b1": "bool",
}
_TORCH = {
    "torch.bfloat16": "bfloat16", "torch.float8_e4m3fn": "float8_e4m3", "torch.float8_e5m2": "float8_e5m2",
    "torch.bool": "bool",
}


@dataclass(frozen=True)
class DeviceView:
    """A contiguous device buffer someone else owns."""

    ptr: int
    nbytes: int
    dtype: str                 # protocol dtype name
    shape: tuple[int, ...]

    @property
    def itemsize(self) -> int:
        return self.nbytes // max(1, math.prod(self.shape)) if self.shape else self.nbytes

    @property
    def values(self) -> int:
        return math.prod(self.shape)


def is_device_array(obj: Any) -> bool:
    return isinstance(obj, (DeviceView, DeviceBuffer)) or hasattr(obj, "__cuda_array_interface__") or (
        hasattr(obj, "data_ptr") and getattr(getattr(obj, "device", None), "type", None) == "cuda"
    )


def view_of(obj: Any) -> DeviceView:
    """A DeviceView of a DeviceBuffer, a torch CUDA tensor, a CuPy array or anything with
    `__cuda_array_interface__`; ValueError for a non-contiguous or host array."""
    if isinstance(obj, DeviceView):
        return obj
    if isinstance(obj, DeviceBuffer):
        return obj.view
    if hasattr(obj, "data_ptr") and hasattr(obj, "is_contiguous"):  # torch: bf16/fp8 lack the interface
        if getattr(obj.device, "type", None) != "cuda":
            raise ValueError(f"a {obj.device} tensor is not on a CUDA device")
        if not obj.is_contiguous():
            raise ValueError("the comparator needs a contiguous tensor")
        name = _TORCH.get(str(obj.dtype)) or str(obj.dtype).removeprefix("torch.")
        return DeviceView(int(obj.data_ptr()), obj.numel() * obj.element_size(), name, tuple(obj.shape))
    face = getattr(obj, "__cuda_array_interface__", None)
    if face is None:
        raise ValueError(f"{type(obj).__name__} is not a device array")
    shape = tuple(int(s) for s in face["shape"])
    typestr = face["typestr"]
    name = _TYPESTR.get(typestr) or dtype_name(np.dtype(typestr))
    itemsize = np.dtype(typestr).itemsize
    strides = face.get("strides")
    if strides is not None:
        expected, step = [], itemsize
        for s in reversed(shape):
            expected.append(step)
            step *= s
        if tuple(strides) != tuple(reversed(expected)) and math.prod(shape) > 1:
            raise ValueError("the comparator needs a C-contiguous array")
    return DeviceView(int(face["data"][0]), math.prod(shape) * itemsize, name, shape)


class DeviceBuffer:
    """Memory from cudaMalloc (never managed memory), freed by `free()` or at exit of a `with`."""

    def __init__(self, nbytes: int, dtype: str = "uint8", shape: tuple[int, ...] | None = None) -> None:
        b = rt.bindings()
        self.nbytes = int(nbytes)
        self.ptr = int(rt.ok(b.runtime.cudaMalloc(max(1, self.nbytes)), "cudaMalloc"))
        self.view = DeviceView(self.ptr, self.nbytes, dtype, shape if shape is not None else (self.nbytes,))

    @classmethod
    def like(cls, view: DeviceView) -> DeviceBuffer:
        return cls(view.nbytes, view.dtype, view.shape)

    @classmethod
    def from_host(cls, array: np.ndarray[Any, Any], dtype: str | None = None) -> DeviceBuffer:
        data = np.ascontiguousarray(array)
        buf = cls(data.nbytes, dtype or dtype_name(data.dtype), tuple(data.shape))
        buf.upload(data)
        return buf

    def upload(self, array: np.ndarray[Any, Any], stream: int = 0) -> None:
        data = np.ascontiguousarray(array)
        if data.nbytes != self.nbytes:
            raise ValueError(f"{data.nbytes} bytes into a buffer of {self.nbytes}")
        copy_to_device(self.ptr, data, stream)

    def download(self, dtype: Any = np.uint8, stream: int = 0) -> np.ndarray[Any, Any]:
        return copy_to_host(self.ptr, self.nbytes, stream).view(dtype)

    def free(self) -> None:
        if self.ptr:
            rt.ok(rt.bindings().runtime.cudaFree(self.ptr), "cudaFree")
            self.ptr = 0

    def __enter__(self) -> DeviceBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.free()


def copy_to_host(ptr: int, nbytes: int, stream: int = 0) -> np.ndarray[Any, Any]:
    """Bytes of device memory, after the work queued on `stream` before it (stream synchronised)."""
    b = rt.bindings()
    out = np.empty(nbytes, dtype=np.uint8)
    if nbytes:
        rt.ok(b.runtime.cudaMemcpyAsync(out.ctypes.data, ptr, nbytes, b.runtime.cudaMemcpyKind.cudaMemcpyDeviceToHost,
                                        b.runtime.cudaStream_t(int(stream))), "cudaMemcpyAsync device to host")
    rt.synchronize(stream)
    return out


def copy_to_device(ptr: int, data: np.ndarray[Any, Any], stream: int = 0) -> None:
    """Host bytes into device memory, ordered on `stream` and finished when this returns."""
    b = rt.bindings()
    if data.nbytes:
        rt.ok(b.runtime.cudaMemcpyAsync(ptr, data.ctypes.data, data.nbytes,
                                        b.runtime.cudaMemcpyKind.cudaMemcpyHostToDevice,
                                        b.runtime.cudaStream_t(int(stream))), "cudaMemcpyAsync host to device")
    rt.synchronize(stream)


def copy_async(dst: int, src: int, nbytes: int, stream: int) -> None:
    b = rt.bindings()
    rt.ok(b.runtime.cudaMemcpyAsync(dst, src, nbytes, b.runtime.cudaMemcpyKind.cudaMemcpyDeviceToDevice,
                                    b.runtime.cudaStream_t(int(stream))), "cudaMemcpyAsync device to device")


def fill_async(ptr: int, byte: int, nbytes: int, stream: int) -> None:
    b = rt.bindings()
    rt.ok(b.runtime.cudaMemsetAsync(ptr, byte, nbytes, b.runtime.cudaStream_t(int(stream))), "cudaMemsetAsync")
