"""ALBERT-style factorised-embedding students: the AlbertModel dir, the SVD init, distillation and all three exports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgebert.modelio import load_weights
import torch

from edgebert.config import TRIPLE_LOSS  # the losses these tests were written for (a teacher without an MLM head gets cosine-only by default)
from edgebert.distill.factorize import (
    WORD_WEIGHTING,
    build_factorized_student,
    corpus_word_weights,
    reconstructed_word_table,
    relative_error,
    truncated_svd,
    zero_sum_basis,
)
from edgebert.distill.student import StudentSpec, build_student, resolve_shape
from edgebert.errors import UserError
from edgebert.families import ALBERT, BERT

SEQ_LEN = 32


@pytest.fixture(scope="module")
def teacher(tiny_bert: Path):
    """tiny_bert (2 layers × 32, vocab ~140) as a masked-LM teacher (random head)."""
    import transformers
    from transformers import BertForMaskedLM

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        return BertForMaskedLM.from_pretrained(tiny_bert, attn_implementation="eager").eval()
    finally:
        transformers.logging.set_verbosity(verbosity)


def _factorized(teacher, embedding_dim: int, layers: int = 2):
    shape = resolve_shape(teacher.config, StudentSpec(layers=layers), BERT)
    shape.embedding_dim = embedding_dim  # below the CLI's bounds check on purpose (E = H + 1 in some tests)
    student, init = build_factorized_student(teacher, shape, BERT)
    return student.eval(), init


@pytest.fixture(scope="module")
def student_dir(teacher, tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A factorised (E = 8) 2-layer student of tiny_bert saved as a model dir with the teacher's tokenizer."""
    from transformers import AutoTokenizer

    student, _, _ = build_student(teacher, StudentSpec(layers=2, embedding_dim=8), BERT)
    out = tmp_path_factory.mktemp("factorised") / "student"
    student.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(tiny_bert).save_pretrained(out)
    return out


def test_student_dir_is_a_plain_albert_that_automodel_loads(student_dir: Path) -> None:
    from transformers import AlbertModel, AutoModel, AutoModelForMaskedLM

    from edgebert.modelio import load_model

    config = json.loads((student_dir / "config.json").read_text())
    assert config["model_type"] == "albert" and "auto_map" not in config
    assert config["embedding_size"] == 8 and config["num_hidden_groups"] == config["num_hidden_layers"] == 2
    assert config["inner_group_num"] == 1 and config["hidden_act"] == "gelu"
    model = AutoModel.from_pretrained(student_dir, trust_remote_code=False)
    assert isinstance(model, AlbertModel)
    assert AutoModelForMaskedLM.from_pretrained(student_dir, trust_remote_code=False).config.model_type == "albert"
    loaded = load_model(student_dir)  # what `edgebert export` uses
    assert loaded.family is ALBERT and loaded.family.input_names() == ["input_ids", "attention_mask", "token_type_ids"]


def test_embedding_parameter_count_is_factorised(teacher) -> None:
    student, _ = _factorized(teacher, 8)
    c = student.config
    v, e, h = c.vocab_size, 8, c.hidden_size
    emb = student.albert.embeddings
    assert emb.word_embeddings.weight.numel() == v * e
    proj = student.albert.encoder.embedding_hidden_mapping_in
    assert proj.weight.numel() + proj.bias.numel() == e * h + h
    tables = (v + c.max_position_embeddings + c.type_vocab_size) * e
    total = sum(p.numel() for p in emb.parameters()) + sum(p.numel() for p in proj.parameters())
    assert total == tables + 2 * e + e * h + h  # + the E-wide LayerNorm
    teacher_total = sum(p.numel() for p in teacher.bert.embeddings.parameters())
    assert total < teacher_total


def test_layers_are_the_teachers_layers(teacher) -> None:
    student, init = _factorized(teacher, 8)
    assert init["copied_tensors"] == 2 * 16 + 1
    torch.manual_seed(0)
    x = torch.randn(2, 5, teacher.config.hidden_size)
    for i, t in enumerate([0, 1]):
        with torch.no_grad():
            got = ALBERT.layers(student.albert)[i](x)[0]
            want = BERT.layers(teacher.bert)[t](x)[0]
        torch.testing.assert_close(got, want, rtol=0, atol=1e-6)
    assert torch.equal(student.predictions.bias, teacher.cls.predictions.bias)
    assert student.predictions.decoder.weight is student.albert.embeddings.word_embeddings.weight


