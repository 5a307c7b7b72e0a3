"""The pipeline's verdicts: each `[targets]` limit checked per student export, and the headline rows of the report
(pipeline.json), from the bench report's items."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edgebert.pipeline.recipe import Recipe

TEACHER_LABEL = "teacher"  # the bench label of the teacher (PyTorch), the reference; its exports are teacher-<target>
SECOND_TEACHER_LABEL = "second-teacher"  # [redistill]'s teacher (PyTorch), benched beside the reference


def _by_label(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["label"]: i for i in report.get("items", [])}


def _check(value: float | None, limit: float, at_most: bool) -> bool:
    return value is not None and (value <= limit if at_most else value >= limit)


def evaluate_targets(
    recipe: Recipe, report: dict[str, Any], student_labels: dict[tuple[str, str], str], total_wall_s: float,
    refused: dict[str, str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """One verdict per target in the recipe's [targets], each with the per-export values behind it (an export the
    parity gate refused is not met, `status` "refused"); a target that cannot be evaluated (STS retention without
    --sts) has `met` None and does not count in `all_met`."""
    refused = refused or {}
    t = recipe.targets
    items = _by_label(report)
    verdicts: dict[str, Any] = {}

    def per_export(limit: float, value_of: Callable[[dict[str, Any]], float | None], at_most: bool, only: str | None = None) -> dict[str, Any]:
        rows = {}
        for (target, _), label in student_labels.items():
            if only and target != only:
                continue
            item = items.get(label, {})
            value = value_of(item) if item.get("status") == "ok" else None
            status = item.get("status") or ("refused" if label in refused else "missing")
            rows[label] = {"value": value, "met": _check(value, limit, at_most), "status": status}
        return {"limit": limit, "met": bool(rows) and all(r["met"] for r in rows.values()), "exports": rows}

    def size_mb(item: dict[str, Any]) -> float | None:
        return round(item["model_bytes"] / 1e6, 3) if item.get("model_bytes") else None

    def retention(item: dict[str, Any], key: str = "sts_retention") -> float | None:
        value = (item.get("derived") or {}).get(key)
        return round(value, 4) if value is not None else None

    def speedup_vs(teacher_label: str) -> Callable[[dict[str, Any]], float | None]:
        ref = (items.get(teacher_label) or {}).get("derived") or {}

        def value(item: dict[str, Any]) -> float | None:
            mine = (item.get("derived") or {}).get("latency_ms")
            theirs = ref.get("latency_ms")
            return round(theirs / mine, 3) if mine and theirs else None

        return value

    if t.max_mb is not None:
        verdicts["max_mb"] = per_export(t.max_mb, size_mb, at_most=True)
    if t.min_sts_retention is not None and not recipe.bench.sts:  # no --sts: not evaluated, not failed
        verdicts["min_sts_retention"] = {"limit": t.min_sts_retention, "met": None, "not_evaluated": "no --sts"}
    elif t.min_sts_retention is not None:
        verdicts["min_sts_retention"] = per_export(t.min_sts_retention, retention, at_most=False)
    if t.min_accuracy_retention is not None and not recipe.bench.sst2:  # no labelled set: not evaluated, not failed
        verdicts["min_accuracy_retention"] = {"limit": t.min_accuracy_retention, "met": None, "not_evaluated": "no labelled bench set"}
    elif t.min_accuracy_retention is not None:
        def accuracy_retention(item: dict[str, Any]) -> float | None:
            return retention(item, "retention") if item.get("classification") else None

        verdicts["min_accuracy_retention"] = per_export(t.min_accuracy_retention, accuracy_retention, at_most=False)
    if t.min_onnx_speedup is not None:
        verdicts["min_onnx_speedup"] = per_export(t.min_onnx_speedup, speedup_vs(f"{TEACHER_LABEL}-onnx"), at_most=False, only="onnx")
        verdicts["min_onnx_speedup"]["versus"] = f"{TEACHER_LABEL}-onnx"
    if t.min_tfjs_speedup is not None:
        verdicts["min_tfjs_speedup"] = per_export(t.min_tfjs_speedup, speedup_vs(f"{TEACHER_LABEL}-tfjs"), at_most=False, only="tfjs")
        verdicts["min_tfjs_speedup"]["versus"] = f"{TEACHER_LABEL}-tfjs"
    if t.max_wall_minutes is not None:
        minutes = round(total_wall_s / 60, 2)
        verdicts["max_wall_minutes"] = {"limit": t.max_wall_minutes, "value": minutes, "met": minutes <= t.max_wall_minutes}
    evaluated = [v["met"] for v in verdicts.values() if v["met"] is not None]
    return {"all_met": all(evaluated) if evaluated else None, **verdicts}


# --------------------------------------------------------------------------------------------------- run


def headline(report: dict[str, Any], student_labels: dict[tuple[str, str], str], refused: dict[str, str]) -> list[dict[str, Any]]:
    """One row per student export: MB, STS retention, latency (ms) and speed-up vs the reference."""
    items = _by_label(report)
    rows = []
    for label in student_labels.values():
        item = items.get(label, {})
        d = item.get("derived") or {}
        rows.append(
            {
                "label": label,
                "status": item.get("status") or ("refused" if label in refused else "missing"),
                "mb": round(item["model_bytes"] / 1e6, 3) if item.get("model_bytes") else None,
                "sts_spearman": (item.get("sts") or {}).get("spearman"),
                "sts_retention": d.get("sts_retention"),
                "accuracy": d.get("accuracy"),
                "agreement": d.get("agreement"),
                "retention": d.get("retention"),
                "latency_ms": d.get("latency_ms"),
            }
        )
    return rows
