"""`edgebert.distill.distill(...)`: teacher dir + corpus → student model dir (the CLI calls this)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from edgebert import validate
from edgebert.artifact import check_output_dir
from edgebert.config import CE_POSITIONS, COS_LAYERS, LOSS_OPTIONS, MASKED_SHARE, STUDENT_SHAPE_OPTIONS, DistillConfig, auto_losses
from edgebert.modeldir import read_manifest, write_manifest
from edgebert.errors import UserError, kept_on_interrupt
from edgebert.heads import FEATURE_EXTRACTION, TEXT_CLASSIFICATION
from edgebert.options import checked, keyword_options
from edgebert.distill.checks import (
    CHECKPOINTS,
    check_init_head,
    check_init_tokenizer,
    check_intervals,
    check_losses,
    check_numbers,
    check_out,
    check_precision,
    check_student_family,
)
from edgebert.distill.checkpoints import last_complete_checkpoint, refuse_unsafe_pickles, safe_resume

RECIPE_FILE = "recipe.json"
HEAD_MLM_PROBABILITY = MASKED_SHARE


@dataclass
class DistillReport:
    """Where the student went and what its manifest says."""

    out_dir: Path
    manifest: dict[str, Any]
    main: bool = True  # False in the other processes of a launched run (the main one wrote the student)

    @property
    def metrics(self) -> dict[str, Any]:
        return self.manifest["metrics"]


class _Log:
    def __init__(self, quiet: bool) -> None:
        from rich.console import Console

        self.console = Console(stderr=True, quiet=quiet, highlight=False)

    def __call__(self, message: str) -> None:
        self.console.print(f"[distill] {message}", markup=False, soft_wrap=True)


@dataclass(kw_only=True)
class _Args(DistillConfig):
    """distill()'s arguments: the positional ones and its options (DistillConfig, where their defaults live)."""

    teacher: str | Path | None
    corpus: str | Path | list[str | Path]
    out: str | Path


@keyword_options(DistillConfig)
def distill(teacher: str | Path | None, corpus: str | Path | list[str | Path], out: str | Path, **options: Any) -> DistillReport:
    """Distil `teacher` into a smaller student trained on `corpus`; write a standard HF model dir to `out`.

    `embedding_dim` gives the student ALBERT-style factorised embeddings (vocab × E, then E × hidden; an
    AlbertModel without layer sharing, see edgebert/distill/factorize.py); its MLM head, which cannot be copied
    from the teacher's, is fitted with the body frozen for `student_head_steps` (default: `head_steps`) first.
    `layer_groups` G makes such a student share its layers as ALBERT does: `student_layers` passes over G layer modules
    (G divides the passes), each module started from the teacher layer matched with its last pass.
    With `eval_sts`, the student at initialisation competes with the checkpoints for "best" and is kept if none
    beats it.

    `student_init` starts from an existing model directory instead of building a student (e.g. a pruned copy of
    the teacher, to heal it): its shape is kept as it is (per-layer head counts from config.pruned_heads, its FFN
    width); it must have the teacher's tokenizer and hidden size, and cannot be combined with the shape arguments.
    Its MLM head is its own when it has one; otherwise the teacher's (fitted) head is copied in when the MLM or
    soft-target loss needs one, and when neither does the student is saved as an encoder without a head.
    `freeze_embeddings` keeps the embedding block as it starts (only the layers and the head train).
    The loss weights and `mlm_probability` default to auto (None): DistilBERT's triple loss (mlm 2, ce 5, cos 1,
    15 % masked) when the teacher has its own masked-LM head, cosine-only (cos 1, pooled 1, unmasked text) when it has
    none; values given always win, and the manifest's recipe records the choice ("loss_choice").
    A sequence-classifier teacher is distilled by task distillation (edgebert/distill/task.py): soft targets on its
    logits (ce 5, KL at `temperature` × T²) plus the hidden-state cosine (cos 1), on unmasked text, into a classifier
    student with the teacher's labels and (where shapes allow) its classifier; `eval_labels` (a labelled TSV or
    dataset) keeps the checkpoint with the best accuracy, as `eval_sts` does for encoders.
    `mlm_probability` 0 distils on unmasked text, for recipes with hidden-state losses only (alpha_mlm = alpha_ce = 0).
    `group_by_length` batches passages of similar length (the Trainer's length-grouped sampler) so that a batch is
    padded to its own longest passage rather than to the longest of a random mix: same losses, fewer padded tokens.

    Bad input raises UserError before anything is written. Checkpoints live in `out/checkpoints` while
    training (so `resume=True` continues an interrupted run); on success the student, its tokenizer, the
    sentence-transformers pooling config and `edgebert.json` are written to `out`.
    """
    from edgebert.distill.processes import current

    args = _Args(teacher=teacher, corpus=corpus, out=out, **checked(DistillConfig, options, "distill"))
    procs = current()
    run = _Run(args, _Log(args.quiet or not procs.main), time.perf_counter(), procs)
    _check_arguments(run)
    across = _across_tokenizers(run)
    if across is not None:
        return across
    _resolve_models(run)
    _load_data(run)
    _plan_output(run)
    procs.wait()  # every process has checked --out before the main one changes it
    # ---- every check passed: from here on we write
    if run.out_action == "replace" and procs.main:
        shutil.rmtree(run.out)
    with kept_on_interrupt(f"interrupted; checkpoints kept in {run.checkpoint_dir}: rerun with --resume to continue"), _removed_on_refusal(run):
        _write_recipe(run)
        _load_teacher(run)
        _make_student(run)
        model = _distillation_model(run)
        _open_teacher_cache(run, model)
        _score_initial(run)
        trainer = _make_trainer(run, model)
        with safe_resume(run.resume_from):
            train_metrics = trainer.train(resume_from_checkpoint=run.resume_from).metrics
        _keep_best(run, trainer)
        manifest = _manifest(run, trainer, train_metrics)
        if procs.main:
            _save(run, manifest)
        procs.wait()  # the student is written before any process returns
    run.log(f"student written to {run.out} ({manifest['metrics']['wall_time_s']} s)")
    return DistillReport(out_dir=run.out, manifest=manifest, main=procs.main)


