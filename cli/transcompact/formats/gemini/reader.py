"""Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`, legacy `.json`).

The log is the agent's record list (upstream `chatRecordingService.ts`, `loadConversationRecord`):
a metadata line, then message records upserted by `id` (a later copy replaces the earlier one
and keeps its place), `{"$set": {"messages": [...]}}` that replaces them all, and
`{"$rewindTo": id}` that removes that message and every later one. The legacy `.json` file is
one object holding the same fields and a `messages` array, read as it is (the agent's fallback
for a file it cannot replay, which needs a `sessionId` but no `projectHash`).

The messages of the model are those the agent sends on resume (`convertSessionToClientHistory`
in `utils/sessionUtils.ts`): `info`, `error` and `warning` records and user input the agent
ignores (empty, `/command`, `?`, `<session_context>`) are left out; a `gemini` record gives a
model turn (its content, then a call per `toolCalls[]` entry, or its content alone when that
already holds the calls) followed by a user turn holding the results that `toolCalls[].result`
keeps inside each call. Gemini CLI 0.61 records each result again, as a user record of
`functionResponse` parts after the call's record, and sends both copies on resume: both are
read, two user messages answering the same calls (`unrecorded_messages` says which copy no
recorded usage counted). A call's `result` may hold other calls' responses too (a resume's `$set`
gives each call of a parallel pair the whole turn): each is read, with its own id (`call_results`),
and what each recorded usage counted is told by the lines of the log (`Timeline`). The thought summaries (`thoughts`) stay in the record, outside the
messages. Those two turns are exactly the Anthropic pattern (tool_use blocks answered by
tool_result blocks in the next user message, paired by id), so the transcript is in the
`anthropic` dialect and `check` applies its pairing rules; writing folds each result back into
its call.

A write gives back the bytes read when nothing changed, re-serialises the records that changed
where they are (the line of the copy the agent reads, or the record's place in the legacy
document, the rest keeping its bytes), restates the recorded `tokens` of the records after the
first change less what it took out before them (they counted the old content; cleared where
records were added or removed: `writer.restated_usage`), and, when messages were added or removed, appends
the whole new list as a `$set` the way the agent records a rewritten history
(`updateMessagesFromHistory`; for the legacy document, its `messages` array is rewritten).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from dataclasses import dataclass
from typing import Any

from ...core.errors import Location, ShapeError
from ...core.jsondata import BOM, Layout, Parsed, Record, array_item_spans, dumps, kind_of, line_bytes, nested_value, parse, plain_value
from ...core.model import ASSISTANT, USER, Block, Image, Message, MessageView, Opaque, Text, ToolCall, ToolResult, Transcript
from .._log import LineOrigin, cost, priced_all, string_or_empty
from .parsing import (  # noqa: F401 (the format's names, read here too)
    DESCRIPTION,
    LINES,
    NAME,
    RESULTS_TURN,
    ViewedRecordLine,
    is_ignored_input,
)

MESSAGE_TYPES = ("user", "gemini")


@dataclass(frozen=True, slots=True)
class Entry:
    """A message record the agent holds now, and where it sits: `line` (None in the legacy
    document) and `position` inside a `messages` list (None for a record on a line of its own).
    One per record of a chat: slots, no dict."""

    record: dict
    line: int | None
    position: int | None


class ViewedRecord(dict):
    """What the view of a legacy document's record kept of it (views.py): its `id`, `type` and
    `tokens`, the rest left in its bytes (a write reads the record whole where it changes more)."""

    __slots__ = ()


@dataclass(frozen=True)
class ChatSource:
    records: list[Record] | None  # the lines of a JSON Lines log; None for the legacy document
    # The legacy document; read by its views (views.py), its `messages` only, each as its bytes (a msgspec.Raw).
    document: dict | None
    layout: Layout | None
    data: bytes
    active: tuple[Entry, ...]  # in the agent's order
    # The entries no message was read from (info, ignored input): a few, where those a message was
    # read from are most of a long chat's tens of thousands.
    silent_entries: frozenset[int]
    bom: bool = False
    timeline: Timeline | None = None  # when each turn was first sent, each usage recorded (JSON Lines only)
    # A chat read by its views (a legacy document's records, views.py; a log's record lines,
    # `parsing.ViewedRecordLine`): how many messages they read (None: read whole). Each entry's
    # record is then what its view kept of it (`ViewedRecord`, `ViewedRecordLine`) or, for a record
    # of another shape, the record read whole.
    viewed: int | None = None

    # Where the legacy document holds its messages (prune's archive keeps them by their place there).
    path = ("messages",)

    @functools.cached_property
    def spans(self) -> list[tuple[int, int]]:
        """Where each message of the legacy document sits in `data` (`message_spans`): found once,
        for a rewrite that splices it and for the read-back of what it wrote."""
        return message_spans(self.data)


# One per message: which record it came from, which turn of it, and its blocks as read.
@dataclass(frozen=True, slots=True)
class _Origin(LineOrigin):
    entry: int  # index into ChatSource.active
    turn: str  # "content" (a user record or a model turn) or "results" (the turn of a gemini record's results)
    blocks: tuple[Block, ...]  # () once let go of (`rewritten`)
    # Once a results turn was given other blocks: what its blocks as read cost (`_log.priced_all`) and
    # how many they were, all a write needs of them (it reads the results as read from the record where it needs them).
    released: tuple[int, int, int] | None = None

    def rewritten(self, raw: Any) -> tuple[Any, _Origin]:
        """What a results turn keeps of its reading once an operation gave it other blocks
        (`Message.with_blocks`): neither its blocks nor its calls (the record's `toolCalls`, its
        `raw`), which hold the old results: a large chat's pruned outputs are not held until it
        is written. A model turn keeps both (its `raw` is the record, whose usage a count reads)."""
        if self.turn != "results" or self.released is not None:
            return raw, self
        return None, _Origin(self.entry, self.turn, (), (*priced_all(self.blocks), len(self.blocks)))

    def cost(self, ratio: float, frame: float = 0.0) -> float:
        """The tokens of its blocks as read, by `ratio` and `frame` (`_log.cost`)."""
        if self.released is not None:
            characters, tokens, blocks = self.released
            return characters * ratio + tokens + frame * blocks
        return sum(cost(block, ratio, frame) for block in self.blocks)

    @classmethod
    def unchanged(cls, message: Message) -> bool:
        origin = message.origin
        return isinstance(origin, cls) and origin.released is None and message.blocks == origin.blocks


is_unchanged = _Origin.unchanged  # a message read from the chat as it is


# --- detection ----------------------------------------------------------------------------------


def is_metadata(value: Any) -> bool:
    """The agent's metadata record (`isPartialMetadataRecord`): string sessionId and projectHash."""
    return isinstance(value, dict) and isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str)


