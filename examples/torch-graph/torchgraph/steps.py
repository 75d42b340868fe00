"""cuda-graph factories of the TinyLM gates: torch-native steps (redfirst.gates.cuda.torch_step).

Variants: `graph-safe` (temperature a device input), `host-temperature` (a Python float per
input, not graph-safe). Shape: [batch, sequence].
"""

from __future__ import annotations

from redfirst.gates.cuda.torch_step import Native, Tensor
from torchgraph.model import VOCAB, HostTemperature, model


def host_temperature(seed: int) -> dict[str, float]:
    return {"temperature": 0.25 * (1 + seed % 5)}  # differs from the capture seed 0 for seeds 1001..1004


def build(variant: str, shape: tuple[int, ...]) -> Native:
    batch, seq = shape
    tokens = Tensor((batch, seq), "int64", fill="randint", low=0, high=VOCAB)
    if variant == "graph-safe":
        return Native(model(), {"tokens": tokens, "temperature": Tensor((batch, 1), fill="uniform", low=0.5,
                                                                         high=1.5)})
    if variant == "host-temperature":
        return Native(HostTemperature(model()), {"tokens": tokens}, host=host_temperature)
    raise ValueError(f"unknown variant {variant!r}")
