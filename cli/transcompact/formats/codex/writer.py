"""Codex rollouts written back: a message's blocks as the items they came from (changed, dropped, added), the
lines that hold them rewritten (a paginated rollout's ordinals kept in order), and the usage lines of
each response sent a changed history restated."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ...core.errors import Location, ShapeError
from ...core.jsondata import BLANK, Lines, Record, dumps
from ...core.model import ASSISTANT, TOOL, USER, Block, Image, Message, Text, ToolCall, ToolResult, Transcript
from .._log import TOKENS_PER_CHAR, arguments, restating_ratio, string_or_empty, written_back
from .parsing import whole_value
from .reader import (
    CALL_TYPES,
    OUTPUT_TYPES,
    Item,
    RolloutSource,
    _Origin,
    _text,
    active_items,
    is_unchanged,
    item_kind,
    line_usage,
    read_whole,
    turns,
)


def message_items(message: Message, items: tuple[Item, ...]) -> list[tuple[int | None, dict]]:
    """The items a message is written as: (index of the item it was read from, or None for a new
    one; the item). An unchanged item is the very value read."""
    origin = message.origin
    if is_unchanged(message):
        return [(i, items[i].value) for i in origin.items]
    mine = set(origin.items) if isinstance(origin, _Origin) else set()
    groups: list[tuple[int | None, list[Block]]] = []
    used: set[int] = set()
    for block in message.blocks:
        index = block.line if block.line in mine else None
        if index is not None and groups and groups[-1][0] == index and item_kind(items[index].value) == "message":
            groups[-1][1].append(block)
            continue
        if index is None or index in used:
            if groups and groups[-1][0] is None:
                groups[-1][1].append(block)
            else:
                groups.append((None, [block]))
            continue
        used.add(index)
        groups.append((index, [block]))
    out: list[tuple[int | None, dict]] = []
    for index, blocks in groups:
        if index is None:
            out += [(None, value) for value in new_items(message.role, blocks)]
        else:
            before = [b for b in origin.blocks if b.line == index]
            out.append((index, _updated(items[index].value, before, blocks, message.role)))
    return out


def _fresh_part(block: Block, role: str) -> dict | None:
    if isinstance(block, Text):
        return {"type": "output_text" if role == ASSISTANT else "input_text", "text": block.text}
    if isinstance(block, Image):
        url = block.url if block.data is None else f"data:{block.media_type};base64,{block.data}"
        return {"type": "input_image", "image_url": url}
    return block.raw if isinstance(block.raw, dict) else None


def _parts(original: Any, before: tuple[Block, ...] | list[Block], blocks, role: str) -> list:
    """Content parts for `blocks`: the original part of each block that is unchanged, a new one otherwise."""
    parts = original if isinstance(original, list) and len(original) == len(before) else [None] * len(before)
    free = list(range(len(before)))
    out = []
    for block in blocks:
        k = next((k for k in free if before[k] == block and parts[k] is not None), None)
        if k is not None:
            free.remove(k)
            out.append(parts[k])
        elif (part := _fresh_part(block, role)) is not None:
            out.append(part)
    return out


def _updated(item: dict, before: list[Block], blocks: list[Block], role: str) -> dict:
    """`item` holding `blocks` instead of the `before` it was read as (the same value when equal)."""
    if blocks == before:
        return item
    kind = item_kind(item)
    block = blocks[0]
    if kind == "message":
        content = item.get("content")
        if isinstance(content, str) and len(blocks) == 1 and isinstance(block, Text):
            return {**item, "content": block.text}
        return {**item, "content": _parts(content, before, blocks, role)}
    if kind in CALL_TYPES and isinstance(block, ToolCall):
        out = {**item, "call_id": block.id}
        if kind == "function_call":
            out.update(name=block.name, arguments=arguments(item.get("arguments"), block.input))
        elif kind == "custom_tool_call":
            out.update(name=block.name, input=block.input if isinstance(block.input, str) else orjson.dumps(block.input).decode())
        else:
            out["action"] = block.input
        return out
    if kind in OUTPUT_TYPES and isinstance(block, ToolResult):
        if isinstance(block.content, str):
            output: Any = block.content
        else:
            old = before[0].content if before and isinstance(before[0], ToolResult) else ()
            output = _parts(item.get("output"), old if isinstance(old, tuple) else (), block.content, TOOL)
        return {**item, "call_id": block.tool_call_id, "output": output}
    return item


def new_items(role: str, blocks: list[Block]) -> list[dict]:
    """Items for blocks an operation added, as Codex writes them."""
    out: list[dict] = []
    parts: list[dict] = []

    def end_message() -> None:
        if parts:
            out.append({"type": "message", "role": role if role != TOOL else USER, "content": list(parts)})
            parts.clear()

    for block in blocks:
        if isinstance(block, ToolCall):
            end_message()
            out.append({"type": "function_call", "name": block.name, "arguments": arguments(None, block.input),
                        "call_id": block.id})
        elif isinstance(block, ToolResult):
            end_message()
            output = block.content if isinstance(block.content, str) else [
                p for b in block.content if (p := _fresh_part(b, TOOL)) is not None]
            out.append({"type": "function_call_output", "call_id": block.tool_call_id, "output": output})
        elif (part := _fresh_part(block, role)) is not None:
            parts.append(part)
    end_message()
    return out


def response_line(anchor: Any, item: dict, ordinal: int | None = None) -> tuple[bytes, dict]:
    """A `response_item` line for a new item, stamped like the line it follows (and numbered, in a
    paginated rollout)."""
    value = {"timestamp": anchor["timestamp"]} if isinstance(anchor, dict) and "timestamp" in anchor else {}
    if ordinal is not None:
        value["ordinal"] = ordinal
    value.update(type="response_item", payload=item)
    return dumps(value, indent=False), value


_ORDINAL_HEAD = re.compile(rb'(\{"timestamp":"[^"\\]*","ordinal":)\d+')


def renumbered(line: bytes | memoryview | None, value: dict, ordinal: int) -> tuple[bytes, dict]:
    """A line with another `ordinal`, its other bytes as they were when it has Codex's layout."""
    new = {**value, "ordinal": ordinal}
    if line is None:  # a line given by its value
        return dumps(new, indent=False), new
    found = _ORDINAL_HEAD.match(bytes(line[:300]))
    if found is None:  # written anew, whole (the trim may have kept part of it)
        new = {**whole_value((line, value)), "ordinal": ordinal}
        return dumps(new, indent=False), new
    return found[1] + str(ordinal).encode() + bytes(line[found.end():]), new


