#!/usr/bin/env python
"""Fine-tune the packaged teacher (all-MiniLM-L6-v2) into an SST-2 sentiment classifier, with transformers' Trainer.

    nice -n 19 .venv/bin/python benchmarks/suites/make_sst2_classifier.py --data ../shared/data/sst2/train.tsv \\
        --out runs/sst2-teacher [--steps 1000] [--heldout 2000]

Input: SST-2 train as TSV with the header `text<TAB>label` (0 negative, 1 positive). A seeded random `--heldout`
rows of it are held back (never trained on; exact duplicates of their texts are dropped from the training rows too)
and are the evaluation set whose accuracy is reported. Output in OUT: the teacher's family's sequence classifier
(2 labels, id2label {0: negative, 1: positive}) with the teacher's tokenizer, plus
- `heldout.tsv`: the held-back rows (same format as the input), for later benchmarks to score on the same part;
- `heldout_indices.json`: their 0-based row numbers in the input (header not counted), and the seed;
- `train_metrics.json`: steps, wall time, held-back accuracy and loss.
Sequences are cut at `--max-length` (64) and padded per batch, so 1000 steps of 32 run in about 10 minutes on 2 CPU cores;
the held-back accuracy is also logged at each quarter of the run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

LABELS = {0: "negative", 1: "positive"}


class DataError(ValueError):
    """The input file is not SST-2 TSV as described in the module docstring."""


def read_sst2(path: Path) -> list[tuple[str, int]]:
    """Rows (text, label) of a `text<TAB>label` TSV; raises DataError on anything else."""
    if not path.is_file():
        raise DataError(f"{path} is not a file: pass SST-2 train as --data (TSV with header text<TAB>label)")
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if header is None or [h.strip() for h in header[:2]] != ["text", "label"]:
            raise DataError(f"{path}: first line must be the header text<TAB>label, got {header!r}")
        rows = []
        for line_no, row in enumerate(reader, start=2):
            if len(row) < 2 or row[1].strip() not in ("0", "1"):
                raise DataError(f"{path}:{line_no}: expected text<TAB>0|1, got {row!r}")
            rows.append((row[0].strip(), int(row[1])))
    return rows


def split_heldout(rows: list[tuple[str, int]], n_heldout: int, seed: int) -> tuple[list[int], list[int]]:
    """Seeded held-back row indices (sorted) and training indices without any held-back text."""
    if not 0 < n_heldout < len(rows):
        raise DataError(f"--heldout must be between 1 and {len(rows) - 1} (the data has {len(rows)} rows)")
    heldout = sorted(random.Random(seed).sample(range(len(rows)), n_heldout))
    held_texts = {rows[i][0] for i in heldout}
    taken = set(heldout)
    train = [i for i in range(len(rows)) if i not in taken and rows[i][0] not in held_texts]
    return heldout, train


def tokenized_dataset(tokenizer, rows: list[tuple[str, int]], indices: list[int], max_length: int):
    """A datasets.Dataset of input ids and labels for the given rows (padding is left to the collator)."""
    from datasets import Dataset

    texts = [rows[i][0] for i in indices]
    encoded = tokenizer(texts, truncation=True, max_length=max_length)
    return Dataset.from_dict({**encoded, "labels": [rows[i][1] for i in indices]})


def accuracy(eval_pred) -> dict[str, float]:
    """Trainer metric: share of argmax logits equal to the label."""
    logits, labels = eval_pred
    return {"accuracy": float((logits.argmax(-1) == labels).mean())}


def write_heldout(out: Path, rows: list[tuple[str, int]], heldout: list[int], source: Path, seed: int) -> None:
    """heldout.tsv (input format) and heldout_indices.json beside the model."""
    with (out / "heldout.tsv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\", lineterminator="\n")
        writer.writerow(["text", "label"])
        writer.writerows(rows[i] for i in heldout)
    record = {"source": source.name, "rows": len(rows), "seed": seed, "indices": heldout}
    (out / "heldout_indices.json").write_text(json.dumps(record) + "\n")


def train(args: argparse.Namespace) -> dict:
    """Fine-tune, evaluate on the held-back rows, save the classifier and the split; returns the metrics."""
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    rows = read_sst2(args.data)
    heldout, train_idx = split_heldout(rows, args.heldout, args.seed)
    set_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.teacher, trust_remote_code=False)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.teacher, num_labels=2, id2label=LABELS, label2id={v: k for k, v in LABELS.items()}, trust_remote_code=False)
    training_args = TrainingArguments(
        output_dir=str(args.out / "trainer-tmp"), max_steps=args.steps, per_device_train_batch_size=args.batch,
        per_device_eval_batch_size=128, learning_rate=args.lr, warmup_steps=0.1, weight_decay=0.01,  # a share of max_steps
        lr_scheduler_type="linear", logging_steps=50, save_strategy="no", eval_strategy="steps",
        eval_steps=max(1, args.steps // 4), report_to=[], seed=args.seed,
        use_cpu=True, dataloader_num_workers=0, disable_tqdm=True)
    trainer = Trainer(
        model=model, args=training_args, data_collator=DataCollatorWithPadding(tokenizer),
        train_dataset=tokenized_dataset(tokenizer, rows, train_idx, args.max_length),
        eval_dataset=tokenized_dataset(tokenizer, rows, heldout, args.max_length), compute_metrics=accuracy)
    start = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - start
    result = trainer.evaluate()
    args.out.mkdir(parents=True, exist_ok=True)
    trainer.save_model(str(args.out))
    tokenizer.save_pretrained(str(args.out))
    write_heldout(args.out, rows, heldout, args.data, args.seed)
    shutil.rmtree(args.out / "trainer-tmp", ignore_errors=True)
    metrics = {"steps": args.steps, "batch": args.batch, "max_length": args.max_length, "lr": args.lr,
               "train_rows": len(train_idx), "heldout_rows": len(heldout), "train_seconds": round(train_s, 1),
               "heldout_accuracy": round(result["eval_accuracy"], 4), "heldout_loss": round(result["eval_loss"], 4)}
    (args.out / "train_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line arguments; the teacher defaults to the packaged all-MiniLM-L6-v2."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="SST-2 train TSV (header text<TAB>label)")
    parser.add_argument("--out", type=Path, required=True, help="directory for the classifier and the split")
    parser.add_argument("--teacher", type=Path, help="model directory of any family (default: the packaged teacher)")
    parser.add_argument("--steps", type=int, default=1000, help="optimizer steps (default 1000)")
    parser.add_argument("--batch", type=int, default=32, help="training batch size (default 32)")
    parser.add_argument("--lr", type=float, default=5e-5, help="peak learning rate (default 5e-5)")
    parser.add_argument("--max-length", type=int, default=64, help="tokens per sentence, longer are cut (default 64)")
    parser.add_argument("--heldout", type=int, default=2000, help="rows held back for evaluation (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and the training (default 0)")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.batch < 1 or args.max_length < 8:
        parser.error("--steps and --batch must be at least 1 and --max-length at least 8")
    if args.teacher is None:
        from edgebert.sources import default_model_dir

        args.teacher = default_model_dir()
    if not (args.teacher / "config.json").is_file():
        parser.error(f"--teacher {args.teacher} has no config.json: pass a BERT model directory")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        metrics = train(args)
    except DataError as exc:
        print(f"make_sst2_classifier: {exc}", file=sys.stderr)
        return 2
    print(f"held-back accuracy {metrics['heldout_accuracy']:.4f} on {metrics['heldout_rows']} rows after "
          f"{metrics['steps']} steps ({metrics['train_seconds']:.0f} s); model in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
