"""Task distillation: a sequence-classifier teacher into a sequence-classifier student of the same family.

The student's encoder is built as for any distillation (layers copied from the teacher through the layer map, see
`edgebert.distill.student`); it is then wrapped in the family's `AutoModelForSequenceClassification` class with
the teacher's labels, and every tensor the encoder does not hold (pooler, classifier) is copied from the
teacher's classifier when its shape matches (a narrower student keeps those it cannot take at random init, and
says so). Losses: DistilBERT's soft targets on the task logits (KL at T, × T²) plus the hidden-state cosine.
Checkpoints are chosen on accuracy against a labelled set (`--eval-labels`), with agreement with the teacher.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from edgebert.errors import UserError

EVAL_BATCH = 64


def load_teacher_classifier(model_dir: Path, family: Any) -> Any:
    """The teacher as its sequence-classification class (eval mode, frozen); UserError when weights are missing."""
    from transformers import AutoModelForSequenceClassification

    from edgebert.modelio import load_weights

    model, info = load_weights(AutoModelForSequenceClassification, model_dir)
    missing = list(info.get("missing_keys", []))
    if missing:
        raise UserError(f"the classifier teacher in {model_dir} is missing {len(missing)} tensors (e.g. {missing[0]}); re-save it")
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def classifier_student(encoder_student: nn.Module, teacher: nn.Module, base_attr: str) -> tuple[nn.Module, dict[str, Any]]:
    """`encoder_student` (a masked-LM student whose base model is at `base_attr`) as a sequence classifier with the
    teacher's labels: its encoder tensors kept, the rest (pooler, classifier) copied from `teacher` where shapes
    match. Returns the classifier and its init record (which tensors came from where)."""
    import copy

    from transformers import AutoModelForSequenceClassification

    from edgebert.pruned_heads import build_from_config

    config = copy.deepcopy(encoder_student.config)
    for key in ("num_labels", "id2label", "label2id", "problem_type"):
        setattr(config, key, copy.deepcopy(getattr(teacher.config, key)))
    config.architectures = [type(teacher).__name__] if config.model_type == teacher.config.model_type else None
    config._attn_implementation = "eager"
    student = build_from_config(AutoModelForSequenceClassification, config)
    if config.architectures is None:
        student.config.architectures = [type(student).__name__]
    encoder = {f"{base_attr}.{k}": v for k, v in getattr(encoder_student, base_attr).state_dict().items()}
    sd_t = teacher.state_dict()
    record: dict[str, list[str]] = {"encoder": [], "teacher": [], "random": []}
    with torch.no_grad():
        for key, tensor in student.state_dict().items():
            for source, where in ((encoder, "encoder"), (sd_t, "teacher")):
                if key in source and source[key].shape == tensor.shape:
                    tensor.copy_(source[key])
                    record[where].append(key)
                    break
            else:
                record["random"].append(key)
    info = {
        "classifier_from_teacher": record["teacher"],
        "classifier_random": record["random"],
        "encoder_tensors": len(record["encoder"]),
    }
    return student, info


def load_classifier_init(init_dir: Path, family: Any, teacher: nn.Module) -> tuple[nn.Module, dict[str, Any]]:
    """--student-init for a classifier teacher: a sequence classifier with the teacher's labels, as it is."""
    from transformers import AutoModelForSequenceClassification

    from edgebert.modelio import load_weights

    student, info = load_weights(AutoModelForSequenceClassification, init_dir)
    missing = family.required_missing(info.get("missing_keys", []))
    if missing:
        raise UserError(
            f"--student-init {init_dir} is not a sequence classifier ({missing[0]} missing); a classifier teacher "
            "needs a classifier student with its labels"
        )
    if dict(student.config.id2label) != dict(teacher.config.id2label):
        raise UserError(f"--student-init {init_dir} has labels {student.config.id2label}, the teacher {teacher.config.id2label}; they must match")
    return student, {"kind": "student_init", "from": str(init_dir), "classifier": "own"}


class TaskDistillationModel(nn.Module):
    """The classifier student plus learned width projections; forward gives its logits and compared hidden states."""

    def __init__(self, student: nn.Module, cos_pairs: list[tuple[int, int]], projections: nn.ModuleList | None = None) -> None:
        from edgebert.distill.tied import tied_duplicate_keys

        super().__init__()
        self.student = student
        self.projections = projections
        self.cos_pairs = list(cos_pairs)  # (student hidden_states index, teacher hidden_states index)
        self._keys_to_ignore_on_save: list[str] | None = tied_duplicate_keys(self.state_dict()) or None

    def tie_weights(self) -> None:
        self.student.tie_weights()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None, **_: Any) -> dict[str, Any]:
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        out = self.student(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=bool(self.cos_pairs), **extra)
        hidden = []
        for i, (s_idx, _) in enumerate(self.cos_pairs):
            h = out.hidden_states[s_idx]
            hidden.append(self.projections[i](h) if self.projections is not None else h)
        return {"logits": out.logits, "hidden": hidden}


def teacher_forward(teacher: nn.Module, inputs: dict[str, torch.Tensor], need_hidden: bool) -> Any:
    """The frozen classifier teacher on a batch (logits, and hidden states when the cosine needs them)."""
    device = inputs["input_ids"].device
    if next(teacher.parameters()).device != device:
        teacher.to(device)
    extra = {"token_type_ids": inputs["token_type_ids"]} if inputs.get("token_type_ids") is not None else {}
    with torch.no_grad():
        return teacher(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"], output_hidden_states=need_hidden, **extra)


def predict(model: nn.Module, tokenizer: Any, texts: list[str], max_length: int, batch_size: int = EVAL_BATCH) -> list[int]:
    """argmax of a sequence classifier's logits for each text (eval mode restored afterwards)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    predictions: list[int] = []
    try:
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                enc = tokenizer(texts[start : start + batch_size], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
                enc = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
                predictions.extend(model(**enc).logits.argmax(-1).tolist())
    finally:
        model.train(was_training)
    return predictions


@dataclass
class LabelledEval:
    """A labelled set ready to score a classifier: texts, gold class ids and the teacher's predictions."""

    texts: list[str]
    gold: list[int]
    teacher: list[int]
    max_length: int
    source: str

    def score(self, model: nn.Module, tokenizer: Any) -> dict[str, float]:
        """Accuracy against the gold labels and agreement with the teacher's predictions."""
        predicted = predict(model, tokenizer, self.texts, self.max_length)
        n = len(predicted)
        return {
            "accuracy": round(sum(p == g for p, g in zip(predicted, self.gold)) / n, 5),
            "agreement": round(sum(p == t for p, t in zip(predicted, self.teacher)) / n, 5),
        }


def labelled_eval(texts: list[str], gold: list[int], source: str, teacher: nn.Module, tokenizer: Any, max_length: int) -> LabelledEval:
    """The labelled set (gold labels already mapped to the teacher's class ids) with the teacher's predictions."""
    return LabelledEval(texts, gold, predict(teacher, tokenizer, texts, max_length), max_length, source)