def write(transcript: Transcript) -> bytes:
    return bytes(write_lines(transcript))


def write_lines(transcript: Transcript) -> Lines:
    """The rollout's lines after a rewrite (`Format.write_lines`): the lines it kept are the
    input's own, which the post-condition takes as read, and the file is written from them
    without a copy of the whole."""
    source = read_whole(transcript.source, transcript.name)
    records, items = source.records, source.items
    origins = [m.origin for m in transcript.messages]
    if (all(isinstance(o, _Origin) for o in origins) and sorted(i for o in origins for i in o.items) == list(range(len(items)))
            and all(is_unchanged(m) for m in transcript.messages)):
        return Lines(list(records))  # the first line holds the byte-order mark, if any
    changed: dict[int, dict] = {}
    after: dict[int, list[dict]] = {}  # new items after an item (-1: before the first)
    kept: set[int] = set()
    last = -1
    for message in transcript.messages:
        for index, value in message_items(message, items):
            if index is None:
                after.setdefault(last, []).append(value)
                continue
            kept.add(index)
            last = index
            if value is not items[index].value:
                changed[index] = value
    inherited = {i for i, item in enumerate(items) if item.record < 0}
    if inherited & (set(changed) | set(after) | (inherited - kept)) or (-1 in after and 0 in inherited):
        raise ShapeError("this forked rollout's history starts in its parent rollout, which transcompact does not "
                         "write: the change would be there", location=Location(transcript.name),
                         hint="compact it instead: a compaction is appended to this file and replaces that history")
    restated = restated_usage(source, changed, kept, after, restating_ratio(transcript))
    return Lines.of(rewritten(source, changed, kept, after, restated), bom=source.bom)


