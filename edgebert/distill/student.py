"""Build a student from a teacher: fewer layers (DistilBERT shape) and/or narrower (TinyBERT shape), optionally
with ALBERT-style factorised embeddings (`embedding_dim`; see edgebert/distill/factorize.py).

The copy reads like nanoGPT's `from_pretrained`: every student tensor is named after the teacher tensor it
comes from (layer i of the student ← layer `layer_map[i]` of the teacher), and shapes are asserted before
copying. A narrower student cannot take the teacher's matrices; it gets the teacher's token, position and
type embeddings projected onto their top principal directions (an SVD of the word-embedding table) and
random transformer layers; the hidden-state losses then go through learned student→teacher projections.
"""

from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import nn

from edgebert.distill.checks import check_group_count
from edgebert.errors import UserError
from edgebert.families import FAMILIES, Family
from edgebert.distill.factorize import principal_basis
from edgebert.pruned_heads import build_from_config, pruned_plan


@dataclass
class StudentSpec:
    """The student's shape; None means "derive from the teacher" (see `resolve`)."""

    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    ffn: int | None = None
    layer_map: list[int] | None = None
    embedding_dim: int | None = None  # ALBERT-style factorised embeddings (vocab × E, then E × hidden)
    layer_groups: int | None = None  # ALBERT-style cross-layer sharing: `layers` passes over this many layer modules

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class StudentShape:
    """A fully resolved student shape plus the teacher layer each student layer starts from."""

    layers: int
    hidden: int
    heads: int
    ffn: int
    layer_map: list[int]
    teacher_layers: int
    teacher_hidden: int
    embedding_dim: int | None = None
    layer_groups: int | None = None
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        self.kind = "distilbert" if self.hidden == self.teacher_hidden else "tinybert"

    @property
    def same_width(self) -> bool:
        return self.hidden == self.teacher_hidden

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_layer_map(teacher_layers: int, student_layers: int) -> list[int]:
    """Teacher layers spread evenly over the depth, first and last included, halves rounded up (6→3: [0, 3, 5])."""
    if student_layers == 1:
        return [teacher_layers - 1]
    step = (teacher_layers - 1) / (student_layers - 1)
    return [int(i * step + 0.5) for i in range(student_layers)]


def parse_layer_map(text: str | None) -> list[int] | None:
    """'0,2,4' → [0, 2, 4]; None/'' → None."""
    if not text:
        return None
    try:
        return [int(x) for x in re.split(r"[,\s]+", text.strip()) if x]
    except ValueError as exc:
        raise UserError(f"--layer-map '{text}' must be comma-separated teacher layer indices, e.g. 0,2,5") from exc


