"""The onnx target: exporter, quantization recipes and runner in one place."""
