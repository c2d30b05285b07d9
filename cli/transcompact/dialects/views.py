"""What a count needs of a message, read by a typed decoder from the message's bytes without
building it: its role, the sizes of its blocks, and enough of its shape for a
dialect to be detected. A message is viewed only when everything it holds is a field named
here, of the type named here: the decoder then has checked all of it (UTF-8, escapes, nesting,
as the full reading would), and the blocks read later from the same bytes are the ones the
sizes describe. Anything else (another field, a block of another type, a value of another
type) has no view, and is read whole.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

import msgspec
from msgspec import Raw, Struct

from ..core.jsondata import compact_json, nested_value
from ..core.model import (
    LISTED,
    NOT_AN_OBJECT,
    SHARED_TEXT_CHARS,
    UNSIGNED,
    BlockSize,
    MessageView,
    RedactedThinking,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    text_flags,
)

ABSENT = Raw()  # the default of a Raw field: the field is not there


# A long string (a text, a thinking, a result) is left as its bytes: the decoder checks its escapes
# and control characters on the way, and `_viewed` decodes one at a time to count it (not all of a
# body's texts at once).
class _Text(Struct, tag="text", tag_field="type", forbid_unknown_fields=True):
    text: Raw
    cache_control: Raw = ABSENT
    citations: Raw = ABSENT


class _Thinking(Struct, tag="thinking", tag_field="type", forbid_unknown_fields=True):
    thinking: Raw
    signature: Raw = ABSENT


class _RedactedThinking(Struct, tag="redacted_thinking", tag_field="type", forbid_unknown_fields=True):
    data: str


class _ToolUse(Struct, tag="tool_use", tag_field="type", forbid_unknown_fields=True):
    id: str
    name: str
    input: Raw = ABSENT
    cache_control: Raw = ABSENT


class _ToolResult(Struct, tag="tool_result", tag_field="type", forbid_unknown_fields=True):
    tool_use_id: str
    content: Raw = ABSENT  # a string or a list of text blocks (`_result_size`)
    is_error: Raw = ABSENT
    cache_control: Raw = ABSENT


class _Message(Struct, forbid_unknown_fields=True):
    role: str
    content: str | list[_Text | _Thinking | _RedactedThinking | _ToolUse | _ToolResult]


_DECODER = msgspec.json.Decoder(_Message)
_ALL_DECODER = msgspec.json.Decoder(list[_Message])
_TEXTS_DECODER = msgspec.json.Decoder(list[_Text])
_decode_string = msgspec.json.Decoder(str).decode


class Viewed(NamedTuple):
    """A message read by the typed decoder: its role, its view, and (when asked for) what
    detection looks at, its long texts left out."""

    role: str
    view: MessageView
    shape: dict | None
    string_content: bool


def view_all(data: Any, depth: int, shapes: bool) -> list[Viewed] | None:
    """The views of every message of an array's bytes (`depth`: how deep its messages sit in their
    document; `shapes`: for detection), or None unless every one has a view: one decoder call."""
    try:
        messages = _ALL_DECODER.decode(data)
    except (msgspec.MsgspecError, RecursionError, ValueError):  # ValueError: not UTF-8
        return None
    viewed = [_viewed(message, depth, shapes) for message in messages]
    return None if None in viewed else viewed  # type: ignore[return-value]  # no None left


def view(data: Any, depth: int) -> Viewed | None:
    """The view of one message's bytes (`depth`: how deep the message sits in its document), or
    None when the message holds anything this module does not name."""
    try:
        message = _DECODER.decode(data)
    except (msgspec.MsgspecError, RecursionError, ValueError):  # ValueError: not UTF-8
        return None
    return _viewed(message, depth, True)


# The view of a short string content (`SHARED_TEXT_CHARS`), by its characters and flags
# (`text_flags`: two bits), made once: a view is three tuples (208 bytes). A longer one's view is its own.
_STRING_VIEWS: dict[int, MessageView] = {}


def _string_view(content: str) -> MessageView:
    chars, flags = len(content), text_flags(content)
    if chars >= SHARED_TEXT_CHARS:
        return MessageView((BlockSize(Text, chars, None, None, flags),))
    view = _STRING_VIEWS.get(key := chars << 2 | flags)
    if view is None:
        view = _STRING_VIEWS[key] = MessageView((BlockSize(Text, chars, None, None, flags),))
    return view


def _viewed(message: _Message, depth: int, shaped: bool) -> Viewed | None:
    role, content = sys.intern(message.role), message.content  # (the decoder makes each its own string: 55 bytes a message)
    if isinstance(content, str):
        return Viewed(role, _string_view(content), _string_shape(role, content) if shaped else None, True)
    # Positional BlockSizes, and shapes only when asked for: this runs for every message of a body.
    sizes, shapes = [], []
    inner = depth + 3
    try:
        for block in content:
            if isinstance(block, _Text):
                if block.cache_control or block.citations:
                    _check(block.cache_control, block.citations, depth=inner)
                text = _decode_string(block.text)  # msgspec.ValidationError is a ValueError
                sizes.append(BlockSize(Text, len(text), None, None, text_flags(text), _marks(block.cache_control)))
                if shaped:
                    shapes.append({"type": "text", "text": _stand_in(text)})
            elif isinstance(block, _ToolResult):
                if block.is_error or block.cache_control:
                    _check(block.is_error, block.cache_control, depth=inner)
                chars, inner_marks, listed = _result_size(block.content, inner)
                sizes.append(BlockSize(ToolResult, chars, block.tool_use_id, None, LISTED if listed else 0,
                                       _marks(block.cache_control) + inner_marks))
                if shaped:
                    shapes.append({"type": "tool_result"})
            elif isinstance(block, _ToolUse):
                if block.cache_control:
                    _check(block.cache_control, depth=inner)
                arguments = nested_value(bytes(block.input), inner) if block.input else None
                sizes.append(BlockSize(ToolCall, len(block.name) + len(compact_json(arguments)), block.id, sys.intern(block.name),
                                       0 if isinstance(arguments, dict) else NOT_AN_OBJECT, _marks(block.cache_control)))
                if shaped:
                    shapes.append({"type": "tool_use"})
            elif isinstance(block, _Thinking):
                signature = nested_value(bytes(block.signature), inner) if block.signature else None
                sizes.append(BlockSize(Thinking, _chars(block.thinking), None, None, 0 if signature else UNSIGNED))
                if shaped:
                    shapes.append({"type": "thinking"})
            else:
                sizes.append(BlockSize(RedactedThinking, len(block.data)))
                if shaped:
                    shapes.append({"type": "redacted_thinking"})
    except ValueError:
        return None
    return Viewed(role, MessageView(tuple(sizes)), {"role": role, "content": shapes} if shaped else None, False)


def _check(*values: Raw, depth: int) -> None:
    """ValueError unless each value the count does not look at is one `parse` would read (valid
    JSON, UTF-8, not too deep to write)."""
    for value in values:
        if value:
            nested_value(bytes(value), depth)


def _chars(string: Raw) -> int:
    """The characters of a JSON string left as its bytes (ValueError when it is none, or not
    UTF-8), decoded: a look at its bytes first (a copy of them, to count one of plain ASCII
    without escapes) took longer than the decoding."""
    return len(_decode_string(string))  # msgspec.ValidationError and UnicodeDecodeError are ValueErrors


def _marks(cache_control: Raw) -> int:
    """1 when the block names a cache_control (whatever its value: `check` counts the key), else 0."""
    return 1 if cache_control else 0


def _result_size(content: Raw, depth: int) -> tuple[int, int, bool]:
    """(characters, cache_control breakpoints of its text blocks, whether it is a list) of a tool
    result's content (`depth`: how deep it sits): a string, or a list of text blocks; ValueError
    when it is anything else."""
    if not content:
        return 0, 0, False  # no content: an empty string
    if memoryview(content)[:1].tobytes() == b"[":
        try:
            texts = _TEXTS_DECODER.decode(content)
        except (msgspec.MsgspecError, RecursionError) as error:
            raise ValueError(str(error)) from None
        _check(*(t.cache_control for t in texts), *(t.citations for t in texts), depth=depth + 2)
        return sum(_chars(t.text) for t in texts), sum(_marks(t.cache_control) for t in texts), True
    return _chars(content), 0, False


_NOT_BLANK = "…"  # what detection sees of a text that is not blank


def _stand_in(text: str) -> str:
    """What detection needs of a text: whether it is blank (`…` for any other: a text is not kept twice)."""
    return text if not text or text.isspace() else _NOT_BLANK


# The shape of a message of one text that is not blank, by its role, made once: a JSON Lines
# input's lines hold theirs until detection has read them all (a dict and a string, 250 bytes,
# where a short message is some 50 bytes of the file).
_STRING_SHAPES: dict[str, dict] = {}


def _string_shape(role: str, content: str) -> dict:
    if (stand_in := _stand_in(content)) != _NOT_BLANK:
        return {"role": role, "content": stand_in}
    shape = _STRING_SHAPES.get(role)
    if shape is None:
        shape = {"role": role, "content": _NOT_BLANK}
        if len(_STRING_SHAPES) < 64:  # (any string is a role to the decoder: a few are kept)
            _STRING_SHAPES[role] = shape
    return shape
