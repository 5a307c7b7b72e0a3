"""edgebert-runtime (js/edgebert-runtime), the JavaScript package that runs every edgebert export: its Node tests and
type checks, run from pytest on tiny exports made here.

Where a runtime runs here (onnxruntime-node and TF.js wasm in Node; onnxruntime-web, TF.js wasm and WebGL, and
LiteRT.js wasm and WebGPU in headless Chromium) the package's `embed` / `classify` / `fillMask` are compared with PyTorch on the same texts, for
an embedder, a classifier and a masked LM, with buckets and without.
Where it cannot (react-native-fast-tflite, react-native-executorch: native modules), this file writes what the
export's own Python runtime sees and returns (edgebert's TFLite and ExecuTorch runners): the model's input and
output tensors (order, names, dtypes, shapes), the input bytes of each text and the outputs. The Node tests then
drive the adapter against a stand-in of the native model that accepts exactly those inputs and answers those
outputs, so a wrong dtype, order or shape fails. `npm run typecheck` checks the adapters against the runtime
packages' published types.

The cases file (`cases.json`) is passed to `npm test` in EDGEBERT_RUNTIME_CASES. Node, npm and the package's npm
packages (./install.sh: npm ci + build in js/edgebert-runtime) are required: missing, the tests fail, except in an
environment installed with `./install.sh --python-only`, where they skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "js" / "edgebert-runtime"
NODE_PACKAGES = ("tsx", "typescript", "onnxruntime-node", "onnxruntime-web", "@tensorflow/tfjs-backend-wasm", "@huggingface/tokenizers",
                 "react-native-fast-tflite", "react-native-executorch", "esbuild", "playwright-core", "@litertjs/core",
                 "@huggingface/transformers")  # fmt: skip
INSTALL_HINT = "run ./install.sh (npm ci --prefix js/edgebert-runtime && npm run build --prefix js/edgebert-runtime)"
PYTHON_ONLY_MARKER = Path(sys.prefix) / "edgebert-python-only"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
SEQ_LEN = 32
BUCKETS = [16, 32]
TOP_K = 4
LONG = " ".join(["a very long note about the weather in the mountains"] * 6)  # cut at 32 tokens
TEXTS = ["Hello world.", "Crème brûlée at the café, ΣΟΦΟΣ said", "why", LONG]
MASK_TEXTS = ["the capital of france is [MASK].", "[MASK] plays the [MASK] guitar"]
ID2LABEL = {0: "negative", 1: "neutral", 2: "positive"}


def _missing_dependency(what: str) -> None:
    if PYTHON_ONLY_MARKER.exists():
        pytest.skip(f"{what}: this environment was installed with ./install.sh --python-only; {INSTALL_HINT}")
    pytest.fail(f"{what}: {INSTALL_HINT}")


@pytest.fixture(scope="module")
def npm() -> str:
    npm = shutil.which("npm")
    if not npm or not shutil.which("node"):
        _missing_dependency("Node.js/npm not found: edgebert-runtime's tests need Node 20+")
    missing = [p for p in NODE_PACKAGES if not (PACKAGE / "node_modules" / p / "package.json").exists()]
    if missing:
        _missing_dependency(f"edgebert-runtime's npm packages are not installed ({', '.join(missing)} missing)")
    return npm


def _run_npm(npm: str, script: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    command = ["nice", "-n", "19", npm, "run", "--silent", script] if shutil.which("nice") else [npm, "run", "--silent", script]
    return subprocess.run(command, cwd=PACKAGE, env=full_env, capture_output=True, text=True, timeout=timeout)


def _report(proc: subprocess.CompletedProcess[str], limit: int = 12000) -> str:
    out = (proc.stdout + "\n" + proc.stderr).strip()
    return out if len(out) <= limit else "…\n" + out[-limit:]


def _passed(proc: subprocess.CompletedProcess[str], what: str) -> dict[str, int]:
    """node --test's counts; fails on a failed, skipped or empty run."""
    counts = {k: int(v) for k, v in re.findall(r"^ℹ (\w+) (\d+)$", proc.stdout, flags=re.M)}
    assert proc.returncode == 0, f"{what} failed:\n{_report(proc)}"
    assert counts.get("pass", 0) > 0 and counts.get("fail", 0) == 0, f"{what} ran no tests:\n{_report(proc)}"
    assert counts.get("skipped", 0) == 0 and counts.get("todo", 0) == 0, f"{what} skipped tests:\n{_report(proc)}"
    return counts


