"""`compress(...)`: prune a model directory's heads and FFN neurons into a new, smaller model directory.

Optionally the pruned model is then healed (a short distillation from the unpruned source, see heal.py) and/or
its encoder Linear weights are magnitude-sparsified (zeros that help the gzip size only, see magnitude.py), in
that order, so training never fills the zeros back in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgebert import validate
from edgebert.artifact import atomic_output_dir, check_not_input, check_output_dir
from edgebert.config import CompressConfig
from edgebert.pruned_heads import pruned_plan
from edgebert.errors import UserError, VerificationError
from edgebert.families import Family
from edgebert.modeldir import new_manifest, rewritten_outputs, read_manifest, resolve_pooling, save_model_dir, save_weights, weights_bytes, write_manifest
from edgebert.modelio import check_tokenizer_fits, check_within_positions, has_mlm_head, inspect_model_dir, load_for_rewrite, rewrite_task
from edgebert.options import checked, keyword_options
from edgebert.sources import resolve_model

if TYPE_CHECKING:
    from edgebert.config import HealConfig

FIDELITY_PASSAGES = 64
RELOAD_TOLERANCE = 1e-4


@dataclass
class CompressReport:
    """Where the pruned model went and what its manifest says."""

    out_dir: Path
    manifest: dict[str, Any]


@dataclass
class _Fidelity:
    """Sentence embeddings of the model being compressed on fixed texts, compared with the unpruned source's."""

    base: Any
    family: Family
    tokenizer: Any
    texts: list[str]
    pooling: str
    seq_len: int
    held_out: int
    reference: Any = None

    def embed(self) -> Any:
        return _embed(self.base, self.family, self.tokenizer, self.texts, self.pooling, self.seq_len)

    def cosine(self, embeddings: Any) -> Any:
        import torch

        return torch.nn.functional.cosine_similarity(self.reference, embeddings, dim=-1)

    def summary(self, embeddings: Any) -> dict[str, Any]:
        cos = self.cosine(embeddings)
        return {
            "mean": round(float(cos.mean()), 6),
            "min": round(float(cos.min()), 6),
            "texts": len(self.texts),
            "held_out_calibration_passages": self.held_out,
        }


def _log(quiet: bool, message: str) -> None:
    if not quiet:
        import sys

        sys.stderr.write(f"edgebert compress: {message}\n")


def _load(model_dir: Path, family: Family) -> tuple[Any, Any, Any]:
    """(full model to save, its base encoder, its masked-LM head or None); eager attention, eval mode."""
    model, with_head = load_for_rewrite(model_dir, family)
    return model, model.base_model, family.mlm_head(model) if with_head else None


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


def check_numbers(*, calibration_samples: Any, seq_len: Any, batch_size: Any, seed: Any, **_: Any) -> None:
    """Types and ranges of compress()'s integer arguments (the recipe loader checks its [compress] section with it);
    the fractions are checked by `check_fraction`, the healing recipe by `heal.check_heal`."""
    validate.integer("--calibration-samples", calibration_samples, 1)
    validate.integer("--seq-len", seq_len, 2, hint="tokens, [CLS] and [SEP] included")
    validate.integer("--batch-size", batch_size, 1)
    validate.seed("--seed", seed)


@dataclass
class _Request:
    """compress()'s arguments, checked: fractions normalised, `out` a Path, `inputs` the paths it must not overwrite."""

    model: str | Path | None
    out: Path  # as passed until _check_arguments makes it a Path
    prune_heads: float
    prune_ffn: float
    heads_to_prune: str | dict[Any, Any] | None
    head_scope: str
    ffn_scope: str
    calibration: str | Path | None
    calibration_samples: int
    importance: str
    seq_len: int
    batch_size: int
    seed: int
    magnitude_sparsity: float
    heal: HealConfig | None
    force: bool
    quiet: bool
    inputs: dict[str, Any] = field(default_factory=dict)

    @property
    def structured(self) -> bool:
        return self.prune_heads > 0 or self.prune_ffn > 0 or bool(self.heads_to_prune)

    @property
    def needs_importance(self) -> bool:
        return self.prune_heads > 0 or self.prune_ffn > 0


