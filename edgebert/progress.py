"""Per-stage progress lines on stderr ("[2/5] converting … done in 3.1 s")."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from rich.console import Console


class Stages:
    """Numbered stages with timings; `quiet` silences them (tests, API callers)."""

    def __init__(self, total: int, quiet: bool = False) -> None:
        self.total = total
        self.index = 0
        self.console = Console(stderr=True, quiet=quiet, highlight=False)
        self.timings: dict[str, float] = {}

    @contextlib.contextmanager
    def stage(self, label: str) -> Iterator[None]:
        """Show `label` while the block runs, then its wall time."""
        self.index += 1
        prefix = f"[{self.index}/{self.total}] {label}"
        start = time.perf_counter()
        with self.console.status(prefix + " …"):
            yield
        elapsed = time.perf_counter() - start
        self.timings[label] = round(elapsed, 2)
        self.console.print(f"{prefix} [green]done[/green] in {elapsed:.1f} s")

    def note(self, message: str) -> None:
        """A line the user must see between stages (what the run chose or left out)."""
        self.console.print(f"note: {message}")
