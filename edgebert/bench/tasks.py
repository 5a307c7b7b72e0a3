"""Task metrics of bench items, computed from the Runner contract's outputs in the item's own runtime.

- text-classification (`{"logits": [B, num_labels]}`): accuracy on the labelled set (`--sst2`: a TSV with a header
  `sentence<TAB>label`, or a dataset such as `glue/sst2:validation`), the gold labels mapped to the item's class ids
  by its labels (`edgebert.data.label_ids`), and the predicted ids, which the report compares with the reference's
  (agreement);
- fill-mask (`{"logits": [B, T, V]}`, or `{"top_ids": ...}` ranked best first): the top-1 token at one masked
  position per sentence (the middle token of each STS sentence, else of each labelled sentence); the report's
  agreement with the reference is the task metric;
- token-classification (`{"logits": [B, T, num_labels]}`): the label of every real token, compared likewise;
- feature-extraction: STS (edgebert.bench.measure.measure_sts).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from edgebert.heads import FEATURE_EXTRACTION, FILL_MASK, TEXT_CLASSIFICATION, TOKEN_CLASSIFICATION

STAGES = {FEATURE_EXTRACTION: "sts", TEXT_CLASSIFICATION: "classification", FILL_MASK: "fill_mask", TOKEN_CLASSIFICATION: "tokens"}
TASK_BATCH = 32


def stage_for(task: str, job: Any) -> str | None:
    """The result key of the item's task metric, or None when the run has no data for it."""
    stage = STAGES.get(task)
    if stage == "sts":
        return stage if job.sts_path else None
    if stage == "classification":
        return stage if job.sst2_path else None
    return stage if (job.sts_path or job.sst2_path) else None


def missing_data(task: str, job: Any) -> str | None:
    """Why an item's task metric was not measured (the data it needs was not given), for the report's notes."""
    if task == TEXT_CLASSIFICATION and not job.sst2_path:
        return "accuracy not measured: a text classifier is scored on labelled sentences (--sst2), none given"
    if task == FEATURE_EXTRACTION and not job.sts_path and job.sst2_path:
        return "STS not measured: an embedder is scored on sentence pairs (--sts), none given"
    return None


def truncated_count(tokenizer: Any, texts: list[str], length: int) -> int:
    """How many of `texts` are longer than `length` tokens, specials included (what the task metric truncated)."""
    return sum(1 for ids in tokenizer(texts)["input_ids"] if len(ids) > length)


def _logits(outputs: dict[str, Any], label: str) -> np.ndarray:
    if "logits" not in outputs:
        raise ValueError(f"{label} gives no logits output (it gives {', '.join(sorted(outputs))}); is its head exported?")
    return np.asarray(outputs["logits"])


def measure_classification(item: Any, runner: Any, job: Any, batches: Callable[..., Any]) -> dict[str, Any]:
    """Accuracy of the argmax of the item's logits on the labelled set, and the predicted class ids."""
    from edgebert.data import label_ids, load_labelled

    data = load_labelled(job.sst2_path, limit=job.sst2_limit)
    gold = label_ids(data.labels, item.id2label, f"{item.spec.label} on {job.sst2_path}")
    predicted = [0] * len(data)
    start = time.perf_counter()
    for chunk, inputs in batches(item, data.texts, job.sts_max_length, TASK_BATCH):
        logits = _logits(runner.run(inputs), item.spec.label)
        for row, i in enumerate(chunk):
            predicted[i] = int(np.argmax(logits[row]))
    correct = sum(p == g for p, g in zip(predicted, gold))
    length = min(job.sts_max_length, item.static_seq_len) if item.static_seq_len else job.sts_max_length
    return {
        "accuracy": correct / len(gold),
        "examples": len(gold),
        "max_length": length,
        "truncated": truncated_count(item.tokenizer, data.texts, length),
        "predicted": predicted,
        "seconds": round(time.perf_counter() - start, 2),
        "path": str(job.sst2_path),
    }


def task_sentences(job: Any) -> tuple[list[str], str]:
    """The sentences fill-mask and token-classification items are compared on: the STS set's, else the labelled set's."""
    if job.sts_path:
        from edgebert.bench.metrics import load_sts_csv, unique_sentences

        return unique_sentences(load_sts_csv(job.sts_path, limit=job.sts_limit))[0], str(job.sts_path)
    from edgebert.data import load_labelled

    return load_labelled(job.sst2_path, limit=job.sst2_limit).texts, str(job.sst2_path)


