"""Parity between an exported model and its PyTorch reference, on a fixed set of real sentences."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

# Short, long (beyond 128 tokens), punctuation, accents, CJK, emoji, odd whitespace and casing.
PARITY_SENTENCES: tuple[str, ...] = (
    "Hello world.",
    "A man is playing a guitar on the stage.",
    "The quick brown fox jumps over the lazy dog!?",
    "Crème brûlée, jalapeño, naïve façade and Zürich's Ångström café.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "I love this app 😍🔥👍 — it's great!!! #blessed @friend",
    "  Multiple   spaces,\ttabs and\nnewlines   between words.  ",
    "Prices rose 3.5% to $1,234.56 on 2024-01-15 (see https://example.com/a?b=c).",
    "WHY IS EVERYONE SHOUTING IN ALL CAPS?",
    " ".join(
        [
            "The State of the Union address is a message that the President of the United States delivers",
            "to a joint session of Congress each year, reporting on the condition of the nation, outlining",
            "the legislative agenda and priorities, and, since the early twentieth century, it has been",
            "broadcast to the public, so it has become a major political event watched by millions of",
            "citizens who want to hear about the economy, foreign affairs, health care, education, taxes,",
            "immigration, energy, the environment, the military, infrastructure and many other topics that",
            "affect their lives, their families, their communities and their futures in deep ways.",
        ]
    ),
)

# int8-static is held to the integer-weight tolerance, 0.99. all-MiniLM-L6-v2, seq 128, calibrated on 100 and 200
# passages of sotu.txt.gz (two sampling seeds): min cosine 0.9935-0.9945 (ONNX, int8 weights; 0.9940 with today's
# uint8 weights) and 0.992-0.994 (TFLite); the dynamic int8 recipes measure 0.9905 (ONNX, worst of the host and the
# emulated non-VNNI kernels) and 0.9955 (TFLite, XNNPACK and built-in kernels alike). The same recipes with the FFN
# projections static measured 0.980 (ONNX) and 0.914 (TFLite): 0.99 rejects both, 0.98 would have let the ONNX one
# through. Every kernel path an export can meet is held to the same threshold (edgebert.export.verify_kernel_paths).
DEFAULT_MIN_COSINE = {"none": 0.9999, "fp16": 0.9999, "float16": 0.9999, "int8-static": 0.99}
DEFAULT_MIN_COSINE_QUANTIZED = 0.99

# Sentences a quantization recipe may test its own choices on (edgebert/targets/onnx/quantize.py), kept apart
# from PARITY_SENTENCES so that the parity check that follows is not scored on what the recipe was tuned on.
GUARD_SENTENCES: tuple[str, ...] = (
    "The weather in the mountains changed quickly, so we turned back before noon.",
    "Can you send me the report by Friday?",
    "Stock markets fell sharply after the central bank raised interest rates again.",
    "A woman is slicing tomatoes in a small kitchen.",
    "Ça coûte 12,50 € à São Paulo, señor.",
    "lol this is sooo good 😂😂 can't stop watching",
    "The committee, which met on 3 March, approved the budget (with two abstentions).",
    "He said: \"I'll be there at 7:30; don't wait.\"",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "NEW RELEASE: version 2.4.1 fixes the crash on start-up.",
    "The children played football in the park until it got dark and their parents called them home for dinner.",
    "Short.",
)


def default_min_cosine(quantization: str) -> float:
    """The parity tolerance for a quantization: 0.9999 for fp32/fp16, 0.99 for integer weights (int8-static too)."""
    return DEFAULT_MIN_COSINE.get(quantization, DEFAULT_MIN_COSINE_QUANTIZED)


def encode(tokenizer: Any, texts: Sequence[str], seq_len: int, pad_to_seq_len: bool = True) -> dict[str, np.ndarray]:
    """Tokenise with truncation to `seq_len`; pad to `seq_len` (static shapes) or to the longest text."""
    batch = tokenizer(
        list(texts),
        padding="max_length" if pad_to_seq_len else "longest",
        truncation=True,
        max_length=seq_len,
        return_tensors="np",
        return_token_type_ids=True,
    )
    return {k: np.asarray(v, dtype=np.int64) for k, v in batch.items()}


def torch_reference(embedder: Any, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run the PyTorch module (`SentenceEmbedder` or `TaskModel`) on numpy inputs: its named outputs as numpy arrays
    (float32; integer outputs such as fill-mask's `top_ids` keep their integer type)."""
    import torch

    with torch.inference_mode():
        tensors = {k: torch.from_numpy(v) for k, v in inputs.items()}
        values = embedder(**tensors)
    names = getattr(embedder, "output_names", ("sentence_embedding", "last_hidden_state"))
    return {n: v.numpy() if not v.is_floating_point() else v.float().numpy() for n, v in zip(names, values)}


