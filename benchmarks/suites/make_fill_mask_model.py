#!/usr/bin/env python
"""Give the packaged teacher (all-MiniLM-L6-v2, shipped without an MLM head) a fitted masked-LM head, with the Trainer.

    nice -n 19 .venv/bin/python benchmarks/suites/make_fill_mask_model.py --corpus ../shared/data/corpus/sotu.txt.gz \\
        --out runs/fill-mask-teacher [--steps 300]

The encoder stays frozen (so the model is the teacher's encoder exactly); only the head is trained: the transform
(dense + GELU + LayerNorm) and the output bias, the decoder tied to the teacher's word table, as in BERT. The result
is a `BertForMaskedLM` directory with the teacher's tokenizer, a real fill-mask model for benchmarks (edgebert's
fill-mask exports, bench's top-1 agreement). Input: text, one passage per line (.gz ok); the last `--heldout`
lines are held back and scored (masked-token top-1 accuracy, 15 % of tokens masked as BERT does). Output in OUT:
config.json, model.safetensors, tokenizer files, `fit_metrics.json` (steps, wall time, held-back accuracy before
and after). 300 steps of 16 passages at 48 tokens take about 6 minutes on 2 CPU cores (the decoder over the 30k-token vocabulary at every position is the
cost). Weights are not committed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def read_lines(path: Path, limit: int) -> list[str]:
    """The first `limit` non-empty lines of a text file (.gz ok)."""
    if not path.is_file():
        raise SystemExit(f"error: --corpus {path} is not a file; pass a text file with one passage per line")
    opener = gzip.open if path.suffix == ".gz" else open
    lines: list[str] = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                lines.append(line.strip())
            if len(lines) >= limit:
                break
    return lines


def top1(logits, labels):
    """Keep only the argmax ids of the logits (the full [batch, seq, vocab] logits would not fit in memory)."""
    return logits.argmax(-1)


def masked_accuracy(eval_pred) -> dict[str, float]:
    """Trainer metric: top-1 accuracy on the masked positions (labels != -100)."""
    predicted, labels = eval_pred
    mask = labels != -100
    return {"accuracy": float((predicted[mask] == labels[mask]).mean())}


def build_model(teacher: Path):
    """BertForMaskedLM over the teacher's encoder: every tensor but the head's frozen, the decoder tied."""
    from transformers import BertForMaskedLM

    model = BertForMaskedLM.from_pretrained(str(teacher), use_safetensors=True, trust_remote_code=False)
    for name, param in model.named_parameters():
        param.requires_grad = name.startswith("cls.predictions.transform") or name == "cls.predictions.bias"
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--passages", type=int, default=20000)
    parser.add_argument("--heldout", type=int, default=500)
    parser.add_argument("--max-length", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out.exists():
        raise SystemExit(f"error: {args.out} exists; remove it or pass another --out")
    from datasets import Dataset
    from transformers import AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainingArguments, set_seed

    from edgebert.sources import default_model_dir

    set_seed(args.seed)
    teacher = default_model_dir()
    lines = read_lines(args.corpus, args.passages + args.heldout)
    tokenizer = AutoTokenizer.from_pretrained(str(teacher), trust_remote_code=False)
    encode = lambda texts: Dataset.from_dict(dict(tokenizer(texts, truncation=True, max_length=args.max_length)))  # noqa: E731
    train, heldout = encode(lines[: -args.heldout]), encode(lines[-args.heldout :])
    model = build_model(teacher)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    work = Path(tempfile.mkdtemp(prefix=".fill-mask-", dir=args.out.parent if args.out.parent.exists() else None))
    training = TrainingArguments(
        output_dir=str(work / "trainer"), max_steps=args.steps, per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=64,
        learning_rate=args.lr, warmup_steps=0.05, weight_decay=0.0, logging_steps=50, save_strategy="no", report_to=[],
        seed=args.seed, use_cpu=True, dataloader_num_workers=0,
    )  # fmt: skip
    trainer = Trainer(model=model, args=training, train_dataset=train, eval_dataset=heldout, data_collator=collator,
                      compute_metrics=masked_accuracy, preprocess_logits_for_metrics=top1)  # fmt: skip
    before = trainer.evaluate()
    t0 = time.perf_counter()
    trainer.train()
    after = trainer.evaluate()
    model.save_pretrained(str(work / "model"), safe_serialization=True)
    tokenizer.save_pretrained(str(work / "model"))
    metrics = {"steps": args.steps, "wall_time_s": round(time.perf_counter() - t0, 1), "passages": len(lines) - args.heldout,
               "heldout_passages": args.heldout, "heldout_accuracy_before": before["eval_accuracy"],
               "heldout_accuracy": after["eval_accuracy"], "heldout_loss": after["eval_loss"], "teacher": str(teacher)}  # fmt: skip
    (work / "model" / "fit_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    shutil.move(str(work / "model"), str(args.out))
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    sys.exit(main())
