"""Re-lay a model of one family into another family's classes when that is a pure re-layout: same computation,
other names (a BERT teacher as a DistilBERT, RoBERTa or ELECTRA model, and back).

Every post-LN layer maps role by role (`families.WEIGHT_ROLES`); the embeddings by role, with three adjustments:
- a family without token types (DistilBERT) gets the type-0 row added into every position row (exact for inputs of
  one segment, all that an embedder or a masked-LM student sees), and one with token types that the source lacks
  gets a zero row; a family whose tokenizers give no token types (RoBERTa) keeps the type-0 row only;
- positions counted from pad id + 1 (RoBERTa) are shifted by that many rows (`Family.position_offset`);
- an embedding projection (ELECTRA with embedding_size != hidden_size) only goes where the target has one.
The masked-LM head maps by role too (`Family.mlm_head_parts`, its bias; the decoder stays tied to the word table).
The result is checked by running both models on the same ids: outputs (and MLM logits) must agree within
`TOLERANCE`, else a one-line UserError says why it is not a pure re-layout (e.g. DistilBERT's LayerNorm eps is
fixed at 1e-12, RoBERTa's and ELECTRA's MLM heads use gelu whatever the teacher's activation).
"""

from __future__ import annotations

from typing import Any

from edgebert.errors import UserError
from edgebert.families import Family

TOLERANCE = 1e-5
# Families whose layers are one post-LN layer per pass; ALBERT (shared layers, factorised embeddings) is not
# re-laid: its students come from --embedding-dim (edgebert/distill/factorize.py).
RELAYOUT_FAMILIES = ("bert", "distilbert", "roberta", "electra")


def check_relayout(config: Any, source: Family, target: Family) -> None:
    """UserError (one line) unless `source` models can be re-laid into `target` classes at all."""
    for family in (source, target):
        if family.name not in RELAYOUT_FAMILIES:
            raise UserError(
                f"a {source.name} model cannot be re-laid as {target.name}: re-layout covers {', '.join(RELAYOUT_FAMILIES)} "
                "(ALBERT shares layers; an ALBERT student comes from --embedding-dim)"
            )
    if _projected(config, source) and target.embedding_module("projection") is None:
        raise UserError(
            f"a {source.name} model with embedding_size {getattr(config, source.embedding_size_field)} cannot be re-laid "
            f"as {target.name}, which has no embedding projection"
        )


def _projected(config: Any, family: Family) -> bool:
    field = family.embedding_size_field
    return bool(field) and int(getattr(config, field)) != int(getattr(config, family.size_fields[1]))


def relayout_config(config: Any, source: Family, target: Family) -> Any:
    """The `target` config computing what `config` (a `source` config) computes."""
    from transformers import AutoConfig

    kwargs: dict[str, Any] = dict(zip(target.size_fields, (int(getattr(config, f)) for f in source.size_fields)))
    kwargs[target.activation_field] = getattr(config, source.activation_field)
    pad = int(config.pad_token_id or 0)
    offset = pad + 1 if target.positions_from_pad else 0
    kwargs.update(
        vocab_size=int(config.vocab_size), pad_token_id=pad, layer_norm_eps=float(getattr(config, "layer_norm_eps", 1e-12)),
        max_position_embeddings=int(config.max_position_embeddings) - source.position_offset(config) + offset,
        bos_token_id=getattr(config, "bos_token_id", None), eos_token_id=getattr(config, "eos_token_id", None),
    )  # fmt: skip
    if target.embedding_module("token_type") is not None:
        kwargs["type_vocab_size"] = int(getattr(config, "type_vocab_size", 1)) if target.uses_token_type_ids else 1
    if target.embedding_size_field:
        width = getattr(config, source.embedding_size_field) if source.embedding_size_field else kwargs[target.size_fields[1]]
        kwargs[target.embedding_size_field] = int(width)
    if getattr(config, "id2label", None) and len(config.id2label) > 2:
        kwargs["id2label"] = dict(config.id2label)
    return AutoConfig.for_model(target.model_types[0], **kwargs)


