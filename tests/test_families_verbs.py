"""Every family through distill and compress (tiny zoo models), ALBERT as published (one layer shared by all passes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgebert.compress.prune import apply_head_pruning
from edgebert.modelio import load_weights
import torch

from edgebert.errors import UserError
from model_zoo import BUILDERS, build_albert, build_deberta_v2, build_xlnet, training_lines

STEPS = dict(steps=3, batch_size=4, seq_len=24, head_steps=2, quiet=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(training_lines(120, seed=3)) + "\n")
    return path


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("zoo")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="module")
def albert4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Published ALBERT layout: one layer (num_hidden_groups 1) run for 4 passes."""
    directory = build_albert(tmp_path_factory.mktemp("albert4") / "albert")
    config = json.loads((directory / "config.json").read_text())
    config["num_hidden_layers"] = 4
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def _hidden(model_dir: Path, texts: list[str]) -> torch.Tensor:
    from transformers import AutoModel, AutoTokenizer

    model = load_weights(AutoModel, model_dir)[0].eval()  # edgebert's loader: pruned heads
    batch = AutoTokenizer.from_pretrained(model_dir)(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).last_hidden_state


@pytest.mark.parametrize("family", ["distilbert", "roberta", "electra", "mpnet", "deberta-v2", "modernbert"])
def test_distill_within_family(family: str, zoo: dict[str, Path], corpus: Path, tmp_path: Path) -> None:
    """A 1-layer student of the family's own teacher: copied layer, trained a few steps, the stock class loads it."""
    from edgebert.distill.api import distill

    report = distill(zoo[family], corpus, tmp_path / "student", student_layers=1, **STEPS)
    model = report.manifest["model"]
    assert model["family"] == family and model["layers"] == 1
    assert report.manifest["distill"]["init"]["random_tensors"] == 0
    hidden = _hidden(tmp_path / "student", ["hello world", "a man plays the guitar"])
    assert hidden.shape[-1] == 32 and torch.isfinite(hidden).all()


@pytest.mark.parametrize("layer_map", [[0], [1]])
def test_a_modernbert_student_keeps_each_copied_layers_attention_kind(zoo: dict[str, Path], corpus: Path, tmp_path: Path, layer_map: list[int]) -> None:
    """ModernBERT alternates global and sliding-window attention by layer: a copied layer attends as it did."""
    from edgebert.distill.api import distill

    teacher = json.loads((zoo["modernbert"] / "config.json").read_text())["layer_types"]
    assert teacher[0] != teacher[1]
    distill(zoo["modernbert"], corpus, tmp_path / "student", student_layers=1, layer_map=layer_map, **STEPS)
    student = json.loads((tmp_path / "student" / "config.json").read_text())
    assert student["layer_types"] == [teacher[layer_map[0]]] and student["num_hidden_layers"] == 1


def test_narrow_electra_student_keeps_its_factorised_embeddings(zoo: dict[str, Path], corpus: Path, tmp_path: Path) -> None:
    """ELECTRA's tables are embedding_size wide already: a narrower student copies them as they are (no rotation),
    and --embedding-dim on it is refused with one line."""
    from edgebert.distill.api import distill

    from edgebert.distill.student import StudentSpec, build_student
    from edgebert.distill.teacher import load_teacher_mlm
    from edgebert.families import ELECTRA

    teacher, _ = load_teacher_mlm(zoo["electra"], ELECTRA)
    student, _, _ = build_student(teacher, StudentSpec(layers=1, hidden=16), ELECTRA)
    for role in ("word", "position", "token_type", "norm"):
        assert torch.equal(ELECTRA.embedding(student.electra, role).weight, ELECTRA.embedding(teacher.electra, role).weight)
    report = distill(zoo["electra"], corpus, tmp_path / "narrow", student_layers=1, student_hidden=16, **STEPS)
    assert report.manifest["model"]["hidden_size"] == 16
    with pytest.raises(UserError, match="already factorised"):
        distill(zoo["electra"], corpus, tmp_path / "x", student_layers=1, embedding_dim=8, **STEPS)
    with pytest.raises(UserError, match="cannot factorise a distilbert"):
        distill(zoo["distilbert"], corpus, tmp_path / "y", student_layers=1, embedding_dim=8, **STEPS)


