"""Healing a pruned model: `distill(student_init=...)` on pruned dirs and `edgebert compress --heal-steps`."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from edgebert.modelio import load_weights
import torch
from conftest import WORDS, build_tiny_bert

from edgebert.config import TRIPLE_LOSS  # the losses these tests were written for (a teacher without an MLM head gets cosine-only by default)
from edgebert.compress.compress import compress
from edgebert.compress.heal import HealConfig, parse_losses
from edgebert.distill import distill
from edgebert.errors import UserError

CALIBRATION_SAMPLES = 24
PRUNE = dict(prune_heads=0.5, prune_ffn=0.5, calibration_samples=CALIBRATION_SAMPLES, seq_len=32, quiet=True)
FAST = dict(steps=3, batch_size=4, seq_len=24, head_steps=3, head_batch_size=4, logging_steps=1, quiet=True)


def _weights(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(directory / "model.safetensors"))


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 layers x 4 heads whose layers matter: Linear weights drawn with std 0.2 (BERT's 0.02 leaves a random
    model so close to its embeddings that pruning anything barely moves it, and there would be nothing to heal)."""
    from transformers import BertModel

    path = build_tiny_bert(tmp_path_factory.mktemp("src") / "source", layers=3, hidden=32, heads=4, ffn=64, seed=7)
    model = load_weights(BertModel, path)[0]
    torch.manual_seed(7)
    with torch.no_grad():
        for module in model.encoder.modules():
            if isinstance(module, torch.nn.Linear):
                module.weight.normal_(0.0, 0.2)
    model.save_pretrained(path, safe_serialization=True)
    return path


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """CALIBRATION_SAMPLES passages to rank units on, then 32 held-out ones that compress measures fidelity on."""
    rng = random.Random(11)
    path = tmp_path_factory.mktemp("calib") / "calib.txt"
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 16))) for _ in range(CALIBRATION_SAMPLES + 32)) + "\n")
    return path


