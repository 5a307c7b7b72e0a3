"""Sentence-embedding distillation across tokenizers (`distill --across-tokenizers`): a sentence-embedding teacher into
a `--student-init` that need not share its tokenizer or family (all-mpnet-base-v2 into a BERT-shaped student with its
own WordPiece vocabulary).

Token-level losses (masked-LM, soft targets, hidden-state cosine) compare the two models position by position, which
needs one tokenization. What two tokenizers still share is the sentence: the teacher's embedding of each training
text, computed once by sentence-transformers exactly as the teacher's own stack computes it (pooling, Dense,
Normalize), is the target. Two losses read it:
- `alpha_pooled`: 1 − cosine between the student's embedding and the teacher's, through a learned projection when the
  widths differ (sentence-transformers' `EmbedDistillLoss`; it starts at the least-squares map from the student's
  embeddings to the teacher's, and is dropped when saving);
- `alpha_sim`: the in-batch similarity loss of edgebert/distill/losses.py (width-free: the B × B cosine matrices).
Training is sentence-transformers' trainer (transformers' Trainer: checkpoints, --resume, several processes under
`accelerate launch` or `torchrun`, each training on its share of every batch);
`--eval-sts` keeps the best evaluation, or the student as it started when none beats it. The targets are cached
under `--cache-dir` (key: the teacher's weights, its max length and every text), computed in shares, one per process.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgebert.errors import UserError

TOKEN_LEVEL = {"alpha_mlm": "--alpha-mlm", "alpha_ce": "--alpha-ce", "alpha_cos": "--alpha-cos", "mlm_probability": "--mlm-probability"}
UNSUPPORTED = {"teacher_cache": "--teacher-cache", "weight_grid": "--weight-grid", "freeze_embeddings": "--freeze-embeddings"}
TARGETS_DIR = "sentence-targets"
OBJECTIVE = "sentence embeddings across tokenizers"
RIDGE = 0.01  # of the mean eigenvalue: the least-squares projection's regularisation (fit_projection)


@dataclass
class Across:
    """One cross-tokenizer run: its arguments, then what each phase built."""

    a: Any  # edgebert.distill.api._Args
    teacher_dir: Path
    init_dir: Path
    out: Path
    log: Any
    procs: Any
    started: float
    texts: list[str] = field(default_factory=list)
    targets: np.ndarray | None = None
    target_info: dict[str, Any] = field(default_factory=dict)
    student: Any = None
    scores: dict[str, Any] = field(default_factory=dict)
    teacher: Any = None  # the teacher as sentence-transformers loads it (targets, then its --eval-sts score)
    frozen: int = 0  # student parameters no loss gradient reaches (freeze_unreached)


def check_across(a: Any) -> tuple[float, float]:
    """The (pooled, similarity) loss weights of a cross-tokenizer run; UserError for an option it cannot honour."""
    for name, flag in TOKEN_LEVEL.items():
        if getattr(a, name):
            raise UserError(
                f"{flag} compares teacher and student token by token, which needs one tokenizer; the --student-init has "
                "its own, so distill matches sentence embeddings (--alpha-pooled, --alpha-sim): drop it"
            )
    for name, flag in UNSUPPORTED.items():
        if getattr(a, name):
            raise UserError(f"{flag} is not available when teacher and --student-init have different tokenizers; drop it")
    if a.eval_labels:
        raise UserError("--eval-labels scores a classifier; across tokenizers distill trains sentence embedders (use --eval-sts)")
    return sentence_loss_weights(a.alpha_pooled, a.alpha_sim)


def sentence_loss_weights(alpha_pooled: float | None, alpha_sim: float | None) -> tuple[float, float]:
    """The (pooled, similarity) loss weights across tokenizers (pooled None: 1.0); UserError when neither is positive."""
    pooled = 1.0 if alpha_pooled is None else float(alpha_pooled)
    sim = float(alpha_sim or 0.0)
    if pooled <= 0 and sim <= 0:
        raise UserError("--alpha-pooled 0 with --alpha-sim 0 leaves nothing to learn; give one of them a positive weight")
    return pooled, sim


def check_teacher_is_embedder(teacher_dir: Path) -> None:
    """Across tokenizers the targets are the teacher's sentence embeddings: a classifier or fill-mask teacher is refused."""
    from edgebert.heads import FEATURE_EXTRACTION, detect_task, read_sentence_stack

    config = json.loads((teacher_dir / "config.json").read_text())
    task = detect_task(config, read_sentence_stack(teacher_dir) is not None)
    if task != FEATURE_EXTRACTION:
        raise UserError(
            f"the teacher {teacher_dir} is a {task} model and --student-init has another tokenizer; across tokenizers "
            "distill matches sentence embeddings only: give a student with the teacher's tokenizer"
        )


