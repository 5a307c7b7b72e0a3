"""Export targets, one package each (exporter, quantization recipes, runner) behind `edgebert.targets.base.Exporter`;
imported lazily by name so that `edgebert --help` loads no runtime."""

from __future__ import annotations

import importlib

from edgebert.errors import UserError
from edgebert.targets.base import Exporter

TARGETS: dict[str, str] = {
    "onnx": "edgebert.targets.onnx.exporter:OnnxExporter",
    "tflite": "edgebert.targets.tflite.exporter:TFLiteExporter",
    "tfjs": "edgebert.targets.tfjs.exporter:TFJSExporter",
    "executorch": "edgebert.targets.executorch.exporter:ExecuTorchExporter",
}


def get_exporter(target: str) -> Exporter:
    """The exporter for `target`, or a UserError listing the known targets."""
    if target not in TARGETS:
        raise UserError(f"unknown target '{target}'; choose one of: {', '.join(TARGETS)}")
    module_name, class_name = TARGETS[target].split(":")
    return getattr(importlib.import_module(module_name), class_name)()