@dataclass
class _Source:
    """The resolved source model directory and what was read from it before loading the weights."""

    model_dir: Path
    family: Family
    model_config: Any
    layout: Any
    explicit: dict[int, list[int]] | None
    tokenizer: Any
    texts: list[str]
    held_out: list[str]
    heal_texts: list[str]
    task: str  # the head the model carries and its output keeps (modelio.rewrite_task)


@dataclass
class _Loaded:
    """The loaded model being pruned, its pre-pruning sizes and the unpruned reference embeddings."""

    full: Any
    base: Any
    mlm_head: Any
    source_manifest: dict[str, Any]
    pooling: str
    ffn_before: int
    params_before: dict[str, int]
    fidelity: _Fidelity


@dataclass
class _Pruned:
    """What structured pruning removed, the sizes after it and the pruned model's embeddings."""

    scores: Any
    head_plan: dict[int, list[int]]
    layout_after: Any
    ffn_after: int
    params_after: dict[str, int]
    embeddings: Any


@keyword_options(CompressConfig)
def compress(model: str | Path | None, out: str | Path, **options: Any) -> CompressReport:
    """Prune `model` (dir, hub id, or None for the default teacher) and write the smaller model to `out`.

    prune_heads / prune_ffn: the share of attention heads / FFN neurons to remove, ranked by importance on the
    `calibration` text file (required for them). heads_to_prune: an explicit {layer: [head ids]} instead of
    prune_heads (no calibration needed). head_scope 'global' ranks heads across layers (Michel et al.), 'layer'
    takes the fraction from each layer. FFN pruning is per layer only (see prune.py). Bad input raises UserError
    before anything is written; `out` appears only when complete.

    heal: after structured pruning, distil the unpruned model into the pruned one (see heal.py); the manifest
    records the recipe and the cosine to the source before and after, and the unhealed weights are kept if healing
    made that cosine worse. magnitude_sparsity: zero that share of every encoder Linear weight (smallest |w|),
    last; it helps the gzip size only (measured before/after in the manifest), not the raw size or the latency.
    """
    started = time.perf_counter()
    req = _check_arguments(_Request(model=model, out=out, **checked(CompressConfig, options, "compress")))
    src = _resolve_source(req)
    loaded = _load_source(req, src)
    pruned = _rank_and_prune(req, src, loaded)
    manifest = _build_manifest(req, src, loaded, pruned)
    _write_output(req, src, loaded, pruned, manifest, started)
    _log(req.quiet, f"pruned model written to {req.out} ({manifest['metrics']['wall_time_s']} s)")
    return CompressReport(out_dir=req.out, manifest=manifest)


def _check_arguments(req: _Request) -> _Request:
    """Check every argument that needs no model; normalise the fractions and `out`, refuse an unusable `out`."""
    from edgebert.compress.prune import FFN_SCOPES, GLOBAL_FFN_REFUSAL, HEAD_SCOPES, check_fraction

    req.prune_heads = check_fraction("--prune-heads", req.prune_heads)
    req.prune_ffn = check_fraction("--prune-ffn", req.prune_ffn)
    req.magnitude_sparsity = check_fraction("--magnitude-sparsity", req.magnitude_sparsity, what="weights to zero")
    if req.head_scope not in HEAD_SCOPES:
        raise UserError(f"--head-scope must be one of {', '.join(HEAD_SCOPES)}, got {req.head_scope!r}")
    if req.ffn_scope == "global":
        raise UserError(GLOBAL_FFN_REFUSAL)
    if req.ffn_scope not in FFN_SCOPES:
        raise UserError(f"--ffn-scope must be one of {', '.join(FFN_SCOPES)}, got {req.ffn_scope!r}")
    if req.heads_to_prune is not None and req.prune_heads > 0:
        raise UserError("pass either --prune-heads (a fraction ranked by importance) or --heads-to-prune (a list), not both")
    if not req.structured and req.magnitude_sparsity == 0:
        raise UserError("nothing to prune: pass --prune-heads, --prune-ffn, --heads-to-prune or --magnitude-sparsity")
    if req.heal is not None:
        from edgebert.compress.heal import check_heal

        check_heal(req.heal)
        if not req.structured:
            raise UserError(
                "--heal-steps repairs structured pruning (--prune-heads, --prune-ffn, --heads-to-prune) and there is none; "
                "healing after --magnitude-sparsity alone would train its zeros away"
            )
    check_numbers(calibration_samples=req.calibration_samples, seq_len=req.seq_len, batch_size=req.batch_size, seed=req.seed)
    validate.path_like("--out", req.out, optional=False)
    validate.path_like("--calibration", req.calibration)
    if req.needs_importance and req.calibration is None:
        raise UserError(
            "--prune-heads/--prune-ffn rank units by importance on calibration text: pass --calibration FILE "
            "(one passage per line, .gz ok), or name heads explicitly with --heads-to-prune"
        )
    req.out = Path(req.out)
    req.inputs = {"--model": req.model, "--calibration": req.calibration, "--heal-corpus": list(req.heal.corpus) if req.heal is not None else None}
    check_output_dir(req.out, req.force, req.inputs)
    return req


