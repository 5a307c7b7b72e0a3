"""distill()'s argument checks: types and ranges, loss weights, the output directory, the student's family and
--student-init, precision and checkpoint intervals. Each raises a one-line UserError before anything is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edgebert import validate
from edgebert.config import DistillConfig
from edgebert.errors import UserError
from edgebert.modeldir import MANIFEST

CHECKPOINTS = "checkpoints"
MIN_SEQ_LEN = 8  # tokens per training sequence
_D = DistillConfig()  # check_numbers' defaults


def check_numbers(
    *,
    steps: Any = _D.steps, batch_size: Any = _D.batch_size, grad_accum: Any = _D.grad_accum, seq_len: Any = _D.seq_len,
    lr: Any = _D.lr, warmup_ratio: Any = _D.warmup_ratio, weight_decay: Any = _D.weight_decay, max_grad_norm: Any = _D.max_grad_norm,
    temperature: Any = _D.temperature, alpha_mlm: Any = None, alpha_ce: Any = None, alpha_cos: Any = None,
    alpha_pooled: Any = None, mlm_probability: Any = None, student_layers: Any = None, student_hidden: Any = None,
    student_heads: Any = None, student_ffn: Any = None, embedding_dim: Any = None, layer_groups: Any = None, student_head_steps: Any = None,
    eval_steps: Any = None, save_steps: Any = None, logging_steps: Any = None, head_steps: Any = _D.head_steps,
    head_batch_size: Any = _D.head_batch_size, head_lr: Any = _D.head_lr, max_passages: Any = None, seed: Any = _D.seed,
    threads: Any = None, eval_labels: Any = None, alpha_sim: Any = _D.alpha_sim, **_: Any,
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
    check_losses(alpha_mlm, alpha_ce, alpha_cos, alpha_pooled, mlm_probability, alpha_sim=alpha_sim)
    validate.path_like("--eval-labels", eval_labels)
    shape = {"--student-layers": student_layers, "--student-hidden": student_hidden, "--student-heads": student_heads,
             "--student-ffn": student_ffn, "--embedding-dim": embedding_dim, "--layer-groups": layer_groups}  # fmt: skip
    for name, value in shape.items():
        v.optional_integer(name, value, 1)
    if layer_groups is not None and student_layers is not None:
        check_group_count(layer_groups, student_layers)
    for name, value in (("--eval-steps", eval_steps), ("--save-steps", save_steps), ("--logging-steps", logging_steps)):
        v.optional_integer(name, value, 1)
    v.optional_integer("--student-head-steps", student_head_steps, 0)
    v.integer("--head-steps", head_steps, 0)
    v.integer("head_batch_size", head_batch_size, 1)
    v.number("head_lr", head_lr, 0.0, low_open=True)
    v.optional_integer("--max-passages", max_passages, 1)
    v.seed("--seed", seed)
    v.optional_integer("--threads", threads, 1)


def check_group_count(groups: int, layers: int) -> None:
    """UserError unless `--layer-groups` divides the student's passes (ALBERT runs each module for layers / groups)."""
    if not 1 <= groups <= layers or layers % groups:
        raise UserError(f"--layer-groups {groups} must divide --student-layers {layers} (each layer module runs for layers / groups passes)")


def check_losses(
    alpha_mlm: Any, alpha_ce: Any, alpha_cos: Any, alpha_pooled: Any, mlm_probability: Any, classifier: bool = False,
    alpha_sim: Any = _D.alpha_sim,
) -> None:
    """Loss weights and masking share: ranges of those given (None = auto), and, once all are known, that they fit
    (`classifier`: a sequence-classifier teacher, whose soft targets are its task logits on any text)."""
    alphas = {"--alpha-mlm": alpha_mlm, "--alpha-ce": alpha_ce, "--alpha-cos": alpha_cos, "--alpha-pooled": alpha_pooled}
    for name, value in alphas.items():
        validate.optional_number(name, value, 0.0)
    validate.number("--alpha-sim", alpha_sim, 0.0)
    validate.optional_number("--mlm-probability", mlm_probability, 0.0, 1.0, high_open=True)
    if None not in alphas.values() and not any(alphas.values()) and not alpha_sim:
        raise UserError("all loss weights are zero (--alpha-mlm, --alpha-ce, --alpha-cos, --alpha-pooled, --alpha-sim); set at least one")
    if classifier and alpha_mlm:
        raise UserError("the teacher is a sequence classifier: it has no masked-LM head for --alpha-mlm; set it to 0 (task distillation)")
    if classifier and alpha_sim:
        raise UserError("--alpha-sim compares sentence embeddings and the teacher is a sequence classifier; set it to 0 (task distillation)")
    if mlm_probability == 0 and (alpha_mlm or (alpha_ce and not classifier)):
        raise UserError("--mlm-probability 0 (unmasked text) leaves nothing for --alpha-mlm/--alpha-ce to score; set them to 0")