def item_chars(item: dict) -> int:
    """The characters of what the model reads in an item: its text, a call's name and input, an output."""
    kind = item_kind(item)
    if kind == "message" or kind in OUTPUT_TYPES:
        content = item.get("content" if kind == "message" else "output")
        if isinstance(content, str):
            return len(content)
        return sum(len(text) for part in content if (text := _text(part)) is not None) if isinstance(content, list) else 0
    if kind in CALL_TYPES:
        given = item.get("arguments", item.get("input", item.get("action")))
        return len(string_or_empty(item.get("name"))) + len(given if isinstance(given, str) else orjson.dumps(given).decode())
    return 0


def restated_usage(source: RolloutSource, changed: dict[int, dict], kept: set[int],
                   after: dict[int, list[dict]], ratio: float = TOKENS_PER_CHAR) -> dict[int, dict]:
    """The usage lines of this file whose response was sent the history a rewrite changed, each with
    the prompt it counted less what the change took out of it, `ratio` tokens a character (the
    model the rewrite was counted with; Codex's own estimate is 4 characters a token): Codex
    resumes with the last one as the size of its context, and would compact a pruned rollout it no
    longer needs to, and `estimate` anchors on it."""
    if not ratio:  # none restated (`restating_ratio`)
        return {}
    items = source.items

    def taken(i: int) -> int:
        """The characters the rewrite took out at item i and the new items after it (below 0: added)."""
        old = item_chars(items[i].value) if i >= 0 else 0
        new = item_chars(changed[i]) if i in changed else old if i in kept else 0
        return old - new - sum(item_chars(value) for value in after.get(i, ()))

    taken_before = [taken(-1)]  # at k: the characters taken out before item k
    for i in range(len(items)):
        taken_before.append(taken_before[-1] + taken(i))
    if not any(taken_before):
        return {}
    start = {i: indices[0] for _, indices in turns([item.value for item in items]) for i in indices}
    position = {(item.record, item.slot): i for i, item in enumerate(items)}
    _, counted = active_items([*source.inherited, *source.records], -len(source.inherited))
    restated = {}
    for record, response in counted.items():
        at = position.get((response.record, response.slot))
        tokens = round(taken_before[start[at]] * ratio) if record >= 0 and at is not None else 0
        if tokens:
            restated[record] = _with_usage(source.records[record][1], tokens)
    return restated


def _with_usage(value: dict, tokens: int) -> dict:
    """A usage line with its response's prompt `tokens` smaller (the session's running totals stay)."""
    recorded = line_usage(value)
    assert recorded is not None  # a line `active_items` counted records usage
    usage = dict(recorded)
    for key in ("input_tokens", "total_tokens"):
        if isinstance(usage.get(key), int):
            usage[key] = max(0, usage[key] - tokens)
    for key in ("cached_input_tokens", "cache_write_input_tokens"):  # parts of the input
        if isinstance(usage.get(key), int) and isinstance(usage.get("input_tokens"), int):
            usage[key] = min(usage[key], usage["input_tokens"])
    payload = value["payload"]
    if value["type"] == "token_usage_record":
        return {**value, "payload": {**payload, "usage": usage}}
    return {**value, "payload": {**payload, "info": {**payload["info"], "last_token_usage": usage}}}


@dataclass(frozen=True)
class _NewItem:
    """A line for a new item, made once its place is known (its ordinal, in a paginated rollout)."""

    anchor: Any  # the line it is stamped like
    item: dict


