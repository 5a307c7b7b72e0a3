"""The tfjs target: exporter, quantization recipes and runner in one place."""
