"""edgebert-runtime's JS core under Hermes, React Native's JavaScript engine (`npm run test:hermes` in
js/edgebert-runtime, test/hermes/build.mjs): the tokenizer, the manifest reader and every adapter's feeds, for a tiny
classifier exported here to ONNX (int64 ids, the default, and int32) and TFLite (int32).

The harness is bundled, lowered by React Native's Babel preset (babel-preset-expo, the demo app's) as Metro does,
compiled by React Native's hermesc (npm hermes-compiler, Hermes V1: the compiler accepting the bundle is what an app
build needs) and run in the Hermes 0.12 VM (npm hermes-engine-cli, the only Hermes VM published for Linux). What that
older VM lacks and React Native's Hermes has (Unicode property escapes in RegExp, `console`) the harness polyfills,
labelled in its answer; the rewritten regular expressions are exactly those Hermes V1's compiler is shown to accept.

Each adapter is driven against a stand-in of its runtime that records the tensors it is given (as the Node tests do);
ExecuTorch and TF.js take a minute each to export here, so their manifests are the ONNX int64 and TFLite ones with
what those exports write instead (target, buckets and output nodes, kernel libraries): see `_stand_in_manifests`.

Node, npm, the package's npm packages and the demo app's (the Babel preset) are required: missing, the tests fail,
except in an environment installed with `./install.sh --python-only`, where they skip.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "js" / "edgebert-runtime"
PYTHON_ONLY_MARKER = Path(sys.prefix) / "edgebert-python-only"
INSTALL_HINT = "run ./install.sh (npm ci --prefix js/edgebert-runtime; demo_app/scripts/install.sh for the Babel preset)"
NODE_PACKAGES = ("hermes-engine-cli", "hermes-compiler", "esbuild", "@huggingface/tokenizers")
APP_PACKAGES = ("babel-preset-expo", "@babel/core", "regexpu-core")
SEQ_LEN = 32
LONG = " ".join(["a very long note about the weather in the mountains"] * 6)  # cut at 32 tokens
TEXTS = ["Hello world.", "Crème brûlée at the café, ΣΟΦΟΣ said", "why", LONG]
ID2LABEL = {0: "negative", 1: "neutral", 2: "positive"}
TFJS_BUCKETS = [16, 32]
ARRAY_TYPES = {"int32": "Int32Array", "int64": "BigInt64Array"}
BIGINT_ERROR = "has no BigInt64Array; export with --input-dtype int32"


def _missing_dependency(what: str) -> None:
    if PYTHON_ONLY_MARKER.exists():
        pytest.skip(f"{what}: this environment was installed with ./install.sh --python-only; {INSTALL_HINT}")
    pytest.fail(f"{what}: {INSTALL_HINT}")


def _check_tools() -> str:
    npm = shutil.which("npm")
    if not npm or not shutil.which("node"):
        _missing_dependency("Node.js/npm not found: the Hermes test needs Node 20+")
    missing = [p for p in NODE_PACKAGES if not (PACKAGE / "node_modules" / p / "package.json").exists()]
    missing += [f"demo_app: {p}" for p in APP_PACKAGES if not (ROOT / "demo_app" / "node_modules" / p / "package.json").exists()]
    if missing:
        _missing_dependency(f"npm packages are not installed ({', '.join(missing)} missing)")
    return npm


def _stand_in_manifests(onnx64: dict[str, Any], tflite: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The manifests of an ExecuTorch export (dynamic shapes, int64 ids: the ONNX int64 one's inputs and outputs) and
    of a TF.js export with buckets 16 and 32 (static int32 ids: the TFLite one's, with TF.js's buckets and output
    nodes), as `edgebert export` writes them."""
    et = copy.deepcopy(onnx64)
    et.update(target="executorch", target_details={"kernel_libraries": []})
    tfjs = copy.deepcopy(tflite)
    tfjs.update(target="tfjs", buckets=[{"seq_len": 16, "model_file": "model-16.json"}, {"seq_len": 32, "model_file": "model.json"}],
                target_details={"output_nodes": {"logits": "Identity:0"}})  # fmt: skip
    for i in tfjs["inputs"]:
        i["shape"] = [1, "bucket"]
    return {"executorch": et, "tfjs": tfjs}


