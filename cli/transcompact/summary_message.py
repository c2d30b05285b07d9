"""The summary message compact writes, and every earlier summary it finds again.

The message is `[Previous conversation summary]`, the summary itself (a model's, or the
checkpoint built without one), the user's own words quoted, and, when the cut split a turn,
the request that opened it. `parse` takes such a message apart again, so that the next
compaction merges into the summary instead of quoting it: one summary, however often it runs.

A previous summary is one of: our summary pair, a Claude Code compact summary (its preamble
taken off), or an Anthropic `compaction` block (the API ignores everything before it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .formats.claude_code_rewrites import COMPACT_PREAMBLE
from .model import ASSISTANT, USER, Message, Opaque, Text

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


@dataclass(frozen=True)
class Previous:
    """An earlier summary found in a transcript, and the messages it stands for."""

    summary: SummaryText
    covered: frozenset[int]  # its own messages, and for a compaction block every message before it
    kind: str  # "pair", "claude-code" or "compaction"


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


def is_summary_message(message: Message) -> bool:
    """A message that holds a summary rather than the user's words."""
    if message.role == USER and text_of(message).startswith(SUMMARY_PREFIX):
        return True
    return isinstance(message.raw, dict) and message.raw.get("isCompactSummary") is True


def compaction_text(message: Message) -> str | None:
    """The readable summary of the last Anthropic `compaction` block of a message, if it has one (an
    OpenAI `compaction` item has no `content`, only `encrypted_content`: nothing to merge into)."""
    found = None
    for block in message.blocks:
        if isinstance(block, Opaque) and block.type == "compaction" and isinstance(block.raw, dict) and "content" in block.raw:
            content = block.raw.get("content")
            found = content if isinstance(content, str) else ""
    return found


def find_previous(messages: Sequence[Message]) -> Previous | None:
    """The newest earlier summary among `messages`, or None."""
    found = None
    for index, message in enumerate(messages):
        text = text_of(message)
        if message.role == USER and text.startswith(SUMMARY_PREFIX):
            covered = {index}
            if index + 1 < len(messages) and messages[index + 1].role == ASSISTANT and text_of(messages[index + 1]).strip() == SUMMARY_ACK:
                covered.add(index + 1)
            found = Previous(parse(text), frozenset(covered), "pair")
        elif isinstance(message.raw, dict) and message.raw.get("isCompactSummary") is True:
            body = text[len(COMPACT_PREAMBLE):] if text.startswith(COMPACT_PREAMBLE) else text
            found = Previous(parse(body), frozenset({index}), "claude-code")
        elif message.role == ASSISTANT and (content := compaction_text(message)) is not None:
            # Everything before the block is what the API no longer reads; the block's own message stays.
            found = Previous(parse(content), frozenset(range(index)), "compaction")
    return found