@dataclass
class _Run:
    """State passed between distill()'s phases: its arguments, then what each phase found or built."""

    a: _Args
    log: _Log
    started: float
    procs: Any = None  # edgebert.distill.processes.Processes: this one among those launched
    out: Path = Path()
    out_action: str | None = None
    loss_choice: str = ""
    teacher_dir: Path = Path()
    config_dict: dict[str, Any] = field(default_factory=dict)
    family: Any = None
    teacher_config: Any = None
    spec: Any = None
    shape: Any = None
    init_dir: Path | None = None
    init_family: Any = None
    corpus_list: list[str | Path] = field(default_factory=list)
    sts: Any = None
    texts: list[str] = field(default_factory=list)
    tokenizer: Any = None
    dataset: Any = None
    corpus_fp: str = ""
    weights: Any = None
    recipe: dict[str, Any] = field(default_factory=dict)
    corpus_info: dict[str, Any] = field(default_factory=dict)
    checkpoint_dir: Path = Path()
    resume_from: Path | None = None
    collator: Any = None
    head_collator: Any = None
    head_cfg: Any = None
    head_used: bool = False
    teacher_mlm: Any = None
    head_info: dict[str, Any] = field(default_factory=dict)
    pooling: Any = None  # edgebert.modeldir.Pooling: the teacher's, kept by the student
    student: Any = None
    s_family: Any = None
    save_head: bool = False
    init_info: dict[str, Any] = field(default_factory=dict)
    sts_scores: dict[str, Any] = field(default_factory=dict)
    initial_state: Any = None
    teacher_cache: Any = None  # edgebert.distill.teacher_cache.TeacherCache when --teacher-cache
    cache_info: dict[str, Any] = field(default_factory=dict)
    classifier: bool = False  # task distillation: a sequence-classifier teacher into a classifier student
    teacher_task: Any = None  # that teacher, as its sequence-classification class
    labelled: Any = None  # --eval-labels: (texts, gold class ids, source) before the teacher is loaded
    eval_set: Any = None  # edgebert.distill.task.LabelledEval once it is


def _check_arguments(run: _Run) -> None:
    """Every argument check that needs no model or corpus; sets the absolute --out and what to do with it."""
    a = run.a
    check_numbers(**{f.name: getattr(a, f.name) for f in fields(DistillConfig)})
    validate.path_like("--out", a.out, optional=False)
    validate.path_like("--eval-sts", a.eval_sts)
    validate.path_like("--eval-labels", a.eval_labels)
    validate.path_like("--cache-dir", a.cache_dir)
    validate.path_like("--teacher-cache", a.teacher_cache)
    if a.ce_positions not in CE_POSITIONS:
        raise UserError(f"--ce-positions {a.ce_positions} is unknown; choose one of: {', '.join(CE_POSITIONS)}")
    if a.cos_layers not in COS_LAYERS:
        raise UserError(f"--cos-layers {a.cos_layers} is unknown; choose one of: {', '.join(COS_LAYERS)}")
    if a.weight_grid is not None:
        from edgebert.weight_grids import grid_named

        grid_named(a.weight_grid)  # an unknown name is refused here, before anything loads
    run.out = Path(a.out).expanduser().absolute()
    run.out_action = check_out(run.out, a.force, a.resume)
    check_precision(a.precision)
    check_intervals(a.steps, a.save_steps, a.eval_steps, a.eval_sts is not None or a.eval_labels is not None)


def _across_tokenizers(run: _Run) -> DistillReport | None:
    """--across-tokenizers: distil sentence embeddings into --student-init (edgebert/distill/across.py) and return its
    report; None for every other run."""
    from edgebert.distill.across import run_across
    from edgebert.modelio import inspect_model_dir
    from edgebert.sources import resolve_model

    a = run.a
    if not a.across_tokenizers:
        return None
    if a.student_init is None:
        raise UserError("--across-tokenizers trains an existing student: give it as --student-init DIR")
    teacher_dir, init_dir = resolve_model(a.teacher), resolve_model(a.student_init)
    for directory in (teacher_dir, init_dir):
        inspect_model_dir(directory)[1].require("distill")
    given = [k for k in STUDENT_SHAPE_OPTIONS if getattr(a, k) is not None]
    if given:
        raise UserError(f"--{given[0].replace('_', '-')} cannot be combined with --student-init: the student is the model in {init_dir} as it is")
    with kept_on_interrupt(f"interrupted; checkpoints kept in {run.out / CHECKPOINTS}: rerun with --resume to continue"):
        manifest = run_across(a, Path(teacher_dir), Path(init_dir), run.out, run.out_action, run.log, run.procs, run.started)
    run.log(f"student written to {run.out} ({manifest['metrics']['wall_time_s']} s)")
    return DistillReport(out_dir=run.out, manifest=manifest, main=run.procs.main)


