"""ONNX runner: an onnxruntime session over a `model.onnx`, on this machine's kernels or the emulated non-VNNI ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgebert.targets.base import INPUT_NAMES, KernelPath, Runner, embedding_outputs, named_output


class OnnxRunner(Runner):
    """An onnxruntime CPU session over an exported `model.onnx` (a path, or the serialized model's bytes)."""

    def __init__(self, model: Path | bytes, threads: int | None = None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.log_severity_level = 3  # no warnings about initializers a rewritten graph no longer uses
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        source = model if isinstance(model, bytes) else str(model)
        self.session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        self.input_dtypes = {i.name: np.int32 if i.type == "tensor(int32)" else np.int64 for i in self.session.get_inputs()}
        self.input_names = list(self.input_dtypes)
        self.output_names = [o.name for o in self.session.get_outputs()]

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The export's named outputs (edgebert's contract: float32, fill-mask's `top_ids` int32)."""
        feed = {name: inputs[name].astype(dtype) for name, dtype in self.input_dtypes.items()}
        values = self.session.run(self.output_names, feed)
        return {name: named_output(name, value) for name, value in zip(self.output_names, values)}


class RowByRowRunner(OnnxRunner):
    """An OnnxRunner that runs a batch one row at a time (same padded length) and stacks the outputs: the emulated
    kernel path's pair products grow with the rows of a call, so a padded batch runs in the memory of one text."""

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = [super(RowByRowRunner, self).run({k: v[i : i + 1] for k, v in inputs.items()}) for i in range(len(inputs["input_ids"]))]
        return {name: np.concatenate([r[name] for r in rows]) for name in rows[0]}


def onnx_kernel_paths(path: Path) -> dict[str, KernelPath]:
    """Runners for every kernel path `path` can meet: the host's, and the non-VNNI x86 one if it applies: proved to
    compute the host's integers when no u8 x s8 pair can leave int16 (`kernels.saturation_proof`: its figures are the
    host's), else emulated."""
    import onnx

    from edgebert.targets.onnx import kernels as onnx_kernels

    paths = {onnx_kernels.HOST: KernelPath(onnx_kernels.KERNEL_PATHS[onnx_kernels.HOST], OnnxRunner(path))}
    model = onnx_kernels.folded(onnx.load(str(path)))
    if not onnx_kernels.has_u8s8_products(model):
        return paths
    description = onnx_kernels.KERNEL_PATHS[onnx_kernels.SATURATING_U8S8]
    proof = onnx_kernels.saturation_proof(model)
    if proof is not None:
        paths[onnx_kernels.SATURATING_U8S8] = KernelPath(description, None, same_as=onnx_kernels.HOST, proof=proof)
        return paths
    onnx_kernels.emulate_u8s8_saturation(model)
    # The emulation holds a chunk of pair products ([1, tokens, pairs, N] int32, kernels.CHUNK_BYTES for 128
    # tokens) at a time: one row per call keeps a padded batch, and a 30k-column decoder, in bounded memory.
    paths[onnx_kernels.SATURATING_U8S8] = KernelPath(description, RowByRowRunner(model.SerializeToString()))
    return paths


class BareOnnxRunner(Runner):
    """Any ONNX sentence encoder: feeds the BERT inputs it declares (int64 or int32), pools when needed."""

    def __init__(self, path: Path, pooling: str, threads: int | None) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        unknown = [n for n in self.inputs if n not in INPUT_NAMES]
        if unknown:
            raise ValueError(f"{path.name} takes inputs {unknown} besides {list(INPUT_NAMES)}; not a BERT encoder")
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.pooling = pooling
        shape = self.inputs["input_ids"].shape
        self.static_seq_len = shape[1] if len(shape) == 2 and isinstance(shape[1], int) else None

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {}
        for name, info in self.inputs.items():
            dtype = np.int32 if "int32" in info.type else np.int64
            value = inputs.get(name)
            feed[name] = (np.zeros_like(inputs["input_ids"]) if value is None else value).astype(dtype)
        values = self.session.run(self.outputs, feed)
        return embedding_outputs(dict(zip(self.outputs, values)), inputs["attention_mask"], self.pooling)