def test_svd_init_error_shrinks_as_e_grows_and_vanishes_at_full_rank(teacher) -> None:
    ids = torch.randint(5, teacher.config.vocab_size, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    with torch.no_grad():
        want_emb = teacher.bert.embeddings(input_ids=ids)
        want = teacher.bert(input_ids=ids, attention_mask=mask).last_hidden_state
    table_errors, emb_errors = [], []
    h = teacher.config.hidden_size
    for e in (4, 8, 16, h):
        student, init = _factorized(teacher, e)
        fact = init["_factorization"]
        centred = teacher.bert.embeddings.word_embeddings.weight.detach() @ fact.target_map
        table_errors.append(relative_error(centred, reconstructed_word_table(student.albert, fact)))
        with torch.no_grad():
            got_emb = student.albert.encoder.embedding_hidden_mapping_in(student.albert.embeddings(input_ids=ids))
        emb_errors.append(relative_error(want_emb, got_emb))
    assert table_errors == sorted(table_errors, reverse=True) and table_errors[0] > 0.3
    assert emb_errors == sorted(emb_errors, reverse=True)
    # E = H: the centred tables have rank H - 1, so nothing is truncated and the student *is* the teacher.
    assert table_errors[-1] < 1e-5 and emb_errors[-1] < 1e-5
    with torch.no_grad():
        got = student.albert(input_ids=ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(got[mask.bool()], want[mask.bool()], rtol=0, atol=1e-4)


def test_corpus_weights_favour_the_words_that_occur(teacher) -> None:
    weights = corpus_word_weights([[2, 7, 7, 9, 3], [2, 7, 11, 3]], teacher.config.vocab_size)
    assert torch.isclose(weights[7], torch.tensor(3.0, dtype=torch.float64).sqrt() + 1) and weights[0] == 1.0 and weights.shape == (teacher.config.vocab_size,)
    frequent = [7, 9, 11, 12, 13, 14]
    heavy = torch.ones(teacher.config.vocab_size, dtype=torch.float64)
    heavy[frequent] = 1000.0
    shape = resolve_shape(teacher.config, StudentSpec(layers=1, embedding_dim=8), BERT)
    errors = {}
    for name, w in (("uniform", None), ("weighted", heavy)):
        student, init = build_factorized_student(teacher, shape, BERT, word_weights=w)
        fact = init["_factorization"]
        centred = teacher.bert.embeddings.word_embeddings.weight.detach() @ fact.target_map
        errors[name] = relative_error(centred[frequent], reconstructed_word_table(student.albert, fact)[frequent])
    assert errors["weighted"] < 0.5 * errors["uniform"]


def test_truncated_svd_and_zero_sum_basis() -> None:
    torch.manual_seed(0)
    table = torch.randn(50, 16) @ torch.diag(torch.linspace(3, 0.1, 16))
    errors = [relative_error(table, a @ b) for a, b in (truncated_svd(table, r) for r in (2, 4, 8, 16))]
    assert errors == sorted(errors, reverse=True) and errors[-1] < 1e-5
    q = zero_sum_basis(6)
    torch.testing.assert_close(q.T @ q, torch.eye(5, dtype=q.dtype))
    assert q.sum(0).abs().max() < 1e-12


def test_narrow_factorised_student(teacher) -> None:
    student, shape, init = build_student(teacher, StudentSpec(layers=1, hidden=16, heads=2, embedding_dim=6), BERT)
    assert shape.kind == "tinybert" and shape.embedding_dim == 6
    assert student.config.model_type == "albert" and student.config.hidden_size == 16
    assert init["factorized_embeddings"]["rank"] == 5 and "_factorization" not in init
    out = student.albert(input_ids=torch.tensor([[2, 7, 9, 3]])).last_hidden_state
    assert out.shape == (1, 4, 16)


@pytest.mark.parametrize("dim", [1, 33])
def test_embedding_dim_bounds_are_user_errors(teacher, dim: int) -> None:
    with pytest.raises(UserError, match="--embedding-dim"):
        resolve_shape(teacher.config, StudentSpec(layers=1, embedding_dim=dim), BERT)


# ---------------------------------------------------------------------------------------------- distillation
def test_short_distill_run_with_embedding_dim(tiny_bert: Path, tiny_corpus: Path, tmp_path: Path) -> None:
    from transformers import AutoModel

    from edgebert.distill import distill
    from edgebert.modelio import load_model

    corpus = tiny_corpus
    sts = tmp_path / "sts.csv"
    sts.write_text("the dog plays,a dog is playing,4.5\nthe cat,hello world,0.5\nmusic on stage,guitar music,3\nthe man,the woman,2\n")
    out = tmp_path / "student"
    report = distill(
        tiny_bert, corpus, out, student_layers=1, embedding_dim=8, steps=4, batch_size=4, seq_len=24, head_steps=3,
        head_batch_size=4, student_head_steps=5, save_steps=2, eval_sts=sts, eval_steps=2, logging_steps=1,
        cache_dir=tmp_path / "cache", quiet=True, **TRIPLE_LOSS,
    )  # fmt: skip
    manifest = report.manifest
    assert manifest["model"]["family"] == "albert" and manifest["model"]["architecture"] == "AlbertForMaskedLM"
    assert manifest["model"]["embedding_dim"] == 8
    assert manifest["recipe"]["student"]["embedding_dim"] == 8
    init = manifest["distill"]["init"]
    assert init["factorized_embeddings"]["rank"] == 7 and init["head"]["after"]["masked_tokens"] > 0
    assert init["factorized_embeddings"]["word_rows_weighted_by"] == WORD_WEIGHTING
    scores = manifest["metrics"]["sts_spearman"]
    assert len(scores["history"]) == 2 and scores["kept"] in ("init", "checkpoint-2", "checkpoint-4")
    assert scores["student_final"] == (scores["student_init"] if scores["kept"] == "init" else scores["best_trained"])
    assert AutoModel.from_pretrained(out).config.embedding_size == 8
    assert load_model(out).family is ALBERT
    assert manifest["model"]["embedding_parameters"] < manifest["model"]["parameters"]


# ---------------------------------------------------------------------------------------------- export
@pytest.mark.parametrize(
    ("target", "quantize"),
    [("onnx", "none"), ("onnx", "int8"), ("tflite", "none"), ("tflite", "int8"), ("tfjs", "none"), ("tfjs", "uint8")],
)
def test_factorised_student_exports_with_parity(student_dir: Path, tmp_path: Path, target: str, quantize: str) -> None:
    from edgebert.export import export

    report = export(target, model=student_dir, out=tmp_path / f"{target}-{quantize}", quantize=quantize, seq_len=SEQ_LEN, quiet=True)
    parity = report.manifest["parity"]
    assert parity["passed"] and parity["min_cosine"] >= parity["threshold"], parity
    assert [i["name"] for i in report.manifest["inputs"]] == ALBERT.input_names()
    details = report.manifest.get("target_details", {})
    if target == "tfjs":
        ops = {node["op"] for node in json.loads((report.out_dir / "model.json").read_text())["modelTopology"]["node"]}
        assert "Erfc" not in ops
        assert "aten.linear.default" in details["graph_ops"]
    if (target, quantize) == ("tfjs", "uint8"):  # the FFN down-projections and the 1-D weights stay float16
        model_json = json.loads((report.out_dir / "model.json").read_text())
        kept = [w for g in model_json["weightsManifest"] for w in g["weights"] if (w.get("quantization") or {}).get("dtype") == "float16"]
        matrices = [w for w in kept if len(w["shape"]) == 2]
        assert len(matrices) == 2 and all(".ffn_output.weight/" in w["name"] for w in matrices)  # one per layer
        # biases, norm scales and shifts; the position rows the converter folds from a constant lookup (`/static/`)
        assert all(len(w["shape"]) == 1 or "/static/" in w["name"] for w in kept if w not in matrices)
        assert any("/static/" in w["name"] for w in kept)
    if (target, quantize) == ("onnx", "int8"):
        import onnx

        graph = onnx.load(str(report.out_dir / "model.onnx")).graph
        float_matmuls = [n.name for n in graph.node if n.op_type == "MatMul" and "ffn_output" in n.name]
        assert len(float_matmuls) == 2  # excluded from quantization: plain MatMul, not MatMulInteger


@pytest.fixture(scope="module")
def random_albert_dir(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly built tiny AlbertModel with ALBERT's own defaults (layer sharing, gelu_new) and a BERT tokenizer."""
    from transformers import AlbertConfig, AlbertModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    config = AlbertConfig(
        vocab_size=tokenizer.vocab_size, embedding_size=8, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=128, pad_token_id=0,
    )  # fmt: skip
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("albert") / "random-albert"
    AlbertModel(config).save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


@pytest.mark.parametrize("target", ["onnx", "tflite", "tfjs"])
def test_random_albert_dir_exports(random_albert_dir: Path, tmp_path: Path, target: str) -> None:
    from edgebert.export import export

    report = export(target, model=random_albert_dir, out=tmp_path / target, seq_len=SEQ_LEN, quiet=True)
    assert report.manifest["parity"]["passed"], report.manifest["parity"]


# ---------------------------------------------------------------------------------------------- pruning
@pytest.fixture(scope="module")
def calibration_text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import random

    from conftest import WORDS

    rng = random.Random(5)
    path = tmp_path_factory.mktemp("calib") / "calib.txt"
    path.write_text("\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 16))) for _ in range(40)) + "\n")
    return path


@pytest.fixture(scope="module")
def pruned_albert(student_dir: Path, calibration_text: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The factorised student with a quarter of its 8 heads (ranked globally) and half its FFN neurons removed."""
    from edgebert.compress.compress import compress

    out = tmp_path_factory.mktemp("pruned-albert") / "pruned"
    compress(student_dir, out, prune_heads=0.25, prune_ffn=0.5, calibration=calibration_text, calibration_samples=24, seq_len=SEQ_LEN, quiet=True)
    return out


def test_importance_on_albert_ranks_a_zeroed_head_and_neuron_lowest(student_dir: Path) -> None:
    """The gates sit on the inputs of ALBERT's attention.dense and ffn_output, which see the heads and neurons."""
    from transformers import AlbertModel, AutoTokenizer

    from edgebert.compress.importance import compute_importance

    model = AlbertModel.from_pretrained(student_dir, attn_implementation="eager").eval()
    layers = ALBERT.layers(model)
    with torch.no_grad():
        layers[1].attention.value.weight[8:16] = 0.0  # head 1 of layer 1 (head_dim 8) contributes nothing
        layers[1].attention.value.bias[8:16] = 0.0
        layers[0].ffn.weight[3] = 0.0  # neuron 3 of layer 0: GELU(0) = 0
        layers[0].ffn.bias[3] = 0.0
    texts = ["the cat sat on the mat", "a dog ran in the park", "birds fly over the river"] * 4
    scores = compute_importance(model, ALBERT, AutoTokenizer.from_pretrained(student_dir), texts, seq_len=SEQ_LEN, batch_size=4)
    assert [len(h) for h in scores.heads] == [4, 4]
    assert int(scores.heads[1].argmin()) == 1 and float(scores.heads[1][1]) == 0.0
    assert float(scores.heads[0].min()) > 0
    assert int(scores.ffn[0].argmin()) == 3 and float(scores.ffn[0][3]) == 0.0
    assert all(p.grad is None for p in model.parameters())


def test_pruned_albert_is_smaller_and_reloads_with_automodel(student_dir: Path, pruned_albert: Path) -> None:
    from transformers import AutoModel

    config = json.loads((pruned_albert / "config.json").read_text())
    assert config["model_type"] == "albert" and config["intermediate_size"] == 32
    removed = sum(len(v) for v in config["pruned_heads"].values())
    assert removed == 2  # round(0.25 * 8)
    model = load_weights(AutoModel, pruned_albert)[0].eval()  # edgebert's loader: pruned heads
    before = AutoModel.from_pretrained(student_dir)
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in before.parameters())
    for i, layer in enumerate(ALBERT.layers(model)):
        heads = 4 - len(config["pruned_heads"].get(str(i), []))
        assert tuple(layer.attention.query.weight.shape) == (heads * 8, 32)
        assert tuple(layer.attention.dense.weight.shape) == (32, heads * 8)
        assert tuple(layer.ffn.weight.shape) == (32, 32) and tuple(layer.ffn_output.weight.shape) == (32, 32)
    manifest = json.loads((pruned_albert / "edgebert.json").read_text())
    assert manifest["model"]["family"] == "albert"


@pytest.mark.parametrize(("target", "quantize"), [("onnx", "none"), ("onnx", "int8"), ("tflite", "none"), ("tfjs", "none")])
def test_pruned_albert_exports_with_parity(pruned_albert: Path, tmp_path: Path, target: str, quantize: str) -> None:
    """A head-pruned ALBERT (its shared layer narrowed) in every runtime: its graph carries the narrowed shapes."""
    from edgebert.export import export

    report = export(target, model=pruned_albert, out=tmp_path / target, quantize=quantize, seq_len=SEQ_LEN, quiet=True)
    parity = report.manifest["parity"]
    assert parity["passed"], parity
    if quantize == "none":
        assert parity["min_cosine"] >= 0.9999


def test_pruned_albert_heals(student_dir: Path, calibration_text: Path, tmp_path: Path) -> None:
    """Healing distils the unpruned ALBERT into the pruned one (distill --student-init with an ALBERT teacher)."""
    from edgebert.compress.compress import compress
    from edgebert.compress.heal import HealConfig

    out = tmp_path / "healed"
    heal = HealConfig(steps=3, corpus=[str(calibration_text)], batch_size=4, seq_len=SEQ_LEN)
    report = compress(student_dir, out, prune_heads=0.25, prune_ffn=0.5, calibration=calibration_text, calibration_samples=24,
                      seq_len=SEQ_LEN, heal=heal, quiet=True)  # fmt: skip
    healing = report.manifest["healing"]
    assert healing["kept"] in ("healed", "pruned") and healing["steps"] == 3
    assert json.loads((out / "edgebert.json").read_text())["healing"] == healing
    assert json.loads((out / "config.json").read_text())["model_type"] == "albert"