def _resolve_models(run: _Run) -> None:
    """The teacher, the student's shape (or --student-init) and the inputs checked against --out."""
    from edgebert.modelio import load_config

    from edgebert.distill.student import StudentSpec, parse_layer_map, resolve_shape
    from edgebert.modeldir import resolve_pooling
    from edgebert.modelio import check_within_positions, inspect_model_dir
    from edgebert.sources import resolve_model

    a = run.a
    run.teacher_dir = resolve_model(a.teacher)
    run.config_dict, run.family = inspect_model_dir(run.teacher_dir)
    run.family.require("distill")
    run.pooling = resolve_pooling(run.teacher_dir, run.family.default_pooling)
    _check_task(run)
    _choose_losses(run)
    a = run.a
    run.teacher_config = load_config(run.teacher_dir)
    layer_map = parse_layer_map(a.layer_map) if isinstance(a.layer_map, str) else a.layer_map
    run.spec = StudentSpec(a.student_layers, a.student_hidden, a.student_heads, a.student_ffn, layer_map, a.embedding_dim, a.layer_groups)
    check_student_family(a, run.teacher_config, run.family)
    if a.student_init is not None:
        run.init_dir, run.init_family, run.shape = _student_init_shape(a, run.teacher_config, run.family, layer_map)
    else:
        run.shape = resolve_shape(run.teacher_config, run.spec, run.family)
    check_within_positions("--seq-len", a.seq_len, run.teacher_config, "the teacher's")
    run.corpus_list = [a.corpus] if isinstance(a.corpus, (str, Path)) else list(a.corpus)
    inputs = {
        "--teacher": run.teacher_dir, "--student-init": run.init_dir, "--corpus": run.corpus_list, "--eval-sts": a.eval_sts,
        "--eval-labels": a.eval_labels,
    }  # fmt: skip
    check_output_dir(run.out, True, inputs)  # overlap and writability; emptiness is check_out's (--resume)
    if run.init_dir is not None and not run.classifier:
        check_init_head(run.init_dir, run.init_family, run.family, bool(a.alpha_mlm or a.alpha_ce))


def _check_task(run: _Run) -> None:
    """What the teacher computes decides the distillation: a sequence classifier → task distillation (its labelled
    set, not STS, chooses checkpoints); a head edgebert cannot distil is refused rather than dropped."""
    from edgebert.heads import FILL_MASK, detect_task, read_sentence_stack

    a = run.a
    task = detect_task(run.config_dict, read_sentence_stack(run.teacher_dir) is not None)
    if task not in (FEATURE_EXTRACTION, FILL_MASK, TEXT_CLASSIFICATION):
        raise UserError(f"the teacher {run.teacher_dir} is a {task} model; distill supports sentence encoders, masked-LM and sequence-classifier teachers")
    run.classifier = task == TEXT_CLASSIFICATION
    if run.classifier and a.eval_sts:
        raise UserError("--eval-sts scores sentence embeddings; a classifier teacher's checkpoints are chosen on --eval-labels FILE.tsv")
    if run.classifier and a.student_family not in (None, run.family.name):
        raise UserError(f"--student-family re-lays encoder and masked-LM teachers; a classifier teacher's student stays {run.family.name}")
    if a.eval_labels and not run.classifier:
        raise UserError(f"--eval-labels needs a sequence-classifier teacher; {run.teacher_dir} is a {task} model (use --eval-sts)")


def _choose_losses(run: _Run) -> None:
    """Fill the auto (None) loss weights and masking share from the teacher: a classifier (task distillation), or
    whether it has its own masked-LM head."""
    from edgebert.modelio import has_mlm_head

    a = run.a
    given = {k: getattr(a, k) for k in LOSS_OPTIONS}
    masked_head = run.family.masked_lm and has_mlm_head(run.teacher_dir, run.family)  # XLNet's LM head: permuted tokens
    chosen, reason = auto_losses(given, masked_head, classifier=run.classifier)
    check_losses(**chosen, classifier=run.classifier, alpha_sim=a.alpha_sim)
    if not run.classifier and (chosen["alpha_mlm"] or chosen["alpha_ce"]) and not run.family.masked_lm:
        raise UserError(
            f"{run.family.name}'s LM head predicts permuted tokens, not masked ones: distil a {run.family.name} classifier, "
            "or use hidden-state losses only (--alpha-mlm 0 --alpha-ce 0)"
        )
    if a.teacher_cache is not None and (run.classifier or chosen["alpha_mlm"] or chosen["alpha_ce"] or chosen["mlm_probability"]):
        raise UserError(
            "--teacher-cache needs unmasked text and hidden-state losses only (the teacher sees new masks every step, and "
            "a classifier teacher's logits are read live); add --alpha-mlm 0 --alpha-ce 0 --mlm-probability 0 or drop --teacher-cache"
        )
    run.a = replace(a, **chosen)
    run.loss_choice = reason  # logged once the run starts writing (_load_teacher)


def _load_data(run: _Run) -> None:
    """The STS set, the corpus, the teacher's tokenizer (checked) and the tokenized training sequences."""
    from edgebert.modelio import load_tokenizer

    from edgebert.data import corpus_fingerprint, load_corpus, load_sts_csv, tokenize_corpus
    from edgebert.distill.losses import LossWeights
    from edgebert.modelio import check_tokenizer_fits

    a = run.a
    run.sts = load_sts_csv(a.eval_sts) if a.eval_sts else None
    if a.eval_labels:
        from edgebert.data import label_ids, load_labelled

        data = load_labelled(a.eval_labels, flag="--eval-labels")
        gold = label_ids(data.labels, run.config_dict.get("id2label"), f"--eval-labels {a.eval_labels}")
        run.labelled = (data.texts, gold, data.source)
    run.texts = load_corpus(run.corpus_list, sentences=a.sentences)
    if a.max_passages:
        run.texts = run.texts[: a.max_passages]
    try:
        run.tokenizer = load_tokenizer(run.teacher_dir)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot load the teacher's tokenizer in {run.teacher_dir} ({type(exc).__name__}); re-save it") from exc
    check_tokenizer_fits(run.tokenizer, run.teacher_config, run.teacher_dir)
    if run.tokenizer.mask_token_id is None:
        raise UserError(f"the teacher's tokenizer in {run.teacher_dir} has no mask token; masked-LM distillation needs one")
    if run.init_dir is not None:
        check_init_tokenizer(run.init_dir, run.tokenizer)
    run.dataset = tokenize_corpus(run.texts, run.tokenizer, a.seq_len, a.packing)
    run.corpus_fp = corpus_fingerprint(run.corpus_list)
    run.weights = LossWeights(a.alpha_mlm, a.alpha_ce, a.alpha_cos, a.alpha_pooled, a.temperature, a.alpha_sim)