def _resolve_source(req: _Request) -> _Source:
    """Resolve the model directory, check it can be pruned as asked, read the calibration and healing texts."""
    model_dir = resolve_model(req.model)
    req.inputs["--model"] = model_dir
    check_not_input(req.out, req.inputs)
    _, family = inspect_model_dir(model_dir)
    family.require("compress")
    from edgebert.compress.importance import METHODS, MLM, read_calibration

    if req.importance not in METHODS:
        raise UserError(f"--importance must be one of {', '.join(METHODS)}, got {req.importance!r}")
    if req.needs_importance and req.importance == MLM and not has_mlm_head(model_dir, family):
        raise UserError(f"--importance mlm needs a model with its own masked-LM head, and {model_dir} has none; use auto")
    texts: list[str] = []
    held_out: list[str] = []
    if req.needs_importance:
        lines = read_calibration(req.calibration, max_passages=req.calibration_samples + FIDELITY_PASSAGES)
        texts = lines[: req.calibration_samples]
        held_out = lines[req.calibration_samples :]
    heal_texts: list[str] = []
    if req.heal is not None:
        from edgebert.data import load_corpus

        heal_texts = load_corpus([str(c) for c in req.heal.corpus])
    model_config, layout, explicit, tokenizer = _read_config_and_tokenizer(req, model_dir, family)
    return _Source(model_dir, family, model_config, layout, explicit, tokenizer, texts, held_out, heal_texts, rewrite_task(model_dir))


def _read_config_and_tokenizer(req: _Request, model_dir: Path, family: Family) -> tuple[Any, Any, dict[int, list[int]] | None, Any]:
    """(config, head layout, explicit head plan or None, tokenizer) of `model_dir`, checked against the arguments."""
    from edgebert.modelio import load_config, load_tokenizer

    from edgebert.compress.prune import HeadLayout, parse_head_list

    try:
        model_config = load_config(model_dir)
        layout = HeadLayout.of(model_config, family)
    except Exception as exc:
        raise UserError(f"cannot read the config of {model_dir} ({type(exc).__name__}); re-save the model") from exc
    for flag, value in (("--seq-len", req.seq_len), ("--heal-seq-len", req.heal.seq_len if req.heal is not None else None)):
        if value is not None:
            check_within_positions(flag, value, model_config)
    explicit = parse_head_list(req.heads_to_prune, layout) if req.heads_to_prune is not None else None
    if explicit is not None and not explicit and req.prune_ffn == 0 and req.magnitude_sparsity == 0:
        raise UserError("nothing to prune: --heads-to-prune names no heads and --prune-ffn is 0")
    try:
        tokenizer = load_tokenizer(model_dir)
    except Exception as exc:
        raise UserError(f"cannot load the tokenizer in {model_dir} ({type(exc).__name__}); re-save it") from exc
    check_tokenizer_fits(tokenizer, model_config, model_dir)
    return model_config, layout, explicit, tokenizer