# --- exports and their references -------------------------------------------------------------------------------


def _export(target: str, model: Path, out: Path, **options: Any) -> Path:
    from edgebert.export import export

    export(target, model=model, out=out, quiet=True, **options)
    return out


def _tokens(loaded: Any, text: str, seq_len: int) -> dict[str, np.ndarray]:
    """Python's arrays for one text, unpadded (truncated to seq_len): what EdgeTokenizer must produce."""
    from edgebert.parity import encode

    return encode(loaded.tokenizer, [text], seq_len, pad_to_seq_len=False)


def _torch_case(loaded: Any, text: str, seq_len: int) -> dict[str, Any]:
    """One text's ids and PyTorch outputs (the task's outputs, batch axis dropped)."""
    from edgebert.parity import torch_reference

    inputs = _tokens(loaded, text, seq_len)
    names = {n: inputs[n] for n in loaded.family.input_names()}
    outputs = torch_reference(loaded.embedder, names)
    keep = {"sentence_embedding", "logits", "top_ids", "top_scores"}
    return {"text": text, "input_ids": inputs["input_ids"][0].tolist(),
            "outputs": {k: v[0].tolist() for k, v in outputs.items() if k in keep}}  # fmt: skip


def torch_export_case(name: str, runtime: str, export_dir: Path, model_dir: Path, texts: list[str]) -> dict[str, Any]:
    """An export the Node tests run for real, with PyTorch's outputs for `texts` and the parity bound it passed."""
    from edgebert.modelio import load_model

    manifest = json.loads((export_dir / "edgebert.json").read_text())
    loaded = load_model(model_dir, task=manifest["task"], top_k=TOP_K)
    return {"name": name, "runtime": runtime, "dir": str(export_dir), "task": manifest["task"],
            "buckets": [b["seq_len"] for b in manifest.get("buckets") or []], "min_cosine": manifest["parity"]["threshold"],
            "cases": [_torch_case(loaded, t, manifest["seq_len"]) for t in texts]}  # fmt: skip


def _dtype(value: Any) -> str:
    return np.dtype(value).name


