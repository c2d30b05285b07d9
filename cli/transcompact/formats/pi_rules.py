"""pi's part of `check`: what pi needs of a session's compaction entries and tree.

- P1 (error): the active compaction's `firstKeptEntryId` is a `toolResult`, or names no entry on
  the path before it: the kept window would start with a result whose call was summarized away,
  or lose what it meant to keep.
- P2 (error): the active compaction comes after a kept `toolCall` and before its `toolResult` (a
  known way to brick a pi session: pi sends the summary, the call, then whatever follows the
  compaction, which is not the result).
- P3 (error): an entry's `parentId` names no entry: pi's path stops there and loses what came before.
"""

from __future__ import annotations

from ..check import ERROR, Violation
from ..model import Transcript
from .pi import SessionSource, _entry_type, first_kept


def _message(value) -> dict:
    message = value.get("message") if _entry_type(value) == "message" else None
    return message if isinstance(message, dict) else {}


def check_log(transcript: Transcript, path: str | None) -> list[Violation]:
    source: SessionSource = transcript.source
    records, entries = source.records, source.path
    out: list[Violation] = []
    if source.compaction is not None:
        at = entries.index(source.compaction)
        start = first_kept(records, entries, at)
        entry = records[source.compaction][1]
        target = entry.get("firstKeptEntryId", entry.get("firstKeptEntryIndex"))
        if start is None:
            out.append(Violation("P1", ERROR, f"the compaction's first kept entry {target} is not on the path before it",
                                 line=source.compaction + 1))
        elif _message(records[entries[start]][1]).get("role") == "toolResult":
            out.append(Violation("P1", ERROR, f"the compaction's first kept entry {target} is a toolResult",
                                 line=source.compaction + 1))
        else:
            out += _split_calls(records, entries[start:at], source.compaction)
    if source.version >= 2 and entries:
        root = records[entries[0]][1]
        if root.get("parentId"):  # pi walks up while parentId is truthy
            out.append(Violation("P3", ERROR, f"parentId {root['parentId']!r} names no entry: pi loses what came before",
                                 line=entries[0] + 1))
    return out


def _split_calls(records, kept: tuple[int, ...], compaction: int) -> list[Violation]:
    """P2 for each call in the kept window whose result does not come before the compaction."""
    pending: dict[str, None] = {}
    for index in kept:
        message = _message(records[index][1])
        if message.get("role") == "assistant" and message.get("stopReason") not in ("error", "aborted") \
                and isinstance(message.get("content"), list):
            pending.update((b["id"], None) for b in message["content"]
                           if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str))
        elif message.get("role") == "toolResult" and isinstance(message.get("toolCallId"), str):
            pending.pop(message["toolCallId"], None)
    return [Violation("P2", ERROR, f"the compaction comes between tool call {call_id} and its result", line=compaction + 1)
            for call_id in pending]
