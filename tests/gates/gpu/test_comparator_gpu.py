"""The NVRTC comparator on a real device: the same raw result and report as the host comparator."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from redfirst.gates import compare
from redfirst.gates.cuda import comparator
from redfirst.gates.cuda.buffers import DeviceBuffer, DeviceView

pytestmark = pytest.mark.gpu

CASES = [
    ("uint8", 1), ("int8", 1), ("int16", 2), ("float16", 2), ("bfloat16", 2), ("int32", 4), ("float32", 4),
    ("uint64", 8), ("float64", 8),
]


def _pair(dtype: str, n: int, plant: list[int], seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    from redfirst.gates import dtypes

    dt = dtypes.lookup(dtype)
    raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8)
    a = raw.view(dt.bits).copy()
    b = a.copy()
    for i in plant:
        b[i] ^= dt.bits.type(1 << (8 * dt.itemsize - 1))  # flip the top bit: -0.0 vs 0.0 for floats
    return a, b


@pytest.mark.parametrize("dtype,itemsize", CASES)
@pytest.mark.parametrize("n,plant", [
    (1, []), (1, [0]), (7, [6]), (4096, []), (4097, [4096]), (100_003, [5, 77, 99_999]), (1 << 20, [123_457]),
])
def test_device_report_equals_host_report(dtype: str, itemsize: int, n: int, plant: list[int]) -> None:
    a, b = _pair(dtype, n, plant)
    with DeviceBuffer.from_host(a, dtype) as da, DeviceBuffer.from_host(b, dtype) as db:
        device = comparator.get().compare(da, db)
    host = comparator.compare_host(a, b, dtype)
    assert device.comparator == "device"
    assert device.report() == host.report()
    assert device.report() == compare.bit_exact(a, b, dtype, dtype, a.shape, b.shape)
    assert (device.reference_hash64, device.candidate_hash64) == (host.reference_hash64, host.candidate_hash64)
    assert device.differing == len(plant)
    assert device.first_index == (min(plant) if plant else None)


@pytest.mark.parametrize("offset", [1, 3, 8, 12])
def test_unaligned_views_compare_exactly(offset: int) -> None:
    n = 10_000
    a, b = _pair("uint8", n + offset, [offset + 17, offset + 9_000])
    with DeviceBuffer.from_host(a) as da, DeviceBuffer.from_host(b) as db:
        va = DeviceView(da.ptr + offset, n, "uint8", (n,))
        vb = DeviceView(db.ptr + offset, n, "uint8", (n,))
        device = comparator.get().compare(va, vb)
    host = comparator.compare_host(a[offset:], b[offset:], "uint8")
    assert device.report() == host.report()
    assert device.reference_hash64 == host.reference_hash64
    assert (device.differing, device.first_index) == (2, 17)


def test_nan_payloads_and_signed_zero_differ_on_device() -> None:
    bits = np.array([0x7FC00000, 0x7FC00001, 0x00000000, 0x3F800000], dtype=np.uint32)
    other = np.array([0x7FC00000, 0x7FC00002, 0x80000000, 0x3F800000], dtype=np.uint32)
    with DeviceBuffer.from_host(bits, "float32") as da, DeviceBuffer.from_host(other, "float32") as db:
        raw = comparator.get().compare(da, db)
    assert (raw.values, raw.differing, raw.first_index) == (4, 2, 1)
    assert raw.report().describe().endswith("reference 0x7fc00001 candidate 0x7fc00002")


def test_large_buffer_keeps_hash64_without_sha256() -> None:
    n = (comparator.SHA256_LIMIT // 4) + 1024
    a = np.arange(n, dtype=np.uint32)
    b = a.copy()
    b[n - 1] = 7
    with DeviceBuffer.from_host(a, "uint32") as da, DeviceBuffer.from_host(b, "uint32") as db:
        raw = comparator.get().compare(da, db)
    assert raw.reference_sha256 is None and raw.candidate_sha256 is None
    assert (raw.values, raw.differing, raw.first_index, raw.candidate_bits) == (n, 1, n - 1, 7)
    assert raw.reference_hash64 == comparator.host_hash64(a)
    assert raw.candidate_hash64 == comparator.host_hash64(b)


TORCH_SCRIPT = """
import json
import torch
from redfirst.gates.cuda import comparator
x = torch.arange(1000, dtype=torch.bfloat16, device="cuda")
y = x.clone()
y[500] = -1
raw = comparator.bit_exact(x, y)
host = comparator.bit_exact(x.cpu().view(torch.uint16).numpy(), y.cpu().view(torch.uint16).numpy(), "bfloat16")
print(json.dumps({"device": raw.as_record(), "host": host.as_record(), "same": raw.report() == host.report()}))
"""


def test_torch_tensors_are_compared_on_device() -> None:
    # in a child, with torch imported after the comparator compiled (the order issue #15 broke)
    p = subprocess.run([sys.executable, "-c", TORCH_SCRIPT], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    raw = doc["device"]
    assert raw["comparator"] == "device" and raw["dtype"] == "bfloat16"
    assert (raw["values"], raw["differing"], raw["first_index"]) == (1000, 1, 500)
    assert doc["host"]["comparator"] == "host" and doc["same"] is True
