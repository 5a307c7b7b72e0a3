"""TFLite target: one `model.tflite` with a named signature, int32 inputs of static shape [1, seq_len].

Primary path: `litert_torch.convert` of a small wrapper around the `SentenceEmbedder` that takes int32
inputs and returns a dict of the two named outputs. Fallback (only when the primary fails, or when
`EDGEBERT_TFLITE_CONVERTER=tensorflow`): the same module's graph captured by torch.export
(`edgebert.targets.torch_graph`), written in TensorFlow ops (`edgebert.targets.tf_graph`) -> SavedModel ->
`tf.lite.TFLiteConverter`, in a TensorFlow subprocess (`edgebert.targets.tf_subprocess`).
Quantization (int8 and int4 dynamic range, fp16 weights, int8-static calibrated on `--calibration` sentences) is a
post-conversion rewrite of the flatbuffer by ai-edge-quantizer (`edgebert.targets.tflite.quantize`), the same
for both paths.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from edgebert.errors import TargetUnavailable
from edgebert.modelio import LoadedModel
from edgebert.targets.base import ConvertResult, Exporter, ExportOptions, KernelPath, Runner, guard_min_cosine, guard_record
from edgebert.targets.tf_subprocess import run_tf, tf_main
from edgebert import buckets, cost, cpu
from edgebert.targets.tflite.runner import KERNEL_PATHS, SIGNATURE, XNNPACK, TFLiteRunner, _set_env, signature_names

MODEL_FILE = "model.tflite"
CONVERTER_ENV = "EDGEBERT_TFLITE_CONVERTER"  # auto (default) | litert_torch | tensorflow
LITERT_TORCH = "litert_torch"
TENSORFLOW = "tensorflow"


class TFLiteExporter(Exporter):
    """litert-torch conversion of the SentenceEmbedder; int8 (dynamic range), int8-static, int4 (4-bit weight blocks,
    dynamic-range), w4a8 (4-bit weights a scale a row, dynamic-range) and fp16 variants."""

    name = "tflite"
    quantizations = ("int8", "int8-static", "int4", "w4a8", "fp16")
    input_dtypes = ("int32",)
    arm64_recipes = ("int8", "int8-static", "w4a8")
    install_hint = "pip install 'edgebert[tflite]'"

    def check_available(self) -> None:
        for module, package in (("ai_edge_litert", "ai-edge-litert"), ("litert_torch", "litert-torch")):
            if importlib.util.find_spec(module) is None:
                raise TargetUnavailable(
                    f"the tflite target needs the '{package}' package; run {self.install_hint}"
                )

    def convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        from edgebert.progress import library_chatter_kept_back

        with library_chatter_kept_back():  # TensorFlow's, LiteRT's and the quantizer's start-up logs and bars
            return self._convert(model, work_dir, options)

    def _convert(self, model: LoadedModel, work_dir: Path, options: ExportOptions) -> ConvertResult:
        _set_env()
        names = model.family.input_names()
        choice = os.environ.get(CONVERTER_ENV, "auto").strip().lower() or "auto"
        if choice not in ("auto", LITERT_TORCH, TENSORFLOW):
            raise TargetUnavailable(f"{CONVERTER_ENV}={choice} is not one of auto, {LITERT_TORCH}, {TENSORFLOW}")
        signatures = signature_names(options.lengths)
        extra: dict[str, Any] = {"signature": SIGNATURE}
        with tempfile.TemporaryDirectory(prefix="edgebert-tflite-") as scratch:
            fp32 = Path(scratch) / MODEL_FILE
            primary_error = None
            if choice in ("auto", LITERT_TORCH):
                try:
                    with cost.phase("capture + convert (litert_torch)"):
                        self._convert_litert_torch(model, fp32, signatures)
                    extra["converter"] = LITERT_TORCH
                except Exception as exc:  # noqa: BLE001 - any converter failure: try the fallback
                    if choice == LITERT_TORCH:
                        raise TargetUnavailable(f"litert_torch failed to convert the model: {exc}") from exc
                    primary_error = f"{type(exc).__name__}: {str(exc)[:300]}"
            if "converter" not in extra:
                with cost.phase("capture + convert (TensorFlow fallback)"):
                    self._convert_tensorflow(model, fp32, signatures)
                extra["converter"] = "tensorflow (the captured graph in TensorFlow ops + TFLiteConverter)"
                if primary_error:
                    extra["litert_torch_error"] = primary_error
            data = self._quantize(fp32.read_bytes(), model, options, extra)
        target = work_dir / MODEL_FILE
        target.write_bytes(data)
        self._check_signatures(target, names, signatures, model.output_names)
        from edgebert.targets.tflite.quantize import activation_dtypes, weight_dtypes

        extra["weight_dtypes"] = weight_dtypes(str(target))
        if "quantization" in extra:
            extra["quantization"]["activation_dtypes"] = activation_dtypes(str(target))
        if len(signatures) > 1:
            extra["bucket_bytes"] = bucket_bytes(target)
        return ConvertResult(
            files=[MODEL_FILE], input_dtype="int32", static_shape=True, extra=extra,
            buckets={n: {"signature": s} for n, s in signatures.items()},
        )

    @staticmethod
    def _quantize(data: bytes, model: LoadedModel, options: ExportOptions, extra: dict[str, Any]) -> bytes:
        """Apply `options.quantize` to the float32 flatbuffer `data`, describing it in `extra`."""
        from edgebert.targets.tflite import quantize as tq

        if options.quantize == "none":
            return data
        if options.quantize == tq.STATIC:
            signatures = signature_names(options.lengths)
            samples = {s: calibration_inputs(model, options, n) for n, s in signatures.items()}
            extra["quantizer"] = "ai-edge-quantizer static_wi8_ai8 (calibrated) with float islands"
            extra["quantization"] = tq.static_recipe_details(model.family, tuple(samples), model.output_names)
            with cost.phase("quantize (calibrated)"):
                return tq.quantize_tflite_static(data, model.family, samples, model.output_names)
        if options.quantize in tq.DYNAMIC_RECIPES:
            extra["quantizer"] = tq.DYNAMIC_RECIPES[options.quantize][1]
            return _dynamic(data, model, options, extra)
        extra["quantizer"] = "litert_torch full_fp16_recipe"
        with cost.phase("quantize"):
            return tq.quantize_tflite(data, options.quantize)

    @staticmethod
    def _convert_litert_torch(model: LoadedModel, path: Path, signatures: dict[int, str]) -> None:
        """One signature per bucket ({length: name}) of the same module: litert_torch stores each weight once."""
        import torch

        import litert_torch

        wrapper = _int32_wrapper(model.embedder)
        converter = litert_torch.Converter()
        for seq_len, name in signatures.items():
            sample = _sample_inputs(model.family.input_names(), seq_len)
            converter.signature(name, wrapper, sample_kwargs={n: torch.from_numpy(v) for n, v in sample.items()})
        with torch.inference_mode(False), torch.no_grad():
            edge = converter.convert()
        edge.export(str(path))

    @staticmethod
    def _convert_tensorflow(model: LoadedModel, path: Path, signatures: dict[int, str]) -> None:
        from edgebert.targets.torch_graph import capture_model

        with tempfile.TemporaryDirectory(prefix="edgebert-graph-") as graph_dir:
            capture_model(model, tuple(signatures), Path(graph_dir), "tflite")
            spec = {"graph_dir": graph_dir, "signatures": {name: seq_len for seq_len, name in signatures.items()}, "out": str(path.absolute())}
            run_tf("edgebert.targets.tflite.exporter", spec, "the TensorFlow fallback (TFLiteConverter)")
        if not path.exists():
            raise TargetUnavailable(f"the TensorFlow fallback wrote no {path.name}")

    @staticmethod
    def _check_signatures(path: Path, names: list[str], signatures: dict[int, str], output_names: tuple[str, ...]) -> None:
        """The contract apps rely on, for every bucket: signature name, input names/dtype/shape, output names."""
        from ai_edge_litert.interpreter import Interpreter

        interpreter = Interpreter(model_path=str(path))
        found = interpreter.get_signature_list()
        problems = []
        for seq_len, signature in signatures.items():
            if signature not in found:
                problems.append(f"signature '{signature}' missing (found {sorted(found)})")
                continue
            runner = interpreter.get_signature_runner(signature)
            details = runner.get_input_details()
            if sorted(details) != sorted(names):
                problems.append(f"{signature}: inputs {sorted(details)} != {sorted(names)}")
            for name, d in details.items():
                if d["dtype"] != np.int32 or list(d["shape"]) != [1, seq_len]:
                    problems.append(f"{signature}: input {name} is {d['dtype'].__name__}{list(d['shape'])}, not int32[1, {seq_len}]")
            outputs = sorted(runner.get_output_details())
            if outputs != sorted(output_names):
                problems.append(f"{signature}: outputs {outputs} != {sorted(output_names)}")
        if problems:
            raise TargetUnavailable("the converted TFLite model breaks the export contract: " + "; ".join(problems))

    def load_runner(self, export_dir: Path, manifest: dict[str, Any], threads: int | None = None) -> Runner:
        return TFLiteRunner(Path(export_dir) / MODEL_FILE, _signatures(manifest), threads=threads, padding_side=buckets.padding_side(manifest))

    def kernel_paths(self, export_dir: Path, manifest: dict[str, Any]) -> dict[str, KernelPath]:
        """XNNPACK and the built-in kernels: their int8 arithmetic differs (dynamic-range inputs, rounding)."""
        path, signatures = Path(export_dir) / MODEL_FILE, _signatures(manifest)
        side = buckets.padding_side(manifest)
        cores = cpu.cores()
        paths = {name: KernelPath(text, TFLiteRunner(path, signatures, 1, name, side, parallel=cores)) for name, text in KERNEL_PATHS.items()}
        if self.arm64_runs(manifest):
            from edgebert.targets import arm64_paths

            inputs = paths[XNNPACK].runner.input_names  # type: ignore[union-attr]
            paths.update(arm64_paths.tflite_paths(path, signatures, inputs, side))
        return paths


def _signatures(manifest: dict[str, Any]) -> dict[int, str]:
    """{bucket: signature} of an export (manifests before buckets: their one signature at `seq_len`)."""
    default = manifest.get("target_details", {}).get("signature", SIGNATURE)
    return {n: entry.get("signature", default) for n, entry in buckets.from_manifest(manifest).items()}


def _dynamic(data: bytes, model: LoadedModel, options: ExportOptions, extra: dict[str, Any]) -> bytes:
    """The dynamic recipe `options.quantize` (int8, int4, w4a8) with the first float islands that hold on the guard
    texts (`INT8_FLOAT_ISLANDS`; w4a8, whose models are trained on its grid: `INT4_FLOAT_ISLANDS`, none first),
    measured against PyTorch on both kernel paths, their weights int8 unless float16 ones are needed
    (`base.int8_island_weights_hold`); what was chosen goes into `extra["quantization"]`."""
    from edgebert.parity import guard_inputs, torch_references
    from edgebert.targets import base
    from edgebert.targets.tflite import quantize as tq

    guard = guard_inputs(model.tokenizer, model.family.input_names(), options.seq_len)
    with cost.phase("guard reference (PyTorch)"):
        reference = torch_references(model.embedder, guard)
    signatures = signature_names(options.lengths)

    def measure(quantized: bytes, stop_below: float | None = None) -> float:
        return _guard_min_cosine(quantized, signatures, guard, reference, model.tokenizer.padding_side, stop_below)

    ladder = base.INT4_FLOAT_ISLANDS if options.quantize == tq.W4A8 else base.INT8_FLOAT_ISLANDS
    for rung, roles in enumerate(ladder):
        modules = tuple(dict.fromkeys(model.family.layer_module(role) for role in roles))
        label = f"rung {rung} ({'+'.join(roles) or 'no islands'})"
        with cost.phase(f"{label}: quantize"):
            quantized = tq.quantize_tflite(data, options.quantize, float_modules=modules)
        with cost.phase(f"{label}: guard"):
            measured = measure(quantized, base.RECIPE_MIN_COSINE if rung < len(ladder) - 1 else None)
        if measured >= base.RECIPE_MIN_COSINE:
            break
    extra["quantization"] = {"float_islands": list(roles)}
    if modules:

        def float16_islands() -> tuple[bytes, float]:
            with cost.phase("float16 island weights: quantize + guard"):
                halves = tq.quantize_tflite(data, options.quantize, float_modules=modules, island_weights="float16")
                return halves, measure(halves)

        quantized, measured = _island_weights(quantized, measured, float16_islands, extra["quantization"])
    extra["quantization"]["guard"] = guard_record(guard, measured)
    return quantized


def _island_weights(
    int8: bytes, int8_cosine: float, float16_islands: Callable[[], tuple[bytes, float]], record: dict[str, Any]
) -> tuple[bytes, float]:
    """The model whose island weights `base.int8_island_weights_hold` keeps (int8 unless float16 ones measure better
    and are needed), and its guard figure; what was chosen and the figures go into `record`. `float16_islands` (the
    same rung with float16 island weights, and its guard figure) is not built when int8's drift is negligible: the
    rule keeps int8 then whatever float16 measures."""
    from edgebert.targets import base
    from edgebert.targets.tflite.quantize import ISLAND_WEIGHTS

    if 1.0 - int8_cosine <= base.ISLAND_INT8_NEGLIGIBLE_DRIFT:
        float16, float16_cosine = b"", None
    else:
        float16, float16_cosine = float16_islands()
    use_float16 = float16_cosine is not None and float16_cosine > int8_cosine and not base.int8_island_weights_hold(int8_cosine, float16_cosine)
    record["float_island_weights"] = ISLAND_WEIGHTS["float16" if use_float16 else "int8"]
    record["float_island_weights_guard"] = {
        "int8": round(int8_cosine, 6), "float16": None if float16_cosine is None else round(float16_cosine, 6),
        "rule": (f"int8 unless it misses {base.RECIPE_MIN_COSINE} or leaves more than {base.ISLAND_INT8_MAX_DRIFT_RATIO:g}x "
                 f"float16's drift (drifts under {base.ISLAND_INT8_NEGLIGIBLE_DRIFT:g} always pass: float16 is then not measured)"),
    }  # fmt: skip
    return (float16, float16_cosine) if use_float16 else (int8, int8_cosine)


def _guard_min_cosine(
    data: bytes, signatures: dict[int, str], guard: list[dict[str, np.ndarray]], reference: list[dict[str, np.ndarray]], side: str,
    stop_below: float | None = None,
) -> float:
    """The worst cosine to PyTorch over the guard feeds (padded on `side`), on both kernel paths of the flatbuffer `data`;
    `stop_below`: only whether it is below that is wanted (`base.guard_min_cosine`)."""
    worst = 1.0
    with tempfile.TemporaryDirectory(prefix="edgebert-tflite-guard-") as scratch:
        path = Path(scratch) / MODEL_FILE
        path.write_bytes(data)
        for kernels in KERNEL_PATHS:
            if stop_below is not None and worst < stop_below:
                break
            runner = TFLiteRunner(path, signatures, 1, kernels, side, parallel=cpu.cores())
            worst = min(worst, guard_min_cosine(runner, guard, reference, stop_below))
            runner.close()
    return worst


def bucket_bytes(path: Path) -> dict[str, int]:
    """What the buckets cost: bytes of constant data the signatures share (the weights), the constant bytes each one
    holds alone (litert_torch folds the position-embedding rows of its length into its own constant), and `graphs`:
    the rest of the file, which every signature holds for itself (its operators, tensor table and quantization
    parameters: an int8 table's per-row scales and zero points are stored once per signature, 12 bytes a row)."""
    from ai_edge_litert.tools import flatbuffer_utils

    tree = flatbuffer_utils.read_model(str(path))
    sizes = [len(b.data) if b.data is not None else int(b.size or 0) for b in tree.buffers]
    users: dict[int, set[int]] = {}
    for index, subgraph in enumerate(tree.subgraphs):
        for tensor in subgraph.tensors:
            users.setdefault(tensor.buffer, set()).add(index)
    names = [sg.name.decode() if isinstance(sg.name, bytes) else str(sg.name) for sg in tree.subgraphs]
    result = {"shared": sum(sizes[b] for b, s in users.items() if len(s) > 1)}
    for index, name in enumerate(names):
        result[f"own:{name}"] = sum(sizes[b] for b, s in users.items() if s == {index})
    result["graphs"] = path.stat().st_size - sum(result.values())
    return result


def calibration_inputs(model: LoadedModel, options: ExportOptions, seq_len: int) -> list[dict[str, np.ndarray]]:
    """The signature inputs for each calibration sentence: int32 [1, seq_len], padded as the runner pads."""
    from edgebert.parity import encode

    names = model.family.input_names()
    inputs = []
    for text in options.calibration_texts:
        encoded = encode(model.tokenizer, [text], seq_len, pad_to_seq_len=True)
        inputs.append({n: encoded[n].astype(np.int32) for n in names})
    return inputs


def _sample_inputs(names: list[str], seq_len: int) -> dict[str, np.ndarray]:
    """A realistic int32 sample: a short sentence padded to seq_len (the trace does not depend on values)."""
    used = max(1, min(seq_len, 8))
    ids = np.zeros((1, seq_len), dtype=np.int32)
    ids[0, :used] = 1
    mask = (ids > 0).astype(np.int32)
    sample = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    return {n: sample[n] for n in names}


def _int32_wrapper(embedder: Any) -> Any:
    """The module litert_torch traces: the SentenceEmbedder (or TaskModel) behind int32 inputs and named outputs."""
    import torch

    class Int32Embedder(torch.nn.Module):
        """int32 inputs (cast to int64 inside) -> the embedder's named outputs ({"sentence_embedding", ...})."""

        def __init__(self, embedder: torch.nn.Module) -> None:
            super().__init__()
            self.embedder = embedder

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor | None = None,
        ) -> dict[str, torch.Tensor]:
            token_types = None if token_type_ids is None else token_type_ids.long()
            values = self.embedder(input_ids.long(), attention_mask.long(), token_types)
            return dict(zip(self.embedder.output_names, values))

    return Int32Embedder(embedder).eval()


def _tensorflow_fallback(spec: dict[str, Any]) -> dict[str, Any]:
    """Subprocess body of the fallback path: the captured graph in TensorFlow ops (tf.nn.gelu: TFLite has a GELU
    builtin and no Erf) -> SavedModel -> TFLiteConverter."""
    import tensorflow as tf

    from edgebert.targets.tf_graph import build_saved_model
    from edgebert.targets.tf_ops import Forms

    with tempfile.TemporaryDirectory(prefix="edgebert-tflite-tf-") as saved:
        signatures = {name: int(n) for name, n in spec["signatures"].items()}
        forms = {name: Forms(gelu="tf") for name in signatures}
        info = build_saved_model(Path(spec["graph_dir"]), Path(saved), signatures, forms)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved, signature_keys=list(signatures))
        Path(spec["out"]).write_bytes(converter.convert())
    return info


if __name__ == "__main__":  # the fallback subprocess: python -m edgebert.targets.tflite.exporter SPEC.json
    sys.exit(tf_main(_tensorflow_fallback))
