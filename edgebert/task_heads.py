"""Task heads exported whole: a transformers task model (`*ForSequenceClassification`, `*ForTokenClassification`,
`*ForMaskedLM`) behind the export's input names, returning the task's named outputs.

The exported graph is transformers' own model (traced by torch for ONNX and TFLite; captured by torch.export and
written in TensorFlow ops for TF.js and the TFLite fallback, `edgebert.targets.torch_graph`), so the parity reference
and the export are the same code. Fill-mask exports carry the top-k in the graph (`top_ids` int32, `top_scores` float32 softmax probabilities,
[batch, tokens, k]) instead of the [batch, tokens, vocab] logits (docs/export.md: measurement and choice).
"""

from __future__ import annotations

from typing import Any

from edgebert.errors import UserError
from edgebert.heads import FEATURE_EXTRACTION, TASKS

TEXT_CLASSIFICATION = "text-classification"
TOKEN_CLASSIFICATION = "token-classification"
FILL_MASK = "fill-mask"
FILL_MASK_OUTPUTS = ("top_ids", "top_scores")


def output_names(task: str) -> tuple[str, ...]:
    """The named outputs an export of `task` has (the contract: edgebert/heads.py TASKS, top-k for fill-mask)."""
    return FILL_MASK_OUTPUTS if task == FILL_MASK else TASKS[task][1]


def labels(config: Any) -> list[str]:
    """`id2label` in id order (transformers config or its config.json dict)."""
    raw = config.get("id2label") if isinstance(config, dict) else getattr(config, "id2label", None)
    if raw is not None and not isinstance(raw, dict):
        raise UserError(f"config.json: id2label must map label ids to names, got a {type(raw).__name__}; re-save the model")
    try:
        mapping = {int(k): str(v) for k, v in (raw or {}).items()}
    except (TypeError, ValueError):
        raise UserError(f"config.json: id2label keys must be label ids 0..n-1, got {sorted(map(str, raw))[:3]}; re-save the model") from None
    if sorted(mapping) != list(range(len(mapping))):
        raise UserError(f"config.json: id2label must number its labels 0..{len(mapping) - 1}, got ids {sorted(mapping)[:6]}; re-save the model")
    return [mapping[i] for i in sorted(mapping)]


def manifest_outputs(task: str, config: Any, batch: Any, seq: Any, top_k: int) -> list[dict[str, Any]]:
    """The manifest's `outputs` of a task export: names, shapes, dtypes; classifier logits carry their labels."""
    if task == FILL_MASK:
        shape = [batch, seq, top_k]
        return [
            {"name": "top_ids", "dtype": "int32", "shape": shape, "k": top_k, "meaning": "token ids, best first"},
            {"name": "top_scores", "dtype": "float32", "shape": shape, "k": top_k, "meaning": "softmax probabilities over the vocabulary"},
        ]
    names = labels(config)
    shape = [batch, len(names)] if task == TEXT_CLASSIFICATION else [batch, seq, len(names)]
    return [{"name": "logits", "dtype": "float32", "shape": shape, "dim": len(names), "labels": names}]


def architecture_class(config: Any, task: str) -> str:
    """The transformers class of the model's own `task` head (its config's `architectures` entry)."""
    suffix = TASKS[task][0].replace("AutoModel", "")
    archs = config.get("architectures") if isinstance(config, dict) else getattr(config, "architectures", None)
    for arch in archs or ():
        if str(arch).endswith(suffix):
            return str(arch)
    raise UserError(f"the model's config names no *{suffix} architecture (architectures: {archs}); re-save the model")


def _check_label_count(config: dict[str, Any]) -> None:
    """UserError when config.json's `num_labels` and its `id2label` disagree: which one the head has is unknown."""
    names, count = labels(config), config.get("num_labels")
    if count is not None and names and count != len(names):
        raise UserError(
            f"config.json: num_labels is {count} but id2label names {len(names)} labels; re-save the model so they agree"
        )


def check_task_config(config: dict[str, Any], task: str, top_k: Any) -> None:
    """UserError (one line) for a task export edgebert cannot make as asked (no head class, a top-k out of range).

    Labels are transformers' `id2label` of the loaded config (LABEL_<i> when config.json names none)."""
    if task == FEATURE_EXTRACTION:
        return
    architecture_class(config, task)
    if task != FILL_MASK:
        _check_label_count(config)
    if task == FILL_MASK:
        vocab = int(config.get("vocab_size", 0))
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= vocab:
            raise UserError(f"--top-k {top_k} must be between 1 and the vocabulary size {vocab}")
