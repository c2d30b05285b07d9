"""pi sessions written back: a changed message goes back into its entry, what one entry cannot hold becomes
entries of its own, a dropped entry's children are re-parented, and the usage of each reply sent a
changed prompt is restated."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Callable
from typing import Any

from ...core.errors import Location, ShapeError
from ...core.jsondata import Lines, Record, compact_json, dumps, with_member_added, with_member_replaced
from ...core.model import ASSISTANT, USER, Block, Text, ToolResult, Transcript, tool_names
from .._log import Rewritten, restating_ratio, string_or_empty, surviving_parent, written_back
from .parsing import ViewedEntry, line_view
from .reader import (
    UNSENT_STOP_REASONS,
    SessionSource,
    _entry_type,
    _items,
    _Origin,
    _read_entry,
    active_entries,
    find_path,
    first_kept,
    is_unchanged,
    record_of,
    whole_value,
)
from .views import USAGE_FIGURES, usage_figures


def pieces(blocks: tuple[Block, ...]) -> list[tuple[Block, ...]]:
    """A message's blocks as pi's entries hold them: each tool result alone, the other blocks in runs."""
    out: list[tuple[Block, ...]] = []
    for block in blocks:
        if isinstance(block, ToolResult) or not out or isinstance(out[-1][0], ToolResult):
            out.append((block,))
        else:
            out[-1] += (block,)
    return out


def _own_piece(origin: _Origin, parts: list[tuple[Block, ...]]) -> int | None:
    """Which piece of a changed message (read as `origin`) goes back into the entry it was read from."""
    read_as = origin.blocks[0] if len(origin.blocks) == 1 and isinstance(origin.blocks[0], ToolResult) else None
    for k, part in enumerate(parts):
        first = part[0] if part else None
        if read_as is not None and isinstance(first, ToolResult) and first.tool_call_id == read_as.tool_call_id:
            return k
        if read_as is None and not isinstance(first, ToolResult):
            return k
    results = [k for k, part in enumerate(parts) if part and isinstance(part[0], ToolResult)]
    if read_as is not None and len(results) == 1:
        return results[0]  # its one result under another id (repair renamed an id used twice): the same entry
    return None


def _written_entry(blocks: tuple[Block, ...], value: dict, origin: _Origin | None) -> dict:
    """A message entry holding `blocks` (one piece), in the envelope of `value` (its own, or a template)."""
    pi_message = dict(value["message"])
    result = blocks[0] if blocks else None
    if isinstance(result, ToolResult):
        content = (Text(result.content),) if isinstance(result.content, str) else result.content
        read_blocks = origin.blocks[0].content if origin is not None and isinstance(origin.blocks[0], ToolResult) else ()
        matching = (_Origin(0, tuple(read_blocks), origin.items, False, True)
                    if origin is not None and read_blocks and not isinstance(read_blocks, str) else None)
        pi_message["content"] = _items(content, matching)
        if pi_message.get("toolCallId") != result.tool_call_id:
            pi_message["toolCallId"] = result.tool_call_id
        if result.is_error is not None:
            pi_message["isError"] = result.is_error
    elif origin is not None and origin.string_content and len(blocks) == 1 and type(blocks[0]) is Text:
        pi_message["content"] = blocks[0].text
    else:
        pi_message["content"] = _items(blocks, origin)
    return {**value, "message": pi_message}


def _new_entry(blocks: tuple[Block, ...], role: str, anchor: dict, names: dict[str, str]) -> dict:
    """An entry for a piece an operation added (a stand-in result, a placeholder), in pi's shape."""
    moment = anchor.get("message", {}).get("timestamp") if isinstance(anchor.get("message"), dict) else None
    result = blocks[0]
    if isinstance(result, ToolResult):
        body = {"role": "toolResult", "toolCallId": result.tool_call_id, "toolName": names.get(result.tool_call_id, ""),
                "content": [], "isError": bool(result.is_error)}
    elif role in (USER, ASSISTANT):
        body = {"role": role, "content": []}
    else:
        raise ShapeError(f"a pi session cannot hold a {role} message")
    if moment is not None:
        body["timestamp"] = moment
    entry = {"type": "message", "id": None, "parentId": None, "timestamp": anchor.get("timestamp"), "message": body}
    entry = {k: v for k, v in entry.items() if v is not None or k in ("id", "parentId")}
    return _written_entry(blocks, entry, None)


