"""Gemini CLI's part of `compact` and `prune`: a compaction recorded the way the agent records a
rewritten history (`updateMessagesFromHistory`): one appended `{"$set": {"messages": [...]}}`
line that replaces every message record before it; and the UI's copies of tool results
(`resultDisplay`) made to match what prune left."""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import replace

from ...core.errors import ShapeError
from ...core.jsondata import Lines, Parsed
from ...core.model import Message, ToolResult, Transcript, result_text
from ...core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX
from .reader import ChatSource, _Origin, read
from .writer import append_line, rebuilt_records


def replace_ui_copies(transcript: Transcript) -> Transcript:
    """Give each changed result's call a `resultDisplay` (the text the agent's UI shows) equal to
    the result's new text, so that a pruned chat is pruned for the UI too. A display that is not
    text (a file diff) is left as it is."""
    source: ChatSource = transcript.source
    active = list(source.active)
    for message in transcript.messages:
        origin = message.origin
        if not isinstance(origin, _Origin) or origin.turn != "results" or message.blocks == origin.blocks:
            continue
        changed = {b.tool_call_id: b for b in message.blocks if isinstance(b, ToolResult) and b not in origin.blocks}
        record = active[origin.entry].record
        calls = [{**c, "resultDisplay": result_text(changed[c["id"]])}
                 if isinstance(c, dict) and c.get("id") in changed and isinstance(c.get("resultDisplay"), str) else c
                 for c in record["toolCalls"]]
        active[origin.entry] = replace(active[origin.entry], record={**record, "toolCalls": calls})
    return replace(transcript, source=replace(source, active=tuple(active)))


def append_compaction(transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                      *, drop_history: bool = False) -> Transcript:
    """The log with the compacted messages appended as a `$set`, read back as a transcript.

    The new list is the summary pair (a user record, then a gemini record acknowledging it) and
    the records of the recent window, with their ids (a record the window changed is written
    with its change). Their `tokens` are cleared: they counted a context that no longer exists.
    With `drop_history` the JSON Lines log keeps only its metadata line before the `$set`. The
    legacy document has no lines to append to: its `messages` array becomes the new list (the
    agent moves such a file to JSON Lines when it resumes it anyway).
    """
    source: ChatSource = transcript.source
    if any(not isinstance(m.origin, _Origin) for m in recent):
        raise ShapeError("compact can only carry over messages read from this chat")
    kept = [_without_usage(r) for r in rebuilt_records(source, recent, keep_unread=False)]
    stamp = next((r["timestamp"] for r in reversed([e.record for e in source.active]) if isinstance(r.get("timestamp"), str)), None)
    seed = f"{[e.record.get('id') for e in source.active[-1:]]}:compaction:{pre_tokens}"
    summary_id = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, seed))
    pair = [
        {"id": summary_id, **_at(stamp), "type": "user", "content": [{"text": SUMMARY_PREFIX + summary}]},
        {"id": str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{summary_id}:ack")), **_at(stamp), "type": "gemini",
         "content": [{"text": SUMMARY_ACK}]},
    ]
    messages = pair + kept
    if source.records is None:
        assert source.document is not None and source.layout is not None  # the legacy document: read sets both
        document = {**source.document, "messages": messages}
        data = source.layout.dumps(document)
        return read(Parsed(transcript.name, data, document=document, bom=source.bom))
    records = source.records[:1] if drop_history else source.records
    lines = append_line(list(records), {"$set": {"messages": messages}})
    return read(Parsed(transcript.name, bytes(Lines(lines)), records=lines, bom=source.bom))


def _at(stamp: str | None) -> dict:
    return {"timestamp": stamp} if stamp is not None else {}


def _without_usage(record: dict) -> dict:
    return {**record, "tokens": None} if isinstance(record.get("tokens"), dict) else record