def tflite_native_case(name: str, export_dir: Path, model_dir: Path, texts: list[str]) -> dict[str, Any]:
    """What react-native-fast-tflite sees of a .tflite (its first subgraph's input and output tensors, as LiteRT
    lists them) and, per text, the input bytes in that order and the outputs edgebert's TFLite runner returns."""
    from ai_edge_litert.interpreter import Interpreter

    from edgebert.modelio import load_model
    from edgebert.parity import encode
    from edgebert.targets import get_exporter

    manifest = json.loads((export_dir / "edgebert.json").read_text())
    interpreter = Interpreter(model_path=str(export_dir / "model.tflite"))
    inputs = [{"name": d["name"], "dataType": _dtype(d["dtype"]), "shape": d["shape"].tolist()} for d in interpreter.get_input_details()]
    out_details = interpreter.get_output_details()
    outputs = [{"name": d["name"], "dataType": _dtype(d["dtype"]), "shape": d["shape"].tolist()} for d in out_details]
    length = inputs[0]["shape"][1]
    case = {"name": name, "runtime": "fast-tflite", "dir": str(export_dir), "task": manifest["task"], "native": {"inputs": inputs, "outputs": outputs}}
    if length != manifest["seq_len"]:  # the adapter must refuse this export: no calls to replay
        return {**case, "calls": []}
    # Which tensor of the first subgraph each of the runner's named outputs is (the signature's tensor indices).
    by_index = {d["index"]: k for k, d in enumerate(out_details)}
    signature_outputs = interpreter.get_signature_runner("serving_default").get_output_details()
    order = {name: by_index[d["index"]] for name, d in signature_outputs.items()}
    loaded = load_model(model_dir, task=manifest["task"])
    runner = get_exporter("tflite").load_runner(export_dir, manifest)
    names = [i["name"] for i in manifest["inputs"]]
    by_tensor = {i["name"]: n for i in inputs for n in names if re.search(rf"(^|_){n}$", i["name"])}  # LiteRT's naming
    calls = []
    for text in texts:
        padded = encode(loaded.tokenizer, [text], length, pad_to_seq_len=True)
        got = runner.run({i["name"]: padded[i["name"]] for i in manifest["inputs"]})
        flat_outputs = [None] * len(outputs)
        for out_name, k in order.items():
            flat_outputs[k] = np.asarray(got[out_name]).astype(outputs[k]["dataType"]).ravel().tolist()
        calls.append({"text": text, "inputs": [padded[by_tensor[i["name"]]].astype(i["dataType"]).ravel().tolist() for i in inputs],
                      "outputs": flat_outputs})  # fmt: skip
    runner.close()
    return {**case, "calls": calls}


ET_DTYPES = {3: "int32", 4: "int64", 6: "float32"}  # ExecuTorch's ScalarType codes (c10's Int, Long, Float)


def executorch_native_case(name: str, export_dir: Path, model_dir: Path, texts: list[str]) -> dict[str, Any]:
    """What react-native-executorch sees of a .pte (its `forward` method's input and output tensors: dtype and largest
    sizes, as ExecuTorch's runtime lists them) and, per text, the inputs in that order and the outputs edgebert's
    ExecuTorch runner returns."""
    from executorch.runtime import Runtime

    from edgebert.modelio import load_model
    from edgebert.parity import encode
    from edgebert.targets import get_exporter

    manifest = json.loads((export_dir / "edgebert.json").read_text())
    meta = Runtime.get().load_program(export_dir / "model.pte").load_method("forward").metadata

    def describe(info: Any) -> dict[str, Any]:
        return {"dtype": ET_DTYPES[int(info.dtype())], "max_sizes": list(info.sizes())}

    inputs = [describe(meta.input_tensor_meta(i)) for i in range(meta.num_inputs())]
    outputs = [describe(meta.output_tensor_meta(i)) for i in range(meta.num_outputs())]
    loaded = load_model(model_dir, task=manifest["task"])
    runner = get_exporter("executorch").load_runner(export_dir, manifest)
    calls = []
    for text in texts:
        tokens = encode(loaded.tokenizer, [text], manifest["seq_len"], pad_to_seq_len=False)
        got = runner.run({i["name"]: tokens[i["name"]] for i in manifest["inputs"]})
        values = [np.asarray(got[o["name"]]) for o in manifest["outputs"]]  # the runner names the method's outputs in manifest order
        calls.append({"text": text, "inputs": [tokens[i["name"]].ravel().tolist() for i in manifest["inputs"]],
                      "outputs": [{"shape": list(v.shape), "data": v.astype(o["dtype"]).ravel().tolist()} for v, o in zip(values, outputs)]})  # fmt: skip
    return {"name": name, "runtime": "executorch", "dir": str(export_dir), "task": manifest["task"],
            "native": {"method": "forward", "inputs": inputs, "outputs": outputs}, "calls": calls}  # fmt: skip


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from model_zoo import build_bert

    root = tmp_path_factory.mktemp("js-runtime-models")
    return {
        "embedder": build_bert(root / "embedder"),
        "classifier": build_bert(root / "classifier", head="sequence-classification", id2label=ID2LABEL),
        "masked-lm": build_bert(root / "masked-lm", head="fill-mask"),
    }


