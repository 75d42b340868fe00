"""A GPU slot is the GPU, named by its UUID (issue #12): its machine-wide lock, and what a leased
command is told to use, do not depend on the order CUDA enumerated devices in the detecting process.

cuda-python cannot run here (no GPU): `FakeDriver` below is a fake of `cuda.bindings.driver`, named
as such, answering the same calls with two devices. tests/leases/gpu/ checks the same on the H200.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from redfirst.leases import detect
from redfirst.leases.backends.local import LocalBackend
from redfirst.leases.config import LeasesConfig
from redfirst.leases.model import LeaseRequest

UUIDS = (bytes(range(16)), bytes(range(16, 32)))
SUCCESS = 0


class _Uuid:
    def __init__(self, raw: bytes) -> None:
        self.bytes = raw


class FakeDriver(types.ModuleType):
    """A fake of cuda.bindings.driver: two H200s, in the (error, *values) convention cuda-python uses."""

    class CUdevice_attribute:  # noqa: N801 - the binding's own name
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76

    def __init__(self) -> None:
        super().__init__("cuda.bindings.driver")

    def cuInit(self, flags: int) -> tuple[int]:  # noqa: N802
        return (SUCCESS,)

    def cuDeviceGetCount(self) -> tuple[int, int]:  # noqa: N802
        return SUCCESS, 2

    def cuDriverGetVersion(self) -> tuple[int, int]:  # noqa: N802
        return SUCCESS, 13000

    def cuDeviceGet(self, i: int) -> tuple[int, int]:  # noqa: N802
        return SUCCESS, i

    def cuDeviceGetName(self, n: int, dev: int) -> tuple[int, bytes]:  # noqa: N802
        return SUCCESS, b"NVIDIA H200\0"

    def cuDeviceGetAttribute(self, attr: int, dev: int) -> tuple[int, int]:  # noqa: N802
        return SUCCESS, 9 if attr == 75 else 0

    def cuDeviceTotalMem(self, dev: int) -> tuple[int, int]:  # noqa: N802
        return SUCCESS, 150 << 30

    def cuDeviceGetUuid(self, dev: int) -> tuple[int, Any]:  # noqa: N802
        return SUCCESS, _Uuid(UUIDS[dev])


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    cuda = types.ModuleType("cuda")
    bindings = types.ModuleType("cuda.bindings")
    driver = FakeDriver()
    bindings.driver = driver  # type: ignore[attr-defined]
    cuda.bindings = bindings  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cuda", cuda)
    monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", driver)
    monkeypatch.setattr(detect, "_driver_version", lambda: "580.159.04")
    for name in detect.VIEW_VARIABLES:      # set, they would have the machine's GPUs found by a child, not this fake
        monkeypatch.delenv(name, raising=False)
    detect.local_gpus.cache_clear()    # detection is cached per process: an earlier test saw no GPU
    yield
    detect.local_gpus.cache_clear()    # and later tests must not see the fake's two GPUs


def test_detected_gpus_carry_their_uuid_as_nvidia_smi_prints_it(two_gpus: None) -> None:
    gpus, _ = detect.local_gpus()
    assert [g.uuid for g in gpus] == ["GPU-00010203-0405-0607-0809-0a0b0c0d0e0f",
                                      "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f"]


def test_a_gpu_slot_is_locked_by_its_uuid_and_the_command_is_told_that_uuid(
        two_gpus: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDFIRST_LEASES_DB", raising=False)
    backend = LocalBackend(LeasesConfig(db=tmp_path / "leases.db"))
    assert backend.lock_path("local", "gpu1").name == "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f.lock"
    lease = backend.acquire(LeaseRequest(box="local"), 0, detached=True)
    try:
        # an index would name another GPU under an inherited CUDA_VISIBLE_DEVICES; the UUID cannot
        assert backend.env(lease)["CUDA_VISIBLE_DEVICES"] == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
    finally:
        backend.release(lease.id, lease.token)


def test_a_real_gpu_is_locked_in_the_machine_folder_whatever_redfirst_lock_dir_says(
        two_gpus: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # REDFIRST_LOCK_DIR gives tests a private "machine" for declared boxes and the CPU slot; a real GPU (a UUID)
    # is this machine's, so two processes that set it differently still exclude each other on it.
    import redfirst.leases.backends.local.slot_locks as local
    from redfirst.leases.model import NotGranted

    machine = local.LOCK_BASES[0]       # the test's own "machine" (conftest.machine_locks)
    monkeypatch.delenv("REDFIRST_LEASES_DB", raising=False)
    backends = []
    for name in ("a", "b"):
        monkeypatch.setenv("REDFIRST_LOCK_DIR", str(tmp_path / f"locks-{name}"))
        backends.append(LocalBackend(LeasesConfig(db=tmp_path / name / "leases.db")))
    a, b = backends
    held = a.acquire(LeaseRequest(box="local", gpus=1), 0, detached=True)
    other = b.acquire(LeaseRequest(box="local", gpus=1), 0, detached=True)
    assert set(held.slots).isdisjoint(other.slots), (held.slots, other.slots)
    with pytest.raises(NotGranted, match=f"{held.id} of lease file {tmp_path / 'a'}"):
        b.acquire(LeaseRequest(box="local", gpus=1), 0.2, detached=True)
    assert a.lock_path("local", "gpu0").parent == machine / "redfirst"
    assert a.lock_path("tort", "gpu0").parent == tmp_path / "locks-a"      # a declared box: the test's own folder


def test_a_declared_gpu_count_for_the_local_box_still_names_its_gpus_by_uuid(
        two_gpus: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One repository declares `local: {gpus: 1}` (to use one GPU of the two, or to add labels), another declares
    # nothing: gpu0 is the same GPU for both, so it is one lock, not `gpu0.lock` for one and its UUID for the other.
    from redfirst.leases.config import load
    from redfirst.leases.model import NotGranted

    declared = tmp_path / "declared"
    declared.mkdir()
    (declared / "redfirst.yaml").write_text("leases:\n  boxes:\n    local: {gpus: 1, labels: {team: a}}\n")
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "a" / "leases.db"))
    a = LocalBackend(load(declared))
    monkeypatch.setenv("REDFIRST_LEASES_DB", str(tmp_path / "b" / "leases.db"))
    b = LocalBackend(load(tmp_path))
    assert a.lock_path("local", "gpu0") == b.lock_path("local", "gpu0")
    held = a.acquire(LeaseRequest(box="local", gpus=1), 0, detached=True)
    assert b.acquire(LeaseRequest(box="local", gpus=1), 0, detached=True).slots == ("gpu1",)
    with pytest.raises(NotGranted, match=f"{held.id} of lease file {tmp_path / 'a'}"):
        b.acquire(LeaseRequest(box="local", gpus=1), 0.2, detached=True)
