"""A legacy Gemini CLI document read for counting without building its messages (`read_quickly`,
for `loads(lazily=True)`): each record is read by a typed decoder from its bytes, and a record of
the shape Gemini CLI writes (its content a string, each call's result a string or `functionResponse`
parts with an `output` or an `error` string) gives messages left unread, with the sizes of their
blocks; their blocks are read from the record's bytes when first asked for, and a rewrite reads the
document whole again (`reader.whole`). Any other record is read whole, as the full reading reads
it; a document of another shape is left to the full reading, which says what is wrong with it.

A record is viewed only when everything it holds is a field named here, of the type named here:
the decoder has then checked all of it (UTF-8, escapes, nesting) as the full reading would, and
the blocks read later from the same bytes are the ones the sizes describe.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ...core.jsondata import BOM, Layout, compact_json, first_line_is_a_value, nested_value
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
from .reader import NAME, RESULTS_TURN, ChatSource, Entry, _check_call_ids, entry_messages, is_ignored_input


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
        active: list[Entry] = []
        messages: list[Message] = []
        read_entries = []
        for position, raw in enumerate(document.messages):
            index = len(active)
            viewed = _viewed(raw, index)
            if viewed is None:
                record = nested_value(bytes(raw), 3)
                if not isinstance(record, dict):
                    continue  # the agent skips it, as the full reading does
                entry = Entry(record, None, position)
                _check_call_ids((entry,), name)
                made = entry_messages(index, record, None)
            else:
                entry, made = Entry(viewed[0], None, position), viewed[1]
            active.append(entry)
            messages += made
            if made:
                read_entries.append(index)
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    source = ChatSource(None, None, Layout.of(data), data, tuple(active), frozenset(read_entries), bom)
    return Transcript(format=NAME, dialect="anthropic", messages=tuple(messages), name=name, source=source)


def _viewed(raw: Raw, index: int) -> tuple[dict[str, Any], tuple[Message, ...]] | None:
    """What is kept of a record read by its view (its `id`, `type` and `tokens`) and its messages
    left unread, as `reader.entry_messages` reads them; None: it is read whole."""
    try:
        record = _RECORD.decode(raw)
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    kept: dict[str, Any] = {"id": record.id, "type": record.type}
    usage = None
    if not isinstance(record.tokens, UnsetType):
        kept["tokens"] = record.tokens
        usage = {"tokens": record.tokens}  # what a count reads of the record (`calibrate`)
    content = record.content if isinstance(record.content, str) else ""
    if record.type == "user":
        if is_ignored_input(content):
            return kept, ()
        said_sizes = (BlockSize(Text, len(content), flags=text_flags(content)),)
        return kept, (Message.unread(USER, MessageView(said_sizes, usage), None, _ReadLater(raw, index, 0)),)
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
    made = [Message.unread(ASSISTANT, MessageView(tuple(sizes), usage), None, _ReadLater(raw, index, 0))]
    if results:
        made.append(Message.unread(USER, MessageView(tuple(results), RESULTS_TURN), None, _ReadLater(raw, index, 1)))
    return kept, tuple(made)


class _ReadLater:
    """The `turn`th message of the `index`th active record, read from the record's bytes when first
    asked for: one per unread message of a document, so small (slots)."""

    __slots__ = ("raw", "index", "turn")

    def __init__(self, raw: Raw, index: int, turn: int) -> None:
        self.raw, self.index, self.turn = raw, index, turn

    def __call__(self) -> Message:
        return entry_messages(self.index, nested_value(bytes(self.raw), 3), None)[self.turn]
