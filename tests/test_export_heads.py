"""Task heads exported whole: text classification on every family, token classification and fill-mask,
through ONNX, TFLite and TF.js and their quantizations, checked against transformers' own model; manifest labels,
summary and the refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from model_zoo import build_albert, build_bert, build_distilbert, build_electra, build_roberta

from edgebert.errors import UserError
from edgebert.families import family_for

SEQ_LEN = 32
BUILD = {"bert": build_bert, "distilbert": build_distilbert, "roberta": build_roberta, "electra": build_electra, "albert": build_albert}
ID2LABEL = {0: "negative", 1: "neutral", 2: "positive"}
SENTENCES = ["A man is playing a guitar.", "WHY IS EVERYONE SHOUTING?", "Prices rose 3.5% in May, then fell."]
# Weights drawn at this std instead of transformers' 0.02: the tiny random models then give logits of order one that
# differ between sentences and labels, so that parity and argmax agreement measure something.
SHARP_STD = 0.1


def sharpen(model_dir: Path, seed: int = 0) -> Path:
    """Redraw every weight of the saved task model in `model_dir` at SHARP_STD (the head's and the encoder's)."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(model_dir)
    model = getattr(transformers, config.architectures[0]).from_pretrained(model_dir)
    torch.manual_seed(seed)
    with torch.no_grad():  # transformers' _init_weights; transformers 5 skips modules it already initialised
        for module in model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
                module.weight.normal_(0.0, SHARP_STD)
            if isinstance(module, torch.nn.Linear) and module.bias is not None:
                module.bias.zero_()
            if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
    model.tie_weights()
    model.save_pretrained(model_dir, safe_serialization=True)
    return model_dir


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One tiny text classifier per family, labels negative / neutral / positive."""
    root = tmp_path_factory.mktemp("classifiers")
    return {name: sharpen(build(root / name, head="sequence-classification", id2label=ID2LABEL)) for name, build in BUILD.items()}


@pytest.fixture(scope="module")
def tagger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sharpen(build_bert(tmp_path_factory.mktemp("tagger") / "m", head="token-classification", num_labels=5))


@pytest.fixture(scope="module")
def masked_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sharpen(build_distilbert(tmp_path_factory.mktemp("mlm") / "m", head="fill-mask"))


def transformers_logits(model_dir: Path, texts: list[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(inputs, logits) of the model's own transformers class, as the user's code computes them."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(model_dir)
    model = getattr(transformers, config.architectures[0]).from_pretrained(model_dir).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    types = family_for(config.model_type).uses_token_type_ids  # transformers 5's ALBERT tokenizer omits them unasked
    batch = tokenizer(texts, padding="max_length", truncation=True, max_length=SEQ_LEN, return_tensors="pt", return_token_type_ids=types)
    with torch.no_grad():
        logits = model(**batch).logits.numpy()
    return {k: v.numpy() for k, v in batch.items()}, logits


def exported_run(out: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The export's outputs through its target's own runner (the Runner contract)."""
    from edgebert.targets import get_exporter

    manifest = json.loads((out / "edgebert.json").read_text())
    runner = get_exporter(manifest["target"]).load_runner(out, manifest)
    try:
        return runner.run({i["name"]: inputs[i["name"]] for i in manifest["inputs"]})
    finally:
        runner.close()


def _export(model: Path, out: Path, target: str, quantize: str = "none", **options: object) -> dict:
    from edgebert.export import export

    if quantize == "int8-static":
        options["calibration_texts"] = [f"{s} {i}" for i in range(8) for s in SENTENCES]
    return export(target, model=model, out=out, quantize=quantize, seq_len=SEQ_LEN, quiet=True, **options).manifest