def rewritten(source: RolloutSource, changed: dict[int, dict], kept: set[int],
              after: dict[int, list[dict]], restated: dict[int, dict]) -> list[Record]:
    """The file's lines with the items changed, dropped (not in `kept`) and added, and the usage
    lines `restated`. In a paginated rollout a line added takes the ordinal after the line before
    it, and the lines after it (after a line dropped) move up (down) by one."""
    records, items = source.records, source.items
    by_record: dict[int, list[int]] = {}
    for index, item in enumerate(items):
        by_record.setdefault(item.record, []).append(index)
    front = after.get(-1, [])
    lines_changed: dict[int, Any] = {}
    lines_dropped: set[int] = set()
    inserted: dict[int, list[Any]] = {}  # new lines, after a line (-1: before the first)

    def touched(indices: list[int]) -> bool:
        return any(i not in kept or i in changed or i in after or (i == 0 and front) for i in indices)

    for record, (_, value) in enumerate(records):
        indices = by_record.get(record)
        if record in restated:
            lines_changed[record] = (dumps(restated[record], indent=False), restated[record])
            continue
        if not indices or not touched(indices):
            continue
        if items[indices[0]].slot is None:  # a response_item line: its payload is the item
            index = indices[0]
            if index == 0:
                inserted.setdefault(record - 1, []).extend(_NewItem(value, new_item) for new_item in front)
            if index not in kept:
                lines_dropped.add(record)
            elif index in changed:
                new = {**value, "payload": changed[index]}
                lines_changed[record] = (dumps(new, indent=False), new)
            inserted.setdefault(record, []).extend(_NewItem(value, new_item) for new_item in after.get(index, ()))
            continue
        history = _history(value["payload"], [items[i] for i in indices], indices, changed, kept, after, front)
        new = {**value, "payload": {**value["payload"], "replacement_history": history}}
        lines_changed[record] = (dumps(new, indent=False), new)
    if not items and front:  # nothing was active: the new items start the history, at the end of the file
        last = len(records) - 1 - (bool(records) and records[-1][1] is BLANK)
        anchor = next((v for _, v in reversed(records[:last + 1]) if isinstance(v, dict)), None)
        inserted.setdefault(last, []).extend(_NewItem(anchor, new_item) for new_item in front)
    return _numbered(written_back(records, dropped=lines_dropped, changed=lines_changed, inserted=inserted),
                     source.paginated)


def _numbered(lines: list[tuple[Any, int | None]], paginated: bool) -> list[Record]:
    """The lines written, each new item's made; in a paginated rollout, each line's `ordinal` moved
    by the lines added (dropped) before it, and a new line numbered after the line before it."""
    out: list[Record] = []
    shift, ordinal, last_read = 0, None, -1  # how far the lines move; the ordinal of the last line out
    for line, read_from in lines:
        if isinstance(line, _NewItem):
            if paginated and ordinal is not None:
                ordinal, shift = ordinal + 1, shift + 1
            out.append(response_line(line.anchor, line.item, ordinal if paginated else None))
            continue
        if paginated:
            assert read_from is not None  # every line but a new item's was read
            shift -= read_from - last_read - 1  # the lines dropped since the last one out
            last_read = read_from
            text, value = line
            if isinstance(value, dict) and isinstance(value.get("ordinal"), int):
                ordinal = value["ordinal"] + shift
                if shift:
                    line = renumbered(text, value, ordinal)
        out.append(line)
    return out


def _history(payload: dict, held: list[Item], indices: list[int], changed: dict[int, dict], kept: set[int],
             after: dict[int, list[dict]], front: list[dict]) -> list:
    """A `compacted` line's new `replacement_history`; items Codex does not send stay where they were.
    A rebuilt history (the line had none) is written out whole once anything in it changes."""
    original = [] if held[0].rebuilt else list(payload.get("replacement_history") or ())
    # Every item of a `compacted` line has its slot.
    at_slot = {item.slot: (index, item) for item, index in zip(held, indices) if item.slot is not None}
    out: list = []
    for slot in range(len(original)) if original else at_slot:
        if slot not in at_slot:
            out.append(original[slot])
            continue
        index, item = at_slot[slot]
        if index == 0:
            out += front
        if index in kept:
            out.append(changed.get(index, item.value))
        out += after.get(index, ())
    return out
