"""Every earlier summary compact finds again in a transcript (its text: `core.summary_text`), so
that the next compaction merges into the summary instead of quoting it: one summary, however
often it runs.

A previous summary is one of: our summary pair, a summary an agent wrote into its log (its
format's `is_earlier_summary`: a Claude Code compact summary, its preamble taken off), or an
Anthropic `compaction` block (the API ignores everything before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...core.model import ASSISTANT, USER, Message, Opaque, Text
from ...core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX, SummaryText, parse, text_of
from ...formats import earlier_summary


@dataclass(frozen=True)
class Previous:
    """An earlier summary found in a transcript, and the messages it stands for."""

    summary: SummaryText
    covered: frozenset[int]  # its own messages, and for a compaction block every message before it
    kind: str  # "pair", "compaction", or the name of the format whose agent wrote it ("claude-code")


def is_summary_message(message: Message) -> bool:
    """A message that holds a summary rather than the user's words."""
    if message.role == USER and text_of(message).startswith(SUMMARY_PREFIX):
        return True
    return earlier_summary(message.raw) is not None


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
    """The newest earlier summary among `messages`, or None. A message left unread is read (apart:
    not kept read) only when its view says it may be one."""
    found = None
    for index, message in enumerate(messages):
        if not _may_be_summary(message):
            continue
        message = message.read_apart()
        text = text_of(message)
        if message.role == USER and text.startswith(SUMMARY_PREFIX):
            covered = {index}
            if (index + 1 < len(messages) and messages[index + 1].role == ASSISTANT
                    and text_of(messages[index + 1].read_apart()).strip() == SUMMARY_ACK):
                covered.add(index + 1)
            found = Previous(parse(text), frozenset(covered), "pair")
        elif (agent := earlier_summary(message.raw)) is not None:
            found = Previous(parse(agent.earlier_summary_body(text)), frozenset({index}), agent.name)
        elif message.role == ASSISTANT and (content := compaction_text(message)) is not None:
            # Everything before the block is what the API no longer reads; the block's own message stays.
            found = Previous(parse(content), frozenset(range(index)), "compaction")
    return found


def _may_be_summary(message: Message) -> bool:
    """False for an unread message whose view rules out a summary: it holds no user text, is no
    agent's summary (its record says), and no compaction block (a view holds none)."""
    view = message.view
    if view is None:
        return True
    return ((message.role == USER and any(size.type is Text for size in view.blocks))
            or earlier_summary(view.record) is not None)