def _plan_output(run: _Run) -> None:
    """The recipe and corpus records, and on --resume the checkpoint to continue from (same recipe required)."""
    run.recipe = _recipe(run)
    run.corpus_info = {
        "sources": [str(c) for c in run.corpus_list],
        "fingerprint": run.corpus_fp,
        "passages": len(run.texts),
        "sequences": len(run.dataset),
        "tokens": run.dataset.num_tokens,
    }
    run.checkpoint_dir = run.out / CHECKPOINTS
    if run.out_action == "resume":
        saved = run.checkpoint_dir / RECIPE_FILE
        if saved.exists():
            previous = json.loads(saved.read_text())
            if previous.get("recipe") != run.recipe or previous.get("corpus") != run.corpus_fp:
                raise UserError(f"--resume: the arguments differ from the run being resumed in {run.out}; pass the same ones (see {saved})")
        run.resume_from = last_complete_checkpoint(run.checkpoint_dir, run.log) if run.checkpoint_dir.is_dir() else None
        if run.resume_from is not None:
            refuse_unsafe_pickles(run.resume_from)


@contextlib.contextmanager
def _removed_on_refusal(run: _Run) -> Iterator[None]:
    """A refusal found while loading (a teacher whose weights or cache turn out bad) removes the --out this run
    created, as long as it holds no checkpoint yet: a refused distillation leaves nothing behind."""
    try:
        yield
    except UserError:
        if run.procs.main and run.out_action != "resume" and not any(run.checkpoint_dir.glob("checkpoint-*")):
            shutil.rmtree(run.out, ignore_errors=True)
        raise


def _write_recipe(run: _Run) -> None:
    """Create the checkpoint dir and record the recipe in it (what --resume compares against), on the main process."""
    if run.procs.main:
        run.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        (run.checkpoint_dir / RECIPE_FILE).write_text(json.dumps({"recipe": run.recipe, "corpus": run.corpus_fp}, indent=2) + "\n")
    run.procs.wait()


def _recipe(run: _Run) -> dict[str, Any]:
    """The training recipe recorded in the manifest and compared on --resume."""
    a, init_dir = run.a, run.init_dir
    return {
        "student": run.shape.as_dict(),
        "losses": run.weights.as_dict(),
        "loss_choice": run.loss_choice,
        "ce_positions": a.ce_positions,
        "cos_layers": a.cos_layers,
        "mlm_probability": a.mlm_probability,
        "steps": a.steps,
        "batch_size": a.batch_size,
        "grad_accum": a.grad_accum,
        "seq_len": a.seq_len,
        "packing": a.packing,
        "group_by_length": a.group_by_length,
        "lr": a.lr,
        "warmup_ratio": a.warmup_ratio,
        "weight_decay": a.weight_decay,
        "max_grad_norm": a.max_grad_norm,
        "seed": a.seed,
        "teacher_head": {"steps": a.head_steps, "batch_size": a.head_batch_size, "lr": a.head_lr},
        **({"student_head_steps": _student_head_steps(a.student_head_steps, a.head_steps)} if a.embedding_dim else {}),
        "max_passages": a.max_passages,
        **({"sentences": True} if a.sentences else {}),
        **({"teacher_outputs": "cache"} if a.teacher_cache is not None else {}),
        **({"student_init": {"path": str(init_dir), "fingerprint": _fingerprint(init_dir)}} if init_dir else {}),
        **({"freeze_embeddings": True} if a.freeze_embeddings else {}),
        **({"weight_grid": a.weight_grid} if a.weight_grid else {}),
        **({"student_family": a.student_family} if a.student_family not in (None, run.family.name) else {}),
        **({"task": TEXT_CLASSIFICATION, "eval_labels": a.eval_labels} if run.classifier else {}),
    }


def _load_teacher(run: _Run) -> None:
    """The collators and the teacher as a masked-LM with its (fitted or cached) MLM head when a loss needs one."""
    import torch

    from edgebert.data import mlm_collator
    from edgebert.distill.teacher import HeadFitConfig, load_teacher_mlm, prepare_teacher

    a, shape, family = run.a, run.shape, run.family
    if a.threads:
        torch.set_num_threads(a.threads)
    run.collator = mlm_collator(run.tokenizer, a.mlm_probability, seed=a.seed)
    # MLM heads are fitted on masked text even when the distillation itself reads unmasked text (probability 0)
    run.head_collator = run.collator if a.mlm_probability else mlm_collator(run.tokenizer, HEAD_MLM_PROBABILITY, seed=a.seed)
    run.head_cfg = HeadFitConfig(steps=a.head_steps, batch_size=a.head_batch_size, lr=a.head_lr, seed=a.seed)
    run.log(f"teacher {run.teacher_dir} ({family.name}, {shape.teacher_layers} layers × {shape.teacher_hidden}); corpus: {len(run.texts)} passages → {len(run.dataset)} sequences")
    weights = ", ".join(f"{k.removeprefix('alpha_')} {getattr(a, k):g}" for k in LOSS_OPTIONS) + (f", sim {a.alpha_sim:g}" if a.alpha_sim else "")
    run.log(f"losses: {weights} ({run.loss_choice})")
    if run.classifier:
        _load_classifier_teacher(run)
        return
    run.head_used = bool(a.alpha_mlm or a.alpha_ce)
    if run.head_used:
        run.teacher_mlm, run.head_info = prepare_teacher(
            run.teacher_dir, family, run.dataset, run.head_collator, run.corpus_fp, a.seq_len, a.packing, run.head_cfg,
            cache_dir=a.cache_dir, log=run.log,
        )
        run.log(f"teacher MLM head ({run.head_info['source']}): held-out masked-token accuracy {run.head_info['mlm_accuracy']:.3f}")
        teacher_own_head = run.head_info["source"] == "own"
    else:  # hidden-state losses only: no head is fitted, and a built student keeps one only if the teacher has its own
        run.teacher_mlm, teacher_own_head = load_teacher_mlm(run.teacher_dir, family)
        run.head_info = {"source": "unused", "mlm_accuracy": None}
        run.log("teacher MLM head: not needed (--alpha-mlm and --alpha-ce are 0)")
    run.save_head = run.head_used or teacher_own_head