def load_sentence_model(model_dir: Path, seq_len: int) -> Any:
    """A sentence-transformers model of `model_dir` (edgebert.modelio.load_sentence_transformer), at most `seq_len`
    tokens."""
    import torch

    from edgebert.modelio import load_sentence_transformer

    model = load_sentence_transformer(model_dir, "cuda" if torch.cuda.is_available() else "cpu")
    model.max_seq_length = min(seq_len, model.max_seq_length or seq_len)
    return model


def teacher_targets(run: Across) -> None:
    """The teacher's embedding of every text, from the cache or computed now: in shares, one per process (each encodes
    every n-th text of the length-sorted corpus), joined into the cache by the main process, then read by all."""
    from edgebert.distill.teacher import weights_fingerprint

    teacher = run.teacher = load_sentence_model(run.teacher_dir, run.a.seq_len)
    key = hashlib.sha256(f"{weights_fingerprint(run.teacher_dir)}|{teacher.max_seq_length}|".encode())
    for text in run.texts:
        key.update(text.encode() + b"\n")
    cache = Path(run.a.cache_dir or Path.home() / ".cache" / "edgebert").expanduser() / TARGETS_DIR / f"{key.hexdigest()[:20]}.npy"
    built_by = None
    if not cache.exists():  # the same answer in every process: the cache is written only after the barrier below
        built_by = run.procs.count
        order = np.argsort([len(t) for t in run.texts], kind="stable").tolist()
        share = _encode(teacher, run.texts, run.procs.share(order), run.log)
        if run.procs.count == 1:
            _save_atomically(cache, _in_text_order([share], order))
        else:
            _save_atomically(_share_path(cache, run.procs.index, run.procs.count), share)
            run.procs.wait()
            if run.procs.main:
                _join_shares(cache, order, run.procs.count)
    run.procs.wait()
    run.targets = np.load(cache, allow_pickle=False)
    run.target_info = {"cache": str(cache), "dim": int(run.targets.shape[1]), "teacher_max_tokens": teacher.max_seq_length}
    if built_by is not None:
        run.target_info["built_by_processes"] = built_by
    shares = f" (computed in {built_by} shares, one per process)" if built_by and built_by > 1 else ""
    run.log(f"teacher targets: {len(run.texts):,} texts × {run.targets.shape[1]} from {cache}{shares}")


def _encode(teacher: Any, texts: list[str], rows: list[int], log: Any, batch: int = 64) -> np.ndarray:
    """The teacher's embeddings of `texts[rows]`, in that order, in batches of `rows`' order (sorted by length) with
    progress."""
    from edgebert.progress import Track

    parts = []
    with Track("teacher embeddings", len(rows), "texts", console=getattr(log, "console", None)) as track:
        for start in range(0, len(rows), batch):
            chunk = [texts[i] for i in rows[start : start + batch]]
            parts.append(teacher.encode(chunk, batch_size=batch, convert_to_numpy=True, show_progress_bar=False).astype(np.float32))
            track.advance(len(chunk))
    return np.concatenate(parts)


def _share_path(cache: Path, index: int, count: int) -> Path:
    return cache.with_name(f".{cache.stem}.share-{index}-of-{count}.npy")


def _join_shares(cache: Path, order: list[int], count: int) -> None:
    """The processes' shares joined into one array at `cache`; the shares removed."""
    paths = [_share_path(cache, i, count) for i in range(count)]
    _save_atomically(cache, _in_text_order([np.load(path, allow_pickle=False) for path in paths], order))
    for path in paths:
        path.unlink()


