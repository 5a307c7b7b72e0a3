"""The float-island guard (edgebert.targets.base.guard_min_cosine): the full minimum when a rung holds, an early
answer when only a failure is wanted."""

from __future__ import annotations

import numpy as np

from edgebert.targets.base import GUARD_CHUNK, RECIPE_MIN_COSINE, Runner, guard_min_cosine

BAD = np.array([[0.9, 0.43]], np.float32)  # cosine 0.902 to [1, 0]


class Recorded(Runner):
    """Returns the reference for every feed but those of the lengths in `bad`; records the lengths it ran."""

    def __init__(self, bad: set[int]) -> None:
        self.bad, self.ran = bad, []

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        length = int(inputs["attention_mask"].sum())
        self.ran.append(length)
        return {"sentence_embedding": BAD if length in self.bad else np.array([[1.0, 0.0]], np.float32)}


def feeds(count: int) -> list[dict[str, np.ndarray]]:
    """Feeds of lengths count..1 (longest first, as the guard texts are not ordered)."""
    return [{"input_ids": np.ones((1, n), np.int64), "attention_mask": np.ones((1, n), np.int64)} for n in range(count, 0, -1)]


def test_a_failing_rung_stops_at_the_first_chunk_that_fails_shortest_first() -> None:
    guard = feeds(3 * GUARD_CHUNK)
    reference = [{"sentence_embedding": np.array([[1.0, 0.0]], np.float32)}] * len(guard)
    early = Recorded({2})
    worst = guard_min_cosine(early, guard, reference, stop_below=RECIPE_MIN_COSINE)
    assert worst < RECIPE_MIN_COSINE and early.ran == list(range(1, GUARD_CHUNK + 1))
    full = Recorded({2})
    assert guard_min_cosine(full, guard, reference) == worst and len(full.ran) == len(guard)


def test_a_rung_that_holds_runs_every_feed_and_records_the_full_minimum() -> None:
    guard = feeds(2 * GUARD_CHUNK + 3)
    reference = [{"sentence_embedding": np.array([[1.0, 0.0]], np.float32)}] * len(guard)
    runner = Recorded(set())
    assert guard_min_cosine(runner, guard, reference, stop_below=RECIPE_MIN_COSINE) > 1 - 1e-9
    assert sorted(runner.ran) == list(range(1, len(guard) + 1))
