"""ONNX target exporter: one `model.onnx` with dynamic batch and sequence axes (quantize.py: the recipes; runner.py:
onnxruntime sessions on every kernel path; transformers_js.py: the layout transformers.js loads, where the file is
`onnx/model.onnx`, `onnx/model_quantized.onnx`, …: the manifest's `target_details.model_file` names it)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from edgebert import cost
from edgebert.errors import TargetUnavailable
from edgebert.modelio import LoadedModel
from edgebert.targets.base import ConvertResult, Exporter, ExportOptions, KernelPath, Runner
from edgebert.targets.onnx import transformers_js
from edgebert.targets.onnx.fusion_guards import guard_file
from edgebert.targets.onnx.runner import OnnxRunner, onnx_kernel_paths

OPSET = 18
MODEL_FILE = transformers_js.EDGEBERT_FILE


class OnnxExporter(Exporter):
    """torch.onnx export of the SentenceEmbedder; int8 (dynamic, per-channel), int8-static (QDQ), int4 (4-bit blocks),
    w4a8 (int8's kernels on 4-bit storage) and fp16 variants."""

    name = "onnx"
    quantizations = ("int8", "int8-static", "int4", "w4a8", "fp16")
    input_dtypes = ("int64", "int32")
    layouts = ("edgebert", transformers_js.TRANSFORMERS_JS)
    arm64_recipes = ("int8", "int8-static", "w4a8")
    install_hint = "pip install 'edgebert[onnx]'"

    def check_available(self) -> None:
        for module in ("onnx", "onnxruntime"):
            if importlib.util.find_spec(module) is None:
                raise TargetUnavailable(f"the onnx target needs the '{module}' package; run {self.install_hint}")

    def convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        import tempfile

        for_transformers_js = options.layout == transformers_js.TRANSFORMERS_JS
        name = transformers_js.model_file(options.quantize) if for_transformers_js else MODEL_FILE
        extra: dict[str, Any] = {"opset": OPSET, "exporter": "torch.onnx (TorchScript)", "layout": options.layout, "model_file": name}
        files = [name]
        if for_transformers_js:
            files.append(transformers_js.write_config(model, work_dir, options.quantize))
            extra["transformers_js"] = transformers_js.details(options.quantize, options.seq_len)
        with tempfile.TemporaryDirectory(prefix="edgebert-onnx-") as scratch:
            fp32 = Path(scratch) / MODEL_FILE
            with cost.phase("capture (torch.onnx)"):
                self._export_fp32(model, fp32, options.seq_len)
            target = work_dir / name
            target.parent.mkdir(exist_ok=True)
            if options.quantize == "none":
                fp32.replace(target)
            else:
                from edgebert.targets.onnx.quantize import quantize_onnx

                feeds = calibration_feeds(model, options) if options.calibration_texts else None
                extra["quantization"] = quantize_onnx(fp32, target, options.quantize, model.family, feeds, guard_feeds(model, options))
            if options.input_dtype == "int32":
                int32_inputs(target)
            extra["opset"] = file_opset(target)  # int4 and w4a8 move the file to opset 21 (4-bit tensors)
            extra["fusion_guards"] = guard_file(target)
        return ConvertResult(files=files, input_dtype=options.input_dtype or "int64", static_shape=False, extra=extra)

    @staticmethod
    def _export_fp32(model: LoadedModel, path: Path, seq_len: int) -> None:
        import warnings

        import torch

        names = model.family.input_names()
        sample = tuple(torch.ones(2, min(seq_len, 16), dtype=torch.long) for _ in names)
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        for output in model.output_names:  # one vector per sentence, or per token
            per_sentence = output == "sentence_embedding" or model.task == "text-classification"
            axes[output] = {0: "batch"} if per_sentence else {0: "batch", 1: "sequence"}
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model.embedder,
                sample,
                str(path),
                input_names=names,
                output_names=list(model.output_names),
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )

    def load_runner(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None) -> Runner:
        return OnnxRunner(model_path(export_dir, manifest), threads=threads)

    def kernel_paths(self, export_dir: Path, manifest: dict[str, Any]) -> dict[str, KernelPath]:
        """The host's kernels, plus the saturating u8 x s8 kernels of x86 CPUs without VNNI when the file has any, and
        the ARM64 CPUs' integer kernels (emulated) for the integer recipes."""
        paths = onnx_kernel_paths(model_path(export_dir, manifest))
        if self.arm64_runs(manifest):
            from edgebert.targets import arm64_paths

            paths.update(arm64_paths.onnx_paths(model_path(export_dir, manifest)))
        return paths


def model_path(export_dir: Path, manifest: dict[str, Any]) -> Path:
    """The export's ONNX file (`transformers_js.onnx_file`)."""
    return Path(export_dir) / transformers_js.onnx_file(manifest)


def int32_inputs(path: Path) -> None:
    """Rewrite `path` to take its ids as int32: each input is retyped and cast to int64 by the graph's first nodes,
    so every other node (and each recipe's quantized weights) is the int64 file's."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(path))
    graph = model.graph
    casts = []
    for graph_input in graph.input:
        name, wide = graph_input.name, f"{graph_input.name}_int64"
        for node in graph.node:
            node.input[:] = [wide if value == name else value for value in node.input]
        graph_input.type.tensor_type.elem_type = TensorProto.INT32
        casts.append(helper.make_node("Cast", [name], [wide], name=f"{name}_to_int64", to=TensorProto.INT64))
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def file_opset(path: Path) -> int:
    """The default-domain opset `path` declares."""
    import onnx

    imports = onnx.load(str(path), load_external_data=False).opset_import
    return next(entry.version for entry in imports if entry.domain in ("", "ai.onnx"))


def calibration_feeds(model: LoadedModel, options: ExportOptions) -> list[dict[str, np.ndarray]]:
    """One int64 feed per calibration sentence at its natural length (truncated to seq_len), as apps run it."""
    from edgebert.parity import encode

    names = model.family.input_names()
    feeds = []
    for text in options.calibration_texts:
        encoded = encode(model.tokenizer, [text], options.seq_len, pad_to_seq_len=False)
        feeds.append({n: encoded[n] for n in names})
    return feeds


def guard_feeds(model: LoadedModel, options: ExportOptions) -> list[dict[str, np.ndarray]]:
    """`edgebert.parity.guard_inputs` for this model, for recipes that check their own choices."""
    from edgebert.parity import guard_inputs

    return guard_inputs(model.tokenizer, model.family.input_names(), options.seq_len)
