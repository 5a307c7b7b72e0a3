"""Vocabulary trimming: keep only the tokens a corpus uses, and slice the embedding table to them.

A small BERT's bytes are dominated by its vocab × width word-embedding table (all-MiniLM-L6-v2: 30,522 × 384 of
22.7M parameters). Most rows are never produced on a given domain's text. `trim_vocab` keeps

- every special/added token (and any token id the config or the post-processor names), with its role;
- every token the corpus produces at least `min_count` times (the most frequent `max_size` overall, if capped);
- with `keep_chars`, every single-character token and its continuation form ("##x"), so unseen words still
  decompose into pieces instead of becoming [UNK];

in their original relative order, and writes a model directory whose word table (and tied MLM decoder, if any) has
only those rows, with a new tokenizer (tokenizer.json and vocab.txt) that differs from the old one only in the
WordPiece vocabulary and the renumbered ids.

Why the corpus tokenises exactly as before (for a Unigram or BPE vocabulary: edgebert/compress/vocab_tokenizer.py):
WordPiece is greedy longest-match-first per word. When every piece the
old tokenizer chose for a word is kept, each longest match is still there and nothing longer was added, so every
step chooses the same piece. With min_count 1 and no cap that holds for every corpus word; the trimmed model then
sees the same rows (renumbered) and gives the same embeddings. Text outside the corpus can tokenise differently
(longer pieces gone): the manifest records how often that happens on held-out text, its [UNK] rate and the cosine
of trimmed vs original sentence embeddings there.
"""

from __future__ import annotations

import copy
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgebert.artifact import atomic_output_dir, check_not_input, check_output_dir
from edgebert.config import SEQ_LEN, VocabConfig
from edgebert.compress.vocab_tokenizer import (
    COUNT_BATCH,
    bpe_parents,
    build_trimmed_tokenizer,
    encode,
    post_processor_tokens,
    tokenization_change,
    piece_prefix,
    tokenizer_state,
)
from edgebert.data import evenly_spaced, load_corpus
from edgebert.errors import UserError, VerificationError
from edgebert.families import Family
from edgebert.modeldir import new_manifest, read_manifest, resolve_pooling, rewritten_outputs, save_model_dir, weights_bytes, write_manifest
from edgebert.modelio import load_for_rewrite, rewrite_task

# Config fields that hold token ids: their tokens are kept and the ids renumbered.
CONFIG_TOKEN_FIELDS = ("pad_token_id", "bos_token_id", "eos_token_id", "sep_token_id", "cls_token_id")
HELDOUT_SHARE = 0.05  # of the corpus, when no held-out text is given (at most HELDOUT_MAX passages)
HELDOUT_MAX = 1000
EMBED_SENTENCES = 1000  # held-out sentences (evenly spaced) for the cosine; only those whose ids changed are embedded
CHECK_PASSAGES = 256  # corpus passages re-tokenised after trimming (evenly spaced) ...
CHECK_EMBED_PASSAGES = 64  # ... and embedded with the reloaded model
RELOAD_TOLERANCE = 1e-5


@dataclass
class VocabSelection:
    """Which old token ids survive (ascending), and why."""

    kept_ids: list[int]
    special: int  # special/added/config tokens
    chars: int  # single characters and their continuation forms (not already special)
    corpus: int  # corpus tokens, and for a BPE the parts they are merged from (not already special or characters)

    @property
    def size(self) -> int:
        return len(self.kept_ids)

    def new_ids(self) -> dict[int, int]:
        """old id -> new id."""
        return {old: new for new, old in enumerate(self.kept_ids)}


@dataclass
class TrimReport:
    """Where the trimmed model went, its vocabulary and the held-out measurements (all also in `manifest`)."""

    out_dir: Path
    kept_ids: list[int]  # old token ids, in new-id order
    vocab_before: int
    vocab_after: int
    unk_rate: float  # held-out [UNK] share of tokens, trimmed tokenizer
    changed_word_share: float  # held-out words tokenised differently
    cosine_mean: float  # held-out sentence embeddings, trimmed vs original
    cosine_min: float
    manifest: dict[str, Any]


