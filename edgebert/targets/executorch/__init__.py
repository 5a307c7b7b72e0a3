"""ExecuTorch target: the model's own torch.export graph lowered to XNNPACK in one `model.pte` (exporter.py) and run
in ExecuTorch's runtime (runner.py)."""