def write(transcript: Transcript) -> bytes:
    return bytes(write_lines(transcript))


def write_lines(transcript: Transcript) -> Lines:
    """The session's lines after a rewrite (`Format.write_lines`): the post-condition reads back
    only the lines it made, and keeps the values it made them from (a large session's restated
    replies are not parsed and held a second time)."""
    source: SessionSource = transcript.source
    records = [record_of(m) for m in transcript.messages]
    if (None not in records and set(records) == source.message_records and len(records) == len(source.message_records)
            and all(not m.is_read or is_unchanged(m) for m in transcript.messages)):
        return Lines(list(source.records))  # the first line holds the byte-order mark, if any
    restated = restated_usage(rewritten_records(transcript, _held_as_viewed), source, restating_ratio(transcript), transcript.name)
    return Lines.of([(line, _held_as_viewed(line, value)) for line, value, _ in restated], bom=source.bom)


def _held_as_viewed(line: Any, value: Any) -> Any:
    """What is held of a line the rewrite wrote anew (its bytes): its view where one reads it, as
    a reading of the output would hold it, not the whole entry it was made of (a changed result's
    `details` and all: a large prune's thousands)."""
    if type(value) is not dict or type(line) is not bytes:
        return value
    viewed = line_view(memoryview(line))
    return value if viewed is None else viewed


def entry_chars(value: Any) -> int:
    """The characters of what pi sends of an entry: text, thinking, a call's name and arguments, a
    command run, a summary (what compaction.ts `estimateTokens` counts, images aside); of an entry
    its view read, the sizes it saw of those blocks (the same characters)."""
    if type(value) is ViewedEntry:
        return 0 if value["message"].get("stopReason") in UNSENT_STOP_REASONS else sum(size.chars for size in value.seen)
    kind = _entry_type(value)
    if kind in ("compaction", "branch_summary"):
        return len(value["summary"]) if isinstance(value.get("summary"), str) else 0
    if kind == "custom_message":
        return _content_chars(value.get("content"))
    message = value.get("message") if kind == "message" else None
    if not isinstance(message, dict) or message.get("stopReason") in UNSENT_STOP_REASONS:
        return 0
    role = message.get("role")
    if role == "bashExecution":
        fields = () if message.get("excludeFromContext") else ("command", "output")
        return sum(len(message[k]) for k in fields if isinstance(message.get(k), str))
    if role in ("branchSummary", "compactionSummary"):
        return len(message["summary"]) if isinstance(message.get("summary"), str) else 0
    return _content_chars(message.get("content"))


def _content_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    total = 0
    for block in content if isinstance(content, list) else ():
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in ("text", "thinking") and isinstance(block.get(kind), str):
            total += len(block[kind])
        elif kind == "toolCall":
            total += len(string_or_empty(block.get("name"))) + len(compact_json(block.get("arguments", {})))
    return total


def restated_usage(out: list[Rewritten], source: SessionSource, ratio: float, name: str) -> list[Rewritten]:
    """`out` with the `usage` of each assistant message sent a prompt the rewrite changed restated:
    `totalTokens`, which pi judges the size of its context by (compaction.ts `calculateContextTokens`,
    before it sends and in its footer), less what the change took out before it, `ratio` tokens a
    character (the model the rewrite was counted with; pi's own estimate is 4 characters a token).
    The billed parts (`input`, `cacheRead`, … and `cost`, which pi adds up as the session's totals)
    stay as the API reported them."""
    if not ratio:  # none restated (`restating_ratio`)
        return out
    before = _chars_before(source.records, source.path, source.version)
    lines = [(line, value) for line, value, _ in out]
    now = _chars_before(lines, find_path(lines, source.version), source.version)
    restated = list(out)
    for k, (line, value, read_from) in enumerate(out):
        if k in now and read_from in before:
            tokens = round((before[read_from] - now[k]) * ratio)
            if tokens and (new := _usage_less((line, value), tokens, name, read_from)) is not None:
                restated[k] = (*new, read_from)
    return restated


