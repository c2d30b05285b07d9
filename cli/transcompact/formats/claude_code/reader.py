"""Claude Code session logs (`~/.claude/projects/*/<session>.jsonl`).

The messages of the model are those `claude --resume` would send: the chain from the newest
leaf back to a root or a `compact_boundary`, with the lines of one API response (same
`message.id`, parallel tool results parented to different lines) gathered into one message
and consecutive user lines into one turn. Every other line (metadata, progress, system
lines, other branches, history before the boundary) is kept verbatim and in place. A write
re-serialises only the lines whose content changed, drops a line left with no content
(re-parenting its children) and threads new lines into the chain.

A `microcompact_boundary` line on the chain lists tool results that Claude Code sent as a
placeholder from then on: they are read as that placeholder (what the API saw), and written
back as they were in the file.
"""

from __future__ import annotations

import sys
import uuid as uuidlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

from ...core.errors import Location, ShapeError
from ...core.jsondata import BOM, Lines, Parsed, PartialLine, Record, dumps, kind_of, parse_value
from ...core.model import (
    ASSISTANT,
    USER,
    Block,
    BlockSize,
    Document,
    Image,
    Message,
    MessageView,
    RedactedThinking,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
    block_size,
    text_flags,
)
from ...dialects import anthropic as codec
from .._log import LineOrigin, surviving_parent

NAME = "claude-code"
DESCRIPTION = "Claude Code session log (JSON Lines with uuid / parentUuid / sessionId)"
LINES = True  # a line is what a rewrite changes, keeps or removes

TRANSCRIPT_TYPES = frozenset({"user", "assistant", "system", "attachment", "progress"})
MESSAGE_TYPES = frozenset({"user", "assistant"})

# What Claude Code sends instead of a result a microcompact_boundary lists (cli.js 2.1.20, `rG6`;
# it sends `<persisted-output>` + the path of a copy instead when it could save one, which the
# log does not record).
MICROCOMPACT_PLACEHOLDER = "[Old tool result content cleared]"
PERSISTED_OUTPUT = "<persisted-output>"


@dataclass(frozen=True)
class LogSource:
    records: list[Record]
    chain: tuple[int, ...]  # record indices from the root (or boundary) to the leaf, every entry type
    root: int | None  # the compact_boundary record the chain starts at, if any
    leaf: int | None
    order: tuple[int, ...]  # the records read into messages, in the order the API sees them
    bom: bool = False  # the file began with a byte-order mark: a rewritten first line keeps it

    @property
    def message_records(self) -> frozenset[int]:
        """The records read into messages, as a set: made when asked for (a rewrite asks once), not
        held beside the order for every log read."""
        return frozenset(self.order)


NOTHING_CLEARED: Mapping[str, ToolResult] = MappingProxyType({})


# One per message of a log, so kept small: slots, tuples, and shared empty values.
@dataclass(frozen=True, slots=True)
class _Origin(LineOrigin):
    records: tuple[int, ...]
    kept: tuple[Block, ...] | None  # the blocks as read; None: read again from the lines (`reread`)
    string_records: tuple[int, ...]  # the records whose content is a string, not a list of blocks
    cleared: Mapping[str, ToolResult]  # by tool id: results read as the microcompact placeholder
    reread: Callable[[], Message] | None = None

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The blocks as read, which a rewrite compares its own with: a message read from lines
        parsed in part (`viewed_lines`) reads them again, so that a rewrite that replaces a large
        result does not hold the old one."""
        if self.kept is not None:
            return self.kept
        assert self.reread is not None
        return self.reread().blocks


is_unchanged = _Origin.unchanged  # a message read from the log as it is


def line_type(value: dict) -> str | None:
    """A line's `type`, when it is a string (a hand-edited log may hold anything there)."""
    kind = value.get("type")
    return kind if isinstance(kind, str) else None


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    if parsed.records is None or messages_path is not None:
        return False
    values = parsed.values()
    return all(isinstance(v, dict) for v in values) and any(
        "sessionId" in v and isinstance(v.get("uuid"), str) and line_type(v) in TRANSCRIPT_TYPES for v in values
    )


EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
MICROSECOND = timedelta(microseconds=1)


def _timestamp(value: Any) -> int | None:
    """A line's `timestamp` in whole microseconds since 1970, None when it is not an ISO date.

    Integers, not float seconds: every date from year 1 to 9999 is exact, so the newest line is
    always found and a new line can be made strictly newer. One without an offset is read as UTC
    (Claude Code writes `Z`), which no local clock can push out of range.
    """
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - EPOCH) // MICROSECOND


