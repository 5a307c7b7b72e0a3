"""ExecuTorch runner: a `model.pte`'s `forward` method in ExecuTorch's own runtime (its XNNPACK delegate on CPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from edgebert import buckets
from edgebert.targets.base import Runner, named_output

MAX_BATCH = 64  # the largest batch a program accepts (apps run one text; parity checks a few at once)


class ExecuTorchRunner(Runner):
    """A program's (a `.pte` path, or its bytes) `forward` on int64 inputs in the export's input order, outputs named
    as its manifest lists them."""

    def __init__(
        self, program: Path | bytes, input_names: list[str], output_names: list[str], static_seq_len: int | None = None, padding_side: str = "right"
    ) -> None:
        from edgebert.progress import library_chatter_kept_back

        with library_chatter_kept_back():  # the runtime's CPU probing logs, on its first load in a process
            import executorch.kernels.quantized  # noqa: F401 - the quantized tables' lookup kernels (int8 / int4)
            from executorch.runtime import Runtime

            self.program = Runtime.get().load_program(program if isinstance(program, bytes) else Path(program))
            self.method = self.program.load_method("forward")
        self.input_names, self.output_names = list(input_names), list(output_names)
        # a program of one fixed length (`Family.dynamic_sequence` False): shorter inputs are padded on the tokenizer's side
        self.static_seq_len, self.padding_side = static_seq_len, padding_side

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The program on `inputs`, `MAX_BATCH` rows per call (the wide parity texts of one bucket are more)."""
        width = inputs[self.input_names[0]].shape[1]
        if self.static_seq_len:
            inputs = buckets.fit(inputs, buckets.pick(width, (self.static_seq_len,)), self.input_names, np.int64, self.padding_side)
        rows = len(inputs[self.input_names[0]])
        parts = [self._call({n: inputs[n][i : i + MAX_BATCH] for n in self.input_names}) for i in range(0, rows, MAX_BATCH)]
        outputs = parts[0] if len(parts) == 1 else {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        return {k: buckets.cut(v, width, self.padding_side) for k, v in outputs.items()} if self.static_seq_len else outputs

    def _call(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import torch

        values = self.method.execute([torch.from_numpy(np.ascontiguousarray(inputs[n], dtype=np.int64)) for n in self.input_names])
        return {name: named_output(name, value.numpy()) for name, value in zip(self.output_names, values)}
