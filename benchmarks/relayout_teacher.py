#!/usr/bin/env python
"""Re-lay a BERT sentence-transformers model (the packaged all-MiniLM-L6-v2) into DistilBERT, RoBERTa and ELECTRA.

    nice -n 19 .venv/bin/python benchmarks/relayout_teacher.py SRC OUT_DIR [--families distilbert roberta electra]

SRC is a BERT model directory with sentence-transformers files (default if omitted: `teacher` = the packaged teacher).
Each family is written to OUT_DIR/<family>: config.json + model.safetensors of the family's transformers base model,
the teacher's WordPiece tokenizer (as DistilBertTokenizerFast / ElectraTokenizerFast; BertTokenizerFast for
RoBERTa, whose own class is byte-level BPE, so the copy keeps the teacher's vocabulary) and the teacher's sentence-transformers
stack (modules.json, Pooling, Normalize), saved by sentence-transformers itself. The weights are the teacher's,
mapped name by name with shape checks, so each copy computes the teacher's embeddings exactly:
- DistilBERT has no token-type embeddings: token_type_embeddings[0] is added into every row of the position table
  (single-sentence input always has type 0); the encoder's names change (q_lin, sa_layer_norm, ffn.lin1, ...).
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
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("USE_TF", "0")
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
LAYER_NAMES = {  # BERT encoder layer suffix -> DistilBERT transformer layer suffix
    "attention.self.query": "attention.q_lin",
    "attention.self.key": "attention.k_lin",
    "attention.self.value": "attention.v_lin",
    "attention.output.dense": "attention.out_lin",
    "attention.output.LayerNorm": "sa_layer_norm",
    "intermediate.dense": "ffn.lin1",
    "output.dense": "ffn.lin2",
    "output.LayerNorm": "output_layer_norm",
}


def distilbert(cfg, sd: dict) -> tuple[object, dict]:
    """DistilBertConfig and state dict: token type 0 folded into the positions, encoder names mapped."""
    from transformers import DistilBertConfig

    config = DistilBertConfig(
        vocab_size=cfg.vocab_size, max_position_embeddings=cfg.max_position_embeddings, dim=cfg.hidden_size,
        n_layers=cfg.num_hidden_layers, n_heads=cfg.num_attention_heads, hidden_dim=cfg.intermediate_size,
        activation=cfg.hidden_act, pad_token_id=cfg.pad_token_id, architectures=["DistilBertModel"])
    out = {
        "embeddings.word_embeddings.weight": sd["embeddings.word_embeddings.weight"],
        "embeddings.position_embeddings.weight": sd["embeddings.position_embeddings.weight"]
        + sd["embeddings.token_type_embeddings.weight"][0],
        "embeddings.LayerNorm.weight": sd["embeddings.LayerNorm.weight"],
        "embeddings.LayerNorm.bias": sd["embeddings.LayerNorm.bias"],
    }
    for i in range(cfg.num_hidden_layers):
        for bert_name, distil_name in LAYER_NAMES.items():
            for param in ("weight", "bias"):
                out[f"transformer.layer.{i}.{distil_name}.{param}"] = sd[f"encoder.layer.{i}.{bert_name}.{param}"]
    return config, out


def roberta(cfg, sd: dict) -> tuple[object, dict]:
    """RobertaConfig and state dict: positions shifted by pad id + 1, one token type, BERT names otherwise."""
    import torch
    from transformers import RobertaConfig

    shift = cfg.pad_token_id + 1
    config = RobertaConfig(**{**_bert_kwargs(cfg), "max_position_embeddings": cfg.max_position_embeddings + shift,
                              "type_vocab_size": 1, "architectures": ["RobertaModel"]})
    positions = sd["embeddings.position_embeddings.weight"]
    shifted = torch.cat([torch.zeros(shift, positions.shape[1], dtype=positions.dtype), positions])
    out = {k: v for k, v in sd.items() if not k.startswith("embeddings.")}
    out.update({
        "embeddings.word_embeddings.weight": sd["embeddings.word_embeddings.weight"],
        "embeddings.position_embeddings.weight": shifted,
        "embeddings.token_type_embeddings.weight": sd["embeddings.token_type_embeddings.weight"][:1],
        "embeddings.LayerNorm.weight": sd["embeddings.LayerNorm.weight"],
        "embeddings.LayerNorm.bias": sd["embeddings.LayerNorm.bias"],
    })
    return config, out


def electra(cfg, sd: dict) -> tuple[object, dict]:
    """ElectraConfig (embedding_size = hidden_size) and the BERT state dict without the pooler."""
    from transformers import ElectraConfig

    config = ElectraConfig(**{**_bert_kwargs(cfg), "embedding_size": cfg.hidden_size,
                              "type_vocab_size": cfg.type_vocab_size, "architectures": ["ElectraModel"]})
    return config, {k: v for k, v in sd.items() if not k.startswith("pooler.")}


def _bert_kwargs(cfg) -> dict:
    """The BERT config fields RoBERTa and ELECTRA share under the same names."""
    names = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
             "hidden_act", "max_position_embeddings", "layer_norm_eps", "pad_token_id", "type_vocab_size")
    return {name: getattr(cfg, name) for name in names}


LAYOUTS: dict[str, Callable] = {"distilbert": distilbert, "roberta": roberta, "electra": electra}


def load_checked(config, mapped: dict):
    """The family's base model holding `mapped`: every key present, every shape equal, nothing left over."""
    from transformers import AutoModel

    model = AutoModel.from_config(config)
    expected = model.state_dict()
    missing, extra = sorted(set(expected) - set(mapped)), sorted(set(mapped) - set(expected))
    assert not missing and not extra, f"{config.model_type}: missing {missing[:5]}, unexpected {extra[:5]}"
    for name, tensor in mapped.items():
        assert tensor.shape == expected[name].shape, f"{name}: {tuple(tensor.shape)} != {tuple(expected[name].shape)}"
    model.load_state_dict({k: v.clone().contiguous() for k, v in mapped.items()}, strict=True)
    return model.eval()


