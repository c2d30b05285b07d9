"""OpenHands conversations written back: a changed message's events re-serialised, and a condensation event
that forgets the events of the messages a rewrite removed."""

from __future__ import annotations

import uuid as uuidlib
from datetime import datetime, timedelta
from typing import Any

from ...core.errors import ShapeError
from ...core.jsondata import BLANK, BOM, Lines, Record, dumps, line_bytes
from ...core.model import Image, Message, Text, ToolCall, ToolResult, Transcript
from .._log import arguments, written_back
from .reader import (
    ACTION,
    CONDENSATION,
    OBSERVATIONS,
    REJECTED,
    SUMMARY,
    SYSTEM_PROMPT,
    Entry,
    StoreSource,
    _content_blocks,
    _Origin,
    _tool_call,
    event_records,
    is_unchanged,
)


def _items(blocks) -> list[dict]:
    """Blocks as OpenHands content items (TextContent, ImageContent)."""
    items: list[dict] = []
    for block in blocks:
        if isinstance(block, Text):
            items.append({"cache_prompt": False, "type": "text", "text": block.text})
        elif isinstance(block, Image):
            url = block.url if block.data is None else f"data:{block.media_type or 'image/png'};base64,{block.data}"
            items.append({"cache_prompt": False, "type": "image", "image_urls": [url]})
        else:
            raise ShapeError(f"an OpenHands event cannot hold a {type(block).__name__} block")
    return items


def _same_items(old: Any, blocks) -> Any:
    """The items read, when they still read as `blocks` (an unchanged part keeps its JSON)."""
    return old if isinstance(old, list) and _content_blocks(old) == tuple(blocks) else _items(blocks)


def _rewritten_events(message: Message, view: tuple[Entry, ...]) -> dict[int, dict]:
    """The new JSON of each event of a changed message, by record."""
    entries = [view[k] for k in message.origin.entries]
    first = entries[0].value
    kind = first["kind"]
    out: dict[int, dict] = {}
    if kind == SUMMARY:
        raise ShapeError(f"line {entries[0].record + 1}: the agent makes this summary from its condensation; "
                         "it cannot be rewritten")
    if kind == ACTION:
        calls = {b.id: b for b in message.blocks if isinstance(b, ToolCall)}
        thought = [b for b in message.blocks if not isinstance(b, ToolCall)]
        for k, entry in enumerate(entries):
            value = entry.value
            call = calls.get(_tool_call(value).id)
            if call is None:
                raise ShapeError(f"line {entry.record + 1}: a tool call of an OpenHands action cannot be removed")
            new = dict(value)
            if k == 0:
                new["thought"] = _same_items(value.get("thought"), thought)
            old_call = value.get("tool_call") if isinstance(value.get("tool_call"), dict) else {}
            new["tool_call"] = {**old_call, "id": call.id, "name": call.name,
                                "arguments": arguments(old_call.get("arguments"), call.input)}
            if new != value:
                out[entry.record] = new
        return out
    if kind in OBSERVATIONS:
        result = next((b for b in message.blocks if isinstance(b, ToolResult)), None)
        if result is None or len(message.blocks) != 1:
            raise ShapeError(f"line {entries[0].record + 1}: an OpenHands observation holds exactly one tool result")
        content = (Text(result.content),) if isinstance(result.content, str) else result.content
        new = _without_extended_content(first)
        if kind == "AgentErrorEvent":
            new["error"] = "".join(b.text for b in content if isinstance(b, Text))
        elif kind == "UserRejectObservation":
            new["rejection_reason"] = "".join(b.text for b in content if isinstance(b, Text)).removeprefix(REJECTED)
        else:
            observation = dict(first.get("observation") or {})
            observation["content"] = _same_items(observation.get("content"), content)
            if result.is_error is not None or "is_error" in observation:
                observation["is_error"] = bool(result.is_error)
            new["observation"] = observation
        return {entries[0].record: new}
    llm_message = dict(first.get("llm_message") or {})
    llm_message["content"] = _same_items(llm_message.get("content"), message.blocks)
    return {entries[0].record: {**_without_extended_content(first), "llm_message": llm_message}}