@pytest.mark.parametrize("family", list(BUILD))
def test_text_classifier_exports_its_logits_and_labels_on_every_family(classifiers: dict[str, Path], tmp_path: Path, family: str) -> None:
    manifest = _export(classifiers[family], tmp_path / "out", "onnx")
    assert manifest["task"] == "text-classification" and manifest["parity"]["passed"]
    assert manifest["outputs"] == [
        {"name": "logits", "dtype": "float32", "shape": ["batch", 3], "dim": 3, "labels": ["negative", "neutral", "positive"]}
    ]
    assert manifest["model"]["id2label"] == {"0": "negative", "1": "neutral", "2": "positive"}
    assert manifest["model"]["head"].endswith("ForSequenceClassification") and "sentence_stack" not in manifest["model"]
    inputs, expected = transformers_logits(classifiers[family], SENTENCES)
    got = exported_run(tmp_path / "out", inputs)
    assert set(got) == {"logits"} and got["logits"].dtype == np.float32
    np.testing.assert_allclose(got["logits"], expected, atol=1e-4)
    assert np.ptp(expected, axis=0).max() > 0.01  # the sentences get different logits (100x the tolerance)
    for check in manifest["parity"]["kernel_paths"]["host"].values():
        if isinstance(check, dict):
            assert check["agreement"] == 1.0 and check["outputs"]["logits"]["min_cosine"] > 0.9999


@pytest.mark.parametrize(
    ("family", "target", "quantize"),
    [
        ("roberta", "onnx", "int8"),
        ("electra", "onnx", "int8-static"),
        ("distilbert", "onnx", "fp16"),
        ("albert", "tflite", "int8"),
        ("bert", "tflite", "int8-static"),
        ("electra", "tflite", "fp16"),
    ],
)
def test_text_classifier_carries_its_head_in_every_target(
    classifiers: dict[str, Path], tmp_path: Path, family: str, target: str, quantize: str
) -> None:
    manifest = _export(classifiers[family], tmp_path / "out", target, quantize)
    assert manifest["parity"]["passed"] and manifest["outputs"][0]["labels"] == ["negative", "neutral", "positive"]
    inputs, expected = transformers_logits(classifiers[family], SENTENCES)
    got = exported_run(tmp_path / "out", inputs)["logits"]
    assert got.shape == expected.shape
    tolerance = 1e-4 if quantize == "none" else 0.02 if quantize in ("fp16", "float16") else 0.25
    np.testing.assert_allclose(got, expected, atol=tolerance)


