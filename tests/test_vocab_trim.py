"""Vocabulary trimming (edgebert/compress/vocab.py): same corpus tokens and embeddings, consistent tokenizer files,
sliced MLM heads for BERT and ALBERT, the held-out measurements, and clear refusals of bad input."""

from __future__ import annotations

import csv
import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from edgebert.compress.vocab import select_vocab, trim_vocab
from edgebert.data import load_corpus
from edgebert.errors import UserError

# [PAD] not first, so that the config's pad_token_id must be renumbered too.
SPECIALS = ["[unused0]", "[PAD]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
# Whole words, continuation pieces, and decoys that greedy longest-match never chooses on the corpus below
# ("worl" loses to "world", "gui" to "guitar", ...): trimming must drop them without changing any corpus token.
WORDS = [
    "the", "a", "an", "is", "of", "to", "and", "in", "on", "with", "man", "woman", "dog", "cat", "guitar", "music",
    "stage", "hello", "world", "nation", "people", "year", "play", "sing", "danc", "un", "quick", "brown", "fox",
    "lazy", "jump", "over", "state", "union",
]  # fmt: skip
PIECES = ["##ing", "##s", "##ed", "##er", "##ist", "##al", "##able", "##ly", "##e", "##ion", "##ers"]
DECOYS = ["worl", "gui", "musi", "wom", "peop", "##ings", "##erly", "natio", "##ista", "hell", "stag", "unio"]
CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing the guitar on the stage!",
    "The woman sings, the guitarist plays; people are dancing.",
    "Hello world: the state of the union, year 1790.",
    "Musical players jumped quickly over cats and dogs.",
    "A nation of singers and dancers (and guitarists).",
]
HELDOUT = ["Unplayable music, sadly.", "The woman is dancing with a dog.", "Zebras quietly jumped over the wall."]


def _vocab() -> list[str]:
    chars = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789.,!?'-$%()/:;")
    return list(dict.fromkeys(SPECIALS + chars + ["##" + c for c in chars] + WORDS + PIECES + DECOYS))


def build_model(directory: Path, kind: str = "bert") -> Path:
    """A random tiny model over `_vocab()`: 'bert' (BertModel), 'bert-mlm' (BertForMaskedLM) or 'albert-mlm'
    (a factorised AlbertForMaskedLM, as edgebert's distilled students are), with a BertTokenizerFast."""
    from transformers import AlbertConfig, AlbertForMaskedLM, BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast

    directory.mkdir(parents=True)
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(_vocab()) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(vocab_file), do_lower_case=True)
    shape = {
        "vocab_size": len(_vocab()), "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64, "max_position_embeddings": 64, "pad_token_id": SPECIALS.index("[PAD]"),
    }  # fmt: skip
    torch.manual_seed(0)
    if kind == "albert-mlm":
        config = AlbertConfig(embedding_size=16, num_hidden_groups=2, inner_group_num=1, bos_token_id=None, eos_token_id=None, **shape)
        model = AlbertForMaskedLM(config)
    else:
        model = (BertForMaskedLM if kind == "bert-mlm" else BertModel)(BertConfig(**shape))
    with torch.no_grad():  # a non-zero MLM bias, so slicing it is checked
        for name, p in model.named_parameters():
            if name.endswith("predictions.bias"):
                p.copy_(torch.randn_like(p))
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vocab-models")
    return {kind: build_model(root / kind, kind) for kind in ("bert", "bert-mlm", "albert-mlm")}


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    """A corpus directory: one plain and one gzipped text file."""
    directory = tmp_path / "corpus"
    directory.mkdir()
    (directory / "a.txt").write_text("\n".join(CORPUS[:3]) + "\n")
    with gzip.open(directory / "b.txt.gz", "wt") as fh:
        fh.write("\n\n".join(CORPUS[3:]) + "\n")
    return directory


@pytest.fixture()
def heldout(tmp_path: Path) -> Path:
    """Held-out text as an STS-B style csv (sentence1, sentence2, score)."""
    path = tmp_path / "dev.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([[HELDOUT[0], HELDOUT[1], "2.5"], [HELDOUT[2], HELDOUT[1], "1.0"]])
    return path