def write_cases(path: Path, exports: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"exports": exports}))
    return path


@pytest.fixture(scope="module")
def cases(models: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The exports the Node tests run, with their references: ONNX (dynamic shapes) embedder, classifier (int32 ids, as
    Hermes apps feed them) and fill-mask on onnxruntime-node; TF.js embedder with buckets and classifier without on the wasm backend; TFLite classifier
    (one length) and embedder (buckets: refused) for react-native-fast-tflite, and the same two against PyTorch for
    LiteRT.js (Chromium only)."""
    root = tmp_path_factory.mktemp("js-runtime-exports")
    emb, cls, mlm = models["embedder"], models["classifier"], models["masked-lm"]
    tflite_cls = _export("tflite", cls, root / "cls-tflite", seq_len=SEQ_LEN)
    tflite_emb = _export("tflite", emb, root / "emb-tflite", seq_len=BUCKETS)
    exports = [
        torch_export_case("onnx embedder", "onnxruntime-node", _export("onnx", emb, root / "emb-onnx", seq_len=SEQ_LEN), emb, TEXTS),
        torch_export_case("onnx classifier, int32 ids", "onnxruntime-node",
                          _export("onnx", cls, root / "cls-onnx", seq_len=SEQ_LEN, input_dtype="int32"), cls, TEXTS),
        torch_export_case("onnx fill-mask", "onnxruntime-node",
                          _export("onnx", mlm, root / "mlm-onnx", seq_len=SEQ_LEN, task="fill-mask", top_k=TOP_K), mlm, MASK_TEXTS),
        torch_export_case("tfjs embedder, buckets 16 and 32", "tfjs-wasm", _export("tfjs", emb, root / "emb-tfjs", seq_len=BUCKETS), emb, TEXTS),
        torch_export_case("tfjs classifier, one length", "tfjs-wasm", _export("tfjs", cls, root / "cls-tfjs", seq_len=SEQ_LEN), cls, TEXTS),
        tflite_native_case("tflite classifier, one length", tflite_cls, cls, TEXTS),
        tflite_native_case("tflite embedder, buckets 16 and 32", tflite_emb, emb, []),
        torch_export_case("tflite classifier, one length", "litertjs", tflite_cls, cls, TEXTS),
        torch_export_case("tflite embedder, buckets 16 and 32", "litertjs", tflite_emb, emb, TEXTS),
    ]  # fmt: skip
    return write_cases(root / "cases.json", exports)


def test_node_tests_run_every_export_like_its_reference(npm: str, cases: Path) -> None:
    """onnxruntime-node and TF.js wasm against PyTorch (embedder, classifier, fill-mask; buckets and not), the
    fast-tflite adapter against LiteRT's own tensors, and the package's unit tests (manifest refusals, buckets,
    tokenizer)."""
    proc = _run_npm(npm, "test", {"EDGEBERT_RUNTIME_CASES": str(cases)})
    counts = _passed(proc, "edgebert-runtime's Node tests (npm test)")
    for name in ("onnx embedder", "onnx classifier, int32 ids", "onnx fill-mask", "tfjs embedder, buckets 16 and 32",
                 "tfjs classifier, one length", "tflite classifier, one length", "tflite embedder, buckets 16 and 32"):  # fmt: skip
        assert f"✔ {name}" in proc.stdout, f"no passing Node test for the {name} export:\n{_report(proc)}"
    assert counts["pass"] >= 20, counts


def test_chromium_runs_the_onnx_tfjs_and_tflite_exports_like_pytorch(npm: str, cases: Path) -> None:
    """The same ONNX exports on onnxruntime-web (wasm), TF.js exports on TF.js's wasm and WebGL (SwiftShader)
    backends and TFLite exports (buckets: every signature) on LiteRT.js's wasm and WebGPU (SwiftShader's Vulkan)
    accelerators in headless Chromium (the package bundled by esbuild, the exports and the runtimes' wasm files served
    over HTTP), with the Node tests' checks against PyTorch."""
    if not CHROMIUM.exists():
        _missing_dependency(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CHROMIUM=...)")
    proc = _run_npm(npm, "test:browser", {"EDGEBERT_RUNTIME_CASES": str(cases)})
    counts = _passed(proc, "edgebert-runtime's Chromium test (npm run test:browser)")
    for name in ("onnx embedder on onnxruntime-web", "onnx classifier, int32 ids on onnxruntime-web", "onnx fill-mask on onnxruntime-web",
                 "tfjs embedder, buckets 16 and 32 on tfjs-wasm", "tfjs classifier, one length on tfjs-wasm",
                 "tfjs embedder, buckets 16 and 32 on tfjs-webgl", "tfjs classifier, one length on tfjs-webgl",
                 "tflite embedder, buckets 16 and 32 on litertjs-wasm", "tflite classifier, one length on litertjs-wasm",
                 "tflite embedder, buckets 16 and 32 on litertjs-webgpu", "tflite classifier, one length on litertjs-webgpu"):  # fmt: skip
        assert f"✔ {name}" in proc.stdout, f"no passing Chromium test for {name}:\n{_report(proc)}"
    assert counts["pass"] == 11, counts


