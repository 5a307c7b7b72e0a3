"""transformers.js's layout of an ONNX export (`edgebert export --target onnx --layout transformers.js`).

transformers.js 4.3.1 (npm `@huggingface/transformers`) loads a model folder with `pipeline(task, folder)`:
- `config.json` at the top: `model_type` picks its model class (BertModel, BertForSequenceClassification, …),
  `id2label` and `problem_type` the labels and the softmax, `transformers.js_config.dtype` the ONNX file when the call
  names no dtype (else wasm would ask for `model_quantized.onnx` and other devices for `model.onnx`);
- `tokenizer.json` and `tokenizer_config.json` at the top; its tokenizer truncates to `model_max_length` by cutting
  the ids (the final [SEP] goes too), so the layout sets it to the export's --seq-len;
- the ONNX file in `onnx/`, named by dtype: `model.onnx` (fp32), `model_quantized.onnx` (q8), `model_fp16.onnx`,
  `model_int8.onnx`, `model_q4.onnx`.
It feeds the graph by input name (int64 ids from its tokenizer, zeros for a missing token_type_ids) and reads its
outputs by name: feature-extraction pools `last_hidden_state` itself (the call's `pooling` and `normalize`) and never
reads `sentence_embedding`; text-classification takes `logits`.

The ONNX file is written once, where transformers.js looks for it; the manifest names it (`target_details.model_file`)
and edgebert's runners and runtimes open it there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from edgebert.errors import UserError

TRANSFORMERS_JS = "transformers.js"
VERSION = "4.3.1"  # the release this layout is checked against (tests/test_web.py)
# edgebert's quantization recipe → the transformers.js dtype that names its file (only the name: the dtype changes
# nothing else of how an encoder runs), and that dtype's file suffix (transformers.js's DEFAULT_DTYPE_SUFFIX_MAPPING).
DTYPES = {"none": "fp32", "int8": "q8", "int8-static": "int8", "fp16": "fp16", "int4": "q4", "w4a8": "q4"}
SUFFIXES = {"fp32": "", "q8": "_quantized", "int8": "_int8", "fp16": "_fp16", "q4": "_q4"}
TASKS = ("feature-extraction", "text-classification")
# The model types transformers.js 4.3.1 has a base model and a sequence-classification class for (its registry.js).
MODEL_TYPES = ("albert", "bert", "deberta-v2", "distilbert", "electra", "modernbert", "mpnet", "roberta", "xlm-roberta")
# edgebert's pooling modes that transformers.js's feature-extraction `pooling` option computes alike: mean over the
# attention mask, and the first token (edgebert's `cls` is the first unmasked one: the same with right padding).
POOLINGS = ("mean", "cls")
CONFIG = "config.json"
EDGEBERT_FILE = "model.onnx"  # the ONNX file of edgebert's own layout


def onnx_file(manifest: dict[str, Any]) -> str:
    """An ONNX export's file, relative to its folder: the one its manifest names (`target_details.model_file`),
    model.onnx in exports made before it named one."""
    return (manifest.get("target_details") or {}).get("model_file", EDGEBERT_FILE)


def model_file(quantize: str) -> str:
    """Where the ONNX file of a `quantize` export goes in this layout: onnx/model_quantized.onnx for int8, …"""
    return f"onnx/model{SUFFIXES[DTYPES[quantize]]}.onnx"


def check(task: str, config: dict[str, Any], input_dtype: str | None) -> None:
    """UserError (one line) for an export transformers.js could not run from this layout."""
    if task not in TASKS:
        why = "its fill-mask pipeline reads the vocabulary's logits; edgebert's fill-mask graph returns top-k" if task == "fill-mask" else "not checked"
        raise UserError(f"--layout {TRANSFORMERS_JS} writes {' and '.join(TASKS)} exports, not {task} ({why})")
    model_type = config.get("model_type")
    if model_type not in MODEL_TYPES:
        raise UserError(f"--layout {TRANSFORMERS_JS}: transformers.js {VERSION} has no model class for model_type {model_type!r}; it has {', '.join(MODEL_TYPES)}")
    if input_dtype not in (None, "int64"):
        raise UserError(f"--layout {TRANSFORMERS_JS} takes int64 ids (transformers.js's tokenizer feeds int64), not --input-dtype {input_dtype}")


def write_config(loaded: Any, work: Path, quantize: str) -> str:
    """config.json: the model's transformers config (model_type, id2label, …) and the dtype that names the file."""
    config = loaded.config.to_dict()
    config["transformers.js_config"] = {"dtype": DTYPES[quantize]}
    (work / CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return CONFIG


def details(quantize: str, seq_len: int) -> dict[str, Any]:
    """The manifest's `target_details.transformers_js`."""
    return {"version": VERSION, "dtype": DTYPES[quantize], "config": CONFIG, "model_max_length": seq_len}


def cut_tokenizer(work: Path, seq_len: int) -> None:
    """tokenizer_config.json's model_max_length set to the export's seq_len: transformers.js truncates there (by
    cutting the ids) instead of at the model's own limit; edgebert's tokenizers truncate to seq_len anyway."""
    path = work / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["model_max_length"] = seq_len
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


def pipeline_options(manifest: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The pipeline call options with which transformers.js computes what the export computes, or (None, why no
    call does): feature-extraction's `pooling` and `normalize` (it pools last_hidden_state itself), text-classification's
    `top_k: None` (every label, softmax scores)."""
    if manifest.get("task") == "text-classification":
        return {"top_k": None}, ""
    model = manifest.get("model") or {}
    stack = model.get("sentence_stack") or {}
    mode = stack.get("pooling") or model.get("pooling")
    if stack.get("dense"):
        return None, f"its sentence vector passes {len(stack['dense'])} Dense layer(s) after pooling"
    if mode not in POOLINGS:
        return None, f"its pooling is {mode!r}; transformers.js pools {' and '.join(POOLINGS)} alike"
    if mode == "cls" and model.get("padding_side", "right") != "right":
        return None, "cls pooling of a tokenizer that pads on the left (transformers.js takes the first position)"
    embedding = next((o for o in manifest.get("outputs", []) if o["name"] == "sentence_embedding"), {})
    return {"pooling": mode, "normalize": bool(embedding.get("normalized", stack.get("normalize", False)))}, ""


def add_pipeline_options(manifest: dict[str, Any]) -> None:
    """The manifest's `target_details.transformers_js.pipeline_options` (what a JavaScript app passes to the
    pipeline's call: edgebert-runtime's `transformersJsOptions` reads it), null with `no_pipeline_options` saying why
    when no call computes the export's output."""
    details_ = manifest["target_details"]["transformers_js"]
    options, why = pipeline_options(manifest)
    details_["pipeline_options"] = options
    if options is None:
        details_["no_pipeline_options"] = why


def _recorded_options(manifest: dict[str, Any], details_: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The call options the manifest records (exports made before it recorded them: computed from it)."""
    if "pipeline_options" in details_:
        return details_["pipeline_options"], details_.get("no_pipeline_options", "")
    return pipeline_options(manifest)


def snippet(manifest: dict[str, Any], name: str) -> list[str]:
    """What `edgebert export` prints for transformers.js: how to load this layout and the call that computes what
    edgebert computes, or one line saying why no call does; for edgebert's layout, how to get this one."""
    details_ = (manifest.get("target_details") or {}).get("transformers_js")
    if manifest.get("target") != "onnx":
        return []
    if not details_:
        return [f"transformers.js: export with --layout {TRANSFORMERS_JS} for the layout its pipeline() loads"]
    task, file = manifest.get("task"), onnx_file(manifest)
    loads = f"// {file} (dtype '{details_['dtype']}' in config.json)"
    options, why = _recorded_options(manifest, details_)
    if task == "feature-extraction":
        if options is None:
            return [f"transformers.js: no snippet: its feature-extraction pipeline pools last_hidden_state itself and cannot compute this export's sentence_embedding ({why})"]
        call = [f"const extractor = await pipeline('feature-extraction', '{name}');  {loads}",
                f"const embeddings = await extractor(['a note to search'], {_js_object(options)});"
                "  // Tensor [texts, dim]: edgebert's sentence_embedding"]  # fmt: skip
    else:
        call = [f"const classifier = await pipeline('text-classification', '{name}');  {loads}",
                f"const ranked = await classifier('a text to label', {_js_object(options or {})});  // [{{ label, score }}], every label, best first (softmax)"]  # fmt: skip
    lines = [f"transformers.js {details_['version']} (npm install @huggingface/transformers): serve this folder as /models/{name}/, or upload it to the Hugging Face Hub and pass its id:",
             "import { env, pipeline } from '@huggingface/transformers';",
             "env.allowLocalModels = true;  // browsers: off by default (Node reads a folder path as it is)",
             "env.localModelPath = '/models/';", *call,
             f"// texts are cut at {details_['model_max_length']} tokens by dropping the rest, the final separator too (edgebert's runtimes keep it)"]  # fmt: skip
    return [lines[0]] + ["  " + line for line in lines[1:]]


def _js_object(options: dict[str, Any]) -> str:
    """`{ pooling: 'mean', normalize: true }`: call options as JavaScript."""
    return "{ " + ", ".join(f"{k}: {json.dumps(v).replace(chr(34), chr(39))}" for k, v in options.items()) + " }"
