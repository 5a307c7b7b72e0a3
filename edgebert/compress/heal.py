"""Healing a pruned model (`edgebert compress --heal-steps N --heal-corpus FILE`): a short distillation from the
unpruned source (the teacher) into the pruned model (the student), with `edgebert distill`'s losses and Trainer.

The student is the pruned directory itself (`distill(student_init=...)`): same depth and width as the teacher, so
hidden states compare layer by layer with no projection; its pruned heads and narrower FFN are kept as they are.

Default losses, `cos=1,pooled=1` (no masked-LM, no soft targets), chosen for embedding quality:

* The default source is a sentence-embedding model (all-MiniLM-L6-v2): its hidden states were tuned contrastively
  after MLM pre-training and it has no MLM head. What pruning damaged and healing must restore is its embedding
  geometry, not word prediction. The pooled cosine (1 - cos between mean-pooled sentence embeddings) is exactly
  that quantity, the one compress reports as `cosine_to_source`.
* The hidden-state cosine on every layer (`cos_layers="mapped"`, layer i against layer i) repairs each layer
  where heads and neurons were removed instead of only the output, and gives a gradient per token rather than one
  per sentence, which matters in a run of a hundred steps.
* The masked-LM loss would pull the body towards an objective the source no longer optimises, and soft targets go
  through a head fitted on the frozen teacher: a lossy view of the last hidden state, which the cosine terms match
  directly. Both also cost a vocabulary-sized matmul per masked token and the teacher-head fit (skipped when
  neither is used). For masked-LM sources (e.g. a distilled student), add them: `--heal-losses mlm=2,ce=5,cos=1`.

The text is not masked (`mlm_probability` 0) unless an mlm/ce loss needs masks. Masking is what DistilBERT-style
distillation does, but for healing it backfires: on all-MiniLM-L6-v2 with 33 % of heads and 50 % of FFN neurons
pruned, 100 heal steps on 15 %-masked text lowered the held-out cosine to the source from 0.695 to 0.660, and in a
minimal loop (same losses, batch 16, seq 64, lr 1e-4) 20 steps on masked text took it from 0.708 to 0.657 while 20
steps on unmasked text raised it to 0.850: the student learns to copy the teacher on [MASK]-riddled text, not on
real text.

The learning rate is 3e-4 (distill's 1e-4 is for long runs): the same 100-step heal of that pruned MiniLM
reached a held-out cosine of 0.851 and STS-B dev Spearman 0.8337 at 1e-4, 0.865 and 0.8365 at 3e-4 (pruned:
0.695 and 0.8265; unpruned Spearman 0.8672).

The embedding block is frozen: pruning does not touch it, and a short heal on a narrow corpus would only move the
rows of the words that corpus contains, away from all the others. The held-out passages that compress measures
fidelity on are removed from the heal corpus, so `cosine_to_source` after healing is still measured on unseen text.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgebert import validate
from edgebert.config import DEFAULT_HEAL_LOSSES as DEFAULT_LOSSES
from edgebert.config import MASKED_SHARE, HealConfig
from edgebert.data import check_corpus_sources
from edgebert.distill.losses import TERMS, LossWeights
from edgebert.errors import UserError, VerificationError


def heal_record(cfg: HealConfig, seq_len: int) -> dict[str, Any]:
    """The heal recipe as the manifest records it (`seq_len`: compress's, when the heal has none of its own)."""
    weights = parse_losses(cfg.losses)
    return {
        "steps": cfg.steps,
        "corpus": [str(Path(c).expanduser().absolute()) if Path(c).expanduser().exists() else c for c in cfg.corpus],
        "losses": weights.as_dict(),
        "cos_layers": "mapped",
        "mlm_probability": mlm_probability(weights),
        "lr": cfg.lr,
        "batch_size": cfg.batch_size,
        "seq_len": cfg.seq_len or seq_len,
        "freeze_embeddings": cfg.freeze_embeddings,
        "group_by_length": cfg.group_by_length,
    }


def mlm_probability(weights: LossWeights) -> float:
    """Masked text only when a loss scores masked tokens; hidden-state losses read the text as it is."""
    return MASKED_SHARE if (weights.alpha_mlm or weights.alpha_ce) else 0.0


def parse_losses(spec: str) -> LossWeights:
    """'cos=1,pooled=1' -> LossWeights with the other terms 0; UserError on unknown terms or bad numbers."""
    values = dict.fromkeys(TERMS, 0.0)
    for part in str(spec).split(","):
        if not part.strip():
            continue
        name, sep, number = part.partition("=")
        name = name.strip()
        if not sep or name not in values:
            raise UserError(f"--heal-losses {spec!r}: expected TERM=WEIGHT pairs, e.g. {DEFAULT_LOSSES} (terms: {', '.join(TERMS)})")
        try:
            values[name] = float(number)
        except ValueError as exc:
            raise UserError(f"--heal-losses {spec!r}: {number.strip()!r} is not a number") from exc
        if not 0 <= values[name] < float("inf"):
            raise UserError(f"--heal-losses {spec!r}: weights must be finite and not negative")
    if not any(values.values()):
        raise UserError(f"--heal-losses {spec!r} weights every loss 0; e.g. {DEFAULT_LOSSES}")
    return LossWeights(**{f"alpha_{k}": v for k, v in values.items()})


def check_heal(cfg: HealConfig) -> LossWeights:
    """UserError (one line) for an unusable heal recipe; the parsed loss weights otherwise."""
    if cfg.corpus and not cfg.steps:
        raise UserError("--heal-corpus needs --heal-steps N (how many distillation steps to heal for)")
    validate.integer("--heal-steps", cfg.steps, 1)
    if not cfg.corpus:
        raise UserError("--heal-steps needs --heal-corpus FILE: text to heal the pruned model on (one passage per line, .gz ok)")
    validate.number("--heal-lr", cfg.lr, 0.0, low_open=True)
    validate.integer("--heal-batch-size", cfg.batch_size, 1)
    validate.optional_integer("--heal-seq-len", cfg.seq_len, 8, hint="tokens per healing sequence")
    check_corpus_sources(cfg.corpus)
    return parse_losses(cfg.losses)


@contextlib.contextmanager
def _stdout_elsewhere(quiet: bool) -> Iterator[None]:
    """Trainer prints its log dicts on stdout, where compress prints its JSON summary: send them to stderr (or away)."""
    if not quiet:
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        yield


def load_healed(full: Any, healed_dir: Path) -> list[str]:
    """Copy the healed weights into `full` in place (same class, same pruned shapes, checked by load_state_dict).

    The student trains no pooler: `full` keeps its own. Returns the keys kept from `full`."""
    from edgebert.families import family_for
    from edgebert.modelio import load_weights

    healed, info = load_weights(type(full), healed_dir)  # the missing pooler is expected
    missing = set(info.get("missing_keys", []))
    lacking = sorted(family_for(full.config.model_type).required_missing(missing))
    if lacking:
        raise VerificationError(f"the healed model lacks {len(lacking)} tensors of the pruned one (e.g. {lacking[0]})")
    result = full.load_state_dict({k: v for k, v in healed.state_dict().items() if k not in missing}, strict=False)
    if result.unexpected_keys:
        raise VerificationError(f"the healed model has tensors the pruned one lacks (e.g. {result.unexpected_keys[0]})")
    return sorted(result.missing_keys)


def heal_model(
    full: Any,
    pruned_dir: Path,
    source_dir: Path,
    cfg: HealConfig,
    texts: list[str],
    exclude: set[str],
    seq_len: int,
    seed: int,
    quiet: bool,
) -> dict[str, Any]:
    """Distil `source_dir` into the pruned model saved in `pruned_dir` on `texts` minus `exclude`, then load the
    result into `full` (the in-memory pruned model). Scratch files live beside `pruned_dir` and are removed."""
    from edgebert.distill.api import distill

    weights = parse_losses(cfg.losses)
    passages = [t for t in texts if t not in exclude]
    if not passages:
        raise UserError("the heal corpus holds only the held-out calibration passages; pass more text with --heal-corpus")
    pruned_dir = Path(pruned_dir)
    with tempfile.TemporaryDirectory(prefix=f"{pruned_dir.name}.heal-", dir=pruned_dir.parent) as tmp:
        corpus = Path(tmp) / "heal-corpus.txt"
        corpus.write_text("\n".join(passages) + "\n", encoding="utf-8")
        with _stdout_elsewhere(quiet):
            report = distill(
                source_dir, corpus, Path(tmp) / "healed", student_init=pruned_dir, steps=cfg.steps, batch_size=cfg.batch_size,
                seq_len=seq_len, lr=cfg.lr, alpha_mlm=weights.alpha_mlm, alpha_ce=weights.alpha_ce, alpha_cos=weights.alpha_cos,
                alpha_pooled=weights.alpha_pooled, alpha_sim=weights.alpha_sim, temperature=weights.temperature, cos_layers="mapped",
                mlm_probability=mlm_probability(weights),
                freeze_embeddings=cfg.freeze_embeddings, group_by_length=cfg.group_by_length, save_steps=cfg.steps, cache_dir=cfg.cache_dir, seed=seed, quiet=quiet,
            )  # fmt: skip
        kept_from_pruned = load_healed(full, report.out_dir)
    m = report.manifest
    losses = m["metrics"].get("losses") or []
    return {
        "passages": len(passages),
        "held_out_passages_removed": len(texts) - len(passages),
        "steps": m["distill"]["steps"],
        "train_runtime_s": m["metrics"].get("train_runtime_s"),
        "train_loss": m["metrics"].get("train_loss"),
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "teacher_head": m["distill"]["teacher_head"].get("source"),
        "student_mlm_head": m["distill"]["init"].get("mlm_head"),
        "kept_from_pruned": kept_from_pruned,
    }