def relayout(src: Path, family: str, out: Path) -> None:
    """Write OUT as `family`: base model, the teacher's tokenizer and sentence-transformers stack."""
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Transformer
    from transformers import BertModel

    teacher = BertModel.from_pretrained(src)
    config, mapped = LAYOUTS[family](teacher.config, teacher.state_dict())
    out.mkdir(parents=True, exist_ok=True)
    model = load_checked(config, mapped)
    tokenizer_class = {"distilbert": "DistilBertTokenizerFast", "roberta": "BertTokenizerFast",
                       "electra": "ElectraTokenizerFast"}[family]
    tokenizer = getattr(transformers, tokenizer_class).from_pretrained(src)
    tokenizer.save_pretrained(out)
    if family == "roberta":  # RobertaConfig's defaults (bos 0, eos 2) are the BPE vocab's, not this tokenizer's
        model.config.bos_token_id, model.config.eos_token_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    model.save_pretrained(out, safe_serialization=True)
    st_teacher = SentenceTransformer(str(src), device="cpu")
    first = st_teacher[0]
    transformer = Transformer(str(out), max_seq_length=first.max_seq_length, do_lower_case=first.do_lower_case)
    SentenceTransformer(modules=[transformer, *list(st_teacher)[1:]], device="cpu").save(str(out))


def max_diff(src: Path, out: Path) -> float:
    """Max absolute difference of SentenceTransformer.encode between the teacher and the copy in `out`."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    ref = SentenceTransformer(str(src), device="cpu").encode(SENTENCES, batch_size=len(SENTENCES))
    got = SentenceTransformer(str(out), device="cpu").encode(SENTENCES, batch_size=len(SENTENCES))
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