def _log(quiet: bool, message: str) -> None:
    if not quiet:
        sys.stderr.write(f"edgebert compress: {message}\n")


# --------------------------------------------------------------------------------------------- text


def split_heldout(texts: list[str]) -> tuple[list[str], list[str]]:
    """(counted, held out): every k-th passage held out, HELDOUT_SHARE of them, at most HELDOUT_MAX."""
    if len(texts) < 2:
        raise UserError("the corpus has a single passage: pass held-out text too, to measure the trimmed vocabulary on")
    n = max(1, min(HELDOUT_MAX, int(len(texts) * HELDOUT_SHARE)))
    step = len(texts) / n
    held = {int(i * step) for i in range(n)}
    return [t for i, t in enumerate(texts) if i not in held], [texts[i] for i in sorted(held)]


# --------------------------------------------------------------------------------------------- selection


def count_tokens(tokenizer: Any, texts: Sequence[str], vocab_size: int, quiet: bool = True) -> np.ndarray:
    """How often the tokenizer produces each id on `texts` (batched, whole texts); progress shows unless `quiet`."""
    from edgebert.progress import Track

    counts = np.zeros(vocab_size, dtype=np.int64)
    with Track("counting tokens", len(texts), "passages", quiet=quiet) as track:
        for start in range(0, len(texts), COUNT_BATCH):
            batch = texts[start : start + COUNT_BATCH]
            ids = encode(tokenizer, batch)["input_ids"]
            flat = np.fromiter((i for seq in ids for i in seq), dtype=np.int64)
            counts += np.bincount(flat, minlength=vocab_size)[:vocab_size]
            track.advance(len(batch))
    return counts


def protected_ids(tokenizer: Any, config: Any, keep_chars: bool) -> tuple[set[int], set[int]]:
    """(special ids, character ids) that are kept whatever the corpus says."""
    state = tokenizer_state(tokenizer)
    vocab = tokenizer.get_vocab()
    special = set(tokenizer.all_special_ids) | set(tokenizer.added_tokens_decoder)
    special |= {vocab[t] for t in post_processor_tokens(state.get("post_processor")) if t in vocab}
    special |= {int(v) for f in CONFIG_TOKEN_FIELDS if isinstance(v := getattr(config, f, None), int) and 0 <= v < len(tokenizer)}
    chars: set[int] = set()
    if keep_chars:
        prefix = piece_prefix(state)
        for token, i in vocab.items():
            body = token[len(prefix) :] if prefix and token.startswith(prefix) else token
            if len(body) <= 1:  # a character, or SentencePiece's bare word start
                chars.add(i)
    return special, chars - special


def check_max_size(max_size: int | None, special: set[int], chars: set[int]) -> None:
    """A UserError when `max_size` cannot even hold the tokens that are always kept."""
    protected = len(special | chars)
    if max_size is not None and max_size < protected:
        raise UserError(
            f"vocabulary max_size {max_size} is smaller than the tokens always kept ({len(special)} special + "
            f"{len(chars)} single characters = {protected}); raise it{' or set keep_chars off' if chars else ''}"
        )


def select_vocab(
    counts: np.ndarray, special: set[int], chars: set[int], min_count: int = 1, max_size: int | None = None,
    parents: dict[int, set[int]] | None = None,
) -> VocabSelection:
    """Specials + characters always; corpus ids with count ≥ min_count, the most frequent first (ties: lower id)
    up to `max_size` in total. With `parents` (a BPE's, `bpe_parents`) a token comes with every part it is merged
    from, or not at all when they would not fit."""
    check_max_size(max_size, special, chars)
    protected = special | chars
    parents = parents or {}
    candidates = [i for i in np.flatnonzero(counts >= min_count).tolist() if i not in protected]
    candidates.sort(key=lambda i: (-int(counts[i]), i))
    kept = set(protected)
    for token in candidates:
        wanted = ({token} | parents.get(token, set())) - kept
        if max_size is not None and len(kept) + len(wanted) > max_size:
            if parents:
                continue  # a rarer token with fewer missing parts may still fit
            break
        kept |= wanted
    return VocabSelection(sorted(kept), len(special), len(chars), len(kept) - len(protected))


