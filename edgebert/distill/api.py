"""`edgebert.distill.distill(...)`: teacher dir + corpus → student model dir (the CLI calls this)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgebert import __version__
from edgebert import validate
from edgebert.artifact import MANIFEST, check_output_dir, read_manifest, write_manifest
from edgebert.errors import UserError, kept_on_interrupt

CHECKPOINTS = "checkpoints"
RECIPE_FILE = "recipe.json"
CE_POSITIONS = ("masked", "all")
COS_LAYERS = ("last", "mapped")
HEAD_MLM_PROBABILITY = 0.15
MIN_SEQ_LEN = 8  # tokens per training sequence


@dataclass
class DistillReport:
    """Where the student went and what its manifest says."""

    out_dir: Path
    manifest: dict[str, Any]

    @property
    def metrics(self) -> dict[str, Any]:
        return self.manifest["metrics"]


class _Log:
    def __init__(self, quiet: bool) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, quiet=quiet, highlight=False)

    def __call__(self, message: str) -> None:
        self.console.print(f"[distill] {message}", markup=False, soft_wrap=True)


def check_numbers(
    *,
    steps: Any = 1000, batch_size: Any = 32, grad_accum: Any = 1, seq_len: Any = 128, lr: Any = 1e-4,
    warmup_ratio: Any = 0.05, weight_decay: Any = 0.0, max_grad_norm: Any = 5.0, temperature: Any = 2.0,
    alpha_mlm: Any = 2.0, alpha_ce: Any = 5.0, alpha_cos: Any = 1.0, alpha_pooled: Any = 0.0, mlm_probability: Any = 0.15,
    student_layers: Any = None, student_hidden: Any = None, student_heads: Any = None, student_ffn: Any = None,
    embedding_dim: Any = None, student_head_steps: Any = None, eval_steps: Any = None, save_steps: Any = None,
    logging_steps: Any = None, head_steps: Any = 200, head_batch_size: Any = 32, head_lr: Any = 1e-3,
    max_passages: Any = None, seed: Any = 42, threads: Any = None, **_: Any,
) -> None:
    """Types and ranges of distill()'s numeric arguments (the recipe loader checks its [distill] section with it)."""
    v = validate
    for name, value in (("--steps", steps), ("--batch-size", batch_size), ("--grad-accum", grad_accum)):
        v.integer(name, value, 1)
    v.integer("--seq-len", seq_len, MIN_SEQ_LEN, hint="tokens per sequence")
    v.number("--lr", lr, 0.0, low_open=True)
    v.number("--warmup-ratio", warmup_ratio, 0.0, 1.0, high_open=True)
    v.number("weight_decay", weight_decay, 0.0)
    v.number("max_grad_norm", max_grad_norm, 0.0, low_open=True)
    v.number("--temperature", temperature, 0.0, low_open=True)
    alphas = {"--alpha-mlm": alpha_mlm, "--alpha-ce": alpha_ce, "--alpha-cos": alpha_cos, "--alpha-pooled": alpha_pooled}
    for name, value in alphas.items():
        v.number(name, value, 0.0)
    if not any(alphas.values()):
        raise UserError("all loss weights are zero (--alpha-mlm, --alpha-ce, --alpha-cos, --alpha-pooled); set at least one")
    v.number("--mlm-probability", mlm_probability, 0.0, 1.0, high_open=True)
    shape = {"--student-layers": student_layers, "--student-hidden": student_hidden, "--student-heads": student_heads,
             "--student-ffn": student_ffn, "--embedding-dim": embedding_dim}  # fmt: skip
    for name, value in shape.items():
        v.optional_integer(name, value, 1)
    for name, value in (("--eval-steps", eval_steps), ("--save-steps", save_steps), ("--logging-steps", logging_steps)):
        v.optional_integer(name, value, 1)
    v.optional_integer("--student-head-steps", student_head_steps, 0)
    v.integer("--head-steps", head_steps, 0)
    v.integer("head_batch_size", head_batch_size, 1)
    v.number("head_lr", head_lr, 0.0, low_open=True)
    v.optional_integer("--max-passages", max_passages, 1)
    v.seed("--seed", seed)
    v.optional_integer("--threads", threads, 1)