def resolve_shape(teacher_config: Any, spec: StudentSpec, family: Family) -> StudentShape:
    """Fill in the spec's blanks from the teacher and reject impossible students (UserError)."""
    f_layers, f_hidden, f_heads, f_ffn = family.size_fields
    t_layers, t_hidden = int(getattr(teacher_config, f_layers)), int(getattr(teacher_config, f_hidden))
    t_heads, t_ffn = int(getattr(teacher_config, f_heads)), int(getattr(teacher_config, f_ffn))
    layers = spec.layers if spec.layers is not None else (len(spec.layer_map) if spec.layer_map else max(1, t_layers // 2))
    hidden = spec.hidden if spec.hidden is not None else t_hidden
    if layers < 1:
        raise UserError(f"--student-layers must be at least 1, got {layers}")
    if layers > t_layers:
        raise UserError(f"--student-layers {layers} is deeper than the teacher ({t_layers} layers); a student must be smaller")
    if hidden < 1:
        raise UserError(f"--student-hidden must be positive, got {hidden}")
    if hidden > t_hidden:
        raise UserError(f"--student-hidden {hidden} is wider than the teacher ({t_hidden}); a student must be smaller")
    head_dim = t_hidden // t_heads
    heads = spec.heads if spec.heads is not None else (t_heads if hidden == t_hidden else max(1, hidden // head_dim))
    if heads < 1 or hidden % heads:
        raise UserError(f"--student-hidden {hidden} is not divisible by --student-heads {heads}; choose a divisor")
    ffn = spec.ffn if spec.ffn is not None else (t_ffn if hidden == t_hidden else hidden * t_ffn // t_hidden)
    if ffn < 1:
        raise UserError(f"--student-ffn must be positive, got {ffn}")
    if ffn > t_ffn:
        raise UserError(f"--student-ffn {ffn} is wider than the teacher's ({t_ffn}); a student must be smaller")
    layer_map = list(spec.layer_map) if spec.layer_map else default_layer_map(t_layers, layers)
    if len(layer_map) != layers:
        raise UserError(f"--layer-map has {len(layer_map)} entries but the student has {layers} layers")
    if any(i < 0 or i >= t_layers for i in layer_map):
        raise UserError(f"--layer-map {layer_map} names layers outside the teacher's 0..{t_layers - 1}")
    embedding_dim = spec.embedding_dim
    if embedding_dim is not None:
        check_factorizable(teacher_config, family)
    if embedding_dim is not None and not 2 <= embedding_dim <= hidden:
        raise UserError(
            f"--embedding-dim {embedding_dim} must be between 2 and the student's hidden size {hidden} "
            "(a factorised embedding narrower than the hidden size is what saves bytes)"
        )
    groups = spec.layer_groups
    if groups is not None:
        check_shareable(groups, layers, embedding_dim, family)
    return StudentShape(layers, hidden, heads, ffn, layer_map, t_layers, t_hidden, embedding_dim, groups)


def check_shareable(groups: int, layers: int, embedding_dim: int | None, family: Family) -> None:
    """UserError unless `--layer-groups` can share this student's layers: an ALBERT student (factorised embeddings, or
    an ALBERT teacher's), and a group count that divides the passes (ALBERT runs each module for layers / groups)."""
    if embedding_dim is None and family.layer_groups_field is None:
        raise UserError(
            f"--layer-groups shares layers as ALBERT does, and a {family.name} teacher's student is a {family.name} model; "
            "add --embedding-dim (e.g. 128) for an ALBERT student with factorised embeddings"
        )
    check_group_count(groups, layers)


def check_factorizable(teacher_config: Any, family: Family) -> None:
    """UserError unless `--embedding-dim` can factorise this teacher's embeddings (see edgebert/distill/factorize.py).

    ALBERT and ELECTRA teachers with embedding_size < hidden_size are factorised already: their students keep the
    teacher's embedding tables and projection as they are (copied), so --embedding-dim is refused for them."""
    field_e = family.embedding_size_field
    if field_e and int(getattr(teacher_config, field_e)) != int(getattr(teacher_config, family.size_fields[1])):
        raise UserError(
            f"--embedding-dim: this {family.name} teacher's embeddings are already factorised (embedding_size "
            f"{getattr(teacher_config, field_e)}); its student keeps them as they are, so drop --embedding-dim"
        )
    if not family.embedding_factorizable:
        able = ", ".join(f.name for f in FAMILIES if f.embedding_factorizable)
        raise UserError(
            f"--embedding-dim cannot factorise a {family.name} teacher's embeddings into an ALBERT student exactly "
            f"(ALBERT needs token-type tables and positions counted from 0); it supports {able} teachers"
        )


def student_groups(teacher_config: Any, shape: StudentShape, family: Family) -> int:
    """How many layer modules the student of a `family` with layer groups (ALBERT) holds: `--layer-groups`, else the
    teacher's own when it shares layers and they divide the student's passes (published ALBERT: 1, the one shared
    layer run for every pass), else one a pass."""
    if shape.layer_groups is not None:
        return shape.layer_groups
    groups = family.distinct_layers(teacher_config)
    return groups if family.shares_layers(teacher_config) and shape.layers % groups == 0 else shape.layers


def student_family(shape: StudentShape, teacher_family: Family) -> Family:
    """The student's family: the teacher's, or ALBERT when the embeddings are factorised."""
    from edgebert.families import ALBERT

    return ALBERT if shape.embedding_dim else teacher_family


def student_config(teacher_config: Any, shape: StudentShape, family: Family) -> Any:
    config = copy.deepcopy(teacher_config)
    for name, value in zip(family.size_fields, (shape.layers, shape.hidden, shape.heads, shape.ffn)):
        setattr(config, name, value)
    for name in family.per_layer_fields:  # each copied layer keeps its own entry (ModernBERT: its attention kind)
        if getattr(teacher_config, name, None) is not None:
            setattr(config, name, [getattr(teacher_config, name)[i] for i in shape.layer_map])
    if family.layer_groups_field:
        setattr(config, family.layer_groups_field, student_groups(teacher_config, shape, family))
    config.pruned_heads = {}
    config.architectures = [family.mlm_class]
    config.tie_word_embeddings = True
    return config


def module_layer_map(teacher_config: Any, student_config_: Any, layer_map: list[int], family: Family) -> list[int]:
    """For each layer module of the student, the teacher layer module it is copied from.

    Student pass i is matched with teacher pass layer_map[i]; a module takes the teacher module run by the teacher
    pass matched with the module's last pass (`factorize.module_sources`; a shared teacher's one layer: [0])."""
    from edgebert.distill.factorize import module_sources

    t_passes = family.pass_layers(teacher_config)
    return [t_passes[t] for t in module_sources(layer_map, family.pass_layers(student_config_))]


def teacher_key(student_key: str, layer_map: list[int], layers_prefix: str) -> str:
    """The teacher tensor a student tensor is copied from: '…layer.1.x' → '…layer.{layer_map[1]}.x'."""
    pattern = re.escape(layers_prefix) + r"\.(\d+)\."
    return re.sub(pattern, lambda m: f"{layers_prefix}.{layer_map[int(m.group(1))]}.", student_key, count=1)


def copy_from_teacher(student: nn.Module, teacher: nn.Module, layer_map: list[int], family: Family, strict: bool) -> dict[str, list[str]]:
    """Copy teacher tensors into the student by name; `strict`: every tensor must exist with the same shape.

    Returns {"copied": [...], "random": [...]} (student keys), for the manifest and the tests.
    """
    layers_prefix = family.mlm_layers_prefix()
    sd_s = student.state_dict()
    sd_t = teacher.state_dict()
    copied, random_init = [], []
    with torch.no_grad():
        for key, tensor in sd_s.items():
            source = teacher_key(key, layer_map, layers_prefix)
            if source not in sd_t:
                if strict:
                    raise AssertionError(f"teacher has no tensor {source} for student tensor {key}")
                random_init.append(key)
                continue
            if sd_t[source].shape != tensor.shape:
                if strict:
                    raise AssertionError(f"shape mismatch {key} {tuple(tensor.shape)} vs {source} {tuple(sd_t[source].shape)}")
                random_init.append(key)
                continue
            tensor.copy_(sd_t[source])
            copied.append(key)
    return {"copied": copied, "random": random_init}


def project_embeddings(student: nn.Module, teacher: nn.Module, family: Family) -> list[str]:
    """Narrow student: teacher embeddings (word, position, type) projected onto the word table's top directions.

    Tables whose width does not change (a factorised family's embedding_size) were copied and stay as they are."""
    prefix = f"{family.mlm_base_attr}.{family.embeddings_prefix}"
    norm = f"{family.mlm_base_attr}.{family.embedding_module('norm')}."
    word_key = f"{family.mlm_base_attr}.{family.word_embeddings_key}"
    sd_s, sd_t = student.state_dict(), teacher.state_dict()
    hidden = sd_s[word_key].shape[1]
    basis = principal_basis(sd_t[word_key], hidden)
    done = []
    with torch.no_grad():
        for key, tensor in sd_s.items():
            if not key.startswith(prefix) or key.startswith(norm) or key not in sd_t:
                continue
            source = sd_t[key]
            if source.shape == tensor.shape:  # factorised tables (ELECTRA, ALBERT) keep their width: copied as they are
                continue
            if source.dim() == 2 and source.shape[0] == tensor.shape[0] and source.shape[1] == basis.shape[0]:
                tensor.copy_(source.float() @ basis)
                done.append(key)
    return done


def make_projections(student_hidden: int, teacher_hidden: int, count: int) -> nn.ModuleList | None:
    """Learned maps from student to teacher width for the hidden-state losses (None when widths match)."""
    if student_hidden == teacher_hidden:
        return None
    return nn.ModuleList(nn.Linear(student_hidden, teacher_hidden) for _ in range(count))


def build_student(
    teacher: nn.Module, spec: StudentSpec, family: Family, seed: int = 0, word_weights: torch.Tensor | None = None
) -> tuple[nn.Module, StudentShape, dict[str, Any]]:
    """A masked-LM student initialised from `teacher` (a masked-LM model of `family`).

    `word_weights` [V] only matters for factorised embeddings: how much each word row counts in the SVD."""
    import transformers

    shape = resolve_shape(teacher.config, spec, family)
    if shape.embedding_dim:
        from edgebert.distill.factorize import build_factorized_student

        student, init = build_factorized_student(teacher, shape, family, seed=seed, word_weights=word_weights)
        init.pop("_factorization", None)
        return student, shape, init
    config = student_config(teacher.config, shape, family)
    modules = module_layer_map(teacher.config, config, shape.layer_map, family)
    if shape.same_width:  # a pruned teacher's layers keep their heads in the student (module j ← teacher module)
        pruned = pruned_plan(teacher.config)
        config.pruned_heads = {j: sorted(pruned[m]) for j, m in enumerate(modules) if pruned.get(m)}
    torch.manual_seed(seed)
    student = build_from_config(getattr(transformers, family.mlm_class), config)
    if shape.same_width and shape.ffn == int(getattr(teacher.config, family.size_fields[3])):
        report = copy_from_teacher(student, teacher, modules, family, strict=True)
        init = {"kind": shape.kind, "copied_tensors": len(report["copied"]), "random_tensors": 0}
    else:
        report = copy_from_teacher(student, teacher, modules, family, strict=False)
        projected = [] if shape.same_width else project_embeddings(student, teacher, family)
        init = {
            "kind": shape.kind,
            "copied_tensors": len(report["copied"]),
            "projected_embeddings": projected,
            "random_tensors": len([k for k in report["random"] if k not in projected]),
        }
    if family.layer_groups_field and (family.shares_layers(config) or family.shares_layers(teacher.config)):
        from edgebert.distill.factorize import shared_record

        init["layer_sharing"] = shared_record(family.pass_layers(config), shape.layer_map, shape.same_width)
    student.tie_weights()
    return student, shape, init


# ---------------------------------------------------------------------------------------------- --student-init
# An existing model directory as the student (e.g. a pruned copy of the teacher to heal). Its shape is its own:
# layers may keep different numbers of heads (config.pruned_heads, built by edgebert.pruned_heads) and the FFN may be
# narrower. The hidden-state losses compare it with the teacher token by token, so the width and the tokenizer
# must be the teacher's.


def check_student_init(init_config: Any, init_family: Family, teacher_config: Any, teacher_family: Family, init_dir: Any) -> None:
    """UserError unless the model in `init_dir` can be distilled into from the teacher (masked-LM class, width)."""
    if init_family.mlm_class is None:
        raise UserError(f"--student-init {init_dir} is a {init_family.name} model, which cannot be trained as a student yet")
    s_hidden = int(getattr(init_config, init_family.size_fields[1]))
    t_hidden = int(getattr(teacher_config, teacher_family.size_fields[1]))
    if s_hidden != t_hidden:
        raise UserError(
            f"--student-init {init_dir} has hidden size {s_hidden} but the teacher has {t_hidden}; a student started from "
            "a model dir must have the teacher's width (to build a narrower student use --student-hidden instead)"
        )


def init_shape(init_config: Any, init_family: Family, teacher_config: Any, teacher_family: Family, layer_map: list[int] | None) -> StudentShape:
    """The StudentShape of an existing model; `layer_map` (default: evenly spaced) pairs its layers with the teacher's.

    `heads` is the config's head count before pruning; see `heads_per_layer` for what each layer keeps."""
    layers, hidden, heads, ffn = (int(getattr(init_config, f)) for f in init_family.size_fields)
    t_layers = int(getattr(teacher_config, teacher_family.size_fields[0]))
    t_hidden = int(getattr(teacher_config, teacher_family.size_fields[1]))
    layer_map = list(layer_map) if layer_map else default_layer_map(t_layers, layers)
    if len(layer_map) != layers:
        raise UserError(f"--layer-map has {len(layer_map)} entries but the --student-init model has {layers} layers")
    if any(i < 0 or i >= t_layers for i in layer_map):
        raise UserError(f"--layer-map {layer_map} names layers outside the teacher's 0..{t_layers - 1}")
    field_e = init_family.embedding_size_field
    embedding_dim = int(getattr(init_config, field_e)) if field_e else None
    groups = init_family.distinct_layers(init_config) if init_family.shares_layers(init_config) else None
    return StudentShape(layers, hidden, heads, ffn, layer_map, t_layers, t_hidden, embedding_dim, groups)


def heads_per_layer(config: Any, family: Family) -> list[int]:
    """Heads each layer module keeps (one entry for a shared layer): the config's count minus its `config.pruned_heads`."""
    _, _, heads, _ = (int(getattr(config, f)) for f in family.size_fields)
    layers = family.distinct_layers(config)
    pruned = {int(k): set(v) for k, v in (getattr(config, "pruned_heads", None) or {}).items()}
    return [heads - len(pruned.get(i, ())) for i in range(layers)]


def load_student_init(init_dir: Any, family: Family) -> tuple[nn.Module, bool]:
    """The model in `init_dir` as its family's masked-LM class, and whether the MLM head is its own.

    `load_weights` rebuilds the pruned shapes from config.pruned_heads and the config's intermediate size; a
    missing MLM head is the only tolerated gap (the caller copies the teacher's in, or saves the encoder only)."""
    import transformers

    from edgebert.modelio import has_mlm_head, load_weights

    own_head = has_mlm_head(init_dir, family)
    model, info = load_weights(getattr(transformers, family.mlm_class), init_dir)
    missing = [k for k in info.get("missing_keys", []) if not family.is_mlm_head_key(k)]
    if missing:
        raise UserError(f"the weights in --student-init {init_dir} do not match its config (e.g. {missing[0]} missing); re-save it")
    return model, own_head


def copy_mlm_head(student: nn.Module, teacher: nn.Module, family: Family) -> list[str]:
    """The teacher's MLM head (transform, LayerNorm, bias) into a same-family, same-width student, shapes asserted.

    The decoder stays tied to the student's own word embeddings. Returns the copied student keys."""
    sd_t = teacher.state_dict()
    copied = []
    with torch.no_grad():
        for key, tensor in student.state_dict().items():
            if not family.is_mlm_head_key(key) or key == family.mlm_decoder_key:
                continue
            source = sd_t[key]
            assert source.shape == tensor.shape, f"head shape mismatch {key} {tuple(tensor.shape)} vs {tuple(source.shape)}"
            tensor.copy_(source)
            copied.append(key)
    student.tie_weights()
    return copied


def freeze_embedding_parameters(student: nn.Module, family: Family) -> int:
    """Stop training the embedding block (tables, LayerNorm, a factorised projection); returns the frozen count."""
    frozen = 0
    for module in family.embedding_parts(getattr(student, family.mlm_base_attr)).values():
        for p in module.parameters():
            p.requires_grad_(False)
            frozen += p.numel()
    return frozen


def freeze_unused_head(student: nn.Module, family: Family) -> int:
    """Stop training the MLM head when no loss reads its logits (its tensors tied to the word embeddings stay
    trainable): no gradient reaches it anyway, and DistributedDataParallel refuses parameters without one.
    Returns the frozen count."""
    tied = {id(p) for p in family.embedding_parts(getattr(student, family.mlm_base_attr))["word"].parameters()}
    frozen = 0
    for p in family.mlm_head(student).parameters():
        if id(p) not in tied and p.requires_grad:
            p.requires_grad_(False)
            frozen += p.numel()
    return frozen