# --------------------------------------------------------------------------------------------- weights


def vocab_keys(family: Family, model: Any, with_head: bool) -> list[str]:
    """State-dict keys of `model`'s tensors indexed by token id: the word table (under the base-model attribute of a
    model with a head), and the MLM head's (families.py)."""
    prefix = "" if model.base_model is model else f"{model.base_model_prefix}."
    return [f"{prefix}{family.word_embeddings_key}", *(family.mlm_vocab_keys if with_head else ())]


def slice_vocab(model: Any, family: Family, with_head: bool, kept_ids: list[int]) -> tuple[Any, list[str]]:
    """A new model of the same class whose token-indexed rows are `kept_ids` (config ids renumbered); the sliced keys."""
    import torch

    state = model.state_dict()
    index = torch.tensor(kept_ids, dtype=torch.long)
    sliced = [k for k in vocab_keys(family, model, with_head) if k in state]
    for key in sliced:
        state[key] = state[key].index_select(0, index).clone()
    config = copy.deepcopy(model.config)
    config.vocab_size = len(kept_ids)
    new_ids = dict(zip(kept_ids, range(len(kept_ids))))
    for field in CONFIG_TOKEN_FIELDS:
        value = getattr(config, field, None)
        if isinstance(value, int) and value in new_ids:
            setattr(config, field, new_ids[value])
    from edgebert.pruned_heads import new_like

    new = new_like(model, config)
    try:
        new.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise VerificationError(
            f"{type(model).__name__} has token-indexed tensors that families.py does not list ({exc}); "
            "add them to the family's word_embeddings_key / mlm_vocab_keys"
        ) from exc
    new.tie_weights()
    return new.eval(), sliced


def count_parameters(module: Any) -> int:
    """Distinct parameters (tied weights counted once)."""
    return sum(p.numel() for p in {id(p): p for p in module.parameters()}.values())


# --------------------------------------------------------------------------------------------- the step


def _check_args(min_count: int, max_size: int | None) -> None:
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise UserError(f"vocabulary min_count must be an integer of at least 1, got {min_count!r}")
    if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1):
        raise UserError(f"vocabulary max_size must be a positive integer, got {max_size!r}")


def _embed(base: Any, tokenizer: Any, texts: list[str], pooling: str, family: Family) -> np.ndarray:
    from edgebert.evaluate import embed

    return embed(base, tokenizer, texts, pooling, batch_size=32, max_length=SEQ_LEN, uses_token_type_ids=family.uses_token_type_ids)


def same_ids(old: Any, new: Any, texts: Sequence[str], selection: VocabSelection) -> list[bool]:
    """Per text: whether the new tokenizer gives exactly the old ids, renumbered (so the model sees the same input)."""
    new_ids = selection.new_ids()
    before, after = encode(old, texts)["input_ids"], encode(new, texts)["input_ids"]
    return [b == [new_ids.get(t, -1) for t in a] for a, b in zip(before, after)]


