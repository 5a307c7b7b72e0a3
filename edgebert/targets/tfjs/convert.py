"""The TensorFlow half of the TF.js target, run as its own process: captured graph -> SavedModel -> tfjs graph model.

`edgebert.targets.tfjs.exporter` captures the exported module's graph (`edgebert.targets.torch_graph`) and starts
this module through `edgebert.targets.tf_subprocess.run_tf`. It writes the graph in TensorFlow ops
(`edgebert.targets.tf_graph`) with the forms TF.js' wasm backend runs fast (embedding rows by GatherNd; attention as
one 2-D product per head on long buckets, batched on short ones: `spec["attention"]`, one form or {length: form}),
saves a SavedModel in `spec["saved_model_dir"]` (built by the first call, reused by the next ones of one export) and
runs the tensorflowjs converter on each signature with one weight shard. With several sequence lengths (buckets), one
graph per length over one shard (`shared_weights`).
The spec (JSON): graph_dir, saved_model_dir, seq_lens, family, quantize, islands (the float16 island patterns of one
conversion, into out_dir/rung-<rung>), rung, attention, outputs, out_dir, result.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from edgebert import cost
from edgebert.families import family_named
from edgebert.targets.tf_graph import STATIC_SCOPE, WEIGHT_SCOPE, build_saved_model, lookup_only_params, param_shapes, read_graph_ir, scope_name
from edgebert.targets.tf_ops import ROW_OFFSET, ROW_SCALE, Forms
from edgebert.targets.tfjs.shared_weights import merge
from edgebert.targets.tf_subprocess import tf_main

# One shard: React Native's bundleResourceIO takes a single weights file (2 GiB - 1 is far above BERT sizes).
WEIGHT_SHARD_SIZE_BYTES = 2**31 - 1
# uint8 is tfjs' per-tensor affine weight quantization. Applied to every weight, all-MiniLM-L6-v2 drops to cos 0.961:
# the FFN down-projection kernels (1536x384) have outliers that one scale per tensor cannot hold (each alone costs
# up to 0.03 cos). They stay float16 (+3.5 MB on the teacher, cos 0.995); the rest is uint8. Which graph weights
# they are: spec["islands"], one rung of the ladder (exporter.keep_float16_patterns: the FFN down-projections first,
# more layers' roles when the guard texts need them; the exporter keeps the first that holds).
# The 1-D weights (biases, LayerNorm scales and shifts: 0.1 % of the bytes) stay float16 too (`vector_patterns`): on
# the teacher the sentence parity 0.99462 -> 0.99514 (AMD EPYC, benchmarks/README.md "Every family").
# The word table (the bulk of a small student's bytes) is stored as per-row uint8 codes with a float16 scale and
# offset per row (`tf_ops.Forms.row_coded_tables`): tables of at least ROW_CODED_MIN_ROWS rows, looked up only. On the
# teacher the sentence parity 0.99514 -> 0.99589, wide texts 0.99121 -> 0.99267 (the whole table float16: 0.99592 /
# 0.99294 for +11 MB; this costs +0.12 MB), AMD EPYC.
# What the converter folds from nodes that read no input (`tf_graph.STATIC_SCOPE`: the position rows, rotary tables,
# relative-position biases) is an activation, not a weight: it stays float16 (`STATIC_PATTERN`). On the SST-2
# classifier (BERT, fine-tuned packaged teacher) the position rows at uint8 cost most of its error: sentence parity
# 0.99884 -> 0.99950, wide texts 0.99253 -> 0.99434 (p1 0.99560 -> 0.99819) for +49 KB at 128 tokens, AMD EPYC.
STATIC_PATTERN = f"*/{STATIC_SCOPE}/*"
ROW_CODED_MIN_ROWS = 1024
QUANTIZATIONS = ("none", "uint8", "float16")
ATTENTIONS = ("per-head", "batched")


def quantize_flags(quantize: str, keep_patterns: list[str] | tuple[str, ...] = ()) -> list[str]:
    """tensorflowjs_converter flags for a quantization; under uint8 the graph weights matching `keep_patterns`
    (fnmatch, e.g. `exporter.keep_float16_patterns`) stay float16."""
    if quantize == "none":
        return []
    if quantize == "float16":
        return ["--quantize_float16", "*"]
    keep = [p for p in keep_patterns if p]
    if not keep:
        return ["--quantize_uint8", "*"]
    # A bare --quantize_uint8 is the converter's fallthrough: every float32 weight not matched by another flag.
    return ["--quantize_float16", ",".join(keep), "--quantize_uint8"]




def convert_to_tfjs(
    saved_dir: Path, out_dir: Path, quantize: str, keep_patterns: tuple[str, ...] = (), signature: str = "serving_default"
) -> list[str]:
    """Run tensorflowjs_converter (in this process) on one signature of `saved_dir`; its argument list."""
    from tensorflowjs.converters import converter

    args = [
        "--input_format=tf_saved_model",
        "--output_format=tfjs_graph_model",
        f"--signature_name={signature}",
        "--saved_model_tags=serve",
        # Before another option: a bare --quantize_uint8 would swallow the next positional argument.
        *quantize_flags(quantize, keep_patterns),
        f"--weight_shard_size_bytes={WEIGHT_SHARD_SIZE_BYTES}",
        str(saved_dir),
        str(out_dir),
    ]
    converter.convert(args)
    return args


def signature_of(model_json: dict, input_names: list[str], output_names: list[str]) -> dict[str, dict[str, str]]:
    """Map signature keys to graph node names (`sentence_embedding` -> `Identity:0`, ...) from model.json."""
    sig = model_json.get("signature") or {}
    # The converter keys inputs by tensor name ("input_ids:0") and outputs by signature key.
    inputs = {key.split(":")[0]: spec.get("name", key) for key, spec in (sig.get("inputs") or {}).items()}
    outputs = {key: spec.get("name", key) for key, spec in (sig.get("outputs") or {}).items()}
    missing = [n for n in input_names if n not in inputs] + [n for n in output_names if n not in outputs]
    if missing:
        raise SystemExit(f"model.json signature lacks {missing}; got inputs {inputs} outputs {outputs}")
    return {"inputs": inputs, "outputs": outputs}


def convert(spec: dict[str, Any]) -> dict[str, Any]:
    """Convert the model dir of `spec` into `spec["out_dir"]`: one graph per length of `spec["seq_lens"]` over one
    weight shard (`shared_weights.merge`); the summary for the export manifest."""
    family = family_named(spec["family"])
    lengths = sorted(int(n) for n in spec["seq_lens"])
    attention = attention_per_length(spec.get("attention", "per-head"), lengths)
    if spec["quantize"] not in QUANTIZATIONS:
        raise SystemExit(f"unknown quantize {spec['quantize']!r}")
    out_dir = Path(spec["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    # One SavedModel, one signature per length: the same variables, so the graphs name their weights alike.
    signatures = {n: "serving_default" if len(lengths) == 1 else f"seq_{n}" for n in lengths}
    per_head = [signatures[n] for n in lengths if attention[n] == "per-head"]
    saved = Path(spec["saved_model_dir"])
    lengths_by_signature = {name: n for n, name in signatures.items()}
    coded = row_coded_tables(Path(spec["graph_dir"])) if spec["quantize"] == "uint8" else frozenset()
    info: dict[str, Any] = {}
    if not (saved / "saved_model.pb").exists():  # the first call of an export builds it
        forms = {
            name: Forms(gather_rows=True, per_head=name in per_head, gelu="erf", arithmetic_masks=True, row_coded_tables=coded)
            for name in lengths_by_signature
        }  # fmt: skip
        with cost.phase("build SavedModel"):
            info = build_saved_model(Path(spec["graph_dir"]), saved, lengths_by_signature, forms)
        info["attention_products"] = {name: "per_head_2d" if name in per_head else "batched" for name in lengths_by_signature}
        info.update({"gelu": "erf", "embedding_lookup": "gather_nd", "dense_products": "broadcast_matmul"})
        info["row_coded_tables"] = sorted(coded)
    always = (*vector_patterns(Path(spec["graph_dir"])), *row_scale_patterns(coded), STATIC_PATTERN)
    keep = (*spec["islands"], *always)
    with tempfile.TemporaryDirectory(prefix="edgebert-tfjs-") as scratch:
        converted = {n: Path(scratch) / f"tfjs_{n}" for n in lengths}
        for n, name in signatures.items():
            with cost.phase(f"tensorflowjs_converter ({name})"):
                converter_args = convert_to_tfjs(saved, converted[n], spec["quantize"], keep, signature=name)
        written = _place(converted, out_dir / f"rung-{spec['rung']}", converter_args, family.input_names(), spec.get("outputs"))
    return {**info, "attention": attention, "written": written}


def _place(converted: dict[int, Path], out_dir: Path, converter_args: list[str], input_names: list[str], outputs: Any) -> dict[str, Any]:
    """Move one conversion (a graph per length) into `out_dir`, over one weight shard; what it wrote."""
    outputs = list(outputs or ("sentence_embedding", "last_hidden_state"))
    out_dir.mkdir(parents=True)
    lengths = sorted(converted)
    if len(lengths) == 1:
        model_json = json.loads((converted[lengths[0]] / "model.json").read_text())
        shards = [p for group in model_json["weightsManifest"] for p in group["paths"]]
        for name in ["model.json", *shards]:
            shutil.move(str(converted[lengths[0]] / name), str(out_dir / name))
        return _describe(model_json, converter_args, shards, input_names, outputs)
    merged = merge(converted, out_dir)
    model_json = json.loads((out_dir / "model.json").read_text())
    described = _describe(model_json, converter_args, merged["weight_shards"], input_names, outputs)
    return {**described, "model_files": merged["model_files"], "bucket_bytes": merged["bucket_bytes"]}


def vector_patterns(graph_dir: Path) -> list[str]:
    """Converter patterns of the captured graph's 1-D parameters (biases, norm scales and shifts), by their names in
    the graph (`edgebert.targets.tf_graph.WeightReader`)."""
    return [f"*/{WEIGHT_SCOPE}/{scope_name(key)}/*" for key, shape in param_shapes(graph_dir).items() if len(shape) == 1]


def row_coded_tables(graph_dir: Path) -> frozenset[str]:
    """The lookup tables a uint8 export stores as per-row codes (`tf_ops.Forms.row_coded_tables`): those used only by
    embedding lookups with at least `ROW_CODED_MIN_ROWS` rows (word tables; their per-row scales then cost under 1 %)."""
    return frozenset(lookup_only_params(read_graph_ir(graph_dir), ROW_CODED_MIN_ROWS, param_shapes(graph_dir)))


def row_scale_patterns(coded: frozenset[str]) -> list[str]:
    """Converter patterns keeping the row-coded tables' scales and offsets float16 (uint8 would undo the coding)."""
    return [f"*/{WEIGHT_SCOPE}/{scope_name(key + suffix)}/*" for key in sorted(coded) for suffix in (ROW_SCALE, ROW_OFFSET)]


