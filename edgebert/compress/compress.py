"""`compress(...)`: prune a model directory's heads and FFN neurons into a new, smaller model directory."""

from __future__ import annotations

import datetime as dt
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert import __version__
from edgebert.artifact import (
    atomic_output_dir,
    check_output_dir,
    dir_size,
    read_manifest,
    write_manifest,
)
from edgebert.errors import UserError, VerificationError
from edgebert.families import Family
from edgebert.families import FAMILIES
from edgebert.modelio import has_mlm_head, inspect_model_dir, load_weights
from edgebert.sources import resolve_model

# sentence-transformers files copied unchanged, so the pruned model keeps its pooling in every tool.
SENTENCE_TRANSFORMERS_FILES = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json")
SENTENCE_TRANSFORMERS_DIRS = ("1_Pooling", "2_Normalize")
FIDELITY_PASSAGES = 64
RELOAD_TOLERANCE = 1e-4


@dataclass
class CompressReport:
    """Where the pruned model went and what its manifest says."""

    out_dir: Path
    manifest: dict[str, Any]


def _log(quiet: bool, message: str) -> None:
    if not quiet:
        import sys

        sys.stderr.write(f"edgebert compress: {message}\n")


def _load(model_dir: Path, family: Family) -> tuple[Any, Any, Any]:
    """(full model to save, its base encoder, its masked-LM head or None); eager attention, eval mode."""
    import transformers

    with_head = family.mlm_class is not None and has_mlm_head(model_dir, family)
    cls = getattr(transformers, family.mlm_class) if with_head else transformers.AutoModel
    model, info = load_weights(cls, model_dir)
    missing = [k for k in info.get("missing_keys", []) if "pooler" not in k]
    if missing:
        raise UserError(f"the weights in {model_dir} do not match its config (e.g. {missing[0]} missing); re-save the model")
    model.eval()
    if with_head:
        return model, getattr(model, family.mlm_base_attr), getattr(model, family.mlm_head_prefix)
    return model, model, None


def _embed(base: Any, family: Family, tokenizer: Any, texts: list[str], pooling: str, seq_len: int) -> Any:
    import torch

    from edgebert.pooling import SentenceEmbedder

    embedder = SentenceEmbedder(base, pooling=pooling, uses_token_type_ids=family.uses_token_type_ids).eval()
    outs = []
    with torch.no_grad():
        for start in range(0, len(texts), 16):
            batch = tokenizer(texts[start : start + 16], truncation=True, max_length=seq_len, padding=True, return_tensors="pt")
            outs.append(embedder(batch["input_ids"], batch["attention_mask"], batch.get("token_type_ids"))[0])
    return torch.cat(outs)