def _in_text_order(shares: list[np.ndarray], order: list[int]) -> np.ndarray:
    """One row per text, in the corpus's order, from each process's share (`Processes.share` of `order`, in order)."""
    from edgebert.distill.processes import Processes

    out = np.zeros((len(order), shares[0].shape[1]), np.float32)
    for index, share in enumerate(shares):
        out[Processes(index, len(shares)).share(order)] = share
    return out


def _save_atomically(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{time.time_ns()}.tmp.npy")
    np.save(tmp, array)
    tmp.replace(path)


def target_loss(student: Any, teacher_dim: int, pooled: float, sim: float) -> Any:
    """sentence-transformers' EmbedDistillLoss (cosine, projected when the widths differ) × `pooled`, plus the
    in-batch similarity loss × `sim`."""
    from sentence_transformers.base.losses.merged_forward import embed_columns
    from sentence_transformers.sentence_transformer.losses import EmbedDistillLoss

    from edgebert.distill.losses import similarity_loss

    width = student.get_embedding_dimension()

    class SentenceTargetLoss(EmbedDistillLoss):
        def forward(self, sentence_features: Any, labels: Any) -> Any:
            emb = embed_columns(self.model, sentence_features)[0]
            target = labels.detach().to(emb.dtype)
            loss = emb.new_zeros(())
            if pooled:
                loss = loss + pooled * self.compute_loss_from_embeddings([emb], [target])
            if sim:
                loss = loss + sim * similarity_loss(emb, target)
            return loss

    return SentenceTargetLoss(student, distance_metric="cosine", projection_dim=teacher_dim if teacher_dim != width else None)


def fit_projection(loss: Any, student: Any, texts: list[str], targets: np.ndarray, limit: int = 2048) -> None:
    """Start the loss's student → teacher projection at the (ridge) least-squares map between the student's embeddings
    of (up to `limit`, evenly spaced) texts and their targets: a random projection would first pull the student's
    embeddings towards a random image of the teacher's, undoing what it knew."""
    import torch

    from edgebert.data import evenly_spaced

    if loss.projection is None:
        return
    rows = evenly_spaced(range(len(texts)), limit)
    source = student.encode([texts[i] for i in rows], batch_size=64, convert_to_numpy=True, show_progress_bar=False).astype(np.float64)
    target = targets[rows].astype(np.float64)
    mean_s, mean_t = source.mean(0), target.mean(0)
    centred = source - mean_s
    gram = centred.T @ centred
    # ridge: a sentence embedding's weak directions would otherwise get huge weights, and training blow up through them
    gram += RIDGE * np.trace(gram) / len(gram) * np.eye(len(gram))
    weight = np.linalg.solve(gram, centred.T @ (target - mean_t))  # [student, teacher]
    with torch.no_grad():
        loss.projection.weight.copy_(torch.from_numpy(weight.T.astype(np.float32)))
        loss.projection.bias.copy_(torch.from_numpy((mean_t - mean_s @ weight).astype(np.float32)))


def freeze_unreached(student: Any, loss: Any, texts: list[str], targets: np.ndarray) -> int:
    """Stop training the student's parameters no loss gradient reaches (e.g. a BERT pooler, which the sentence stack
    does not read): no gradient reaches them anyway, and DistributedDataParallel refuses them. One probe step on two
    texts finds them. Returns the frozen count."""
    import torch

    features = {k: v.to(student.device) if isinstance(v, torch.Tensor) else v for k, v in student.preprocess(texts[:2]).items()}
    student.zero_grad(set_to_none=True)
    loss([features], torch.from_numpy(targets[:2]).to(student.device)).backward()
    frozen = 0
    for param in student.parameters():
        if param.requires_grad and param.grad is None:
            param.requires_grad_(False)
            frozen += param.numel()
    loss.zero_grad(set_to_none=True)
    return frozen


def loss_gradient_sync(loss: Any, student: Any, procs: Any) -> Any:
    """A trainer callback averaging the gradients of the loss's own parameters (the projection) over the processes
    before each optimizer step: DistributedDataParallel wraps the student only, so without it every process's
    projection would drift its own way."""
    from transformers import TrainerCallback

    own = [p for p in loss.parameters() if id(p) not in {id(q) for q in student.parameters()}]

    class SyncLossGradients(TrainerCallback):
        def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            import torch.distributed as dist

            for param in own:
                if param.grad is not None:
                    dist.all_reduce(param.grad)
                    param.grad /= procs.count

    return SyncLossGradients()


def sts_of(model: Any, pairs: Any) -> float:
    """STS Spearman of a sentence-transformers model on `pairs` (edgebert.data.STSPairs), rounded as recorded."""
    from scipy.stats import spearmanr

    a = model.encode(pairs.sentences1, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    b = model.encode(pairs.sentences2, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
    return round(float(spearmanr((a * b).sum(1), pairs.scores).correlation), 5)


def best_keeper(run: Across, pairs: Any, every: int) -> Any:
    """A TrainerCallback scoring the student on `pairs` every `every` steps and at the end, keeping the best weights
    (the student as it started competes: run.scores["student_init"])."""
    from transformers import TrainerCallback

    from edgebert.distill.factorize import clone_state

    class KeepBest(TrainerCallback):
        def __init__(self) -> None:
            self.best, self.state = run.scores["student_init"], clone_state(run.student)
            self.kept, self.history = "init", []

        def _score(self, step: int) -> None:
            was_training = run.student.training
            score = sts_of(run.student, pairs)
            run.student.train(was_training)
            self.history.append({"step": step, "spearman": score})
            run.log(f"step {step}: sts_spearman {score:.4f}")
            if score > self.best:
                self.best, self.state, self.kept = score, clone_state(run.student), f"step {step}"

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step % every == 0 and state.global_step < state.max_steps:
                self._score(state.global_step)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._score(state.global_step)

    return KeepBest()


def training_arguments(a: Any, output_dir: Path, no_bar: bool) -> Any:
    """sentence-transformers' training arguments from distill's options (checkpoints every --save-steps)."""
    import torch
    from sentence_transformers import SentenceTransformerTrainingArguments

    from edgebert.distill.checks import check_intervals, check_precision

    precision = check_precision(a.precision)
    save_steps, _ = check_intervals(a.steps, a.save_steps, a.eval_steps, a.eval_sts is not None)
    return SentenceTransformerTrainingArguments(
        output_dir=str(output_dir), max_steps=a.steps, per_device_train_batch_size=a.batch_size,
        gradient_accumulation_steps=a.grad_accum, learning_rate=a.lr, warmup_steps=a.warmup_ratio,
        lr_scheduler_type="linear", weight_decay=a.weight_decay, max_grad_norm=a.max_grad_norm, seed=a.seed,
        logging_steps=a.logging_steps or max(1, min(50, a.steps // 20)), save_strategy="steps", save_steps=save_steps,
        save_total_limit=2, report_to="none", disable_tqdm=no_bar, use_cpu=not torch.cuda.is_available(),
        bf16=precision == "bf16", fp16=precision == "fp16", dataloader_drop_last=True, ddp_find_unused_parameters=False,
    )  # fmt: skip


def train(run: Across, pooled: float, sim: float, checkpoint_dir: Path, resume_from: Path | None) -> dict[str, Any]:
    """Train the student on the targets; with --eval-sts keep its best evaluation. The trainer's metrics."""
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer

    from edgebert.data import load_sts_csv
    from edgebert.distill.trainer import StepLines

    a = run.a
    run.student = load_sentence_model(run.init_dir, a.seq_len)
    loss = target_loss(run.student, run.targets.shape[1], pooled, sim)
    if pooled:
        fit_projection(loss, run.student, run.texts, run.targets)  # before any checkpoint's weights load
    run.frozen = freeze_unreached(run.student, loss, run.texts, run.targets)
    callbacks = list(a.callbacks or [])
    if run.procs.count > 1 and loss.projection is not None:
        callbacks.append(loss_gradient_sync(loss, run.student, run.procs))
    no_bar = a.quiet or not getattr(run.log, "console", None) or not run.log.console.is_terminal
    if no_bar:
        callbacks.append(StepLines(run.log, a.steps))
    keeper = None
    if a.eval_sts:
        pairs = load_sts_csv(a.eval_sts)
        run.scores["teacher"] = sts_of(run.teacher, pairs)
        run.scores["student_init"] = sts_of(run.student, pairs)
        run.log(f"sts_spearman: teacher {run.scores['teacher']:.4f}, student at init {run.scores['student_init']:.4f}")
        keeper = best_keeper(run, pairs, a.eval_steps or max(1, a.steps // 10))
        callbacks.append(keeper)
    run.teacher = None  # not needed while the student trains
    data = Dataset.from_dict({"sentence": run.texts, "label": run.targets})
    trainer = SentenceTransformerTrainer(
        model=run.student, args=training_arguments(a, checkpoint_dir, no_bar), train_dataset=data, loss=loss, callbacks=callbacks
    )
    metrics = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None).metrics
    if keeper is not None:
        run.student.load_state_dict(keeper.state)
        run.scores.update(best=keeper.best, kept=keeper.kept, history=keeper.history, student_final=sts_of(run.student, pairs))
        run.log(f"sts_spearman after distillation: {run.scores['student_final']:.4f} (kept: {keeper.kept})")
    run.scores["losses"] = [{k: v for k, v in e.items() if k in ("step", "loss", "learning_rate")} for e in trainer.state.log_history if "loss" in e]
    return metrics


def recipe(a: Any, init_dir: Path, pooled: float, sim: float) -> dict[str, Any]:
    """The training recipe recorded in the manifest and compared on --resume."""
    from edgebert.distill.teacher import weights_fingerprint

    keys = ("steps", "batch_size", "grad_accum", "seq_len", "lr", "warmup_ratio", "weight_decay", "max_grad_norm", "seed", "max_passages")
    return {
        "objective": OBJECTIVE,
        "losses": {"alpha_pooled": pooled, "alpha_sim": sim},
        **{k: getattr(a, k) for k in keys},
        **({"sentences": True} if a.sentences else {}),
        "student_init": {"path": str(init_dir), "fingerprint": weights_fingerprint(init_dir)},
    }


def model_record(student: Any) -> dict[str, Any]:
    """The manifest's "model" section for the trained student (its own family and shape)."""
    from edgebert.distill.student import heads_per_layer
    from edgebert.families import family_for

    hf = student[0].auto_model
    family = family_for(hf.config.model_type)
    layers, hidden, heads, ffn = (int(getattr(hf.config, f)) for f in family.size_fields)
    return {
        "family": family.name, "architecture": type(hf).__name__, "pooling": _pooling_mode(student),
        "hidden_size": hidden, "layers": layers, "heads": heads, "heads_per_layer": heads_per_layer(hf.config, family),
        "ffn": ffn, "vocab_size": int(hf.config.vocab_size), "parameters": sum(p.numel() for p in hf.parameters()),
        "embedding_dim": getattr(hf.config, "embedding_size", None) if family.name == "albert" else None,
    }  # fmt: skip


def _pooling_mode(student: Any) -> str:
    for module in student:
        mode = getattr(module, "pooling_mode", None)
        if mode is not None:
            return str(mode)
    return "mean"


def manifest(run: Across, rec: dict[str, Any], corpus: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    """The student's edgebert.json: parent = the teacher, the recipe, the STS scores and the "distill" block."""
    from edgebert.distill.teacher import weights_fingerprint
    from edgebert.modeldir import embedding_outputs, new_manifest, read_manifest

    teacher_manifest = read_manifest(run.teacher_dir)
    width = run.student.get_embedding_dimension()
    scores = {k: v for k, v in run.scores.items() if k != "losses"}
    out = new_manifest(
        "model", "distill", run.out.name, run.teacher_dir, teacher_manifest, recipe=rec, model=model_record(run.student),
        outputs=embedding_outputs(width),
        metrics={
            "sts_spearman": scores or None, "losses": run.scores.get("losses", []), "train_loss": metrics.get("train_loss"),
            "steps_per_second": metrics.get("train_steps_per_second"), "train_runtime_s": metrics.get("train_runtime"),
        },
    )  # fmt: skip
    out["distill"] = {
        "objective": OBJECTIVE, "teacher_fingerprint": weights_fingerprint(run.teacher_dir), "corpus": corpus,
        "targets": run.target_info, "processes": run.procs.count, "init": {"kind": "student_init", "from": str(run.init_dir)},
        "frozen_parameters": run.frozen,
    }  # fmt: skip
    return out


def save(run: Across, manifest_: dict[str, Any]) -> None:
    """The student (its own tokenizer and sentence-transformers stack, as --student-init had them) and its manifest,
    written beside --out and moved in when complete."""
    from edgebert.modeldir import save_model_dir, weights_bytes, write_manifest

    tmp = Path(tempfile.mkdtemp(prefix=".student.tmp-", dir=run.out))
    try:
        save_model_dir(tmp, run.student[0].auto_model, run.student.tokenizer, run.init_dir)
        for entry in tmp.iterdir():
            target = run.out / entry.name
            if target.is_dir():
                shutil.rmtree(target)
            entry.replace(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    manifest_["metrics"]["model_bytes"] = weights_bytes(run.out)
    manifest_["metrics"]["wall_time_s"] = round(time.perf_counter() - run.started, 2)
    write_manifest(run.out, manifest_)


def run_across(a: Any, teacher_dir: Path, init_dir: Path, out: Path, out_action: str | None, log: Any, procs: Any, started: float) -> dict[str, Any]:
    """The whole cross-tokenizer distillation into `out`; its manifest (checks first, nothing written before them)."""
    from edgebert.artifact import check_output_dir
    from edgebert.data import corpus_fingerprint, load_corpus
    from edgebert.distill.checkpoints import last_complete_checkpoint, refuse_unsafe_pickles, safe_resume

    pooled, sim = check_across(a)
    check_teacher_is_embedder(teacher_dir)
    corpus_list = [a.corpus] if isinstance(a.corpus, (str, Path)) else list(a.corpus)
    check_output_dir(out, True, {"--teacher": teacher_dir, "--student-init": init_dir, "--corpus": corpus_list, "--eval-sts": a.eval_sts})
    run = Across(a, teacher_dir, init_dir, out, log, procs, started)
    run.texts = load_corpus(corpus_list, sentences=a.sentences)[: a.max_passages or None]
    rec, corpus_fp = recipe(a, init_dir, pooled, sim), corpus_fingerprint(corpus_list)
    checkpoint_dir, resume_from = out / "checkpoints", None
    if out_action == "resume" and checkpoint_dir.is_dir():
        _check_same_recipe(checkpoint_dir, rec, corpus_fp, out)
        resume_from = last_complete_checkpoint(checkpoint_dir, log)
        if resume_from is not None:
            refuse_unsafe_pickles(resume_from)
    if procs.main:
        if out_action == "replace":
            shutil.rmtree(out)
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        (checkpoint_dir / "recipe.json").write_text(json.dumps({"recipe": rec, "corpus": corpus_fp}, indent=2) + "\n")
    procs.wait()
    log(f"objective: {OBJECTIVE} (--across-tokenizers); losses pooled {pooled}, sim {sim}")
    teacher_targets(run)
    with safe_resume(resume_from):
        metrics = train(run, pooled, sim, checkpoint_dir, resume_from)
    corpus = {"sources": [str(c) for c in corpus_list], "fingerprint": corpus_fp, "texts": len(run.texts)}
    result = manifest(run, rec, corpus, metrics)
    if procs.main:
        save(run, result)
        if not a.keep_checkpoints:
            shutil.rmtree(checkpoint_dir, ignore_errors=True)
    procs.wait()
    return result


def _check_same_recipe(checkpoint_dir: Path, rec: dict[str, Any], corpus_fp: str, out: Path) -> None:
    saved = checkpoint_dir / "recipe.json"
    if saved.exists():
        previous = json.loads(saved.read_text())
        if previous.get("recipe") != json.loads(json.dumps(rec)) or previous.get("corpus") != corpus_fp:
            raise UserError(f"--resume: the arguments differ from the run being resumed in {out}; pass the same ones (see {saved})")
