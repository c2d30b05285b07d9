"""Codex's part of `compact`: a compaction appended the way Codex writes its own (core compact.rs),
and the context Codex puts in user messages told apart from what the user wrote."""

from __future__ import annotations

import re
from typing import Any

from ..jsondata import BLANK, Parsed, dumps
from ..model import USER, Message, Text, Transcript
from ..summary_message import SUMMARY_ACK, SUMMARY_PREFIX
from .codex import (
    CONTEXT_PREFIXES,
    RolloutSource,
    assistant_item,
    message_items,
    read,
    user_item,
)

# The lines a resumed session needs when the history before the compaction is dropped.
SESSION_LINES = frozenset({"session_meta", "turn_context"})
ENVIRONMENT_OPEN, ENVIRONMENT_CLOSE = "<environment_context>", "</environment_context>"
_ELEMENT = re.compile(r"<([A-Za-z_][\w-]*)>(.*?)</\1>", re.S)


def injected_context(message: Message) -> tuple[tuple[str, str], ...] | None:
    """What a user message Codex wrote itself says: the fields of `<environment_context>` (cwd,
    shell, sandbox …) as (name, value), in its order; nothing for the other context it injects
    (AGENTS.md and user instructions, an aborted turn's note), which is no request of the user's
    and no setting either. None for a message the user typed."""
    text = "".join(b.text for b in message.blocks if isinstance(b, Text)).lstrip()
    if message.role != USER or not text.startswith(CONTEXT_PREFIXES):
        return None
    if not text.startswith(ENVIRONMENT_OPEN):
        return ()
    body = text[len(ENVIRONMENT_OPEN):].split(ENVIRONMENT_CLOSE, 1)[0]
    return tuple((name, _element_value(value)) for name, value in _ELEMENT.findall(body))


def _element_value(value: str) -> str:
    """An element's text on one line; a list (`<writable_roots><root>…`) as its items, comma-separated."""
    items = _ELEMENT.findall(value)
    return ", ".join(_element_value(v) for _, v in items) if items else " ".join(value.split())


def append_compaction(transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                      *, drop_history: bool = False) -> Transcript:
    """After the original lines: a `compacted` line whose `replacement_history` is the whole new
    history (the summary pair, then the recent window's items as they are now), and the
    `context_compacted` event Codex writes after it; read back as a transcript.

    `message` holds the summary too, for a Codex that rebuilds the history from it. With
    `drop_history`, only the session's metadata lines are kept before them.
    """
    source: RolloutSource = transcript.source
    text = SUMMARY_PREFIX + summary
    history = [user_item(text), assistant_item(SUMMARY_ACK)]
    for message in recent:
        history += [item for _, item in message_items(message, source.items)]
    records = [r for r in source.records if r[1] is not BLANK]
    if drop_history:
        records = [r for r in records if isinstance(r[1], dict) and r[1].get("type") in SESSION_LINES]
    stamp = next((v["timestamp"] for _, v in reversed(records) if isinstance(v, dict) and "timestamp" in v), None)
    new: list[dict[str, Any]] = [
        {"type": "compacted", "payload": {"message": text, "replacement_history": history}},
        {"type": "event_msg", "payload": {"type": "context_compacted"}},
    ]
    if stamp is not None:
        new = [{"timestamp": stamp, **value} for value in new]
    # The new lines are read back from these values: only they are serialised, nothing is parsed again.
    lines = records + [(dumps(value, indent=False), value) for value in new] + [(b"", BLANK)]
    return read(Parsed(transcript.name, b"", records=lines, bom=source.bom))