@pytest.fixture(scope="module")
def hermes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Exports, cases, `npm run test:hermes`; its report (Node's and Hermes's answers) with Python's references."""
    npm = _check_tools()
    from ai_edge_litert.interpreter import Interpreter
    from model_zoo import build_bert

    from edgebert.export import export
    from edgebert.modelio import load_tokenizer
    from edgebert.parity import encode

    root = tmp_path_factory.mktemp("hermes")
    model = build_bert(root / "classifier", head="sequence-classification", id2label=ID2LABEL)
    dirs = {
        "onnx int64": root / "onnx-int64",
        "onnx int32": root / "onnx-int32",
        "tflite int32": root / "tflite",
    }
    export("onnx", model=model, out=dirs["onnx int64"], seq_len=SEQ_LEN, quiet=True)
    export("onnx", model=model, out=dirs["onnx int32"], seq_len=SEQ_LEN, input_dtype="int32", quiet=True)
    export("tflite", model=model, out=dirs["tflite int32"], seq_len=SEQ_LEN, quiet=True)
    manifests = {name: json.loads((d / "edgebert.json").read_text()) for name, d in dirs.items()}
    interpreter = Interpreter(model_path=str(dirs["tflite int32"] / "model.tflite"))
    native = {kind: [{"name": d["name"], "dataType": d["dtype"].__name__, "shape": d["shape"].tolist()} for d in details]
              for kind, details in (("inputs", interpreter.get_input_details()), ("outputs", interpreter.get_output_details()))}  # fmt: skip
    stand_ins = _stand_in_manifests(manifests["onnx int64"], manifests["tflite int32"])
    exports = [
        {"name": "onnx int64", "adapter": "onnxruntime", "manifest": manifests["onnx int64"]},
        {"name": "onnx int32", "adapter": "onnxruntime", "manifest": manifests["onnx int32"]},
        {"name": "tflite int32", "adapter": "fast-tflite", "manifest": manifests["tflite int32"], "native": native},
        {"name": "executorch int64", "adapter": "executorch", "manifest": stand_ins["executorch"]},
        {"name": "tfjs int32, buckets 16 and 32", "adapter": "tfjs", "manifest": stand_ins["tfjs"]},
    ]
    tokenizer_dir = dirs["onnx int64"]
    cases = {
        "texts": TEXTS,
        "tokenizer": {"json": json.loads((tokenizer_dir / "tokenizer.json").read_text()),
                      "config": json.loads((tokenizer_dir / "tokenizer_config.json").read_text()),
                      "seqLen": SEQ_LEN, "doLowerCase": bool(manifests["onnx int64"]["model"]["do_lower_case"])},
        "exports": exports,
        "int64Export": "onnx int64",
    }  # fmt: skip
    (root / "cases.json").write_text(json.dumps(cases))

    command = [npm, "run", "--silent", "test:hermes"]
    if shutil.which("nice"):
        command = ["nice", "-n", "10", *command]
    env = {**os.environ, "EDGEBERT_HERMES_CASES": str(root / "cases.json"), "EDGEBERT_HERMES_OUT": str(root / "build")}
    proc = subprocess.run(command, cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("EDGEBERT_HERMES_BUILD ")), None)
    assert line, f"npm run test:hermes printed no report (exit {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
    report = json.loads(line.split(" ", 1)[1])
    assert proc.returncode == 0 and not report["problems"], f"npm run test:hermes: {report['problems']}\n{proc.stderr[-6000:]}"

    tokenizer = load_tokenizer(model)

    def python_inputs(text: str, length: int | None) -> dict[str, list[int]]:
        """Python's arrays of one text: unpadded (length None) or padded to `length`."""
        arrays = encode(tokenizer, [text], length or SEQ_LEN, pad_to_seq_len=length is not None)
        return {k: v[0].tolist() for k, v in arrays.items()}

    return {"report": report, "exports": {e["name"]: e for e in exports}, "python_inputs": python_inputs}