def heldout_cosines(
    base: Any, trimmed_base: Any, old: Any, new: Any, texts: list[str], selection: VocabSelection, pooling: str, family: Family
) -> tuple[np.ndarray, int]:
    """Cosine of trimmed vs original sentence embeddings per text, and how many texts were embedded: only those
    whose ids changed (identical ids through identical rows give identical embeddings, which `_check_saved`
    verifies on corpus passages); the others count as 1."""
    cos = np.ones(len(texts), dtype=np.float64)
    changed = [i for i, same in enumerate(same_ids(old, new, texts, selection)) if not same]
    if changed:
        subset = [texts[i] for i in changed]
        cos[changed] = (_embed(base, old, subset, pooling, family) * _embed(trimmed_base, new, subset, pooling, family)).sum(1)
    return cos, len(changed)


def trim_vocab(
    model: str | Path | None,
    out: str | Path,
    corpus: str | Path | Sequence[str | Path],
    *,
    min_count: int = VocabConfig.min_count,
    keep_chars: bool = True,
    max_size: int | None = VocabConfig.max_size,
    heldout: str | Path | None = None,
    force: bool = False,
    quiet: bool = False,
) -> TrimReport:
    """Write `model` (dir, hub id, or None for the default teacher) with its vocabulary trimmed to `corpus` to `out`.

    corpus: text files (.gz ok), directories of them, dataset names, STS-B csv / SST-2 tsv (their sentences).
    heldout: text to measure the trimmed vocabulary on (same formats); None holds out a slice of the corpus
    (HELDOUT_SHARE, at most HELDOUT_MAX passages) and counts the rest. Bad input raises UserError before anything
    is written; `out` appears only when complete, and never replaces an existing directory without `force`.
    """
    from edgebert.modelio import check_tokenizer_fits, inspect_model_dir

    started = time.perf_counter()
    _check_args(min_count, max_size)
    out, inputs, model_dir = _resolve_paths(model, out, corpus, heldout, force)
    _, family = inspect_model_dir(model_dir)
    family.require("trim")
    texts = load_corpus(corpus)
    counted, held = (texts, load_corpus(heldout)) if heldout is not None else split_heldout(texts)
    tokenizer = _load_tokenizer(model_dir)
    full, with_head = load_for_rewrite(model_dir, family)
    old_vocab = int(full.config.vocab_size)
    check_tokenizer_fits(tokenizer, full.config, model_dir)
    special, chars = protected_ids(tokenizer, full.config, keep_chars)
    check_max_size(max_size, special, chars)

    _log(quiet, f"counting tokens of {len(counted):,} corpus passages")
    counts = count_tokens(tokenizer, counted, old_vocab, quiet)
    selection = select_vocab(counts, special, chars, min_count, max_size, bpe_parents(tokenizer))
    new_tokenizer = build_trimmed_tokenizer(tokenizer, selection.kept_ids)
    trimmed, sliced = slice_vocab(full, family, with_head, selection.kept_ids)
    _log(quiet, f"vocabulary {old_vocab:,} -> {selection.size:,} tokens ({selection.special} special, "
         f"{selection.chars} characters, {selection.corpus} from the corpus)")  # fmt: skip

    source_manifest = read_manifest(model_dir)
    pooling = resolve_pooling(model_dir, family.default_pooling, source_manifest).mode
    change = tokenization_change(tokenizer, new_tokenizer, held)
    probe = evenly_spaced(held, EMBED_SENTENCES)
    cos, embedded = heldout_cosines(full.base_model, trimmed.base_model, tokenizer, new_tokenizer, probe, selection, pooling, family)
    _log(quiet, f"held-out ({len(held):,} texts): [UNK] rate {change.unk_rate:.4%}, words tokenised differently "
         f"{change.changed_word_share:.2%}, cosine to the original embeddings mean {cos.mean():.4f} min {cos.min():.4f}")  # fmt: skip

    dim = int(full.get_parameter(vocab_keys(family, full, with_head)[0]).shape[1])
    block = {
        "vocab_size": {"before": old_vocab, "after": selection.size},
        "kept": {"special": selection.special, "characters": selection.chars, "corpus": selection.corpus},
        "embedding_dim": dim,
        "embedding_parameters": {"before": old_vocab * dim, "after": selection.size * dim},
        "sliced_tensors": sliced,
        "corpus": _corpus_stats(counts, selection, len(counted)),
        "heldout": _heldout_block(heldout, change, cos, len(probe), embedded),
    }
    recipe = _recipe(corpus, min_count, keep_chars, max_size, block["heldout"]["source"])
    params = {"before": count_parameters(full), "after": count_parameters(trimmed)}
    manifest = _manifest(out, model_dir, source_manifest, trimmed, family, pooling, recipe, block, params, rewrite_task(model_dir))

    with atomic_output_dir(out, force=force, inputs=inputs) as work:
        save_model_dir(work, trimmed, new_tokenizer, model_dir)
        write_manifest(work, manifest)
        _log(quiet, "reloading the saved model to check it on the corpus")
        block["corpus_check"] = _check_saved(work, full.base_model, tokenizer, counted, selection, pooling, family)
        _finish_manifest(work, model_dir, manifest, started)
    _log(quiet, f"trimmed model written to {out} ({manifest['metrics']['wall_time_s']} s)")
    return TrimReport(
        out_dir=out, kept_ids=selection.kept_ids, vocab_before=old_vocab, vocab_after=selection.size,
        unk_rate=change.unk_rate, changed_word_share=change.changed_word_share,
        cosine_mean=float(cos.mean()), cosine_min=float(cos.min()), manifest=manifest,
    )  # fmt: skip


