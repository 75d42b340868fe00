"""A FAKE of `cuda.bindings.driver` for the leases tests' subprocesses, named as such: no GPU runs here.

It answers the calls `redfirst.leases.detect` makes, in cuda-python's (error, *values) convention, for
`REDFIRST_FAKE_GPUS` H200s (default 2) whose UUIDs are bytes(range(16 i, 16 i + 16)), and it honours
CUDA_VISIBLE_DEVICES as the real driver does: a comma list of indices or `GPU-` UUID prefixes, read at
cuInit, the visible devices renumbered from 0 in that order, the list cut at the first entry that names
no device; empty: no device. (fake_cuda/sitecustomize.py keeps the fake GPUs' locks out of /run/lock.)
"""

from __future__ import annotations

import os
from typing import Any

SUCCESS, NOT_INITIALIZED, NO_DEVICE = 0, 3, 100

_ALL = [bytes(range(16 * i, 16 * i + 16)) for i in range(int(os.environ.get("REDFIRST_FAKE_GPUS", "2")))]
_visible: list[bytes] | None = None


def _uuid_text(raw: bytes) -> str:
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _pick(spec: str) -> list[bytes]:
    out: list[bytes] = []
    for entry in (e.strip() for e in spec.split(",")):
        if entry.isdigit() and int(entry) < len(_ALL):
            found = [_ALL[int(entry)]]
        else:
            found = [u for u in _ALL if entry.startswith("GPU-") and _uuid_text(u).startswith(entry)]
        if len(found) != 1 or found[0] in out:
            break
        out.append(found[0])
    return out


class CUdevice_attribute:  # noqa: N801 - the binding's own name
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


class _Uuid:
    def __init__(self, raw: bytes) -> None:
        self.bytes = raw


def cuInit(flags: int) -> tuple[int]:  # noqa: N802
    global _visible
    spec = os.environ.get("CUDA_VISIBLE_DEVICES")
    _visible = list(_ALL) if spec is None else _pick(spec)
    return (SUCCESS if _visible else NO_DEVICE,)


def cuDeviceGetCount() -> tuple[int, int]:  # noqa: N802
    return (NOT_INITIALIZED, 0) if _visible is None else (SUCCESS, len(_visible))


def cuDriverGetVersion() -> tuple[int, int]:  # noqa: N802
    return SUCCESS, 13000


def cuDeviceGet(i: int) -> tuple[int, int]:  # noqa: N802
    return SUCCESS, i


def cuDeviceGetName(n: int, dev: int) -> tuple[int, bytes]:  # noqa: N802
    return SUCCESS, b"NVIDIA H200\0"


def cuDeviceGetAttribute(attr: int, dev: int) -> tuple[int, int]:  # noqa: N802
    return SUCCESS, 9 if attr == 75 else 0


def cuDeviceTotalMem(dev: int) -> tuple[int, int]:  # noqa: N802
    return SUCCESS, 150 << 30


def cuDeviceGetUuid(dev: int) -> tuple[int, Any]:  # noqa: N802
    assert _visible is not None
    return SUCCESS, _Uuid(_visible[dev])
