"""`--quantize int8-static`: calibrated static int8 for ONNX (QDQ) and TFLite, on tiny BERTs and the teacher."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import WORDS

from edgebert.cli import main
from edgebert.errors import UserError, VerificationError
from edgebert.export import ExportReport, calibration_set, export
from edgebert.families import BERT
from edgebert.parity import PARITY_SENTENCES, default_min_cosine

SEQ_LEN = 32
STATIC = "int8-static"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def calibration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """48 seeded passages of 4-20 vocabulary words (real tokens of the tiny tokenizer), one per line."""
    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20))) for _ in range(48)]
    path = tmp_path_factory.mktemp("calib") / "calibration.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def onnx_static(tiny_bert: Path, calibration: Path, tmp_path_factory: pytest.TempPathFactory) -> ExportReport:
    out = tmp_path_factory.mktemp("onnx") / "static"
    return export("onnx", model=tiny_bert, out=out, quantize=STATIC, seq_len=SEQ_LEN, calibration=calibration, quiet=True)


@pytest.fixture(scope="module")
def tflite_static(tiny_bert: Path, calibration: Path, tmp_path_factory: pytest.TempPathFactory) -> ExportReport:
    pytest.importorskip("litert_torch")
    pytest.importorskip("ai_edge_quantizer")
    out = tmp_path_factory.mktemp("tflite") / "static"
    return export(
        "tflite", model=tiny_bert, out=out, quantize=STATIC, seq_len=SEQ_LEN, calibration=calibration, quiet=True
    )


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse errors
        code = int(exc.code)
    return code, capsys.readouterr().err.strip()


# ------------------------------------------------------------------------------------------------ ONNX


def test_onnx_static_is_qdq_with_uint8_weights_and_passes_parity(onnx_static: ExportReport) -> None:
    import onnx

    graph = onnx.load(str(onnx_static.out_dir / "model.onnx")).graph
    ops = [n.op_type for n in graph.node]
    assert ops.count("QuantizeLinear") > 0 and ops.count("DequantizeLinear") > 0
    # U8U8: no uint8 x int8 product is left for x86 CPUs without VNNI to saturate.
    uint8_weights = [i for i in graph.initializer if i.data_type == onnx.TensorProto.UINT8 and len(i.dims) == 2]
    # 2 layers x query, key, value, attention output (FFN stays float) + 3 embedding tables (word, position, type)
    assert len(uint8_weights) == 2 * 4 + 3
    assert not [i for i in graph.initializer if i.data_type == onnx.TensorProto.INT8 and len(i.dims) == 2]
    parity = onnx_static.parity
    assert parity["passed"] and parity["threshold"] == default_min_cosine(STATIC)
    assert parity["kernel_paths"]["host"]["natural_length"]["sentences"] == len(PARITY_SENTENCES)
    assert set(parity["kernel_paths"]) == {"host"}


def test_onnx_static_quantizes_the_embedding_table_and_keeps_the_ffn_float(onnx_static: ExportReport) -> None:
    import onnx

    graph = onnx.load(str(onnx_static.out_dir / "model.onnx")).graph
    produced_by = {out: n for n in graph.node for out in n.output}
    initializers = {i.name: i for i in graph.initializer}
    word_gather = next(n for n in graph.node if n.op_type == "Gather" and "word_embeddings" in n.name)
    table = produced_by[word_gather.input[0]]
    assert table.op_type == "DequantizeLinear"
    assert initializers[table.input[0]].data_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)

    excluded = onnx_static.manifest["target_details"]["quantization"]["excluded_nodes"]
    ffn_names = {f"/encoder/encoder/layer.{i}/{m}/dense/MatMul" for i in range(2) for m in ("intermediate", "output")}
    ffn = [n for n in graph.node if n.name in ffn_names]
    assert len(ffn) == 4 and sorted(excluded) == sorted(ffn_names)
    for node in ffn:  # float weights straight from an initializer, no DequantizeLinear in front
        assert node.input[1] in initializers and initializers[node.input[1]].data_type == onnx.TensorProto.FLOAT
    attention_q = next(n for n in graph.node if n.op_type == "MatMul" and "/layer.0/attention/self/query/" in n.name)
    assert all(produced_by[i].op_type == "DequantizeLinear" for i in attention_q.input)


def test_onnx_static_manifest_records_recipe_and_calibration(onnx_static: ExportReport, calibration: Path) -> None:
    manifest = onnx_static.manifest
    assert manifest["quantization"] == STATIC
    details = manifest["target_details"]["quantization"]
    assert details["format"] == "QDQ" and "MinMax" in details["calibration_method"]
    assert details["float_modules"] == {"ffn_input_module": BERT.layer_module("ffn_input"), "ffn_output_module": BERT.layer_module("ffn_output")}
    record = details["calibration"]
    assert record["file"] == str(calibration.absolute()) and record["passages"] == 48
    assert len(record["file_fingerprint"]) == 16 and record["dropped_parity_sentences"] == 0


def test_onnx_static_ranges_come_from_the_calibration_text(tiny_bert: Path, tmp_path: Path) -> None:
    """Other calibration text, other activation scales: the recipe really reads the sentences it is given."""
    import onnx
    from onnx import numpy_helper

    def scales(texts: list[str], name: str) -> dict[str, np.ndarray]:
        out = tmp_path / name
        export("onnx", model=tiny_bert, out=out, quantize=STATIC, seq_len=SEQ_LEN, calibration_texts=texts, quiet=True)
        graph = onnx.load(str(out / "model.onnx")).graph
        return {i.name: numpy_helper.to_array(i) for i in graph.initializer if i.name.endswith("_scale")}

    short = scales(["the cat", "a dog"], "short")
    long = scales([" ".join(WORDS[i : i + 30]) for i in range(0, 60, 5)], "long")
    assert short.keys() == long.keys()
    assert any(not np.allclose(short[k], long[k]) for k in short)


# ---------------------------------------------------------------------------------------------- TFLite


def _fully_connected(path: Path) -> list[tuple[str, str, str]]:
    """(activation in, weight, activation out) dtypes of every FULLY_CONNECTED op of a .tflite file."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(path))
    tensors = {t["index"]: t["dtype"].__name__ for t in interpreter.get_tensor_details()}
    ops = [o for o in interpreter._get_ops_details() if o["op_name"] == "FULLY_CONNECTED"]  # noqa: SLF001
    return [(tensors[o["inputs"][0]], tensors[o["inputs"][1]], tensors[o["outputs"][0]]) for o in ops]


