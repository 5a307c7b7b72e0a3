"""The bench report: derived figures against the reference, and report.json / report.md / report.png."""

from __future__ import annotations

import datetime as dt
import importlib.metadata as md
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from edgebert import __version__
from edgebert.artifact import report_json
from edgebert.bench.app_latency import RUN_TEXTS
from edgebert.bench.metrics import pareto_front, ratio
from edgebert.bench.references import PARENT
from edgebert.heads import FEATURE_EXTRACTION, FILL_MASK, TEXT_CLASSIFICATION, TOKEN_CLASSIFICATION

SCHEMA = "edgebert.bench/1"
TASK_SHORT = {FEATURE_EXTRACTION: "emb", TEXT_CLASSIFICATION: "cls", FILL_MASK: "mask", TOKEN_CLASSIFICATION: "tok"}
LIBRARIES = (
    "edgebert",
    "torch",
    "transformers",
    "tokenizers",
    "numpy",
    "onnxruntime",
    "onnx",
    "ai-edge-litert",
    "litert-torch",
    "ai-edge-quantizer",
    "tensorflow",
    "tensorflowjs",
    "scipy",
    "psutil",
    "matplotlib",
)


# ----------------------------------------------------------------------------------------- machine


def _node_info() -> dict[str, str | None]:
    info: dict[str, str | None] = {"node": None, "@tensorflow/tfjs": None, "@tensorflow/tfjs-backend-wasm": None}
    try:
        from edgebert.targets.tfjs.exporter import JS_DIR, find_node

        node = find_node()
        info["node"] = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        for pkg in ("@tensorflow/tfjs", "@tensorflow/tfjs-backend-wasm"):
            pj = JS_DIR / "node_modules" / pkg / "package.json"
            if pj.exists():
                info[pkg] = json.loads(pj.read_text()).get("version")
    except Exception:  # noqa: BLE001 - Node is optional
        pass
    return info


