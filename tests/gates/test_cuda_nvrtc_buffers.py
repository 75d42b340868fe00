"""Root cause of issue #15's torch import failure, shown without a GPU.

NVRTC's `nvrtcGetProgramLog` and `nvrtcGetCUBIN` write into the buffer they are given, as C
does: through its address. `redfirst.gates.cuda.module._compile` handed them `b" " * size`; for an
empty log (size 1, the terminating NUL) CPython returns the literal itself, and a literal
compiled from source is the interpreter's one cached `b" "`. NVRTC overwrote it with NUL, so
afterwards `" ".encode()` is `b"\\x00"` in the whole process, and torch's schema parser saw
`annotate(str\\0tag)`. Here a FakeNvrtc (named so: NVRTC cannot run on this machine) writes
through the buffer's address exactly as the C library does; the child compiles
`redfirst.gates.cuda.module` from source (an empty pycache prefix), as a fresh device checkout does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import ctypes, json, sys, types
from redfirst.gates.cuda import module, rt


def _address(buf):
    # what Cython's char* coercion hands the C function: the object's own storage
    if isinstance(buf, bytearray):
        return ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    return ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p).value


class FakeNvrtc(types.SimpleNamespace):
    LOG = b""                      # an empty log: nvrtc reports size 1 (the NUL)
    CUBIN = b"\x7fELF-cubin-bytes"

    def nvrtcCreateProgram(self, *a): return (0, "prog")
    def nvrtcCompileProgram(self, *a): return (0,)
    def nvrtcGetProgramLogSize(self, prog): return (0, len(self.LOG) + 1)
    def nvrtcGetProgramLog(self, prog, buf):
        ctypes.memmove(_address(buf), self.LOG + b"\0", len(self.LOG) + 1)
        return (0,)
    def nvrtcGetCUBINSize(self, prog): return (0, len(self.CUBIN))
    def nvrtcGetCUBIN(self, prog, buf):
        ctypes.memmove(_address(buf), self.CUBIN, len(self.CUBIN))
        return (0,)
    def nvrtcDestroyProgram(self, prog): return (0,)


rt._bindings = rt.Bindings(driver=None, runtime=None, nvrtc=FakeNvrtc(), version="fake")
before = " ".encode().hex()
cubin = module._compile("extern \"C\" __global__ void k() {}", "sm_90", ())
print(json.dumps({"before": before, "after": " ".encode().hex(), "space_join": "-".join(["str", "tag"]),
                  "encoded_schema": "annotate(str tag) -> ()".encode().decode().split(" ")[0],
                  "one_space": bytes([32]).hex(), "cubin": bytes(cubin).hex()}))
"""


def test_compiling_leaves_the_interpreters_bytes_intact(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "pycache"), "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    assert doc["before"] == "20"
    assert doc["after"] == "20", "compiling a kernel overwrote the interpreter's shared b' ' with NUL"
    assert doc["one_space"] == "20"
    assert bytes.fromhex(doc["cubin"]) == b"\x7fELF-cubin-bytes"