def test_tflite_static_has_int8_weights_and_activations_on_fully_connected(tflite_static: ExportReport) -> None:
    fully_connected = _fully_connected(tflite_static.out_dir / "model.tflite")
    integer = [fc for fc in fully_connected if fc == ("int8", "int8", "int8")]
    floating = [fc for fc in fully_connected if fc == ("float32", "float32", "float32")]
    assert len(integer) == 2 * 4  # query, key, value, attention output per layer
    assert len(floating) == 2 * 2  # the FFN projections stay float
    assert len(integer) + len(floating) == len(fully_connected)
    details = tflite_static.manifest["target_details"]
    assert set(details["weight_dtypes"]["EMBEDDING_LOOKUP"]) == {"int8"}
    assert details["quantization"]["activation_dtypes"]["BATCH_MATMUL"] == {"int8 -> int8": 4}


def test_tflite_static_keeps_the_float_contract_and_passes_parity(tflite_static: ExportReport) -> None:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(tflite_static.out_dir / "model.tflite"))
    runner = interpreter.get_signature_runner("serving_default")
    assert {d["dtype"] for d in runner.get_output_details().values()} == {np.float32}
    assert {d["dtype"] for d in runner.get_input_details().values()} == {np.int32}
    parity = tflite_static.parity
    assert parity["passed"] and parity["threshold"] == default_min_cosine(STATIC)
    assert tflite_static.manifest["target_details"]["quantization"]["calibration"]["passages"] == 48


