"""The checkpoint's budget: what is left of it as the sections take their items (`Room`), and a
text cut to fit, its start and its end (`head_and_tail`)."""

from __future__ import annotations

from collections import Counter


def head_and_tail(text: str, limit: int) -> str:
    """`text` whole, or its start and end around a marker, cut at words."""
    if len(text) <= limit:
        return text
    half = max(1, (limit - 40) // 2)
    head = text[:half]
    head = head[: head.rfind(" ")] if " " in head[half // 2:] else head
    tail = text[-half:]
    tail = tail[tail.find(" ") + 1:] if " " in tail[: half // 2] else tail
    return f"{head} […{len(text) - len(head) - len(tail)} characters…] {tail}"


class Room:
    """What is left of the budget, in characters, and what did not fit, per kind. `tokens` and
    `chars` are the whole budget, which a section may size itself by or name."""

    def __init__(self, left: int, tokens: int, chars: int) -> None:
        self.left = left
        self.tokens = tokens
        self.chars = chars
        self.omitted: Counter = Counter()

    def take(self, item: str) -> bool:
        if len(item) + 1 > self.left:
            return False
        self.left -= len(item) + 1
        return True

    def fit(self, items: list[str], kind: str | None) -> list[str]:
        """The items that fit, in their order; those that do not are counted as `kind`."""
        kept = [item for item in items if self.take(item)]
        self.omitted[kind] += len(items) - len(kept)
        return kept