def _load_source(req: _Request, src: _Source) -> _Loaded:
    """Load the model, note its sizes and pooling, and embed the fidelity texts with it unpruned."""
    from edgebert.compress.prune import count_parameters
    from edgebert.parity import PARITY_SENTENCES

    _log(req.quiet, f"loading {src.model_dir}")
    full, base, mlm_head = _load(src.model_dir, src.family)
    source_manifest = read_manifest(src.model_dir)
    pooling = resolve_pooling(src.model_dir, src.family.default_pooling, source_manifest).mode
    ffn_before = int(getattr(full.config, src.family.size_fields[3]))
    params_before = {"encoder": count_parameters(base), "total": count_parameters(full)}
    fidelity_texts = list(PARITY_SENTENCES) + (src.held_out or src.texts[:FIDELITY_PASSAGES])
    fidelity = _Fidelity(base, src.family, src.tokenizer, fidelity_texts, pooling, req.seq_len, len(src.held_out))
    fidelity.reference = fidelity.embed()
    return _Loaded(full, base, mlm_head, source_manifest, pooling, ffn_before, params_before, fidelity)


def _rank_and_prune(req: _Request, src: _Source, loaded: _Loaded) -> _Pruned:
    """Rank heads and FFN neurons on the calibration texts if asked, remove the chosen ones, measure the damage."""
    from edgebert.compress.importance import compute_importance
    from edgebert.compress.prune import HeadLayout, apply_ffn_pruning, apply_head_pruning, count_parameters, select_ffn, select_heads

    full, base, config = loaded.full, loaded.base, loaded.full.config
    scores = None
    if req.needs_importance:
        _log(req.quiet, f"measuring head and FFN-neuron importance on {len(src.texts)} calibration passages")
        t0 = time.perf_counter()
        scores = compute_importance(
            base, src.family, src.tokenizer, src.texts, mlm_head=loaded.mlm_head, method=req.importance,
            seq_len=req.seq_len, batch_size=req.batch_size, seed=req.seed, quiet=req.quiet,
        )
        scores.details["seconds"] = round(time.perf_counter() - t0, 2)
    if src.explicit is not None:
        head_plan = src.explicit
    else:
        head_plan = select_heads(scores.heads, src.layout, req.prune_heads, req.head_scope) if req.prune_heads > 0 else {}
    ffn_keep = select_ffn(scores.ffn, req.prune_ffn) if req.prune_ffn > 0 else None

    apply_head_pruning(full, head_plan)
    ffn_after = apply_ffn_pruning(base, src.family, config, ffn_keep) if ffn_keep is not None else loaded.ffn_before
    layout_after = HeadLayout.of(config, src.family)
    params_after = {"encoder": count_parameters(base), "total": count_parameters(full)}
    embeddings = loaded.fidelity.embed()
    cos = loaded.fidelity.cosine(embeddings)
    _log(
        req.quiet,
        f"heads per layer {src.layout.counts()} -> {layout_after.counts()}, FFN {loaded.ffn_before} -> {ffn_after}, "
        f"encoder parameters {loaded.params_before['encoder']:,} -> {params_after['encoder']:,}; "
        f"cosine to the unpruned embeddings: mean {float(cos.mean()):.4f}, min {float(cos.min()):.4f}",
    )
    return _Pruned(scores, head_plan, layout_after, ffn_after, params_after, embeddings)


def _recipe(req: _Request, src: _Source, pruned: _Pruned) -> dict[str, Any]:
    """The manifest's recipe: the arguments that shaped the pruned model."""
    recipe = {
        "prune_heads": req.prune_heads,
        "heads_to_prune": {str(k): v for k, v in src.explicit.items()} if src.explicit is not None else None,
        "head_scope": req.head_scope if req.prune_heads > 0 else None,
        "prune_ffn": req.prune_ffn,
        "ffn_scope": req.ffn_scope if req.prune_ffn > 0 else None,
        "calibration": str(Path(req.calibration).expanduser().absolute()) if req.calibration is not None else None,
        "calibration_passages": len(src.texts),
        "importance": pruned.scores.method if pruned.scores is not None else None,
        "seq_len": req.seq_len,
        "seed": req.seed,
    }
    if req.heal is not None:
        from edgebert.compress.heal import heal_record

        recipe["heal"] = heal_record(req.heal, req.seq_len)
    if req.magnitude_sparsity:
        recipe["magnitude_sparsity"] = req.magnitude_sparsity
    return recipe