@pytest.mark.parametrize("family", ["distilbert", "roberta", "electra"])
def test_compress_prunes_heads_and_ffn(family: str, zoo: dict[str, Path], corpus: Path, tmp_path: Path) -> None:
    """Heads and FFN neurons physically removed; the stock class reloads the smaller matrices from the config; a
    DistilBERT is healed too (a short distillation from the unpruned model, through --student-init)."""
    from transformers import AutoConfig

    from edgebert.compress.compress import compress
    from edgebert.config import HealConfig

    heal = HealConfig(steps=2, corpus=[str(corpus)], batch_size=4, seq_len=24) if family == "distilbert" else None
    report = compress(zoo[family], tmp_path / "pruned", prune_heads=0.25, head_scope="layer", prune_ffn=0.5, calibration=corpus,
                      calibration_samples=16, seq_len=24, heal=heal, quiet=True)
    assert ("healing" in report.manifest) == (heal is not None)
    assert report.manifest["pruning"]["heads_per_layer"] == {"before": [4, 4], "after": [3, 3]}
    config = AutoConfig.from_pretrained(tmp_path / "pruned")
    assert {int(k): len(v) for k, v in config.pruned_heads.items()} == {0: 1, 1: 1}
    hidden = _hidden(tmp_path / "pruned", ["hello world"])
    assert torch.isfinite(hidden).all()
    assert report.manifest["metrics"]["cosine_to_source"]["mean"] > 0.5


@pytest.mark.parametrize("layers", [1, 2])
def test_shared_albert_student_keeps_the_shared_layer(albert4: Path, corpus: Path, tmp_path: Path, layers: int) -> None:
    """Published ALBERT (one layer, 4 passes): the student runs the same layer for fewer passes, recorded as such."""
    from edgebert.distill.api import distill
    from edgebert.distill.factorize import SHARED_INIT

    report = distill(albert4, corpus, tmp_path / "student", student_layers=layers, **STEPS)
    config = json.loads((tmp_path / "student" / "config.json").read_text())
    assert config["num_hidden_layers"] == layers and config["num_hidden_groups"] == 1
    init = report.manifest["distill"]["init"]
    assert init["random_tensors"] == 0
    assert init["layer_sharing"] == {"layer_modules": 1, "passes": layers, "pass_modules": [0] * layers, "module_sources": [3], "init": SHARED_INIT}
    assert report.manifest["model"]["heads_per_layer"] == [4]


def test_shared_albert_prunes_the_one_layer_once(albert4: Path, corpus: Path, tmp_path: Path) -> None:
    """25 % of the shared layer's 4 heads is 1 head, counted once; its score sums every pass (the gate is shared)."""
    from edgebert.compress.compress import compress
    from edgebert.compress.importance import compute_importance
    from edgebert.families import ALBERT
    from transformers import AutoModel, AutoTokenizer

    for scope in ("global", "layer"):
        report = compress(albert4, tmp_path / scope, prune_heads=0.25, prune_ffn=0.5, head_scope=scope, calibration=corpus,
                          calibration_samples=16, seq_len=24, quiet=True)
        assert report.manifest["pruning"]["heads_per_layer"] == {"before": [4], "after": [3]}
        assert report.manifest["model"]["shared_layers"] == {"layer_modules": 1, "passes": 4}
        assert torch.isfinite(_hidden(tmp_path / scope, ["hello world"])).all()
    model = AutoModel.from_pretrained(albert4, attn_implementation="eager")
    tokenizer = AutoTokenizer.from_pretrained(albert4)
    texts = training_lines(8, seed=5)
    full = compute_importance(model, ALBERT, tokenizer, texts, method="output-sensitivity", seq_len=24)
    model.config.num_hidden_layers = 1  # the same layer, one pass: a score over one pass only differs
    one = compute_importance(model, ALBERT, tokenizer, texts, method="output-sensitivity", seq_len=24)
    assert len(full.heads) == 1 and not torch.allclose(full.heads[0], one.heads[0])