def _resolve_paths(
    model: str | Path | None, out: str | Path, corpus: str | Path | Sequence[str | Path], heldout: str | Path | None, force: bool
) -> tuple[Path, dict[str, Any], Path]:
    """(out, the inputs it must not overwrite, the resolved model dir); refuses an unusable `out` before any work."""
    from edgebert import validate
    from edgebert.sources import resolve_model

    validate.path_like("--out", out, optional=False)
    out = Path(out)
    corpus_list = [corpus] if isinstance(corpus, (str, Path)) else list(corpus)
    inputs = {"--model": model, "--trim-vocab": corpus_list, "--vocab-heldout": heldout}
    check_output_dir(out, force, inputs)
    model_dir = Path(resolve_model(model))
    inputs["--model"] = model_dir
    check_not_input(out, inputs)
    return out, inputs, model_dir


def _heldout_block(heldout: str | Path | None, change: Any, cos: np.ndarray, sentences: int, embedded: int) -> dict[str, Any]:
    """The manifest's held-out measurement: where the text came from, tokenisation change, cosine to the source."""
    return {
        "source": str(Path(heldout).expanduser().absolute()) if heldout is not None else "corpus slice (not counted)",
        **change.as_dict(),
        "cosine_to_source": {
            "mean": round(float(cos.mean()), 6),
            "min": round(float(cos.min()), 6),
            "sentences": sentences,
            "embedded": embedded,  # the others tokenise to the same ids: cosine 1 (checked on the corpus below)
        },
    }


def _finish_manifest(work: Path, model_dir: Path, manifest: dict[str, Any], started: float) -> None:
    """Add the saved and source weight sizes and the wall time to the manifest and write it again."""
    manifest["metrics"]["model_bytes"] = weights_bytes(work)
    manifest["metrics"]["parent_model_bytes"] = weights_bytes(model_dir)
    manifest["metrics"]["wall_time_s"] = round(time.perf_counter() - started, 2)
    write_manifest(work, manifest)


def _load_tokenizer(model_dir: Path) -> Any:
    from edgebert.modelio import load_tokenizer

    try:
        return load_tokenizer(model_dir)
    except Exception as exc:  # many failure types, one meaning for the user
        raise UserError(f"cannot load the tokenizer in {model_dir} ({type(exc).__name__}); re-save it") from exc