def _load_classifier_teacher(run: _Run) -> None:
    """Task distillation: the teacher as a classifier (soft targets, hidden states) and as a masked-LM (only the
    encoder layers the student is built from; its MLM head is never used); the labelled set's teacher predictions."""
    from edgebert.distill.task import labelled_eval, load_teacher_classifier
    from edgebert.distill.teacher import load_teacher_mlm

    run.teacher_task = load_teacher_classifier(run.teacher_dir, run.family)
    run.teacher_mlm, _ = load_teacher_mlm(run.teacher_dir, run.family)
    run.head_info = {"source": "unused", "mlm_accuracy": None}
    run.head_used = run.save_head = False
    labels = ", ".join(str(v) for _, v in sorted(run.teacher_task.config.id2label.items()))
    run.log(f"task distillation: sequence classifier with labels {labels}; no masked-LM head is used")
    if run.labelled is not None:
        run.eval_set = labelled_eval(*run.labelled, run.teacher_task, run.tokenizer, run.a.seq_len)


def _make_student(run: _Run) -> None:
    """The student: --student-init loaded, or built from the teacher; its MLM head fitted when factorised, then frozen parts."""
    from edgebert.distill.student import build_student, freeze_embedding_parameters, student_family

    a, shape, init_dir = run.a, run.shape, run.init_dir
    if init_dir is not None and run.classifier:
        from edgebert.distill.task import load_classifier_init

        run.student, run.init_info = load_classifier_init(init_dir, run.init_family, run.teacher_task)
        run.s_family = run.init_family
        run.log(f"student: {init_dir} (classifier, {shape.layers} layers × {shape.hidden}), layer map {shape.layer_map}")
    elif init_dir is not None:
        run.student, run.init_info = _student_from_dir(init_dir, run.init_family, run.teacher_mlm, run.family, run.head_used)
        run.s_family, run.save_head = run.init_family, run.init_info["mlm_head"] is not None
        run.log(
            f"student: {init_dir} ({shape.layers} layers × {shape.hidden}, heads per layer {run.init_info['heads_per_layer']}, "
            f"ffn {shape.ffn}; MLM head: {run.init_info['mlm_head'] or 'none, saved without one'}), layer map {shape.layer_map}"
        )
    else:
        word_weights = None
        if run.spec.embedding_dim:
            from edgebert.distill.factorize import corpus_word_weights

            word_weights = corpus_word_weights(run.dataset.sequences, int(run.teacher_config.vocab_size))
        source, source_family, relaid = _relaid_teacher(run)
        run.student, run.shape, run.init_info = build_student(source, run.spec, source_family, seed=a.seed, word_weights=word_weights)
        shape = run.shape
        run.s_family = student_family(shape, source_family)
        if relaid is not None:
            run.init_info["relayout"] = relaid
        factorised = f", factorised embeddings {shape.embedding_dim} ({run.s_family.name})" if shape.embedding_dim else ""
        sharing = run.init_info.get("layer_sharing")
        shared = f", {sharing['passes']} passes over {sharing['layer_modules']} shared layer module(s) from teacher layers {sharing['module_sources']}" if sharing else ""
        run.log(f"student: {shape.kind}-shaped {run.s_family.name}, {shape.layers} layers × {shape.hidden} (heads {shape.heads}, ffn {shape.ffn}), layer map {shape.layer_map}{factorised}{shared}")
        if run.classifier:
            _classifier_from_student(run)
    s_head_steps = _student_head_steps(a.student_head_steps, a.head_steps)
    if init_dir is None and shape.embedding_dim and s_head_steps and run.head_used:  # also on --resume: part of the initial student
        run.init_info["head"] = _fit_student_head(run.student, run.s_family, run.dataset, run.head_collator, run.head_cfg, s_head_steps, run.log)
    if a.freeze_embeddings:
        run.init_info["frozen_embedding_parameters"] = freeze_embedding_parameters(run.student, run.s_family)
    if a.weight_grid is not None:
        _put_student_on_grid(run)


def _put_student_on_grid(run: _Run) -> None:
    """--weight-grid: the student (its MLM head aside, which no export of an embedder or classifier runs) trains on the
    runtime's 4-bit grid; `_save` bakes the snapped weights in."""
    from edgebert.weight_grids import grid_named, put_on_grid

    grid = grid_named(run.a.weight_grid)
    trained = run.student if run.classifier else getattr(run.student, run.s_family.mlm_base_attr)
    run.init_info["weight_grid"] = {**grid.record(), "weights": put_on_grid(trained, grid)}
    run.log(f"training on the {grid.name} weight grid ({run.init_info['weight_grid']['weights']} weights, blocks of {grid.block})")


def _relaid_teacher(run: _Run) -> tuple[Any, Any, dict[str, Any] | None]:
    """(model to build the student from, its family, the re-layout record or None): --student-family re-lays the
    teacher's masked-LM model into another family (edgebert/relayout.py; UserError unless exact)."""
    from edgebert.families import family_named

    name = run.a.student_family
    if name is None or name == run.family.name:
        return run.teacher_mlm, run.family, None
    from edgebert.relayout import relayout

    target = family_named(name)
    relaid, notes = relayout(run.teacher_mlm, run.family, target, with_head=True)
    run.log(f"teacher re-laid as {target.name} for the student ({'; '.join(notes) or 'names only'})")
    return relaid, target, {"from": run.family.name, "to": target.name, "notes": notes, "checked_within": 1e-5}


