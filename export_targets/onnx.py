"""ONNX target: one `model.onnx` with dynamic batch and sequence axes, run back in onnxruntime."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from edgebert.errors import TargetUnavailable
from edgebert.modelio import LoadedModel
from export_targets.base import OUTPUT_NAMES, ConvertResult, Exporter, ExportOptions, KernelPath, Runner

OPSET = 18
MODEL_FILE = "model.onnx"


class OnnxRunner(Runner):
    """An onnxruntime CPU session over an exported `model.onnx` (a path, or the serialized model's bytes)."""

    def __init__(self, model: Path | bytes, threads: int | None = None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # no warnings about initializers a rewritten graph no longer uses
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        source = model if isinstance(model, bytes) else str(model)
        self.session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        self.input_names = [i.name for i in self.session.get_inputs()]

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {name: inputs[name].astype(np.int64) for name in self.input_names}
        embedding, hidden = self.session.run(list(OUTPUT_NAMES), feed)
        return {"sentence_embedding": embedding.astype(np.float32), "last_hidden_state": hidden.astype(np.float32)}


class OnnxExporter(Exporter):
    """torch.onnx export of the SentenceEmbedder; int8 (dynamic, per-channel), int8-static (QDQ) and fp16 variants."""

    name = "onnx"
    quantizations = ("int8", "int8-static", "fp16")
    install_hint = "pip install 'edgebert[onnx]'"

    def check_available(self) -> None:
        for module in ("onnx", "onnxruntime"):
            if importlib.util.find_spec(module) is None:
                raise TargetUnavailable(f"the onnx target needs the '{module}' package; run {self.install_hint}")

    def convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        import tempfile

        extra: dict[str, Any] = {"opset": OPSET, "exporter": "torch.onnx (TorchScript)"}
        with tempfile.TemporaryDirectory(prefix="edgebert-onnx-") as scratch:
            fp32 = Path(scratch) / MODEL_FILE
            self._export_fp32(model, fp32, options.seq_len)
            target = work_dir / MODEL_FILE
            if options.quantize == "none":
                fp32.replace(target)
            else:
                from edgebert.compress.onnx_quantize import quantize_onnx

                feeds = calibration_feeds(model, options) if options.calibration_texts else None
                extra["quantization"] = quantize_onnx(fp32, target, options.quantize, model.family, feeds, guard_feeds(model, options))
        return ConvertResult(files=[MODEL_FILE], input_dtype="int64", static_shape=False, extra=extra)

    @staticmethod
    def _export_fp32(model: LoadedModel, path: Path, seq_len: int) -> None:
        import warnings

        import torch

        names = model.family.input_names()
        sample = tuple(torch.ones(2, min(seq_len, 16), dtype=torch.long) for _ in names)
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
        axes["sentence_embedding"] = {0: "batch"}
        axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model.embedder,
                sample,
                str(path),
                input_names=names,
                output_names=list(OUTPUT_NAMES),
                dynamic_axes=axes,
                opset_version=OPSET,
                dynamo=False,
            )

    def load_runner(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None) -> Runner:
        return OnnxRunner(Path(export_dir) / MODEL_FILE, threads=threads)

    def kernel_paths(self, export_dir: Path, manifest: dict[str, Any]) -> dict[str, KernelPath]:
        """The host's kernels, plus the saturating u8 x s8 kernels of x86 CPUs without VNNI when the file has any."""
        return onnx_kernel_paths(Path(export_dir) / MODEL_FILE)


def onnx_kernel_paths(path: Path) -> dict[str, KernelPath]:
    """Runners for every kernel path `path` can meet: the host's, and the emulated non-VNNI x86 one if it applies."""
    import onnx

    from export_targets import onnx_kernels

    paths = {onnx_kernels.HOST: KernelPath(onnx_kernels.KERNEL_PATHS[onnx_kernels.HOST], OnnxRunner(path))}
    model = onnx.load(str(path))
    if onnx_kernels.emulate_u8s8_saturation(model):
        description = onnx_kernels.KERNEL_PATHS[onnx_kernels.SATURATING_U8S8]
        # The emulation holds every pair's product ([batch, tokens, K/2, N] int32) at once: fine for the parity
        # and guard batches (a few sentences, padded to the longest), not meant for long padded batches.
        paths[onnx_kernels.SATURATING_U8S8] = KernelPath(description, OnnxRunner(model.SerializeToString()))
    return paths


def calibration_feeds(model: LoadedModel, options: ExportOptions) -> list[dict[str, np.ndarray]]:
    """One int64 feed per calibration sentence at its natural length (truncated to seq_len), as apps run it."""
    from edgebert.parity import encode

    names = model.family.input_names()
    feeds = []
    for text in options.calibration_texts:
        encoded = encode(model.tokenizer, [text], options.seq_len, pad_to_seq_len=False)
        feeds.append({n: encoded[n] for n in names})
    return feeds


def guard_feeds(model: LoadedModel, options: ExportOptions) -> dict[str, np.ndarray]:
    """The GUARD_SENTENCES as one batch padded to the longest, for recipes that check their own choices."""
    from edgebert.parity import GUARD_SENTENCES, encode

    encoded = encode(model.tokenizer, GUARD_SENTENCES, options.seq_len, pad_to_seq_len=False)
    return {n: encoded[n] for n in model.family.input_names()}