def check_out(out: Path, force: bool, resume: bool) -> str | None:
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


def check_student_family(a: Any, teacher_config: Any, family: Any) -> None:
    """--student-family: a known family, re-layable from the teacher's, not with --embedding-dim / --student-init, and
    one that shares layers when --layer-groups is given."""
    if a.student_family is None or a.student_family == family.name:
        return
    from edgebert.families import family_named
    from edgebert.relayout import check_relayout

    target = family_named(a.student_family)
    if a.embedding_dim is not None or a.student_init is not None:
        flag = "--embedding-dim" if a.embedding_dim is not None else "--student-init"
        raise UserError(f"--student-family {target.name} and {flag} do not go together (each decides the student's family)")
    if a.layer_groups is not None and target.layer_groups_field is None:
        raise UserError(f"--layer-groups shares layers as ALBERT does; a {target.name} student (--student-family) cannot share them")
    check_relayout(teacher_config, family, target)


def check_init_tokenizer(init_dir: Path, teacher_tokenizer: Any) -> None:
    from edgebert.modelio import load_tokenizer

    try:
        tokenizer = load_tokenizer(init_dir)
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"cannot load the tokenizer of --student-init {init_dir} ({type(exc).__name__}); re-save it") from exc
    try:
        check_same_tokenizer(tokenizer, teacher_tokenizer, init_dir)
    except UserError as exc:
        raise UserError(f"{exc}, or add --across-tokenizers to distil sentence embeddings across tokenizers") from exc


def check_precision(precision: str) -> str:
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


def check_intervals(steps: int, save_steps: int | None, eval_steps: int | None, evaluate: bool) -> tuple[int, int]:
    """(save_steps, eval_steps) with their defaults; UserError when the best checkpoint could not be kept."""
    interval = max(1, min(steps, max(50, steps // 10)))
    save_steps = save_steps or eval_steps or interval
    eval_steps = eval_steps or save_steps
    if evaluate and save_steps % eval_steps:
        raise UserError(f"--save-steps {save_steps} must be a multiple of --eval-steps {eval_steps} to keep the best checkpoint")
    return save_steps, eval_steps


def check_init_head(init_dir: Path, init_family: Any, family: Any, head_needed: bool) -> None:
    """UserError when the MLM/soft-target losses need a head that --student-init lacks and cannot get."""
    from edgebert.modelio import has_mlm_head

    if head_needed and init_family is not family and not has_mlm_head(init_dir, init_family):
        raise UserError(
            f"--student-init {init_dir} has no masked-LM head and is a {init_family.name} model, unlike the {family.name} "
            "teacher, so the teacher's head cannot be copied in; use --alpha-mlm 0 --alpha-ce 0 (hidden-state losses only)"
        )


TOKENIZER_PROBE = "Hello, World! The QUICK brown fox: naïve café, 3.5% on 2024-01-15 😍."


def check_same_tokenizer(student_tokenizer: Any, teacher_tokenizer: Any, init_dir: Any) -> None:
    """UserError unless both tokenizers have the same vocabulary and split a probe sentence into the same ids."""
    if student_tokenizer.get_vocab() != teacher_tokenizer.get_vocab():
        raise UserError(
            f"--student-init {init_dir} has a different tokenizer vocabulary from the teacher's; "
            "teacher and student must share token ids"
        )
    if student_tokenizer(TOKENIZER_PROBE)["input_ids"] != teacher_tokenizer(TOKENIZER_PROBE)["input_ids"]:
        raise UserError(
            f"--student-init {init_dir} tokenizes text differently from the teacher (e.g. lower-casing or accents); "
            "teacher and student must share a tokenizer"
        )
