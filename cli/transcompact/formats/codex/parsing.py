"""What every reading of JSON Lines knows of a Codex rollout before its format is: the format's
names, and what is kept of each line as it is parsed (`copies_trimmed`). Imported for any JSON
Lines input (`formats.TRIMMED`): it imports nothing the reader alone needs."""

from __future__ import annotations

import sys
from typing import Any

import orjson

from ...core.jsondata import Record, read_again

NAME = "codex"
DESCRIPTION = "Codex CLI rollout (JSON Lines of timestamp / type / payload)"
LINES = True  # a line is what a rewrite changes, keeps or removes

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
    kept = _one_of_each(kept)
    return {key: kept if key == "payload" else sys.intern(field) if key == "type" else field for key, field in value.items()}


# The payloads the trim keeps, one of each: a long session's tens of thousands of events are a few
# kinds (shared, as the values a reading gives are never changed in place). A process reading many
# logs keeps the first kinds it meets.
_KEPT: dict[bytes, dict] = {}
_KINDS_KEPT = 1000


def _one_of_each(kept: dict) -> dict:
    try:
        key = orjson.dumps(kept)
    except TypeError:  # (a number beyond 64 bits in a kept field: no key, kept alone)
        return kept
    shared = _KEPT.get(key)
    if shared is None and len(_KEPT) < _KINDS_KEPT:
        shared = _KEPT[key] = kept
    return kept if shared is None else shared


def whole_value(record: Record, name: str = "<line>", index: int = 0) -> Any:
    """The value of line `index` with everything in it: read again from its bytes where the trim
    may have kept part of it (`copies_trimmed`), else the value itself."""
    line, value = record
    kind = value.get("type") if type(value) is dict else None
    if line is None or not (type(kind) is str and kind in SETTING_LINES or _copied_event(value) is not None):
        return value
    return read_again(record, name, index)


def _copied_event(value: Any) -> str | None:
    """The event of an `event_msg` line no reading looks into (not `READ_EVENTS`), else None."""
    if type(value) is not dict or value.get("type") != "event_msg":
        return None
    payload = value.get("payload")
    event = payload.get("type") if type(payload) is dict else None
    return event if type(event) is str and event not in READ_EVENTS else None
