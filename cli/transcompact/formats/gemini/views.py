"""A legacy Gemini CLI document read for counting and pruning without building its messages
(`read_quickly`, for `loads(lazily=True)` and `"logs"`): each record is read by a typed decoder
from its bytes, and a record of the shape Gemini CLI writes (its content a string, each call's
result a string or `functionResponse` parts with an `output` or an `error` string) gives messages
left unread, with the sizes of their blocks; their blocks are read from the record's bytes when
first asked for. The writer reads whole only the records whose messages changed
(`writer._spliced_views`; a rewrite that adds, drops or moves a message reads the document whole
again, `reader.whole`). Any other record is read whole, as the full reading reads it; a document
of another shape is left to the full reading, which says what is wrong with it.

A record is viewed only when everything it holds is a field named here, of the type named here:
the decoder has then checked all of it (UTF-8, escapes, nesting) as the full reading would, and
the blocks read later from the same bytes are the ones the sizes describe.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ...core.jsondata import BOM, Layout, compact_json, first_line_is_a_value, nested_value, plain_value
from ...core.model import (
    ASSISTANT,
    NOT_AN_OBJECT,
    USER,
    BlockSize,
    Message,
    MessageView,
    Text,
    ToolCall,
    ToolResult,
    Transcript,
    text_flags,
)
from ...dialects.views import ABSENT
from .reader import NAME, RESULTS_TURN, ChatSource, Entry, ViewedRecord, _check_call_ids, entry_messages, is_ignored_input


class _Output(Struct, forbid_unknown_fields=True):
    output: str | UnsetType = UNSET
    error: str | UnsetType = UNSET


class _Response(Struct, forbid_unknown_fields=True):
    response: _Output
    id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET


class _ResponsePart(Struct, forbid_unknown_fields=True):
    functionResponse: _Response


class _Call(Struct, forbid_unknown_fields=True):
    id: str | UnsetType = UNSET
    name: str | UnsetType = UNSET
    args: Raw = ABSENT  # read as the full reading reads it (its depth, floats as written): its compact JSON is counted
    result: str | list[_ResponsePart] | None | UnsetType = UNSET
    status: str | UnsetType = UNSET
    timestamp: str | UnsetType = UNSET
    displayName: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    resultDisplay: str | None | UnsetType = UNSET
    renderOutputAsMarkdown: bool | UnsetType = UNSET


class _Thought(Struct, forbid_unknown_fields=True):
    subject: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    timestamp: str | UnsetType = UNSET


class _Record(Struct, forbid_unknown_fields=True):
    id: str
    type: str
    timestamp: str | UnsetType = UNSET
    content: str | None | UnsetType = UNSET
    thoughts: list[_Thought] | UnsetType = UNSET
    tokens: dict[str, int] | UnsetType = UNSET
    model: str | UnsetType = UNSET
    toolCalls: list[_Call] | UnsetType = UNSET


# The fields of the document around its messages, each read whole (as the full reading reads them).
class _Document(Struct, forbid_unknown_fields=True):
    sessionId: Raw
    messages: list[Raw]
    projectHash: Raw = ABSENT
    startTime: Raw = ABSENT
    lastUpdated: Raw = ABSENT
    kind: Raw = ABSENT
    summary: Raw = ABSENT
    directories: Raw = ABSENT


_DOCUMENT = msgspec.json.Decoder(_Document)
_RECORD = msgspec.json.Decoder(_Record)
_ARGUMENTS_DEPTH = 6  # the document, `messages`, a record, `toolCalls`, a call, its `args`


def read_quickly(data: bytes, name: str) -> Transcript | None:
    """The legacy document as `reader.read` reads it, the messages of each record of the agent's
    shape left unread; None for any other input (the full reading decides, and says where).
    `loads` offers it only a document whose first key is `sessionId` (the registration's)."""
    bom = data.startswith(BOM)
    text = data[len(BOM):] if bom else data
    if first_line_is_a_value(text):
        return None  # not a legacy document (the JSON Lines log begins with its metadata line)
    try:
        document = _DOCUMENT.decode(text)
        # The agent's own documents only (`reader.is_metadata`): any other is detected by the full reading.
        if not document.projectHash or not all(
                isinstance(nested_value(bytes(field), 2), str) for field in (document.sessionId, document.projectHash)):
            return None
        for field in (document.startTime, document.lastUpdated, document.kind, document.summary, document.directories):
            if field:
                nested_value(bytes(field), 2)  # as the full reading checks it (its depth)
        last = _LastRead()
        active: list[Entry] = []
        messages: list[Message] = []
        read_entries = []
        for position, raw in enumerate(document.messages):
            index = len(active)
            made = _read(raw, position, index, last, name)
            if made is None:
                continue  # the agent skips it, as the full reading does
            active.append(made[0])
            messages += made[1]
            if made[1]:
                read_entries.append(index)
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    source = ChatSource(None, {"messages": document.messages}, Layout.of(data), data, tuple(active), frozenset(read_entries), bom,
                        viewed=len(messages))
    return Transcript(format=NAME, dialect="anthropic", messages=tuple(messages), name=name, source=source)


def _read(raw: Raw, position: int, index: int, last: _LastRead, name: str) -> tuple[Entry, tuple[Message, ...]] | None:
    """The `position`th record of a document, which takes the `index`th entry: read by its view,
    else whole (None: no object)."""
    viewed = _viewed(raw, index, last)
    if viewed is not None:
        return Entry(viewed[0], None, position), viewed[1]
    record = nested_value(bytes(raw), 3)
    if not isinstance(record, dict):
        return None
    entry = Entry(record, None, position)
    _check_call_ids((entry,), name)
    return entry, entry_messages(index, record, None)


def _viewed(raw: Raw, index: int, last: _LastRead) -> tuple[ViewedRecord, tuple[Message, ...]] | None:
    """What is kept of a record read by its view (its `id`, `type` and `tokens`) and its messages
    left unread, as `reader.entry_messages` reads them; None: it is read whole."""
    try:
        record = _RECORD.decode(raw)
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    kept = ViewedRecord(id=record.id, type=record.type)
    usage = None
    if not isinstance(record.tokens, UnsetType):
        kept["tokens"] = record.tokens
        usage = {"tokens": record.tokens}  # what a count reads of the record (`calibrate`)
    content = record.content if isinstance(record.content, str) else ""
    if record.type == "user":
        if is_ignored_input(content):
            return kept, ()
        said_sizes = (BlockSize(Text, len(content), flags=text_flags(content)),)
        return kept, (Message.unread(USER, MessageView(said_sizes, usage), None, _ReadLater(raw, index, 0, last)),)
    if record.type != "gemini":
        return kept, ()
    calls = record.toolCalls if not isinstance(record.toolCalls, UnsetType) else []
    sizes = [BlockSize(Text, len(content), flags=text_flags(content))] if content else []
    results: list[BlockSize] = []
    for call in calls:
        call_id = call.id if isinstance(call.id, str) else ""
        call_name = call.name if isinstance(call.name, str) else ""
        arguments = nested_value(bytes(call.args), _ARGUMENTS_DEPTH) if call.args else {}
        sizes.append(BlockSize(ToolCall, len(call_name) + len(compact_json(arguments)), call_id, call_name,
                               0 if isinstance(arguments, dict) else NOT_AN_OBJECT))
        result = call.result
        if isinstance(result, str):
            if result:
                results.append(BlockSize(ToolResult, len(result), call_id))
        elif isinstance(result, list):
            for part in result:
                response = part.functionResponse
                output, error = response.response.output, response.response.error
                text = output if isinstance(output, str) else error
                if not isinstance(text, str):
                    return None  # a response of neither: the full reading writes it as JSON
                answers = response.id if isinstance(response.id, str) and response.id else call_id
                results.append(BlockSize(ToolResult, len(text), answers))
    if not sizes:
        return kept, ()  # the agent sends nothing for it, not even its results
    made = [Message.unread(ASSISTANT, MessageView(tuple(sizes), usage), None, _ReadLater(raw, index, 0, last))]
    if results:
        made.append(Message.unread(USER, MessageView(tuple(results), RESULTS_TURN), None, _ReadLater(raw, index, 1, last)))
    return kept, tuple(made)


def place(message: Message) -> tuple[int, str] | None:
    """The active record (its index) and the turn ("content" or "results", as `reader._Origin`
    names them) an unread message of a viewed document was read from, told without reading it;
    None for any other message."""
    reading = message.reading
    return (reading.index, ("content", "results")[reading.turn]) if isinstance(reading, _ReadLater) else None


class _ReadLater:
    """The `turn`th message of the `index`th active record, read from the record's bytes when first
    asked for: one per unread message of a document, so small (slots). The record read last is
    not read again (`_LastRead`)."""

    __slots__ = ("raw", "index", "turn", "last")

    def __init__(self, raw: Raw, index: int, turn: int, last: _LastRead) -> None:
        self.raw, self.index, self.turn, self.last = raw, index, turn, last

    def __call__(self) -> Message:
        last = self.last
        if last.raw is not self.raw:
            last.messages, last.raw = entry_messages(self.index, whole_record(self.raw), None), self.raw
        return last.messages[self.turn]


def whole_record(raw: Raw) -> dict:
    """A record its view read (`_viewed`), read whole as the full reading reads it: the view
    checked the type of every field it holds but its calls' arguments, which alone are walked for
    a number to keep as written (`jsondata.plain_value`)."""
    record = plain_value(memoryview(raw), _arguments)
    return record if record is not None else nested_value(bytes(raw), 3)


def _arguments(record: dict) -> list:
    calls = record.get("toolCalls")
    return [call.get("args") for call in calls] if calls else []


class _LastRead:
    """The messages of the record of a document read last: a model turn and its results are
    often read one after the other (prune reads a result, then the call it answers)."""

    __slots__ = ("raw", "messages")

    def __init__(self) -> None:
        self.raw: Raw | None = None
        self.messages: tuple[Message, ...] = ()
