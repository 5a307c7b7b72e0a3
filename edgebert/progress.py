"""Per-stage progress lines on stderr ("[2/5] converting … done in 3.1 s")."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator

from rich.console import Console

from edgebert import cost


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
        with self.console.status(prefix + " …"), cost.phase(label):
            yield
        elapsed = time.perf_counter() - start
        self.timings[label] = round(elapsed, 2)
        self.console.print(f"{prefix} [green]done[/green] in {elapsed:.1f} s")

    def note(self, message: str) -> None:
        """A line the user must see between stages (what the run chose or left out): one line, never wrapped."""
        self.console.print(f"note: {message}", soft_wrap=True)


class Track:
    """Progress over `total` units of long work: a rich bar with an estimate on a terminal; elsewhere (CI logs, a
    pipe) a line at every tenth with counts, elapsed time and an estimate, so a log stays short but never silent.

        with Track("teacher outputs", len(rows), "sequences") as track:
            for batch in batches: ...; track.advance(len(batch))
    """

    LINES = 10  # lines per run when not on a terminal

    def __init__(self, label: str, total: int, unit: str = "", quiet: bool = False, console: Console | None = None) -> None:
        self.label, self.total, self.unit = label, max(int(total), 1), unit
        self.console = console or Console(stderr=True, quiet=quiet, highlight=False)
        self.done, self.started, self._next_line, self._base = 0, time.perf_counter(), 1, 0
        self._bar: object | None = None

    def __enter__(self) -> Track:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        if self.console.is_terminal and not self.console.quiet:
            columns = (TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn())
            self._bar = Progress(*columns, console=self.console, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total)
        self.started = time.perf_counter()
        return self

    def advance(self, count: int = 1) -> None:
        """`count` more units done."""
        self.update(self.done + count)

    def update(self, done: int) -> None:
        """`done` units done in all: the bar moves, or a line is printed when another tenth is crossed."""
        line = self.crossed(done)
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)  # type: ignore[attr-defined]
        elif line:
            self.console.print(line, soft_wrap=True, highlight=False)

    def crossed(self, done: int) -> str | None:
        """Set the count to `done`; the progress line when that crossed another tenth of the total, else None."""
        self.done = min(int(done), self.total)
        if self.done * self.LINES < self._next_line * self.total:
            return None
        self._next_line = self.done * self.LINES // self.total + 1
        return self.line()

    def restart(self, done: int) -> None:
        """Start timing now from `done` units (a resumed run: its estimate counts only what this run does)."""
        self.started, self.done, self._base = time.perf_counter(), int(done), int(done)
        self._next_line = self.done * self.LINES // self.total + 1

    def line(self) -> str:
        """"label: 20,043/200,432 sequences (10 %), 1.3 min, about 11.7 min left"."""
        elapsed = time.perf_counter() - self.started
        ran = self.done - self._base
        left = elapsed * (self.total - self.done) / ran if ran else float("nan")
        unit = f" {self.unit}" if self.unit else ""
        estimate = f", about {_minutes(left)} left" if self.done < self.total and ran else ""
        return f"{self.label}: {self.done:,}/{self.total:,}{unit} ({100 * self.done // self.total} %), {_minutes(elapsed)}{estimate}"

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)  # type: ignore[attr-defined]
            if exc[0] is None:
                self.console.print(self.line(), soft_wrap=True, highlight=False)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


@contextlib.contextmanager
def library_chatter_kept_back(tail_bytes: int = 4000) -> Iterator[None]:
    """Everything written to file descriptor 2 while the block runs (TensorFlow/absl/LiteRT start-up logs, converter
    progress bars, library deprecation warnings) goes to a temporary file instead of the user's terminal or log; if
    the block fails, the file's tail is printed, so a failure keeps its evidence."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as kept:
        os.dup2(kept.fileno(), 2)
        failed = True
        try:
            yield
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if failed:
                kept.seek(max(0, kept.seek(0, os.SEEK_END) - tail_bytes))
                sys.stderr.write(kept.read().decode("utf-8", "replace"))