# ---------------------------------------------------------------------------------------- user errors


@pytest.mark.parametrize("target", ["onnx", "tflite"])
def test_missing_calibration_is_exit_2_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tiny_bert: Path, tmp_path: Path, target: str
) -> None:
    out = tmp_path / "o"
    code, err = run_cli(capsys, "export", "--target", target, "--model", str(tiny_bert), "--out", str(out), "--quantize", STATIC)
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "--calibration" in lines[0] and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--quantize", "int8", "--calibration", "CALIB"], "only used by --quantize int8-static"),
        (["--quantize", STATIC, "--calibration", "MISSING"], "is not a file"),
        (["--quantize", STATIC, "--calibration", "CALIB", "--calibration-samples", "0"], "--calibration-samples must be at least 1"),
    ],
)
def test_bad_calibration_arguments_are_exit_2(
    capsys: pytest.CaptureFixture[str], tiny_bert: Path, calibration: Path, tmp_path: Path, args: list[str], fragment: str
) -> None:
    out = tmp_path / "o"
    args = [str(calibration) if a == "CALIB" else str(tmp_path / "nope.txt") if a == "MISSING" else a for a in args]
    code, err = run_cli(capsys, "export", "--target", "onnx", "--model", str(tiny_bert), "--out", str(out), *args)
    assert code == 2 and fragment in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_parity_sentences_are_never_calibration_sentences() -> None:
    texts = [s.upper() for s in PARITY_SENTENCES] + ["  hello   WORLD. ", "a passage of its own", ""]
    used, record = calibration_set(STATIC, None, texts)
    assert used == ("a passage of its own",)
    assert record["dropped_parity_sentences"] == len(PARITY_SENTENCES) + 1 and record["passages"] == 1
    with pytest.raises(UserError, match="besides the parity sentences"):
        calibration_set(STATIC, None, list(PARITY_SENTENCES))


def test_calibration_samples_caps_the_passages(calibration: Path) -> None:
    used, record = calibration_set(STATIC, calibration, None, samples=5)
    first = [line for line in calibration.read_text().splitlines() if line.strip()][:5]
    assert list(used) == first and record["passages"] == 5 and record["max_passages"] == 5
    assert calibration_set("int8", None, None) == ((), None)


# ---------------------------------------------------------------------------------------- integration


@pytest.fixture(scope="module")
def sotu_calibration(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """200 seeded passages of the State of the Union corpus, written by benchmarks/suites/make_calibration.py."""
    out = tmp_path_factory.mktemp("sotu") / "calibration.txt"
    corpus = shared_data / "corpus" / "sotu.txt.gz"
    script = ROOT / "benchmarks" / "suites" / "make_calibration.py"
    subprocess.run([sys.executable, str(script), str(corpus), str(out), "--passages", "200"], check=True, capture_output=True)
    return out


@pytest.mark.integration
@pytest.mark.parametrize("target", ["onnx"])
def test_teacher_static_exports_are_refused_naming_the_recipes_that_hold(
    packaged_teacher: Path, sotu_calibration: Path, tmp_path: Path, target: str
) -> None:
    """Over the wide parity texts the teacher's int8-static exports drift below 0.99 (ONNX 0.981, TFLite 0.14 on
    XNNPACK: benchmarks/README.md, "Parity over a few hundred texts"; the ten parity sentences alone passed them at
    0.992-0.994): refused, nothing written, and the dynamic int8 recipe, which holds, is named with its figure.
    ONNX only (the refusal and the recipes tried are the export's, shared by every target): TFLite's took five
    minutes of the suite."""
    with pytest.raises(VerificationError) as info:
        export(target, model=None, out=tmp_path / target, quantize=STATIC, calibration=sotu_calibration, quiet=True)
    message = str(info.value)
    assert f"< {default_min_cosine(STATIC)}" in message and not (tmp_path / target).exists()
    named = re.search(r"recipes that hold for this model: .*\bint8 \(min cosine (\d\.\d+)\)", message)
    assert named and float(named.group(1)) >= default_min_cosine("int8"), message
