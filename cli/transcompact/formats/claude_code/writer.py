"""Claude Code logs written back: a message left as it was keeps its lines, a changed one goes back into them, a
line left with no content is dropped (its children re-parented) and new lines thread into the chain; each
response's recorded usage is restated by what the change took out before it."""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping
from typing import Any

from ...core.errors import ShapeError
from ...core.jsondata import Lines, PartialLine, Record, dumps, with_member_replaced
from ...core.model import (
    ASSISTANT,
    USER,
    Block,
    Message,
    ToolResult,
    Transcript,
)
from ...dialects import anthropic as codec
from .._log import cost, restating_ratio, surviving_parent, written_back
from .reader import (
    LogSource,
    _Origin,
    is_unchanged,
    viewed_lines,
    whole_value,
)


def _lines_of(message: Message) -> tuple[int, ...] | None:
    """The lines a message of this log was read from (its view says, when it is unread), or None
    for a message an operation made."""
    view = message.view
    if view is not None and view.lines is not None:
        return tuple(dict.fromkeys(view.lines))
    origin = message.origin
    return origin.records if isinstance(origin, _Origin) else None


def write(transcript: Transcript) -> bytes:
    return bytes(write_lines(transcript))


def write_lines(transcript: Transcript) -> Lines:
    source: LogSource = transcript.source
    records = source.records
    runs = [_lines_of(m) for m in transcript.messages]
    claimed = {i for run in runs if run is not None for i in run}
    message_records = source.message_records
    if (
        None not in runs
        and claimed == message_records
        and all(not m.is_read or is_unchanged(m) for m in transcript.messages)
    ):
        return Lines(list(records))  # the first line holds the mark, if any

    origins = [m.origin for m in transcript.messages if m.is_read and isinstance(m.origin, _Origin)]
    string_records = {i for origin in origins for i in origin.string_records}
    cleared = {tool_id: block for origin in origins for tool_id, block in origin.cleared.items()}
    contents: dict[int, list[Block]] = {}  # the new content of each record whose content changed
    inserted: dict[int, list[dict]] = {}  # new records to write after a record
    dropped = set(message_records - claimed)
    taken: dict[int, float] = {}  # the tokens a changed record lost (less what it gained), by the run's model (`cost`)
    ratio, frame = restating_ratio(transcript), transcript.tokens_per_block
    last_record: int | None = None
    for message, run in zip(transcript.messages, runs):
        if run is None:
            anchor = last_record if last_record is not None else (source.chain[0] if source.chain else None)
            if anchor is None:
                raise ShapeError("cannot add a message to a Claude Code log that holds no conversation")
            inserted.setdefault(anchor, []).append(_new_record(whole_value(anchor, records[anchor], transcript.name), message))
            taken[anchor] = taken.get(anchor, 0) - sum(cost(b, ratio, frame) for b in message.blocks)
            continue
        if not message.is_read:  # a message still unread is as it was read
            last_record = run[-1]
            continue
        origin = message.origin
        original = origin.blocks  # once: a message read from lines kept in part reads them again
        if message.blocks == original:
            last_record = run[-1]
            continue
        # Each block goes back to the line it came from; a new block joins the line before it.
        per_record: dict[int, list[Block]] = {i: [] for i in origin.records}
        current = origin.records[0]
        for block in message.blocks:
            if block.line in per_record:
                current = block.line
            per_record[current].append(block)
        for index, blocks in per_record.items():
            was = [b for b in original if b.line == index]
            if not blocks:
                dropped.add(index)
            elif blocks != was:
                contents[index] = blocks
            else:
                continue
            taken[index] = taken.get(index, 0) + sum(cost(b, ratio, frame) for b in was) - sum(cost(b, ratio, frame) for b in blocks)
        # A message added after this one hangs from its last line that stays.
        last_record = max((i for i in origin.records if i not in dropped), default=last_record)

    parents = _relink(source, dropped, inserted)
    restated = restated_usage(source, taken) if ratio else {}  # (0: none restated, `restating_ratio`)

    shared: list = []  # the message fields of the response last restated, its tokens, and the fields restated

    def rewritten(index: int) -> Record:
        if index not in contents and index not in parents and (usage_only := _usage_restated(records[index], restated[index], shared)):
            return usage_only
        read = whole_value(index, records[index], transcript.name)
        obj = dict(read)
        if index in contents:
            obj["message"] = {**obj["message"], "content": _file_content(contents[index], index in string_records, cleared)}
        if index in restated:
            obj["message"] = {**obj["message"], "usage": _usage_less(obj["message"]["usage"], restated[index])}
        if index in parents:
            obj["parentUuid"] = parents[index]
        if type(records[index][1]) is PartialLine:
            # Read in part: its message replaced in its line (a cleared result's line is mostly its
            # UI copy), else held as its bytes only, made now (the post-condition reads them back in part).
            return _message_replaced(records[index], read, obj) or (dumps(obj, indent=False), None)
        return None, obj  # serialised as it is written: a large rewrite's new lines are not held as bytes too

    changed = {index: rewritten(index) for index in sorted(contents.keys() | parents.keys() | restated.keys()) if index not in dropped}
    out = written_back(records, dropped=dropped, changed=changed,
                       inserted={index: [(None, new) for new in lines] for index, lines in inserted.items()})
    return Lines.of([line for line, _ in out], bom=source.bom)


