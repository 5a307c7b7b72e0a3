"""Export targets, one module each behind `export_targets.base.Exporter`; imported lazily by name."""

from __future__ import annotations

import importlib

from edgebert.errors import UserError
from export_targets.base import Exporter

TARGETS: dict[str, str] = {
    "onnx": "export_targets.onnx:OnnxExporter",
    "tflite": "export_targets.tflite:TFLiteExporter",
    "tfjs": "export_targets.tfjs:TFJSExporter",
}


def get_exporter(target: str) -> Exporter:
    """The exporter for `target`, or a UserError listing the known targets."""
    if target not in TARGETS:
        raise UserError(f"unknown target '{target}'; choose one of: {', '.join(TARGETS)}")
    module_name, class_name = TARGETS[target].split(":")
    return getattr(importlib.import_module(module_name), class_name)()
