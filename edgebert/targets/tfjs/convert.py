"""The TensorFlow half of the TF.js target, run as its own process: PyTorch dir -> SavedModel -> tfjs graph model.

`edgebert.targets.tfjs.exporter` starts this module with `USE_TF=1` and `TF_ENABLE_ONEDNN_OPTS=0` in a fresh interpreter,
because the edgebert process has torch loaded and transformers set to torch-only. It builds `TFBertModel`
from the PyTorch weights, wraps it in a `tf.function` with int32 inputs of fixed shape [1, seq_len] that pools
like `edgebert.pooling.SentenceEmbedder` (then L2-normalises), computes attention as one 2-D product per head
(`tf_savedmodel.per_head_attention`: tfjs' wasm backend runs those on XNNPACK), saves a SavedModel in scratch
space and runs the tensorflowjs converter on it with one weight shard. A JSON summary goes to `--result`.

    python -m edgebert.targets.tfjs.convert --model-dir DIR --seq-len 128 --pooling mean \
        --input-names input_ids,attention_mask,token_type_ids --quantize none --out-dir OUT --result R.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from edgebert.targets.tf_savedmodel import build_saved_model

ENV = {
    "USE_TF": "1",  # transformers 4.57 exposes TFBertModel only when TF is allowed
    "TF_ENABLE_ONEDNN_OPTS": "0",  # else grappler fuses LayerNorm into _MklLayerNorm, which tfjs cannot run
    "TF_CPP_MIN_LOG_LEVEL": "2",
    "TF_USE_LEGACY_KERAS": "1",  # transformers' TF classes are tf_keras (Keras 2) models
    "CUDA_VISIBLE_DEVICES": "",
}
# One shard: React Native's bundleResourceIO takes a single weights file (2 GiB - 1 is far above BERT sizes).
WEIGHT_SHARD_SIZE_BYTES = 2**31 - 1
# uint8 is tfjs' per-tensor affine weight quantization. Applied to every weight, all-MiniLM-L6-v2 drops to cos 0.961:
# the FFN down-projection kernels (layer_._N/output/dense, 1536x384) have outliers that one scale per tensor cannot
# hold (each alone costs up to 0.03 cos). They stay float16 (+3.5 MB on the teacher, cos 0.995); the rest is uint8.
# The module is the family's `ffn_output_module` ("output.dense"), passed as --uint8-keep-float16 "output/dense".
DEFAULT_UINT8_KEEP = "output/dense"
QUANTIZATIONS = ("none", "uint8", "float16")


def quantize_flags(quantize: str, uint8_keep: str = DEFAULT_UINT8_KEEP, keep_patterns: list[str] | None = None) -> list[str]:
    """tensorflowjs_converter flags for a quantization (patterns match graph weight names such as
    `StatefulPartitionedCall/tf_bert_model/bert/encoder/layer_._5/output/dense/Tensordot/ReadVariableOp`).

    `keep_patterns` (the family's `tfjs_ffn_output_patterns`, e.g. ALBERT's `*/ffn_output/*`) overrides the
    BERT-layout patterns built from `uint8_keep`."""
    if quantize == "none":
        return []
    if quantize == "float16":
        return ["--quantize_float16", "*"]
    if keep_patterns is not None:
        keep = [p for p in keep_patterns if p]
    elif uint8_keep:
        # One digit, two digits: fnmatch's "*" crosses "/", so "layer_._*/output/dense" would also catch attention/output.
        keep = [f"*/layer_._{digits}/{uint8_keep}/*" for digits in ("[0-9]", "[0-9][0-9]")]
    else:
        keep = []
    if not keep:
        return ["--quantize_uint8", "*"]
    # A bare --quantize_uint8 is the converter's fallthrough: every float32 weight not matched by another flag.
    return ["--quantize_float16", ",".join(keep), "--quantize_uint8"]


OUTPUT_KEYS = ("sentence_embedding", "last_hidden_state")


def convert_to_tfjs(saved_dir: Path, out_dir: Path, quantize: str, uint8_keep: str, keep_patterns: list[str] | None = None) -> list[str]:
    """Run tensorflowjs_converter (in this process) and return its argument list."""
    from tensorflowjs.converters import converter

    args = [
        "--input_format=tf_saved_model",
        "--output_format=tfjs_graph_model",
        "--signature_name=serving_default",
        "--saved_model_tags=serve",
        # Before another option: a bare --quantize_uint8 would swallow the next positional argument.
        *quantize_flags(quantize, uint8_keep, keep_patterns),
        f"--weight_shard_size_bytes={WEIGHT_SHARD_SIZE_BYTES}",
        str(saved_dir),
        str(out_dir),
    ]
    converter.convert(args)
    return args


def signature_of(model_json: dict, input_names: list[str]) -> dict[str, dict[str, str]]:
    """Map signature keys to graph node names (`sentence_embedding` -> `Identity:0`, ...) from model.json."""
    sig = model_json.get("signature") or {}
    # The converter keys inputs by tensor name ("input_ids:0") and outputs by signature key.
    inputs = {key.split(":")[0]: spec.get("name", key) for key, spec in (sig.get("inputs") or {}).items()}
    outputs = {key: spec.get("name", key) for key, spec in (sig.get("outputs") or {}).items()}
    missing = [n for n in input_names if n not in inputs] + [n for n in OUTPUT_KEYS if n not in outputs]
    if missing:
        raise SystemExit(f"model.json signature lacks {missing}; got inputs {inputs} outputs {outputs}")
    return {"inputs": inputs, "outputs": outputs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True, type=Path)
    parser.add_argument("--seq-len", required=True, type=int)
    parser.add_argument("--pooling", required=True, help="the model's pooling modes, '+'-joined (checked against the model dir)")
    parser.add_argument("--input-names", required=True, help="comma-separated graph input names, in order")
    parser.add_argument("--quantize", default="none", choices=QUANTIZATIONS)
    parser.add_argument(
        "--uint8-keep-float16",
        default=DEFAULT_UINT8_KEEP,
        help="per-layer module (with '/') whose weights stay float16 under uint8; '' quantizes everything",
    )
    parser.add_argument(
        "--uint8-keep-patterns",
        default=None,
        help="comma-separated fnmatch patterns of graph weights kept float16 under uint8 (overrides --uint8-keep-float16)",
    )
    parser.add_argument(
        "--attention",
        default="per-head",
        choices=("per-head", "batched"),
        help="attention products as one 2-D matmul per head (fast on tfjs' wasm backend) or as batched matmuls",
    )
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    args = parser.parse_args(argv)
    forced = ("USE_TF", "TF_ENABLE_ONEDNN_OPTS")  # importing edgebert sets USE_TF=0 by default
    for key, value in ENV.items():
        if key in forced:
            os.environ[key] = value
        else:
            os.environ.setdefault(key, value)
    os.environ.pop("USE_TORCH", None)  # USE_TORCH=1 would make transformers hide its TF classes
    input_names = [n for n in args.input_names.split(",") if n]

    args.out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="edgebert-tfjs-") as scratch:
        saved = Path(scratch) / "saved_model"
        converted = Path(scratch) / "tfjs"
        info = build_saved_model(
            args.model_dir, args.seq_len, args.pooling, input_names, saved, per_head=args.attention == "per-head"
        )
        keep_patterns = None if args.uint8_keep_patterns is None else args.uint8_keep_patterns.split(",")
        converter_args = convert_to_tfjs(saved, converted, args.quantize, args.uint8_keep_float16, keep_patterns)
        model_json = json.loads((converted / "model.json").read_text())
        shards = [p for group in model_json["weightsManifest"] for p in group["paths"]]
        for name in ["model.json", *shards]:
            shutil.move(str(converted / name), str(args.out_dir / name))

    import tensorflowjs

    weights = [w for group in model_json["weightsManifest"] for w in group["weights"]]
    stored = {}
    for w in weights:
        dtype = (w.get("quantization") or {}).get("dtype", w["dtype"])
        stored[dtype] = stored.get(dtype, 0) + 1
    result = {
        **info,
        "tensorflowjs": tensorflowjs.__version__,
        "converter_args": ["tensorflowjs_converter", *converter_args[:-2], "<saved_model>", "<out_dir>"],
        "weight_shards": shards,
        "weight_dtypes": stored,  # how many weight tensors are stored as float32 / float16 / uint8 / int32
        "signature": signature_of(model_json, input_names),
        "model_json_format": model_json.get("format"),
        "generated_by": model_json.get("generatedBy"),
        "converted_by": model_json.get("convertedBy"),
    }
    args.result.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