def test_onnx_int8_quantizes_every_pass_of_a_shared_layer(albert4: Path, tmp_path: Path) -> None:
    """Each pass reads the shared weights through an Identity in the fp32 graph; int8 must cover them all, once."""
    import onnx

    from edgebert.export import export

    export("onnx", albert4, tmp_path / "int8", quantize="int8")
    graph = onnx.load(str(tmp_path / "int8" / "model.onnx")).graph
    query = [n for n in graph.node if "/attention/query" in n.name and n.op_type.startswith("MatMul")]
    assert len(query) == 4 and {n.op_type for n in query} == {"MatMulInteger"}
    assert len({n.input[1] for n in query}) == 1  # one quantized copy, read by every pass
    assert not [n for n in graph.node if n.op_type == "Identity"]


def test_bert_teacher_into_a_distilbert_student(tiny_bert: Path, corpus: Path, tmp_path: Path) -> None:
    """--student-family distilbert: the teacher re-laid exactly (type 0 folded into positions), a 1-layer DistilBERT
    student distilled from it that DistilBertModel loads; ALBERT and bad combinations refused with one line."""
    from transformers import DistilBertModel

    from edgebert.distill.api import distill

    report = distill(tiny_bert, corpus, tmp_path / "student", student_layers=1, student_family="distilbert", **STEPS)
    init = report.manifest["distill"]["init"]
    assert report.manifest["model"]["family"] == "distilbert" and init["random_tensors"] == 0
    assert init["relayout"]["to"] == "distilbert" and "token type 0" in init["relayout"]["notes"][0]
    DistilBertModel.from_pretrained(tmp_path / "student")
    assert torch.isfinite(_hidden(tmp_path / "student", ["hello world"])).all()
    from edgebert.export import export

    export("onnx", tmp_path / "student", tmp_path / "onnx")  # parity-checked against PyTorch by the export itself
    with pytest.raises(UserError, match="re-layout covers"):
        distill(tiny_bert, corpus, tmp_path / "x", student_layers=1, student_family="albert", **STEPS)
    with pytest.raises(UserError, match="do not go together"):
        distill(tiny_bert, corpus, tmp_path / "y", student_layers=1, student_family="roberta", embedding_dim=8, **STEPS)


@pytest.mark.parametrize("target", ["distilbert", "roberta", "electra"])
def test_relayout_is_exact_and_refuses_what_is_not(zoo: dict[str, Path], target: str) -> None:
    """BERT (masked-LM) re-laid into each family gives the same hidden states and logits; a DistilBERT target for a
    teacher whose LayerNorm eps DistilBERT cannot express is refused."""
    from transformers import BertForMaskedLM

    from edgebert.families import BERT, family_named
    from edgebert.relayout import relayout, verify_relayout

    teacher = BertForMaskedLM.from_pretrained(zoo["bert"], attn_implementation="eager")
    new, _ = relayout(teacher, BERT, family_named(target), with_head=True)
    assert verify_relayout(teacher, new, BERT, family_named(target), with_head=True, seed=3) <= 1e-5
    if target == "distilbert":
        teacher.config.layer_norm_eps = 1e-3
        for module in teacher.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.eps = 1e-3
        with pytest.raises(UserError, match="not a pure re-layout"):
            relayout(teacher, BERT, family_named(target), with_head=True)


def test_tflite_int8_quantizes_the_shared_layer_once(albert4: Path, tmp_path: Path) -> None:
    """TFLite: the FULLY_CONNECTED ops of all 4 passes read int8 weights, and only 7 distinct weight tensors exist
    (the shared layer's 6 and the embedding projection's): the layer is stored once."""
    from ai_edge_litert.interpreter import Interpreter

    from edgebert.export import export
    from edgebert.targets.tflite.quantize import weight_dtypes

    export("tflite", albert4, tmp_path / "int8", quantize="int8")
    path = str(next((tmp_path / "int8").glob("*.tflite")))
    assert weight_dtypes(path)["FULLY_CONNECTED"] == {"int8": 4 * 6 + 2}
    ops = Interpreter(model_path=path)._get_ops_details()  # noqa: SLF001 - no public op listing
    weights = [op["inputs"][1] for op in ops if op["op_name"] == "FULLY_CONNECTED"]
    assert len(set(weights)) == 6 + 1


