"""How a count is written in a line a user reads: `1 message`, `2 messages`, `12,345 tokens`."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`number` with thousands separators, and `noun` in the singular for exactly one (`plural`,
    by default `noun` + s, for any other number)."""
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"