def _corpus_stats(counts: np.ndarray, selection: VocabSelection, passages: int) -> dict[str, Any]:
    total = int(counts.sum())
    return {
        "passages": passages,
        "tokens": total,
        "distinct_tokens": int((counts > 0).sum()),
        "dropped_token_share": round(1.0 - float(counts[selection.kept_ids].sum()) / max(1, total), 6),
    }


def _recipe(corpus: Any, min_count: int, keep_chars: bool, max_size: int | None, heldout: str) -> dict[str, Any]:
    from edgebert.data import corpus_fingerprint

    sources = [str(s) for s in ([corpus] if isinstance(corpus, (str, Path)) else corpus)]
    paths = [Path(s).expanduser() for s in sources]
    return {
        "corpus": [str(p.absolute()) if p.exists() else s for p, s in zip(paths, sources)],
        "corpus_fingerprint": corpus_fingerprint(sources),
        "min_count": min_count,
        "keep_chars": keep_chars,
        "max_size": max_size,
        "heldout": heldout,
    }


def _manifest(
    out: Path, model_dir: Path, source_manifest: dict[str, Any], trimmed: Any, family: Family, pooling: str,
    recipe: dict[str, Any], block: dict[str, Any], params: dict[str, int], task: str,
) -> dict[str, Any]:  # fmt: skip
    """The trimmed model's edgebert.json: the common fields (step "trim"), plus `vocab_trim` and `parameters`."""
    config = trimmed.config
    model_info = dict(source_manifest.get("model") or {})
    model_info.update({
        "family": family.name,
        "architecture": type(trimmed).__name__,
        "pooling": pooling,
        "hidden_size": int(config.hidden_size),
        "layers": int(getattr(config, family.size_fields[0])),
        "vocab_size": int(config.vocab_size),
        "parameters": count_parameters(trimmed.base_model),
    })  # fmt: skip
    manifest = new_manifest(
        "model", "trim", out.name, model_dir.absolute(), source_manifest,
        parent_name=source_manifest.get("name") or getattr(config, "_name_or_path", None) or model_dir.name,
        recipe=recipe, model=model_info, outputs=rewritten_outputs(task, config), task=task,
        metrics={"cosine_to_source": {**block["heldout"]["cosine_to_source"], "texts": "held-out"}},
    )  # fmt: skip
    return {**manifest, "vocab_trim": block, "parameters": params}


def _check_saved(
    work: Path, base: Any, tokenizer: Any, corpus: list[str], selection: VocabSelection, pooling: str, family: Family
) -> dict[str, Any]:
    """Reload `work` with stock classes (modelio.load_model): corpus passages made of kept pieces must tokenise to
    the same pieces (renumbered) and embed as the original model does."""
    from edgebert.modelio import load_model

    loaded = load_model(work)
    sample = evenly_spaced(corpus, CHECK_PASSAGES)
    new_ids = selection.new_ids()
    unk = tokenizer.unk_token_id
    old_ids, got_ids = encode(tokenizer, sample)["input_ids"], encode(loaded.tokenizer, sample)["input_ids"]
    covered = [i for i, ids in enumerate(old_ids) if unk not in ids and all(t in new_ids for t in ids)]
    for i in covered:
        if got_ids[i] != [new_ids[t] for t in old_ids[i]]:
            raise VerificationError(f"the trimmed tokenizer splits a corpus passage differently: {sample[i][:80]!r}")
    texts = [sample[i] for i in covered][:CHECK_EMBED_PASSAGES]
    diff = 0.0
    if texts:
        expected = _embed(base, tokenizer, texts, pooling, family)
        got = _embed(loaded.embedder.encoder, loaded.tokenizer, texts, pooling, family)
        diff = float(np.abs(got - expected).max())
    if diff > RELOAD_TOLERANCE:
        raise VerificationError(f"the saved trimmed model does not embed corpus passages as the original (max abs diff {diff:.2e})")
    return {"passages": len(sample), "same_tokens": len(covered), "embedded": len(texts), "max_abs_diff": diff}
