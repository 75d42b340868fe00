"""Benchmark: the NVRTC bit-exact comparator against PyTorch and the device's copy bandwidth.

Two 4 GiB buffers on the device, equal except for planted differences; each method counts
the differing int32 words. Reported side by side, from the same run:
- the comparator kernel (count + exact first index + a hash64 of each buffer, one pass), and
  its count-only variant (same kernel, no hashes);
- the full `DeviceComparator.compare` call (kernel, result and bit-pattern readback);
- PyTorch's `(a.view(int32) != b.view(int32)).sum()`;
- a device-to-device copy of 4 GiB (`dst.copy_(a)`), the device's copy bandwidth.
Read bandwidth counts bytes read (8 GiB for a comparison); the copy counts read + write too.
Times are CUDA-event medians over `--iters` runs after `--warmup` runs.

    python bench/cuda_comparator.py [--gib 4] [--iters 10] [--json OUT.json] [--markdown OUT.md]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from collections.abc import Callable
from typing import Any


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--gib", type=float, default=4.0)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--json")
    p.add_argument("--markdown")
    args = p.parse_args(argv)

    import torch

    from redfirst.gates.cuda import comparator
    from redfirst.gates.cuda.buffers import DeviceView

    nbytes = int(args.gib * 2**30)
    n32 = nbytes // 4
    comp = comparator.get()
    stream = torch.cuda.current_stream()
    handle = int(stream.cuda_stream)

    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    gen = torch.Generator(device="cuda").manual_seed(7)
    a.view(torch.int32).copy_(torch.randint(-(2**31), 2**31 - 1, (n32,), dtype=torch.int32, device="cuda",
                                            generator=gen))
    b = a.clone()
    planted = [n32 - 3, n32 // 2 + 12345, 987_654_321 % n32]
    for i in planted:
        b.view(torch.int32)[i] ^= 0x40000000
    first = min(planted)
    dst = torch.empty_like(a)
    va = DeviceView(a.data_ptr(), nbytes, "int32", (n32,))
    vb = DeviceView(b.data_ptr(), nbytes, "int32", (n32,))
    result = comparator.DeviceBuffer(32, "uint64", (4,))

    def timed(fn: Callable[[], Any]) -> float:
        for _ in range(args.warmup):
            fn()
        times = []
        for _ in range(args.iters):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(stream)
            fn()
            end.record(stream)
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return statistics.median(times)

    torch_count: list[int] = []

    def torch_compare() -> None:
        torch_count.append(int((a.view(torch.int32) != b.view(torch.int32)).sum()))

    t_kernel = timed(lambda: comp.enqueue(va, vb, result.ptr, handle, hashes=True))
    raw_kernel = [int(x) for x in result.download("<u8", handle)]
    t_count = timed(lambda: comp.enqueue(va, vb, result.ptr, handle, hashes=False))
    raw_count = [int(x) for x in result.download("<u8", handle)]
    t_torch = timed(torch_compare)
    t_copy = timed(lambda: dst.copy_(a))
    import time

    walls = []
    full = None
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        full = comp.compare(va, vb, handle, sha256=False)
        walls.append(time.perf_counter() - t0)
    assert full is not None
    torch.cuda.synchronize()

    ok = (raw_kernel[0] == len(planted) and raw_kernel[1] == first and raw_count[0] == len(planted)
          and raw_count[1] == first and full.differing == len(planted) and full.first_index == first
          and set(torch_count) == {len(planted)})
    read = 2 * nbytes
    rows = {
        "comparator (count, first index, hash64 of both)": (t_kernel, read),
        "comparator, count and first index only": (t_count, read),
        "PyTorch (a.view(int32) != b.view(int32)).sum()": (t_torch, read),
        "device copy dst.copy_(a) (reads only)": (t_copy, nbytes),
    }
    report: dict[str, Any] = {
        "device": comp.identity.as_record(),
        "bytes_per_buffer": nbytes,
        "planted": planted,
        "exact": ok,
        "count": raw_kernel[0],
        "first_index": raw_kernel[1],
        "full_compare_wall_s": min(walls),
        "full_compare": {k: v for k, v in full.as_record().items() if k != "shape"},
        "seconds": {k: v[0] for k, v in rows.items()},
        "read_TBps": {k: v[1] / v[0] / 1e12 for k, v in rows.items()},
        "copy_read_plus_write_TBps": 2 * nbytes / t_copy / 1e12,
        "speedup_vs_torch": t_torch / t_kernel,
        "speedup_vs_torch_count_only": t_torch / t_count,
        "grid": comp.grid,
        "iters": args.iters,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "uname": " ".join(platform.uname()),
    }
    lines = [
        f"Device: {comp.identity.describe()}; torch {torch.__version__}; Python {platform.python_version()}; "
        f"`{report['uname']}`.",
        f"Two buffers of {nbytes / 2**30:g} GiB ({n32} int32 words), {len(planted)} planted differences; "
        f"medians of {args.iters} runs after {args.warmup} warm-ups (CUDA events). Exact count "
        f"{raw_kernel[0]} and first index {raw_kernel[1]} from every method: {'yes' if ok else 'NO'}.",
        "",
        "| method | time (ms) | read TB/s |",
        "|---|---:|---:|",
    ]
    for name, (t, nb) in rows.items():
        lines.append(f"| {name} | {t * 1e3:.3f} | {nb / t / 1e12:.2f} |")
    lines += [
        "",
        f"Copy bandwidth counting read + write: {2 * nbytes / t_copy / 1e12:.2f} TB/s. "
        f"Comparator vs PyTorch: {t_torch / t_kernel:.2f}x (count-only variant {t_torch / t_count:.2f}x). "
        f"Whole `DeviceComparator.compare` call (kernel, readback of result and both bit patterns, no sha256): "
        f"{min(walls) * 1e3:.3f} ms wall. Grid {comp.grid} blocks x 256 threads.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
