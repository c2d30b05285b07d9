"""What a count, `check` and a rewrite need of a pi message entry, read by a typed decoder from
the line's bytes without building it (`parsing.line_view`, for `loads(lazily=True)` and
`lazily="logs"`): the fields that place the entry, of its message the role and what the reader
and a count look at (`stopReason`, `toolCallId`, `usage`), and the sizes of its blocks
(`parsing.ViewedEntry`). The reader leaves such a message unread; its blocks are read from the
line's bytes when first asked for, and a write reads the line whole again where it makes a new
entry of it (`reader.whole_value`); a restated usage and a timestamp are read alone
(`usage_figures`, `entry_timestamp`).

An entry is viewed only when everything it holds is a field named here, of the type pi writes it:
the decoder then has checked all of it (UTF-8, escapes, nesting) as the full reading would, and the blocks read later
from the same bytes are the ones the sizes describe. Anything else (another field, a block of
another type, an image, a redacted thinking) has no view, and the line is parsed whole.
"""

from __future__ import annotations

import sys
from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ...core.jsondata import compact_json, nested_value, too_deep
from ...core.model import LISTED, NOT_AN_OBJECT, UNSIGNED, BlockSize, Text, Thinking, ToolCall, ToolResult, text_flags


class _Text(Struct, tag="text", tag_field="type", forbid_unknown_fields=True):
    text: str


class _Thinking(Struct, tag="thinking", tag_field="type", forbid_unknown_fields=True):
    thinking: str
    thinkingSignature: str | UnsetType = UNSET


class _ToolCall(Struct, tag="toolCall", tag_field="type", forbid_unknown_fields=True):
    id: str
    name: str
    arguments: Raw = Raw()  # read as `parse` reads it (floats as written): its compact JSON is counted


class _Usage(Struct, forbid_unknown_fields=True):
    input: int | UnsetType = UNSET
    output: int | UnsetType = UNSET
    cacheRead: int | UnsetType = UNSET
    cacheWrite: int | UnsetType = UNSET
    totalTokens: int | UnsetType = UNSET
    cost: dict[str, float] | UnsetType = UNSET


# Each field of the type pi writes it (another type is read whole: the reader takes what a view
# cannot say of it), so that the decoder checks it and no value is nested too deep to write; only
# a tool result's `details` is any JSON, walked for its depth.
class _Message(Struct, forbid_unknown_fields=True):
    role: str
    content: str | list[_Text | _Thinking | _ToolCall] | UnsetType = UNSET
    timestamp: int | float | str | UnsetType = UNSET
    # An assistant message's.
    api: str | UnsetType = UNSET
    provider: str | UnsetType = UNSET
    model: str | UnsetType = UNSET
    usage: _Usage | UnsetType = UNSET
    stopReason: str | UnsetType = UNSET
    errorMessage: str | UnsetType = UNSET
    responseId: str | UnsetType = UNSET
    # A tool result's.
    toolCallId: str | UnsetType = UNSET
    toolName: str | UnsetType = UNSET
    isError: bool | UnsetType = UNSET
    details: Any = UNSET


class _Entry(Struct, forbid_unknown_fields=True):
    type: str
    message: _Message
    id: str | None | UnsetType = UNSET
    parentId: str | None | UnsetType = UNSET
    timestamp: str | UnsetType = UNSET


class _UsageOf(Struct):
    usage: _Usage | UnsetType = UNSET


class _UsageEntry(Struct):
    """An entry read for its message's usage alone (the rest skipped, but checked as JSON)."""

    message: _UsageOf


class _Stamped(Struct):
    """An entry read for its `timestamp` alone."""

    timestamp: str | UnsetType = UNSET


_DECODER = msgspec.json.Decoder(_Entry)
_USAGE_DECODER = msgspec.json.Decoder(_UsageEntry)
_STAMPED = msgspec.json.Decoder(_Stamped)
_ROLES = ("user", "assistant", "toolResult")  # the messages a view reads as the full reading does
_A_USER = {"role": "user"}  # a user message's fields, held once (values are never changed in place)