def relayout(model: Any, source: Family, target: Family, with_head: bool) -> tuple[Any, list[str]]:
    """`model` (a `source` base model, or its masked-LM model when `with_head`) as a `target` model, verified.

    Returns (the new model in eval mode, notes on what was folded or shifted). UserError when not a pure re-layout."""
    import torch
    import transformers

    check_relayout(model.config, source, target)
    config = relayout_config(model.config, source, target)
    config.architectures = [target.mlm_class if with_head else _base_class(target)]
    config._attn_implementation = "eager"
    new = (getattr(transformers, target.mlm_class) if with_head else transformers.AutoModel.from_config)(config)
    s_base = getattr(model, source.mlm_base_attr) if with_head else model
    t_base = getattr(new, target.mlm_base_attr) if with_head else new
    with torch.no_grad():
        notes = _copy_embeddings(s_base, t_base, source, target, model.config)
        from edgebert.distill.factorize import copy_layers

        layers = int(getattr(model.config, source.size_fields[0]))
        copy_layers(t_base, s_base, list(range(layers)), target, source)
        if with_head:
            _copy_head(model, new, source, target)
    new.eval()
    verify_relayout(model.eval(), new, source, target, with_head)
    return new, notes


def _base_class(family: Family) -> str:
    return family.mlm_class.replace("ForMaskedLM", "Model")


def _copy_embeddings(s_base: Any, t_base: Any, source: Family, target: Family, config: Any) -> list[str]:
    """Word, position, token-type, LayerNorm (and projection) tables of `s_base` into `t_base` (see module doc)."""

    s_emb, t_emb = source.embedding_parts(s_base), target.embedding_parts(t_base)
    notes = []
    t_emb["word"].weight.copy_(s_emb["word"].weight)
    positions = s_emb["position"].weight[source.position_offset(config):]
    s_types = s_emb["token_type"].weight if "token_type" in s_emb else None
    if "token_type" not in t_emb and s_types is not None:
        positions = positions + s_types[0]
        notes.append("token type 0 added into every position row (one-segment inputs)")
    t_pos = t_emb["position"].weight
    offset = t_pos.shape[0] - positions.shape[0]
    t_pos.zero_()
    t_pos[offset:].copy_(positions)
    if offset:
        notes.append(f"positions shifted by {offset} rows (counted from pad id + 1)")
    if "token_type" in t_emb:
        rows = t_emb["token_type"].weight
        rows.zero_()
        if s_types is not None:
            rows.copy_(s_types[: rows.shape[0]])
        else:
            notes.append("token-type table of zeros (the source has none)")
    for name in ("weight", "bias"):
        getattr(t_emb["norm"], name).copy_(getattr(s_emb["norm"], name))
    for name in source.optional_modules:
        if getattr(s_base, name, None) is not None and getattr(t_base, name, None) is None:
            notes.append(f"{name} not carried ({target.name} has none; embeddings and the MLM head do not use it)")
    if "projection" in s_emb and "projection" in t_emb:
        t_emb["projection"].load_state_dict(s_emb["projection"].state_dict())
    return notes


def _copy_head(model: Any, new: Any, source: Family, target: Family) -> None:
    """The MLM head's transform, its LayerNorm and the output bias by role; the decoder is tied to the word table."""
    for role, _ in source.mlm_head_parts:
        new_part, old_part = target.mlm_head_part(new, role), source.mlm_head_part(model, role)
        for name in ("weight", "bias"):
            getattr(new_part, name).copy_(getattr(old_part, name))
    new.get_parameter(target.mlm_bias_key).copy_(model.get_parameter(source.mlm_bias_key))
    new.tie_weights()


def verify_relayout(model: Any, new: Any, source: Family, target: Family, with_head: bool, seed: int = 0) -> float:
    """Max |difference| of the hidden states (and MLM logits) of both models on random one-segment ids; UserError
    above `TOLERANCE`."""
    import torch

    config = model.config
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, int(config.vocab_size), (2, 12), generator=generator)
    ids[ids == int(config.pad_token_id or 0)] = (int(config.pad_token_id or 0) + 1) % int(config.vocab_size)
    mask = torch.ones_like(ids)
    with torch.no_grad():
        a = model(**source.encoder_inputs(ids, mask, torch.zeros_like(ids)), output_hidden_states=True)
        b = new(**target.encoder_inputs(ids, mask, torch.zeros_like(ids)), output_hidden_states=True)
    diff = float((a.hidden_states[-1] - b.hidden_states[-1]).abs().max())
    if with_head:
        diff = max(diff, float((a.logits - b.logits).abs().max()))
    if not diff <= TOLERANCE:
        raise UserError(
            f"re-laying this {source.name} model as {target.name} changes its outputs (max difference {diff:.2e} > "
            f"{TOLERANCE:g}; e.g. a LayerNorm eps or head activation {target.name} fixes), so it is not a pure re-layout"
        )
    return diff
