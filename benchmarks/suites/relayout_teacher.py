#!/usr/bin/env python
"""Re-lay a BERT sentence-transformers model (the packaged all-MiniLM-L6-v2) into DistilBERT, RoBERTa and ELECTRA.

    nice -n 19 .venv/bin/python benchmarks/suites/relayout_teacher.py SRC OUT_DIR [--families distilbert roberta electra]

SRC is a BERT model directory with sentence-transformers files (default if omitted: `teacher` = the packaged teacher).
Each family is written to OUT_DIR/<family>: config.json + model.safetensors of the family's transformers base model,
the teacher's WordPiece tokenizer (as DistilBertTokenizerFast / ElectraTokenizerFast; BertTokenizerFast for
RoBERTa, whose own class is byte-level BPE, so the copy keeps the teacher's vocabulary) and the teacher's sentence-transformers
stack (modules.json, Pooling, Normalize), saved by sentence-transformers itself. The weights are the teacher's,
re-laid by `edgebert.relayout.relayout` (role by role, checked by running both), so each copy computes the
teacher's embeddings exactly:
- DistilBERT has no token-type embeddings: token_type_embeddings[0] is added into every row of the position table
  (single-sentence input always has type 0).
- RoBERTa numbers positions from padding_idx + 1: pad_token_id is the tokenizer's pad id and the position table is
  shifted by that much (max_position_embeddings grows by pad id + 1); one token type.
- ELECTRA is BERT's layout (embedding_size = hidden_size, so no embeddings_project) without the pooler.
The script encodes a few sentences with SentenceTransformer on the teacher and on each copy, prints the max absolute
difference and exits 1 if any is 1e-5 or more.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TOLERANCE = 1e-5
FAMILIES = ("distilbert", "roberta", "electra")
SENTENCES = [
    "A man is playing a guitar on stage.",
    "The quick brown fox jumps over the lazy dog.",
    "hi",
    "Prices rose 3.5% in May; why is EVERYONE shouting?",
    ("The State of the Union address is delivered by the President to Congress every year, "
     "and it describes the condition of the nation, its people and the measures the President recommends."),
]


def relayout(src: Path, family: str, out: Path) -> None:
    """Write OUT as `family`: base model, the teacher's tokenizer and sentence-transformers stack."""
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Transformer
    from transformers import BertModel

    from edgebert.families import BERT, family_named
    from edgebert.relayout import relayout as relayout_model

    teacher = BertModel.from_pretrained(src, attn_implementation="eager", trust_remote_code=False)
    model, notes = relayout_model(teacher, BERT, family_named(family), with_head=False)
    print(f"{family:10s} {'; '.join(notes) or 'names only'}")
    out.mkdir(parents=True, exist_ok=True)
    tokenizer_class = {"distilbert": "DistilBertTokenizerFast", "roberta": "BertTokenizerFast",
                       "electra": "ElectraTokenizerFast"}[family]
    tokenizer = getattr(transformers, tokenizer_class).from_pretrained(src, trust_remote_code=False)
    tokenizer.save_pretrained(out)
    if family == "roberta":  # RobertaConfig's defaults (bos 0, eos 2) are the BPE vocab's, not this tokenizer's
        model.config.bos_token_id, model.config.eos_token_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    model.save_pretrained(out, safe_serialization=True)
    st_teacher = SentenceTransformer(str(src), device="cpu", trust_remote_code=False)
    first = st_teacher[0]
    transformer = Transformer(str(out), max_seq_length=first.max_seq_length, do_lower_case=first.do_lower_case)
    SentenceTransformer(modules=[transformer, *list(st_teacher)[1:]], device="cpu", trust_remote_code=False).save(str(out))


def max_diff(src: Path, out: Path) -> float:
    """Max absolute difference of SentenceTransformer.encode between the teacher and the copy in `out`."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    ref = SentenceTransformer(str(src), device="cpu", trust_remote_code=False).encode(SENTENCES, batch_size=len(SENTENCES))
    got = SentenceTransformer(str(out), device="cpu", trust_remote_code=False).encode(SENTENCES, batch_size=len(SENTENCES))
    assert got.shape == ref.shape, f"{out}: embeddings {got.shape}, teacher {ref.shape}"
    return float(np.abs(got - ref).max())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("src", help="BERT sentence-transformers model directory, or `teacher` for the packaged one")
    parser.add_argument("out", type=Path, help="output directory (one subdirectory per family)")
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    args = parser.parse_args(argv)
    if args.src == "teacher":
        from edgebert.sources import default_model_dir

        args.src = str(default_model_dir())
    src = Path(args.src)
    if not (src / "config.json").is_file() or not (src / "modules.json").is_file():
        parser.error(f"{src} needs config.json and modules.json: pass a BERT sentence-transformers model directory")
    if json.loads((src / "config.json").read_text()).get("model_type") != "bert":
        parser.error(f"{src}: model_type must be 'bert' (this script re-lays BERT models only)")
    worst = 0.0
    for family in args.families:
        relayout(src, family, args.out / family)
        diff = max_diff(src, args.out / family)
        worst = max(worst, diff)
        print(f"{family:10s} max |encode - teacher encode| = {diff:.2e}  ({args.out / family})")
    if worst >= TOLERANCE:
        print(f"relayout_teacher: a copy differs from the teacher by {worst:.2e} (>= {TOLERANCE:g})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