# Claude Code judges the size of its context by the usage the last response recorded plus its own
# estimate of what came after (cli.js 2.1.112 `tokenCountWithEstimation`): it refuses to send
# at its blocking limit and compacts on its own above its threshold. Left as it was, the usage after
# a rewrite that shrank the history would count what the rewrite took out: Claude Code would
# compact (or refuse) a pruned log it no longer needs to, and `estimate` would say what the log was.
# So a write restates the prompt each response recorded (each of its lines: they share it), less
# what the changes took out before it (more what they added), by the model the run counted with
# (`_log.cost`: its tokens per character, `Transcript.tokens_per_char`, and the figures of images
# and documents), so that the output's usage lies where the model says its prompts are now, and
# `estimate` of it says what the rewrite reported: from the cached part first
# (`cache_read_input_tokens`, then `cache_creation_input_tokens`, then `input_tokens`), none below
# 0; what a change added goes to `input_tokens`. The output (`output_tokens`) stays.
_PROMPT_PARTS = ("cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens")


def restated_usage(source: LogSource, taken: Mapping[int, float]) -> dict[int, int]:
    """The lines of each response that recorded a prompt, each with the tokens the changes before
    the response's first line took out of its prompt (put in, when negative), in the order the API
    sees the lines (parallel results hang off their calls, not all on the chain); none where those
    changes took nothing."""
    if not taken:
        return {}
    records = source.records
    restated: dict[int, int] = {}
    so_far, response, before_response = 0.0, None, 0
    for index in source.order:
        value = records[index][1]
        if isinstance(value, dict) and value.get("type") == ASSISTANT and isinstance(message := value.get("message"), dict):
            if message.get("id") != response or response is None:  # a response's lines share its id and its usage
                response, before_response = message.get("id"), round(so_far)
            if before_response and isinstance(usage := message.get("usage"), dict) and _prompt(usage) > 0:
                restated[index] = before_response
        so_far += taken.get(index, 0)
    return restated


def _prompt(usage: dict) -> int:
    """The prompt a usage counts; 0 for a line Claude Code made itself (`<synthetic>`: an API error,
    "No response requested."), whose usage is zeros and which it does not judge by."""
    return sum(usage[part] for part in _PROMPT_PARTS if type(usage.get(part)) is int)


def _usage_restated(record: Record, tokens: int, shared: list) -> Record | None:
    """A line read in part, as orjson writes it, whose only change is its usage: the parts of its
    line but the usage's (`jsondata.with_member_replaced`), with what a reading in part keeps of it,
    its message's usage restated (the rest held as the line read held it, its blocks' sizes too).
    None where that does not hold: the line is then read whole and written anew."""
    line, partial = record
    if type(partial) is not PartialLine or not getattr(partial, "as_written", False) or not isinstance(line, (bytes, memoryview)):
        return None
    message = partial.get("message")
    if not isinstance(message, dict) or type(usage := message.get("usage")) is not dict:
        return None
    # The lines of one response hold the same message fields (`reader._message_fields`), restated alike: held once.
    if shared[:2] != [message, tokens]:
        restated = _usage_less(usage, tokens)
        shared[:] = [message, tokens, {**message, "usage": restated}]
    restated_message = shared[2]
    cut = with_member_replaced(line, "usage", usage, restated_message["usage"])
    if cut is None:
        return None
    kept = PartialLine(partial)
    kept.seen, kept.as_written = partial.seen, True
    kept["message"] = restated_message
    return cut, kept


