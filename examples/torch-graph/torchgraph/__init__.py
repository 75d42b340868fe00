"""A small PyTorch language model (random weights, no download) and its CUDA-graph gates."""
