"""What every reading of JSON Lines knows of a Codex rollout before its format is: the format's
names, what is kept of each line as it is parsed (`copies_trimmed`), and which lines a count
views (`begins_as_response_item`, `ViewedItemLine`). Imported for any JSON Lines input
(`formats.TRIMMED`): it imports nothing the reader alone needs."""

from __future__ import annotations

import os
import sys
from typing import Any

import orjson

from ...core.jsondata import PartialLine, Record, read_again

NAME = "codex"
DESCRIPTION = "Codex CLI rollout (JSON Lines of timestamp / type / payload)"
LINES = True  # a line is what a rewrite changes, keeps or removes


def named_as_rollout(path: str) -> bool:
    """Whether a file's name begins and ends as Codex names a rollout (`rollout-<time>-<thread
    id>.jsonl`, `thread_store.ROLLOUT_NAME` says it whole): a write over any other file is no
    business of Codex's thread store, which is not imported for it."""
    name = os.path.basename(path)
    return name.startswith("rollout-") and name.endswith(".jsonl")


# The events whose fields are read (the rest only by their type, and an `item_completed` by its
# item's: slim's). Of every other event, a copy of an item the UI replays (a command's output
# again, a message again), only those types are kept as the line is parsed (`copies_trimmed`).
READ_EVENTS = frozenset({"token_count", "thread_rolled_back", "thread_name_updated", "thread_goal_updated"})
LINE_KEYS = frozenset({"timestamp", "ordinal", "type", "payload"})
# The lines of a turn's settings, read only by a compaction, which carries the last of them over
# (the turn's context, the world state it rebuilds): of their payload only whether a world state
# is whole (`full`: slim's) is kept as the line is parsed. Each holds many small values (the
# sandbox, the instructions, the environments), several times its bytes once parsed.
SETTING_LINES = frozenset({"turn_context", "world_state"})


def copies_trimmed(value: Any) -> Any:
    """The trim (`Format.trim`, as the line is parsed): an `event_msg` line of an event no reading
    looks into (not `READ_EVENTS`) keeps its type, and an item's type, of its payload: a long
    session's command outputs and messages are not held a second time; a setting line
    (`SETTING_LINES`) keeps only a world state's `full`. Its bytes stay what is written; a
    rewrite that writes such a line anew, or carries it over, reads it again from them
    (`whole_value`)."""
    kind = value.get("type") if type(value) is dict else None  # (every line of every input: at once)
    if kind == "event_msg":
        event = _copied_event(value)
        if event is None or not value.keys() <= LINE_KEYS:
            return value
        payload = value["payload"]
        kept: dict[str, Any] = {"type": event}
        item = payload.get("item")
        if type(item) is dict and "type" in item:
            kept["item"] = {"type": item["type"]}
    elif type(kind) is str and kind in SETTING_LINES and value.keys() <= LINE_KEYS and type(payload := value.get("payload")) is dict:
        kept = {"full": payload["full"]} if "full" in payload else {}
    else:
        return value
    if kept == payload:
        return value  # nothing to leave out (a dict of another size differs at once)
    kept = one_of_each(kept)
    return {key: kept if key == "payload" else sys.intern(field) if key == "type" else field for key, field in value.items()}


# The payloads the trim keeps, and the item fields a view keeps, one of each: a long session's tens
# of thousands of lines are a few kinds (shared, as the values a reading gives are never changed
# in place). A process reading many logs keeps the first kinds it meets.
_KEPT: dict[bytes, dict] = {}
_KINDS_KEPT = 1000


def one_of_each(kept: dict) -> dict:
    """`kept`, or an equal dict kept before (`_KEPT`)."""
    try:
        key = orjson.dumps(kept)
    except TypeError:  # (a number beyond 64 bits in a kept field: no key, kept alone)
        return kept
    shared = _KEPT.get(key)
    if shared is None and len(_KEPT) < _KINDS_KEPT:
        shared = _KEPT[key] = kept
    return kept if shared is None else shared


# How Codex begins a line (`{"timestamp":…,"type":…}`, an `ordinal` between them in a paginated
# rollout), and the type of the lines a view reads: only such a line is offered to it.
LINE_START = b'{"timestamp":"'
RESPONSE_ITEM = b'"type":"response_item"'
_TYPE_WITHIN = 100  # bytes from the line's start: after the timestamp and the ordinal


class ViewedItemLine(PartialLine):
    """A `response_item` line as its view keeps it (`views.item_view`): the line's fields, and of
    its item (`payload`) what the reader tells items apart by (`type`, `role`); `seen`: the sizes
    of the blocks the reader makes of the item. Read whole from its line's bytes when a message is
    read from it, and by a write (`whole_value`)."""

    __slots__ = ()


def begins_as_response_item(text: memoryview) -> bool:
    """Whether a line begins as Codex begins a `response_item` line: the only lines its view reads."""
    return text[:len(LINE_START)] == LINE_START and RESPONSE_ITEM in bytes(text[:_TYPE_WITHIN])


def whole_value(record: Record, name: str = "<line>", index: int = 0) -> Any:
    """The value of line `index` with everything in it: read again from its bytes where the trim
    or the view may have kept part of it (`copies_trimmed`, `views.item_view`), else the value itself."""
    line, value = record
    kind = value.get("type") if type(value) is dict else None
    if line is None or not (type(value) is ViewedItemLine or type(kind) is str and kind in SETTING_LINES
                            or _copied_event(value) is not None):
        return value
    return read_again(record, name, index)


def _copied_event(value: Any) -> str | None:
    """The event of an `event_msg` line no reading looks into (not `READ_EVENTS`), else None."""
    if type(value) is not dict or value.get("type") != "event_msg":
        return None
    payload = value.get("payload")
    event = payload.get("type") if type(payload) is dict else None
    return event if type(event) is str and event not in READ_EVENTS else None
