"""Checkpoint and seed soups: every training run's weights at the end of each epoch, kept on disk, and the
candidates made from them (Wortsman et al. 2022, model soups; Izmailov et al. 2018, weight averaging).

With N epochs and S seeds the candidates are the start, each epoch i (the S runs' weights at i, averaged) and, for
every k < N, the uniform average of every run's epochs k..N. They are built from the last epoch back, with a running
sum, so at most S + 2 sets of weights are in memory whatever N is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

State = dict[str, Any]  # parameter name -> torch.Tensor


@dataclass(frozen=True)
class Candidate:
    """A set of weights to choose from: the uniform average of epochs `first`..`last` of every seed's run (0..0: the
    start)."""

    first: int
    last: int

    @property
    def name(self) -> str:
        if self.last == 0:
            return "start"
        return f"epoch {self.last}" if self.first == self.last else f"soup of epochs {self.first}-{self.last}"

    def record(self) -> dict[str, Any]:
        """The manifest's form: its name and the epochs it averages."""
        return {"name": self.name, "epochs": [self.first, self.last]}


START = Candidate(0, 0)


class Snapshots:
    """Weights saved as safetensors files in `directory`: the start, and each seed's run at the end of each epoch."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, run: int, epoch: int) -> Path:
        return self.directory / ("start.safetensors" if epoch == 0 else f"run{run}-epoch{epoch}.safetensors")

    def save(self, run: int, epoch: int, state: State) -> None:
        """Run `run`'s weights after `epoch` (0: the start, shared by every run)."""
        from safetensors.torch import save_file

        save_file({k: v.detach().cpu().contiguous().clone() for k, v in state.items()}, str(self._path(run, epoch)))

    def load(self, run: int, epoch: int) -> State:
        from safetensors.torch import load_file

        return load_file(str(self._path(run, epoch)))


def average(states: list[State]) -> State:
    """The uniform average of `states`' floating-point tensors (the others, integer buffers the same in every state,
    from the last)."""
    return _scaled(_sum(states), len(states), states[-1])


def _sum(states: list[State], total: State | None = None) -> State:
    total = dict(total) if total is not None else {}
    for state in states:
        for key, value in state.items():
            if value.is_floating_point():
                total[key] = value.double() if key not in total else total[key] + value
    return total


def _scaled(total: State, count: int, like: State) -> State:
    return {k: (total[k] / count).to(v.dtype) if v.is_floating_point() else v for k, v in like.items()}


def candidates(snapshots: Snapshots, runs: int, epochs: int) -> Iterator[tuple[Candidate, State]]:
    """Every epoch (averaged over the runs) and every soup of epochs k..`epochs`, from the last epoch back."""
    total: State | None = None
    for epoch in range(epochs, 0, -1):
        states = [snapshots.load(run, epoch) for run in range(runs)]
        yield Candidate(epoch, epoch), average(states)
        total = _sum(states, total)
        if epoch < epochs:
            yield Candidate(epoch, epochs), _scaled(total, runs * (epochs - epoch + 1), states[-1])


def soup_of(snapshots: Snapshots, runs: int, epochs: int, first: int) -> tuple[Candidate, State]:
    """The soup of epochs `first`..`epochs` (`first` = `epochs`: the last epoch), averaged over the runs."""
    wanted = Candidate(first, epochs)
    return next((c, state) for c, state in candidates(snapshots, runs, epochs) if c == wanted)
