"""The typed view of a Gemini CLI message record (a legacy document's, or a line of the JSON
Lines log): each field of the type the agent writes it, no unknown field; what a count keeps of
it (`id`, `type`, `tokens`) and the messages the agent sends of it (`turns`). Self-contained (it
imports no other module of the package but `parsing`): parsing asks `line_view` of every line
of JSON Lines read for counting or rewriting, before the format is known.
"""

from __future__ import annotations

import sys
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ...core.jsondata import PartialLine, compact_json, nested_value
from ...core.model import ASSISTANT, NOT_AN_OBJECT, USER, BlockSize, Text, ToolCall, ToolResult, text_flags
from ...dialects.views import ABSENT
from .parsing import RESULTS_TURN, Turn, is_ignored_input


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


class _TextPart(Struct, forbid_unknown_fields=True):
    text: str


class _Record(Struct, forbid_unknown_fields=True):
    id: str
    type: str
    timestamp: str | UnsetType = UNSET
    content: str | list[_TextPart] | None | UnsetType = UNSET  # a string, or text parts (what Gemini CLI 0.61 writes of input)
    thoughts: list[_Thought] | UnsetType = UNSET
    tokens: dict[str, int] | UnsetType = UNSET
    model: str | UnsetType = UNSET
    toolCalls: list[_Call] | UnsetType = UNSET


RECORD = msgspec.json.Decoder(_Record)
K = TypeVar("K", bound=dict)  # what is kept of a record: a legacy document's `ViewedRecord`, a line's `ViewedRecordLine`


def line_view(text: memoryview, kind: type[PartialLine]) -> PartialLine | None:
    """The view of a message record's line of the JSON Lines log (the adapter's `line_view`): what
    is kept of it (a `kind`: `parsing.ViewedRecordLine`), `seen` its turns (`Turn`); None: it is
    parsed whole."""
    found = viewed(text, 1, kind)
    if found is None:
        return None
    kept, sent = found
    kept.seen = sent
    return kept


def restated(kept: PartialLine, tokens: dict[str, int]) -> PartialLine:
    """A line's view (`line_view`) as its line reads once its `tokens` are `tokens` (a rewrite
    restated them in its bytes): the usage its model turn is counted by with them."""
    new = type(kept)({**kept, "tokens": tokens})
    new.seen = tuple((role, sizes, usage if usage is None or usage is RESULTS_TURN else {"tokens": tokens})
                     for role, sizes, usage in kept.seen)
    return new


def viewed(text: Any, depth: int, kind: type[K]) -> tuple[K, tuple[Turn, ...]] | None:
    """`turns` of the record `text` holds, `depth` deep; None where its typed decoder refuses it."""
    try:
        decoded = RECORD.decode(text)
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    return turns(decoded, depth, kind)


def turns(record: _Record, depth: int, kind: type[K]) -> tuple[K, tuple[Turn, ...]] | None:
    """What a count keeps of a record its typed decoder read (`id`, `type`, `tokens`: a `kind`) and
    the messages the agent sends of it, as `reader.entry_messages` reads them (none, the user turn,
    or the model turn and the turn of its results); None: it is read whole. `depth`: how deep the
    record sits (3 in the legacy document, 1 on a line of its own)."""
    kept = kind(id=sys.intern(record.id), type=sys.intern(record.type))  # (the copies of a record share its id)
    usage = None
    if not isinstance(record.tokens, UnsetType):
        kept["tokens"] = record.tokens
        usage = {"tokens": record.tokens}  # what a count reads of the record (`calibrate`; not `kept`, which holds the turns)
    said = _texts(record.content)
    if record.type == "user":
        if is_ignored_input("".join(said)):
            return kept, ()
        return kept, ((USER, tuple(BlockSize(Text, len(text), flags=text_flags(text)) for text in said), usage),)
    if record.type != "gemini":
        return kept, ()
    calls = record.toolCalls if not isinstance(record.toolCalls, UnsetType) else []
    sizes = [BlockSize(Text, len(text), flags=text_flags(text)) for text in said]
    results: list[BlockSize] = []
    for call in calls:
        call_id = call.id if isinstance(call.id, str) else ""
        call_name = sys.intern(call.name) if isinstance(call.name, str) else ""  # (a log calls a few tools, each many times)
        arguments = nested_value(bytes(call.args), depth + 3) if call.args else {}  # (the record, `toolCalls`, a call, `args`)
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
                # (The call's id where the response repeats it: the one string held for both.)
                answers = response.id if isinstance(response.id, str) and response.id and response.id != call_id else call_id
                results.append(BlockSize(ToolResult, len(text), answers))
    if not sizes:
        return kept, ()  # the agent sends nothing for it, not even its results
    made: list[Turn] = [(ASSISTANT, tuple(sizes), usage)]
    if results:
        made.append((USER, tuple(results), RESULTS_TURN))
    return kept, tuple(made)


def _texts(content: str | list[_TextPart] | None | UnsetType) -> list[str]:
    """The texts of a record's content, a part each, as the agent sends them (`reader.parts`; an
    empty string sends no part)."""
    if isinstance(content, list):
        return [part.text for part in content]
    return [content] if isinstance(content, str) and content else []
