"""The text of a summary message, which the operations write and the formats word as their agent
does: `[Previous conversation summary]`, the summary, the user's own words quoted, and, when the
cut split a turn, the request that opened it. `parse` takes such a text apart again.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Message, Text

SUMMARY_PREFIX = "[Previous conversation summary]\n\n"
SUMMARY_ACK = "I have the context. Let's continue."
USER_WORDS_HEADING = "## The user's own words (verbatim, most recent first)"
OPENING_HEADING = "## The request this turn began with (verbatim)"

_WORDS = "\n\n" + USER_WORDS_HEADING + "\n\n"
_OPENING = "\n\n" + OPENING_HEADING + "\n\n"


@dataclass(frozen=True)
class SummaryText:
    """A summary message taken apart: the summary, the user's quoted words, the opening request."""

    body: str
    words: tuple[str, ...] = ()  # most recent first
    opening: str | None = None


def quoted(text: str) -> str:
    return "> " + text.replace("\n", "\n> ")


def unquoted(block: str) -> str:
    return "\n".join(line[2:] if line.startswith("> ") else line.lstrip(">") for line in block.split("\n"))


def compose(summary: SummaryText) -> str:
    """The text of the summary message."""
    text = SUMMARY_PREFIX + summary.body.strip()
    if summary.words:
        text += _WORDS + "\n\n".join(quoted(w) for w in summary.words)
    if summary.opening is not None:
        text += _OPENING + summary.opening
    return text


def parse(text: str) -> SummaryText:
    """`compose` undone: the words are quoted line by line, so the headings after the body are ours."""
    if text.startswith(SUMMARY_PREFIX):
        text = text[len(SUMMARY_PREFIX):]
    words_at = text.find(_WORDS)
    opening_at = text.find(_OPENING, words_at if words_at >= 0 else 0)
    opening = text[opening_at + len(_OPENING):] if opening_at >= 0 else None
    rest = text[:opening_at] if opening_at >= 0 else text
    words: tuple[str, ...] = ()
    if words_at >= 0:
        quotes = rest[words_at + len(_WORDS):]
        rest = rest[:words_at]
        words = tuple(unquoted(q) for q in quotes.split("\n\n") if q.strip())
    return SummaryText(rest.strip(), words, opening)


def text_of(message: Message) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, Text))