# Feeds of one shape run in one PyTorch call of at most this many rows (`torch_references`).
REFERENCE_BATCH_ROWS = 64


def torch_references(embedder: Any, feeds: Sequence[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """`torch_reference` of each feed, computed in batches of feeds of one shape (texts of one token length, or padded
    to one bucket: no row is padded further than it is fed, so each row is the computation it is alone, up to the
    summation order of a wider matrix product); in the order of `feeds`."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, feed in enumerate(feeds):
        groups.setdefault(tuple((k, v.shape) for k, v in sorted(feed.items())), []).append(index)
    results: list[dict[str, np.ndarray] | None] = [None] * len(feeds)
    for indices in groups.values():
        for start in range(0, len(indices), REFERENCE_BATCH_ROWS):
            chunk = indices[start : start + REFERENCE_BATCH_ROWS]
            rows = [len(feeds[i]["input_ids"]) for i in chunk]
            joined = {k: np.concatenate([feeds[i][k] for i in chunk]) for k in feeds[chunk[0]]}
            outputs = torch_reference(embedder, joined)
            offsets = np.cumsum([0, *rows])
            for i, lo, hi in zip(chunk, offsets[:-1], offsets[1:]):
                results[i] = {name: value[lo:hi] for name, value in outputs.items()}
    return results  # type: ignore[return-value]


def natural_references(embedder: Any, feeds: Sequence[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
    """`torch_references` of padded feeds (a static program's), each row computed alone at its own length, padding
    stripped (the model's own computation of that text, which the padding an export adds must not change); token
    outputs come back at the feed's width, zeros where it pads (`compare` reads real tokens only)."""
    rows, spans = [], []
    for feed in feeds:
        mask = feed["attention_mask"]
        for row in range(mask.shape[0]):
            real = np.flatnonzero(mask[row])
            span = slice(int(real[0]), int(real[-1]) + 1)
            rows.append({k: v[row : row + 1, span] if v.ndim == 2 and v.shape == mask.shape else v[row : row + 1] for k, v in feed.items()})
            spans.append(span)
    computed = iter(zip(torch_references(embedder, rows), spans))
    results = []
    for feed in feeds:
        width = feed["attention_mask"].shape[1]
        per_row = [_padded_to(outputs, span, width) for outputs, span in (next(computed) for _ in range(feed["attention_mask"].shape[0]))]
        results.append({name: np.concatenate([r[name] for r in per_row]) for name in per_row[0]})
    return results


def _padded_to(outputs: dict[str, np.ndarray], span: slice, width: int) -> dict[str, np.ndarray]:
    """One row's outputs with its token outputs ([1, n, ...]) placed at `span` of a zero [1, width, ...] array."""
    placed = {}
    for name, value in outputs.items():
        if value.ndim < 3:
            placed[name] = value
            continue
        full = np.zeros((1, width, *value.shape[2:]), dtype=value.dtype)
        full[:, span] = value
        placed[name] = full
    return placed


@dataclass
class ParityReport:
    """How closely an exported model matches PyTorch on the parity sentences.

    `min_cosine` is the score held to the threshold: the sentence embedding's cosine (feature extraction), the
    cosine of the label probabilities the logits give per sentence (text classification) or per real token (token
    classification; `label_scores`), of fill-mask's top-k scores per real token. `agreement`: share of rows (tokens) whose argmax (fill-mask: top-1 id) matches, None for embeddings.
    `outputs`: the same measures per named output."""

    sentences: int
    seq_len: int
    min_cosine: float
    mean_cosine: float
    max_abs_diff: float
    threshold: float
    passed: bool
    agreement: float | None = None
    max_abs_diff_embedding: float | None = None
    max_abs_diff_hidden: float | None = None
    outputs: dict[str, dict[str, float]] = field(default_factory=dict)
    cosines: tuple[float, ...] = field(default=(), repr=False)  # every scored row, for the distribution

    @property
    def p1_cosine(self) -> float | None:
        """The 1st percentile of the scored rows' similarities (None without rows)."""
        return float(np.percentile(self.cosines, 1)) if self.cosines else None

    def as_dict(self) -> dict[str, Any]:
        record = asdict(self)
        del record["cosines"]
        return {**record, "p1_cosine": self.p1_cosine}


def _rows(reference: np.ndarray, candidate: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows to compare: one per sentence ([B, N] outputs), one per real token ([B, T, N] outputs, padding left out)."""
    if reference.ndim == 3:
        keep = mask[:, : reference.shape[1]].astype(bool)
        return reference[keep], candidate[:, : reference.shape[1]][keep]
    return reference, candidate


def _cosines(ref: np.ndarray, got: np.ndarray) -> np.ndarray:
    return (ref * got).sum(-1) / (np.linalg.norm(ref, axis=-1) * np.linalg.norm(got, axis=-1) + 1e-12)


def label_scores(logits: np.ndarray, problem_type: str | None = None) -> np.ndarray:
    """What a classifier's user reads from its logits, row by row: softmax probabilities (single-label heads, as
    transformers' text-classification pipeline returns them), or each label's sigmoid (multi-label). The logits
    themselves are not compared by cosine: softmax ignores a shift of all logits, and a sentence whose logits are all
    near zero (a near tie) gets an arbitrary logit direction, so one such sentence made a faithful int8 export of a
    distilled SST-2 classifier fail at cosine 0.26 while its probabilities agreed at 0.998."""
    if problem_type == "multi_label_classification":
        return 1.0 / (1.0 + np.exp(-logits))
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def _similarities(name: str, ref: np.ndarray, cand: np.ndarray, problem_type: str | None) -> np.ndarray:
    """The per-row score held to the threshold: cosine of the sentence embedding / top-k scores; for `logits`, cosine
    of the label scores, and for a one-column head (regression) 1 - |difference| / max(1, |reference|)."""
    if name != "logits":
        return _cosines(ref, cand)
    if ref.shape[-1] == 1 and problem_type != "multi_label_classification":
        return 1.0 - np.abs(ref - cand)[:, 0] / np.maximum(1.0, np.abs(ref)[:, 0])
    return _cosines(label_scores(ref, problem_type), label_scores(cand, problem_type))


def compare(
    reference: dict[str, np.ndarray],
    candidate: dict[str, np.ndarray],
    attention_mask: np.ndarray,
    threshold: float,
    problem_type: str | None = None,
) -> ParityReport:
    """Every named output of `reference` against `candidate`: a similarity row by row (sentences, or real tokens;
    `_similarities`), max abs diff, argmax / top-1 agreement; `last_hidden_state` contributes its max abs diff over
    real tokens only. `problem_type`: the classifier config's (multi-label heads are scored per label's sigmoid)."""
    per_output: dict[str, dict[str, float]] = {}
    scored: list[np.ndarray] = []
    for name, value in reference.items():
        if name not in candidate:
            raise ValueError(f"the export has no {name!r} output (it has {sorted(candidate)})")
        got = np.asarray(candidate[name])
        if got.shape[0] != value.shape[0] or got.shape[2:] != value.shape[2:]:
            raise ValueError(f"{name} shapes differ: reference {value.shape}, export {got.shape}")
        ref, cand = _rows(value, got, attention_mask)
        if name == "top_ids":
            per_output[name] = {"agreement": float((ref[:, 0] == cand[:, 0]).mean())}
            continue
        ref, cand = ref.astype(np.float64), cand.astype(np.float64)
        entry = {"max_abs_diff": float(np.abs(ref - cand).max())}
        if name != "last_hidden_state":
            cos = _similarities(name, ref, cand, problem_type)
            scored.append(cos)
            entry.update(min_cosine=float(cos.min()), mean_cosine=float(cos.mean()))
        if name == "logits":
            entry["agreement"] = float((ref.argmax(-1) == cand.argmax(-1)).mean())
        per_output[name] = entry
    cos = np.concatenate(scored)
    agreements = [o["agreement"] for o in per_output.values() if "agreement" in o]
    return ParityReport(
        sentences=int(attention_mask.shape[0]),
        seq_len=int(attention_mask.shape[1]),
        min_cosine=float(cos.min()),
        mean_cosine=float(cos.mean()),
        max_abs_diff=max(o.get("max_abs_diff", 0.0) for o in per_output.values()),
        threshold=threshold,
        passed=bool(cos.min() >= threshold),
        agreement=min(agreements) if agreements else None,
        max_abs_diff_embedding=per_output.get("sentence_embedding", {}).get("max_abs_diff"),
        max_abs_diff_hidden=per_output.get("last_hidden_state", {}).get("max_abs_diff"),
        outputs=per_output,
        cosines=tuple(float(c) for c in cos),
    )


def check_parity(
    run: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]],
    embedder: Any,
    inputs: dict[str, np.ndarray],
    threshold: float,
) -> ParityReport:
    """Run `run` and the PyTorch embedder on `inputs` and compare them."""
    return compare(torch_reference(embedder, inputs), run(inputs), inputs["attention_mask"], threshold)


def merge_reports(reports: Sequence[ParityReport]) -> ParityReport:
    """One report over several runs (e.g. one sentence each): worst cosine, diffs and agreement, mean of means."""
    total = sum(r.sentences for r in reports)

    def worst(values: list[float | None], pick: Callable[..., float] = max) -> float | None:
        known = [v for v in values if v is not None]
        return pick(known) if known else None

    outputs: dict[str, dict[str, float]] = {}
    for name in reports[0].outputs:
        entries = [r.outputs[name] for r in reports]
        merged = {key: worst([e.get(key) for e in entries], min if key in ("min_cosine", "agreement") else max) for key in entries[0]}
        if "mean_cosine" in merged:
            merged["mean_cosine"] = sum(e["mean_cosine"] * r.sentences for e, r in zip(entries, reports)) / total
        if "agreement" in merged:
            merged["agreement"] = sum(e["agreement"] * r.sentences for e, r in zip(entries, reports)) / total
        outputs[name] = merged
    return ParityReport(
        sentences=total,
        seq_len=max(r.seq_len for r in reports),
        min_cosine=min(r.min_cosine for r in reports),
        mean_cosine=sum(r.mean_cosine * r.sentences for r in reports) / total,
        max_abs_diff=max(r.max_abs_diff for r in reports),
        threshold=reports[0].threshold,
        passed=all(r.passed for r in reports),
        agreement=worst([o.get("agreement") for o in outputs.values()], min),
        max_abs_diff_embedding=worst([r.max_abs_diff_embedding for r in reports]),
        max_abs_diff_hidden=worst([r.max_abs_diff_hidden for r in reports]),
        outputs=outputs,
        cosines=tuple(c for r in reports for c in r.cosines),
    )


def guard_inputs(tokenizer: Any, input_names: Sequence[str], seq_len: int, padded: bool = False) -> list[dict[str, np.ndarray]]:
    """The guard sentences and the wide guard texts (`edgebert.parity_texts.wide_guard_texts`), each alone at its own
    length as an app runs it (truncated to `seq_len`; `padded`: padded to it, for a program of one fixed length): what a
    quantization recipe may check its own choices on (never the parity sentences or texts)."""
    from edgebert.parity_texts import wide_guard_texts

    feeds = []
    for text in (*GUARD_SENTENCES, *wide_guard_texts()):
        encoded = encode(tokenizer, [text], seq_len, pad_to_seq_len=padded)
        feeds.append({n: encoded[n] for n in input_names})
    return feeds