def attention_per_length(asked: str | dict[str, str], lengths: list[int]) -> dict[int, str]:
    """{length: "per-head" | "batched"}: one attention form for every length, or the spec's choice per length."""
    chosen = {n: asked for n in lengths} if isinstance(asked, str) else {n: asked.get(str(n)) for n in lengths}
    unknown = {n: a for n, a in chosen.items() if a not in ATTENTIONS}
    if unknown:
        raise SystemExit(f"unknown attention {unknown}; each length takes one of {ATTENTIONS}")
    return chosen


def _describe(
    model_json: dict, converter_args: list[str], shards: list[str], input_names: list[str], output_names: list[str]
) -> dict[str, Any]:
    """What the converter wrote: its arguments, shards, weight dtypes, signature and version fields."""
    import tensorflowjs

    stored: dict[str, int] = {}
    for w in (w for group in model_json["weightsManifest"] for w in group["weights"]):
        dtype = (w.get("quantization") or {}).get("dtype", w["dtype"])
        stored[dtype] = stored.get(dtype, 0) + 1
    return {
        "tensorflowjs": tensorflowjs.__version__,
        "converter_args": ["tensorflowjs_converter", *converter_args[:-2], "<saved_model>", "<out_dir>"],
        "weight_shards": shards,
        "weight_dtypes": stored,  # how many weight tensors are stored as float32 / float16 / uint8 / int32
        "signature": signature_of(model_json, input_names, output_names),
        "model_json_format": model_json.get("format"),
        "generated_by": model_json.get("generatedBy"),
        "converted_by": model_json.get("convertedBy"),
    }


if __name__ == "__main__":  # python -m edgebert.targets.tfjs.convert SPEC.json (see edgebert.targets.tf_subprocess)
    sys.exit(tf_main(convert))