@pytest.mark.integration  # the ExecuTorch export alone takes about a minute on 2 cores
def test_executorch_adapter_builds_the_tensors_the_program_takes(npm: str, models: dict[str, Path], tmp_path: Path) -> None:
    """The react-native-executorch adapter against ExecuTorch's own runtime: int64 inputs in the manifest's order,
    outputs allocated with the program's dtypes and shapes, the values edgebert's ExecuTorch runner returns."""
    out = _export("executorch", models["embedder"], tmp_path / "emb-executorch", seq_len=SEQ_LEN)
    case = executorch_native_case("executorch embedder", out, models["embedder"], TEXTS)
    assert [i["dtype"] for i in case["native"]["inputs"]] == ["int64"] * 3
    proc = _run_npm(npm, "test", {"EDGEBERT_RUNTIME_CASES": str(write_cases(tmp_path / "cases.json", [case]))})
    _passed(proc, "edgebert-runtime's Node tests on the ExecuTorch export")
    assert "✔ executorch embedder" in proc.stdout, _report(proc)


def test_adapters_type_check_against_the_runtime_packages(npm: str) -> None:
    """tsc --noEmit over the package, and the adapters against onnxruntime-node / -react-native, tfjs,
    react-native-fast-tflite and react-native-executorch's published types."""
    proc = _run_npm(npm, "typecheck", timeout=600)
    assert proc.returncode == 0, f"npm run typecheck failed in js/edgebert-runtime:\n{_report(proc)}"


# --- the export summary's snippet -------------------------------------------------------------------------------

SNIPPET_MANIFESTS = {
    "tfjs-buckets": {"target": "tfjs", "task": "feature-extraction", "seq_len": 32, "target_details": {"weight_shards": ["group1-shard1of1.bin"]},
                     "buckets": [{"seq_len": 16, "model_file": "model-16.json"}, {"seq_len": 32, "model_file": "model.json"}]},
    "tfjs-one-length": {"target": "tfjs", "task": "text-classification", "seq_len": 32, "target_details": {"weight_shards": ["a.bin", "b.bin"]}},
    "onnx": {"target": "onnx", "task": "text-classification", "seq_len": 32, "target_details": {}},
    "tflite": {"target": "tflite", "task": "feature-extraction", "seq_len": 32, "target_details": {}, "buckets": [{"seq_len": 32, "signature": "serving_default"}]},
    "executorch": {"target": "executorch", "task": "fill-mask", "seq_len": 32, "target_details": {}},
}  # fmt: skip

