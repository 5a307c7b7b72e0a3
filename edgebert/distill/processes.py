"""The processes one distillation runs in: one, or several under `accelerate launch` / `torchrun` (data parallel).

Every process runs the whole of `distill()`: the same checks, the same teacher and student, its own share of each
batch (transformers' Trainer wraps the student in DistributedDataParallel). What must happen once happens on the
main process (writing the output directory, the log), and the teacher-output cache is computed in shares, one per
process (edgebert/distill/teacher_cache.py). `Processes.wait` is the barrier between those steps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

LAUNCHER_VARIABLE = "WORLD_SIZE"  # set by torchrun and accelerate launch for every process they start


@dataclass(frozen=True)
class Processes:
    """This process's index among `count` processes; `state` is accelerate's PartialState when there are several."""

    index: int = 0
    count: int = 1
    state: Any = None

    @property
    def main(self) -> bool:
        return self.index == 0

    def wait(self) -> None:
        """Block until every process gets here (nothing to wait for in a single process)."""
        if self.count > 1:
            self.state.wait_for_everyone()

    def share(self, rows: list[int]) -> list[int]:
        """This process's share of `rows`: every count-th one from its index (shares of similar lengths when `rows`
        is sorted by length)."""
        return rows[self.index :: self.count]


def current() -> Processes:
    """The processes of this run, from the launcher's environment (one process when nothing launched several)."""
    if int(os.environ.get(LAUNCHER_VARIABLE, "1")) <= 1:
        return Processes()
    import torch
    from accelerate import PartialState  # joins the process group the launcher set up (gloo on CPU, NCCL on GPUs)

    state = PartialState(cpu=not torch.cuda.is_available())  # as the Trainer's own (use_cpu without a GPU) will ask
    return Processes(state.process_index, state.num_processes, state)