def _classifier_from_student(run: _Run) -> None:
    """The built student as a classifier with the teacher's labels and (where shapes allow) its classifier."""
    from edgebert.distill.task import classifier_student

    run.student, info = classifier_student(run.student, run.teacher_task, run.s_family.mlm_base_attr)
    run.init_info.update(info)
    run.teacher_mlm = None  # only its encoder layers were needed
    kept = "the teacher's" if not info["classifier_random"] else f"random init for {', '.join(info['classifier_random'])}"
    run.log(f"student classifier: {type(run.student).__name__}, head from {kept}")


def _sts_score(run: _Run, model: Any, family: Any) -> float:
    """STS Spearman of `model`'s encoder (rounded as recorded)."""
    from edgebert.evaluate import sts_spearman

    base = getattr(model, family.mlm_base_attr)
    return round(sts_spearman(base, run.tokenizer, run.sts, run.pooling.mode, uses_token_type_ids=family.uses_token_type_ids), 5)


def _eval_metric(run: _Run) -> str | None:
    """What checkpoints are chosen on: STS Spearman (--eval-sts), accuracy (--eval-labels), or None (the last step)."""
    return "accuracy" if run.eval_set is not None else "sts_spearman" if run.sts is not None else None


def _score(run: _Run, model: Any, family: Any) -> float:
    """`model`'s score on the evaluation set: a classifier's accuracy, or an encoder's STS Spearman."""
    if run.eval_set is not None:
        return run.eval_set.score(model, run.tokenizer)["accuracy"]
    return _sts_score(run, model, family)


def _score_initial(run: _Run) -> None:
    """With --eval-sts / --eval-labels: the teacher's and the initial student's scores, and a copy of the student
    kept in case no checkpoint beats it."""
    metric = _eval_metric(run)
    if metric is None:
        return
    from edgebert.distill.factorize import clone_state

    run.sts_scores["teacher"] = _score(run, run.teacher_task if run.classifier else run.teacher_mlm, run.family)
    run.sts_scores["student_init"] = _score(run, run.student, run.s_family)
    run.initial_state = clone_state(run.student)  # kept if no checkpoint beats it
    run.log(f"{metric}: teacher {run.sts_scores['teacher']:.4f}, student at init {run.sts_scores['student_init']:.4f}")


def _distillation_model(run: _Run) -> Any:
    """The student wrapped with the layer pairs and projections its hidden-state losses compare."""
    from edgebert.distill.student import make_projections
    from edgebert.distill.trainer import DistillationModel

    a, shape = run.a, run.shape
    if a.cos_layers == "mapped":
        cos_pairs = [(i + 1, t + 1) for i, t in enumerate(shape.layer_map)]
    else:
        cos_pairs = [(shape.layers, shape.teacher_layers)]
    need_hidden = bool(a.alpha_cos or a.alpha_pooled or a.alpha_sim)
    projections = make_projections(shape.hidden, shape.teacher_hidden, len(cos_pairs)) if need_hidden else None
    if not run.classifier and not (a.alpha_mlm or a.alpha_ce):
        from edgebert.distill.student import freeze_unused_head

        freeze_unused_head(run.student, run.s_family)
    if run.classifier:
        from edgebert.distill.task import TaskDistillationModel

        return TaskDistillationModel(run.student, cos_pairs if need_hidden else [], projections)
    return DistillationModel(run.student, run.s_family, cos_pairs if need_hidden else [], projections, a.ce_positions)


def _open_teacher_cache(run: _Run, model: Any) -> None:
    """With --teacher-cache: the teacher's outputs for the training sequences, from the cache (built on a miss)."""
    if run.a.teacher_cache is None:
        return
    from edgebert.data import padding_collator
    from edgebert.distill.teacher_cache import needed_layers, open_or_build

    token_layers, pooled_layer = needed_layers(run.weights, model.cos_pairs)
    run.teacher_cache, run.cache_info = open_or_build(
        run.a.teacher_cache, run.teacher_mlm, run.family, run.dataset, padding_collator(run.tokenizer),
        _fingerprint(run.teacher_dir), token_layers, pooled_layer, log=run.log, quiet=run.a.quiet or not run.procs.main,
        procs=run.procs,
    )  # fmt: skip


def _make_trainer(run: _Run, model: Any) -> Any:
    """The TrainingArguments and the DistillationTrainer for `model`."""
    from edgebert.data import padding_collator
    from edgebert.distill.teacher_cache import IndexedCollator, IndexedCorpus
    from edgebert.distill.trainer import DistillationTrainer

    a = run.a
    dataset, collator = run.dataset, padding_collator(run.tokenizer)
    if run.teacher_cache is not None:  # batches name their sequences, whose targets the cache holds
        dataset, collator = IndexedCorpus(dataset), IndexedCollator(collator)
    args = _training_args(
        run.checkpoint_dir, a.steps, a.batch_size, a.grad_accum, a.lr, a.warmup_ratio, a.weight_decay, a.max_grad_norm, a.seed,
        a.eval_steps, a.save_steps, a.logging_steps, _eval_metric(run), a.quiet or not run.log.console.is_terminal,
        a.precision, a.group_by_length,
    )  # fmt: skip
    trainer = DistillationTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        eval_dataset=[0] if _eval_metric(run) else None,
        data_collator=collator,
        teacher_cache=run.teacher_cache,
        teacher=run.teacher_task if run.classifier else run.teacher_mlm,
        labelled=run.eval_set,
        family=run.family,
        student_family=run.s_family,
        weights=run.weights,
        sts=run.sts,
        sts_tokenizer=run.tokenizer,
        pooling=run.pooling.mode,
        callbacks=a.callbacks,
        masker=run.collator,
        mask_seed=a.seed,
    )
    if a.quiet or not run.log.console.is_terminal:  # without tqdm, transformers prints every log dict to stdout instead
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)
    if not a.quiet and not run.log.console.is_terminal:  # a log file: a line per tenth of the run instead of a bar
        from edgebert.distill.trainer import StepLines

        trainer.add_callback(StepLines(run.log, a.steps))
    processes = f" × {run.procs.count} processes" if run.procs.count > 1 else ""
    run.log(f"training {a.steps} steps × batch {a.batch_size}×{a.grad_accum}{processes} (seq ≤ {a.seq_len}); checkpoints every {args.save_steps} steps in {run.checkpoint_dir}")
    return trainer


