"""What compact keeps of what it drops, on the corpus's long logs (see tests/retention.py)."""

from __future__ import annotations

import pytest

from transcompact.counting.counter import Options, TokenCounter
from transcompact.formats import loads

from .conftest import supported_corpus_files
from .retention import KINDS, Score, measure

LONG_LOG_TOKENS = 20_000  # the estimate of the active view
WINDOWS = (2000, 5000)


def long_logs() -> list:
    found = []
    for param in supported_corpus_files():
        path = param.values[0]
        transcript = loads(path.read_bytes(), str(path))
        if TokenCounter(transcript, Options(count="content")).tokens(transcript) >= LONG_LOG_TOKENS:
            found.append(path)
    return found


@pytest.fixture(scope="module")
def pooled():
    logs = long_logs()
    if not logs:
        pytest.skip("the shared corpus is not here")
    scores = {name: Score() for name in ("compact", "mask", "drop")}
    for keep in WINDOWS:
        for path in logs:
            measured = measure(path, keep)
            assert measured is not None, f"{path.name} at {keep}: nothing was compacted"
            for score, each in zip(scores.values(), measured):
                for kind in KINDS:
                    score.found[kind] += each.found[kind]
                    score.total[kind] += each.total[kind]
    return scores


@pytest.mark.slow
def test_the_checkpoint_keeps_what_the_next_turn_needs(pooled):
    ours = pooled["compact"]
    for kind in ("user", "paths", "errors"):
        assert ours.recall(kind) >= 0.95, (kind, ours.found, ours.total)
    # Measured 0.96: the pi session's 86 user messages keep their own budget, and its 148 commands
    # share --checkpoint-tokens (0.99 without it; docs/compact.md).
    assert ours.recall("commands") >= 0.90, (ours.found, ours.total)
    assert ours.recall("last_state") >= 0.90


@pytest.mark.slow
def test_the_checkpoint_beats_masking_and_dropping_at_the_same_budget(pooled):
    scores = pooled
    for kind in KINDS:
        assert scores["compact"].recall(kind) >= scores["mask"].recall(kind) >= scores["drop"].recall(kind) - 0.05, kind