def _tokenizer(path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, use_fast=True)


def _sentence_embeddings(path: Path, texts: list[str]) -> np.ndarray:
    from edgebert.evaluate import embed
    from edgebert.modelio import load_model

    loaded = load_model(path)
    return embed(loaded.embedder.encoder, loaded.tokenizer, texts, loaded.pooling)


def test_corpus_tokenises_and_embeds_exactly_as_before(models, corpus, heldout, tmp_path) -> None:
    out = tmp_path / "trimmed"
    report = trim_vocab(models["bert"], out, [corpus], heldout=heldout, quiet=True)
    old, new = _tokenizer(models["bert"]), _tokenizer(out)
    new_id = {o: n for n, o in enumerate(report.kept_ids)}
    for text in CORPUS:
        assert new.tokenize(text) == old.tokenize(text)
        assert new(text)["input_ids"] == [new_id[i] for i in old(text)["input_ids"]]
    np.testing.assert_allclose(_sentence_embeddings(out, CORPUS), _sentence_embeddings(models["bert"], CORPUS), atol=1e-6)
    # the decoys and unused entries are gone; every character and its ## form stayed; the size really shrank
    kept = set(new.get_vocab())
    assert not kept & set(DECOYS) and "[unused0]" not in kept
    assert {"w", "##w", "z", "##z", "7", "##7"} <= kept
    assert report.vocab_after == len(new) < report.vocab_before == len(_vocab())
    from safetensors.torch import load_file

    table = load_file(str(out / "model.safetensors"))["embeddings.word_embeddings.weight"]
    original = load_file(str(models["bert"] / "model.safetensors"))["embeddings.word_embeddings.weight"]
    assert torch.equal(table, original[report.kept_ids])


def test_tokenizer_files_are_consistent_and_keep_their_settings(models, corpus, heldout, tmp_path) -> None:
    out = tmp_path / "trimmed"
    trim_vocab(models["bert"], out, [corpus], heldout=heldout, quiet=True)
    old, new = _tokenizer(models["bert"]), _tokenizer(out)
    state = json.loads((out / "tokenizer.json").read_text())
    vocab_lines = sorted(state["model"]["vocab"], key=state["model"]["vocab"].get)
    if (out / "vocab.txt").exists():  # transformers 4 writes one beside tokenizer.json, transformers 5 does not
        assert (out / "vocab.txt").read_text().splitlines() == vocab_lines
    assert list(range(len(vocab_lines))) == sorted(state["model"]["vocab"].values())
    assert json.loads((out / "config.json").read_text())["vocab_size"] == len(vocab_lines) == len(new)
    original = json.loads(old.backend_tokenizer.to_str())
    for part in ("normalizer", "pre_tokenizer", "decoder"):
        assert state[part] == original[part], part
    assert {k: v for k, v in state["model"].items() if k != "vocab"} == {k: v for k, v in original["model"].items() if k != "vocab"}
    # special tokens keep their roles under their new ids, in tokenizer.json, vocab.txt and config.json
    for attr in ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"):
        token, token_id = getattr(new, attr), getattr(new, f"{attr}_id")
        assert token == getattr(old, attr) and vocab_lines[token_id] == token
    assert [a["id"] for a in state["added_tokens"]] == [new.convert_tokens_to_ids(a["content"]) for a in state["added_tokens"]]
    assert (new.pad_token_id, new.unk_token_id) == (0, 1)  # [unused0], [unused1] around them are gone
    assert json.loads((out / "config.json").read_text())["pad_token_id"] == new.pad_token_id == 0
    encoded = new("HELLO World", "the dog")
    assert new.convert_ids_to_tokens(encoded["input_ids"]) == ["[CLS]", "hello", "world", "[SEP]", "the", "dog", "[SEP]"]
    assert encoded["token_type_ids"] == [0, 0, 0, 0, 1, 1, 1]
    assert new.do_lower_case and new.tokenize("ÉCOLE Zürich") == old.tokenize("ÉCOLE Zürich")


