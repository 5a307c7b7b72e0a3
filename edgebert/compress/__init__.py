"""Compression recipes: quantization per runtime and structured pruning."""
