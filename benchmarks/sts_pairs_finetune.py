#!/usr/bin/env python
"""A supervised stage for a sentence embedder on labelled pairs: sentence-transformers' trainer with its CoSENT loss
on STS-B *train*, the epoch kept by its Spearman on held-out train pairs (STS-B dev is never read).

    benchmarks/sts_pairs_finetune.py MODEL_DIR PAIRS.csv HELD_OUT.csv OUT_DIR [EPOCHS] [LR]

PAIRS.csv and HELD_OUT.csv: sentence1,sentence2,score (0-5), no header (STS-B's layout); the pairs of HELD_OUT are
left out of training. HELD_OUT `-`: every pair is trained on for EPOCHS (a count an earlier run chose on held-out
pairs) and the last epoch is kept. MODEL_DIR: an edgebert model dir with a sentence-transformers stack (a pruned student too: it
loads through edgebert's loader). OUT_DIR (must not exist): the model at its best held-out epoch, in edgebert's
model-dir layout with MODEL_DIR's stack and tokenizer, and `finetune.json` (recipe, held-out Spearman per epoch).
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

BATCH, WARMUP, WEIGHT_DECAY, SEED = 16, 0.1, 0.01, 0
HELD_OUT_METRIC = "eval_held-out_spearman_cosine"


def read_pairs(path: Path) -> list[tuple[str, str, float]]:
    """(sentence1, sentence2, score) rows of an STS-B-style CSV."""
    with path.open(newline="", encoding="utf-8") as fh:
        return [(a, b, float(score)) for a, b, score, *_ in csv.reader(fh)]


def training_pairs(pairs: Path, held_out: Path | None) -> tuple[list[tuple[str, str, float]], list[tuple[str, str, float]]]:
    """The rows of `pairs` whose sentence pair is not in `held_out`, and the held-out rows."""
    held = read_pairs(held_out) if held_out is not None else []
    kept = {(a, b) for a, b, _ in held}
    return [p for p in read_pairs(pairs) if (p[0], p[1]) not in kept], held


def keep_best(model: Any, init: Path, best_dir: Path, history: list[float]) -> Any:
    """A trainer callback: after each evaluation, the model is saved to `best_dir` when its held-out score is the best."""
    from transformers import TrainerCallback

    from edgebert.modeldir import save_model_dir

    class KeepBest(TrainerCallback):
        def on_evaluate(self, args: Any, state: Any, control: Any, metrics: dict[str, float] | None = None, **_: Any) -> None:
            score = (metrics or {}).get(HELD_OUT_METRIC)
            if score is None:
                return
            if score > max(history):
                shutil.rmtree(best_dir, ignore_errors=True)
                save_model_dir(best_dir, model[0].auto_model, model.tokenizer, init)
            history.append(score)

    return KeepBest()


def finetune(init: Path, pairs: Path, held_out: Path | None, out: Path, epochs: int, lr: float) -> dict[str, Any]:
    """Train `init` on `pairs` (CoSENT), keep its best epoch on `held_out` (None: its last epoch) in `out`; the record
    written beside it."""
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
    history = [float(evaluator(model)["held-out_spearman_cosine"])] if evaluator else []
    work = Path(tempfile.mkdtemp(prefix=".finetune.tmp-", dir=out.parent))
    try:
        args = SentenceTransformerTrainingArguments(
            output_dir=str(work / "trainer"), num_train_epochs=epochs, per_device_train_batch_size=BATCH, learning_rate=lr,
            warmup_ratio=WARMUP, weight_decay=WEIGHT_DECAY, eval_strategy="epoch" if evaluator else "no", save_strategy="no", logging_steps=100,
            report_to="none", seed=SEED, use_cpu=True,
        )  # fmt: skip
        trainer = SentenceTransformerTrainer(
            model=model, args=args, train_dataset=Dataset.from_dict(columns), loss=CoSENTLoss(model), evaluator=evaluator,
            callbacks=[keep_best(model, init, work / "best", history)] if evaluator else [],
        )  # fmt: skip
        trainer.train()
        if evaluator is None:
            save_model_dir(work / "best", model[0].auto_model, model.tokenizer, init)
        best = work / "best" if (work / "best").is_dir() else None
        kept = "init" if best is None else f"epoch {history.index(max(history))}" if evaluator else f"epoch {epochs} (the last)"
        record = {
            "init": str(init), "pairs": str(pairs), "held_out": str(held_out) if held_out else None, "training_pairs": len(train), "held_out_pairs": len(held),
            "loss": "CoSENT (sentence-transformers)", "epochs": epochs, "lr": lr, "batch_size": BATCH, "warmup_ratio": WARMUP,
            "weight_decay": WEIGHT_DECAY, "seed": SEED,
            "held_out_spearman": {"init": history[0], "epochs": history[1:]} if evaluator else None,
            "kept": kept,
        }  # fmt: skip
        if best is None:
            shutil.copytree(init, work / "best")
        (work / "best" / "finetune.json").write_text(json.dumps(record, indent=2) + "\n")
        (work / "best").replace(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return record


def main(argv: list[str]) -> int:
    if len(argv) not in (4, 5, 6):
        print(__doc__, file=sys.stderr)
        return 2
    init, pairs, out = Path(argv[0]), Path(argv[1]), Path(argv[3])
    held_out = None if argv[2] == "-" else Path(argv[2])
    if out.exists():
        print(f"sts_pairs_finetune.py: {out} exists; remove it or choose another OUT_DIR", file=sys.stderr)
        return 2
    record = finetune(init, pairs, held_out, out, int(argv[4]) if len(argv) > 4 else 8, float(argv[5]) if len(argv) > 5 else 1e-4)
    print(json.dumps(record["held_out_spearman"]), record["kept"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