@pytest.mark.parametrize("kind", ["bert-mlm", "albert-mlm"])
def test_mlm_head_and_factorised_tables_are_sliced(models, corpus, heldout, tmp_path, kind) -> None:
    import transformers

    from edgebert.families import family_for

    out = tmp_path / "trimmed"
    report = trim_vocab(models[kind], out, [corpus], heldout=heldout, quiet=True)
    cls = transformers.AlbertForMaskedLM if kind.startswith("albert") else transformers.BertForMaskedLM
    before, after = cls.from_pretrained(models[kind]).eval(), cls.from_pretrained(out).eval()
    family = family_for(after.config.model_type)
    table = after.get_input_embeddings().weight
    assert table.shape == (report.vocab_after, 16 if kind.startswith("albert") else 32)
    assert after.get_output_embeddings().weight is table  # still tied
    assert set(report.manifest["vocab_trim"]["sliced_tensors"]) >= {f"{family.mlm_base_attr}.{family.word_embeddings_key}", family.mlm_bias_key}
    old_tok, new_tok = _tokenizer(models[kind]), _tokenizer(out)
    with torch.no_grad():
        old_logits = before(**old_tok(CORPUS, padding=True, return_tensors="pt")).logits
        new_logits = after(**new_tok(CORPUS, padding=True, return_tensors="pt")).logits
    torch.testing.assert_close(new_logits, old_logits[..., report.kept_ids], atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(_sentence_embeddings(out, CORPUS), _sentence_embeddings(models[kind], CORPUS), atol=1e-6)


def test_manifest_records_sizes_and_heldout_measurements(models, corpus, heldout, tmp_path) -> None:
    out = tmp_path / "trimmed"
    report = trim_vocab(models["bert"], out, [corpus], heldout=heldout, quiet=True)
    manifest = json.loads((out / "edgebert.json").read_text())
    block = manifest["vocab_trim"]
    assert (manifest["kind"], manifest["step"]) == ("model", "trim") and manifest["parent"] == str(models["bert"].absolute())
    assert manifest["recipe"]["min_count"] == 1 and manifest["model"]["vocab_size"] == report.vocab_after
    assert block["vocab_size"] == {"before": len(_vocab()), "after": report.vocab_after}
    assert block["embedding_parameters"] == {"before": len(_vocab()) * 32, "after": report.vocab_after * 32}
    assert manifest["parameters"]["before"] - manifest["parameters"]["after"] == (len(_vocab()) - report.vocab_after) * 32
    assert sum(block["kept"].values()) == report.vocab_after
    assert block["corpus"]["passages"] == len(CORPUS) and block["corpus"]["dropped_token_share"] == 0
    assert block["corpus_check"]["same_tokens"] == len(CORPUS) and block["corpus_check"]["max_abs_diff"] <= 1e-5
    held = block["heldout"]
    assert held["source"] == str(heldout) and held["sentences"] == len(HELDOUT)
    # "unplayable" lost "##able" (never chosen on the corpus) and decomposes further: changed, but no [UNK]
    assert 0 < held["changed_word_share"] == report.changed_word_share < 1
    assert held["unk_rate"] == {"before": 0.0, "after": 0.0}
    assert held["tokens"]["after"] > held["tokens"]["before"]
    cosine = held["cosine_to_source"]
    assert 0 < cosine["embedded"] < len(HELDOUT) and cosine["min"] < 1.0 and cosine["mean"] == pytest.approx(report.cosine_mean, abs=1e-6)
    assert manifest["metrics"]["model_bytes"] < manifest["metrics"]["parent_model_bytes"]


def test_without_characters_unseen_words_become_unknown(models, corpus, heldout, tmp_path) -> None:
    report = trim_vocab(models["bert"], tmp_path / "trimmed", [corpus], heldout=heldout, keep_chars=False, quiet=True)
    new = _tokenizer(tmp_path / "trimmed")
    assert "z" not in new.get_vocab() and "[UNK]" in new.tokenize("zebras")
    assert report.unk_rate > 0 and report.manifest["vocab_trim"]["kept"]["characters"] == 0
    for text in CORPUS:  # still exact on the corpus
        assert new.tokenize(text) == _tokenizer(models["bert"]).tokenize(text)


def test_min_count_and_max_size_drop_rare_tokens(models, corpus, heldout, tmp_path) -> None:
    full = trim_vocab(models["bert"], tmp_path / "full", [corpus], heldout=heldout, quiet=True)
    rare = trim_vocab(models["bert"], tmp_path / "rare", [corpus], heldout=heldout, min_count=2, quiet=True)
    assert rare.vocab_after < full.vocab_after
    old, new = _tokenizer(models["bert"]), _tokenizer(tmp_path / "rare")
    assert any(new.tokenize(t) != old.tokenize(t) for t in CORPUS)  # a once-seen word now decomposes
    assert rare.manifest["vocab_trim"]["corpus"]["dropped_token_share"] > 0
    capped = trim_vocab(models["bert"], tmp_path / "capped", [corpus], heldout=heldout, max_size=full.vocab_after - 3, quiet=True)
    assert capped.vocab_after == full.vocab_after - 3 and set(capped.kept_ids) < set(full.kept_ids)


def test_select_vocab_order_caps_and_ties() -> None:
    counts = np.array([0, 9, 1, 5, 5, 2, 0, 7])
    special, chars = {0}, {6}
    assert select_vocab(counts, special, chars).kept_ids == [0, 1, 2, 3, 4, 5, 6, 7]
    assert select_vocab(counts, special, chars, min_count=5).kept_ids == [0, 1, 3, 4, 6, 7]
    # cap 5: the 2 protected + the 3 most frequent (9, 7, then the lower id of the tied 5s), in original id order
    selection = select_vocab(counts, special, chars, max_size=5)
    assert selection.kept_ids == [0, 1, 3, 6, 7] and (selection.special, selection.chars, selection.corpus) == (1, 1, 3)
    assert selection.new_ids() == {0: 0, 1: 1, 3: 2, 6: 3, 7: 4}
    with pytest.raises(UserError, match="smaller than the tokens always kept"):
        select_vocab(counts, special, chars, max_size=1)


def test_load_corpus_takes_dirs_gz_and_tables(corpus, heldout) -> None:
    assert load_corpus([corpus]) == CORPUS
    assert load_corpus(heldout) == [HELDOUT[0], HELDOUT[1], HELDOUT[2]]  # sentences only, deduplicated


def test_heldout_defaults_to_an_uncounted_corpus_slice(models, corpus, tmp_path) -> None:
    report = trim_vocab(models["bert"], tmp_path / "trimmed", [corpus], quiet=True)
    block = report.manifest["vocab_trim"]
    assert block["heldout"]["source"].startswith("corpus slice") and block["heldout"]["sentences"] == 1
    assert block["corpus"]["passages"] == len(CORPUS) - 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"corpus": ["missing.txt"]}, "does not exist"),
        ({"corpus": ["EMPTY"]}, "is empty"),
        ({"min_count": 0}, "min_count must be an integer of at least 1"),
        ({"max_size": 0}, "max_size must be a positive integer"),
        ({"max_size": 10}, "smaller than the tokens always kept"),
        ({"out": "EXISTING"}, "exists and is not empty; pass --force"),
        ({"model": "MODEL_AS_OUT", "force": True}, "is the --model"),
    ],
)
def test_bad_input_is_one_clear_line_and_writes_nothing(models, corpus, tmp_path, change, message) -> None:
    (tmp_path / "empty.txt").write_text("\n  \n")
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "keep.txt").write_text("mine")
    args = {"model": models["bert"], "out": tmp_path / "out", "corpus": [corpus], "min_count": 1, "max_size": None}
    args.update(change)
    args["corpus"] = [tmp_path / "empty.txt" if c == "EMPTY" else tmp_path / c if c == "missing.txt" else c for c in args["corpus"]]
    if args["out"] == "EXISTING":
        args["out"] = tmp_path / "existing"
    if args["model"] == "MODEL_AS_OUT":
        args["model"] = args["out"] = tmp_path / "model-copy"
        import shutil

        shutil.copytree(models["bert"], args["model"])
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(UserError, match=message) as err:
        trim_vocab(args.pop("model"), args.pop("out"), args.pop("corpus"), quiet=True, **args)
    assert "\n" not in str(err.value)
    assert sorted(os.listdir(tmp_path)) == before and not (tmp_path / "out").exists()
    assert (tmp_path / "existing" / "keep.txt").read_text() == "mine"


