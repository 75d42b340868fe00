"""Gate entry points of the CUDA variants (`gates/*-cuda.yaml`): the seam's own gate functions
with the `cuda` backend, so the CUDA gates check exactly what the sim gates check."""

from __future__ import annotations

import os

from seam import backends
from seam import gates as seam_gates

# Until seam/backends/__init__.py's registry names it; a no-op once it does.
backends.REGISTRY.setdefault("cuda", "cuda")


def _on_cuda() -> None:
    os.environ["SEAM_BACKEND"] = "cuda"


def g1_replay() -> None:
    _on_cuda()
    seam_gates.g1_replay()


def g2_reachability() -> None:
    _on_cuda()
    seam_gates.g2_reachability()


def g3_counts() -> None:
    _on_cuda()
    seam_gates.g3_counts()