def _chars_before(records: list[Record], path: tuple[int, ...], version: int) -> dict[int, int]:
    """For each assistant message on the path, the characters pi sent before it: after the
    compaction that was active when it was sent (the newest before it), or with none. Those before
    the active compaction are restated too: a session that ends on its compaction is counted with
    the model of the part before it (`counter._carried`)."""
    ends = [k for k, index in enumerate(path) if _entry_type(records[index][1]) == "compaction"]
    out: dict[int, int] = {}
    for end in (*ends, len(path)):
        out.update(_sent_before(records, path[:end], version))
    return out


def _sent_before(records: list[Record], path: tuple[int, ...], version: int) -> dict[int, int]:
    """For each assistant message pi sends after the active compaction of `path` (or with none),
    the characters it sends before it."""
    order, compaction = active_entries(records, path, version)
    after = set(path[path.index(compaction) + 1:] if compaction is not None else path)
    out, sent = {}, 0
    for index in order:
        value = records[index][1]
        if index in after and isinstance(value.get("message"), dict) and value["message"].get("role") == "assistant":
            out[index] = sent
        sent += entry_chars(value)
    return out


def _usage_less(record: Record, tokens: int, name: str, index: int) -> Record | None:
    """An assistant entry (line `index` of the input) whose `usage.totalTokens` counts a prompt
    `tokens` smaller (None: no usage to restate): its line's bytes but the figure
    (`_restated_in_place`), or where its line does not allow that, the entry written anew (read
    whole first where its view read it)."""
    value = record[1]
    message = value.get("message")
    if not isinstance(message, dict):  # what `_chars_before` found: an assistant message's entry
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict) or message.get("stopReason") in UNSENT_STOP_REASONS:
        return None
    parts = [usage[k] for k in ("input", "output", "cacheRead", "cacheWrite") if type(usage.get(k)) is int]
    total = usage["totalTokens"] if type(usage.get("totalTokens")) is int and usage["totalTokens"] > 0 else sum(parts)
    output = usage["output"] if type(usage.get("output")) is int else 0
    new = max(output, total - tokens)
    if new == total:
        return None
    if (in_place := _restated_in_place(record, usage, new)) is not None:
        return in_place
    if type(value) is ViewedEntry:
        return _usage_less((record[0], whole_value(record, name, index)), tokens, name, index)
    value = {**value, "message": {**message, "usage": {**usage, "totalTokens": new}}}
    return dumps(value, indent=False), value


def _restated_in_place(record: Record, usage: dict, new: int) -> Record | None:
    """An input line with its usage's `totalTokens` made `new` (a `CutLine` of it: the figure
    replaced, or added last), every other byte as the agent wrote it, and the value it reads as
    (of a viewed entry, what its view keeps); None where the line does not hold the figure (or
    the usage) once, or its usage holds what a view does not read. Proven by reading the new
    line's usage alone: one place of the line changed, and its message's usage holds the new
    figure, so that place was the figure's."""
    line, value = record
    if not isinstance(line, (bytes, memoryview)):  # (a line made anew, or cut from another)
        return None
    recorded = usage.get("totalTokens")
    if type(recorded) is int:
        cut = with_member_replaced(line, "totalTokens", recorded, new)
    else:  # a session of an older pi records none
        cut = with_member_added(line, "usage", "totalTokens", new) if recorded is None and "totalTokens" not in usage else None
    restated = {**usage, "totalTokens": new}
    if cut is None or usage_figures(bytes(cut)) != {key: restated[key] for key in USAGE_FIGURES if key in restated}:
        return None
    if type(value) is not ViewedEntry:
        return cut, {**value, "message": {**value["message"], "usage": restated}}
    kept = ViewedEntry(value)
    kept.seen, kept["message"] = value.seen, {**value["message"], "usage": restated}
    return cut, kept