def compress(
    model: str | Path | None,
    out: str | Path,
    *,
    prune_heads: float = 0.0,
    prune_ffn: float = 0.0,
    heads_to_prune: str | dict[Any, Any] | None = None,
    head_scope: str = "global",
    ffn_scope: str = "layer",
    calibration: str | Path | None = None,
    calibration_samples: int = 256,
    importance: str = "auto",
    seq_len: int = 128,
    batch_size: int = 16,
    seed: int = 0,
    force: bool = False,
    quiet: bool = False,
) -> CompressReport:
    """Prune `model` (dir, hub id, or None for the default teacher) and write the smaller model to `out`.

    prune_heads / prune_ffn: the share of attention heads / FFN neurons to remove, ranked by importance on the
    `calibration` text file (required for them). heads_to_prune: an explicit {layer: [head ids]} instead of
    prune_heads (no calibration needed). head_scope 'global' ranks heads across layers (Michel et al.), 'layer'
    takes the fraction from each layer. FFN pruning is per layer only (see prune.py). Bad input raises UserError
    before anything is written; `out` appears only when complete.
    """
    import torch
    from transformers import AutoTokenizer

    from edgebert.compress.importance import compute_importance, read_calibration
    from edgebert.compress.prune import (
        FFN_SCOPES,
        GLOBAL_FFN_REFUSAL,
        HEAD_SCOPES,
        HeadLayout,
        apply_ffn_pruning,
        apply_head_pruning,
        check_fraction,
        count_parameters,
        parse_head_list,
        select_ffn,
        select_heads,
    )
    from edgebert.pooling import pooling_from_sentence_transformers

    started = time.perf_counter()
    prune_heads = check_fraction("--prune-heads", prune_heads)
    prune_ffn = check_fraction("--prune-ffn", prune_ffn)
    if head_scope not in HEAD_SCOPES:
        raise UserError(f"--head-scope must be one of {', '.join(HEAD_SCOPES)}, got {head_scope!r}")
    if ffn_scope == "global":
        raise UserError(GLOBAL_FFN_REFUSAL)
    if ffn_scope not in FFN_SCOPES:
        raise UserError(f"--ffn-scope must be one of {', '.join(FFN_SCOPES)}, got {ffn_scope!r}")
    if heads_to_prune is not None and prune_heads > 0:
        raise UserError("pass either --prune-heads (a fraction ranked by importance) or --heads-to-prune (a list), not both")
    if prune_heads == 0 and prune_ffn == 0 and not heads_to_prune:
        raise UserError("nothing to prune: pass --prune-heads, --prune-ffn or --heads-to-prune")
    for name, value in (("--calibration-samples", calibration_samples), ("--seq-len", seq_len), ("--batch-size", batch_size)):
        if int(value) <= 0:
            raise UserError(f"{name} must be a positive integer, got {value}")
    needs_importance = prune_heads > 0 or prune_ffn > 0
    if needs_importance and calibration is None:
        raise UserError(
            "--prune-heads/--prune-ffn rank units by importance on calibration text: pass --calibration FILE "
            "(one passage per line, .gz ok), or name heads explicitly with --heads-to-prune"
        )
    out = Path(out)
    check_output_dir(out, force)
    model_dir = resolve_model(model)
    if out.absolute() == Path(model_dir).absolute():
        raise UserError(f"--out {out} is the input model directory; write the pruned model somewhere else")
    _, family = inspect_model_dir(model_dir)
    if not family.prunable:
        prunable = ", ".join(f.name for f in FAMILIES if f.prunable)
        raise UserError(f"structured pruning of {family.name} models is not supported yet; supported: {prunable}")
    from edgebert.compress.importance import METHODS, MLM

    if importance not in METHODS:
        raise UserError(f"--importance must be one of {', '.join(METHODS)}, got {importance!r}")
    if needs_importance and importance == MLM and not has_mlm_head(model_dir, family):
        raise UserError(f"--importance mlm needs a model with its own masked-LM head, and {model_dir} has none; use auto")
    texts: list[str] = []
    held_out: list[str] = []
    if needs_importance:
        lines = read_calibration(calibration, max_passages=calibration_samples + FIDELITY_PASSAGES)
        texts = lines[:calibration_samples]
        held_out = lines[calibration_samples:]

    from transformers import AutoConfig

    try:
        layout = HeadLayout.of(AutoConfig.from_pretrained(model_dir, trust_remote_code=False), family)
    except Exception as exc:
        raise UserError(f"cannot read the config of {model_dir} ({type(exc).__name__}); re-save the model") from exc
    explicit = parse_head_list(heads_to_prune, layout) if heads_to_prune is not None else None
    if explicit is not None and not explicit and prune_ffn == 0:
        raise UserError("nothing to prune: --heads-to-prune names no heads and --prune-ffn is 0")

    _log(quiet, f"loading {model_dir}")
    full, base, mlm_head = _load(model_dir, family)
    config = full.config
    source_manifest = read_manifest(model_dir)
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir, use_fast=True, trust_remote_code=False)
    except Exception as exc:
        raise UserError(f"cannot load the tokenizer in {model_dir} ({type(exc).__name__}); re-save it") from exc
    pooling = (
        source_manifest.get("model", {}).get("pooling") or pooling_from_sentence_transformers(model_dir) or family.default_pooling
    )
    ffn_before = int(getattr(config, family.size_fields[3]))
    params_before = {"encoder": count_parameters(base), "total": count_parameters(full)}
    fidelity_texts = held_out or texts[:FIDELITY_PASSAGES]
    from edgebert.parity import PARITY_SENTENCES

    fidelity_texts = list(PARITY_SENTENCES) + fidelity_texts
    reference = _embed(base, family, tokenizer, fidelity_texts, pooling, seq_len)

    scores = None
    if needs_importance:
        _log(quiet, f"measuring head and FFN-neuron importance on {len(texts)} calibration passages")
        t0 = time.perf_counter()
        scores = compute_importance(
            base, family, tokenizer, texts, mlm_head=mlm_head, method=importance, seq_len=seq_len, batch_size=batch_size, seed=seed
        )
        scores.details["seconds"] = round(time.perf_counter() - t0, 2)
    head_plan = explicit if explicit is not None else (select_heads(scores.heads, layout, prune_heads, head_scope) if prune_heads > 0 else {})
    ffn_keep = select_ffn(scores.ffn, prune_ffn) if prune_ffn > 0 else None

    apply_head_pruning(full, head_plan)
    ffn_after = apply_ffn_pruning(base, family, config, ffn_keep) if ffn_keep is not None else ffn_before
    layout_after = HeadLayout.of(config, family)
    params_after = {"encoder": count_parameters(base), "total": count_parameters(full)}
    pruned_embeddings = _embed(base, family, tokenizer, fidelity_texts, pooling, seq_len)
    cos = torch.nn.functional.cosine_similarity(reference, pruned_embeddings, dim=-1)
    _log(
        quiet,
        f"heads per layer {layout.counts()} -> {layout_after.counts()}, FFN {ffn_before} -> {ffn_after}, "
        f"encoder parameters {params_before['encoder']:,} -> {params_after['encoder']:,}; "
        f"cosine to the unpruned embeddings: mean {float(cos.mean()):.4f}, min {float(cos.min()):.4f}",
    )

    recipe = {
        "prune_heads": prune_heads,
        "heads_to_prune": {str(k): v for k, v in explicit.items()} if explicit is not None else None,
        "head_scope": head_scope if prune_heads > 0 else None,
        "prune_ffn": prune_ffn,
        "ffn_scope": ffn_scope if prune_ffn > 0 else None,
        "calibration": str(Path(calibration).expanduser().absolute()) if calibration is not None else None,
        "calibration_passages": len(texts),
        "importance": scores.method if scores is not None else None,
        "seq_len": seq_len,
        "seed": seed,
    }
    name = out.name
    model_info = dict(source_manifest.get("model") or {})
    model_info.update(
        {
            "family": family.name,
            "architecture": type(full).__name__,
            "pooling": pooling,
            "hidden_size": int(config.hidden_size),
            "layers": int(getattr(config, family.size_fields[0])),
            "heads": layout.original_heads,
            "heads_per_layer": layout_after.counts(),
            "ffn": ffn_after,
            "parameters": params_after["encoder"],
        }
    )
    manifest: dict[str, Any] = {
        "kind": "model",
        "name": name,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "edgebert_version": __version__,
        "model": model_info,
        "lineage": {
            "step": "compress",
            "source": str(Path(model_dir).absolute()),
            "source_name": source_manifest.get("name") or getattr(config, "_name_or_path", None) or Path(model_dir).name,
            "source_manifest": source_manifest or None,
            "recipe": recipe,
        },
        "pruning": {
            "pruned_heads": {str(k): sorted(v) for k, v in sorted((config.pruned_heads or {}).items())},
            "pruned_now": {str(k): v for k, v in head_plan.items()},
            "heads_per_layer": {"before": layout.counts(), "after": layout_after.counts()},
            "intermediate_size": {"before": ffn_before, "after": ffn_after},
            "importance": scores.as_dict() if scores is not None else None,
        },
        "parameters": {"before": params_before, "after": params_after},
        "metrics": {
            "cosine_to_source": {
                "mean": round(float(cos.mean()), 6),
                "min": round(float(cos.min()), 6),
                "texts": len(fidelity_texts),
                "held_out_calibration_passages": len(held_out),
            },
        },
    }

    with atomic_output_dir(out, force=force) as work:
        full.save_pretrained(work, safe_serialization=True)
        tokenizer.save_pretrained(str(work))
        for f in SENTENCE_TRANSFORMERS_FILES:
            if (Path(model_dir) / f).is_file():
                shutil.copy2(Path(model_dir) / f, work / f)
        for d in SENTENCE_TRANSFORMERS_DIRS:
            if (Path(model_dir) / d).is_dir():
                shutil.copytree(Path(model_dir) / d, work / d)
        write_manifest(work, manifest)
        _log(quiet, "reloading the saved model to check it")
        _check_reload(work, pruned_embeddings, fidelity_texts, seq_len)
        manifest["model_bytes"] = dir_size(work, [p.name for p in work.glob("*.safetensors")])
        manifest["wall_time_s"] = round(time.perf_counter() - started, 2)
        write_manifest(work, manifest)
    _log(quiet, f"pruned model written to {out} ({manifest['wall_time_s']} s)")
    return CompressReport(out_dir=out, manifest=manifest)


def _check_reload(work: Path, expected: Any, texts: list[str], seq_len: int) -> None:
    """The saved directory must load with stock classes (modelio) and give the in-memory model's embeddings."""
    from edgebert.modelio import load_model

    loaded = load_model(work)
    got = _embed(loaded.embedder.encoder, loaded.family, loaded.tokenizer, texts, loaded.pooling, seq_len)
    diff = float((got - expected).abs().max())
    if diff > RELOAD_TOLERANCE:
        raise VerificationError(f"the saved pruned model does not reload to the same outputs (max abs diff {diff:.2e})")