def _message_replaced(record: Record, old: dict, new: dict) -> Record | None:
    """A line read in part (its value `old` read again whole), as orjson writes it, whose message
    alone changed (`new`): the parts of its line but the message's
    (`jsondata.with_member_replaced`), with what a reading in part keeps of it
    (`reader.viewed_lines` of the new value, as `parse_written` would trim it). None where that
    does not hold: the line is written anew."""
    line, partial = record
    if not getattr(partial, "as_written", False) or not isinstance(line, (bytes, memoryview)) \
            or {**old, "message": new["message"]} != new:
        return None
    cut = with_member_replaced(line, "message", old["message"], new["message"])
    if cut is None:
        return None
    kept = viewed_lines(new)
    if type(kept) is PartialLine:
        kept.as_written = True  # the line is still what orjson writes of its value
    return cut, kept


def _usage_less(usage: dict, tokens: int) -> dict:
    """`usage` whose prompt counts `tokens` fewer (negative: more)."""
    out = dict(usage)
    if tokens < 0:
        if type(out.get("input_tokens")) is int:
            out["input_tokens"] -= tokens
        return out
    for part in _PROMPT_PARTS:
        if tokens and type(out.get(part)) is int and out[part] > 0:
            less = min(out[part], tokens)
            out[part] -= less
            tokens -= less
    return out


def _file_content(blocks: list[Block], string_content: bool, cleared: Mapping[str, ToolResult]) -> Any:
    """A line's content as the file keeps it: a result still reading as the microcompact placeholder
    keeps its original JSON (the boundary that clears it is still in the file)."""
    if not cleared or string_content:
        return codec.write_content(tuple(blocks), string_content)
    return [b.raw if type(b) is ToolResult and cleared.get(b.tool_call_id) == b else codec.write_block(b) for b in blocks]


def _new_record(anchor: dict, message: Message) -> dict:
    """A line for a message an operation added, in the envelope of the line it follows."""
    content = codec.write_content(message.blocks, False)
    seed = f"{anchor.get('uuid')}:{dumps(content, indent=False).decode()}"
    record = {
        "parentUuid": anchor.get("uuid"),
        "isSidechain": anchor.get("isSidechain", False),
        "userType": anchor.get("userType", "external"),
        "cwd": anchor.get("cwd"),
        "sessionId": anchor.get("sessionId"),
        "version": anchor.get("version"),
        "gitBranch": anchor.get("gitBranch"),
        "type": USER if message.role == USER else ASSISTANT,
        "message": {"role": message.role, "content": content},
        "uuid": str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, seed)),
        "timestamp": anchor.get("timestamp"),
    }
    return {k: v for k, v in record.items() if v is not None or k == "parentUuid"}


def _relink(source: LogSource, dropped: set[int], inserted: dict[int, list[dict]]) -> dict[int, Any]:
    """The new `parentUuid` of each record whose parent was dropped or that now follows inserted lines."""
    records = source.records
    skip: dict[Any, Any] = {records[i][1].get("uuid"): records[i][1].get("parentUuid") for i in dropped}
    parents: dict[int, Any] = {}
    for anchor, new_records in inserted.items():
        for before, after in zip(new_records, new_records[1:]):
            after["parentUuid"] = before["uuid"]
        anchor_uuid = records[anchor][1].get("uuid")
        for index in source.chain:
            if index != anchor and records[index][1].get("parentUuid") == anchor_uuid:
                parents[index] = new_records[-1]["uuid"]
    for index, (_, value) in enumerate(records):
        if index in dropped or index in parents or not isinstance(value, dict):
            continue
        parent = value.get("parentUuid")
        new = surviving_parent(parent, skip)
        if new != parent:
            parents[index] = new
    return parents
