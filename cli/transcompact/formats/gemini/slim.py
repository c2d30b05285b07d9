"""What of a Gemini CLI chat (JSON Lines) Gemini never sends when it resumes it (`slim`), found in
Gemini CLI 0.61.0 (`loadConversationRecord`, chatRecordingService.js) and judged by it
(tests/test_gemini_resume.py: the request from the slimmed chat is the request from the original).

Gemini replays the log: a record upserted by `id` keeps its first place and its last copy, a
`$set` updates the metadata (`messages` replaces them all), a `$rewindTo` removes a record and
every later one. What it ends with is written as one metadata line (every `$set` folded in), then
each record it holds once, in its order, as the line of its last copy (a record held inside a
`$set` written anew); a memory scratchpad goes before the records or after them as it stood,
fresh or stale, in the original. Dropped: the copies a later one replaced, what a rewind removed,
the `$set` lines. A legacy `.json` chat is left as it is.
"""

from __future__ import annotations

from typing import Any

from ...core.jsondata import BOM, Record, dumps, line_bytes
from ...core.model import Transcript
from .._log import Slimming
from .reader import ChatSource, is_metadata

SUPERSEDED = "copies of records a later copy replaced"
REMOVED = "records a rewind or a rewritten history removed (rewind points)"
FOLDED = "metadata and history updates ($set, $rewindTo), folded into the first line"


def slimming(transcript: Transcript) -> Slimming:
    source: ChatSource = transcript.source
    records = source.records
    if records is None:
        return Slimming()
    values = [value for _, value in records]
    first = next((i for i, value in enumerate(values) if is_metadata(value)), None)
    if first is None:
        return Slimming()
    metadata, scratchpad_last = _replayed(values, first)
    own = [entry.line if entry.position is None else None for entry in source.active]  # a record on a line of its own
    held = {line for line in own if line is not None}
    body = [_own_line(records[line], line == 0 and source.bom) if line is not None else (dumps(entry.record, indent=False), entry.record)
            for entry, line in zip(source.active, own)]
    if set(range(len(values))) - held - {first} <= {i for i, v in enumerate(values) if not isinstance(v, dict)} \
            and "messages" not in values[first] and metadata == values[first]:
        return Slimming()  # nothing replaced, removed or folded: the log is what Gemini holds
    head = {"sessionId": metadata["sessionId"], "projectHash": metadata["projectHash"],
            **{k: v for k, v in metadata.items() if k not in ("sessionId", "projectHash", "messages", "memoryScratchpad")}}
    lines: list[Record] = [(dumps(head, indent=False), head)]
    pad: list[Record] = []
    if "memoryScratchpad" in metadata:
        scratchpad = {"$set": {"memoryScratchpad": metadata["memoryScratchpad"]}}
        pad.append((dumps(scratchpad, indent=False), scratchpad))
    lines += [*pad, *body] if scratchpad_last else [*body, *pad]
    surviving = {entry.record.get("id") for entry in source.active}
    dropped: dict[int, str] = {}
    for index, value in enumerate(values):
        if index == first or index in held or not isinstance(value, dict):
            continue
        if isinstance(value.get("id"), str):
            dropped[index] = SUPERSEDED if value["id"] in surviving else REMOVED
        else:
            dropped[index] = FOLDED
    return Slimming(dropped, replaced={first: lines}, merged=frozenset(held))


def _replayed(values: list[Any], first: int) -> tuple[dict, bool]:
    """The metadata Gemini ends with, and whether its memory scratchpad goes before the records
    (it was tracked, and a record or a rewind came after it: stale, as it was)."""
    metadata = {k: v for k, v in values[first].items() if k != "messages"}
    tracking = stale = False
    for value in values[first + 1:]:
        if not isinstance(value, dict):
            continue
        if isinstance(value.get("$rewindTo"), str) or isinstance(value.get("id"), str):
            stale = stale or tracking
        elif isinstance(value.get("$set"), dict):
            update = value["$set"]
            if "memoryScratchpad" in update:
                tracking, stale = bool(update["memoryScratchpad"]), False
            metadata.update({k: v for k, v in update.items() if k != "messages"})
    return metadata, tracking and stale


def _own_line(record: Record, bom: bool) -> Record:
    """A record's own line as it goes after the metadata line: as it is (the input's bytes and the
    value read from them, or a line a rewrite made), but for the byte-order mark the first line of
    a file begins with."""
    return (bytes(line_bytes(record))[len(BOM):], record[1]) if bom else record