def _answers(hermes: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The harness's answers: Hermes's, and Node's (V8: the same bundle before Babel) as a control."""
    report = hermes["report"]
    return [("Hermes", report["vm"]["result"]), ("Node", report["node"])]


def test_react_natives_hermesc_compiles_the_bundle_as_metro_lowers_it(hermes: dict[str, Any]) -> None:
    """React Native's hermesc (Hermes V1) compiles the bundle in both of the preset's Hermes profiles: `hermes-stable`
    (what Metro gives Hermes V1: classes and async functions kept) and `hermes-v0` (lowered, as run in the VM)."""
    report = hermes["report"]
    assert report["versions"]["hermescBanner"].startswith("Hermes release version: 1."), report["versions"]
    for profile in ("hermes-stable", "hermes-v0"):
        compiled = report["hermesc"][profile]
        assert compiled["rc"] == 0 and compiled["hbcBytes"] > 0, (profile, compiled)
    stable, v0 = report["babel"]["hermes-stable"], report["babel"]["hermes-v0"]
    assert stable["classes"] and stable["asyncFunctions"] and stable["propertyEscapeLiterals"], stable  # kept for Hermes V1
    assert v0["classes"] == v0["asyncFunctions"] == v0["privateNames"] == v0["propertyEscapeLiterals"] == 0, v0


def test_the_regexps_the_tokenizer_builds_at_run_time_compile_for_hermes_v1(hermes: dict[str, Any]) -> None:
    """@huggingface/tokenizers builds BERT's pre-tokenizer pattern at run time with Unicode property escapes (\\p{P}),
    which Babel cannot lower: React Native's hermesc accepts every such pattern as a literal. The Hermes 0.12 VM
    rejects them (`Invalid RegExp: Invalid escape`), which is why the harness's RegExp polyfill is installed there."""
    report = hermes["report"]
    regexps = report["runtimeRegExps"]
    assert any("\\p{P}" in r for r in regexps["withPropertyEscapes"]), regexps
    assert regexps["hermesc"]["rc"] == 0, regexps["hermesc"]
    vm = report["vm"]["result"]
    assert vm["engine"]["regexpPropertyEscapes"] == (regexps["vm"]["rc"] == 0), (vm["engine"], regexps["vm"])
    if not vm["engine"]["regexpPropertyEscapes"]:
        assert "Invalid RegExp" in vm["tokenizer"]["withoutPolyfill"], vm["tokenizer"]
        assert any(p.startswith("RegExp (") for p in vm["polyfills"]), vm["polyfills"]


def test_tokenizer_ids_under_hermes_equal_pythons(hermes: dict[str, Any]) -> None:
    """EdgeTokenizer's ids under Hermes equal Python's tokenizer, accents, Greek capitals and truncation included."""
    for engine, answer in _answers(hermes):
        assert "ids" in answer["tokenizer"], (engine, answer["tokenizer"])
        got = answer["tokenizer"]["ids"]
        assert [g["text"] for g in got] == TEXTS
        for g in got:
            want = hermes["python_inputs"](g["text"], None)["input_ids"]
            assert g["ids"] == want, (engine, g["text"], g["ids"], want)
            assert g["truncated"] == (g["text"] == LONG) and g["length"] == len(want), (engine, g)
    vm = hermes["report"]["vm"]["result"]
    assert vm["engine"]["hermes"] == "0.12.0" and vm["console"] == [], vm["engine"]


def test_manifest_reader_under_hermes(hermes: dict[str, Any]) -> None:
    """readManifest under Hermes: each export's target, task, length, buckets, inputs and dtypes, labels; a manifest
    it cannot run is refused with a ManifestError (an Error subclass, through Babel's class lowering)."""
    for engine, answer in _answers(hermes):
        for got in answer["manifests"]:
            manifest = hermes["exports"][got["name"]]["manifest"]
            assert "error" not in got, (engine, got)
            assert got["target"] == manifest["target"] and got["task"] == "text-classification" and got["seqLen"] == SEQ_LEN
            assert got["inputs"] == [{"name": i["name"], "dtype": i["dtype"]} for i in manifest["inputs"]], (engine, got)
            assert got["labels"] == list(ID2LABEL.values()) and got["doLowerCase"] is True
            want_buckets = sorted(b["seq_len"] for b in manifest["buckets"]) if manifest.get("static_shape") else None
            assert got["buckets"] == want_buckets, (engine, got)
        refusals = {r["what"]: r for r in answer["refusals"]}
        assert "input 'input_ids' has dtype 'float32'; int32 or int64 expected" in refusals["float32 input"]["error"], refusals
        assert "a 'model' directory, not an export" in refusals["model directory"]["error"], refusals
        assert all(r["manifestError"] and r["isError"] and r["error"].startswith("ManifestError: ") for r in refusals.values()), (engine, refusals)


def _python_name(feed_name: str | None, index: int, manifest: dict[str, Any]) -> str:
    """The manifest input a recorded feed is: by its name (LiteRT's `serving_default_input_ids`), else its position."""
    names = [i["name"] for i in manifest["inputs"]]
    if feed_name is None:
        return names[index]
    found = [n for n in names if re.search(rf"(^|_){n}(:\d+)?$", feed_name)]
    assert len(found) == 1, (feed_name, names)
    return found[0]


@pytest.mark.parametrize("name", ["onnx int64", "onnx int32", "tflite int32", "executorch int64", "tfjs int32, buckets 16 and 32"])
def test_adapter_feeds_under_hermes(hermes: dict[str, Any], name: str) -> None:
    """Each adapter under Hermes gives its runtime every input of the manifest, in the manifest's dtype (int32 as
    Int32Array, int64 as BigInt64Array; fast-tflite: the bytes of that array), shape [1, length] (the text's own length on
    dynamic shapes, the smallest bucket that holds it on static ones) and Python's values."""
    exp = hermes["exports"][name]
    manifest = exp["manifest"]
    dtypes = {i["name"]: i["dtype"] for i in manifest["inputs"]}
    for engine, answer in _answers(hermes):
        got = next(a for a in answer["adapters"] if a["name"] == name)
        assert "error" not in got, (engine, got)
        assert [c["text"] for c in got["calls"]] == TEXTS, (engine, got)
        if exp["adapter"] == "tfjs":
            assert got["lengths"] == TFJS_BUCKETS and sorted(got["warmUps"]) == ["model-16.json", "model.json"], (engine, got)
        for call in got["calls"]:
            tokens = len(hermes["python_inputs"](call["text"], None)["input_ids"])
            lengths = got["lengths"]  # null: dynamic shapes, each text at its own length
            length = None if lengths is None else next((b for b in lengths if b >= tokens), max(lengths))
            want = hermes["python_inputs"](call["text"], length)
            assert len(call["feeds"]) == len(manifest["inputs"]), (engine, call)
            seen = []
            for k, feed in enumerate(call["feeds"]):
                input_name = _python_name(feed["name"], k, manifest)
                seen.append(input_name)
                dtype = dtypes[input_name]
                assert feed["dtype"] == dtype, (engine, call["text"], feed)
                assert feed["arrayType"] == ("ArrayBuffer" if exp["adapter"] == "fast-tflite" else ARRAY_TYPES[dtype]), (engine, feed)
                assert feed["shape"] == [1, len(want[input_name])], (engine, call["text"], feed["shape"])
                assert feed["byteLength"] == len(want[input_name]) * (8 if dtype == "int64" else 4), (engine, feed)
                assert feed["values"] == want[input_name], (engine, call["text"], input_name, feed["values"], want[input_name])
            assert sorted(seen) == sorted(dtypes), (engine, seen)
            if exp["adapter"] == "tfjs":
                assert call["graph"] == ("model-16.json" if tokens <= 16 else "model.json"), (engine, call["text"], call["graph"])


def test_int64_ids_without_bigint64array_fail_clearly(hermes: dict[str, Any]) -> None:
    """On an engine without BigInt64Array (removed from Hermes for this check; React Native's Hermes has it since 0.70)
    the int64 export is refused with what to do, and its runtime is handed nothing."""
    for engine, answer in _answers(hermes):
        got = answer["withoutBigInt64Array"]
        assert got["removed"] is True, (engine, got)
        assert BIGINT_ERROR in got.get("error", ""), (engine, got)
        assert all(not c["feeds"] for c in got["calls"]), (engine, got)
    assert hermes["report"]["vm"]["result"]["engine"]["BigInt64Array"] is True