def _keep_best(run: _Run, trainer: Any) -> None:
    """With --eval-sts / --eval-labels: keep the best checkpoint, or the student at initialisation when none beats it;
    record the scores."""
    from edgebert.distill.trainer import tie_student

    metric = _eval_metric(run)
    if metric is None:
        return
    scores, state = run.sts_scores, trainer.state
    best_trained = state.best_metric
    if best_trained is None:  # no evaluation during training: the trained student is the candidate
        best_trained = _score(run, run.student, run.s_family)
    scores["best_checkpoint"] = state.best_model_checkpoint
    scores["best_trained"] = best_trained
    if best_trained <= scores["student_init"]:
        # Nothing beat the student at initialisation (e.g. layers copied from a strong teacher): keep it.
        run.student.load_state_dict(run.initial_state)
        tie_student(run.student)
        scores["kept"] = "init"
        run.log(f"no checkpoint beat the student at initialisation ({best_trained} <= {scores['student_init']}); keeping it")
    else:
        scores["kept"] = Path(state.best_model_checkpoint).name if state.best_model_checkpoint else "final"
    scores["student_final"] = _score(run, run.student, run.s_family)
    key, name = (f"eval_{metric}", "spearman") if metric == "sts_spearman" else (f"eval_{metric}", metric)
    scores["history"] = [  # checkpoint evaluations; the student at init is "student_init"
        {"step": e["step"], name: e[key], **({"agreement": e["eval_agreement"]} if "eval_agreement" in e else {})}
        for e in state.log_history
        if key in e
    ]
    if run.eval_set is not None:
        scores["agreement_final"] = run.eval_set.score(run.student, run.tokenizer)["agreement"]
        scores["examples"], scores["path"] = len(run.eval_set.gold), run.eval_set.source
    run.log(f"{metric} after distillation: {scores['student_final']:.4f} (teacher {scores['teacher']:.4f})")


def _model_record(run: _Run) -> dict[str, Any]:
    """The manifest's "model" section: the student's family, architecture and size."""
    from edgebert.distill.student import heads_per_layer

    shape, s_family, student = run.shape, run.s_family, run.student
    base = getattr(student, s_family.mlm_base_attr)
    classifier = {"id2label": {str(k): v for k, v in student.config.id2label.items()}} if run.classifier else {}
    return {
        "family": s_family.name,
        "architecture": type(student).__name__ if run.classifier else s_family.mlm_class if run.save_head else type(base).__name__,
        **classifier,
        "embedding_dim": shape.embedding_dim,
        "pooling": run.pooling.mode,
        "hidden_size": shape.hidden,
        "layers": shape.layers,
        "heads": shape.heads,
        "heads_per_layer": heads_per_layer(student.config, s_family),
        "ffn": shape.ffn,
        "vocab_size": int(run.teacher_config.vocab_size),
        "parameters": sum(p.numel() for p in base.parameters()),
        "embedding_parameters": _embedding_parameters(base, s_family),
        **({"shared_layers": _shared_layers(student.config, s_family)} if s_family.shares_layers(student.config) else {}),
        **({"weight_grid": run.init_info["weight_grid"]} if "weight_grid" in run.init_info else {}),
    }


def _shared_layers(config: Any, family: Any) -> dict[str, int]:
    """The manifest's `model.shared_layers`, as compress writes it: layer modules and passes."""
    return {"layer_modules": family.distinct_layers(config), "passes": int(getattr(config, family.size_fields[0]))}


def _manifest(run: _Run, trainer: Any, train_metrics: dict[str, Any]) -> dict[str, Any]:
    """The student's edgebert.json: the common fields (parent = the teacher, recipe, metrics; wall time and size
    filled on save) and the "distill" block (teacher fingerprint and head, corpus, steps, init)."""
    from edgebert.distill.teacher import weights_fingerprint
    from edgebert.modeldir import classifier_outputs, embedding_outputs, new_manifest

    teacher_dir, head_info = run.teacher_dir, run.head_info
    teacher_manifest = read_manifest(teacher_dir)
    losses = [
        {k: v for k, v in e.items() if k == "step" or k.startswith("loss") or k in ("learning_rate", "grad_norm")}
        for e in trainer.state.log_history
        if "loss" in e
    ]
    manifest = new_manifest(
        "model", "distill", run.out.name, teacher_dir, teacher_manifest,
        parent_name=teacher_manifest.get("name") or run.config_dict.get("_name_or_path") or teacher_dir.name,
        recipe=run.recipe, model=_model_record(run),
        outputs=classifier_outputs(run.student.config.id2label) if run.classifier else embedding_outputs(run.shape.hidden),
        task=TEXT_CLASSIFICATION if run.classifier else FEATURE_EXTRACTION,
        metrics={
            "sts_spearman": (run.sts_scores or None) if not run.classifier else None,
            **({"eval_labels": run.sts_scores or None} if run.classifier else {}),
            "teacher_mlm_accuracy": head_info.get("mlm_accuracy"),
            "steps_per_second": train_metrics.get("train_steps_per_second"),
            "samples_per_second": train_metrics.get("train_samples_per_second"),
            "train_runtime_s": train_metrics.get("train_runtime"),
            "train_loss": train_metrics.get("train_loss"),
            "losses": losses,
        },
    )  # fmt: skip
    manifest["distill"] = {
        "teacher_fingerprint": weights_fingerprint(teacher_dir),
        "teacher_head": {k: v for k, v in head_info.items() if k not in ("config",)},
        "corpus": run.corpus_info,
        "steps": trainer.state.global_step,
        "resumed_from": str(run.resume_from) if run.resume_from else None,
        "processes": run.procs.count,  # data parallel: each step trains on batch_size × grad_accum × processes sequences
        "init": run.init_info,
        **({"teacher_cache": run.cache_info} if run.cache_info else {}),
    }
    return manifest


