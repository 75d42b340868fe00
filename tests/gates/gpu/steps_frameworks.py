"""cuda-graph factories written the way PyTorch, CuPy and Triton users write them.

Each module-level import below happens when the driver's child loads the factory, i.e. after
`redfirst.gates.cuda.comparator` has compiled its kernel with NVRTC (the order that failed in issue #15).
Variants: `torch`, `cupy`, `triton`; shape = [n]; y = x * 3 + 1 on the stream the driver gives.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


class TorchStep:
    def __init__(self, n: int) -> None:
        import torch

        self.torch = torch
        self.x = torch.empty(n, device="cuda")
        self.y = torch.empty(n, device="cuda")

    def inputs(self, seed: int, stream: int) -> None:
        g = self.torch.Generator().manual_seed(seed)
        self.x.copy_(self.torch.randn(self.x.shape, generator=g))
        self.torch.cuda.synchronize()

    def __call__(self, stream: int) -> None:
        with self.torch.cuda.stream(self.torch.cuda.ExternalStream(stream)):
            self.torch.mul(self.x, 3.0, out=self.y)
            self.y.add_(1.0)

    def outputs(self) -> Mapping[str, Any]:
        return {"y": self.y}


class CupyStep:
    def __init__(self, n: int) -> None:
        import cupy

        self.cp = cupy
        self.x = cupy.empty(n, dtype=cupy.float32)
        self.y = cupy.empty(n, dtype=cupy.float32)

    def inputs(self, seed: int, stream: int) -> None:
        import numpy as np

        self.x.set(np.random.default_rng(seed).standard_normal(self.x.size, dtype=np.float32))
        self.cp.cuda.Device().synchronize()

    def __call__(self, stream: int) -> None:
        with self.cp.cuda.ExternalStream(stream):
            self.cp.multiply(self.x, 3.0, out=self.y)
            self.cp.add(self.y, 1.0, out=self.y)

    def outputs(self) -> Mapping[str, Any]:
        return {"y": self.y}


class TritonStep(TorchStep):
    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.kernel = importlib.import_module("steps_triton_kernel").affine
        self.kernel(self.x, self.y)  # compile (JIT) outside any capture

    def __call__(self, stream: int) -> None:
        with self.torch.cuda.stream(self.torch.cuda.ExternalStream(stream)):
            self.kernel(self.x, self.y)


def make_step(variant: str, shape: tuple[int, ...]) -> Any:
    (n,) = shape
    return {"torch": TorchStep, "cupy": CupyStep, "triton": TritonStep}[variant](n)
