#!/usr/bin/env python
"""Fill-mask export outputs: full logits [1, T, V] against edgebert's in-graph top-k (ids + softmax scores).

    nice -n 19 .venv/bin/python benchmarks/experiments/fill_mask_outputs.py [--seq-len 128] [--top-k 5] [--repeats 20]

The packaged teacher (all-MiniLM-L6-v2, vocabulary 30522) with its masked-LM head (BertForMaskedLM: decoder tied
to the word embeddings, transform drawn at random: the arithmetic, not the predictions, is measured) is converted
both ways to ONNX (torch.onnx) and TFLite (litert-torch); for each: output bytes per call, which of SOFTMAX /
TOPK_V2 the TFLite graph has, and the median latency of `--repeats` calls at one thread. Time it on an idle
machine. docs/export.md ("Fill-mask: top-k in the graph") has the figures and the choice they made.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable



def median_ms(call: Callable[[], Any], repeats: int) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def masked_lm_dir(root: Path) -> Path:
    import transformers

    from edgebert.sources import default_model_dir

    teacher = default_model_dir()
    model = transformers.BertForMaskedLM.from_pretrained(teacher, trust_remote_code=False)
    model.config.architectures = ["BertForMaskedLM"]
    model.save_pretrained(root / "mlm", safe_serialization=True)
    transformers.AutoTokenizer.from_pretrained(teacher, trust_remote_code=False).save_pretrained(root / "mlm")
    return root / "mlm"


def variants(task_model: Any) -> dict[str, Any]:
    """The two graphs: the TaskModel (top-k) and the same transformers model returning its logits."""
    import torch

    class FullLogits(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> tuple[Any]:
            return (self.inner.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).logits,)

    return {"full_logits": FullLogits(task_model).eval(), "top_k": task_model}


def measure_onnx(name: str, module: Any, feeds: dict[str, Any], scratch: Path, repeats: int) -> None:
    import onnxruntime as ort
    import torch

    path = scratch / f"{name}.onnx"
    with torch.no_grad():
        torch.onnx.export(module, tuple(torch.from_numpy(feeds[k]) for k in feeds), str(path), input_names=list(feeds), opset_version=18, dynamo=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, feeds)
    ms = median_ms(lambda: session.run(None, feeds), repeats)
    print(f"ONNX {name}: {[o.shape for o in outputs]} = {sum(o.nbytes for o in outputs)} bytes/call; median {ms:.1f} ms")


def measure_tflite(name: str, module: Any, feeds: dict[str, Any], scratch: Path, repeats: int) -> None:
    import litert_torch
    import numpy as np
    import torch
    from ai_edge_litert.interpreter import Interpreter

    class Int32(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> dict[str, Any]:
            values = self.inner(input_ids.long(), attention_mask.long(), token_type_ids.long())
            return {f"output_{i}": v for i, v in enumerate(values)}

    int32 = {k: v.astype(np.int32) for k, v in feeds.items()}
    path = scratch / f"{name}.tflite"
    sample = {k: torch.from_numpy(v) for k, v in int32.items()}
    litert_torch.signature("serving_default", Int32(module).eval(), sample_kwargs=sample).convert().export(str(path))
    interpreter = Interpreter(model_path=str(path), num_threads=1)
    runner = interpreter.get_signature_runner("serving_default")
    outputs = runner(**int32)
    ops = sorted({op["op_name"] for op in interpreter._get_ops_details()} & {"SOFTMAX", "TOPK_V2"})  # noqa: SLF001
    ms = median_ms(lambda: runner(**int32), repeats)
    print(f"TFLite {name}: {[v.shape for v in outputs.values()]} = {sum(v.nbytes for v in outputs.values())} bytes/call; ops {ops}; median {ms:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()

    from edgebert.modelio import load_model
    from edgebert.parity import PARITY_SENTENCES, encode

    with tempfile.TemporaryDirectory(prefix="edgebert-fill-mask-") as scratch:
        loaded = load_model(masked_lm_dir(Path(scratch)), "fill-mask", args.top_k)
        encoded = encode(loaded.tokenizer, PARITY_SENTENCES[:1], args.seq_len, pad_to_seq_len=True)
        feeds = {name: encoded[name] for name in ("input_ids", "attention_mask", "token_type_ids")}  # forward's order
        for name, module in variants(loaded.embedder).items():
            measure_onnx(name, module, feeds, Path(scratch), args.repeats)
            measure_tflite(name, module, feeds, Path(scratch), args.repeats)


if __name__ == "__main__":
    main()