def is_legacy_document(value: Any) -> bool:
    """The legacy whole-file JSON. The agent's fallback (`parseLegacyRecordFallback`) asks for a
    `sessionId` only; without a `projectHash`, its messages must be the agent's records (an `id`
    and a `type` each), or any request body that names a session would be taken for a chat."""
    if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str) or not isinstance(value.get("messages"), list):
        return False
    return is_metadata(value) or bool(value["messages"]) and all(
        isinstance(m, dict) and isinstance(m.get("id"), str) and isinstance(m.get("type"), str) for m in value["messages"])


def _is_log_record(value: Any) -> bool:
    return isinstance(value, dict) and (
        isinstance(value.get("id"), str) or isinstance(value.get("$rewindTo"), str)
        or isinstance(value.get("$set"), dict) or is_metadata(value))


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    if messages_path is not None:
        return False
    if parsed.records is not None and not parsed.is_document:
        values = parsed.values()
        return is_metadata(values[0]) and all(_is_log_record(v) for v in values)
    return is_legacy_document(parsed.document)


# --- the agent's active records -----------------------------------------------------------------


def active_entries(records: list[Record]) -> tuple[Entry, ...]:
    """The message records `loadConversationRecord` ends with, replaying upserts, `$set` and `$rewindTo`."""
    held: dict[str, Entry] = {}  # a dict keeps the first insertion's place, as the agent's Map does
    for line, (_, value) in enumerate(records):
        if not isinstance(value, dict):
            continue
        if isinstance(value.get("$rewindTo"), str):
            ids = list(held)
            if value["$rewindTo"] in held:
                for removed in ids[ids.index(value["$rewindTo"]):]:
                    del held[removed]
            else:
                held.clear()  # the agent forgets everything when the id is unknown
        elif isinstance(value.get("id"), str):
            held[value["id"]] = Entry(value, line, None)
        elif isinstance(value.get("$set"), dict):
            if isinstance(value["$set"].get("messages"), list):
                held.clear()
                _hold(held, value["$set"]["messages"], line)
        elif is_metadata(value) and isinstance(value.get("messages"), list):
            _hold(held, value["messages"], line)
    return tuple(held.values())