@pytest.mark.integration
def test_packaged_teacher_into_a_distilbert_student(packaged_teacher: Path, corpus: Path, tmp_path: Path) -> None:
    """all-MiniLM-L6-v2 re-laid exactly into DistilBERT, a 3-layer DistilBERT student distilled 20 steps, exported."""
    from edgebert.distill.api import distill
    from edgebert.export import export

    report = distill(packaged_teacher, corpus, tmp_path / "student", student_layers=3, student_family="distilbert",
                     steps=20, batch_size=8, seq_len=64, head_steps=20, quiet=True)
    assert report.manifest["model"]["family"] == "distilbert" and report.manifest["model"]["layers"] == 3
    assert report.manifest["distill"]["init"]["random_tensors"] == 0
    export("onnx", tmp_path / "student", tmp_path / "onnx", quantize="int8")


def test_a_pruned_teachers_layers_keep_their_heads_in_the_student(tmp_path: Path) -> None:
    """Student module j takes teacher module layer_map[j] with that module's pruned heads, copied exactly."""
    import transformers

    from edgebert.distill.student import StudentSpec, build_student
    from edgebert.families import BERT
    from model_zoo import build_bert

    teacher = transformers.BertForMaskedLM.from_pretrained(build_bert(tmp_path / "bert", head="fill-mask"))
    apply_head_pruning(teacher, {0: [3], 1: [0, 2]})
    student, _, init = build_student(teacher, StudentSpec(layers=1, layer_map=[1]), BERT)
    assert student.config.pruned_heads == {0: [0, 2]} and init["random_tensors"] == 0
    assert torch.equal(student.bert.encoder.layer[0].attention.self.query.weight, teacher.bert.encoder.layer[1].attention.self.query.weight)


