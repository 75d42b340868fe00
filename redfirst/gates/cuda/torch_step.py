"""Torch-native cuda-graph steps: a factory returns a module and an input builder; the driver owns the rest.

    from redfirst.gates.cuda.torch_step import Native, Tensor

    def build(variant: str, shape: tuple[int, ...]) -> Native:
        model = nn.Sequential(...).cuda().eval()
        return Native(model, inputs={"x": Tensor(shape)})

The driver allocates the static input tensors, fills them from a seeded CPU generator
(or the factory's own `fill(seed, inputs)`), runs `module(*inputs, **host(seed))` under
`torch.no_grad()` on its stream, copies every tensor the module returns into static
output tensors it owns (and poisons), and captures either on its raw stream or, with
`capture: torch`, through `torch.cuda.CUDAGraph`. A plain `(module, {name: Tensor})`
tuple is accepted too. `host(seed)` gives keyword arguments computed on the host per
input: a step that needs one is not graph-safe, which is what its gate shows.

torch is imported only when a factory returns one of these: nothing here imports it at
module import, so grading runs where torch is absent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

FILLS = ("normal", "uniform", "randint")
FLOATING = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class Tensor:
    """One static input: its shape, torch dtype name, and how the seeded filler draws it."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    fill: str = "normal"          # normal | uniform (in [low, high)) | randint (in [low, high))
    low: float = 0.0
    high: float = 1.0

    def __post_init__(self) -> None:
        if self.fill not in FILLS:
            raise ValueError(f"Tensor fill {self.fill!r} is not one of {', '.join(FILLS)}")


@dataclass(frozen=True)
class Native:
    module: Any                                           # torch.nn.Module, or any callable on tensors
    inputs: Mapping[str, Tensor]                          # positional arguments, in this order
    host: Callable[[int], Mapping[str, Any]] | None = None    # host keyword arguments for a seed
    fill: Callable[[int, Mapping[str, Any]], None] | None = None  # writes the static inputs for a seed
    extra: Mapping[str, Any] = field(default_factory=dict)    # optional attributes: applicable, graph_required


def as_native(obj: Any) -> Native | None:
    """The Native a factory returned (a Native, or a `(module, {name: Tensor})` pair); None for a Step."""
    if isinstance(obj, Native):
        return obj
    if isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], Mapping) and callable(obj[0]) and all(
            isinstance(v, Tensor) for v in obj[1].values()):
        return Native(obj[0], obj[1])
    return None


def _named(result: Any) -> Iterator[tuple[str, Any]]:
    # a tensor, a tuple/list of tensors, or a mapping (a transformers ModelOutput is one)
    import torch

    if isinstance(result, torch.Tensor):
        yield "out", result
    elif isinstance(result, Mapping):
        for k, v in result.items():
            if isinstance(v, torch.Tensor):
                yield str(k), v
    elif isinstance(result, (tuple, list)):
        for i, v in enumerate(result):
            if isinstance(v, torch.Tensor):
                yield f"out{i}", v


class NativeStep:
    """A Native as a Step: static inputs and outputs owned here, work queued on the driver's stream."""

    def __init__(self, native: Native, stream: int, dtype: str | None = None) -> None:
        import torch

        self.torch = torch
        if dtype is not None:
            # the gate's dtype: every floating input, and the module's parameters and buffers
            native = Native(native.module.to(getattr(torch, dtype)) if hasattr(native.module, "to") else native.module,
                            {n: replace(t, dtype=dtype) if t.dtype in FLOATING else t for n, t in native.inputs.items()},
                            native.host, native.fill, native.extra)
        self.native = native
        self.stream = torch.cuda.ExternalStream(int(stream))
        self.applicable = bool(native.extra.get("applicable", True))
        self.graph_required = bool(native.extra.get("graph_required", True))
        self.static = {name: torch.empty(spec.shape, dtype=getattr(torch, spec.dtype), device="cuda")
                       for name, spec in native.inputs.items()}
        self.host: dict[str, Any] = {}
        # one eager call on the capture seed's inputs tells the outputs' shapes and dtypes
        self.inputs(0, stream)
        with torch.cuda.stream(self.stream):
            produced = list(_named(self._forward()))
        if not produced:
            raise TypeError("the module returned no tensor")
        self.out = {name: torch.empty(t.shape, dtype=t.dtype, device=t.device) for name, t in produced}
        self.stream.synchronize()

    def _forward(self) -> Any:
        with self.torch.no_grad():
            return self.native.module(*self.static.values(), **self.host)

    def inputs(self, seed: int, stream: int) -> None:
        torch = self.torch
        self.host = dict(self.native.host(seed)) if self.native.host else {}
        with torch.cuda.stream(self.stream):
            if self.native.fill is not None:
                self.native.fill(seed, self.static)
            else:
                gen = torch.Generator().manual_seed(int(seed))
                for name, spec in self.native.inputs.items():
                    self.static[name].copy_(_draw(torch, spec, gen))
        self.stream.synchronize()

    def __call__(self, stream: int) -> None:
        with self.torch.cuda.stream(self.stream):
            for name, t in _named(self._forward()):
                if name in self.out:
                    self.out[name].copy_(t)

    def outputs(self) -> Mapping[str, Any]:
        return self.out

    def input_tensors(self) -> Mapping[str, Any]:
        """The static inputs (the stale-input hazard reads a copy of them)."""
        return self.static


def _draw(torch: Any, spec: Tensor, gen: Any) -> Any:
    dtype = getattr(torch, spec.dtype)
    if spec.fill == "randint":
        return torch.randint(int(spec.low), int(spec.high), spec.shape, generator=gen, dtype=torch.int64).to(dtype)
    if spec.fill == "uniform":
        return (torch.rand(spec.shape, generator=gen) * (spec.high - spec.low) + spec.low).to(dtype)
    return torch.randn(spec.shape, generator=gen).to(dtype)


class TorchGraph:
    """`capture: torch`: the work captured by torch.cuda.CUDAGraph (its capture-aware caching
    allocator and private memory pool) on the driver's stream, thread-local mode."""

    def __init__(self, stream: int, work: Callable[[int], None]) -> None:
        import torch

        from redfirst.gates.cuda.capture import CaptureError

        self.torch = torch
        self.stream = torch.cuda.ExternalStream(int(stream))
        self.graph = torch.cuda.CUDAGraph()
        self.nodes: int | None = None
        try:
            with torch.cuda.graph(self.graph, stream=self.stream, capture_error_mode="thread_local"):
                work(int(stream))
        except Exception as exc:
            raise CaptureError(f"torch.cuda.graph capture failed: {type(exc).__name__}: {exc}") from exc

    def launch(self, stream: int) -> None:
        with self.torch.cuda.stream(self.stream):
            self.graph.replay()

    def destroy(self) -> None:
        self.graph.reset()


def frameworks() -> dict[str, str]:
    """Versions of the frameworks this process imported (torch, cupy, triton): kept with each observation."""
    import sys

    found = {}
    for name in ("torch", "cupy", "triton"):
        mod = sys.modules.get(name)
        if mod is not None:
            found[name] = str(getattr(mod, "__version__", "unknown"))
    return found
