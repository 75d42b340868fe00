"""Device identity: what every GPU evidence record keeps about the device it ran on."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from redfirst.gates.cuda import rt


@dataclass(frozen=True)
class DeviceIdentity:
    """Name, compute capability, driver and toolkit versions of one CUDA device."""

    index: int
    name: str
    uuid: str
    compute_capability: str        # "9.0"
    multiprocessors: int
    total_memory: int              # bytes
    driver_api: str                # CUDA version the driver supports: "13.0"
    driver_release: str | None     # kernel module release, "580.159.04", when readable
    runtime: str                   # CUDA runtime (toolkit) version cuda-python loaded: "13.0"
    nvrtc: str                     # NVRTC version that compiles the comparator
    cuda_bindings: str             # cuda-python's cuda.bindings version

    def as_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> DeviceIdentity:
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})  # type: ignore[arg-type]

    def describe(self) -> str:
        release = f" (driver {self.driver_release})" if self.driver_release else ""
        return (
            f"{self.name}, sm {self.compute_capability}, {self.multiprocessors} SMs, "
            f"{self.total_memory / 2**30:.0f} GiB; CUDA driver API {self.driver_api}{release}, "
            f"runtime {self.runtime}, NVRTC {self.nvrtc}, cuda.bindings {self.cuda_bindings}"
        )


def _version(encoded: int) -> str:
    # CUDA encodes versions as 1000 * major + 10 * minor
    return f"{encoded // 1000}.{(encoded % 1000) // 10}"


def _driver_release() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8")
    except OSError:
        return None
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None


def identify(index: int = 0) -> DeviceIdentity:
    """Identity of device `index` (made current); rt.Unavailable without cuda-python or a device."""
    b = rt.bindings()
    rt.device(index)
    drv, run, nvrtc = b.driver, b.runtime, b.nvrtc
    dev = rt.ok(drv.cuDeviceGet(index), "cuDeviceGet")
    name = rt.ok(drv.cuDeviceGetName(256, dev), "cuDeviceGetName")
    name = name.split(b"\0", 1)[0].decode() if isinstance(name, bytes) else str(name)
    uuid = rt.ok(drv.cuDeviceGetUuid(dev), "cuDeviceGetUuid")
    raw = bytes(getattr(uuid, "bytes", b""))
    uuid_text = "GPU-" + "-".join(raw.hex()[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32))) if raw else ""
    attr = drv.CUdevice_attribute
    major = rt.ok(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
    minor = rt.ok(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
    sms = rt.ok(drv.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute")
    total = rt.ok(drv.cuDeviceTotalMem(dev), "cuDeviceTotalMem")
    nv_major, nv_minor = rt.ok(nvrtc.nvrtcVersion(), "nvrtcVersion")
    return DeviceIdentity(
        index=index,
        name=name,
        uuid=uuid_text,
        compute_capability=f"{major}.{minor}",
        multiprocessors=int(sms),
        total_memory=int(total),
        driver_api=_version(int(rt.ok(drv.cuDriverGetVersion(), "cuDriverGetVersion"))),
        driver_release=_driver_release(),
        runtime=_version(int(rt.ok(run.cudaRuntimeGetVersion(), "cudaRuntimeGetVersion"))),
        nvrtc=f"{nv_major}.{nv_minor}",
        cuda_bindings=b.version,
    )
