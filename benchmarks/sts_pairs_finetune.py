#!/usr/bin/env python
"""A supervised stage for a sentence embedder on labelled pairs: sentence-transformers' trainer with its CoSENT loss
on STS-B *train*, the epoch (or the uniform average of the last epochs) kept by its Spearman on held-out train pairs
(STS-B dev is never read).

    benchmarks/sts_pairs_finetune.py [--seeds 0,1,...] MODEL_DIR PAIRS.csv HELD_OUT.csv OUT_DIR [EPOCHS] [LR] [SOUP_FROM]

PAIRS.csv and HELD_OUT.csv: sentence1,sentence2,score (0-5), no header (STS-B's layout); the pairs of HELD_OUT are
left out of training. The candidates are each epoch's weights and, for every k, the uniform average of epochs k..EPOCHS
(a checkpoint soup; Wortsman et al. 2022, Izmailov et al. 2018); the one scoring best on HELD_OUT is kept. With
several `--seeds` (default 0), MODEL_DIR is trained once per seed (the order of the pairs) and every candidate averages
the seeds' weights at those epochs (a soup of fine-tunes from the same init).
HELD_OUT `-`: every pair is trained on for EPOCHS (a count an earlier run chose on held-out pairs) and the last epoch
is kept, or the average of epochs SOUP_FROM..EPOCHS when SOUP_FROM is given. MODEL_DIR: an edgebert model dir with a
sentence-transformers stack (a pruned student too: it loads through edgebert's loader). OUT_DIR (must not exist): the
kept model in edgebert's model-dir layout with MODEL_DIR's stack and tokenizer, and `finetune.json` (recipe, held-out
Spearman per epoch and per soup, what was kept).
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

BATCH, WARMUP, WEIGHT_DECAY, SEEDS = 16, 0.1, 0.01, (0,)


def read_pairs(path: Path) -> list[tuple[str, str, float]]:
    """(sentence1, sentence2, score) rows of an STS-B-style CSV."""
    with path.open(newline="", encoding="utf-8") as fh:
        return [(a, b, float(score)) for a, b, score, *_ in csv.reader(fh)]


def training_pairs(pairs: Path, held_out: Path | None) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, float]]]:
    """The rows of `pairs` whose sentence pair is not in `held_out`, and the held-out rows."""
    held = read_pairs(held_out) if held_out is not None else []
    kept = {(a, b) for a, b, _ in held}
    return [p for p in read_pairs(pairs) if (p[0], p[1]) not in kept], held


def snapshot_epochs(model: Any, snapshots: list[dict[str, Any]]) -> Any:
    """A trainer callback: a CPU copy of `model`'s weights appended to `snapshots` at the end of each epoch."""
    from transformers import TrainerCallback

    class Snapshot(TrainerCallback):
        def on_epoch_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            snapshots.append({k: v.detach().cpu().clone() for k, v in model.state_dict().items()})

    return Snapshot()


def soup(states: list[dict[str, Any]]) -> dict[str, Any]:
    """The uniform average of `states`' floating-point tensors (the others, e.g. position ids, from the last)."""
    return {k: sum(s[k] for s in states) / len(states) if v.is_floating_point() else v for k, v in states[-1].items()}


