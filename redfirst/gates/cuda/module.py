"""CUDA C++ compiled at run time with NVRTC through cuda-python, loaded as a module.

Compiled straight to the device's own machine code (`sm_XY` cubin), so the driver never
JIT-compiles PTX from a newer NVRTC than it understands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from redfirst.gates.cuda import rt


class CompileError(RuntimeError):
    """NVRTC rejected the source; the message holds its log."""


@dataclass(frozen=True)
class Arg:
    """A kernel argument with its C type: numpy dtype of the value (pointers are uint64)."""

    value: int | float
    dtype: str = "uint64"


def ptr(value: int) -> Arg:
    return Arg(int(value), "uint64")


def u64(value: int) -> Arg:
    return Arg(int(value), "uint64")


def u32(value: int) -> Arg:
    return Arg(int(value), "uint32")


def i32(value: int) -> Arg:
    return Arg(int(value), "int32")


def f32(value: float) -> Arg:
    return Arg(float(value), "float32")


def arch_of(compute_capability: str) -> str:
    major, minor = compute_capability.split(".")
    return f"sm_{major}{minor}"


class Module:
    """One compiled NVRTC program: its kernels by name, launched on a stream."""

    def __init__(self, source: str, names: Sequence[str], *, arch: str, options: Sequence[str] = ()) -> None:
        b = rt.bindings()
        self.arch = arch
        self.cubin = _compile(source, arch, options)
        self._module = rt.ok(b.driver.cuModuleLoadData(self.cubin), "cuModuleLoadData")
        self._functions = {
            n: rt.ok(b.driver.cuModuleGetFunction(self._module, n.encode()), f"cuModuleGetFunction({n})")
            for n in names
        }

    def function(self, name: str) -> Any:
        return self._functions[name]

    def max_blocks_per_sm(self, name: str, block: int, shared: int = 0) -> int:
        b = rt.bindings()
        return int(rt.ok(
            b.driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(self._functions[name], block, shared),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        ))

    def launch(self, name: str, grid: int, block: int, args: Sequence[Arg], stream: int, shared: int = 0) -> None:
        """Enqueue kernel `name` on `stream` (captured when the stream is capturing).

        The argument values are copied by the driver at launch (and at capture), so the
        holders below may go away once the call returns.
        """
        b = rt.bindings()
        holders = [np.array([a.value], dtype=a.dtype) for a in args]
        addresses = np.array([h.ctypes.data for h in holders], dtype=np.uint64)
        rt.ok(
            b.driver.cuLaunchKernel(
                self._functions[name], grid, 1, 1, block, 1, 1, shared,
                b.driver.CUstream(int(stream)), addresses.ctypes.data, 0,
            ),
            f"cuLaunchKernel({name})",
        )


def _compile(source: str, arch: str, options: Sequence[str]) -> bytes:
    nvrtc = rt.bindings().nvrtc
    prog = rt.ok(nvrtc.nvrtcCreateProgram(source.encode(), b"gates.cu", 0, [], []), "nvrtcCreateProgram")
    try:
        opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17", *(o.encode() for o in options)]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log_size = rt.ok(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        log = bytearray(log_size)  # a fresh writable buffer: `b" " * 1` is the interpreter's shared b" "
        rt.ok(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
        if int(status) != 0:
            raise CompileError(f"NVRTC failed for {arch}: {rt.error_name(status)}\n{log.decode(errors='replace')}")
        size = rt.ok(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = bytearray(size)
        rt.ok(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
        return bytes(cubin)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