def _hold(held: dict[str, Entry], messages: list, line: int | None) -> None:
    for position, message in enumerate(messages):
        if isinstance(message, dict) and isinstance(message.get("id"), str):
            held[message["id"]] = Entry(message, line, position)


# --- parts ↔ blocks -----------------------------------------------------------------------------


def parts(content: Any) -> list:
    """`ensurePartArray`: a string is one text part, one part a list of one."""
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content]
    if isinstance(content, str):
        return [{"text": content}]
    return [] if content is None else [content]


def part_text(content: Any) -> str:
    """`partListUnionToString` (verbose), enough to tell the input the agent ignores."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part_text(p) for p in content)
    if not isinstance(content, dict):
        return ""
    for key in ("videoMetadata", "thought", "codeExecutionResult", "executableCode", "fileData",
                "functionCall", "functionResponse", "inlineData"):
        if content.get(key) is not None:
            return f"[{key}]"
    text = content.get("text")
    return text if isinstance(text, str) else ""


def read_part(part: Any) -> Block:
    if not isinstance(part, dict):
        return Opaque(None, raw=part)
    if part.get("thought"):
        return Opaque("thought", raw=part)
    call = part.get("functionCall")
    if isinstance(call, dict):
        return ToolCall(string_or_empty(call.get("id")), string_or_empty(call.get("name")), call.get("args", {}), raw=part)
    response = part.get("functionResponse")
    if isinstance(response, dict):
        content, is_error = response_text(response.get("response"))
        return ToolResult(string_or_empty(response.get("id")), content, is_error, raw=part)
    data = part.get("inlineData")
    if isinstance(data, dict):
        return Image(data.get("mimeType"), data.get("data"), raw=part)
    if isinstance(part.get("text"), str):
        return Text(part["text"], raw=part)
    return Opaque(None, raw=part)


def response_text(response: Any) -> tuple[str, bool | None]:
    """A function response as text: its `output`, else its `error`, else the whole object as JSON."""
    if isinstance(response, dict):
        if isinstance(response.get("output"), str):
            return response["output"], None
        if isinstance(response.get("error"), str):
            return response["error"], True
    return dumps(response, indent=False).decode(), None


def write_part(block: Block) -> Any:
    """A block as a Gemini part: as it was read when it did not change."""
    if block.raw is not None and read_part(block.raw) == block:
        return block.raw
    if isinstance(block, Text):
        return {"text": block.text}
    if isinstance(block, ToolCall):
        return {"functionCall": {"id": block.id, "name": block.name, "args": block.input}}
    if isinstance(block, ToolResult):
        name = block.raw.get("functionResponse", {}).get("name") if isinstance(block.raw, dict) else None
        return {"functionResponse": {"id": block.tool_call_id, "name": name or "",
                                     "response": {"error" if block.is_error else "output": _result_string(block)}}}
    if isinstance(block, Image):
        return {"inlineData": {"mimeType": block.media_type, "data": block.data}}
    return block.raw


def _result_string(block: ToolResult) -> str:
    if isinstance(block.content, str):
        return block.content
    return "\n".join(b.text for b in block.content if isinstance(b, Text))


def call_results(call: dict) -> tuple[ToolResult, ...]:
    """The results a `toolCalls[]` entry holds, as the agent sends them: a string is the call's
    result; a list of parts is sent part for part (`convertSessionToClientHistory`), so each
    `functionResponse` in it is a result, answering the call its own `id` names (else this one),
    and carries the other parts after it (those before the first go with the first). The list
    usually holds the call's own response; the `$set` of a resume that kept the calls holds in
    each the whole user turn of responses (`updateMessagesFromHistory` sets every call's result
    to that turn's parts), so a call of two parallel ones holds both."""
    result = call.get("result")
    if not result:
        return ()
    call_id = string_or_empty(call.get("id"))
    if isinstance(result, str):
        return (ToolResult(call_id, result),)
    groups: list[tuple[dict | None, list[Block]]] = []
    leading: list[Block] = []
    for part in parts(result):
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            groups.append((part["functionResponse"], leading if not groups else []))
            leading = []
        elif isinstance(part, dict) and "functionResponse" in part:
            continue  # a functionResponse that is no object: nothing the API reads as a result
        else:
            (groups[-1][1] if groups else leading).append(read_part(part))
    if not groups:
        groups = [(None, leading)]
    out = []
    for response, others in groups:
        text, is_error = response_text(response.get("response")) if response is not None else ("", None)
        content: str | tuple[Block, ...] = text if not others else (Text(text), *others) if text else tuple(others)
        answers = string_or_empty(response.get("id")) if response is not None else ""
        out.append(ToolResult(answers or call_id, content, is_error))
    return tuple(out)


def write_results(blocks: list[ToolResult], call: dict, names: dict[str, str]) -> Any:
    """Changed results put back into their call the way the agent records them: a functionResponse
    part each (whose `response.output` takes the new text, and `name` the name of the call it
    answers) and the other parts it had; the call's own result alone stays a string if it was one
    (not an error: a string is sent as the output)."""
    old = call.get("result")
    if isinstance(old, str) and len(blocks) == 1 and not blocks[0].is_error:
        return _result_string(blocks[0])
    out: list[Any] = []
    for block in blocks:
        response = {"id": block.tool_call_id, "name": names.get(block.tool_call_id, call.get("name", "")),
                    "response": {"error" if block.is_error else "output": _result_string(block)}}
        extra = [write_part(b) for b in block.content if not isinstance(b, Text)] if not isinstance(block.content, str) else []
        out += [{"functionResponse": response}, *extra]
    return out


# --- read ---------------------------------------------------------------------------------------


def unrecorded_messages(transcript: Transcript) -> frozenset[int]:
    """The messages before the last recorded usage that its prompt did not hold (`Timeline`);
    without a timeline (the legacy document), the results read from `toolCalls[].result` that a
    user record after them repeats. While its calls run, Gemini CLI 0.61 sends each result once,
    as that user record, and keeps this copy in the call besides: no recorded `tokens` counted it,
    though a resume sends both."""
    messages = transcript.messages
    timeline: Timeline | None = transcript.source.timeline
    anchor = next((i for i in range(len(messages) - 1, -1, -1) if _has_usage(messages[i])), None)
    anchored = placed(messages[anchor]) if timeline is not None and anchor is not None else None
    counted_at = timeline.usage.get(anchored[0]) if timeline is not None and anchored is not None else None
    out = []
    for index, message in enumerate(messages):
        at = placed(message)
        if at is None:
            continue  # made by an operation
        sent = timeline.sent.get(at) if timeline is not None else None
        if counted_at is not None and sent is not None:
            if anchor is not None and index < anchor and sent > counted_at:
                out.append(index)
            continue
        if at[1] != "results":
            continue
        repeated: set[str] = set()
        later = index + 1
        while later < len(messages) and messages[later].role == USER:  # (not a slice: a copy of the rest each time)
            repeated.update(messages[later].answered_ids)
            later += 1
        if set(message.answered_ids) <= repeated:
            out.append(index)
    return frozenset(out)


def placed(message: Message) -> tuple[int, str] | None:
    """The entry and the turn ("content" or "results") a message was read from, of one still
    unread told by what reads it (`TurnReading`) without reading it; None for one an operation made."""
    reading = message.reading
    if isinstance(reading, TurnReading):
        return reading.index, _TURNS[reading.turn]
    origin = message.origin
    return (origin.entry, origin.turn) if isinstance(origin, _Origin) else None


class TurnReading:
    """What reads an unread message of a chat when it is first asked for (a legacy document's
    record, views.py; a log's record line, `_LineReadLater`): the `turn`th message (`_TURNS`) of
    the `index`th active record, which says where it sits without reading it (`placed`). One per
    unread message, so small (slots). The record read last is not read again (`LastRead`)."""

    __slots__ = ("index", "turn", "last")

    def __init__(self, index: int, turn: int, last: LastRead) -> None:
        self.index, self.turn, self.last = index, turn, last

    def __call__(self) -> Message:
        last = self.last
        if last.index != self.index:
            last.messages, last.index = self.record_messages(), self.index
        return last.messages[self.turn]

    def record_messages(self) -> tuple[Message, ...]:
        """The messages of its record, read whole from its bytes (`entry_messages`)."""
        raise NotImplementedError


class LastRead:
    """The messages of the record of a chat read last by its view (`TurnReading`): a model turn
    and its results are often read one after the other (prune reads a result, then the call it
    answers)."""

    __slots__ = ("index", "messages")

    def __init__(self) -> None:
        self.index = -1
        self.messages: tuple[Message, ...] = ()


_TURNS = ("content", "results")  # a record's turns, in their order (what `entry_messages` gives)


def viewed_record(text: memoryview, depth: int) -> dict:
    """A record its view read (views.py), read whole as the full reading reads it, `depth` deep
    (3 in the legacy document, 1 on a line of its own): the view checked the type of every field
    it holds but its calls' arguments, which alone are walked for a number to keep as written
    (`jsondata.plain_value`)."""
    record = plain_value(text, _arguments)
    return record if record is not None else nested_value(bytes(text), depth)


def line_record(record: Record) -> dict:
    """A log's record line its view read (`parsing.ViewedRecordLine`), read whole from its bytes
    (`viewed_record`; the first line's byte-order mark left out, as `parse` leaves it out)."""
    text = memoryview(line_bytes(record))
    return viewed_record(text[len(BOM):] if text[:len(BOM)] == BOM else text, 1)


def _arguments(record: dict) -> list:
    calls = record.get("toolCalls")
    return [call.get("args") for call in calls] if calls else []


def _has_usage(message: Message) -> bool:
    record = message.record
    tokens = record.get("tokens") if isinstance(record, dict) else None
    return isinstance(tokens, dict) and isinstance(tokens.get("input"), int) and tokens["input"] > 0


def is_ignored_user(record: dict) -> bool:
    return is_ignored_input(part_text(record.get("content")))


def model_turn(record: dict) -> tuple[Block, ...]:
    """A gemini record's model turn: its content alone when that holds calls or thoughts (a
    newer session), else its content then one call per `toolCalls` entry."""
    content = content_turn(record)
    return content if holds_turn(content) else content + listed_calls(record)


def content_turn(record: dict) -> tuple[Block, ...]:
    """A gemini record's `content`, read: the whole model turn when it `holds_turn`."""
    return tuple(read_part(p) for p in parts(record.get("content") or None))  # "" sends no part


def holds_turn(content: tuple[Block, ...]) -> bool:
    """Whether a gemini record's content (`content_turn`) is its whole model turn, calls and
    thoughts included (a newer session): then its `toolCalls` are not sent as calls besides."""
    return any(isinstance(b, ToolCall) or (isinstance(b, Opaque) and b.type == "thought") for b in content)


def listed_calls(record: dict) -> tuple[ToolCall, ...]:
    """The calls of a gemini record's `toolCalls`, one for each entry."""
    calls = record.get("toolCalls")
    return tuple(ToolCall(string_or_empty(c.get("id")), string_or_empty(c.get("name")), c.get("args", {}), raw=c)
                 for c in (calls if isinstance(calls, list) else ()) if isinstance(c, dict))


def result_turn(record: dict) -> tuple[Block, ...]:
    calls = record.get("toolCalls")
    return tuple(r for c in (calls if isinstance(calls, list) else ()) if isinstance(c, dict) for r in call_results(c))


@dataclass(frozen=True)
class Timeline:
    """When the turns a resume added to a JSON Lines log were first sent, and each usage recorded,
    as lines of the log. A resume (a `{"$set": {"sessionId"}}` line) sends the history as
    converted from the file it loaded, each call's results as a user turn, and records that turn
    as a `<id>_response` user record placed after the call's record, sent from the line that
    first holds it. From the next resume on, the call's `result` is sent besides (in the shape a
    resume in a later minute than the file's name leaves it: `updateMessagesFromHistory` keeps
    the calls and gives each the whole turn of responses). A recorded usage counted such a turn
    iff it was sent from a line before the one the usage was recorded on. The other turns are
    sent from their first line on, before any usage after them; a results turn with no
    `<id>_response` record is left to the rule of `unrecorded_messages`."""

    sent: dict[tuple[int, str], float]  # (entry, "content" or "results") of a turn a resume added → its first line sent
    usage: dict[int, float]  # entry → the line its recorded `tokens` first appear on

    @classmethod
    def of(cls, records: list[Record], active: tuple[Entry, ...]) -> Timeline:
        first: dict[str, int] = {}
        recorded: dict[str, list[tuple[int, dict]]] = {}  # id → (line, `tokens`) of each line that holds it with a usage
        resumes: list[int] = []
        for line, (_, value) in enumerate(records):
            if type(value) is ViewedRecordLine:  # a message record its view read: its id a string, no `$set`, no `messages`
                held: Any = (value,)
            elif not isinstance(value, dict):
                continue
            else:
                listed: dict = value["$set"] if isinstance(value.get("$set"), dict) else value
                if listed is not value and isinstance(listed.get("sessionId"), str):
                    resumes.append(line)
                held = listed["messages"] if isinstance(listed.get("messages"), list) else (value,)
            for record in held:
                if isinstance(record, dict) and isinstance(identifier := record.get("id"), str):
                    first.setdefault(identifier, line)
                    if isinstance(tokens := record.get("tokens"), dict):
                        recorded.setdefault(identifier, []).append((line, tokens))
        ids = {e.record.get("id") for e in active}
        sent: dict[tuple[int, str], float] = {}
        usage: dict[int, float] = {}
        for index, entry in enumerate(active):
            record = entry.record
            identifier = record.get("id")
            if not isinstance(identifier, str) or identifier not in first:
                continue
            kind = record.get("type")
            if kind == "gemini" and (converted := f"{identifier}_response") in ids and converted in first:
                sent[(index, "results")] = next((r for r in resumes if r > first[converted]), math.inf)
            elif kind == "user" and identifier.endswith("_response") and identifier[:-len("_response")] in ids:
                sent[(index, "content")] = first[identifier]
            if isinstance(tokens := record.get("tokens"), dict):
                # The first line that holds this usage (the same figures, as JSON), else the id's first.
                usage[index] = next((line for line, figures in recorded.get(identifier, ())
                                     if figures is tokens or dumps(figures, indent=False) == dumps(tokens, indent=False)),
                                    first[identifier])
        return cls(sent, usage)

    def stale(self) -> frozenset[int]:
        """The entries whose usage counted a history other than the last usage's, one without a
        turn a resume added before them, first sent later: no usage of this history."""
        if not self.usage:
            return frozenset()
        last = self.usage[max(self.usage)]
        latest: dict[int, float] = {}  # entry → the latest line a turn of it was first sent from, up to the last usage's
        for (entry, _), sent in self.sent.items():
            if sent <= last:
                latest[entry] = max(latest.get(entry, -math.inf), sent)
        out, before = [], -math.inf  # the latest line a turn of an earlier entry was first sent from
        for entry in sorted(set(latest) | set(self.usage)):
            if entry in self.usage and before > self.usage[entry]:
                out.append(entry)
            before = max(before, latest.get(entry, -math.inf))
        return frozenset(out)


def entry_messages(index: int, record: dict, line: int | None, stale: frozenset[int] = frozenset(),
                   records: list[Record] | None = None, last: LastRead | None = None) -> tuple[Message, ...]:
    """The messages the agent sends of the `index`th active record (none, one, or a model turn and
    its results), on `line` of a JSON Lines log (None in the legacy document); of a line its view
    read (`parsing.ViewedRecordLine`, of `records`), left unread (`last`: the record they read last)."""
    if type(record) is ViewedRecordLine:
        assert line is not None and records is not None and last is not None  # (a line of a log read lazily)
        return tuple(Message.unread(role, MessageView(sizes, None if index in stale and seen is not RESULTS_TURN else seen), None,
                                    _LineReadLater(records, line, index, turn, index in stale, last), line=line + 1)
                     for turn, (role, sizes, seen) in enumerate(record.seen))
    line = line + 1 if line is not None else None
    kind = record.get("type")
    if kind == "user" and not is_ignored_user(record):
        blocks = tuple(read_part(p) for p in parts(record.get("content")))
        return (Message(USER, blocks, raw=record, line=line, origin=_Origin(index, "content", blocks)),)
    if kind != "gemini":
        return ()
    blocks = model_turn(record)
    if not blocks:
        return ()  # the agent sends nothing for it, not even its results
    # A usage that counted another history is no usage of this one (the record keeps it).
    raw = {k: v for k, v in record.items() if k != "tokens"} if index in stale else record
    turn = Message(ASSISTANT, blocks, raw=raw, line=line, origin=_Origin(index, "content", blocks))
    results = result_turn(record)
    if not results:
        return (turn,)
    # Its raw is the calls holding the results: the record's `tokens` belong to the model turn.
    return turn, Message(USER, results, raw=record["toolCalls"], line=line, origin=_Origin(index, "results", results))


class _LineReadLater(TurnReading):
    """A message of a log's record line its view read (`parsing`), read from the line's bytes
    when first asked for."""

    __slots__ = ("records", "line", "stale")

    def __init__(self, records: list[Record], line: int, index: int, turn: int, stale: bool, last: LastRead) -> None:
        super().__init__(index, turn, last)
        self.records, self.line, self.stale = records, line, stale

    def record_messages(self) -> tuple[Message, ...]:
        return entry_messages(self.index, line_record(self.records[self.line]), self.line, frozenset((self.index,)) if self.stale else frozenset())


def read(parsed: Parsed, messages_path: str | None = None) -> Transcript:
    if parsed.records is not None and not parsed.is_document:
        records, document, layout = parsed.records, None, None
        active = active_entries(records)
    else:
        records, document, layout = None, parsed.document, Layout.of(parsed.data)
        # The agent's fallback for a legacy file takes its `messages` as they are.
        active = tuple(Entry(m, None, i) for i, m in enumerate(document["messages"]) if isinstance(m, dict))
    _check_call_ids(active, parsed.name)
    timeline = Timeline.of(records, active) if records is not None else None
    stale = timeline.stale() if timeline is not None else frozenset()
    messages: list[Message] = []
    silent_entries = []
    last = LastRead()
    for index, entry in enumerate(active):
        made = entry_messages(index, entry.record, entry.line, stale, records, last)
        messages += made
        if not made:
            silent_entries.append(index)
    # A log some of whose lines its view read (`lazily=True`, `"logs"`): a rewrite that keeps each
    # message in its place writes it by its views (`writer._lines_of_views`); any other reads it whole (`whole`).
    viewed = len(messages) if any(type(entry.record) is ViewedRecordLine for entry in active) else None
    source = ChatSource(records, document, layout, parsed.data, active, frozenset(silent_entries), parsed.bom, timeline, viewed)
    return Transcript(format=NAME, dialect="anthropic", messages=tuple(messages), name=parsed.name, source=source)


def whole(transcript: Transcript) -> Transcript:
    """`transcript` with the source the full reading gives, where the document was read quickly
    (views.py: its records kept in part): for a rewrite, which makes new records of them. The
    entries are the same, in the same order, so that each message's origin names its own."""
    source: ChatSource = transcript.source
    if source.viewed is None:
        return transcript
    full = read(parse(source.data, transcript.name))
    return dataclasses.replace(transcript, source=full.source)


def view_before_compaction(transcript: Transcript) -> Transcript | None:
    """The chat as it was before its newest `$set` of the messages (a compaction's, or the whole
    history a resume records), None when it has none: its recorded usage measured the system
    prompt and tools, where the records the `$set` lists may carry little of it."""
    records = transcript.source.records
    if records is None:
        return None
    newest = next((line for line in range(len(records) - 1, 0, -1) if _sets_messages(records[line][1])), None)
    before = Parsed(transcript.name, b"", records=records[:newest], bom=transcript.source.bom) if newest else None
    if before is None or before.is_document:  # nothing before it but the metadata
        return None
    try:
        return read(before)
    except ShapeError:  # a record before it the agent no longer sends: no view, as check reads none of it
        return None


def _sets_messages(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("$set"), dict) and isinstance(value["$set"].get("messages"), list)


def _check_call_ids(active: tuple[Entry, ...], name: str) -> None:
    """`toolCalls` is a list, and a call's or a response's `id` is a string when it is there: the API pairs them by it, and
    no reading of an object or a list as an id would send what the agent sends."""
    for entry in active:
        record = entry.record
        calls = record.get("toolCalls")
        where = f"message {entry.position}: " if entry.position is not None else ""
        line = entry.line + 1 if entry.line is not None else None
        if calls is not None and not isinstance(calls, list):  # the agent maps over it
            raise ShapeError(f"{where}`toolCalls` must be a list, not {kind_of(calls)}", location=Location(name, line))
        found = [c for c in (calls if isinstance(calls, list) else ()) if isinstance(c, dict)]
        for part in parts(record.get("content") or None):
            if isinstance(part, dict):
                found += [v for k in ("functionCall", "functionResponse") if isinstance(v := part.get(k), dict)]
        for call in found:
            if "id" in call and not isinstance(call["id"], str) and call["id"] is not None:
                raise ShapeError(f"{where}a tool call's `id` must be a string, not {kind_of(call['id'])}",
                                 location=Location(name, line))


# The first key of a document indented as JSON.stringify(…, null, n) lays it out: its indent.
_FIRST_KEY = re.compile(rb'(?:\xef\xbb\xbf)?\{\n([ \t]+)"')


def message_spans(data: bytes) -> list[tuple[int, int]]:
    """The byte range of each object or array in the top-level `messages` array (a string or a
    number there has none: the caller compares the count with the array's)."""
    indented = _indented_spans(data)
    return indented if indented is not None else array_item_spans(data, "messages")


def _indented_spans(data: bytes) -> list[tuple[int, int]] | None:
    """`message_spans` of a document laid out as the agent writes it (JSON.stringify with an
    indent), by one scan of its lines: a JSON string holds no raw line break, so a line that begins
    with one indent and `"messages": [` is that key, one with two indents and `{` or `}` begins or
    ends a message (or is one, on a line of its own), one with one indent and `]` ends the array.
    None for a document laid out otherwise, or whose array holds anything but objects
    (`jsondata.array_item_spans` reads it)."""
    first = _FIRST_KEY.match(data)
    if first is None:
        return None
    unit = first.group(1)
    opening = b"\n" + unit + b'"messages": ['
    at = data.find(opening)
    if at < 0:
        return None
    start = at + len(opening)
    if data[start:start + 1] != b"\n":
        return [] if data[start:start + 1] == b"]" else None  # `[]`, or an array laid out otherwise
    # Where each line at the messages' depth begins, past its indent, up to the first line one
    # level out (the array's end): a search per message is several times slower.
    lines = re.compile(re.escape(b"\n" + unit) + b"(" + re.escape(unit) + b")?[^" + re.escape(unit[:1]) + b"]")
    firsts, end = [], -1
    for line in lines.finditer(data, start):
        if line[1] is None:
            end = line.end() - 1
            break
        firsts.append(line.end() - 1)
    if end < 0 or data[end:end + 1] != b"]" or data.find(opening, end) >= 0:
        return None  # no end, or a second `messages`
    opens, closes = firsts[0::2], firsts[1::2]
    if len(opens) == len(closes) and bytes(data[i] for i in opens) == b"{" * len(opens) \
            and bytes(data[i] for i in closes) == b"}" * len(closes):
        return [(opening, closing + 1) for opening, closing in zip(opens, closes)]  # as the agent lays them out
    # A message's first and last lines, one after the other, or a message on a line of its own
    # (`writer._spliced` writes a changed one so); else one is no object, or is laid out otherwise.
    spans, begins = [], -1
    for at in firsts:
        if begins >= 0:
            if data[at] != 0x7D:  # "}"
                return None
            spans.append((begins, at + 1))
            begins = -1
        elif data[at] != 0x7B:  # "{"
            return None
        elif data[at + 1] == 0x0A:  # "{" alone on its line: the message's first line
            begins = at
        else:
            alone = data[at:data.find(b"\n", at, end)].rstrip()
            alone = alone[:-1] if alone.endswith(b",") else alone
            if not alone.endswith(b"}"):
                return None
            spans.append((at, at + len(alone)))
    # Between two messages a comma alone, and nothing before the first or after the last: else a
    # line taken for a whole message was not one.
    gaps = zip([start, *(stop for _, stop in spans)], [*(begun for begun, _ in spans), end])
    if begins >= 0 or any(data[after:before].strip() != (b"," if 0 < k < len(spans) else b"")
                          for k, (after, before) in enumerate(gaps)):
        return None
    return spans
