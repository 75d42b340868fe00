"""What this machine has: its GPUs through cuda-python when importable, the driver and toolkit, cached checkpoints."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

from redfirst.leases.model import Gpu


def _check(result: Any) -> Any:
    # cuda-python returns (error, *values); anything but success means "no answer".
    err, *values = result
    if int(err) != 0:
        raise RuntimeError(f"CUDA error {err}")
    return values[0] if len(values) == 1 else tuple(values)


# Variables that change which GPUs CUDA shows a process, and how it numbers them. A slot is one GPU for every
# process of the machine: `gpuI` is the I-th GPU CUDA enumerates without them (all GPUs, its default order).
VIEW_VARIABLES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
# The labels detection answers (`local_labels`, with `checkpoint:<org>/<name>`): a requirement on one of them is a
# fact of the machine a command runs on, never met by a declaration in redfirst.yaml.
DETECTED_LABELS = ("host", "gpus", "gpu_model", "gpu_name", "sm", "vram", "driver", "cuda")


def is_detected_label(key: str) -> bool:
    return key.lower() in DETECTED_LABELS or key.lower().startswith("checkpoint:")
DETECT_TIMEOUT = 120.0


@cache
def local_gpus() -> tuple[tuple[Gpu, ...], dict[str, str]]:
    """The GPUs of this machine and the labels they give (`gpu_model`, `sm`, `vram`, `driver`, `cuda`).

    Empty when cuda-python is not importable or finds no device: the box then has one slot `cpu0`.
    The machine's GPUs, whatever CUDA_VISIBLE_DEVICES this process has: a leased command's wrapper runs under
    `CUDA_VISIBLE_DEVICES=<its GPUs' UUIDs>` and a user's shell may narrow it too, and CUDA numbers the GPUs such a
    process sees from 0, so `gpu0` would be another GPU in it than in the process that granted the lease (the
    wrong lock taken, one GPU granted twice under two slot names). Such a process asks a child without them.
    """
    if any(v in os.environ for v in VIEW_VARIABLES):
        return _detect_in_child()
    return _detect()


def _detect_in_child() -> tuple[tuple[Gpu, ...], dict[str, str]]:
    """`_detect` in a child process whose environment names no view of the GPUs; none found if it fails."""
    env = {k: v for k, v in os.environ.items() if k not in VIEW_VARIABLES}
    top = str(Path(__file__).resolve().parents[2])      # the folder holding this very `redfirst`, however imported
    code = f"import sys; sys.path.insert(0, {top!r}); from redfirst.leases.detect import _report; _report()"
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             timeout=DETECT_TIMEOUT, check=False)
        found = json.loads(out.stdout) if out.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError):
        found = None
    if not isinstance(found, dict):
        return (), {}
    gpus = tuple(Gpu(**g) for g in found.get("gpus") or [])
    return gpus, {str(k): str(v) for k, v in (found.get("labels") or {}).items()}


def _report() -> None:
    gpus, labels = _detect()
    print(json.dumps({"gpus": [vars(g) for g in gpus], "labels": labels}))


def _detect() -> tuple[tuple[Gpu, ...], dict[str, str]]:
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        try:
            from cuda import cuda as cu
        except ImportError:
            return (), {}
    try:
        _check(cu.cuInit(0))
        count = _check(cu.cuDeviceGetCount())
        version = _check(cu.cuDriverGetVersion())
        gpus = []
        for i in range(count):
            dev = _check(cu.cuDeviceGet(i))
            name = _check(cu.cuDeviceGetName(64, dev)).split(b"\0", 1)[0].decode()
            major = _check(cu.cuDeviceGetAttribute(
                cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
            minor = _check(cu.cuDeviceGetAttribute(
                cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
            vram = _check(cu.cuDeviceTotalMem(dev))
            gpus.append(Gpu(f"gpu{i}", i, name, f"{major}.{minor}", int(vram), _uuid(cu, dev)))
    except Exception:   # a broken driver is "no GPU here", never a crash of `leases boxes`
        return (), {}
    if not gpus:
        return (), {}
    labels = {
        "gpu_model": _model(gpus[0].name or ""),
        "gpu_name": gpus[0].name or "",
        "sm": gpus[0].sm or "",
        "vram": f"{(gpus[0].vram or 0) >> 20}M",
        "cuda": f"{version // 1000}.{(version % 1000) // 10}",
    }
    driver = _driver_version()
    if driver:
        labels["driver"] = driver
    return tuple(gpus), labels


def _uuid(cu: Any, dev: Any) -> str | None:
    """The device's UUID as nvidia-smi prints it (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx), the name
    that stays the same whatever CUDA_VISIBLE_DEVICES the detecting process has; None if unknown."""
    try:
        raw = bytes(_check(cu.cuDeviceGetUuid(dev)).bytes)[:16]
    except Exception:  # an older binding or driver: the slot is then named by its index
        return None
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}" if len(raw) == 16 else None


def why_no_gpu() -> str:
    """Why this machine shows no GPU, for a NO_DECISION reason."""
    try:
        import cuda  # noqa: F401
    except ImportError:
        return "cuda-python is not installed (pip install 'redfirst[cuda]')"
    return "cuda-python found no CUDA device"


def _model(name: str) -> str:
    # "NVIDIA H200" -> "h200": the word a selector names.
    words = [w for w in name.lower().replace("nvidia", "").split() if w not in ("geforce", "tesla")]
    return words[0] if words else name.lower()


def _driver_version() -> str | None:
    try:
        return Path("/sys/module/nvidia/version").read_text().strip()
    except OSError:
        return None


def cached_checkpoints() -> dict[str, str]:
    """`checkpoint:<org>/<name>=cached` for each model in the Hugging Face hub cache."""
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.expanduser("~/.cache/huggingface"), "hub")
    try:
        names = sorted(os.listdir(hub))
    except OSError:
        return {}
    out = {}
    for entry in names:
        if entry.startswith("models--"):
            out["checkpoint:" + entry[len("models--"):].replace("--", "/")] = "cached"
    return out


def local_labels() -> dict[str, str]:
    gpus, labels = local_gpus()
    out = {"host": socket.gethostname(), "gpus": str(len(gpus))}
    out.update(labels)
    out.update(cached_checkpoints())
    return out


@cache
def toolkit() -> str | None:
    """The CUDA toolkit release `nvcc` reports, once per process."""
    if not shutil.which("nvcc"):
        return None
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=False)
    m = re.search(r"release ([0-9.]+)", out.stdout)
    return m.group(1) if m else None
