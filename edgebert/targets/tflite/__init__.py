"""The tflite target: exporter, quantization recipes and runner in one place."""