# What the snippets use of the app's other packages, with those packages' signatures (expo-asset's Asset.loadAsync,
# tfjs-react-native's bundleResourceIO): the snippets are checked against edgebert-runtime and the runtimes' own types.
APP_DECLARATIONS = """
declare module 'expo-asset' {
  export class Asset { localUri: string | null; static loadAsync(moduleId: number | number[]): Promise<Asset[]>; }
}
declare module '@tensorflow/tfjs-react-native' {
  import type { io } from '@tensorflow/tfjs-core';
  export function bundleResourceIO(modelJson: io.ModelJSON, modelWeightsId: number | number[]): io.IOHandler;
}
"""


def test_the_summarys_app_snippet_type_checks_for_every_target(npm: str, tmp_path: Path) -> None:
    """The React Native code `edgebert export` prints, for each target's runtime, compiles against edgebert-runtime
    and the runtime package's published types (tsc, strict)."""
    from edgebert.summary import app_snippet

    for name, manifest in SNIPPET_MANIFESTS.items():
        lines = app_snippet(manifest, "./model")
        code = [line.strip() for line in lines[1:]]
        (tmp_path / f"{name}.ts").write_text("\n".join(code) + "\nexport {};\n")
    (tmp_path / "app.d.ts").write_text(APP_DECLARATIONS)
    modules = PACKAGE / "node_modules"
    (tmp_path / "tsconfig.json").write_text(json.dumps({
        "compilerOptions": {"target": "ES2022", "module": "ESNext", "moduleResolution": "Bundler", "strict": True, "noEmit": True,
                            "skipLibCheck": True, "types": ["node"], "typeRoots": [str(modules / "@types")], "baseUrl": str(modules),
                            "paths": {"edgebert-runtime": [str(PACKAGE / "src" / "index.ts")],
                                      "edgebert-runtime/*": [str(PACKAGE / "src" / "adapters" / "*.ts")], "*": [str(modules / "*")]}},
        "include": [str(tmp_path / "*.ts")],
    }))  # fmt: skip
    proc = subprocess.run(["node", str(modules / "typescript" / "bin" / "tsc"), "-p", str(tmp_path / "tsconfig.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert proc.returncode == 0, f"the summary's snippets do not compile:\n{_report(proc)}"


def test_export_summary_prints_the_snippet_for_the_targets_runtime(cases: Path) -> None:
    """`edgebert export`'s summary (print_export_summary) on the ONNX classifier exported above."""
    from io import StringIO

    from rich.console import Console

    from edgebert.export import ExportReport
    from edgebert.summary import print_export_summary

    export = next(e for e in json.loads(cases.read_text())["exports"] if e["name"].startswith("onnx classifier"))
    out_dir = Path(export["dir"])
    buffer = StringIO()
    print_export_summary(ExportReport(out_dir, json.loads((out_dir / "edgebert.json").read_text())), Console(file=buffer, width=400))
    out = buffer.getvalue()
    assert "React Native with edgebert-runtime (npm install edgebert-runtime onnxruntime-react-native expo-asset):" in out
    assert "const runtime = onnxruntime({ session, Tensor: ort.Tensor });" in out
    assert f"tokenizerJson: require('./{out_dir.name}/tokenizer.json')" in out and "await model.classify(" in out
    assert "load in Python: ort.InferenceSession(" in out


def _edge_tokenizer_arrays(npm: str, directory: Path, texts: list[str], options: dict[str, Any]) -> list[dict[str, list[int]]]:
    """edgebert-runtime's EdgeTokenizer (the built package) on `texts`, from the tokenizer files in `directory`."""
    script = (
        "import fs from 'node:fs'; import { EdgeTokenizer } from " + json.dumps(str(PACKAGE / "dist" / "index.js")) + ";"
        "const [dir, texts, options] = JSON.parse(process.argv[1]);"
        "const read = (n) => JSON.parse(fs.readFileSync(dir + '/' + n, 'utf8'));"
        "const tok = new EdgeTokenizer(read('tokenizer.json'), read('tokenizer_config.json'), options);"
        "console.log(JSON.stringify(texts.map((t) => { const e = tok.encode(t); return { input_ids: [...e.inputIds],"
        " attention_mask: [...e.attentionMask], token_type_ids: [...e.tokenTypeIds], ids: tok.ids(t) }; })));"
    )
    argument = json.dumps([str(directory), texts, options])
    proc = subprocess.run(["node", "--input-type=module", "-e", script, argument], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("told", [True, False], ids=["side from the manifest", "side from tokenizer_config"])
def test_edge_tokenizer_pads_on_the_left_as_python_does(npm: str, tmp_path: Path, told: bool) -> None:
    """XLNet pads on the left and puts `<sep> <cls>` at the end: EdgeTokenizer gives Python's padded arrays when the
    manifest says `padding_side: left` (what `edgebert export` records), or when tokenizer_config.json says it."""
    import model_zoo

    directory = tmp_path / "xlnet"
    tokenizer = model_zoo.xlnet_tokenizer(directory)
    tokenizer.save_pretrained(directory)
    if not told:  # no manifest: the tokenizer files must say it
        config = json.loads((directory / "tokenizer_config.json").read_text())
        (directory / "tokenizer_config.json").write_text(json.dumps({**config, "padding_side": "left"}))
    texts = ["hello world", "the weather in the mountains is cold today", LONG]
    options = {"seqLen": 16, "buckets": [8, 16], **({"paddingSide": tokenizer.padding_side} if told else {})}
    ours = _edge_tokenizer_arrays(npm, directory, texts, options)
    for text, got in zip(texts, ours):
        unpadded = tokenizer(text, truncation=True, max_length=16)["input_ids"]
        bucket = 8 if len(unpadded) <= 8 else 16
        theirs = tokenizer(text, truncation=True, max_length=bucket, padding="max_length", return_token_type_ids=True)
        assert got["ids"] == unpadded and unpadded[-2:] == tokenizer.convert_tokens_to_ids(["[SEP]", "[CLS]"])
        for key in ("input_ids", "attention_mask", "token_type_ids"):  # <cls> in segment 2, padding in segment 3
            assert got[key] == theirs[key], (text, key)
        assert got["attention_mask"][0] == (0 if len(unpadded) < bucket else 1)  # padding first


def test_edge_tokenizer_cuts_a_trimmed_byte_level_bpe_as_python_does(npm: str, tmp_path: Path) -> None:
    """A ModernBERT vocabulary trimmed below what the corpus uses (merges dropped, words falling back to their parts,
    down to bytes): EdgeTokenizer cuts seen and unseen text, accents and emoji included, as Python does."""
    import model_zoo

    from edgebert.compress.vocab import trim_vocab
    from edgebert.modelio import load_tokenizer

    lines = model_zoo.training_lines(60, seed=5)
    (tmp_path / "corpus.txt").write_text("\n".join(lines[:20]) + "\n")
    model = model_zoo.build_modernbert(tmp_path / "model")
    report = trim_vocab(model, tmp_path / "trimmed", tmp_path / "corpus.txt", max_size=300, quiet=True)
    assert report.vocab_after == 300 and report.changed_word_share > 0
    tokenizer = load_tokenizer(tmp_path / "trimmed")
    texts = [*lines[:3], *lines[40:46], "héllo wörld, naïve café 😀", "Zebra quagga xylophone"]
    ours = _edge_tokenizer_arrays(npm, tmp_path / "trimmed", texts, {"seqLen": 64})
    for text, got in zip(texts, ours):
        assert got["ids"] == tokenizer(text, truncation=True, max_length=64)["input_ids"], text