def rewritten_records(transcript: Transcript, held: Callable[[bytes, dict], Any] | None = None) -> list[Rewritten]:
    """The file's lines with `transcript`'s changes, each with the record it was read from (None: a new entry).

    A changed message goes back into its entry; what it gained that one pi entry cannot hold
    (another tool result, text beside a result) becomes entries of its own, before or after it.
    An entry its view read (`parsing.ViewedEntry`) is read whole again only where a new entry is
    made of it. `held`: what is kept of a line written anew besides its bytes (its value, else
    `held(line, value)`, made as each line is: a large prune's new entries are not all held whole).
    """
    source: SessionSource = transcript.source
    records = source.records

    def value_of(index: int) -> Any:
        return whole_value(records[index], transcript.name, index)

    def written(value: dict) -> Record:
        line = dumps(value, indent=False)
        return line, value if held is None else held(line, value)

    names = tool_names(transcript.messages)
    contents: dict[int, Record] = {}  # each changed entry's line, written
    inserted: dict[int, list[dict]] = {}
    claimed: set[int] = set()
    last_record = source.path[0] if source.path else None

    def insert_after(anchor: int | None, parts: list[tuple[Block, ...]], role: str) -> None:
        if not parts:
            return
        if anchor is None:
            raise ShapeError("cannot add a message to a pi session that holds no entry")
        anchor_value = value_of(anchor)
        inserted.setdefault(anchor, []).extend(_new_entry(part, role, anchor_value, names) for part in parts)

    for message in transcript.messages:
        if not message.is_read or is_unchanged(message):  # as it was read, in its entry (an unread one without reading it)
            last_record = record_of(message)
            assert last_record is not None  # (a message read from an entry)
            claimed.add(last_record)
            continue
        origin = message.origin
        if not isinstance(origin, _Origin):
            insert_after(last_record, pieces(message.blocks), message.role)
            continue
        entry = None  # its entry whole, where read already
        if origin.released:  # its content let go of: read again, as it was read
            entry = value_of(origin.record)
            as_read = _read_entry(origin.record, entry, source.compaction, transcript.name)
            assert as_read is not None  # (the message it was read as)
            origin = as_read.origin
        # A reply left with no block (the last one may be) keeps its entry, holding none.
        parts = pieces(message.blocks) or ([()] if message.role == ASSISTANT else [])
        own = _own_piece(origin, parts)
        kept_as_read = own is not None and parts[own] == origin.blocks
        if not origin.writable and not kept_as_read:
            raise ShapeError(f"line {origin.record + 1}: pi makes this {message.role} message from its entry; it cannot be rewritten")
        if own is None:  # the entry's own content is gone: it is dropped, what is left goes in its place
            insert_after(last_record, parts, message.role)
            continue
        insert_after(last_record, parts[:own], message.role)
        claimed.add(origin.record)
        if not kept_as_read:
            contents[origin.record] = written(_written_entry(parts[own], entry if entry is not None else value_of(origin.record), origin))
        insert_after(origin.record, parts[own + 1:], message.role)
        last_record = origin.record
    dropped = set(source.message_records - claimed)
    for index in dropped:
        if not (_entry_type(records[index][1]) == "message" and isinstance(records[index][1].get("message"), dict)):
            raise ShapeError(f"line {index + 1}: pi makes this message from its entry; it cannot be dropped")

    parents = _relink(source, dropped, inserted)
    kept_from = _kept_from_the_next(source, dropped)

    def rewritten(index: int) -> Record:
        if index not in parents and index not in kept_from:
            return contents[index]
        value = whole_value(contents[index], transcript.name, index) if index in contents else value_of(index)
        if index in parents:
            value = {**value, "parentId": parents[index]}
        if index in kept_from:
            value = {**value, "firstKeptEntryId": kept_from[index]}
        return written(value)

    changed = {index: rewritten(index) for index in contents.keys() | parents.keys() | kept_from.keys() if index not in dropped}
    lines = written_back(records, dropped=dropped, changed=changed,
                         inserted={index: [written(new) for new in entries] for index, entries in inserted.items()})
    out: list[Rewritten] = [(line, value, read_from) for (line, value), read_from in lines]
    if source.version >= 2 and source.path and source.path[-1] in dropped:
        _keep_the_messages_on_the_leafs_path(out, claimed, source, transcript.name)
    return out