@pytest.fixture(scope="module")
def pruned(source: Path, calibration: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pruned") / "pruned"
    compress(source, out, calibration=calibration, **PRUNE)
    return out


def _held_out_cosine(model_dir: Path, source: Path, calibration: Path) -> float:
    """Mean cosine of `model_dir`'s sentence embeddings to the source's on the held-out calibration passages."""
    from edgebert.modelio import load_model

    texts = calibration.read_text().splitlines()[CALIBRATION_SAMPLES:]
    vectors = []
    for directory in (model_dir, source):
        loaded = load_model(directory)
        batch = loaded.tokenizer(texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            vectors.append(loaded.embedder(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])[0])
    return float(torch.nn.functional.cosine_similarity(*vectors, dim=-1).mean())


def _assert_same_pruned_shape(a: Path, b: Path) -> None:
    config_a, config_b = (json.loads((d / "config.json").read_text()) for d in (a, b))
    assert config_a["pruned_heads"] == config_b["pruned_heads"] and config_a["pruned_heads"]
    assert config_a["intermediate_size"] == config_b["intermediate_size"] == 32
    weights_a, weights_b = _weights(a), _weights(b)
    for key, tensor in weights_b.items():
        if "pooler" in key:  # a masked-LM student has none
            continue
        other = weights_a.get(key, weights_a.get(f"bert.{key}"))
        assert other is not None and other.shape == tensor.shape, key


def _assert_reloads_to_the_saved_weights(directory: Path, cls_name: str = "AutoModel") -> None:
    """edgebert's loader narrows the heads config.pruned_heads names: the loaded model, put back at the stored (stock)
    shapes, must be exactly what was saved."""
    import transformers

    from edgebert.pruned_heads import widened_state_dict

    model, info = load_weights(getattr(transformers, cls_name), directory)
    assert not [k for k in info["missing_keys"] if "pooler" not in k]
    saved = _weights(directory)
    state = widened_state_dict(model)
    for key, tensor in saved.items():
        name = key if key in state else key.removeprefix("bert.")
        assert torch.equal(state[name], tensor), key


# ------------------------------------------------------------------------------------------ compress --heal-steps


@pytest.fixture(scope="module")
def healed(source: Path, calibration: Path, tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("healed") / "healed"
    heal = HealConfig(steps=40, corpus=[str(tiny_corpus)], lr=1e-3, batch_size=8, cache_dir=str(out.parent / "cache"))
    compress(source, out, calibration=calibration, heal=heal, **PRUNE)
    return out


def test_healing_raises_the_cosine_to_source_on_held_out_text(source: Path, calibration: Path, pruned: Path, healed: Path) -> None:
    before, after = _held_out_cosine(pruned, source, calibration), _held_out_cosine(healed, source, calibration)
    assert before < 0.97  # pruning did damage (so there is something to heal)
    assert after > before + 0.01, (before, after)
    m = json.loads((healed / "edgebert.json").read_text())
    record = m["healing"]
    assert record["kept"] == "healed" and record["steps"] == 40
    assert record["cosine_to_source"]["before"] == json.loads((pruned / "edgebert.json").read_text())["metrics"]["cosine_to_source"]
    assert record["cosine_to_source"]["after"]["mean"] > record["cosine_to_source"]["before"]["mean"]
    assert m["metrics"]["cosine_to_source"] == record["cosine_to_source"]["after"]
    assert m["recipe"]["heal"]["losses"] == parse_losses("cos=1,pooled=1").as_dict()
    assert record["teacher_head"] == "unused" and record["student_mlm_head"] is None
    assert record["loss_last"]["loss"] < record["loss_first"]["loss"]


def test_healed_model_keeps_its_pruned_shape_and_reloads(source: Path, pruned: Path, healed: Path) -> None:
    _assert_same_pruned_shape(healed, pruned)
    _assert_reloads_to_the_saved_weights(healed)
    h, p, s = _weights(healed), _weights(pruned), _weights(source)
    assert not torch.equal(h["encoder.layer.1.intermediate.dense.weight"], p["encoder.layer.1.intermediate.dense.weight"])
    assert torch.equal(h["embeddings.word_embeddings.weight"], s["embeddings.word_embeddings.weight"])  # frozen
    assert torch.equal(h["pooler.dense.weight"], s["pooler.dense.weight"])  # the student trains none: the source's
    assert not any(k.startswith("cls.") for k in h)  # the source had no MLM head, nor has its healed copy
    assert (healed / "modules.json").exists() == (source / "modules.json").exists()


def test_a_heal_that_hurts_is_not_kept(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    """A BERT with its small initial weights barely notices one pruned head; lr 1.0 then wrecks the layers: the
    manifest says so and the unhealed weights are written."""
    plan = '{"1": [2]}'
    unhealed = tmp_path / "unhealed"
    compress(tiny_bert, unhealed, heads_to_prune=plan, quiet=True)
    heal = HealConfig(steps=3, corpus=[str(tiny_corpus)], lr=1.0, batch_size=4)
    report = compress(tiny_bert, tmp_path / "out", heads_to_prune=plan, heal=heal, quiet=True)
    record = report.manifest["healing"]
    assert record["cosine_to_source"]["before"]["mean"] > 0.99
    assert record["cosine_to_source"]["after"]["mean"] < record["cosine_to_source"]["before"]["mean"]
    assert record["kept"] == "pruned" and report.manifest["metrics"]["cosine_to_source"] == record["cosine_to_source"]["before"]
    written, expected = _weights(tmp_path / "out"), _weights(unhealed)
    assert written.keys() == expected.keys() and all(torch.equal(written[k], expected[k]) for k in expected)


def test_held_out_passages_are_removed_from_the_heal_corpus(source: Path, calibration: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    held_out = calibration.read_text().splitlines()[CALIBRATION_SAMPLES:]
    corpus.write_text(tiny_corpus.read_text() + "\n".join(held_out[:5]) + "\n")
    heal = HealConfig(steps=2, corpus=[str(corpus)], batch_size=4)
    record = compress(source, tmp_path / "out", calibration=calibration, heal=heal, **PRUNE).manifest["healing"]
    assert record["held_out_passages_removed"] == 5 and record["passages"] == len(tiny_corpus.read_text().splitlines())


# ------------------------------------------------------------------------------------------ distill --student-init


def test_distill_from_a_pruned_dir_keeps_its_heads_and_takes_the_teachers_head(source: Path, pruned: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "student"
    report = distill(source, tiny_corpus, out, student_init=pruned, cache_dir=tmp_path / "cache", **TRIPLE_LOSS, **FAST)
    m = report.manifest
    init = m["distill"]["init"]
    assert init["kind"] == "student_init" and init["mlm_head"] == "teacher" and init["copied_head_tensors"] > 0
    assert m["recipe"]["student_init"]["path"] == str(pruned)
    counts = json.loads((pruned / "edgebert.json").read_text())["pruning"]["heads_per_layer"]["after"]
    assert m["model"]["heads_per_layer"] == init["heads_per_layer"] == counts and sum(counts) == 6
    assert m["model"]["architecture"] == "BertForMaskedLM" and m["model"]["ffn"] == 32
    assert m["distill"]["teacher_head"]["source"] == "fitted"
    _assert_same_pruned_shape(out, pruned)
    _assert_reloads_to_the_saved_weights(out, "BertForMaskedLM")


@pytest.mark.parametrize("own_head", [True, False])
def test_student_head_is_its_own_or_none_without_mlm_losses(source: Path, calibration: Path, tiny_corpus: Path, tmp_path: Path, own_head: bool) -> None:
    from transformers import BertForMaskedLM

    model_dir = source
    if own_head:  # the source with a masked-LM head: compress keeps it, so the pruned model has its own
        model_dir = tmp_path / "mlm"
        BertForMaskedLM.from_pretrained(source).save_pretrained(model_dir, safe_serialization=True)
        for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            if (source / f).exists():  # transformers 5 writes no vocab.txt or special_tokens_map.json
                shutil.copy(source / f, model_dir)
    pruned = tmp_path / "pruned"
    compress(model_dir, pruned, heads_to_prune='{"0": [1], "2": [0, 3]}', quiet=True)
    out = tmp_path / "student"
    report = distill(model_dir, tiny_corpus, out, student_init=pruned, alpha_mlm=0.0, alpha_ce=0.0, **FAST)
    saved = _weights(out)
    assert report.manifest["distill"]["teacher_head"]["source"] == "unused"
    if own_head:
        assert report.manifest["distill"]["init"]["mlm_head"] == "own"
        before = _weights(pruned)
        head = [k for k in before if k.startswith("cls.")]
        assert head and all(torch.equal(saved[k], before[k]) for k in head)  # no loss used it: unchanged
    else:
        assert report.manifest["distill"]["init"]["mlm_head"] is None
        assert report.manifest["model"]["architecture"] == "BertModel"
        assert not any(k.startswith("cls.") for k in saved)  # no random head written
        _assert_reloads_to_the_saved_weights(out)


def test_student_init_conflicts_are_user_errors(source: Path, pruned: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    for option, value in (("student_layers", 2), ("embedding_dim", 16), ("student_head_steps", 0)):
        flag = "--" + option.replace("_", "-")
        with pytest.raises(UserError, match=f"{flag} cannot be combined with --student-init"):
            distill(source, tiny_corpus, tmp_path / "a", student_init=pruned, **{option: value}, **FAST)
    with pytest.raises(UserError, match="--layer-map has 2 entries"):
        distill(source, tiny_corpus, tmp_path / "b", student_init=pruned, layer_map="0,2", **FAST)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def _assert_one_line_exit_2(code: int, err: str, fragment: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and fragment in lines[0], err


def _retokenized(directory: Path, out: Path, words: list[str], lower: bool) -> Path:
    """A copy of `directory` with another WordPiece tokenizer (same weights)."""
    from transformers import BertTokenizerFast

    shutil.copytree(directory, out)
    vocab = out / "vocab.txt"
    vocab.write_text("\n".join(words) + "\n")
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (out / f).unlink(missing_ok=True)
    BertTokenizerFast(vocab=str(vocab), do_lower_case=lower).save_pretrained(out)
    return out


@pytest.mark.parametrize("case", ["narrow", "vocabulary", "casing"])
def test_distill_cli_student_init_mismatch_is_exit_2(
    run_cli, source: Path, pruned: Path, tiny_corpus: Path, tmp_path: Path, case: str
) -> None:
    state = json.loads((pruned / "tokenizer.json").read_text())
    words = sorted(state["model"]["vocab"], key=state["model"]["vocab"].get)
    if case == "narrow":
        init, fragment = build_tiny_bert(tmp_path / "narrow", layers=3, hidden=16, heads=2, ffn=32), "hidden size 16 but the teacher has 32"
    elif case == "vocabulary":
        init, fragment = _retokenized(pruned, tmp_path / "vocab", words[:-1] + ["zebra"], lower=True), "different tokenizer vocabulary"
    else:
        init, fragment = _retokenized(pruned, tmp_path / "cased", words, lower=False), "tokenizes text differently"
    out = tmp_path / "out"
    code, _, err = run_cli(
        "distill", "--teacher", str(source), "--student-init", str(init), "--corpus", str(tiny_corpus), "--out", str(out),
        "--steps", "2", "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    _assert_one_line_exit_2(code, err, fragment)
    assert not out.exists()


# ------------------------------------------------------------------------------------------ compress CLI


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--prune-heads", "0.5", "--heal-steps", "5"], "--heal-steps needs --heal-corpus"),
        (["--prune-heads", "0.5", "--heal-corpus", "CORPUS"], "--heal-corpus needs --heal-steps"),
        (["--prune-heads", "0.5", "--heal-steps", "0", "--heal-corpus", "CORPUS"], "--heal-corpus needs --heal-steps"),
        (["--prune-heads", "0.5", "--heal-steps", "5", "--heal-corpus", "/nonexistent/heal.txt"], "does not exist"),
        (["--prune-heads", "0.5", "--heal-steps", "5", "--heal-corpus", "CORPUS", "--heal-losses", "cos=1,mse=2"], "--heal-losses"),
        (["--prune-heads", "0.5", "--heal-steps", "5", "--heal-corpus", "CORPUS", "--heal-losses", "cos=0"], "every loss 0"),
        (["--magnitude-sparsity", "0.5", "--heal-steps", "5", "--heal-corpus", "CORPUS"], "repairs structured pruning"),
    ],
)
def test_compress_cli_bad_heal_input_is_exit_2_nothing_written(
    run_cli, source: Path, calibration: Path, tiny_corpus: Path, tmp_path: Path, extra: list[str], fragment: str
) -> None:
    out = tmp_path / "out"
    args = [str(tiny_corpus) if a == "CORPUS" else a for a in extra]
    code, _, err = run_cli("compress", "--model", str(source), "--out", str(out), "--calibration", str(calibration), *args)
    _assert_one_line_exit_2(code, err, fragment)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == []


def test_compress_cli_heals_then_sparsifies_quietly(
    run_cli, source: Path, calibration: Path, tiny_corpus: Path, tmp_path: Path
) -> None:
    """--quiet: one JSON line on stdout (Trainer's log lines go elsewhere), nothing on stderr; the zeros come after
    healing, so they survive it."""
    out = tmp_path / "out"
    code, stdout, err = run_cli(
        "compress", "--model", str(source), "--out", str(out), "--calibration", str(calibration), "--prune-ffn", "0.5",
        "--calibration-samples", str(CALIBRATION_SAMPLES), "--seq-len", "32", "--heal-steps", "4", "--heal-corpus", str(tiny_corpus),
        "--heal-batch-size", "4", "--heal-seq-len", "16", "--magnitude-sparsity", "0.25", "--quiet",
    )  # fmt: skip
    assert code == 0 and err == "", err
    summary = json.loads(stdout)
    assert set(summary["healing"]["cosine_to_source_mean"]) == {"before", "after"}
    m = json.loads((out / "edgebert.json").read_text())
    assert m["recipe"]["heal"]["seq_len"] == 16 and m["recipe"]["magnitude_sparsity"] == 0.25
    weight = _weights(out)["encoder.layer.0.intermediate.dense.weight"]
    assert int((weight == 0).sum()) == round(0.25 * weight.numel())


def test_heal_losses_with_the_similarity_term_reach_the_distillation(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    heal = HealConfig(steps=2, corpus=[str(tiny_corpus)], batch_size=4, losses="cos=1,sim=2")
    report = compress(tiny_bert, tmp_path / "out", heads_to_prune='{"1": [2]}', heal=heal, quiet=True)
    record = report.manifest["healing"]
    assert report.manifest["recipe"]["heal"]["losses"]["alpha_sim"] == 2.0
    assert record["loss_first"]["loss_sim"] >= 0 and "loss_pooled" not in record["loss_first"]