def test_force_replaces_an_existing_output(models, corpus, heldout, tmp_path) -> None:
    out = tmp_path / "trimmed"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    report = trim_vocab(models["bert"], out, [corpus], heldout=heldout, force=True, quiet=True)
    assert not (out / "stale.txt").exists() and (out / "edgebert.json").exists() and report.out_dir == out


@pytest.mark.integration
def test_packaged_teacher_trimmed_to_a_sotu_slice(packaged_teacher, shared_data, tmp_path) -> None:
    with gzip.open(shared_data / "corpus" / "sotu.txt.gz", "rt", encoding="utf-8") as fh:
        lines = [line.strip() for _, line in zip(range(3000), fh) if line.strip()]
    (tmp_path / "sotu-slice.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "teacher-sotu"
    report = trim_vocab(packaged_teacher, out, [tmp_path / "sotu-slice.txt"], heldout=shared_data / "stsb" / "dev.csv", quiet=True)
    assert 5000 < report.vocab_after < 15000 and report.vocab_before == 30522
    old, new = _tokenizer(packaged_teacher), _tokenizer(out)
    new_id = {o: n for n, o in enumerate(report.kept_ids)}
    sample = lines[::15]
    for text in sample:
        assert new(text)["input_ids"] == [new_id[i] for i in old(text)["input_ids"]]
    texts = sample[:48]
    np.testing.assert_allclose(_sentence_embeddings(out, texts), _sentence_embeddings(packaged_teacher, texts), atol=1e-5)
    held = json.loads((out / "edgebert.json").read_text())["vocab_trim"]["heldout"]
    assert held["source"].endswith("stsb/dev.csv") and held["sentences"] > 2800
    assert isinstance(held["unk_rate"]["after"], float) and 0 <= held["unk_rate"]["after"] < 0.01
    assert 0 < held["changed_word_share"] < 1 and -1 <= held["cosine_to_source"]["min"] <= held["cosine_to_source"]["mean"] < 1


# ------------------------------------------------------------------------------------------ edgebert compress CLI


def test_cli_trims_alone_and_after_pruning(models, corpus, heldout, tmp_path, run_cli) -> None:
    src = models["bert-mlm"]
    before = json.loads((src / "config.json").read_text())
    code, out, err = run_cli("compress", "--model", str(src), "--out", str(tmp_path / "trim"), "--trim-vocab", str(corpus), "--vocab-heldout", str(heldout), "--quiet")
    assert code == 0, err
    summary = json.loads(out.strip().splitlines()[-1])
    trimmed = json.loads((tmp_path / "trim" / "config.json").read_text())
    assert summary["vocab"]["after"] == trimmed["vocab_size"] < before["vocab_size"]

    code, out, err = run_cli(
        "compress", "--model", str(src), "--out", str(tmp_path / "both"), "--heads-to-prune", '{"0": [1]}', "--seq-len", "32",
        "--trim-vocab", str(corpus), "--vocab-heldout", str(heldout), "--quiet",
    )
    assert code == 0, err
    both = json.loads((tmp_path / "both" / "config.json").read_text())
    assert both["vocab_size"] == trimmed["vocab_size"]
    assert both["pruned_heads"] == {"0": [1]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["both", "corpus", "dev.csv", "trim"]  # no staging dir left
    manifest = json.loads((tmp_path / "both" / "edgebert.json").read_text())
    assert manifest["step"] == "trim" and manifest["parent"] is None  # the pruned scratch model was not kept
    assert manifest["parent_manifest"]["step"] == "compress" and manifest["parent_manifest"]["parent"] == str(src.resolve())


def test_cli_refuses_existing_out_before_pruning(models, corpus, tmp_path, run_cli) -> None:
    out = tmp_path / "taken"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, _, err = run_cli("compress", "--model", str(models["bert"]), "--out", str(out), "--heads-to-prune", '{"0": [1]}', "--trim-vocab", str(corpus))
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "taken"]
