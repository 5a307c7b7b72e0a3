"""The one-screen summary printed after an export: files, sizes, parity, how to load it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from edgebert import buckets
from edgebert.export import ExportReport
from edgebert.targets.onnx import transformers_js

LOAD_HINTS = {
    "onnx": "Python: ort.InferenceSession('{dir}/{model_file}') with {dtype} inputs {inputs}",
    "tflite": "Python: LiteRT Interpreter('{dir}/model.tflite').get_signature_runner('serving_default') with {dtype} inputs",
}

# The React Native runtime of each target, as edgebert-runtime's adapter for it (js/edgebert-runtime/README.md):
# (npm packages, import lines, the lines that make `runtime`). {base}: the export's directory in the app.
RUNTIME_SNIPPETS = {
    "onnx": (
        "onnxruntime-react-native expo-asset",
        ["import * as ort from 'onnxruntime-react-native';", "import { Asset } from 'expo-asset';",
         "import { onnxruntime } from 'edgebert-runtime/onnxruntime';"],
        ["const [onnxFile] = await Asset.loadAsync(require('{base}/{model_file}'));  // add 'onnx' to metro.config.js resolver.assetExts",
         "const session = await ort.InferenceSession.create(onnxFile.localUri!);",
         "const runtime = onnxruntime({{ session, Tensor: ort.Tensor }});"],
    ),
    "tflite": (
        "react-native-fast-tflite",
        ["import { loadTensorflowModel } from 'react-native-fast-tflite';", "import { fastTflite } from 'edgebert-runtime/fast-tflite';"],
        ["// add 'tflite' to metro.config.js resolver.assetExts",
         "const runtime = fastTflite(await loadTensorflowModel(require('{base}/model.tflite'), []));"],
    ),
    "executorch": (
        "react-native-executorch expo-asset",
        ["import { loadModel, tensor } from 'react-native-executorch';", "import { Asset } from 'expo-asset';",
         "import { executorch } from 'edgebert-runtime/executorch';"],
        ["const [pteFile] = await Asset.loadAsync(require('{base}/model.pte'));  // add 'pte' to metro.config.js resolver.assetExts",
         "const runtime = executorch({{ model: loadModel(pteFile.localUri!.replace('file://', '')), tensor }});"],
    ),
}

TASK_CALLS = {
    "feature-extraction": "const [embedding] = await model.embed(['a note to search']);  // Float32Array, the export's pooling",
    "text-classification": "const ranked = await model.classify('a text to label');  // [{ label, score, index }], best first",
    "fill-mask": "const [{ candidates }] = await model.fillMask('the [MASK] is blue.');  // top-k { token, id, score }",
}


def human_bytes(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return f"{n} B"


def print_parity(parity: dict, console: Console) -> None:
    """The worst cosine, then one line per kernel path checked (host CPU named: int8 arithmetic depends on it)."""
    console.print(f"parity vs PyTorch: min cosine {parity['min_cosine']:.6f} (≥ {parity['threshold']}) on every kernel path:")
    for name, path in parity["kernel_paths"].items():
        if path.get("same_as"):
            console.print(f"  {name} ({path['description']}): the figures of {path['same_as']}, proved: {path['proof']}")
            continue
        checks = [c for c in path.values() if isinstance(c, dict)]
        counts = ", ".join(f"{c['sentences']} at {c['seq_len']} tokens" for c in checks)
        diff = max(c["max_abs_diff"] for c in checks)
        agree = _agreement(checks)
        console.print(f"  {name} ({path['description']}): min cosine {path['min_cosine']:.6f}, max abs diff {diff:.2e}{agree} ({counts})")
    cpu = parity["cpu"]
    console.print(f"  checked on {cpu['model']} ({cpu['machine']}, int8 dot product: {cpu['int8_dot_product']})")


def _agreement(checks: list[dict]) -> str:
    """", argmax agreement 99.6 % of 285 sentences (lowest check 98.0 %)", or "" when no check has an argmax."""
    scored = [(c["agreement"], c["sentences"]) for c in checks if c.get("agreement") is not None]
    if not scored:
        return ""
    total = sum(n for _, n in scored)
    overall = sum(a * n for a, n in scored) / total
    lowest = min(a for a, _ in scored)
    return f", argmax agreement {overall:.1%} of {total} sentences (lowest check {lowest:.1%})"


def print_buckets(m: dict, console: Console) -> None:
    """How an app picks a bucket of a static-shape export, and what each bucket is called in the file."""
    entries = m.get("buckets") or []
    if len(entries) < 2:
        return
    console.print(buckets.how_to_pick([e["seq_len"] for e in entries]))
    if m["target"] == "tflite":
        console.print("  signatures: " + ", ".join(f"{e['seq_len']} → '{e['signature']}'" for e in entries))
    else:
        console.print("  graphs (one weight shard): " + ", ".join(f"{e['seq_len']} → {e['model_file']}" for e in entries))


def _tfjs_runtime(m: dict, base: str) -> tuple[str, list[str], list[str]]:
    """The TF.js runtime of an export in an app's bundle: its graphs (one per bucket) over its weight shard(s)."""
    shards = m["target_details"].get("weight_shards", [])
    weights = ", ".join(f"require('{base}/{s}')" for s in shards)
    files = [e["model_file"] for e in m.get("buckets") or []] or ["model.json"]
    graphs = ", ".join(f"'{f}': require('{base}/{f}')" for f in files)
    lines = [f"const weights = {weights if len(shards) == 1 else '[' + weights + ']'};  // add 'bin' to metro.config.js resolver.assetExts",
             f"const graphs: Record<string, tf.io.ModelJSON> = {{{graphs}}};" + ("  // one graph per bucket, one weight shard" if len(files) > 1 else "")]  # fmt: skip
    sources = "{ source: bundleResourceIO(graphs['model.json'], weights)" + (
        ", bucketSource: (file) => bundleResourceIO(graphs[file], weights) }" if len(files) > 1 else " }"
    )
    lines.append(f"const runtime = tfjs({{ tf, GraphModel }}, {sources});")
    imports = ["import * as tf from '@tensorflow/tfjs-core';", "import { GraphModel } from '@tensorflow/tfjs-converter';",
               "import { bundleResourceIO } from '@tensorflow/tfjs-react-native';", "import { tfjs } from 'edgebert-runtime/tfjs';"]  # fmt: skip
    return "@tensorflow/tfjs @tensorflow/tfjs-react-native", imports, lines


