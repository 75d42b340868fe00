"""The NCCL rank backend (`ranks: {backend: nccl}`): one device per rank, torch.distributed, the device arm.

The rank child calls `run_nccl` after the rendezvous. It makes device `rank` current (one
device each, by identity, recorded with every arm), joins the NCCL process group through a
TCP init on loopback, and runs each (variant, shape) through redfirst.gates.cuda.arm with the
factory called `(variant, shape, group)`. While it runs, torch.distributed's collectives are
logged as issued (op, element count, dtype, whether a capture was open), and making or
destroying a process group while a capture is open raises GroupInCapture (a RED capture).

    def build(variant, shape, group):          # group.rank, .world_size, .tp_size, .device, .process_group
        return Native(TpMlp(shape[-1], group).to(group.device).eval(), inputs={"x": Tensor(shape)})
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

from redfirst.gates.cuda.observation import KIND
from redfirst.gates.cuda.sim import GROUP_IN_CAPTURE, GroupInCapture

LOGGED = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "all_gather", "reduce_scatter",
          "all_to_all_single")
GROUP_CALLS = ("new_group", "destroy_process_group", "init_process_group")


class NcclGroup:
    """A rank's group as the factory and the collective hazards see it."""

    backend = "nccl"

    def __init__(self, rank: int, world_size: int, tp_size: int, dtype: str | None) -> None:
        import torch
        import torch.distributed as dist

        self.torch, self.dist = torch, dist
        self.rank, self.world_size, self.tp_size = rank, world_size, tp_size
        self.dtype = dtype or "float32"
        self.device = torch.device("cuda", rank)
        self.process_group = dist.group.WORLD
        self.log: list[dict[str, Any]] = []

    def _on(self, stream: int) -> Any:
        return self.torch.cuda.stream(self.torch.cuda.ExternalStream(int(stream)))

    def all_reduce(self, tensor: Any, stream: int) -> None:
        with self._on(stream):
            self.dist.all_reduce(tensor)

    def new_group(self, stream: int) -> None:
        with self._on(stream):
            self.dist.new_group(list(range(self.world_size)))

    def scratch(self, n: int) -> Any:
        return self.torch.zeros(n, dtype=getattr(self.torch, self.dtype), device=self.device)

    def host_write(self, tensor: Any, value: int, stream: int) -> None:
        with self._on(stream):
            tensor.view(-1).view(self.torch.uint8)[0] = value   # a fill whose value a capture bakes in


@contextlib.contextmanager
def logging_collectives(group: NcclGroup) -> Iterator[None]:
    """torch.distributed's collectives logged into `group.log`; group calls refused inside a capture."""
    dist, torch = group.dist, group.torch
    saved = {name: getattr(dist, name) for name in (*LOGGED, *GROUP_CALLS) if hasattr(dist, name)}

    def logged(name: str, fn: Any) -> Any:
        def call(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            first = tensor[0] if isinstance(tensor, (list, tuple)) and tensor else tensor
            group.log.append({"op": name, "size": int(first.numel()), "dtype": str(first.dtype).removeprefix("torch."),
                              "capturing": bool(torch.cuda.is_current_stream_capturing())})
            return fn(tensor, *args, **kwargs)
        return call

    def refused(name: str, fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if torch.cuda.is_current_stream_capturing():
                raise GroupInCapture(f"{GROUP_IN_CAPTURE} ({name})")
            return fn(*args, **kwargs)
        return call

    for name, fn in saved.items():
        setattr(dist, name, logged(name, fn) if name in LOGGED else refused(name, fn))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(dist, name, fn)


def run_nccl(args: argparse.Namespace, factory: Any, out: Any, variants: list[str],
             shapes: list[tuple[int, ...]]) -> None:
    from redfirst.gates.cuda import rt

    try:
        import torch
        import torch.distributed as dist

        from redfirst.gates.cuda import comparator
        from redfirst.gates.cuda.device import identify

        torch.cuda.set_device(args.rank)
        identity = identify(args.rank)
        comp = comparator.get()
    except Exception as exc:  # no torch, cuda-python or device: no evidence, never a verdict on the code
        out.write(unavailable=f"rank {args.rank}: {type(exc).__name__}: {exc}")
        return
    out.write(device=identity.as_record())
    from pathlib import Path

    from redfirst.gates.cuda.nccl_log import NcclLog

    # NCCL's own log of every collective it is asked for, whichever path asks: read before it starts
    issued = NcclLog(Path(args.out).with_name(f"nccl-{args.rank}.log"))
    os.environ.update(NcclLog.environment(issued.path))
    join = {"backend": "nccl", "init_method": f"tcp://127.0.0.1:{args.dist_port}", "rank": args.rank,
            "world_size": args.world_size}
    try:
        try:
            dist.init_process_group(**join, device_id=torch.device("cuda", args.rank))
        except TypeError:  # a torch before device_id (2.3)
            dist.init_process_group(**join)
    except Exception as exc:  # no NCCL, or its rendezvous failed: no evidence, never a verdict on the code
        out.write(unavailable=f"rank {args.rank}: cannot join the NCCL group: {type(exc).__name__}: {exc}")
        return
    from redfirst.gates.cuda.arm import Plan, run_arm
    from redfirst.gates.cuda.rank_hazards import wrapper

    group = NcclGroup(args.rank, args.world_size, args.tp_size, args.dtype)
    plan = Plan(warmup=args.warmup, replays=args.replays, repeat_eager=args.repeat_eager)
    stream = rt.new_stream()
    try:
        with logging_collectives(group):
            for variant in variants:
                for shape in shapes:
                    out.progress(f"arm {variant} {list(shape)}")
                    group.log = []
                    start = issued.mark()
                    obs = run_arm(lambda v, s: factory(v, s, group), variant, shape, plan, stream, comp,
                                  identity.as_record(), capture_mode=args.capture, dtype=args.dtype,
                                  wrap=wrapper(args.hazard, group) if args.hazard else None, recapture=False)
                    log, nccl = group.log, issued.between(start, issued.mark())
                    obs = dataclasses.replace(
                        obs, rank=args.rank, world_size=args.world_size, tp_size=args.tp_size, hazard=args.hazard,
                        collectives={"eager": [e for e in log if not e["capturing"]][:256],
                                     "capture": [e for e in log if e["capturing"]],
                                     "nccl": NcclLog.kept(nccl)})
                    out.write(observation=KIND, **obs.fields())
    finally:
        dist.destroy_process_group()