def mask_middle(inputs: dict[str, np.ndarray], mask_id: int) -> np.ndarray:
    """Replace the middle real token of each row (between [CLS] and [SEP]) by the mask token, in place; the masked
    position of each row (-1 for rows of fewer than 3 tokens, left as they are)."""
    real = inputs["attention_mask"].sum(axis=1).astype(int)
    positions = np.where(real >= 3, 1 + (real - 2) // 2, -1)
    for row, pos in enumerate(positions):
        if pos >= 0:
            inputs["input_ids"][row, pos] = mask_id
    return positions


def _top1(outputs: dict[str, Any], row: int, pos: int, label: str) -> int:
    if "top_ids" in outputs:  # ranked best first: [B, T, k], or [B, k] at the masked position
        top = np.asarray(outputs["top_ids"])
        return int(top[row, pos, 0] if top.ndim == 3 else top[row, 0])
    return int(np.argmax(_logits(outputs, label)[row, pos]))


def measure_fill_mask(item: Any, runner: Any, job: Any, batches: Callable[..., Any]) -> dict[str, Any]:
    """The item's top-1 token at one masked position per sentence (-1: sentence too short to mask)."""
    sentences, source = task_sentences(job)
    mask_id = item.tokenizer.mask_token_id
    if mask_id is None:
        raise ValueError(f"{item.spec.label}'s tokenizer has no mask token; fill-mask cannot be measured")
    predicted = [-1] * len(sentences)
    start = time.perf_counter()
    for chunk, inputs in batches(item, sentences, job.sts_max_length, TASK_BATCH):
        inputs = {k: np.array(v) for k, v in inputs.items()}
        positions = mask_middle(inputs, mask_id)
        outputs = runner.run(inputs)
        for row, i in enumerate(chunk):
            if positions[row] >= 0:
                predicted[i] = _top1(outputs, row, int(positions[row]), item.spec.label)
    return {"examples": sum(p >= 0 for p in predicted), "predicted": predicted, "seconds": round(time.perf_counter() - start, 2), "path": source}


def measure_tokens(item: Any, runner: Any, job: Any, batches: Callable[..., Any]) -> dict[str, Any]:
    """The item's label id for every real token of each sentence (flattened in sentence order)."""
    sentences, source = task_sentences(job)
    per_sentence: list[list[int]] = [[] for _ in sentences]
    start = time.perf_counter()
    for chunk, inputs in batches(item, sentences, job.sts_max_length, TASK_BATCH):
        labels = _logits(runner.run(inputs), item.spec.label).argmax(-1)
        for row, i in enumerate(chunk):
            per_sentence[i] = [int(x) for x in labels[row][inputs["attention_mask"][row].astype(bool)]]
    flat = [x for tokens in per_sentence for x in tokens]
    return {"examples": len(flat), "predicted": flat, "seconds": round(time.perf_counter() - start, 2), "path": source}


MEASURES = {"classification": measure_classification, "fill_mask": measure_fill_mask, "tokens": measure_tokens}


def summary(stage: str, result: dict[str, Any]) -> str:
    """One progress line for a task metric."""
    if stage == "classification":
        cut = f", {result['truncated']} truncated to {result['max_length']} tokens" if result.get("truncated") else ""
        return f"accuracy {result['accuracy']:.4f} over {result['examples']} labelled sentences{cut} ({result['seconds']} s)"
    what = "masked sentences" if stage == "fill_mask" else "tokens"
    return f"{result['examples']} {what} predicted ({result['seconds']} s)"


def agreement(predictions: list[int] | None, reference: list[int] | None) -> float | None:
    """Share of positions where the item predicts what the reference predicts (-1 = not scored); None when the two
    were not measured on the same examples."""
    if not predictions or not reference or len(predictions) != len(reference):
        return None
    pairs = [(p, r) for p, r in zip(predictions, reference) if p >= 0 and r >= 0]
    return sum(p == r for p, r in pairs) / len(pairs) if pairs else None