def _kept_from_the_next(source: SessionSource, dropped: set[int]) -> dict[int, str]:
    """The active compaction's new `firstKeptEntryId` (by its record) when the entry it names is
    dropped: the next entry on the path that stays, so that pi keeps what it kept but that entry
    (version 1 names a line by its place, which the next line then has)."""
    if source.version < 2 or source.compaction is None:
        return {}
    records, path = source.records, source.path
    at = path.index(source.compaction)
    start = first_kept(records, path, at, source.version)
    if start is None or path[start] not in dropped:
        return {}
    after = next((records[i][1]["id"] for i in path[start:at] if i not in dropped and isinstance(records[i][1].get("id"), str)), None)
    return {source.compaction: after} if after is not None else {}


def _keep_the_messages_on_the_leafs_path(out: list[Rewritten], claimed: set[int],
                                         source: SessionSource, name: str) -> None:
    """pi's leaf is the last entry: with the leaf dropped, the entry before it in the file takes its
    place, whose path must be what is left of the old one (not a branch, nor an entry without a parent)."""
    lines = [(line, value) for line, value, _ in out]
    path = find_path(lines, source.version)
    old_path = set(source.path)
    off = [k for k, (_, _, read_from) in enumerate(out) if (read_from is None or read_from in claimed) and k not in path]
    off += [k for k in path if out[k][2] is not None and out[k][2] not in old_path]
    if off:
        leaf = out[path[-1]][2] if path else None
        raise ShapeError(f"the last entry, pi's leaf, would be dropped (its message removed), and "
                         f"{'another entry' if leaf is None else f'line {leaf + 1}'} would become the leaf, on another "
                         "path than the messages left: nothing written", location=Location(name, source.path[-1] + 1))


def new_entry_id(seed: str, taken: set[str]) -> str:
    """An 8-hex-digit id as pi makes them, from `seed` so that a rewrite is repeatable, unused in the file."""
    for attempt in range(100):
        candidate = uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{seed}:{attempt}").hex[:8]
        if candidate not in taken:
            return candidate
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, seed))


def entry_ids(records: list[Record]) -> set[str]:
    return {v["id"] for _, v in records if isinstance(v, dict) and isinstance(v.get("id"), str)}


def _relink(source: SessionSource, dropped: set[int], inserted: dict[int, list[dict]]) -> dict[int, Any]:
    """Ids for the new entries, and the new `parentId` of each entry whose parent was dropped or
    that now follows new entries (version 1 has no ids: the order of the lines is the tree)."""
    records = source.records
    if source.version < 2:
        for new_entries in inserted.values():
            for entry in new_entries:
                del entry["id"], entry["parentId"]
        return {}
    taken = entry_ids(records)
    parents: dict[int, Any] = {}
    for anchor, new_entries in inserted.items():
        anchor_id = parent = records[anchor][1].get("id")
        for entry in new_entries:
            entry["id"] = new_entry_id(f"{parent}:{dumps(entry['message'], indent=False).decode()}", taken)
            taken.add(entry["id"])
            entry["parentId"] = parent
            parent = entry["id"]
        for index in source.path:
            if index != anchor and records[index][1].get("parentId") == anchor_id:
                parents[index] = parent
    # A dropped entry's children hang from its parent (or from what was inserted before it).
    skip = {records[i][1]["id"]: parents.get(i, records[i][1].get("parentId"))
            for i in dropped if isinstance(records[i][1].get("id"), str)}

    def kept(parent: Any) -> Any:
        return surviving_parent(parent, skip)

    for index, (_, value) in enumerate(records):
        if index in dropped or not isinstance(value, dict) or "parentId" not in value:
            continue
        new = kept(parents.get(index, value["parentId"]))
        if new != value["parentId"]:
            parents[index] = new
    for new_entries in inserted.values():  # what replaces a dropped entry follows it, so hangs from its parent
        new_entries[0]["parentId"] = kept(new_entries[0]["parentId"])
    return parents
