"""HF BERT as a Native cuda-graph factory: transformers' BertModel with a small random config
(seeded, nothing downloaded). Variant `bert`; shape [batch, sequence]. Issue 38 measured that
its replay 0 differs from eager on the captured inputs by a few ULP (kernel selection under capture)."""

from __future__ import annotations

from typing import Any

import torch

from redfirst.gates.cuda.torch_step import Native, Tensor

VOCAB = 1000


def build(variant: str, shape: tuple[int, ...]) -> Any:
    from transformers import BertConfig, BertModel

    if variant != "bert":
        raise ValueError(f"unknown variant {variant!r}")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCAB, hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=512, max_position_embeddings=128, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    model = BertModel(config).cuda().eval()
    return Native(model, {"input_ids": Tensor(tuple(shape), "int64", fill="randint", low=0, high=VOCAB)})