@pytest.fixture(scope="module")
def tfjs_classifier(classifiers: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The DistilBERT classifier exported to TF.js (float32): the TF twin TFDistilBertForSequenceClassification."""
    out = tmp_path_factory.mktemp("tfjs") / "out"
    _export(classifiers["distilbert"], out, "tfjs")
    return out


def test_tfjs_classifier_computes_the_pytorch_logits(classifiers: dict[str, Path], tfjs_classifier: Path) -> None:
    manifest = json.loads((tfjs_classifier / "edgebert.json").read_text())
    assert manifest["parity"]["passed"] and manifest["outputs"][0]["shape"] == [1, 3]
    assert "logits" in manifest["target_details"]["output_nodes"]
    assert "aten.linear.default" in manifest["target_details"]["graph_ops"]
    inputs, expected = transformers_logits(classifiers["distilbert"], SENTENCES)
    np.testing.assert_allclose(exported_run(tfjs_classifier, inputs)["logits"], expected, atol=1e-4)


@pytest.mark.parametrize("target", ["onnx", "tflite"])
def test_token_classifier_exports_per_token_logits(tagger: Path, tmp_path: Path, target: str) -> None:
    manifest = _export(tagger, tmp_path / "out", target)
    assert manifest["task"] == "token-classification" and manifest["parity"]["passed"]
    seq = "sequence" if target == "onnx" else SEQ_LEN
    batch = "batch" if target == "onnx" else 1
    assert manifest["outputs"][0]["shape"] == [batch, seq, 5] and manifest["outputs"][0]["labels"] == [f"LABEL_{i}" for i in range(5)]
    inputs, expected = transformers_logits(tagger, SENTENCES)
    got = exported_run(tmp_path / "out", inputs)["logits"]
    mask = inputs["attention_mask"].astype(bool)
    np.testing.assert_allclose(got[mask], expected[mask], atol=1e-4)


@pytest.mark.parametrize("target", ["onnx", "tfjs"])
def test_fill_mask_exports_top_k_ids_and_scores(masked_lm: Path, tmp_path: Path, target: str) -> None:
    import torch

    manifest = _export(masked_lm, tmp_path / "out", target, task="fill-mask", top_k=4)
    assert manifest["task"] == "fill-mask" and manifest["parity"]["passed"]
    assert [(o["name"], o["dtype"], o["shape"][-1]) for o in manifest["outputs"]] == [("top_ids", "int32", 4), ("top_scores", "float32", 4)]
    inputs, logits = transformers_logits(masked_lm, SENTENCES)
    expected_scores, expected_ids = torch.topk(torch.softmax(torch.from_numpy(logits), -1), 4)
    got = exported_run(tmp_path / "out", inputs)
    mask = inputs["attention_mask"].astype(bool)
    assert got["top_ids"].dtype == np.int32
    assert (got["top_ids"][mask][:, 0] == expected_ids.numpy()[mask][:, 0]).mean() >= 0.95
    np.testing.assert_allclose(got["top_scores"][mask], expected_scores.numpy()[mask], atol=1e-4)


def test_masked_lm_still_exports_its_encoder_by_default(masked_lm: Path, tmp_path: Path) -> None:
    manifest = _export(masked_lm, tmp_path / "out", "onnx")
    assert manifest["task"] == "feature-extraction" and manifest["model"]["head_left_out"] == "fill-mask"


def test_summary_prints_task_outputs_and_labels(classifiers: dict[str, Path], tmp_path: Path, run_cli) -> None:
    code, out, err = run_cli("export", "--target", "onnx", "--model", str(classifiers["bert"]), "--out", str(tmp_path / "o"), "--seq-len", "32")
    assert code == 0, err
    assert "task: text-classification; outputs: logits float32['batch', 3]" in out
    assert "labels of logits (index order): negative, neutral, positive" in out
    import re

    found = re.search(r"argmax agreement 100\.0% of (\d+) sentences \(lowest check 100\.0%\)", out)
    assert found and int(found.group(1)) >= 255, out  # the figure stands on the wide parity texts, and says so


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "fill-mask"], "is a text-classification model, it has no fill-mask head"),
        (["--task", "token-classification"], "it has no token-classification head"),
        (["--task", "question-answering"], "--task question-answering is not supported"),
    ],
)
def test_a_task_the_model_has_no_head_for_is_one_line_exit_2(classifiers: dict[str, Path], tmp_path: Path, run_cli, args: list[str], message: str) -> None:
    code, _, err = run_cli("export", "--target", "onnx", "--model", str(classifiers["distilbert"]), "--out", str(tmp_path / "o"), *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_top_k_outside_the_vocabulary_is_refused(masked_lm: Path, tmp_path: Path) -> None:
    for k in (0, 10**6):
        with pytest.raises(UserError, match=f"--top-k {k} must be between 1 and the vocabulary size"):
            _export(masked_lm, tmp_path / "a", "onnx", task="fill-mask", top_k=k)
    assert not (tmp_path / "a").exists()


def test_a_head_missing_from_the_weights_is_refused(classifiers: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    from safetensors.torch import load_file, save_file

    broken = tmp_path / "broken"
    shutil.copytree(classifiers["bert"], broken)
    state = load_file(broken / "model.safetensors")
    save_file({k: v for k, v in state.items() if not k.startswith("classifier.")}, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(UserError, match="lack part of its text-classification head or encoder .*classifier"):
        _export(broken, tmp_path / "out", "onnx")


@pytest.mark.integration
def test_demo_classify_in_node_matches_pytorch(classifiers: dict[str, Path], tfjs_classifier: Path, tmp_path: Path) -> None:
    """demo_app's classify(text) (src/core/classify.ts) on a TF.js export of a classifier, against transformers' logits."""
    import shutil
    import subprocess

    app = Path(__file__).resolve().parents[1] / "demo_app"
    npm = shutil.which("npm")
    if not npm or not (app / "node_modules" / "tsx" / "package.json").exists():
        pytest.fail("the demo's Node packages are needed: run demo_app/scripts/install.sh")
    model = classifiers["distilbert"]
    texts = [*SENTENCES, "Crème brûlée in Zürich 😍"]
    _, logits = transformers_logits(model, texts)
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps({"labels": list(ID2LABEL.values()), "texts": texts, "logits": logits.tolist()}))
    env = {**__import__("os").environ, "EDGEBERT_CLASSIFIER_DIR": str(tfjs_classifier), "EDGEBERT_CLASSIFIER_REFERENCE": str(reference)}
    proc = subprocess.run([npm, "run", "--silent", "test:classify"], cwd=app, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "ℹ pass 3" in proc.stdout and "ℹ skipped 0" in proc.stdout, proc.stdout[-3000:]
