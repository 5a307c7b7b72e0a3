"""ONNX exports laid out for transformers.js (`edgebert export --target onnx --layout transformers.js`).

transformers.js (npm `@huggingface/transformers`, a devDependency of js/edgebert-runtime) loads the export's folder
as it is, with `pipeline(task, folder)` and the call options the export summary prints, in Node (onnxruntime-node)
and in headless Chromium (its web build on onnxruntime-web's wasm backend, the folder served over HTTP): for a tiny
embedder (mean pooling, normalized) and a tiny classifier, fp32 and int8, on texts with accents and Greek, its
embeddings are within cosine 0.9999 of edgebert's runner on the same file and of edgebert-runtime on the same folder,
its labels and scores within 1e-4; a text longer than --seq-len is fed cut at --seq-len without its final [SEP]
(transformers.js's truncation), and computes what edgebert's runner computes on exactly those ids.

Fast checks here need no Node: the files and manifest of the layout, the refusals, the summary's snippet (and why it
prints none for a pooling transformers.js cannot compute).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_js_runtime import CHROMIUM, ID2LABEL, LONG, PACKAGE, _missing_dependency, _passed, _report, _run_npm

from edgebert.errors import UserError
from edgebert.targets.onnx import transformers_js

SEQ_LEN = 32
TEXTS = ["Hello world.", "Crème brûlée at the café, ΣΟΦΟΣ said", "why", LONG]
LAYOUT = {"layout": "transformers.js"}


def _export(model: Path, out: Path, **options: Any) -> Path:
    from edgebert.export import export

    export("onnx", model=model, out=out, quiet=True, seq_len=SEQ_LEN, **{**LAYOUT, **options})
    return out


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny embedder (mean pooling + L2 norm, the family default) and a tiny classifier whose head is scaled so that
    its labels are apart (a random head gives each label about a third)."""
    import torch
    from model_zoo import build_bert
    from transformers import AutoModelForSequenceClassification

    root = tmp_path_factory.mktemp("web-models")
    classifier = build_bert(root / "classifier", head="sequence-classification", id2label=ID2LABEL)
    model = AutoModelForSequenceClassification.from_pretrained(classifier)
    with torch.no_grad():
        model.classifier.weight.mul_(60.0)
    model.save_pretrained(classifier)
    return {"embedder": build_bert(root / "embedder"), "classifier": classifier}


@pytest.fixture(scope="module")
def exports(models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("web-exports")
    return {
        f"{kind} {quantize}": _export(models[kind], root / f"{kind[:3]}-{quantize}", quantize=quantize)
        for kind in ("embedder", "classifier")
        for quantize in ("none", "int8")
    }


def _manifest(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "edgebert.json").read_text())


# --- the layout ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "file", "dtype", "options"),
    [("embedder none", "onnx/model.onnx", "fp32", {"pooling": "mean", "normalize": True}), ("classifier int8", "onnx/model_quantized.onnx", "q8", {"top_k": None})],
)
def test_the_layout_holds_one_onnx_file_where_transformers_js_looks(exports: dict[str, Path], name: str, file: str, dtype: str, options: dict) -> None:
    out = exports[name]
    manifest = _manifest(out)
    details = manifest["target_details"]
    assert details["layout"] == "transformers.js" and details["model_file"] == file
    assert details["transformers_js"] == {
        "version": transformers_js.VERSION, "dtype": dtype, "config": "config.json", "model_max_length": SEQ_LEN, "pipeline_options": options,
    }  # fmt: skip
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == sorted(
        ["edgebert.json", "config.json", "tokenizer.json", "tokenizer_config.json", file]
    )
    assert manifest["files"] == {file: (out / file).stat().st_size, "config.json": (out / "config.json").stat().st_size}
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == "bert" and config["transformers.js_config"] == {"dtype": dtype}
    if manifest["task"] == "text-classification":
        assert config["id2label"] == {str(k): v for k, v in ID2LABEL.items()}
    assert json.loads((out / "tokenizer_config.json").read_text())["model_max_length"] == SEQ_LEN