@pytest.mark.parametrize("family", ["distilbert", "electra", "roberta", "mpnet", "albert", "xlm-roberta", "deberta-v2", "modernbert"])
def test_vocab_trim_slices_each_familys_head(family: str, corpus: Path, tmp_path: Path) -> None:
    """WordPiece (DistilBERT, ELECTRA, MPNet), SentencePiece Unigram (ALBERT, XLM-R, DeBERTa-v3) and byte-level BPE
    (RoBERTa, ModernBERT) families: the MLM head's vocabulary tensors sliced with the word table, logits of the kept
    ids unchanged."""
    import transformers

    from edgebert.compress.vocab import trim_vocab
    from edgebert.families import family_named

    model_dir = BUILDERS[family](tmp_path / "model", head="fill-mask")
    report = trim_vocab(model_dir, tmp_path / "trimmed", [corpus], quiet=True)
    cls = getattr(transformers, family_named(family).mlm_class)
    before, after = cls.from_pretrained(model_dir).eval(), cls.from_pretrained(tmp_path / "trimmed").eval()
    assert after.get_output_embeddings().weight is after.get_input_embeddings().weight
    text = training_lines(4, seed=9)
    old = transformers.AutoTokenizer.from_pretrained(model_dir)(text, padding=True, return_tensors="pt")
    new = transformers.AutoTokenizer.from_pretrained(tmp_path / "trimmed")(text, padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(after(**new).logits, before(**old).logits[..., report.kept_ids], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", ["roberta", "modernbert"])
def test_a_byte_level_bpe_trims_with_its_merges(family: str, tmp_path: Path) -> None:
    """A kept token comes with every part it is merged from; the merges between kept tokens stay, in rank order; the
    corpus is cut exactly as before, and held-out text falls back to kept parts, down to bytes: never unknown."""
    from edgebert.compress.vocab import trim_vocab
    from edgebert.modelio import load_tokenizer

    lines = training_lines(200, seed=5)
    (tmp_path / "corpus.txt").write_text("\n".join(lines[:12]) + "\n")
    (tmp_path / "heldout.txt").write_text("\n".join(lines[100:]) + "\n")
    model_dir = BUILDERS[family](tmp_path / "model")
    report = trim_vocab(model_dir, tmp_path / "trimmed", tmp_path / "corpus.txt", heldout=tmp_path / "heldout.txt", quiet=True)
    assert report.vocab_after < report.vocab_before and report.unk_rate == 0.0 and report.changed_word_share > 0
    old, new = load_tokenizer(model_dir), load_tokenizer(tmp_path / "trimmed")
    for text in lines[:12]:
        assert new(text).input_ids == [report.kept_ids.index(i) for i in old(text).input_ids]
    old_merges, new_merges = ([tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in json.loads(t.backend_tokenizer.to_str())["model"]["merges"]] for t in (old, new))
    assert 0 < len(new_merges) < len(old_merges) and new_merges == [m for m in old_merges if m in set(new_merges)]
    vocab = new.get_vocab()
    assert all(a in vocab and b in vocab and a + b in vocab for a, b in new_merges)


def test_an_xlnet_classifiers_vocabulary_trim_keeps_its_left_padding_and_its_logits(corpus: Path, tmp_path: Path) -> None:
    """XLNet's Unigram vocabulary trimmed: the tokenizer still pads on the left and ends with `<sep> <cls>` (renumbered),
    and the classifier, which reads the last token, gives the same logits."""
    import transformers

    from edgebert.compress.vocab import trim_vocab
    from model_zoo import build_xlnet

    model_dir = build_xlnet(tmp_path / "model", head="sequence-classification")
    report = trim_vocab(model_dir, tmp_path / "trimmed", [corpus], quiet=True)
    assert len(report.kept_ids) < transformers.AutoConfig.from_pretrained(model_dir).vocab_size
    old, new = (transformers.AutoTokenizer.from_pretrained(d) for d in (model_dir, tmp_path / "trimmed"))
    assert new.padding_side == "left"
    text = training_lines(4, seed=9)
    a, b = old(text, padding=True, return_tensors="pt"), new(text, padding=True, return_tensors="pt")
    assert torch.equal(a["attention_mask"], b["attention_mask"]) and b["input_ids"][0, -1] == new.cls_token_id
    assert torch.equal(torch.tensor(report.kept_ids)[b["input_ids"]], a["input_ids"])
    before, after = (transformers.AutoModelForSequenceClassification.from_pretrained(d).eval() for d in (model_dir, tmp_path / "trimmed"))
    with torch.no_grad():
        torch.testing.assert_close(after(**b).logits, before(**a).logits, atol=1e-5, rtol=1e-5)


def test_a_multilingual_vocabulary_trimmed_to_one_language_cuts_that_language_as_before(tmp_path: Path) -> None:
    """XLM-R's Unigram vocabulary trimmed to German text: German tokenizes into the same pieces (renumbered), the
    word table shrinks, and the SentencePiece files that would load the old vocabulary are not shipped."""
    import transformers
    from model_zoo import MULTILINGUAL, build_xlm_roberta

    from edgebert.compress.vocab import trim_vocab

    model_dir = build_xlm_roberta(tmp_path / "xlmr")
    german = MULTILINGUAL[:2]
    corpus = tmp_path / "de.txt"
    corpus.write_text("\n".join(german * 10) + "\n")
    report = trim_vocab(model_dir, tmp_path / "de", [corpus], quiet=True)
    old = transformers.AutoTokenizer.from_pretrained(model_dir)
    new = transformers.AutoTokenizer.from_pretrained(tmp_path / "de")
    assert report.vocab_after < report.vocab_before and len(new) == report.vocab_after
    for text in german:
        assert new.tokenize(text) == old.tokenize(text)
        assert new(text).input_ids == [report.kept_ids.index(i) for i in old(text).input_ids]
    assert not any((tmp_path / "de" / name).exists() for name in ("sentencepiece.bpe.model", "spiece.model"))


@pytest.mark.parametrize("family", ["mpnet", "deberta-v2", "deberta-v2-position-projections", "modernbert", "xlnet"])
def test_heads_and_ffn_pruned_where_position_terms_meet_the_heads(family: str, corpus: Path, tmp_path: Path) -> None:
    """MPNet's layers share one relative-position bias table, one column a head: the same heads leave every layer,
    with their columns. DeBERTa's position projections (share_att_key off) lose the heads' rows with q/k/v.
    ModernBERT's fused q/k/v loses them from each third, its GeGLU FFN loses a neuron from both halves. XLNet's
    projections and content / position / segment biases are parameters with a head axis, sliced there (its
    classifier). Each pruned model reloads with edgebert's loader and exports to ONNX at parity."""
    from transformers import AutoConfig, AutoModel

    from edgebert.compress.compress import compress
    from edgebert.export import export
    from edgebert.families import family_named

    if family == "deberta-v2-position-projections":
        model = build_deberta_v2(tmp_path / "src", share_att_key=False)
    elif family == "xlnet":
        model = build_xlnet(tmp_path / "src", head="sequence-classification")
    else:
        model = BUILDERS[family](tmp_path / "src")
    report = compress(model, tmp_path / "pruned", prune_heads=0.25, head_scope="global", prune_ffn=0.5, calibration=corpus,
                      calibration_samples=16, seq_len=24, quiet=True)  # fmt: skip
    after = report.manifest["pruning"]["heads_per_layer"]["after"]
    assert sum(after) == 6 and (after == [3, 3] or family != "mpnet")  # global scope; MPNet: the same in every layer
    config = AutoConfig.from_pretrained(tmp_path / "pruned")
    width = family_named(config.model_type).size_fields[3]
    assert getattr(config, width) == getattr(AutoConfig.from_pretrained(model), width) // 2
    pruned = load_weights(AutoModel, tmp_path / "pruned")[0]
    if family == "mpnet":
        assert len({tuple(v) for v in config.pruned_heads.values()}) == 1 and len(config.pruned_heads) == 2
        assert pruned.encoder.relative_attention_bias.weight.shape == (32, 3)
    if family == "deberta-v2-position-projections":
        assert all(l.attention.self.pos_key_proj.out_features == l.attention.self.query_proj.out_features for l in pruned.encoder.layer)
    if family == "modernbert":
        assert all(l.mlp.Wi.out_features == 2 * l.mlp.Wo.in_features == config.intermediate_size * 2 for l in pruned.layers)
    if family == "xlnet":
        assert [(l.rel_attn.q.shape[1], l.rel_attn.seg_embed.shape[1], l.rel_attn.r_w_bias.shape[0]) for l in pruned.layer] == [(n, n, n) for n in after]
    exported = export("onnx", model=tmp_path / "pruned", out=tmp_path / "onnx", seq_len=24, quiet=True)
    assert exported.parity["passed"] and exported.parity["min_cosine"] >= 0.9999


def test_mpnet_heads_to_prune_must_name_the_same_heads_in_every_layer(corpus: Path, tmp_path: Path) -> None:
    """An explicit plan that cuts one layer only is refused in one line naming the shared table; the same heads in
    every layer are cut, with their column of the table."""
    from transformers import AutoModel

    from edgebert.compress.compress import compress

    model = BUILDERS["mpnet"](tmp_path / "src")
    with pytest.raises(UserError, match="must name the same heads for each of the 2 layers: .*relative_attention_bias") as info:
        compress(model, tmp_path / "refused", heads_to_prune={"0": [1]}, calibration=corpus, calibration_samples=8, seq_len=24, quiet=True)
    assert "\n" not in str(info.value) and not (tmp_path / "refused").exists()
    compress(model, tmp_path / "pruned", heads_to_prune={"0": [1], "1": [1]}, calibration=corpus, calibration_samples=8, seq_len=24, quiet=True)
    assert load_weights(AutoModel, tmp_path / "pruned")[0].encoder.relative_attention_bias.weight.shape == (32, 3)


@pytest.mark.parametrize("family", ["mpnet", "modernbert", "xlnet"])
def test_a_silent_head_scores_zero(family: str, corpus: Path, tmp_path: Path) -> None:
    """A head whose output weights are zero changes nothing, so its importance is exactly 0 and the others' is not:
    the gate sits on each head's context wherever the family computes it (XLNet: the context its `post_attention`
    receives, [length, batch, heads, head size]; the method is the class's again afterwards)."""
    from transformers import AutoModel, AutoTokenizer

    from edgebert.compress.importance import compute_importance, read_calibration
    from edgebert.families import family_for

    model_dir = BUILDERS[family](tmp_path / "model") if family != "xlnet" else build_xlnet(tmp_path / "model")
    model = AutoModel.from_pretrained(model_dir).eval()
    fam = family_for(model.config.model_type)
    layer = fam.layers(model)[1]
    attention = fam.module(layer, "attention")
    with torch.no_grad():
        if family == "xlnet":
            attention.o[:, 2, :] = 0
        else:
            size = fam.head_size(attention)
            fam.module(layer, "attention_output").weight[:, 2 * size : 3 * size] = 0
    scores = compute_importance(model, fam, AutoTokenizer.from_pretrained(model_dir), read_calibration(corpus)[:8], seq_len=24)
    assert float(scores.heads[1][2]) == 0.0 and bool((scores.heads[1][[0, 1, 3]] > 0).all()) and bool((scores.heads[0] > 0).all())
    assert "post_attention" not in vars(attention)