def _without_extended_content(value: dict) -> dict:
    """The event with its `extended_content` emptied: a rewritten message holds what it added."""
    return {**value, "extended_content": []} if value.get("extended_content") else dict(value)


def rewritten_records(transcript: Transcript) -> tuple[list[Record], list[str]]:
    """The lines with each changed message's events re-serialised, and the ids of the events whose
    messages are gone (for a condensation to forget)."""
    source: StoreSource = transcript.source
    changed: dict[int, dict] = {}
    kept: set[int] = set()
    for message in transcript.messages:
        if not isinstance(message.origin, _Origin):
            raise ShapeError("cannot add a message to an OpenHands conversation: the agent records only its own events")
        kept.update(message.origin.entries)
        if not is_unchanged(message):
            changed.update(_rewritten_events(message, source.view))
    gone = [e.id for k, e in enumerate(source.view) if k not in kept and e.kind != SYSTEM_PROMPT]
    records = [line for line, _ in written_back(source.records, changed={i: (dumps(v, indent=False), v) for i, v in changed.items()})]
    return records, gone


def write(transcript: Transcript) -> bytes:
    source: StoreSource = transcript.source
    records, gone = rewritten_records(transcript)
    if gone:
        records = appended(records, source, condensation(records, source, gone))
    written = bytes(Lines(records))  # the lines joined by newlines
    return BOM + written if source.bom and not written.startswith(BOM) else written


# --- new events ------------------------------------------------------------------------------


def new_id(seed: str, records: list[Record]) -> str:
    """A UUID as OpenHands makes them, from `seed` so that a rewrite is repeatable, unused in the log."""
    taken = {v["id"] for _, v in records if isinstance(v, dict) and isinstance(v.get("id"), str)}
    for attempt in range(100):
        candidate = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{seed}:{attempt}"))
        if candidate not in taken:
            return candidate
    raise ShapeError("no free event id")  # a hundred uuid5 collisions: not in this universe


def _after_every_event(records: list[Record]) -> str:
    """A timestamp as OpenHands writes them (`datetime.now().isoformat()`), 1 ms after the newest event's."""
    latest = datetime(1970, 1, 1)
    for _, value in records:
        stamp = value.get("timestamp") if isinstance(value, dict) and "kind" in value else None
        try:
            moment = datetime.fromisoformat(stamp).replace(tzinfo=None) if isinstance(stamp, str) else None
        except ValueError:
            moment = None
        if moment is not None and moment > latest:
            latest = moment
    return (latest + timedelta(milliseconds=1)).isoformat(timespec="microseconds")


def condensation(records: list[Record], source: StoreSource, forgotten: list[str],
                 summary: str | None = None, offset: int | None = None) -> dict:
    """A `Condensation` event as the SDK serialises one (its fields in order, none left `null`):
    a child of the active leaf when the log's events name their parents (older logs have no
    `parent_id`: there the order of the events is the tree)."""
    seed = f"{len(records)}:{','.join(forgotten)}:{summary}"
    event: dict[str, Any] = {"id": new_id(seed, records), "timestamp": _after_every_event(records),
                             "source": "environment"}
    if source.branch and any("parent_id" in records[i][1] for i in event_records(records)):
        event["parent_id"] = records[source.branch[-1]][1]["id"]
    event["forgotten_event_ids"] = forgotten
    if summary is not None:
        event.update(summary=summary, summary_offset=offset)
    event["llm_response_id"] = new_id(f"response:{seed}", records)
    event["kind"] = CONDENSATION
    return event


def appended(records: list[Record], source: StoreSource, event: dict) -> list[Record]:
    """The lines with `event` after the last one, and the state's `leaf_event_id`, when it has
    one, moved to it: what the agent's `append_event` and its autosave of the state write."""
    out = list(records)
    if source.state is not None and "leaf_event_id" in out[source.state][1]:
        state = {**out[source.state][1], "leaf_event_id": event["id"]}
        out[source.state] = (dumps(state, indent=False), state)
    # Every line ends with a newline in a bundle: the new one goes before the empty text after the last.
    tail = [out.pop()] if out and out[-1][1] is BLANK and len(line_bytes(out[-1])) == 0 else []
    return [*out, (dumps(event, indent=False), event), *tail]
