"""Session 14 probe (a record: run from the repo root with the paths below): how much of small's ONNX int8 loss (98.1 -> 97.96 %) comes from which MatMuls
being run-time-quantized. Variants of the healed student's fp32 ONNX; STS-B dev Spearman of sentence_embedding."""
import csv, os, shutil, sys
os.environ["USE_TF"] = "0"
from pathlib import Path
import numpy as np, onnx, onnxruntime as ort
from scipy.stats import spearmanr
from transformers import AutoTokenizer
from onnxruntime.quantization import QuantType, quantize_dynamic
from edgebert.targets.onnx.quantize import module_matmuls, weight_only_int8, fold_shared_weights

A = Path("/work/artifacts/s14/onnxprobe")
fp32 = A / "fp32" / "model.onnx"
tok = AutoTokenizer.from_pretrained(A / "fp32")
import json
rows = [r for r in csv.reader(open("/work/shared/data/stsb/dev.csv")) if len(r) >= 3]
try:
    float(rows[0][2])
except ValueError:
    rows = rows[1:]
sents = sorted({r[0] for r in rows} | {r[1] for r in rows})

def embed(path):
    so = ort.SessionOptions(); so.intra_op_num_threads = 1
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    out = {}
    for t in sents:
        enc = tok(t, return_tensors="np", truncation=True, max_length=128)
        feeds = {n: enc[n].astype(np.int64) for n in names if n in enc}
        if "token_type_ids" in names and "token_type_ids" not in feeds:
            feeds["token_type_ids"] = np.zeros_like(enc["input_ids"], dtype=np.int64)
        out[t] = s.run(["sentence_embedding"], feeds)[0][0]
    return out

def sts(e):
    def cos(a, b): return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    return spearmanr([cos(e[r[0]], e[r[1]]) for r in rows], [float(r[2]) for r in rows]).correlation

variants = {"fp32": fp32, "int8-now": Path("/work/artifacts/s14/small.work/export/student-onnx-int8/model.onnx")}
from edgebert.families import family_for
family = family_for(json.load(open("/work/artifacts/s14/small.work/heal/student/config.json"))["model_type"])
for name, float_roles in {"ffn-up+down-weight-only": ["ffn_input", "ffn_output"],
                          "all-dense-weight-only": ["query", "key", "value", "attention_output", "ffn_input", "ffn_output"]}.items():
    out = A / f"{name}.onnx"
    excluded = module_matmuls(fp32, family, [family.layer_module(r) for r in float_roles])
    src = A / "src.onnx"; shutil.copy(fp32, src); fold_shared_weights(src)
    quantize_dynamic(str(src), str(out), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True,
                     op_types_to_quantize=["MatMul", "Gather"], nodes_to_exclude=excluded)
    m = onnx.load(str(out)); changed = weight_only_int8(m, excluded); onnx.save(m, str(out))
    print(name, "weight-only nodes", len(changed), "of", len(excluded), "size MB", round(out.stat().st_size / 1e6, 2), flush=True)
    variants[name] = out
ref = None
for name, path in variants.items():
    e = embed(path)
    if ref is None: ref = e
    cmin = min(float(e[t] @ ref[t] / np.linalg.norm(e[t]) / np.linalg.norm(ref[t])) for t in sents)
    print(f"{name}: STS-B dev {sts(e):.4f} = {sts(e)/0.8672:.2%}; min cos to fp32 {cmin:.4f}", flush=True)