def _save(run: _Run, manifest: dict[str, Any]) -> None:
    """Write the student (with or without its MLM head) and its manifest to --out; drop the checkpoints unless kept."""
    if run.a.weight_grid is not None:
        from edgebert.weight_grids import bake

        bake(run.student)  # the weights as trained: on the grid
    saved = run.student if run.save_head or run.classifier else getattr(run.student, run.s_family.mlm_base_attr)
    tokenizer = run.tokenizer
    if not run.s_family.uses_token_type_ids and "token_type_ids" in tokenizer.model_input_names:  # --student-family
        from edgebert.modelio import load_tokenizer

        tokenizer = load_tokenizer(run.teacher_dir, model_input_names=run.s_family.input_names())
    pooling = None if run.classifier else run.pooling  # a classifier computes its head, not a sentence-transformers stack
    _write_student(run.out, saved, tokenizer, pooling, run.teacher_dir, run.shape.hidden, run.a.seq_len, manifest, run.started)
    if not run.a.keep_checkpoints:
        shutil.rmtree(run.checkpoint_dir, ignore_errors=True)


def _student_init_shape(a: Any, teacher_config: Any, family: Any, layer_map: Any) -> tuple[Path, Any, Any]:
    """--student-init checked against the teacher and the other arguments: (its directory, family, StudentShape)."""
    from edgebert.modelio import load_config

    from edgebert.distill.student import check_student_init, init_shape
    from edgebert.modelio import check_within_positions, inspect_model_dir
    from edgebert.sources import resolve_model

    # --student-family has its own message (check_student_family)
    given = [k for k in STUDENT_SHAPE_OPTIONS if k != "student_family" and getattr(a, k) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise UserError(f"{flag} cannot be combined with --student-init: the student is the model in {a.student_init} as it is")
    student_init, seq_len = a.student_init, a.seq_len
    init_dir = resolve_model(student_init)
    _, init_family = inspect_model_dir(init_dir)
    init_family.require("distill")
    try:
        init_config = load_config(init_dir)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot read the config of --student-init {init_dir} ({type(exc).__name__}); re-save the model") from exc
    check_student_init(init_config, init_family, teacher_config, family, init_dir)
    check_within_positions("--seq-len", seq_len, init_config, "the --student-init model's")
    return Path(init_dir), init_family, init_shape(init_config, init_family, teacher_config, family, layer_map)


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
    return sum(p.numel() for module in family.embedding_parts(base).values() for p in module.parameters())


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
    logging_steps: int | None, metric: str | None, no_bar: bool, precision: str, group_by_length: bool,
) -> Any:
    """TrainingArguments; `metric` (sts_spearman, accuracy or None) is what the best checkpoint is kept on; `no_bar`
    turns tqdm off (quiet, or a log that is not a terminal: `StepLines` reports instead)."""
    import torch
    from transformers import TrainingArguments

    cuda = torch.cuda.is_available()
    evaluate = metric is not None
    precision = check_precision(precision)
    save_steps, eval_steps = check_intervals(steps, save_steps, eval_steps, evaluate)
    return TrainingArguments(
        output_dir=str(output_dir),
        max_steps=steps,
        per_device_train_batch_size=batch_size,
        train_sampling_strategy="group_by_length" if group_by_length else "random",
        gradient_accumulation_steps=grad_accum,
        learning_rate=lr,
        warmup_steps=warmup_ratio,  # a float in [0, 1): the share of max_steps (transformers 5)
        lr_scheduler_type="linear",
        weight_decay=weight_decay,
        max_grad_norm=max_grad_norm,
        seed=seed,
        logging_steps=logging_steps or max(1, min(50, steps // 20)),
        logging_first_step=True,
        save_strategy="steps",
        save_steps=save_steps,
        save_total_limit=2,
        eval_strategy="steps" if evaluate else "no",
        eval_steps=eval_steps if evaluate else None,
        metric_for_best_model=metric,
        greater_is_better=True if evaluate else None,
        load_best_model_at_end=evaluate,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        dataloader_pin_memory=cuda,
        use_cpu=not cuda,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        report_to="none",
        disable_tqdm=no_bar,
        ddp_find_unused_parameters=False,
    )


def _write_student(
    out: Path, student: Any, tokenizer: Any, pooling: Any, teacher_dir: Path, hidden: int, seq_len: int,
    manifest: dict[str, Any], started: float,
) -> None:
    """Student + tokenizer + sentence-transformers files + manifest into `out` (complete once the manifest exists)."""
    from edgebert.modeldir import save_model_dir, weights_bytes

    tmp = Path(tempfile.mkdtemp(prefix=".student.tmp-", dir=out))
    try:
        save_model_dir(tmp, student, tokenizer, teacher_dir, pooling=pooling, hidden=hidden, seq_len=seq_len)
        for entry in tmp.iterdir():
            target = out / entry.name
            if target.is_dir():
                shutil.rmtree(target)
            os.replace(entry, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    manifest["metrics"]["model_bytes"] = weights_bytes(out)
    manifest["metrics"]["wall_time_s"] = round(time.perf_counter() - started, 2)
    write_manifest(out, manifest)