def _build_manifest(req: _Request, src: _Source, loaded: _Loaded, pruned: _Pruned) -> dict[str, Any]:
    """The pruned model's manifest as it stands after structured pruning (healing and sparsity add to it later)."""
    config, source_manifest = loaded.full.config, loaded.source_manifest
    model_info = dict(source_manifest.get("model") or {})
    model_info.update(
        {
            "family": src.family.name,
            "architecture": type(loaded.full).__name__,
            "pooling": loaded.pooling,
            "hidden_size": int(config.hidden_size),
            "layers": int(getattr(config, src.family.size_fields[0])),
            "heads": src.layout.original_heads,
            "heads_per_layer": pruned.layout_after.counts(),
            "ffn": pruned.ffn_after,
            "parameters": pruned.params_after["encoder"],
        }
    )
    if src.family.shares_layers(config):  # heads_per_layer has one entry per layer module, not per pass
        model_info["shared_layers"] = {"layer_modules": src.family.distinct_layers(config), "passes": model_info["layers"]}
    manifest = new_manifest(
        "model", "compress", req.out.name, Path(src.model_dir).absolute(), source_manifest,
        parent_name=source_manifest.get("name") or getattr(config, "_name_or_path", None) or Path(src.model_dir).name,
        recipe=_recipe(req, src, pruned), model=model_info, outputs=rewritten_outputs(src.task, config), task=src.task,
        metrics={"cosine_to_source": loaded.fidelity.summary(pruned.embeddings)},
    )  # fmt: skip
    return {
        **manifest,
        "pruning": {
            "pruned_heads": {str(k): sorted(v) for k, v in sorted(pruned_plan(config).items())},
            "pruned_now": {str(k): v for k, v in pruned.head_plan.items()},
            "heads_per_layer": {"before": src.layout.counts(), "after": pruned.layout_after.counts()},
            "intermediate_size": {"before": loaded.ffn_before, "after": pruned.ffn_after},
            "importance": pruned.scores.as_dict() if pruned.scores is not None else None,
        },
        "parameters": {"before": loaded.params_before, "after": pruned.params_after},
    }


def _write_output(req: _Request, src: _Source, loaded: _Loaded, pruned: _Pruned, manifest: dict[str, Any], started: float) -> None:
    """Save, heal and sparsify into a work dir, write the manifest, check the reload; `out` appears only when complete."""
    full, fidelity, model_dir = loaded.full, loaded.fidelity, Path(src.model_dir)
    with atomic_output_dir(req.out, force=req.force, inputs=req.inputs) as work:
        _save_model_dir(full, src.tokenizer, model_dir, work)
        final_embeddings = pruned.embeddings
        if req.heal is not None:
            final_embeddings, manifest["healing"] = _heal(
                full, fidelity, final_embeddings, work, model_dir, req.heal, src.heal_texts, req.seed, req.quiet
            )
        if req.magnitude_sparsity:
            final_embeddings, manifest["magnitude"] = _magnitude(full, fidelity, final_embeddings, work, req.magnitude_sparsity, req.quiet)
        if final_embeddings is not pruned.embeddings:
            manifest["metrics"]["cosine_to_source"] = fidelity.summary(final_embeddings)
        write_manifest(work, manifest)
        _log(req.quiet, "reloading the saved model to check it")
        _check_reload(work, full, final_embeddings, fidelity.texts, req.seq_len)
        manifest["metrics"]["model_bytes"] = weights_bytes(work)
        manifest["metrics"]["wall_time_s"] = round(time.perf_counter() - started, 2)
        write_manifest(work, manifest)


def _save_model_dir(full: Any, tokenizer: Any, model_dir: Path, work: Path) -> None:
    """Weights, tokenizer and the source's sentence-transformers files (pooling, normalisation) into `work`."""
    save_model_dir(work, full, tokenizer, model_dir)


