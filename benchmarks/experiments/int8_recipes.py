"""int8 recipes x kernel paths: the measurement behind edgebert's ONNX and TFLite int8 recipes.

Builds each candidate recipe from the default teacher's float exports, then scores it on the parity and guard
sentences (min cosine to PyTorch) on every kernel path: ONNX on this machine's onnxruntime kernels and on the
non-VNNI x86 arithmetic emulated (edgebert/targets/onnx/kernels.py); TFLite on XNNPACK and on LiteRT's built-in
kernels. Writes the files (for `edgebert bench`) and a markdown table.

    python benchmarks/experiments/int8_recipes.py --onnx-fp32 E/onnx/model.onnx --tflite-int8 E/tflite-int8/model.tflite \
        --calibration ../shared/data/corpus/sotu.txt.gz --out benchmarks/results/int8-recipes
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import numpy as np

from edgebert.compress.importance import read_calibration
from edgebert.targets.onnx.quantize import calibration_reader, ffn_down_projections, module_matmuls
from edgebert.targets.tflite.quantize import asymmetric_inputs
from edgebert.cpu import describe
from edgebert.modelio import load_model
from edgebert.parity import GUARD_SENTENCES, PARITY_SENTENCES, encode, torch_reference

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def onnx_variants(fp32: Path, out: Path, model: Any, calibration: Path) -> dict[str, Path]:
    """Every ONNX candidate (dynamic and static) as a file in `out`."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_dynamic, quantize_static

    down = ffn_down_projections(fp32, model.family)
    ffn = module_matmuls(fp32, model.family, [model.family.ffn_input_module, model.family.ffn_output_module])
    dynamic = {
        "onnx dynamic s8 8-bit, FFN down float (previous)": dict(weight_type=QuantType.QInt8, nodes_to_exclude=down),
        "onnx dynamic s8 7-bit, FFN down float (chosen)": dict(weight_type=QuantType.QInt8, reduce_range=True, nodes_to_exclude=down),
        "onnx dynamic U8U8, FFN down float": dict(weight_type=QuantType.QUInt8, nodes_to_exclude=down),
        "onnx dynamic s8 8-bit, all MatMuls": dict(weight_type=QuantType.QInt8, nodes_to_exclude=[]),
        "onnx dynamic s8 7-bit, all MatMuls": dict(weight_type=QuantType.QInt8, reduce_range=True, nodes_to_exclude=[]),
    }
    texts = read_calibration(calibration, max_passages=200 + len(PARITY_SENTENCES))
    texts = [t for t in texts if t not in PARITY_SENTENCES][:200]
    feeds = [{n: encode(model.tokenizer, [t], 128, pad_to_seq_len=False)[n] for n in INPUTS} for t in texts]
    static = {
        "onnx static s8 8-bit (previous)": dict(weight_type=QuantType.QInt8),
        "onnx static s8 7-bit": dict(weight_type=QuantType.QInt8, reduce_range=True),
        "onnx static U8U8 (chosen)": dict(weight_type=QuantType.QUInt8),
    }
    files = {}
    for index, (name, options) in enumerate(dynamic.items()):
        files[name] = out / f"onnx-dynamic-{index}.onnx"
        quantize_dynamic(str(fp32), str(files[name]), per_channel=True, op_types_to_quantize=["MatMul", "Gather"], **options)
    for index, (name, options) in enumerate(static.items()):
        files[name] = out / f"onnx-static-{index}.onnx"
        quantize_static(
            str(fp32), str(files[name]), calibration_reader(feeds), quant_format=QuantFormat.QDQ, per_channel=True,
            activation_type=QuantType.QUInt8, op_types_to_quantize=["MatMul", "Gather"], nodes_to_exclude=ffn,
            calibrate_method=CalibrationMethod.MinMax, extra_options={"CalibMovingAverage": True}, **options,
        )  # fmt: skip
    return files


def tflite_variants(chosen: Path, out: Path) -> dict[str, Path]:
    """The edgebert TFLite int8 export (asymmetric inputs) and the same file with symmetric inputs (previous)."""
    from ai_edge_litert.tools import flatbuffer_utils

    tree = flatbuffer_utils.read_model_from_bytearray(bytearray(chosen.read_bytes()))
    for subgraph in tree.subgraphs:
        for op in subgraph.operators:
            if hasattr(op.builtinOptions, "asymmetricQuantizeInputs"):
                op.builtinOptions.asymmetricQuantizeInputs = False
    previous = out / "tflite-int8-symmetric.tflite"
    previous.write_bytes(bytes(flatbuffer_utils.convert_object_to_bytearray(tree)))
    marked = out / "tflite-int8-asymmetric.tflite"
    marked.write_bytes(asymmetric_inputs(previous.read_bytes())[0])
    return {"tflite dynamic-range, symmetric inputs (previous)": previous, "tflite dynamic-range, asymmetric inputs (chosen)": marked}


def onnx_paths(path: Path) -> dict[str, Any]:
    from edgebert.targets.onnx.runner import onnx_kernel_paths

    return {name: p.runner for name, p in onnx_kernel_paths(path).items() if p.runner is not None}  # proved paths: the host's figures


def tflite_paths(path: Path) -> dict[str, Any]:
    from edgebert.targets.tflite.runner import KERNEL_PATHS, TFLiteRunner

    return {name: TFLiteRunner(path, "serving_default", 128, kernels=name) for name in KERNEL_PATHS}


def min_cosines(runner: Any, feeds: list[dict[str, np.ndarray]], refs: list[np.ndarray]) -> tuple[float, float]:
    """Min cosine over the parity sentences, then over the guard sentences (each sentence run alone)."""
    cos = []
    for feed, ref in zip(feeds, refs):
        got = runner.run(feed)["sentence_embedding"][0].astype(np.float64)
        cos.append(float(got @ ref / (np.linalg.norm(got) * np.linalg.norm(ref))))
    n = len(PARITY_SENTENCES)
    return min(cos[:n]), min(cos[n:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onnx-fp32", type=Path, required=True)
    parser.add_argument("--tflite-int8", type=Path, required=True)
    parser.add_argument("--calibration", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)
    args.out.mkdir(parents=True, exist_ok=True)
    model = load_model(__import__("edgebert.sources", fromlist=["x"]).default_model_dir())
    sentences = list(PARITY_SENTENCES) + list(GUARD_SENTENCES)
    rows = []
    for kind, files, paths in (
        ("onnx", onnx_variants(args.onnx_fp32, args.out, model, args.calibration), onnx_paths),
        ("tflite", tflite_variants(args.tflite_int8, args.out), tflite_paths),
    ):
        feeds = [encode(model.tokenizer, [s], 128, pad_to_seq_len=kind == "tflite") for s in sentences]
        refs = [torch_reference(model.embedder, f)["sentence_embedding"][0].astype(np.float64) for f in feeds]
        for name, file in files.items():
            scores = {p: min_cosines(r, feeds, refs) for p, r in paths(file).items()}
            cells = "; ".join(f"{p}: {a:.4f} / {b:.4f}" for p, (a, b) in scores.items())
            rows.append(f"| {name} | `{file.name}` | {file.stat().st_size / 2**20:.1f} | {cells} |")
            print(rows[-1], flush=True)
    table = [
        f"Machine: {describe()}",
        "",
        "| recipe | file | MiB | min cosine to PyTorch, parity / guard sentences, per kernel path |",
        "|---|---|---|---|",
        *rows,
    ]
    (args.out / "parity.md").write_text("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
