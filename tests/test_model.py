"""The model's values: an unread message is the same value as the message read at once."""

from __future__ import annotations

import pickle
from dataclasses import FrozenInstanceError

import orjson
import pytest

from transcompact.core.model import Message, Text, ToolCall
from transcompact.dialects import anthropic

DATA = b'{"role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"t1","name":"read","input":{"path":"a.py"}}]}'


def read_at_once() -> Message:
    return anthropic.read_message(orjson.loads(DATA), index=0)


def unread(reads: list[int]) -> Message:
    def read() -> Message:
        reads.append(1)
        return read_at_once()
    return Message.unread("assistant", view=None, data=DATA, read=read, line=3)


def test_an_unread_message_is_read_once_when_its_blocks_are_first_asked_for():
    reads: list[int] = []
    message = unread(reads)
    assert (message.role, message.line, message.data, message.is_read, reads) == ("assistant", 3, DATA, False, [])
    assert message.blocks == (Text("Reading."), ToolCall("t1", "read", {"path": "a.py"}))
    assert message.raw == orjson.loads(DATA) and message.origin is not None and message.is_read
    assert message.tool_calls == (ToolCall("t1", "read", {"path": "a.py"}),) and reads == [1]


def test_an_unread_message_equals_the_message_read_at_once():
    message = unread([])
    assert message == read_at_once()
    assert hash(Message("user", (Text("a"),), raw={"x": 1})) == hash(Message("user", (Text("a"),)))
    assert message != Message("user", message.blocks) and message != message.blocks
    assert repr(message) == repr(read_at_once())


def test_a_message_is_frozen():
    message = unread([])
    with pytest.raises(FrozenInstanceError):
        message.role = "user"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del message.line


def test_a_changed_message_keeps_what_it_was_read_from_but_not_its_content_nor_its_bytes():
    """Its other fields in their place; the content it was read with is written from its blocks."""
    message = unread([])
    same = message.with_blocks(message.blocks)
    assert same.raw is message.raw and same.origin is message.origin
    changed = message.with_blocks(message.blocks[:1])
    assert changed.raw == {**message.raw, "content": None} and list(changed.raw) == list(message.raw)
    assert changed.line == 3 and changed.data is None and changed.view is None and changed.is_read
    assert anthropic.write_message(changed) == {"role": "assistant", "content": [{"type": "text", "text": "Reading."}]}
    assert message.replaced("user", ()).role == "user"


def test_an_unread_message_travels_to_another_process_read():
    copy = pickle.loads(pickle.dumps(unread([])))
    assert copy == read_at_once() and copy.raw == orjson.loads(DATA) and copy.line == 3 and copy.is_read
