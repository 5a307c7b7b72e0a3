"""The one-screen summary printed after an export: files, sizes, parity, how to load it."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from edgebert import buckets
from edgebert.export import ExportReport

LOAD_HINTS = {
    "onnx": "onnxruntime: ort.InferenceSession('{dir}/model.onnx') with int64 inputs {inputs}",
    "tflite": "LiteRT: Interpreter('{dir}/model.tflite').get_signature_runner('serving_default') with int32 inputs",
    "executorch": (
        "ExecuTorch: Runtime.get().load_program('{dir}/model.pte').load_method('forward').execute(int64 tensors {inputs}); "
        "React Native: react-native-executorch's useExecutorchModule({{ modelSource: require('{dir}/model.pte') }}), "
        "forward with the same int64 inputs (tokenizer.json beside it)"
    ),
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


def _tfjs_graph_lines(m: dict, base: str) -> list[str]:
    """How an app loads the export's graph, or each bucket's graph (all on the one weight shard) and picks one."""
    entries = m.get("buckets") or []
    if len(entries) < 2:
        return [
            f"  const modelJson = require('{base}/model.json');",
            "  const model = await tf.loadGraphModel(bundleResourceIO(modelJson, modelWeights));",
        ]
    graphs = ", ".join(f"{e['seq_len']}: require('{base}/{e['model_file']}')" for e in entries)
    return [
        f"  const graphs = {{{graphs}}};  // one graph per bucket, one weight shard",
        "  const models = {};",
        "  for (const [n, json] of Object.entries(graphs)) models[n] = await tf.loadGraphModel(bundleResourceIO(json, modelWeights));",
        "  // per text: tokenize, pad to the smallest bucket >= its token count, run models[bucket]",
    ]


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
    if m["target"] == "tfjs":
        shards = m["target_details"].get("weight_shards", [])
        base = f"./{report.out_dir.name}"
        weights = ", ".join(f"require('{base}/{s}')" for s in shards)
        console.print("React Native (@tensorflow/tfjs-react-native), in the app's bundle:")
        console.print(f"  const modelWeights = {weights if len(shards) == 1 else '[' + weights + ']'};")
        for line in _tfjs_graph_lines(m, base):
            console.print(line)
        console.print("  (add 'bin' to metro.config.js resolver.assetExts so the shard is bundled)")
    else:
        console.print("load: " + LOAD_HINTS[m["target"]].format(dir=report.out_dir, inputs=inputs))
