"""A tensor-parallel MLP, sharded as Megatron and vLLM shard one, gated rank by rank (issue 38)."""