def entry_view(text: memoryview, kind: type[dict]) -> tuple[dict[str, Any], tuple[BlockSize, ...]] | None:
    """The view of a line (without its byte-order mark): what is kept of it (a `kind`:
    `parsing.ViewedEntry`) and the sizes of its message's blocks; or None: it is parsed whole."""
    try:
        entry = _DECODER.decode(text)
    except (msgspec.MsgspecError, RecursionError, ValueError):  # ValueError: not UTF-8
        return None
    message = entry.message
    if entry.type != "message" or message.role not in _ROLES or message.content is UNSET and message.role == "user":
        return None  # no message the reader makes alike (a missing content is the full reading's error)
    details = message.details
    # (A message's field, 3 deep: one nested too deep to write is left to the full reading, which says where.)
    if (type(details) is dict or type(details) is list) and too_deep(details, 3):
        return None
    try:
        sizes = _sizes(message)
    except ValueError:
        return None
    if sizes is None:
        return None
    kept = kind(type="message")
    if entry.id is not UNSET:
        kept["id"] = entry.id
    if entry.parentId is not UNSET:
        kept["parentId"] = entry.parentId
    kept["message"] = _fields(message)
    return kept, sizes


def _fields(message: _Message) -> dict[str, Any]:
    """What the reader and a count look at of a message: its role, and where it has them its
    `stopReason`, `toolCallId` and the figures of its `usage` (a large log's tens of thousands)."""
    role, stop, call_id, usage = message.role, message.stopReason, message.toolCallId, message.usage
    if role == "user":
        return _A_USER
    fields: dict[str, Any] = {"role": sys.intern(role)}
    if not isinstance(stop, UnsetType):
        fields["stopReason"] = sys.intern(stop)
    if not isinstance(call_id, UnsetType):
        fields["toolCallId"] = call_id
    if not isinstance(usage, UnsetType):
        fields["usage"] = _figures(usage)
    return fields


USAGE_FIGURES = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")  # what a count reads of `usage`


def entry_timestamp(text: bytes) -> str | None:
    """The `timestamp` of a viewed entry's line (which its view does not keep), read alone."""
    stamped = _STAMPED.decode(text)  # (its view read the line: JSON, and the field a string)
    return None if isinstance(stamped.timestamp, UnsetType) else stamped.timestamp


def usage_figures(text: bytes) -> dict[str, int] | None:
    """The figures of the usage of a line's message as its view keeps them (`_fields`), read alone
    from its bytes; None where the line holds none, or not as a view reads it."""
    try:
        usage = _USAGE_DECODER.decode(text).message.usage
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    return None if isinstance(usage, UnsetType) else _figures(usage)


def _figures(usage: _Usage) -> dict[str, int]:
    return {key: value for key in USAGE_FIGURES if not isinstance(value := getattr(usage, key), UnsetType)}


def _sizes(message: _Message) -> tuple[BlockSize, ...] | None:
    """The sizes of the blocks the reader makes of `message` (`reader._read_entry`), or None when
    it makes other blocks, or refuses them (a result's call id not a string)."""
    content = message.content
    if isinstance(content, UnsetType):
        content = []
    if message.role == "toolResult":
        call_id = message.toolCallId
        if type(call_id) is not str:
            return None
        if isinstance(content, str):
            return (BlockSize(ToolResult, len(content), call_id),)
        texts = [block.text for block in content if isinstance(block, _Text)]
        if len(texts) < len(content):
            return None
        if len(texts) == 1:  # one text block reads as a string
            return (BlockSize(ToolResult, len(texts[0]), call_id),)
        return (BlockSize(ToolResult, sum(map(len, texts)), call_id, flags=LISTED),)
    if isinstance(content, str):
        return (BlockSize(Text, len(content), flags=text_flags(content)),)
    sizes = []
    for block in content:
        if isinstance(block, _Text):
            sizes.append(BlockSize(Text, len(block.text), flags=text_flags(block.text)))
        elif isinstance(block, _ToolCall):
            arguments = nested_value(bytes(block.arguments), 5) if block.arguments else {}  # 5 deep: entry, message, content, block
            sizes.append(BlockSize(ToolCall, len(block.name) + len(compact_json(arguments)), block.id, sys.intern(block.name),
                                   0 if isinstance(arguments, dict) else NOT_AN_OBJECT))
        else:
            signed = isinstance(block.thinkingSignature, str) and block.thinkingSignature
            sizes.append(BlockSize(Thinking, len(block.thinking), flags=0 if signed else UNSIGNED))
    return tuple(sizes)