def _heal(
    full: Any, fidelity: _Fidelity, pruned: Any, work: Path, model_dir: Path, heal: HealConfig, texts: list[str], seed: int, quiet: bool
) -> tuple[Any, dict[str, Any]]:
    """Heal the pruned model saved in `work` from `model_dir`; keep it only if its cosine to the source went up."""
    from edgebert.compress.heal import heal_model, heal_record

    seq_len = heal.seq_len or fidelity.seq_len
    before = fidelity.summary(pruned)
    pruned_state = {k: v.detach().clone() for k, v in full.state_dict().items()}
    _log(quiet, f"healing: {heal.steps} distillation steps from {model_dir.name} into the pruned model ({heal.losses}, seq {seq_len})")
    info = heal_model(full, work, model_dir, heal, texts, set(fidelity.texts), seq_len, seed, quiet)
    healed = fidelity.embed()
    after = fidelity.summary(healed)
    if after["mean"] > before["mean"]:
        kept, embeddings = "healed", healed
        save_weights(full, work)
    else:  # a heal that moved the model away from its source is not kept
        kept, embeddings = "pruned", pruned
        full.load_state_dict(pruned_state)
    _log(quiet, f"healing: cosine to the unpruned embeddings {before['mean']:.4f} -> {after['mean']:.4f} (min {before['min']:.4f} -> {after['min']:.4f}); kept the {kept} weights")
    record = {"recipe": heal_record(heal, fidelity.seq_len), "cosine_to_source": {"before": before, "after": after}, "kept": kept, **info}
    return embeddings, record


def _magnitude(full: Any, fidelity: _Fidelity, current: Any, work: Path, fraction: float, quiet: bool) -> tuple[Any, dict[str, Any]]:
    """Zero the smallest-|w| `fraction` of every encoder Linear weight; re-save and measure the gzip size it buys."""
    from edgebert.compress.magnitude import GZIP_LEVEL, NOTE, apply_magnitude_sparsity, gzip_size

    weights_file = work / "model.safetensors"
    raw_before, gz_before = weights_file.stat().st_size, gzip_size(weights_file)
    record = apply_magnitude_sparsity(fidelity.base, fidelity.family, fraction)
    save_weights(full, work)
    raw_after, gz_after = weights_file.stat().st_size, gzip_size(weights_file)
    embeddings = fidelity.embed()
    record.update(
        {
            "model_safetensors_bytes": {"before": raw_before, "after": raw_after},
            "gzip_bytes": {"before": gz_before, "after": gz_after, "level": GZIP_LEVEL},
            "cosine_to_source": {"before": fidelity.summary(current), "after": fidelity.summary(embeddings)},
            "note": NOTE,
        }
    )
    _log(
        quiet,
        f"magnitude sparsity {fraction}: {record['zeroed']:,} of {record['weights']:,} encoder Linear weights zeroed; "
        f"model.safetensors gzip {gz_before:,} -> {gz_after:,} bytes, raw {raw_before:,} -> {raw_after:,} (compressed size only)",
    )
    return embeddings, record


def _check_reload(work: Path, full: Any, expected: Any, texts: list[str], seq_len: int) -> None:
    """The saved directory must load with stock classes (modelio) and give the in-memory model's embeddings, and
    reload every tensor of the model it was saved from, its head included."""
    from edgebert.modelio import load_for_rewrite, load_model

    loaded = load_model(work)
    got = _embed(loaded.embedder.encoder, loaded.family, loaded.tokenizer, texts, loaded.pooling, seq_len)
    diff = float((got - expected).abs().max())
    if diff > RELOAD_TOLERANCE:
        raise VerificationError(f"the saved pruned model does not reload to the same outputs (max abs diff {diff:.2e})")
    again, _ = load_for_rewrite(work, loaded.family)
    saved, kept = full.state_dict(), again.state_dict()
    lost = sorted(set(saved) - set(kept)) or [k for k in saved if not saved[k].equal(kept[k])]
    if lost:
        raise VerificationError(f"the saved pruned model does not reload {lost[0]} as it was pruned ({type(again).__name__})")