def _check_out(out: Path, force: bool, resume: bool) -> str | None:
    """Decide what to do with --out: None (fresh), 'resume' or 'replace'; UserError when it is in the way."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a directory; choose another path")
    if not out.exists() or not any(out.iterdir()):
        return None
    if resume:
        if (out / MANIFEST).exists() and not (out / CHECKPOINTS).is_dir():
            raise UserError(f"--out {out} holds a finished student and no checkpoints; nothing to resume (use --force to redo)")
        return "resume"
    if force:
        return "replace"
    raise UserError(f"--out {out} exists and is not empty; pass --resume to continue it, --force to replace it, or choose another path")


def distill(
    teacher: str | Path | None,
    corpus: str | Path | list[str | Path],
    out: str | Path,
    *,
    student_layers: int | None = None,
    student_hidden: int | None = None,
    student_heads: int | None = None,
    student_ffn: int | None = None,
    layer_map: list[int] | str | None = None,
    embedding_dim: int | None = None,
    student_head_steps: int | None = None,
    student_init: str | Path | None = None,
    freeze_embeddings: bool = False,
    steps: int = 1000,
    batch_size: int = 32,
    grad_accum: int = 1,
    seq_len: int = 128,
    packing: str = "truncate",
    group_by_length: bool = False,
    lr: float = 1e-4,
    warmup_ratio: float = 0.05,
    weight_decay: float = 0.0,
    max_grad_norm: float = 5.0,
    alpha_mlm: float = 2.0,
    alpha_ce: float = 5.0,
    alpha_cos: float = 1.0,
    alpha_pooled: float = 0.0,
    temperature: float = 2.0,
    ce_positions: str = "masked",
    cos_layers: str = "last",
    mlm_probability: float = 0.15,
    eval_sts: str | Path | None = None,
    eval_steps: int | None = None,
    save_steps: int | None = None,
    logging_steps: int | None = None,
    resume: bool = False,
    force: bool = False,
    keep_checkpoints: bool = False,
    head_steps: int = 200,
    head_batch_size: int = 32,
    head_lr: float = 1e-3,
    cache_dir: str | Path | None = None,
    max_passages: int | None = None,
    seed: int = 42,
    precision: str = "auto",
    threads: int | None = None,
    quiet: bool = False,
    callbacks: list[Any] | None = None,
) -> DistillReport:
    """Distil `teacher` into a smaller student trained on `corpus`; write a standard HF model dir to `out`.

    `embedding_dim` gives the student ALBERT-style factorised embeddings (vocab × E, then E × hidden; an
    AlbertModel without layer sharing, see edgebert/distill/factorize.py); its MLM head, which cannot be copied
    from the teacher's, is fitted with the body frozen for `student_head_steps` (default: `head_steps`) first.
    With `eval_sts`, the student at initialisation competes with the checkpoints for "best" and is kept if none
    beats it.

    `student_init` starts from an existing model directory instead of building a student (e.g. a pruned copy of
    the teacher, to heal it): its shape is kept as it is (per-layer head counts from config.pruned_heads, its FFN
    width); it must have the teacher's tokenizer and hidden size, and cannot be combined with the shape arguments.
    Its MLM head is its own when it has one; otherwise the teacher's (fitted) head is copied in when the MLM or
    soft-target loss needs one, and when neither does the student is saved as an encoder without a head.
    `freeze_embeddings` keeps the embedding block as it starts (only the layers and the head train).
    `mlm_probability` 0 distils on unmasked text, for recipes with hidden-state losses only (alpha_mlm = alpha_ce = 0).
    `group_by_length` batches passages of similar length (the Trainer's length-grouped sampler) so that a batch is
    padded to its own longest passage rather than to the longest of a random mix: same losses, fewer padded tokens.

    Bad input raises UserError before anything is written. Checkpoints live in `out/checkpoints` while
    training (so `resume=True` continues an interrupted run); on success the student, its tokenizer, the
    sentence-transformers pooling config and `edgebert.json` are written to `out`.
    """
    from edgebert.distill.losses import LossWeights
    from edgebert.distill.student import StudentSpec, parse_layer_map, resolve_shape
    from edgebert.modelio import check_tokenizer_fits, check_within_positions, inspect_model_dir
    from edgebert.sources import resolve_model

    started = time.perf_counter()
    log = _Log(quiet)
    check_numbers(
        steps=steps, batch_size=batch_size, grad_accum=grad_accum, seq_len=seq_len, lr=lr, warmup_ratio=warmup_ratio,
        weight_decay=weight_decay, max_grad_norm=max_grad_norm, temperature=temperature, alpha_mlm=alpha_mlm,
        alpha_ce=alpha_ce, alpha_cos=alpha_cos, alpha_pooled=alpha_pooled, mlm_probability=mlm_probability,
        student_layers=student_layers, student_hidden=student_hidden, student_heads=student_heads, student_ffn=student_ffn,
        embedding_dim=embedding_dim, student_head_steps=student_head_steps, eval_steps=eval_steps, save_steps=save_steps,
        logging_steps=logging_steps, head_steps=head_steps, head_batch_size=head_batch_size, head_lr=head_lr,
        max_passages=max_passages, seed=seed, threads=threads,
    )  # fmt: skip
    validate.path_like("--out", out, optional=False)
    validate.path_like("--eval-sts", eval_sts)
    validate.path_like("--cache-dir", cache_dir)
    if ce_positions not in CE_POSITIONS:
        raise UserError(f"--ce-positions {ce_positions} is unknown; choose one of: {', '.join(CE_POSITIONS)}")
    if cos_layers not in COS_LAYERS:
        raise UserError(f"--cos-layers {cos_layers} is unknown; choose one of: {', '.join(COS_LAYERS)}")
    if mlm_probability == 0 and (alpha_mlm or alpha_ce):
        raise UserError("--mlm-probability 0 (unmasked text) leaves nothing for --alpha-mlm/--alpha-ce to score; set them to 0")
    out = Path(out).expanduser().absolute()
    out_action = _check_out(out, force, resume)
    _check_precision(precision)
    _check_intervals(steps, save_steps, eval_steps, eval_sts is not None)

    teacher_dir = resolve_model(teacher)
    config_dict, family = inspect_model_dir(teacher_dir)
    from transformers import AutoConfig, AutoTokenizer

    teacher_config = AutoConfig.from_pretrained(teacher_dir, trust_remote_code=False)
    if isinstance(layer_map, str):
        layer_map = parse_layer_map(layer_map)
    spec = StudentSpec(student_layers, student_hidden, student_heads, student_ffn, layer_map, embedding_dim)
    init_dir, init_family = None, None
    if student_init is not None:
        init_dir, init_family, shape = _student_init_shape(student_init, teacher_config, family, spec, student_head_steps, seq_len)
    else:
        shape = resolve_shape(teacher_config, spec, family)
    check_within_positions("--seq-len", seq_len, teacher_config, "the teacher's")
    corpus_list = [corpus] if isinstance(corpus, (str, Path)) else list(corpus)
    inputs = {"--teacher": teacher_dir, "--student-init": init_dir, "--corpus": corpus_list, "--eval-sts": eval_sts}
    check_output_dir(out, True, inputs)  # overlap and writability; emptiness is _check_out's (--resume)
    if init_dir is not None:
        _check_init_head(init_dir, init_family, family, bool(alpha_mlm or alpha_ce))

    from edgebert.data import corpus_fingerprint, load_corpus, load_sts_csv, mlm_collator, padding_collator, tokenize_corpus

    sts = load_sts_csv(eval_sts) if eval_sts else None
    texts = load_corpus(corpus_list)
    if max_passages:
        texts = texts[:max_passages]
    try:
        tokenizer = AutoTokenizer.from_pretrained(teacher_dir, use_fast=True, trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot load the teacher's tokenizer in {teacher_dir} ({type(exc).__name__}); re-save it") from exc
    check_tokenizer_fits(tokenizer, teacher_config, teacher_dir)
    if tokenizer.mask_token_id is None:
        raise UserError(f"the teacher's tokenizer in {teacher_dir} has no mask token; masked-LM distillation needs one")
    if init_dir is not None:
        _check_init_tokenizer(init_dir, tokenizer)
    dataset = tokenize_corpus(texts, tokenizer, seq_len, packing)
    corpus_fp = corpus_fingerprint(corpus_list)
    weights = LossWeights(alpha_mlm, alpha_ce, alpha_cos, alpha_pooled, temperature)
    recipe = {
        "student": shape.as_dict(),
        "losses": weights.as_dict(),
        "ce_positions": ce_positions,
        "cos_layers": cos_layers,
        "mlm_probability": mlm_probability,
        "steps": steps,
        "batch_size": batch_size,
        "grad_accum": grad_accum,
        "seq_len": seq_len,
        "packing": packing,
        "group_by_length": group_by_length,
        "lr": lr,
        "warmup_ratio": warmup_ratio,
        "weight_decay": weight_decay,
        "max_grad_norm": max_grad_norm,
        "seed": seed,
        "teacher_head": {"steps": head_steps, "batch_size": head_batch_size, "lr": head_lr},
        **({"student_head_steps": _student_head_steps(student_head_steps, head_steps)} if embedding_dim else {}),
        "max_passages": max_passages,
        **({"student_init": {"path": str(init_dir), "fingerprint": _fingerprint(init_dir)}} if init_dir else {}),
        **({"freeze_embeddings": True} if freeze_embeddings else {}),
    }
    corpus_info = {
        "sources": [str(c) for c in corpus_list],
        "fingerprint": corpus_fp,
        "passages": len(texts),
        "sequences": len(dataset),
        "tokens": dataset.num_tokens,
    }

    checkpoint_dir = out / CHECKPOINTS
    resume_from = None
    if out_action == "resume":
        saved = checkpoint_dir / RECIPE_FILE
        if saved.exists():
            previous = json.loads(saved.read_text())
            if previous.get("recipe") != recipe or previous.get("corpus") != corpus_fp:
                raise UserError(f"--resume: the arguments differ from the run being resumed in {out}; pass the same ones (see {saved})")
        resume_from = last_complete_checkpoint(checkpoint_dir, log) if checkpoint_dir.is_dir() else None
    # ---- every check passed: from here on we write
    if out_action == "replace":
        shutil.rmtree(out)
    with kept_on_interrupt(f"interrupted; checkpoints kept in {checkpoint_dir}: rerun with --resume to continue"):
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        (checkpoint_dir / RECIPE_FILE).write_text(json.dumps({"recipe": recipe, "corpus": corpus_fp}, indent=2) + "\n")

        import torch

        if threads:
            torch.set_num_threads(threads)
        from edgebert.distill.student import build_student, freeze_embedding_parameters, heads_per_layer, make_projections, student_family
        from edgebert.distill.teacher import HeadFitConfig, load_teacher_mlm, prepare_teacher, weights_fingerprint
        from edgebert.distill.trainer import DistillationModel, DistillationTrainer
        from edgebert.evaluate import sts_spearman
        from edgebert.pooling import pooling_from_sentence_transformers

        collator = mlm_collator(tokenizer, mlm_probability, seed=seed)
        # MLM heads are fitted on masked text even when the distillation itself reads unmasked text (probability 0)
        head_collator = collator if mlm_probability else mlm_collator(tokenizer, HEAD_MLM_PROBABILITY, seed=seed)
        head_cfg = HeadFitConfig(steps=head_steps, batch_size=head_batch_size, lr=head_lr, seed=seed)
        log(f"teacher {teacher_dir} ({family.name}, {shape.teacher_layers} layers × {shape.teacher_hidden}); corpus: {len(texts)} passages → {len(dataset)} sequences")
        head_used = bool(alpha_mlm or alpha_ce)
        if head_used:
            teacher_mlm, head_info = prepare_teacher(
                teacher_dir, family, dataset, head_collator, corpus_fp, seq_len, packing, head_cfg, cache_dir=cache_dir, log=log
            )
            log(f"teacher MLM head ({head_info['source']}): held-out masked-token accuracy {head_info['mlm_accuracy']:.3f}")
            teacher_own_head = head_info["source"] == "own"
        else:  # hidden-state losses only: no head is fitted, and a built student keeps one only if the teacher has its own
            teacher_mlm, teacher_own_head = load_teacher_mlm(teacher_dir, family)
            head_info = {"source": "unused", "mlm_accuracy": None}
            log("teacher MLM head: not needed (--alpha-mlm and --alpha-ce are 0)")
        pooling = read_manifest(teacher_dir).get("model", {}).get("pooling") or pooling_from_sentence_transformers(teacher_dir) or family.default_pooling

        save_head = head_used or teacher_own_head
        if init_dir is not None:
            student, init_info = _student_from_dir(init_dir, init_family, teacher_mlm, family, bool(alpha_mlm or alpha_ce))
            s_family, save_head = init_family, init_info["mlm_head"] is not None
            log(
                f"student: {init_dir} ({shape.layers} layers × {shape.hidden}, heads per layer {init_info['heads_per_layer']}, "
                f"ffn {shape.ffn}; MLM head: {init_info['mlm_head'] or 'none, saved without one'}), layer map {shape.layer_map}"
            )
        else:
            word_weights = None
            if spec.embedding_dim:
                from edgebert.distill.factorize import corpus_word_weights

                word_weights = corpus_word_weights(dataset.sequences, int(teacher_config.vocab_size))
            student, shape, init_info = build_student(teacher_mlm, spec, family, seed=seed, word_weights=word_weights)
            s_family = student_family(shape, family)
            factorised = f", factorised embeddings {shape.embedding_dim} ({s_family.name})" if shape.embedding_dim else ""
            log(f"student: {shape.kind} {shape.layers} layers × {shape.hidden} (heads {shape.heads}, ffn {shape.ffn}), layer map {shape.layer_map}{factorised}")
        s_head_steps = _student_head_steps(student_head_steps, head_steps)
        if init_dir is None and shape.embedding_dim and s_head_steps and (alpha_mlm or alpha_ce):  # also on --resume: part of the initial student
            init_info["head"] = _fit_student_head(student, s_family, dataset, head_collator, head_cfg, s_head_steps, log)
        if freeze_embeddings:
            init_info["frozen_embedding_parameters"] = freeze_embedding_parameters(student, s_family)
        if cos_layers == "mapped":
            cos_pairs = [(i + 1, t + 1) for i, t in enumerate(shape.layer_map)]
        else:
            cos_pairs = [(shape.layers, shape.teacher_layers)]
        need_hidden = bool(alpha_cos or alpha_pooled)
        projections = make_projections(shape.hidden, shape.teacher_hidden, len(cos_pairs)) if need_hidden else None
        model = DistillationModel(student, s_family, cos_pairs if need_hidden else [], projections, ce_positions)

        sts_scores: dict[str, Any] = {}
        initial_state = None
        if sts is not None:
            from edgebert.distill.factorize import clone_state

            sts_scores["teacher"] = round(sts_spearman(getattr(teacher_mlm, family.mlm_base_attr), tokenizer, sts, pooling, uses_token_type_ids=family.uses_token_type_ids), 5)
            sts_scores["student_init"] = round(sts_spearman(getattr(student, s_family.mlm_base_attr), tokenizer, sts, pooling, uses_token_type_ids=s_family.uses_token_type_ids), 5)
            initial_state = clone_state(student)  # kept if no checkpoint beats it
            log(f"STS Spearman: teacher {sts_scores['teacher']:.4f}, student at init {sts_scores['student_init']:.4f}")

        args = _training_args(
            checkpoint_dir, steps, batch_size, grad_accum, lr, warmup_ratio, weight_decay, max_grad_norm, seed,
            eval_steps, save_steps, logging_steps, sts is not None, precision, quiet, group_by_length,
        )
        trainer = DistillationTrainer(
            model=model,
            args=args,
            train_dataset=dataset,
            eval_dataset=[0] if sts is not None else None,
            data_collator=padding_collator(tokenizer),
            teacher=teacher_mlm,
            family=family,
            student_family=s_family,
            weights=weights,
            sts=sts,
            sts_tokenizer=tokenizer,
            pooling=pooling,
            callbacks=callbacks,
            masker=collator,
            mask_seed=seed,
        )
        log(f"training {steps} steps × batch {batch_size}×{grad_accum} (seq ≤ {seq_len}); checkpoints every {args.save_steps} steps in {checkpoint_dir}")
        result = trainer.train(resume_from_checkpoint=resume_from)
        train_metrics = result.metrics

        if sts is not None:
            best_trained = trainer.state.best_metric
            if best_trained is None:  # no evaluation during training: the trained student is the candidate
                best_trained = round(sts_spearman(getattr(student, s_family.mlm_base_attr), tokenizer, sts, pooling, uses_token_type_ids=s_family.uses_token_type_ids), 5)
            sts_scores["best_checkpoint"] = trainer.state.best_model_checkpoint
            sts_scores["best_trained"] = best_trained
            if best_trained <= sts_scores["student_init"]:
                # Nothing beat the student at initialisation (e.g. layers copied from a strong teacher): keep it.
                student.load_state_dict(initial_state)
                student.tie_weights()
                sts_scores["kept"] = "init"
                log(f"no checkpoint beat the student at initialisation ({best_trained} <= {sts_scores['student_init']}); keeping it")
            else:
                sts_scores["kept"] = Path(trainer.state.best_model_checkpoint).name if trainer.state.best_model_checkpoint else "final"
            sts_scores["student_final"] = round(sts_spearman(getattr(student, s_family.mlm_base_attr), tokenizer, sts, pooling, uses_token_type_ids=s_family.uses_token_type_ids), 5)
            sts_scores["history"] = [  # checkpoint evaluations; the student at init is "student_init"
                {"step": e["step"], "spearman": e["eval_sts_spearman"]} for e in trainer.state.log_history if "eval_sts_spearman" in e
            ]
            log(f"STS Spearman after distillation: {sts_scores['student_final']:.4f} (teacher {sts_scores['teacher']:.4f})")

        losses = [
            {k: v for k, v in e.items() if k == "step" or k.startswith("loss") or k in ("learning_rate", "grad_norm")}
            for e in trainer.state.log_history
            if "loss" in e
        ]
        manifest = {
            "kind": "student",
            "name": out.name,
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "edgebert_version": __version__,
            "model": {
                "family": s_family.name,
                "architecture": s_family.mlm_class if save_head else type(getattr(student, s_family.mlm_base_attr)).__name__,
                "embedding_dim": shape.embedding_dim,
                "pooling": pooling,
                "hidden_size": shape.hidden,
                "layers": shape.layers,
                "heads": shape.heads,
                "heads_per_layer": heads_per_layer(student.config, s_family),
                "ffn": shape.ffn,
                "vocab_size": int(teacher_config.vocab_size),
                "parameters": sum(p.numel() for p in getattr(student, s_family.mlm_base_attr).parameters()),
                "embedding_parameters": _embedding_parameters(getattr(student, s_family.mlm_base_attr), s_family),
            },
            "lineage": {
                "teacher": str(teacher_dir),
                "teacher_name": read_manifest(teacher_dir).get("name") or config_dict.get("_name_or_path") or teacher_dir.name,
                "teacher_fingerprint": weights_fingerprint(teacher_dir),
                "teacher_head": {k: v for k, v in head_info.items() if k not in ("config",)},
                "recipe": recipe,
                "corpus": corpus_info,
                "steps": trainer.state.global_step,
                "resumed_from": str(resume_from) if resume_from else None,
                "init": init_info,
            },
            "metrics": {
                "sts_spearman": sts_scores or None,
                "teacher_mlm_accuracy": head_info.get("mlm_accuracy"),
                "steps_per_second": train_metrics.get("train_steps_per_second"),
                "samples_per_second": train_metrics.get("train_samples_per_second"),
                "train_runtime_s": train_metrics.get("train_runtime"),
                "train_loss": train_metrics.get("train_loss"),
                "wall_time_s": None,
                "losses": losses,
            },
        }
        saved = student if save_head else getattr(student, s_family.mlm_base_attr)
        _write_student(out, saved, tokenizer, pooling, teacher_dir, shape.hidden, seq_len, manifest, started)
        if not keep_checkpoints:
            shutil.rmtree(checkpoint_dir, ignore_errors=True)
    log(f"student written to {out} ({manifest['metrics']['wall_time_s']} s)")
    return DistillReport(out_dir=out, manifest=manifest)


def _student_init_shape(
    student_init: str | Path, teacher_config: Any, family: Any, spec: Any, student_head_steps: int | None, seq_len: int
) -> tuple[Path, Any, Any]:
    """--student-init checked against the teacher and the other arguments: (its directory, family, StudentShape)."""
    from transformers import AutoConfig

    from edgebert.distill.student import check_student_init, init_shape
    from edgebert.modelio import check_within_positions, inspect_model_dir
    from edgebert.sources import resolve_model

    flags = {
        "--student-layers": spec.layers,
        "--student-hidden": spec.hidden,
        "--student-heads": spec.heads,
        "--student-ffn": spec.ffn,
        "--embedding-dim": spec.embedding_dim,
        "--student-head-steps": student_head_steps,
    }
    given = [name for name, value in flags.items() if value is not None]
    if given:
        raise UserError(f"{given[0]} cannot be combined with --student-init: the student is the model in {student_init} as it is")
    init_dir = resolve_model(student_init)
    _, init_family = inspect_model_dir(init_dir)
    try:
        init_config = AutoConfig.from_pretrained(init_dir, trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot read the config of --student-init {init_dir} ({type(exc).__name__}); re-save the model") from exc
    check_student_init(init_config, init_family, teacher_config, family, init_dir)
    check_within_positions("--seq-len", seq_len, init_config, "the --student-init model's")
    return Path(init_dir), init_family, init_shape(init_config, init_family, teacher_config, family, spec.layer_map)


def _check_init_tokenizer(init_dir: Path, teacher_tokenizer: Any) -> None:
    from transformers import AutoTokenizer

    from edgebert.distill.student import check_same_tokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(init_dir, use_fast=True, trust_remote_code=False)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot load the tokenizer of --student-init {init_dir} ({type(exc).__name__}); re-save it") from exc
    check_same_tokenizer(tokenizer, teacher_tokenizer, init_dir)


def _fingerprint(model_dir: Path) -> str:
    from edgebert.distill.teacher import weights_fingerprint

    return weights_fingerprint(model_dir)


def _student_from_dir(init_dir: Path, s_family: Any, teacher_mlm: Any, family: Any, head_needed: bool) -> tuple[Any, dict[str, Any]]:
    """The --student-init model as a masked-LM and its init record; `mlm_head` says where its head came from
    ("own", "teacher") or None when it has none and no loss needs one (the student is then saved without it)."""
    from edgebert.distill.student import copy_mlm_head, heads_per_layer, load_student_init

    student, own_head = load_student_init(init_dir, s_family)
    info: dict[str, Any] = {"kind": "student_init", "from": str(init_dir), "heads_per_layer": heads_per_layer(student.config, s_family)}
    if own_head:
        info["mlm_head"] = "own"
    elif head_needed and s_family is not family:
        raise UserError(
            f"--student-init {init_dir} has no masked-LM head and is a {s_family.name} model, unlike the {family.name} "
            "teacher, so the teacher's head cannot be copied in; use --alpha-mlm 0 --alpha-ce 0 (hidden-state losses only)"
        )
    elif head_needed:
        info["mlm_head"] = "teacher"
        info["copied_head_tensors"] = len(copy_mlm_head(student, teacher_mlm, family))
    else:
        info["mlm_head"] = None
    return student, info


def _student_head_steps(student_head_steps: int | None, head_steps: int) -> int:
    return head_steps if student_head_steps is None else max(0, int(student_head_steps))


def _embedding_parameters(base: Any, family: Any) -> int:
    """Parameters of the embedding block: tables + LayerNorm (+ the E → H projection of factorised families)."""
    count = 0
    for _, path in family.embedding_modules:
        module = base
        for name in path.split("."):
            module = getattr(module, name)
        count += sum(p.numel() for p in module.parameters())
    return count


def _fit_student_head(student: Any, family: Any, dataset: Any, collator: Any, head_cfg: Any, steps: int, log: _Log) -> dict[str, Any]:
    """Fit a factorised student's MLM head (dense + LayerNorm + bias; body and tied decoder frozen) on the corpus."""
    from dataclasses import replace

    from edgebert.distill.teacher import _SubsetView, fit_mlm_head

    n_eval = min(head_cfg.eval_sequences, max(1, len(dataset) // 20))
    heldout = [dataset[i] for i in range(len(dataset) - n_eval, len(dataset))]
    train = _SubsetView(dataset, len(dataset) - n_eval)
    trainable = {n: p.requires_grad for n, p in student.named_parameters()}
    for p in student.parameters():
        p.requires_grad_(False)
    log(f"student MLM head: fitting it with the body frozen ({steps} steps)")
    try:
        info = fit_mlm_head(student, family, train, heldout, collator, replace(head_cfg, steps=steps), log=log)
    finally:
        for n, p in student.named_parameters():
            p.requires_grad_(trainable.get(n, True))
    student.train()
    log(f"student MLM head: held-out masked-token accuracy {info['before']['accuracy']:.3f} → {info['after']['accuracy']:.3f}")
    return {k: v for k, v in info.items() if k != "config"}


def _training_args(
    output_dir: Path, steps: int, batch_size: int, grad_accum: int, lr: float, warmup_ratio: float,
    weight_decay: float, max_grad_norm: float, seed: int, eval_steps: int | None, save_steps: int | None,
    logging_steps: int | None, evaluate: bool, precision: str, quiet: bool, group_by_length: bool,
) -> Any:
    import torch
    from transformers import TrainingArguments

    cuda = torch.cuda.is_available()
    precision = _check_precision(precision)
    save_steps, eval_steps = _check_intervals(steps, save_steps, eval_steps, evaluate)
    return TrainingArguments(
        output_dir=str(output_dir),
        max_steps=steps,
        per_device_train_batch_size=batch_size,
        group_by_length=group_by_length,
        gradient_accumulation_steps=grad_accum,
        learning_rate=lr,
        warmup_ratio=warmup_ratio,
        lr_scheduler_type="linear",
        weight_decay=weight_decay,
        max_grad_norm=max_grad_norm,
        seed=seed,
        logging_steps=logging_steps or max(1, min(50, steps // 20)),
        logging_first_step=True,
        save_strategy="steps",
        save_steps=save_steps,
        save_total_limit=2,
        save_safetensors=True,
        eval_strategy="steps" if evaluate else "no",
        eval_steps=eval_steps if evaluate else None,
        metric_for_best_model="sts_spearman" if evaluate else None,
        greater_is_better=True if evaluate else None,
        load_best_model_at_end=evaluate,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        dataloader_pin_memory=cuda,
        use_cpu=not cuda,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        report_to="none",
        disable_tqdm=quiet,
        ddp_find_unused_parameters=False,
    )


def _check_precision(precision: str) -> str:
    """The training precision `precision` stands for on this machine; UserError when unknown or without a GPU."""
    import torch

    cuda = torch.cuda.is_available()
    if precision == "auto":
        precision = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if cuda else "fp32"
    if precision not in ("fp32", "fp16", "bf16"):
        raise UserError(f"--precision {precision} is unknown; choose auto, fp32, fp16 or bf16")
    if precision != "fp32" and not cuda:
        raise UserError(f"--precision {precision} needs a GPU; use fp32 on CPU")
    return precision


def _check_intervals(steps: int, save_steps: int | None, eval_steps: int | None, evaluate: bool) -> tuple[int, int]:
    """(save_steps, eval_steps) with their defaults; UserError when the best checkpoint could not be kept."""
    interval = max(1, min(steps, max(50, steps // 10)))
    save_steps = save_steps or eval_steps or interval
    eval_steps = eval_steps or save_steps
    if evaluate and save_steps % eval_steps:
        raise UserError(f"--save-steps {save_steps} must be a multiple of --eval-steps {eval_steps} to keep the best checkpoint")
    return save_steps, eval_steps


def checkpoint_problem(checkpoint: Path) -> str | None:
    """Why a Trainer checkpoint cannot be resumed from (a file missing or unreadable), or None when complete."""
    import zipfile

    from safetensors import safe_open

    state = checkpoint / "trainer_state.json"
    try:
        json.loads(state.read_text())["global_step"]
    except (OSError, ValueError, KeyError, TypeError):
        return "trainer_state.json is missing or unreadable"
    try:
        with safe_open(str(checkpoint / "model.safetensors"), framework="pt") as fh:
            list(fh.keys())
    except Exception:  # noqa: BLE001 - missing, truncated or corrupt files raise many types
        return "model.safetensors is missing or unreadable"
    for name in ("optimizer.pt", "scheduler.pt"):
        try:
            with zipfile.ZipFile(checkpoint / name) as zf:
                if zf.testzip() is not None:
                    return f"{name} is corrupt"
        except (OSError, zipfile.BadZipFile):
            return f"{name} is missing or unreadable"
    return None


def last_complete_checkpoint(checkpoint_dir: Path, log: Any) -> Path | None:
    """The newest complete `checkpoint-N` in `checkpoint_dir`; incomplete newer ones (a kill while saving) are
    removed, saying so, so that the resumed run writes its own. None (saying so) when none is complete."""
    found = []
    for entry in Path(checkpoint_dir).iterdir():
        step = entry.name.removeprefix("checkpoint-")
        if entry.is_dir() and entry.name.startswith("checkpoint-") and step.isdigit():
            found.append((int(step), entry))
    for _, checkpoint in sorted(found, reverse=True):
        problem = checkpoint_problem(checkpoint)
        if problem is None:
            log(f"resuming from {checkpoint}")
            return checkpoint
        log(f"skipping the incomplete checkpoint {checkpoint} ({problem}); removing it")
        shutil.rmtree(checkpoint, ignore_errors=True)
    log(f"no complete checkpoint in {checkpoint_dir}; starting over from step 0")
    return None


def _check_init_head(init_dir: Path, init_family: Any, family: Any, head_needed: bool) -> None:
    """UserError when the MLM/soft-target losses need a head that --student-init lacks and cannot get."""
    from edgebert.modelio import has_mlm_head

    if head_needed and init_family is not family and not has_mlm_head(init_dir, init_family):
        raise UserError(
            f"--student-init {init_dir} has no masked-LM head and is a {init_family.name} model, unlike the {family.name} "
            "teacher, so the teacher's head cannot be copied in; use --alpha-mlm 0 --alpha-ce 0 (hidden-state losses only)"
        )


def _write_student(
    out: Path, student: Any, tokenizer: Any, pooling: str, teacher_dir: Path, hidden: int, seq_len: int,
    manifest: dict[str, Any], started: float,
) -> None:
    """Student + tokenizer + sentence-transformers config + manifest into `out` (complete once the manifest exists)."""
    tmp = Path(tempfile.mkdtemp(prefix=".student.tmp-", dir=out))
    try:
        student.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        _write_sentence_transformers_config(tmp, pooling, hidden, teacher_dir, seq_len)
        for entry in tmp.iterdir():
            target = out / entry.name
            if target.is_dir():
                shutil.rmtree(target)
            os.replace(entry, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    manifest["metrics"]["wall_time_s"] = round(time.perf_counter() - started, 2)
    write_manifest(out, manifest)


def _write_sentence_transformers_config(directory: Path, pooling: str, hidden: int, teacher_dir: Path, seq_len: int) -> None:
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (directory / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (directory / "1_Pooling").mkdir(exist_ok=True)
    (directory / "2_Normalize").mkdir(exist_ok=True)
    pooling_cfg = {
        "word_embedding_dimension": hidden,
        "pooling_mode_cls_token": pooling == "cls",
        "pooling_mode_mean_tokens": pooling == "mean",
        "pooling_mode_max_tokens": pooling == "max",
        "pooling_mode_mean_sqrt_len_tokens": False,
    }
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(pooling_cfg, indent=2) + "\n")
    st_config = {"max_seq_length": seq_len, "do_lower_case": False}
    teacher_st = teacher_dir / "sentence_bert_config.json"
    if teacher_st.exists():  # keep the teacher's inference settings (e.g. max_seq_length 256)
        try:
            st_config.update(json.loads(teacher_st.read_text()))
        except json.JSONDecodeError:
            pass
    (directory / "sentence_bert_config.json").write_text(json.dumps(st_config, indent=2) + "\n")