def candidates(runs: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """By name, lazily averaged: each epoch's weights (averaged over the runs, one per seed), then the soup of every
    run's epochs k..last for every k before the last."""
    last = len(runs[0])
    named: dict[str, Any] = {f"epoch {i}": (lambda i=i: soup([run[i - 1] for run in runs])) for i in range(1, last + 1)}
    named |= {f"soup of epochs {k}-{last}": (lambda k=k: soup([s for run in runs for s in run[k - 1 :]])) for k in range(1, last)}
    return named


def choose(model: Any, evaluator: Any, snapshots: list[list[dict[str, Any]]], init_score: float) -> tuple[str, dict[str, float]]:
    """Every candidate's held-out Spearman, and the best one's name ("init" when none beats the untrained model); the
    model is left holding the best candidate's weights (the initial ones for "init": the caller copies the init dir)."""
    scores: dict[str, float] = {}
    for name, weights in candidates(snapshots).items():
        model.load_state_dict(weights())
        scores[name] = float(evaluator(model)["held-out_spearman_cosine"])
    best = max(scores, key=scores.__getitem__)
    if scores[best] <= init_score:
        return "init", scores
    model.load_state_dict(candidates(snapshots)[best]())
    return best, scores


def last_epochs(model: Any, snapshots: list[list[dict[str, Any]]], soup_from: int | None) -> str:
    """Without held-out pairs: the last epoch, or the soup of epochs `soup_from`..last (each averaged over the runs);
    the model is left holding it."""
    last = len(snapshots[0])
    name = f"epoch {last}" if soup_from is None else f"soup of epochs {soup_from}-{last}"
    model.load_state_dict(candidates(snapshots)[name]())
    return name


def finetune(
    init: Path, pairs: Path, held_out: Path | None, out: Path, epochs: int, lr: float, soup_from: int | None = None, seeds: tuple[int, ...] = SEEDS
) -> dict[str, Any]:
    """Train `init` on `pairs` (CoSENT) once per seed, keep its best epoch or soup on `held_out` (None: the last epoch,
    or the soup from `soup_from`) in `out`; the record written beside it."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator
    from sentence_transformers.sentence_transformer.losses import CoSENTLoss

    from edgebert.modeldir import save_model_dir
    from edgebert.modelio import load_sentence_transformer

    train, held = training_pairs(pairs, held_out)
    model = load_sentence_transformer(init)
    columns = {"sentence1": [a for a, _, _ in train], "sentence2": [b for _, b, _ in train], "score": [s / 5 for *_, s in train]}
    evaluator = EmbeddingSimilarityEvaluator([a for a, _, _ in held], [b for _, b, _ in held], [s / 5 for *_, s in held], name="held-out") if held else None
    init_score = float(evaluator(model)["held-out_spearman_cosine"]) if evaluator else None
    snapshots: list[list[dict[str, Any]]] = []
    work = Path(tempfile.mkdtemp(prefix=".finetune.tmp-", dir=out.parent))
    try:
        for seed in seeds:
            model = load_sentence_transformer(init)
            snapshots.append([])
            args = SentenceTransformerTrainingArguments(
                output_dir=str(work / "trainer"), num_train_epochs=epochs, per_device_train_batch_size=BATCH, learning_rate=lr,
                warmup_ratio=WARMUP, weight_decay=WEIGHT_DECAY, save_strategy="no", logging_steps=100, report_to="none",
                seed=seed, use_cpu=True,
            )  # fmt: skip
            trainer = SentenceTransformerTrainer(
                model=model, args=args, train_dataset=Dataset.from_dict(columns), loss=CoSENTLoss(model),
                callbacks=[snapshot_epochs(model, snapshots[-1])],
            )  # fmt: skip
            trainer.train()
        if evaluator is not None:
            kept, scores = choose(model, evaluator, snapshots, init_score)
        else:
            kept, scores = last_epochs(model, snapshots, soup_from), {}
        if kept == "init":
            shutil.copytree(init, work / "best")
        else:
            save_model_dir(work / "best", model[0].auto_model, model.tokenizer, init)
        record = {
            "init": str(init), "pairs": str(pairs), "held_out": str(held_out) if held_out else None, "training_pairs": len(train), "held_out_pairs": len(held),
            "loss": "CoSENT (sentence-transformers)", "epochs": epochs, "lr": lr, "batch_size": BATCH, "warmup_ratio": WARMUP,
            "weight_decay": WEIGHT_DECAY, "seeds": list(seeds),
            "held_out_spearman": {
                "init": init_score, "epochs": [scores[f"epoch {i}"] for i in range(1, epochs + 1)],
                "soups": {name.removeprefix("soup of epochs "): v for name, v in scores.items() if name.startswith("soup")},
            } if evaluator else None,
            "kept": kept,
        }  # fmt: skip
        (work / "best" / "finetune.json").write_text(json.dumps(record, indent=2) + "\n")
        (work / "best").replace(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return record


def main(argv: list[str]) -> int:
    seeds = SEEDS
    if argv[:1] == ["--seeds"] and len(argv) > 1:
        seeds, argv = tuple(int(s) for s in argv[1].split(",")), argv[2:]
    if len(argv) not in (4, 5, 6, 7):
        print(__doc__, file=sys.stderr)
        return 2
    init, pairs, out = Path(argv[0]), Path(argv[1]), Path(argv[3])
    held_out = None if argv[2] == "-" else Path(argv[2])
    if out.exists():
        print(f"sts_pairs_finetune.py: {out} exists; remove it or choose another OUT_DIR", file=sys.stderr)
        return 2
    epochs, lr = int(argv[4]) if len(argv) > 4 else 8, float(argv[5]) if len(argv) > 5 else 1e-4
    soup_from = int(argv[6]) if len(argv) > 6 else None
    if soup_from is not None and (held_out is not None or not 1 <= soup_from < epochs):
        print(f"sts_pairs_finetune.py: SOUP_FROM needs HELD_OUT `-` and 1 <= SOUP_FROM < EPOCHS ({epochs})", file=sys.stderr)
        return 2
    record = finetune(init, pairs, held_out, out, epochs, lr, soup_from, seeds)
    print(json.dumps(record["held_out_spearman"]), record["kept"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