def executorch_python_snippet(m: dict, out_dir: Any) -> list[str]:
    """Python lines that load an ExecuTorch export in the stock runtime and run one text: the kernel libraries the
    program needs beyond the portable kernels registered first (`target_details.kernel_libraries`), the text tokenized
    by the export's own tokenizer.json (padded to the program's length when it has one)."""
    from edgebert.targets.executorch.exporter import PYTHON_REGISTRATION

    out_dir = Path(out_dir)
    needed = (m.get("target_details") or {}).get("kernel_libraries", [])
    registrations = [f"import {PYTHON_REGISTRATION[lib]}  # registers the {lib} kernels this program calls" for lib in needed if PYTHON_REGISTRATION.get(lib)]
    lines = ["import torch", "from executorch.runtime import Runtime", "from tokenizers import Tokenizer", *registrations,
             f"method = Runtime.get().load_program({str(out_dir / 'model.pte')!r}).load_method('forward')",
             f"tokenizer = Tokenizer.from_file({str(out_dir / 'tokenizer.json')!r})",
             f"tokenizer.enable_truncation({int(m['seq_len'])})"]  # fmt: skip
    if m.get("static_shape"):
        pad = _pad_token(out_dir)
        side = (m.get("model") or {}).get("padding_side", "right")
        lines.append(f"tokenizer.enable_padding(length={int(m['seq_len'])}, direction={side!r}, pad_id=tokenizer.token_to_id({pad!r}), pad_token={pad!r})")
    fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
    tensors = ", ".join(f"torch.tensor([encoding.{fields[i['name']]}])" for i in m["inputs"])
    outputs = ", ".join(o["name"] for o in m.get("outputs", []))
    return [*lines, "encoding = tokenizer.encode('a note to search')", f"outputs = method.execute([{tensors}])  # {outputs}"]