def test_edgeberts_runner_reads_the_file_the_manifest_names(exports: dict[str, Path]) -> None:
    """The runner `edgebert bench` and the parity check use opens onnx/…: the same numbers as the file itself."""
    import onnxruntime as ort

    from edgebert.parity import encode
    from edgebert.targets import get_exporter
    from edgebert.modelio import load_tokenizer

    out = exports["classifier int8"]
    runner = get_exporter("onnx").load_runner(out, _manifest(out))
    feed = encode(load_tokenizer(out), TEXTS[:2], SEQ_LEN, pad_to_seq_len=False)
    session = ort.InferenceSession(str(out / "onnx" / "model_quantized.onnx"), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(runner.run(feed)["logits"], session.run(["logits"], dict(feed))[0])


@pytest.mark.parametrize(
    ("target", "options", "fragment"),
    [
        ("tflite", {}, "--layout transformers.js is not written by target tflite; it writes edgebert"),
        ("onnx", {"input_dtype": "int32"}, "takes int64 ids (transformers.js's tokenizer feeds int64), not --input-dtype int32"),
        ("onnx", {"task": "fill-mask"}, "not fill-mask (its fill-mask pipeline reads the vocabulary's logits"),
    ],
)
def test_what_transformers_js_cannot_load_is_refused_in_one_line(models: dict[str, Path], tmp_path: Path, target: str, options: dict, fragment: str) -> None:
    from edgebert.export import export

    model = models["embedder"]
    if options.get("task") == "fill-mask":
        from model_zoo import build_bert

        model = build_bert(tmp_path / "mlm", head="fill-mask")
    with pytest.raises(UserError, match="^[^\n]*$") as caught:
        export(target, model=model, out=tmp_path / "out", quiet=True, seq_len=SEQ_LEN, **LAYOUT, **options)
    assert fragment in str(caught.value) and not (tmp_path / "out").exists()


def test_a_model_type_without_a_transformers_js_class_is_refused() -> None:
    with pytest.raises(UserError, match="transformers.js 4.3.1 has no model class for model_type 'xlnet'"):
        transformers_js.check("feature-extraction", {"model_type": "xlnet"}, None)


def test_the_cli_offers_the_layout(capsys: pytest.CaptureFixture[str]) -> None:
    from edgebert.cli import main

    with pytest.raises(SystemExit):
        main(["export", "--help"])
    assert "--layout {edgebert,transformers.js}" in capsys.readouterr().out


# --- the summary's snippet ------------------------------------------------------------------------------------------


def _stack_manifest(pooling: str, dense: list | None = None, normalize: bool = True, padding_side: str = "right") -> dict[str, Any]:
    return {
        "target": "onnx", "task": "feature-extraction",
        "model": {"pooling": pooling, "padding_side": padding_side,
                  "sentence_stack": {"pooling": pooling, "dense": dense or [], "normalize": normalize}},
        "outputs": [{"name": "sentence_embedding", "normalized": normalize}, {"name": "last_hidden_state"}],
        "target_details": {"layout": "transformers.js", "model_file": "onnx/model.onnx", "transformers_js": transformers_js.details("none", 32)},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("manifest", "options"),
    [
        (_stack_manifest("mean"), {"pooling": "mean", "normalize": True}),
        (_stack_manifest("cls", normalize=False), {"pooling": "cls", "normalize": False}),
        (_stack_manifest("max"), "its pooling is 'max'; transformers.js pools mean and cls alike"),
        (_stack_manifest("lasttoken"), "its pooling is 'lasttoken'"),
        (_stack_manifest("mean+max"), "its pooling is 'mean+max'"),
        (_stack_manifest("mean", dense=[{"out_features": 16, "activation": "tanh"}]), "1 Dense layer(s) after pooling"),
        (_stack_manifest("cls", padding_side="left"), "pads on the left"),
    ],
    ids=["mean", "cls", "max", "lasttoken", "mean+max", "dense", "cls-left-padding"],
)
def test_the_snippet_computes_edgeberts_vector_or_says_in_one_line_why_none_does(manifest: dict, options: Any) -> None:
    lines = transformers_js.snippet(manifest, "emb")
    if isinstance(options, dict):
        assert transformers_js.pipeline_options(manifest) == (options, "")
        call = f"{{ pooling: '{options['pooling']}', normalize: {str(options['normalize']).lower()} }}"
        assert any(call in line for line in lines), lines
    else:
        assert len(lines) == 1 and options in lines[0] and "no snippet" in lines[0] and "pooling:" not in lines[0], lines


@pytest.mark.parametrize(
    ("manifest", "recorded"),
    [
        (_stack_manifest("cls", normalize=False), {"pipeline_options": {"pooling": "cls", "normalize": False}}),
        ({**_stack_manifest("mean"), "task": "text-classification"}, {"pipeline_options": {"top_k": None}}),
        (_stack_manifest("max"), {"pipeline_options": None, "no_pipeline_options": "its pooling is 'max'; transformers.js pools mean and cls alike"}),
    ],
    ids=["cls", "classifier", "max"],
)
def test_the_manifest_records_the_pipeline_options_and_the_snippet_prints_them(manifest: dict, recorded: dict) -> None:
    """`target_details.transformers_js.pipeline_options` (what edgebert-runtime's transformersJsOptions hands a
    JavaScript app), or null and why; the snippet prints what the manifest records."""
    transformers_js.add_pipeline_options(manifest)
    details = manifest["target_details"]["transformers_js"]
    assert {k: details[k] for k in recorded} == recorded and set(details) - set(recorded) == set(transformers_js.details("none", 32))
    details["pipeline_options"] = details["pipeline_options"] and {**details["pipeline_options"], "marker": "recorded"}
    lines = "\n".join(transformers_js.snippet(manifest, "emb"))
    assert ("marker: 'recorded'" in lines) == (recorded["pipeline_options"] is not None), lines


def test_an_export_in_edgeberts_layout_names_the_option() -> None:
    manifest = {"target": "onnx", "task": "feature-extraction", "target_details": {}}
    assert transformers_js.snippet(manifest, "emb") == ["transformers.js: export with --layout transformers.js for the layout its pipeline() loads"]
    assert transformers_js.snippet({**manifest, "target": "tflite"}, "emb") == []


def test_export_summary_prints_both_snippets_with_the_model_file(exports: dict[str, Path]) -> None:
    from rich.console import Console

    from edgebert.export import ExportReport
    from edgebert.summary import print_export_summary

    out = exports["classifier int8"]
    buffer = StringIO()
    print_export_summary(ExportReport(out, _manifest(out)), Console(file=buffer, width=400))
    text = buffer.getvalue()
    assert f"ort.InferenceSession('{out}/onnx/model_quantized.onnx')" in text
    assert f"require('./{out.name}/onnx/model_quantized.onnx')" in text
    assert f"const classifier = await pipeline('text-classification', '{out.name}');  // onnx/model_quantized.onnx (dtype 'q8' in config.json)" in text
    assert f"serve this folder as /models/{out.name}/" in text


def test_the_snippet_type_checks_against_transformers_js(exports: dict[str, Path], tmp_path: Path) -> None:
    """The transformers.js code `edgebert export` prints compiles against @huggingface/transformers' types (tsc, strict)."""
    modules = PACKAGE / "node_modules"
    if not (modules / "@huggingface" / "transformers" / "package.json").exists() or not shutil.which("node"):
        _missing_dependency("@huggingface/transformers is not installed in js/edgebert-runtime")
    for name in ("embedder none", "classifier int8"):
        lines = transformers_js.snippet(_manifest(exports[name]), "model")
        (tmp_path / f"{name.replace(' ', '-')}.ts").write_text("\n".join(line.strip() for line in lines[1:]) + "\nexport {};\n")
    (tmp_path / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler", "strict": True, "noEmit": True,
                            "skipLibCheck": True, "lib": ["ES2022", "DOM"], "types": [], "baseUrl": str(modules), "paths": {"*": [str(modules / "*")]}},
        "include": [str(tmp_path / "*.ts")],
    }))  # fmt: skip
    proc = subprocess.run(["node", str(modules / "typescript" / "bin" / "tsc"), "-p", str(tmp_path / "tsconfig.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, f"the transformers.js snippet does not compile:\n{_report(proc)}"


# --- transformers.js itself, in Node and in Chromium ----------------------------------------------------------------


def _case(runner: Any, tokenizer: Any, text: str, output: str) -> dict[str, Any]:
    """edgebert's runner on one text as edgebert feeds it; for a text longer than SEQ_LEN also on the ids
    transformers.js feeds (the text's ids cut at SEQ_LEN, the final [SEP] with them)."""
    from edgebert.parity import encode

    inputs = encode(tokenizer, [text], SEQ_LEN, pad_to_seq_len=False)
    case = {"text": text, "input_ids": inputs["input_ids"][0].tolist(), "outputs": {output: runner.run(inputs)[output][0].tolist()}}
    full = tokenizer([text], return_tensors="np", return_token_type_ids=True, verbose=False)
    if full["input_ids"].shape[1] > SEQ_LEN:
        cut = {k: np.asarray(v[:, :SEQ_LEN], dtype=np.int64) for k, v in full.items()}
        case["cut"] = {"input_ids": cut["input_ids"][0].tolist(), "outputs": {output: runner.run(cut)[output][0].tolist()}}
    return case


@pytest.fixture(scope="module")
def cases(exports: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exports with edgebert's runner's outputs (the runner opens the file the manifest names); the JS tests
    call the pipeline with the options the manifest records, as the summary prints them."""
    from edgebert.modelio import load_tokenizer
    from edgebert.targets import get_exporter

    entries = []
    for name, out in exports.items():
        manifest = _manifest(out)
        runner = get_exporter("onnx").load_runner(out, manifest)
        tokenizer = load_tokenizer(out)
        task = manifest["task"]
        output = "sentence_embedding" if task == "feature-extraction" else "logits"
        assert manifest["target_details"]["transformers_js"]["pipeline_options"] is not None  # the JS tests read them there
        labels = next((o.get("labels") for o in manifest["outputs"] if o["name"] == "logits"), None) or []
        entries.append({"name": name, "runtime": "transformers.js", "dir": str(out), "task": task, "seq_len": SEQ_LEN, "labels": labels,
                        "cases": [_case(runner, tokenizer, t, output) for t in TEXTS]})  # fmt: skip
        runner.close()
    assert sum("cut" in c for e in entries for c in e["cases"]) == len(entries)  # LONG is longer than SEQ_LEN
    path = tmp_path_factory.mktemp("web-cases") / "cases.json"
    path.write_text(json.dumps({"exports": entries}))
    return path


def test_transformers_js_loads_the_exports_in_node_and_chromium(cases: Path) -> None:
    """`npm run test:transformers-js`: transformers.js's pipeline in Node against edgebert's runner and
    edgebert-runtime (onnxruntime-node) on the same folder, and its web build in headless Chromium against the runner."""
    if not (PACKAGE / "node_modules" / "@huggingface" / "transformers" / "package.json").exists() or not shutil.which("npm"):
        _missing_dependency("@huggingface/transformers is not installed in js/edgebert-runtime")
    if not CHROMIUM.exists():
        _missing_dependency(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM=...)")
    proc = _run_npm(shutil.which("npm") or "npm", "test:transformers-js", {"EDGEBERT_RUNTIME_CASES": str(cases)})
    counts = _passed(proc, "transformers.js on edgebert's exports (npm run test:transformers-js)")
    for name in ("embedder none", "embedder int8", "classifier none", "classifier int8"):
        for where in ("Node", "Chromium"):
            assert f"✔ {name} on transformers.js ({where})" in proc.stdout, f"no passing {where} test for {name}:\n{_report(proc)}"
    assert counts["pass"] == 8, counts