def machine_info() -> dict[str, Any]:
    """CPU model, cores, memory, OS, Python and library versions, load average at the start."""
    import psutil

    versions = {}
    for lib in LIBRARIES:
        try:
            versions[lib] = md.version(lib)
        except md.PackageNotFoundError:
            versions[lib] = None
    versions["edgebert"] = versions["edgebert"] or __version__
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    from edgebert.cpu import cpu_info

    cpu = cpu_info()
    return {
        "cpu_model": cpu["model"],
        "cpu_isa": cpu["isa"],
        "int8_dot_product": cpu["int8_dot_product"],
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "usable_cores": affinity,
        "memory_gb": round(psutil.virtual_memory().total / 1e9, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "libraries": versions,
        "js": _node_info(),
        "loadavg_start": list(os.getloadavg()),
    }


# ----------------------------------------------------------------------------------------- derived


def _config_key(entry: dict[str, Any]) -> tuple[int, int, int]:
    return int(entry["seq_len"]), int(entry["batch"]), int(entry["threads"])


def _median(entry: dict[str, Any] | None, kind: str = "model_ms") -> float | None:
    if not entry or kind not in entry:
        return None
    return entry[kind]["median"]


def _spearman_on_first(cosines: list[float] | None, path: str | None, n: int | None) -> float | None:
    """The reference's Spearman over the first `n` pairs only (from its stored per-pair cosines)."""
    if not cosines or not path or not n or n > len(cosines):
        return None
    from edgebert.bench.metrics import load_sts_csv
    from edgebert.evaluate import spearman

    return spearman(cosines[:n], load_sts_csv(path, limit=n).scores)


def task_figures(item: dict[str, Any], ref: dict[str, Any] | None) -> dict[str, Any]:
    """The item's task metric against the reference's: accuracy and agreement (classifiers), agreement (fill-mask,
    token classification), and `retention` on the item's own task (accuracy ratio, agreement, or STS ratio; None
    when not measured: a failed item is never 100 %)."""
    from edgebert.bench.tasks import agreement

    ref = ref or {}
    if item.get("status", "ok") != "ok":
        return {"accuracy": None, "agreement": None, "retention": None}
    if item.get("classification"):
        acc = item["classification"]["accuracy"]
        ref_cls = ref.get("classification") or {}
        agree = agreement(item["classification"]["predicted"], ref_cls.get("predicted"))
        return {"accuracy": acc, "agreement": agree, "retention": ratio(acc, ref_cls.get("accuracy"))}
    for key in ("fill_mask", "tokens"):
        if item.get(key):
            agree = agreement(item[key]["predicted"], (ref.get(key) or {}).get("predicted"))
            return {"accuracy": None, "agreement": agree, "retention": agree}
    sts = item.get("sts") or {}
    return {"accuracy": None, "agreement": None, "retention": ratio(sts.get("spearman"), item.get("sts_reference_same_pairs"))}


def derive(items: list[dict[str, Any]], reference: str | dict[str, str], primary: tuple[int, int, int]) -> None:
    """Add `derived` to every item: retention, speed-up (per config) and compression against its reference
    (`reference`: one label for the run, or item label -> reference label)."""
    by_label = {i["label"]: i for i in items}
    for item in items:
        ref_label = reference if isinstance(reference, str) else reference.get(item["label"])
        _derive_one(item, by_label.get(ref_label or ""), primary)
    _mark_pareto(items)


def _derive_one(item: dict[str, Any], ref: dict[str, Any] | None, primary: tuple[int, int, int]) -> None:
    """One item's `derived` figures against `ref` (None: nothing to compare with)."""
    ref_lat = {_config_key(e): e for e in (ref or {}).get("latency", []) if "skipped" not in e}
    ref_sts = ((ref or {}).get("sts") or {}).get("spearman")
    ref_cos = ((ref or {}).get("sts") or {}).get("cosines")
    sts = item.get("sts") or {}
    sts_ref = ref_sts
    if sts and ref_sts is not None and sts.get("pairs") != (ref or {}).get("sts", {}).get("pairs"):
        # fewer pairs than the reference (per-target --sts-limit-for): compare on the same first pairs
        sts_ref = _spearman_on_first(ref_cos, sts.get("path"), sts.get("pairs"))
    item["sts_reference_same_pairs"] = sts_ref if sts else None
    lat = {_config_key(e): e for e in item.get("latency", []) if "skipped" not in e}
    for key, entry in lat.items():
        entry["speedup_model"] = ratio(_median(ref_lat.get(key)), _median(entry))
        entry["speedup_e2e"] = ratio(_median(ref_lat.get(key), "e2e_ms"), _median(entry, "e2e_ms"))
    main = lat.get(primary)
    item["derived"] = {
        "sts_retention": ratio(sts.get("spearman"), sts_ref),
        **task_figures(item, ref),
        "speedup": main.get("speedup_model") if main else None,
        "speedup_e2e": main.get("speedup_e2e") if main else None,
        "compression": ratio((ref or {}).get("model_bytes"), item.get("model_bytes")),
        "latency_ms": _median(main),
        "latency_p90_ms": main["model_ms"]["p90"] if main else None,
        "e2e_ms": _median(main, "e2e_ms"),
    }


def _mark_pareto(items: list[dict[str, Any]]) -> None:
    """`derived.pareto`: on the size / latency (/ retention, when every candidate has one) front."""
    candidates = [
        i for i in items if i["derived"]["latency_ms"] is not None and i.get("model_bytes")
    ]
    use_retention = bool(candidates) and all(i["derived"]["retention"] is not None for i in candidates)
    points = [
        (i["model_bytes"], i["derived"]["latency_ms"]) + ((i["derived"]["retention"],) if use_retention else ())
        for i in candidates
    ]
    flags = pareto_front(points, maximize=(False, False) + ((True,) if use_retention else ()))
    for item in items:
        item["derived"]["pareto"] = None
    for item, flag in zip(candidates, flags):
        item["derived"]["pareto"] = bool(flag)


def build_report(
    config: Any,
    results: dict[str, dict[str, Any]],
    machine: dict[str, Any],
    started: dt.datetime,
    wall_s: float,
    interrupted: bool,
) -> dict[str, Any]:
    """The whole report as one JSON-able dict; items in command-line order, unrun ones marked as such."""
    job = config.job
    items = []
    for spec in config.items:
        result = results.get(spec.label)
        if result is None:
            result = {"label": spec.label, "spec": spec.as_dict(), "status": "not run", "error": "the run was interrupted first"}
        result = dict(result)
        result.setdefault("spec", spec.as_dict())
        result.setdefault("target", spec.target)
        result.setdefault("quantization", spec.quantization)
        result["reference"] = spec.label in config.reference_labels
        result["reference_label"] = config.reference_of(spec.label)
        if spec.kind == "export":
            result.setdefault("parity", export_parity(Path(spec.path)))
        items.append(result)
    primary = (job.seq_lens[0], job.batches[0], job.threads[0])
    derive(items, {i["label"]: i["reference_label"] for i in items}, primary)
    sts_info = None
    if job.sts_path:
        done = next((i["sts"] for i in items if i.get("reference") and i.get("sts")), None)
        done = done or next((i["sts"] for i in items if i.get("sts")), None)
        sts_info = {
            "path": job.sts_path,
            "limit": job.sts_limit,
            "pairs": done["pairs"] if done else None,
            "unique_sentences": done["unique_sentences"] if done else None,
            "truncated_sentences": done.get("truncated_sentences") if done else None,
            "max_length": job.sts_max_length,
            "limits_per_target": job.sts_limits,
        }
    return {
        "schema": SCHEMA,
        "status": "interrupted" if interrupted else "complete",
        "created": started.isoformat(timespec="seconds"),
        "wall_time_s": round(wall_s, 1),
        "command": config.command,
        "reference": config.reference,
        "primary_config": {"seq_len": primary[0], "batch": primary[1], "threads": primary[2]},
        "job": job.as_dict(),
        "sts": sts_info,
        "labelled": _labelled_info(job, items),
        "method": method_text(config),
        "machine": machine,
        "items": items,
    }


def export_parity(path: Path) -> dict[str, Any] | None:
    """What the export's own parity check measured (its manifest's `parity`): the worst cosine over every kernel path
    against the model's own library, the threshold and the worst absolute difference and agreement of any check."""
    from edgebert.modeldir import read_manifest

    parity = read_manifest(path).get("parity") or {}
    if not parity:
        return None
    paths = parity.get("kernel_paths") or {}
    checks = [c for p in paths.values() if isinstance(p, dict) for c in p.values() if isinstance(c, dict)]
    diffs = [c.get("max_abs_diff_embedding") or c.get("max_abs_diff") for c in checks]
    agree = [c["agreement"] for c in checks if c.get("agreement") is not None]
    return {
        "min_cosine": parity.get("min_cosine"), "threshold": parity.get("threshold"), "passed": parity.get("passed"),
        "kernel_paths": sorted(paths), "max_abs_diff": max((d for d in diffs if d is not None), default=None),
        "min_agreement": min(agree) if agree else None,
    }  # fmt: skip


def _labelled_info(job: Any, items: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The labelled set classifiers were scored on (path, limit, examples scored)."""
    if not job.sst2_path:
        return None
    done = next((i["classification"] for i in items if i.get("reference") and i.get("classification")), None)
    done = done or next((i["classification"] for i in items if i.get("classification")), None)
    return {
        "path": job.sst2_path, "limit": job.sst2_limit, "examples": done["examples"] if done else None,
        "truncated": done.get("truncated") if done else None, "max_length": done.get("max_length") if done else None,
    }  # fmt: skip


def method_text(config: Any) -> list[str]:
    """How everything was measured, in sentences the report prints."""
    job = config.job
    sts = (
        f"STS: Spearman of cosine(sentence embeddings) vs gold over {'all' if job.sts_limit is None else f'the first {job.sts_limit}'} "
        f"pairs of {job.sts_path}; each unique sentence embedded once in the item's own runtime, truncated to "
        f"{job.sts_max_length} tokens (static exports: padded to their fixed length, one row per call)"
        + (
            "; fewer pairs for " + ", ".join(f"{t} (first {n})" for t, n in job.sts_limits.items())
            + ", whose retention is against the reference's Spearman on the same pairs."
            if job.sts_limits
            else "."
        )
        if job.sts_path
        else "STS: not measured (no --sts file)."
    )
    return [
        f"Each item ran in {'its own worker process' if config.isolate else 'the harness process'}; "
        + ("each export is compared with its parent (the model directory it was exported from), the parents first"
           if config.reference == PARENT else f"the reference ({config.reference}) first")
        + "; everything in the same run on the same machine.",
        f"Latency: inputs are real English text truncated to exactly seq_len tokens (no padding) x batch rows; "
        f"{job.warmup} untimed warm-up calls, then {job.repeats} timed calls (perf_counter wall clock); median and p90 "
        f"reported. Configurations: seq_len {job.seq_lens}, batch {job.batches}, threads {job.threads}.",
        "What is timed: 'model' = one runner call on already-tokenized int inputs (ONNX Runtime session.run, LiteRT "
        "signature runner, PyTorch forward under inference_mode, TF.js execute() timed inside Node - Node start-up "
        "and model load excluded); 'tok+model' = the tokenizer (HF fast tokenizer) plus that call, timed together. "
        "Model-only and tok+model calls alternate within each repeat so both see the same machine load (TF.js: "
        "tokenizer time + the in-Node model time of the same repeat).",
        "Threads: PyTorch torch.set_num_threads, onnxruntime intra_op_num_threads (inter_op 1), LiteRT num_threads; "
        "TF.js runs on the wasm backend in Node, single-threaded, whatever the setting.",
        "Static-shape exports (TFLite, TF.js) run [1, seq_len] graphs: batch > 1 is a loop of single rows, and a "
        "shorter seq_len is zero-padded to the smallest of the export's lengths (buckets) that holds it.",
        f"App-like latency: up to {job.texts_limit} texts ({job.texts_path or 'the STS sentences'}, evenly spaced over "
        "the file) one at a time, "
        "each at its own length: tokenizer + model per text, median and p90 over the texts; static exports timed "
        "padded to their longest length (fixed) and to the smallest bucket that holds the text (buckets), "
        f"in alternating runs of {RUN_TEXTS} texts, each run opened by an untimed call (each timed call follows one of its "
        "own mode, as in an app). Tokenized as an app of the runtime does: TF.js in JS inside Node (the demo app's "
        "tokenizer, @huggingface/tokenizers) and timed there with tensors in, execute and read back; the others by "
        "the model's Rust tokenizer called directly (an app's native tokenizer pays none of transformers' Python "
        "wrapping). Every text's ids are checked against transformers' call; an item whose ids differ says so.",
        "Size: bytes of what an app ships for the model (graph + weights; PyTorch: weights + config.json); the "
        "tokenizer is listed apart. Parameters: the model's (exports: counted from their source model's config).",
        "Peak memory: RSS of the worker process plus its child processes (Node for TF.js), sampled every 5 ms with "
        "psutil during model load and one call per configuration; delta = peak - RSS after the runtime libraries "
        "were imported (so: weights + runtime session + activations).",
        sts,
        (
            f"Classifiers: accuracy of the argmax of the item's logits, in its own runtime, on the first {job.sst2_limit or 'all'} "
            f"labelled sentences of {job.sst2_path}; agreement = share of those sentences where the item predicts "
            "what the reference predicts."
            if job.sst2_path
            else "Classifiers: accuracy not measured (no --sst2 labelled set)."
        ),
        "Fill-mask: the middle token of each STS (else labelled) sentence masked; top-1 agreement with the reference. "
        "An item whose task differs from the reference's (e.g. a classifier exported without its head) is a failed item.",
        "Retention = item metric / reference metric on the item's task (classifiers: accuracy; fill-mask and token "
        "classification: agreement; embedders: STS); speed-up = reference median / item median (same seq_len, batch, "
        "threads); compression = reference bytes / item bytes. The Pareto front: items no other item beats on "
        "size, latency and retention at once.",
    ]


# ----------------------------------------------------------------------------------------- files


def write_report(directory: Path, report: dict[str, Any], echo: Any = None) -> list[Path]:
    directory = Path(directory)
    paths = [directory / "report.json", directory / "report.md"]
    try:
        plot_report(report, directory / "report.png")
        paths.append(directory / "report.png")
        report["plot"] = "report.png"
    except Exception as exc:  # noqa: BLE001 - a plotting problem must not lose the measurements
        report["plot"] = f"failed: {type(exc).__name__}: {exc}"
        if echo:
            echo(f"warning: report.png not written ({type(exc).__name__}: {exc})")
    paths[0].write_text(report_json(report))
    paths[1].write_text(render_markdown(report))
    return paths


def _mb(n: Any) -> str:
    return f"{n / 1e6:.1f}" if isinstance(n, (int, float)) and n else "–"


def _num(x: Any, fmt: str) -> str:
    return format(x, fmt) if isinstance(x, (int, float)) else "–"


def _params(n: Any) -> str:
    if not isinstance(n, (int, float)) or not n:
        return "–"
    return f"{n / 1e6:.1f}" if n >= 1e6 else f"{n / 1e6:.3f}"


def _pct(x: Any) -> str:
    return f"{x * 100:.1f} %" if isinstance(x, (int, float)) else "–"


def _times(x: Any) -> str:
    return f"{x:.2f}×" if isinstance(x, (int, float)) else "–"


def _sts_cell(item: dict[str, Any], ref_pairs: int | None) -> str:
    sts = item.get("sts") or {}
    if sts.get("spearman") is None:
        return "–"
    text = f"{sts['spearman']:.4f}"
    if ref_pairs is not None and sts.get("pairs") != ref_pairs:
        text += f" ({sts['pairs']} pairs)"
    return text


def _status(item: dict[str, Any]) -> str:
    status = item.get("status", "?")
    if status == "ok":
        return "ok"
    return f"{status}: {str(item.get('error', '')).replace('|', '/')}"[:160]


def main_table(report: dict[str, Any]) -> list[str]:
    p = report["primary_config"]
    per_parent = report["reference"] == PARENT
    header = ["item", *(["vs", "export parity: min cos"] if per_parent else []), "task", "target", "quant", "size MB", "params M", "model ms median",
              "p90", "tok+model ms", "mem Δ MB", "STS-B ρ", "accuracy", "agreement", "retention", "speed-up",
              "compression", "status"]  # fmt: skip
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    by_label = {i["label"]: i for i in report["items"]}
    for item in report["items"]:
        ref = by_label.get(item.get("reference_label") or report["reference"], {})
        d = item.get("derived", {})
        label = item["label"] + (" (ref)" if item.get("reference") else "") + (" ★" if d.get("pareto") else "")
        parity = _num((item.get("parity") or {}).get("min_cosine"), ".5f")
        vs = [str(item.get("reference_label") or ""), parity] if per_parent else []
        cells = [
            label, *vs, TASK_SHORT.get(str((item.get("spec") or {}).get("task")), "?"), str(item.get("target", "")),
            str(item.get("quantization", "")), _mb(item.get("model_bytes")), _params(item.get("params")),
            _num(d.get("latency_ms"), ".2f"), _num(d.get("latency_p90_ms"), ".2f"), _num(d.get("e2e_ms"), ".2f"),
            _num((item.get("memory") or {}).get("delta_rss_mb"), ".0f"), _sts_cell(item, (ref.get("sts") or {}).get("pairs")),
            _num(d.get("accuracy"), ".4f"), _pct(d.get("agreement")), _pct(d.get("retention")), _times(d.get("speedup")),
            _times(d.get("compression")), _status(item),
        ]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    rows.append("")
    rows.append(
        f"Latency at seq_len {p['seq_len']}, batch {p['batch']}, threads {p['threads']}. ★ = on the Pareto front. "
        "Sizes in MB = 10^6 bytes. An STS figure marked (N pairs) used only the first N pairs; its retention is "
        "against the reference on those same pairs. Task: emb = feature extraction (STS), cls = text classification "
        "(accuracy on the labelled set, agreement = share of its predictions equal to the reference's), mask = "
        "fill-mask (top-1 agreement), tok = token classification (per-token agreement); retention is on the item's "
        "own task."
    )
    return rows


def latency_table(report: dict[str, Any]) -> list[str]:
    rows = [
        "| item | seq | batch | threads | model ms median | p90 | tokenizer ms | tok+model ms | seq/s | speed-up |",
        "|" + "---|" * 10,
    ]
    for item in report["items"]:
        for e in item.get("latency", []):
            if "skipped" in e:
                rows.append(f"| {item['label']} | {e['seq_len']} | {e['batch']} | {e['threads']} | skipped: {e['skipped']} |||||| ")
                continue
            rows.append(
                f"| {item['label']} | {e['seq_len']} | {e['batch']} | {e['threads']} | {e['model_ms']['median']:.2f} | "
                f"{e['model_ms']['p90']:.2f} | {e['tokenize_ms']['median']:.2f} | {e['e2e_ms']['median']:.2f} | "
                f"{e['sequences_per_s']:.1f} | {_times(e.get('speedup_model'))} |"
            )
    return rows


def app_latency_table(report: dict[str, Any]) -> list[str]:
    """Tokenizer + model per text over real sentence lengths: one row per item and padding mode."""
    rows = [
        "| item | texts | tokens median / p90 | padding | tok+model ms median | p90 | model ms median | buckets vs fixed |",
        "|" + "---|" * 8,
    ]
    for item in report["items"]:
        a = item.get("app_latency")
        if not a:
            continue
        for mode, t in a["modes"].items():
            gain = _times(a.get("bucket_speedup_e2e")) if mode == "buckets" else ""
            rows.append(
                f"| {item['label']} | {a['texts']} | {a['tokens']['median']:g} / {a['tokens']['p90']:g} | {mode} | "
                f"{t['e2e_ms']['median']:.2f} | {t['e2e_ms']['p90']:.2f} | {t['model_ms']['median']:.2f} | {gain} |"
            )
    rows += ["", "natural = the tokens the text has (dynamic shapes); fixed = padded to the export's longest length; "
             "buckets = padded to the smallest bucket that holds the text (the same as fixed for a single-length export)."]
    for item in report["items"]:
        a = item.get("app_latency") or {}
        if a.get("tokenizer"):
            rows += ["", f"{item['label']}: tokenized by {a['tokenizer']}."]
        if a.get("ids_differ"):
            d = a["ids_differ"]
            rows += ["", f"**{item['label']}: the app's tokenizer gives other ids than Python's on {d['texts']} of "
                     f"{a['texts']} texts** (first: {d['first']!r}): the app would embed other tokens than the model was "
                     "checked on."]
        m = a.get("at_median_length")
        if m:
            rows += ["", f"{item['label']}, texts of the median length ({m['tokens']} tokens, {m['texts']} texts, bucket "
                     f"{m['bucket']}): tok+model {m['fixed_e2e_ms']:.2f} ms fixed, {m['buckets_e2e_ms']:.2f} ms buckets; "
                     f"buckets vs fixed {m['speedup_e2e']:.2f}x tok+model, {m['speedup_model']:.2f}x model only "
                     "(median of each text's ratio of its two timings, one run apart)."]
    return rows


def render_markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    libs = ", ".join(f"{k} {v}" for k, v in m["libraries"].items() if v)
    js = m.get("js") or {}
    js_text = ", ".join(f"{k} {v}" for k, v in js.items() if v)
    lines = [
        "# edgebert bench",
        "",
        f"Status: **{report['status']}**, {report['created']}, {report['wall_time_s']} s. Reference: **"
        + ("each export's parent model (column vs)" if report["reference"] == PARENT else report["reference"]) + "**.",
        "",
    ]
    if report.get("command"):
        lines += ["```", " ".join(report["command"]), "```", ""]
    lines += main_table(report)
    lines += [""]
    if any(len(i.get("latency", [])) > 1 for i in report["items"]):
        lines += ["## Latency per configuration", ""] + latency_table(report) + [""]
    if any(i.get("app_latency") for i in report["items"]):
        lines += ["## App-like latency (one text at a time, real lengths)", ""] + app_latency_table(report) + [""]
    failed = [i for i in report["items"] if i.get("status") != "ok"]
    if failed:
        lines += ["## Items that did not finish", ""]
        for item in failed:
            lines.append(f"- **{item['label']}** ({item.get('status')}): {item.get('error', '')}")
        lines.append("")
    notes = [(i["label"], n) for i in report["items"] for n in i.get("notes", [])]
    if report.get("sts"):
        s = report["sts"]
        used = "all" if s["limit"] is None else f"--sts-limit {s['limit']}"
        measured = (
            f"{s['pairs']} pairs ({used}), {s['unique_sentences']} unique sentences, max {s['max_length']} tokens"
            + (f" ({s['truncated_sentences']} sentences longer, truncated)" if s.get("truncated_sentences") else "")
            if s["pairs"] is not None
            else "not used: no item computes sentence embeddings"
        )
        lines += ["## Data", "", f"- STS: {s['path']}: {measured}."]
        for target, n in (s.get("limits_per_target") or {}).items():
            lines.append(f"- STS for {target} items: the first {n} pairs only (--sts-limit-for {target}={n}).")
        lines.append("")
    if report.get("labelled"):
        s = report["labelled"]
        if not report.get("sts"):
            lines += ["## Data", ""]
        else:
            lines.pop()
        cut = f", {s['truncated']} longer than {s['max_length']} tokens and truncated" if s.get("truncated") else ""
        lines += [f"- Labelled sentences (classifiers): {s['path']}: {s['examples'] or '–'} scored (first {s['limit'] or 'all'} rows){cut}.", ""]
    lines += ["## Method", ""] + [f"- {t}" for t in report["method"]] + [""]
    if notes:
        lines += ["## Notes", ""] + [f"- {label}: {n}" for label, n in notes] + [""]
    lines += [
        "## Machine",
        "",
        f"- CPU: {m['cpu_model']}; {m['logical_cores']} logical / {m['physical_cores']} physical cores "
        f"({m['usable_cores']} usable); {m['memory_gb']} GB RAM",
        f"- ISA: {' '.join(m.get('cpu_isa') or []) or 'unknown'}; int8 dot product: {m.get('int8_dot_product', 'unknown')} "
        "(int8 latencies and onnxruntime's u8 x s8 arithmetic depend on it: vnni exact, saturating-int16 on x86 without VNNI)",
        f"- Load average at start {', '.join(f'{x:.2f}' for x in m['loadavg_start'])}"
        + (f", at end {', '.join(f'{x:.2f}' for x in m['loadavg_end'])}" if m.get("loadavg_end") else "")
        + " (the machine may be shared: compare items within one report; each item's load average at its start "
        "is in report.json as loadavg_at_start)",
        f"- {m['os']}, Python {m['python']}",
        f"- {libs}",
    ]
    if js_text:
        lines.append(f"- {js_text}")
    lines += ["", "Raw numbers (every timed call) are in report.json." + (" Plot: report.png." if report.get("plot") == "report.png" else ""), ""]
    return "\n".join(lines)


def plot_report(report: dict[str, Any], path: Path) -> None:
    """Size vs latency, colour = STS retention, Pareto front ringed and joined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = [i for i in report["items"] if i.get("derived", {}).get("latency_ms") is not None and i.get("model_bytes")]
    fig, ax = plt.subplots(figsize=(9, 6), dpi=120)
    p = report["primary_config"]
    if not items:
        ax.text(0.5, 0.5, "no item finished a latency measurement", ha="center", va="center", transform=ax.transAxes)
    else:
        xs = [i["model_bytes"] / 1e6 for i in items]
        ys = [i["derived"]["latency_ms"] for i in items]
        ret = [i["derived"].get("retention") for i in items]
        known = [r for r in ret if r is not None]
        if known:
            lo, hi = min(known), max(max(known), 1.0)
            if hi - lo < 1e-3:
                lo = hi - 1e-3
            colours = [r if r is not None else float("nan") for r in ret]
            cmap = matplotlib.colormaps["viridis"].with_extremes(bad="lightgrey")
            sc = ax.scatter(xs, ys, c=colours, cmap=cmap, vmin=lo, vmax=hi, s=90, edgecolors="black", linewidths=0.5, zorder=3,
                            plotnonfinite=True)
            fig.colorbar(sc, ax=ax, label=f"retention on the task vs {report['reference']}")
        else:
            ax.scatter(xs, ys, s=90, color="tab:blue", edgecolors="black", linewidths=0.5, zorder=3)
        front = [(x, y) for x, y, i in zip(xs, ys, items) if i["derived"].get("pareto")]
        if front:
            fx, fy = zip(*front)
            ax.scatter(fx, fy, s=260, facecolors="none", edgecolors="tab:red", linewidths=1.5, zorder=4,
                       label="Pareto front: no other item is smaller, faster" + (" and as accurate" if known else ""))
            ax.legend(loc="lower right", fontsize=8)
        ax.set_xlim(0, max(xs) * 1.3)
        if max(ys) / max(min(ys), 1e-9) > 20:
            ax.set_ylim(min(ys) / 1.4, max(ys) * 1.6)
            from matplotlib.ticker import FuncFormatter

            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))
        else:
            ax.set_ylim(0, max(ys) * 1.15)
        placed: list[tuple[float, float]] = []
        for x, y, i in sorted(zip(xs, ys, items), key=lambda t: -t[1]):
            px, py = ax.transData.transform((x, y))
            crowded = any(abs(px - qx) < 70 and abs(py - qy) < 11 for qx, qy in placed)
            dy = -12 if crowded else 5
            placed.append((px, py + dy))
            ax.annotate(i["label"], (x, y), textcoords="offset points", xytext=(6, dy), fontsize=7)
    ax.set_xlabel("model size (MB, graph + weights)")
    ax.set_ylabel(f"median latency of the model call, ms{' (log scale)' if ax.get_yscale() == 'log' else ''}\nseq {p['seq_len']}, batch {p['batch']}, threads {p['threads']}")
    ax.set_title(f"edgebert bench: size vs latency ({report['status']})")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def rerender(path: Path) -> None:
    """Write report.md and report.png again from a report.json (same numbers, current rendering)."""
    report = json.loads(Path(path).read_text())
    write_report(Path(path).parent, report)


if __name__ == "__main__":  # python -m edgebert.bench.report DIR/report.json
    import sys

    rerender(Path(sys.argv[1]))
