"""TFLite runner: a LiteRT interpreter over `model.tflite`, on XNNPACK or on LiteRT's built-in kernels."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from edgebert import buckets
from edgebert.targets.base import INPUT_NAMES, Runner, embedding_outputs, named_output

SIGNATURE = "serving_default"


def signature_names(lengths: tuple[int, ...] | list[int]) -> dict[int, str]:
    """{bucket: signature}: the longest bucket is `serving_default` (what an app unaware of buckets runs), the
    others `seq_<length>`."""
    longest = max(lengths)
    return {n: SIGNATURE if n == longest else f"seq_{n}" for n in sorted(lengths)}


def _set_env() -> None:
    """Quiet LiteRT, litert_torch and TensorFlow's C++ logging; must run before they are imported."""
    from edgebert.targets.tf_subprocess import apply_env

    os.environ.setdefault("LITERT_TORCH_SHOW_PROGRESS", "n")
    apply_env(os.environ, tensorflow=False)


# LiteRT's kernel paths: the XNNPACK delegate it applies by default, and its built-in kernels (what runs where
# XNNPACK is not applied: builds or apps without the default delegate, ops XNNPACK does not take).
XNNPACK = "xnnpack"
BUILTIN = "builtin"
KERNEL_PATHS = {
    XNNPACK: "LiteRT with its default XNNPACK delegate",
    BUILTIN: "LiteRT built-in kernels, no default delegate",
}


class TFLiteRunner(Runner):
    """A LiteRT interpreter over `model.tflite`, one signature per sequence-length bucket ({bucket: signature});
    an input of T tokens runs on the smallest bucket >= T, row by row (the shapes are [1, bucket]). `parallel`: the
    verification's `run_many` shares the rows out over that many interpreters of one thread each, in threads (LiteRT
    releases the GIL while it computes; a row's arithmetic does not depend on which interpreter runs it)."""

    def __init__(
        self, path: Path, signatures: dict[int, str], threads: int | None = None, kernels: str = XNNPACK, padding_side: str = "right",
        parallel: int = 1,
    ) -> None:  # fmt: skip
        _set_env()
        from ai_edge_litert.interpreter import Interpreter, OpResolverType

        resolver = OpResolverType.AUTO if kernels == XNNPACK else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        self.interpreter = Interpreter(model_path=str(path), num_threads=threads, experimental_op_resolver_type=resolver)
        self.runners = {n: self.interpreter.get_signature_runner(s) for n, s in sorted(signatures.items())}
        listed = self.interpreter.get_signature_list()
        self.input_names = {n: list(listed[s]["inputs"]) for n, s in signatures.items()}
        self.buckets = tuple(sorted(signatures))
        self.padding_side = padding_side  # the tokenizer's: shorter inputs are padded on it
        self.helpers = [TFLiteRunner(path, signatures, 1, kernels, padding_side) for _ in range(parallel - 1)]

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        width = inputs["input_ids"].shape[1]
        bucket = buckets.pick(width, self.buckets)  # shorter inputs: zero-padded (attention_mask 0), cut back after
        feeds = buckets.fit(inputs, bucket, self.input_names[bucket], side=self.padding_side)
        outputs = buckets.run_rows(feeds, width, lambda row: self.runners[bucket](**row), self.padding_side)
        return {name: named_output(name, value) for name, value in outputs.items()}

    def run_many(self, feeds: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
        """Each feed's outputs, its rows shared out over this interpreter and its helpers (`parallel`)."""
        if not self.helpers:
            return super().run_many(feeds)
        from concurrent.futures import ThreadPoolExecutor

        rows = [{k: v[r : r + 1] for k, v in feed.items()} for feed in feeds for r in range(len(feed["input_ids"]))]
        workers = [self, *self.helpers]
        bounds = np.linspace(0, len(rows), len(workers) + 1).astype(int)
        with ThreadPoolExecutor(len(workers)) as pool:
            parts = pool.map(lambda w, lo, hi: [w.run(row) for row in rows[lo:hi]], workers, bounds[:-1], bounds[1:])
            done = iter([out for part in parts for out in part])
        results = []
        for feed in feeds:
            outputs = [next(done) for _ in range(len(feed["input_ids"]))]
            results.append({name: np.concatenate([o[name] for o in outputs]) for name in outputs[0]})
        return results

    def close(self) -> None:
        for helper in self.helpers:
            helper.close()
        self.helpers = []
        self.runners = {}
        self.interpreter = None


class BareTFLiteRunner(Runner):
    """Any TFLite sentence encoder with a signature: static [1, T] inputs, rows run one at a time."""

    def __init__(self, path: Path, pooling: str, threads: int | None) -> None:
        _set_env()
        from ai_edge_litert.interpreter import Interpreter

        self.interpreter = Interpreter(model_path=str(path), num_threads=threads)
        signatures = self.interpreter.get_signature_list()
        if not signatures:
            raise ValueError(f"{path.name} has no signature; bench needs a TFLite model with a named signature")
        key = "serving_default" if "serving_default" in signatures else sorted(signatures)[0]
        self.runner = self.interpreter.get_signature_runner(key)
        self.details = self.runner.get_input_details()
        unknown = [n for n in self.details if n not in INPUT_NAMES]
        if unknown:
            raise ValueError(f"{path.name} takes inputs {unknown} besides {list(INPUT_NAMES)}; not a BERT encoder")
        self.static_seq_len = int(self.details["input_ids"]["shape"][1])
        self.pooling = pooling

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        length = inputs["input_ids"].shape[1]
        if length > self.static_seq_len:
            raise ValueError(f"inputs have {length} tokens but this TFLite model takes exactly {self.static_seq_len}")
        feeds = {}
        for name, d in self.details.items():
            value = inputs.get(name)
            value = np.zeros_like(inputs["input_ids"]) if value is None else value
            feeds[name] = buckets.pad(value, self.static_seq_len, d["dtype"])
        mask = feeds["attention_mask"] if "attention_mask" in feeds else (feeds["input_ids"] != 0)
        rows = []
        for r in range(inputs["input_ids"].shape[0]):
            out = self.runner(**{n: v[r : r + 1] for n, v in feeds.items()})
            rows.append(embedding_outputs(out, mask[r : r + 1], self.pooling))
        result = {"sentence_embedding": np.concatenate([o["sentence_embedding"] for o in rows])}
        if all("last_hidden_state" in o for o in rows):
            result["last_hidden_state"] = np.concatenate([o["last_hidden_state"][:, :length] for o in rows])
        return result

    def close(self) -> None:
        self.runner = None
        self.interpreter = None
