"""Issue #15's root cause with the real NVRTC: run as `python3 torch-import-repro.py old|new` (from source).

`old` hands nvrtcGetProgramLog `b" " * size` as gates.cuda.module did; `new` a fresh bytearray.
Prints the log size, what `" ".encode()` is afterwards, and whether `import torch` then works.
"""

import sys

from cuda.bindings import nvrtc

mode = sys.argv[1]
_, prog = nvrtc.nvrtcCreateProgram(b'extern "C" __global__ void k() {}', b"k.cu", 0, [], [])
nvrtc.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=sm_90"])
_, size = nvrtc.nvrtcGetProgramLogSize(prog)
log = b" " * size if mode == "old" else bytearray(size)
nvrtc.nvrtcGetProgramLog(prog, log)
print(f"{mode}: log size {size}; ' '.encode() is now {' '.encode()!r}", flush=True)  # noqa: UP012 (str.encode is the path that met the shared b' ')
try:
    import torch

    print(f"{mode}: import torch {torch.__version__}: ok")
except Exception as exc:
    print(f"{mode}: import torch failed: {type(exc).__name__}: {str(exc).splitlines()[0]!r} "
          f"{[ln for ln in str(exc).splitlines() if 'annotate' in ln][:1]}")
