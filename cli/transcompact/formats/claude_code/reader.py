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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any

from ...core.errors import Location, ShapeError
from ...core.jsondata import Parsed, PartialLine, Record, kind_of, read_again
from ...core.model import (
    ASSISTANT,
    Block,
    BlockSize,
    Message,
    MessageView,
    Text,
    ToolResult,
    Transcript,
    block_size,
    text_flags,
)
from ...dialects import anthropic as codec
from .._log import LineOrigin

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
    line anew reads it again from its bytes (`whole_value`). A line's uuid, parent, type and
    session are interned: a parent is the uuid of another line, held once, and a log has a few
    types and sessions."""
    if type(value) is not dict:
        return value
    for key in ("uuid", "parentUuid", "type", "sessionId"):
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
    # A Claude Code line names its session, or its parent (a line `slim` took the session out of).
    if type(value) is not dict or line_type(value) not in MESSAGE_TYPES or "sessionId" not in value and "parentUuid" not in value:
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
    return read_again(record, name, index)


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