def is_boundary(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "system" and value.get("subtype") == "compact_boundary"


def find_chain(records: list[Record], name: str = "<stdin>") -> tuple[tuple[int, ...], int | None, int | None]:
    """(chain from root to leaf, boundary record or None, leaf record or None), as `claude --resume` picks it.

    The resume point is the newest (by `timestamp`) user or assistant entry that a leaf walks back
    to. Claude Code never picks one without a timestamp; when no leaf has one, the last in file
    order is read rather than nothing. A transcript line whose `uuid` is not a string is refused
    (`name` is the file, for the error): no line can point at it, so where it belongs is a guess.
    """
    by_uuid: dict[str, int] = {}
    parents: set[str] = set()
    for index, (_, value) in enumerate(records):
        if not isinstance(value, dict) or line_type(value) not in TRANSCRIPT_TYPES or "uuid" not in value:
            continue
        uid = value["uuid"]
        if not isinstance(uid, str):
            raise ShapeError(f"`uuid` must be a string, not {kind_of(uid)}", location=Location(name, index + 1))
        by_uuid[uid] = index
        parent = value.get("parentUuid")
        if isinstance(parent, str):
            parents.add(parent)
    resume_points: dict[int, Any] = {}
    best: tuple[bool, bool, int, int] | None = None
    for uid, index in by_uuid.items():
        if uid in parents:
            continue
        node = _resume_point(index, records, by_uuid, resume_points)
        if node is None:
            continue
        value = records[node][1]
        stamp = _timestamp(value.get("timestamp"))
        rank = (stamp is not None, value.get("isSidechain") is not True, stamp or 0, node)
        if best is None or rank > best:
            best = rank
    if best is None:
        return (), None, None
    leaf = best[-1]
    chain, seen, node, root = [], bytearray(len(records)), leaf, None  # seen: not a set of every line
    while node is not None and not seen[node]:
        seen[node] = 1
        value = records[node][1]
        if is_boundary(value):
            root = node
            break
        chain.append(node)
        parent = value.get("parentUuid")
        node = by_uuid.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return tuple(chain), root, leaf


_WALKING = object()  # a record whose resume point is being looked for: meeting it again is a cycle


def _resume_point(start: int, records: list[Record], by_uuid: dict[str, int], known: dict[int, Any]) -> int | None:
    """The nearest user or assistant entry at or above `start`, or None when the walk ends or loops.

    `known` keeps the answer for every record walked, so that leaves sharing a long run of
    progress lines walk it once: finding every leaf's resume point takes linear time.
    """
    path: list[int] = []
    node: int | None = start
    while node is not None and node not in known and line_type(records[node][1]) not in MESSAGE_TYPES:
        known[node] = _WALKING
        path.append(node)
        parent = records[node][1].get("parentUuid")
        node = by_uuid.get(parent) if isinstance(parent, str) else None
    found = None if node is None else known.get(node, node)
    if found is _WALKING:
        found = None
    for walked in path:
        known[walked] = found
    return found


def _message_id(value: dict) -> str | None:
    message = value.get("message")
    mid = message.get("id") if isinstance(message, dict) else None
    return mid if isinstance(mid, str) else None


def _has_tool_result(value: dict) -> bool:
    if type(value) is PartialLine:
        return any(size.type is ToolResult for size in value.seen)
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def api_order(records: list[Record], chain: tuple[int, ...], root: int | None) -> list[int]:
    """The message lines of the chain in the order the API sees them.

    The lines of one response (same `message.id`) come together even when only some are on the
    chain, followed by the tool-result lines answering any of them (parallel results are
    parented to different lines, so the chain alone misses some).
    """
    start = -1 if root is None else root
    groups: dict[str, list[int]] = {}
    for index in range(start + 1, len(records)):
        value = records[index][1]
        if isinstance(value, dict) and value.get("type") == "assistant":
            mid = _message_id(value)
            if mid is not None:
                groups.setdefault(mid, []).append(index)
    answers: dict[str, list[int]] = {}
    for index in range(start + 1, len(records)):
        value = records[index][1]
        if isinstance(value, dict) and value.get("type") == "user" and isinstance(value.get("parentUuid"), str):
            if _has_tool_result(value):
                answers.setdefault(value["parentUuid"], []).append(index)
    order: list[int] = []
    emitted = bytearray(len(records))  # not a set of every message line
    for index in chain:
        value = records[index][1]
        if emitted[index] or line_type(value) not in MESSAGE_TYPES:
            continue
        mid = _message_id(value) if value.get("type") == "assistant" else None
        if mid is None:
            order.append(index)
            emitted[index] = 1
            continue
        group = [i for i in groups.get(mid, [index]) if not emitted[i]]
        results = sorted({  # a set: lines of one response may share a uuid, and their answers are read once
            i for g in group for i in answers.get(records[g][1].get("uuid"), ()) if not emitted[i]
        })
        for i in group + results:
            order.append(i)
            emitted[i] = 1
    return order


def microcompacted(records: list[Record], chain: tuple[int, ...]) -> dict[str, int]:
    """The tool ids that the `microcompact_boundary` lines on the chain list, each with its boundary's record."""
    cleared: dict[str, int] = {}
    for index in chain:
        value = records[index][1]
        if value.get("type") == "system" and value.get("subtype") == "microcompact_boundary":
            metadata = value.get("microcompactMetadata")
            ids = metadata.get("compactedToolIds") if isinstance(metadata, dict) else None
            for tool_id in ids if isinstance(ids, list) else ():
                if isinstance(tool_id, str):
                    cleared.setdefault(tool_id, index)
    return cleared


def _as_sent(block: Block, index: int, cleared: dict[str, int]) -> Block:
    """A tool result as the API saw it: the placeholder when a later microcompact boundary lists it.

    Like Claude Code, an empty result or one already cleared or persisted is left as it is.
    """
    if type(block) is not ToolResult or cleared.get(block.tool_call_id, -1) < index or block.content == "":
        return block
    if isinstance(block.content, str) and (block.content == MICROCOMPACT_PLACEHOLDER or PERSISTED_OUTPUT in block.content):
        return block
    return replace(block, content=MICROCOMPACT_PLACEHOLDER)


# The lines no operation reads whole, by their `type` and a field that marks them as Claude
# Code's (other agents' logs have types of their own): of these only the fields that place them
# on the chain are kept (`linking_fields`).
LINKING_ONLY: dict[str | None, str] = {"progress": "parentUuid", "file-history-snapshot": "snapshot"}
# What the reader, the rules and the rewrites look at in a line they do not read whole (a line
# they write anew is read whole again, `whole_value`): where it sits on the chain, whose session
# it is, what kind of user line it is, and the usage a count may find on it.
PLACING_FIELDS = ("type", "uuid", "parentUuid", "timestamp", "sessionId")
MESSAGE_LINE_FIELDS = (*PLACING_FIELDS, "isSidechain", "isMeta", "isCompactSummary", "usage", "tokens")


def linking_fields(value: Any) -> Any:
    """What is kept of a line as it is parsed (`jsondata.parse`'s `trim`): a progress line or a
    file-history snapshot that holds a nested object keeps only the fields that place it
    (`PLACING_FIELDS`), not what it holds, which a long session would otherwise keep in memory a
    second time (every tool's streamed output, every file's backup). A rewrite that writes such a
    line anew reads it again from its bytes (`whole_value`). A line's uuid, parent and type are
    interned: a parent is the uuid of another line, held once, and a log has a few types."""
    if type(value) is not dict:
        return value
    for key in ("uuid", "parentUuid", "type"):
        if type(text := value.get(key)) is str:
            value[key] = sys.intern(text)
    if LINKING_ONLY.get(line_type(value)) in value:
        for item in value.values():
            if type(item) is dict or type(item) is list:
                # Its links are kept whatever they hold: a `uuid` that is no string is refused as on any line.
                return {key: value[key] for key in PLACING_FIELDS if key in value}
    return value


def viewed_lines(value: Any) -> Any:
    """The lazy trim (`Format.lazy_trim`, for work that mostly counts): `linking_fields`, and a user
    or assistant line whose content a view can count is kept as a `PartialLine` that has seen the
    sizes of its blocks: the fields that place it and say what kind of line it is
    (`MESSAGE_LINE_FIELDS`), and of its message the id and the usage. Its message is left unread
    (`read`) until its blocks are asked for, when the line is read again from its bytes
    (`whole_value`), as any rewrite of the line reads it."""
    value = linking_fields(value)
    if type(value) is not dict or line_type(value) not in MESSAGE_TYPES or "sessionId" not in value:
        return value
    message = value.get("message")
    if not isinstance(message, dict) or (sizes := _sizes(message.get("content"))) is None:
        return value  # read whole: a block a view cannot count, or one the reader refuses (and says where)
    kept = PartialLine((key, value[key]) for key in MESSAGE_LINE_FIELDS if key in value)
    kept["message"] = _message_fields(message)
    kept.seen = sizes
    return kept


_NO_MESSAGE_FIELDS: dict = {}  # a user line's: held once (values are never changed in place)
_last_fields: list[dict] = [_NO_MESSAGE_FIELDS]


def _message_fields(message: dict) -> dict:
    """What reading and counting look at of a line's message: its id and its usage. The lines of
    one response repeat both: the previous line's are held again, not a copy."""
    if "id" not in message and "usage" not in message:
        return _NO_MESSAGE_FIELDS
    fields = {key: message[key] for key in ("id", "usage") if key in message}
    if fields == _last_fields[0]:
        return _last_fields[0]
    _last_fields[0] = fields
    return fields


def _sizes(content: Any) -> tuple[BlockSize, ...] | None:
    if type(content) is str:
        return (BlockSize(Text, len(content), flags=text_flags(content)),)
    if type(content) is not list:
        return None
    sizes = []
    for item in content:
        try:
            size = block_size(codec.read_block(item))
        except ShapeError:
            return None
        if size is None:
            return None
        sizes.append(size)
    return tuple(sizes)


def whole_value(index: int, record: Record, name: str) -> Any:
    """The value of line `index` with everything in it, when parsing kept only part of it
    (`linking_fields`, `viewed_lines`)."""
    line, value = record
    partial = type(value) is PartialLine or (type(value) is dict and line_type(value) in LINKING_ONLY)
    if line is None or not partial:  # None: a line made whole
        return value
    text = bytes(line)
    return parse_value(text[len(BOM):] if text.startswith(BOM) else text, name, index + 1)


def read(parsed: Parsed, messages_path: str | None = None) -> Transcript:
    return _read(parsed)


def reload(parsed: Parsed, written: Transcript, messages_path: str | None = None) -> Transcript:
    """The post-condition's reading of what a rewrite wrote of `written`: a message it left unread,
    whose lines are still the lines it was read from, at the same place, is that message again
    (it is what reading those lines gives: a large log's is not built and held twice)."""
    return _read(parsed, written)


def _read(parsed: Parsed, written: Transcript | None = None) -> Transcript:
    records = parsed.records or []
    chain, root, leaf = find_chain(records, parsed.name)
    cleared_ids = microcompacted(records, chain)
    order = api_order(records, chain, root)
    kept = _kept(written, records) if written is not None and not cleared_ids else {}
    messages = [kept.get((index, run)) or _message(records, run, index, parsed.name, cleared_ids)
                for index, run in enumerate(_runs(records, order))]
    source = LogSource(records, chain, root, leaf, tuple(order), parsed.bom)
    return Transcript(format=NAME, dialect="anthropic", messages=tuple(messages), name=parsed.name, source=source)


def _kept(written: Transcript, records: list[Record]) -> dict[tuple[int, tuple[int, ...]], Message]:
    """The unread messages of `written` by (index, lines), whose lines `records` holds as they were read."""
    before = written.source.records
    kept = {}
    for index, message in enumerate(written.messages):
        if message.is_read or message.view is None or message.view.lines is None:
            continue
        run = tuple(dict.fromkeys(message.view.lines))
        if all(line < len(records) and records[line][1] is before[line][1] for line in run):
            kept[(index, run)] = message
    return kept


def _runs(records: list[Record], order: list[int]) -> list[tuple[int, ...]]:
    """The lines of each message, in API order: the lines of one response, or consecutive user lines."""
    runs: list[tuple[int, ...]] = []
    run: list[int] = []
    previous: tuple[str, str | None] | None = None
    for index in order:
        value = records[index][1]
        key = (value["type"], _message_id(value) if value["type"] == ASSISTANT else None)
        if previous is not None and key != previous and run:
            runs.append(tuple(run))
            run = []
        run.append(index)
        previous = key
    if run:
        runs.append(tuple(run))
    return runs


def _message(records: list[Record], run: tuple[int, ...], index: int, name: str, cleared_ids: dict[str, int]) -> Message:
    """Message `index`, made of the lines `run`: left unread when each line was kept with its sizes
    (`viewed_lines`) and no microcompact boundary changes what the API saw of them."""
    lines = _view_lines(records, run, cleared_ids)
    if lines is None:
        return _read_run(records, run, index, name, cleared_ids)
    first = records[run[0]][1]
    sizes = first.seen if len(run) == 1 else tuple(size for i in run for size in records[i][1].seen)
    return Message.unread(first["type"], MessageView(sizes, first, lines), None, _Run(records, lines, index, name),
                          line=run[0] + 1)


def _view_lines(records: list[Record], run: tuple[int, ...], cleared_ids: dict[str, int]) -> tuple[int, ...] | None:
    """The line of each block of the message made of the lines `run`, when each was kept in part
    with its sizes (`viewed_lines`) and holds a block (a view's lines are the lines of its blocks),
    and no microcompact boundary changes what the API saw of them; else None: it is read whole."""
    if cleared_ids or not all(type(records[i][1]) is PartialLine and records[i][1].seen for i in run):
        return None
    return tuple(i for i in run for _ in records[i][1].seen)


class _Run:
    """Message `index`, read from its lines when asked for: one per unread message of a log, so
    small (slots, and the lines its view holds), and the same for the message read from it, whose
    origin reads it again with it."""

    __slots__ = ("records", "lines", "index", "name")

    def __init__(self, records: list[Record], lines: tuple[int, ...], index: int, name: str):
        self.records, self.lines, self.index, self.name = records, lines, index, name

    def __call__(self) -> Message:
        return _read_run(self.records, tuple(dict.fromkeys(self.lines)), self.index, self.name, {}, self)


def _read_run(records: list[Record], run: tuple[int, ...], index: int, name: str, cleared_ids: dict[str, int],
              reader: _Run | None = None) -> Message:
    """Message `index`, read from the lines `run`; `reader`: the `_Run` that reads it again, if any."""
    blocks: list[Block] = []
    string_records: list[int] = []
    cleared: dict[str, ToolResult] = {}
    where = f"message {index}"
    first: Any = None
    for line in run:
        value = whole_value(line, records[line], name)
        first = value if first is None else first
        if not isinstance(value.get("message"), dict):
            # Claude Code sends the `message.content` of every user and assistant line on the chain.
            problem = f"must be an object, not {kind_of(value['message'])}" if "message" in value else "is missing"
            raise ShapeError(f"{where}: `message` {problem}", location=Location(name, line + 1))
        content = value["message"].get("content")
        if isinstance(content, str):
            blocks.append(Text(content, raw=content, line=line))
            string_records.append(line)
        elif isinstance(content, list):
            try:
                read_blocks = [codec.read_block(b, line, f"{where}: content/{i}") for i, b in enumerate(content)]
            except ShapeError as error:
                raise ShapeError(error.message, location=Location(name, line + 1)) from None
            if cleared_ids:
                sent = [_as_sent(b, line, cleared_ids) for b in read_blocks]
                cleared.update((s.tool_call_id, s) for s, b in zip(sent, read_blocks) if s is not b and isinstance(s, ToolResult))
                read_blocks = sent
            blocks.extend(read_blocks)
        elif content is not None:
            raise ShapeError(
                f"{where}: `message.content` must be a string or a list of blocks, not {kind_of(content)}",
                location=Location(name, line + 1),
            )
    role = first["type"]  # what Claude Code sends, whatever `message.role` says
    message_blocks = tuple(blocks)
    if reader is None and (lines := _view_lines(records, run, cleared_ids)) is not None:
        reader = _Run(records, lines, index, name)
    if reader is not None:
        # Read from lines parsed in part: what it holds beyond them stays in their bytes.
        origin = _Origin(run, None, tuple(string_records), NOTHING_CLEARED, reader)
        return Message(role, message_blocks, raw=records[run[0]][1], line=run[0] + 1, origin=origin)
    origin = _Origin(run, message_blocks, tuple(string_records), cleared or NOTHING_CLEARED)
    return Message(role, message_blocks, raw=first, line=run[0] + 1, origin=origin)


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
    taken: dict[int, int] = {}  # the tokens a changed record lost (less what it gained), by Claude Code's estimate
    last_record: int | None = None
    for message, run in zip(transcript.messages, runs):
        if run is None:
            anchor = last_record if last_record is not None else (source.chain[0] if source.chain else None)
            if anchor is None:
                raise ShapeError("cannot add a message to a Claude Code log that holds no conversation")
            inserted.setdefault(anchor, []).append(_new_record(whole_value(anchor, records[anchor], transcript.name), message))
            taken[anchor] = taken.get(anchor, 0) - sum(map(estimated_tokens, message.blocks))
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
            taken[index] = taken.get(index, 0) + sum(map(estimated_tokens, was)) - sum(map(estimated_tokens, blocks))
        # A message added after this one hangs from its last line that stays.
        last_record = max((i for i in origin.records if i not in dropped), default=last_record)

    parents = _relink(source, dropped, inserted)
    restated = _restated_prompts(source, taken)
    out: list[Record] = []
    for index, record in enumerate(records):
        if index in dropped:
            continue
        if index in contents or index in parents or index in restated:
            obj = dict(whole_value(index, record, transcript.name))
            if index in contents:
                obj["message"] = {**obj["message"], "content": _file_content(contents[index], index in string_records, cleared)}
            if index in restated:
                obj["message"] = {**obj["message"], "usage": _usage_less(obj["message"]["usage"], restated[index])}
            if index in parents:
                obj["parentUuid"] = parents[index]
            if type(record[1]) is PartialLine:
                # Read in part: held as its bytes only, made now (the post-condition reads them back in part).
                record = (dumps(obj, indent=False), None)
            else:
                record = (None, obj)  # serialised as it is written: a large rewrite's new lines are not held as bytes too
        out.append(record)
        out.extend((None, new) for new in inserted.get(index, ()))
    return Lines.of(out, bom=source.bom)


# Claude Code judges the size of its context by the usage the last response recorded plus its own
# estimate of what came after (cli.js 2.1.112 `tokenCountWithEstimation`): it refuses to send
# at its blocking limit and compacts on its own above its threshold. Left as it was, the usage after
# a rewrite that shrank the history would count what the rewrite took out: Claude Code would
# compact (or refuse) a pruned log it no longer needs to, and `estimate` would say what the log was.
# So a write restates the prompt the last response recorded (each of its lines: they share it),
# less what the changes took out before it (more what they added), by Claude Code's own estimate
# (`estimated_tokens`): from the cached part first (`cache_read_input_tokens`, then
# `cache_creation_input_tokens`, then `input_tokens`), none below 0; what a change added goes to
# `input_tokens`. The output (`output_tokens`) stays. The responses before it keep what they
# recorded: restating each would rewrite every assistant line after the first change (a third of
# a long log's lines), and only the last one is judged by.
_ESTIMATED_MEDIA_TOKENS = 2000
_PROMPT_PARTS = ("cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens")


def estimated_tokens(block: Block) -> int:
    """Claude Code's estimate of a block (cli.js 2.1.112 `w4z`: its text, a call's name and input as
    JSON, a thinking, a result's content, each as characters / 4, rounded)."""
    if isinstance(block, Text):
        return round(len(block.text) / 4)
    if isinstance(block, ToolResult):
        content = block.content
        return round(len(content) / 4) if isinstance(content, str) else sum(map(estimated_tokens, content))
    if isinstance(block, ToolCall):
        return round(len(block.name + dumps(block.input if block.input is not None else {}, indent=False).decode()) / 4)
    if isinstance(block, Thinking):
        return round(len(block.thinking) / 4)
    if isinstance(block, RedactedThinking):
        return round(len(block.data) / 4)
    if isinstance(block, (Image, Document)):
        return _ESTIMATED_MEDIA_TOKENS
    return round(len(dumps(block.raw, indent=False).decode()) / 4)


def _restated_prompts(source: LogSource, taken: dict[int, int]) -> dict[int, int]:
    """The lines of the last response that recorded a prompt, each with the tokens the changes before
    the response's first line took out of its prompt (put in, when negative), in the order the API
    sees the lines (parallel results hang off their calls, not all on the chain); none when those
    changes took nothing."""
    if not taken:
        return {}
    records = source.records
    last: list[int] = []  # the lines (with usage) of the last response that has some
    lines: list[int] = []
    so_far, response, before_response, before_last = 0, None, 0, 0
    for index in source.order:
        value = records[index][1]
        if isinstance(value, dict) and value.get("type") == ASSISTANT and isinstance(message := value.get("message"), dict):
            if message.get("id") != response or response is None:  # a response's lines share its id and its usage
                response, before_response, lines = message.get("id"), so_far, []
            if isinstance(usage := message.get("usage"), dict) and _prompt(usage) > 0:
                lines.append(index)
                last, before_last = lines, before_response
        so_far += taken.get(index, 0)
    return dict.fromkeys(last, before_last) if before_last else {}


def _prompt(usage: dict) -> int:
    """The prompt a usage counts; 0 for a line Claude Code made itself (`<synthetic>`: an API error,
    "No response requested."), whose usage is zeros and which it does not judge by."""
    return sum(usage[part] for part in _PROMPT_PARTS if type(usage.get(part)) is int)


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