def _pad_token(out_dir: Path) -> str:
    """The export's tokenizer's padding token (tokenizer_config.json), "[PAD]" when it names none."""
    import json

    try:
        config = json.loads((out_dir / "tokenizer_config.json").read_text())
    except (OSError, ValueError):
        return "[PAD]"
    pad = config.get("pad_token") or "[PAD]"
    return pad.get("content", "[PAD]") if isinstance(pad, dict) else str(pad)


def app_snippet(m: dict, base: str) -> list[str]:
    """How a React Native app runs this export with edgebert-runtime and the target's runtime: the adapter, the
    files, and the task's call. `base`: the export's directory as the app's bundle names it."""
    if m["target"] == "tfjs":
        packages, imports, runtime = _tfjs_runtime(m, base)
    else:
        packages, imports, runtime = RUNTIME_SNIPPETS[m["target"]]
        runtime = [line.format(base=base, model_file=transformers_js.onnx_file(m)) for line in runtime]
    lines = [f"React Native with edgebert-runtime (npm install edgebert-runtime {packages}):",
             "import { EdgeModel } from 'edgebert-runtime';", *imports, *runtime,
             f"const files = {{ manifest: require('{base}/edgebert.json'), tokenizerJson: require('{base}/tokenizer.json'), "
             f"tokenizerConfig: require('{base}/tokenizer_config.json') }};",
             "const model = await EdgeModel.load({ ...files, runtime });",
             TASK_CALLS.get(m.get("task") or "feature-extraction", "// edgebert-runtime runs feature-extraction, text-classification and fill-mask exports")]  # fmt: skip
    if m["target"] == "tflite" and len(m.get("buckets") or []) > 1:
        lines.append("// react-native-fast-tflite runs a .tflite's first signature only (the shortest bucket here): the adapter "
                     f"refuses this export; for it, export with one length (--seq-len {m['seq_len']})")  # fmt: skip
    return [lines[0]] + ["  " + line for line in lines[1:]]


def print_export_summary(report: ExportReport, console: Console | None = None) -> None:
    console = console or Console(soft_wrap=True)
    m = report.manifest
    table = Table(title=f"edgebert export: {m['name']} → {m['target']} ({m['quantization']})", show_header=True)
    table.add_column("file")
    table.add_column("size", justify="right")
    for name, size in m["files"].items():
        table.add_row(name, human_bytes(size))
    table.add_row("[dim]tokenizer[/dim]", "[dim]" + ", ".join(m["tokenizer_files"]) + "[/dim]")
    console.print(table)
    print_parity(m["parity"], console)
    inputs = ", ".join(f"{i['name']}{i['shape']}" for i in m["inputs"])
    console.print(f"model bytes: {human_bytes(m['metrics']['model_bytes'])}; inputs: {inputs}; wall time {m['metrics']['wall_time_s']} s")
    console.print(f"written to: {report.out_dir}")
    outputs = ", ".join(f"{o['name']} {o.get('dtype', 'float32')}{o.get('shape', [o.get('dim')])}" for o in m.get("outputs", []))
    console.print(f"task: {m.get('task')}; outputs: {outputs}")
    for output in m.get("outputs", []):
        if output.get("labels"):
            console.print(f"labels of {output['name']} (index order): {', '.join(output['labels'])}")
    if (m.get("model") or {}).get("head_left_out"):
        console.print(f"[yellow]the model's {m['model']['head_left_out']} head is NOT in this export (--task {m.get('task')})[/yellow]")
    print_buckets(m, console)
    if m["target"] in LOAD_HINTS:
        hint = LOAD_HINTS[m["target"]].format(dir=report.out_dir, inputs=inputs, dtype=m["inputs"][0]["dtype"], model_file=transformers_js.onnx_file(m))
        console.print("load in " + hint)
    if m["target"] == "executorch":
        console.print("load in Python (executorch's runtime):")
        for line in executorch_python_snippet(m, report.out_dir):
            console.print("  " + line, markup=False, highlight=False)
    for line in app_snippet(m, f"./{report.out_dir.name}") + transformers_js.snippet(m, report.out_dir.name):
        console.print(line, markup=False, highlight=False)
