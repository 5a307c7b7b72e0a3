"""The README.md (a Hugging Face model card) of every model directory edgebert writes: YAML front matter the Hub reads
(library, pipeline tag, base model, tags), what edgebert did to the model and what it measured, from the manifest,
so that a directory can be pushed to the Hub as it is."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

CARD = "README.md"
PIPELINE_TAGS = {"feature-extraction": "sentence-similarity", "text-classification": "text-classification",
                 "fill-mask": "fill-mask", "token-classification": "token-classification"}  # fmt: skip
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # owner/name, not a path on this machine


def _shown(value: Any) -> Any:
    """A value as the card shows it: a path on this machine by its last part (the card is for other machines)."""
    if isinstance(value, str) and ("/" in value or "\\" in value) and not HUB_ID.match(value):
        return Path(value).name
    return value


def root_name(manifest: dict[str, Any]) -> str | None:
    """The name of the model at the root of the lineage (the teacher or the model first compressed)."""
    while manifest.get("parent_manifest"):
        manifest = manifest["parent_manifest"]
    return manifest.get("parent_name")


def card(manifest: dict[str, Any]) -> str:
    """The model card's text for a model directory's manifest."""
    task = manifest.get("task") or "feature-extraction"
    sentence = task == "feature-extraction"
    base = root_name(manifest)
    front = ["---", f"library_name: {'sentence-transformers' if sentence else 'transformers'}",
             f"pipeline_tag: {PIPELINE_TAGS.get(task, task)}"]  # fmt: skip
    if base and HUB_ID.match(base) and not Path(base).exists():
        front.append(f"base_model: {base}")
    front += ["tags:", "- edgebert", f"- edgebert-{manifest.get('step')}", *(["- sentence-transformers"] if sentence else []), "---"]
    return "\n".join([*front, "", f"# {manifest.get('name')}", "", *_what_was_done(manifest), "", *_measured(manifest), "",
                      *_how_to_load(task)]) + "\n"  # fmt: skip


def _what_was_done(manifest: dict[str, Any]) -> list[str]:
    model = manifest.get("model") or {}
    origin = f"Written by edgebert {manifest.get('edgebert_version')} (`edgebert {manifest.get('step')}`) from `{_shown(manifest.get('parent_name'))}`"
    shape = (f": a {model.get('family')} model, {model.get('layers')} layers, hidden size {model.get('hidden_size')}, "
             f"{model['parameters']:,} parameters." if isinstance(model.get("parameters"), int) else ".")  # fmt: skip
    lines = [origin + shape]
    pruning = manifest.get("pruning") or {}
    if pruning.get("pruned_heads"):
        heads = pruning.get("heads_per_layer", {})
        lines.append(f"Attention heads pruned ({heads.get('before')} -> {heads.get('after')} per layer): the removed heads are "
                     "stored as exact zeros at the stock shapes, so the stock classes load this directory; "
                     "`config.pruned_heads` names them and edgebert's exports leave them out.")  # fmt: skip
    if pruning.get("intermediate_size", {}).get("before") != pruning.get("intermediate_size", {}).get("after"):
        ffn = pruning["intermediate_size"]
        lines.append(f"FFN neurons pruned: {ffn.get('before')} -> {ffn.get('after')} per layer.")
    recipe = {k: v for k, v in (manifest.get("recipe") or {}).items() if v not in (None, "", [], {})}
    if recipe:
        lines += ["", "Recipe: " + ", ".join(f"`{k}={_shown(v)}`" for k, v in list(recipe.items())[:12]) + "."]
    return lines


def _measured(manifest: dict[str, Any]) -> list[str]:
    metrics = manifest.get("metrics") or {}
    lines = ["## Measured by edgebert", ""]
    if metrics.get("model_bytes"):
        lines.append(f"- weights: {metrics['model_bytes']:,} bytes")
    cosine = metrics.get("cosine_to_source")
    if isinstance(cosine, dict) and "mean" in cosine:
        lines.append(f"- cosine to the model it came from: mean {cosine['mean']}, min {cosine.get('min')} over {cosine.get('texts')} held-out texts")
    sts = metrics.get("sts_spearman")
    if isinstance(sts, dict):
        lines.append("- STS Spearman: " + ", ".join(f"{k} {v}" for k, v in sts.items() if isinstance(v, (int, float))))
    held = metrics.get("held_out")
    if isinstance(held, dict):
        lines.append(f"- held-out {held.get('metric')} ({held.get('rows')} rows): start "
                     f"{held.get('student_init')}, kept {held.get('student_final')} ({held.get('kept')})")
    if len(lines) == 2:
        lines.append("- see `edgebert.json` (this directory's manifest)")
    return lines + ["", "Every figure, the recipe and the lineage are in `edgebert.json`."]


def _how_to_load(task: str) -> list[str]:
    if task == "feature-extraction":
        code = ["from sentence_transformers import SentenceTransformer", "", "model = SentenceTransformer('path/or/hub-id')",
                "embeddings = model.encode(['a note to search'])"]  # fmt: skip
    else:
        auto = {"text-classification": "AutoModelForSequenceClassification", "fill-mask": "AutoModelForMaskedLM",
                "token-classification": "AutoModelForTokenClassification"}.get(task, "AutoModel")  # fmt: skip
        code = [f"from transformers import {auto}, AutoTokenizer", "", "tokenizer = AutoTokenizer.from_pretrained('path/or/hub-id')",
                f"model = {auto}.from_pretrained('path/or/hub-id')"]  # fmt: skip
    return ["## Use", "", "```python", *code, "```", "",
            "On a phone: `edgebert export --model <this directory> --target onnx|tflite|tfjs|executorch`."]  # fmt: skip


def write_model_card(directory: Path, manifest: dict[str, Any]) -> None:
    """Write `README.md` (replacing a parent's card copied over: this is another model)."""
    (Path(directory) / CARD).write_text(card(manifest))
