"""`gates probe rebegin|device`: what the device allows, and what it is.

`rebegin` answers whether this device and driver allow ending a capture and beginning
another on the same stream with eager work between, in thread-local mode: the
precondition of piecewise capture. It captures segment 1, ends the capture, runs an eager
kernel (the break), begins a new capture on the same stream, captures segment 2, then
makes a bare zero-work re-begin (begin, end at once); instantiates all three graphs and
replays the sequence three times with fresh inputs, each checked bit for bit against
numpy. Exit 0 legal, 1 illegal, 3 no device or no cuda-python, 2 usage error.

`device` prints the identity every GPU record keeps (exit 0, or 3 without a device).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from redfirst.verdict import EXIT_NO_DECISION, EXIT_OK, EXIT_RED

N = 1 << 16
REPLAYS = 3
SOURCE = r"""
extern "C" __global__ void seg1(const unsigned* x, unsigned* y, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * 3u + 1u;
}
extern "C" __global__ void brk(const unsigned* y, unsigned* y2, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y2[i] = y[i] ^ 0x5a5a5a5au;
}
extern "C" __global__ void seg2(const unsigned* y2, unsigned* z, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = (y2[i] + 7u) * 2654435761u;
}
"""


def expected(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    with np.errstate(over="ignore"):
        y = x * np.uint32(3) + np.uint32(1)
        y2 = y ^ np.uint32(0x5A5A5A5A)
        out: np.ndarray[Any, Any] = (y2 + np.uint32(7)) * np.uint32(2654435761)
    return out


@dataclass
class RebeginResult:
    legal: bool
    steps: list[dict[str, Any]] = field(default_factory=list)   # each step: what, ok, detail
    replays: list[dict[str, Any]] = field(default_factory=list)  # each replay: values, differing, first_index
    device: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


def rebegin(stream: int | None = None) -> RebeginResult:
    """Run the re-begin sequence; rt.Unavailable without cuda-python or a device."""
    from redfirst.gates.cuda import capture, rt
    from redfirst.gates.cuda.buffers import DeviceBuffer
    from redfirst.gates.cuda.comparator import compare_host
    from redfirst.gates.cuda.device import identify
    from redfirst.gates.cuda.module import Module, arch_of, ptr, u64

    identity = identify()
    result = RebeginResult(legal=False, device=identity.as_record())
    try:
        module = Module(SOURCE, ("seg1", "brk", "seg2"), arch=arch_of(identity.compute_capability))
    except Exception as exc:  # NVRTC missing or refusing: the question cannot be asked here
        raise rt.Unavailable(f"cannot compile the probe's kernels: {type(exc).__name__}: {exc}") from exc
    s = rt.new_stream() if stream is None else stream
    x, y, y2, z = (DeviceBuffer(N * 4, "uint32", (N,)) for _ in range(4))
    grid, block = (N + 255) // 256, 256

    def launch(name: str, src: DeviceBuffer, dst: DeviceBuffer) -> None:
        module.launch(name, grid, block, [ptr(src.ptr), ptr(dst.ptr), u64(N)], s)

    def step(what: str, fn: Any) -> Any:
        try:
            value = fn()
        except Exception as exc:
            result.steps.append({"what": what, "ok": False, "detail": f"{type(exc).__name__}: {exc}"})
            raise
        result.steps.append({"what": what, "ok": True, "detail": ""})
        return value

    graphs: list[Any] = []

    def replay_sequence() -> None:
        graphs[0].launch(s)
        launch("brk", y, y2)  # the break runs eagerly between the segments' replays
        graphs[1].launch(s)
        graphs[2].launch(s)
        rt.synchronize(s)

    try:
        step("begin capture 1 (thread-local)", lambda: capture.begin(s))
        step("capture segment 1", lambda: launch("seg1", x, y))
        g1 = step("end capture 1", lambda: capture.end(s))
        step("eager work between captures on the same stream", lambda: launch("brk", y, y2))
        step("begin capture 2 on the same stream", lambda: capture.begin(s))
        step("capture segment 2", lambda: launch("seg2", y2, z))
        g2 = step("end capture 2", lambda: capture.end(s))
        step("bare zero-work re-begin", lambda: capture.begin(s))
        g3 = step("end the zero-work capture", lambda: capture.end(s))
        for i, g in enumerate((g1, g2, g3), 1):
            graphs.append(step(f"instantiate graph {i}", lambda g=g: capture.Graph(g, capture.node_count(g))))
        rng = np.random.default_rng(20261130)
        for k in range(REPLAYS):
            data = rng.integers(0, 2**32, N, dtype=np.uint32)
            x.upload(data, s)
            z.upload(np.full(N, 0xA5A5A5A5, dtype=np.uint32), s)  # poison: a replay that writes nothing fails
            step(f"replay {k}: graph 1, eager break, graph 2, graph 3", replay_sequence)
            raw = compare_host(expected(data), z.download(np.uint32, s), "uint32")
            result.replays.append({"replay": k, "values": raw.values, "differing": raw.differing,
                                   "first_index": raw.first_index, "nodes": [g.nodes for g in graphs]})
    except Exception as exc:
        result.reason = f"{result.steps[-1]['what'] if result.steps else 'setup'}: {type(exc).__name__}: {exc}"
        if capture.capturing(s):
            try:
                capture.end(s)
            except capture.CaptureError:
                pass
        return result
    finally:
        for g in graphs:
            g.destroy()
        for b in (x, y, y2, z):
            b.free()
    bad = [r for r in result.replays if r["differing"] or not r["values"]]
    if bad:
        result.reason = f"replay {bad[0]['replay']}: {bad[0]['differing']} of {bad[0]['values']} values differ"
        return result
    result.legal = len(result.replays) == REPLAYS
    result.reason = (f"legal: end-capture, eager work, begin-capture on one stream (thread-local), and a zero-work "
                     f"re-begin; {REPLAYS} replays x {N} values, 0 differing")
    return result


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gates probe", description="Ask the CUDA device what it allows and what it is.")
    p.add_argument("what", choices=("rebegin", "device"))
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """`gates probe ...`: 0 legal (or identity printed), 1 illegal, 3 no device, 2 usage error."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    from redfirst.gates.cuda import rt

    try:
        if args.what == "device":
            from redfirst.gates.cuda.device import identify

            identity = identify()
            if args.json:
                print(json.dumps({"version": 1, "exit": EXIT_OK, "device": identity.as_record()}, sort_keys=True))
            else:
                for key, value in identity.as_record().items():
                    print(f"{key}: {value}")
            return EXIT_OK
        result = rebegin()
    except rt.Unavailable as exc:
        reason = f"NO_DECISION: cannot probe the device: {exc}"
        if args.json:
            print(json.dumps({"version": 1, "exit": EXIT_NO_DECISION, "verdict": "NO_DECISION", "reason": str(exc)}))
        else:
            print(reason)
        return EXIT_NO_DECISION
    code = EXIT_OK if result.legal else EXIT_RED
    if args.json:
        print(json.dumps({"version": 1, "exit": code, "legal": result.legal, **asdict(result)}, sort_keys=True))
    else:
        for st in result.steps:
            print(f"{'ok  ' if st['ok'] else 'FAIL'} {st['what']}" + (f": {st['detail']}" if st["detail"] else ""))
        for r in result.replays:
            print(f"replay {r['replay']}: {r['values']} values, {r['differing']} differing")
        name = result.device.get("name", "?")
        print(f"{'LEGAL' if result.legal else 'ILLEGAL'} on {name} (sm {result.device.get('compute_capability')}, "
              f"driver {result.device.get('driver_release') or result.device.get('driver_api')}): {result.reason}")
    return code


if __name__ == "__main__":
    sys.exit(main())
