"""The OpenAI Chat Completions dialect on its own: content as a string, parts, null or absent, each
written back the way it was read; tool calls (and the legacy function_call) with their JSON
arguments; tool results; unknown fields and parts kept; a wrong shape refused naming where."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transcompact.core.errors import ShapeError
from transcompact.core.model import Document, Image, Message, Opaque, Text, ToolCall, ToolResult
from transcompact.dialects import openai as codec


def read(message: dict, index: int = 0) -> Message:
    return codec.read_message(message, index=index)


# --- content: string, parts, null, absent -------------------------------------------------------


@pytest.mark.parametrize("wire, blocks", [
    ({"role": "user", "content": "Hi."}, (Text("Hi."),)),
    ({"role": "user", "content": [{"type": "text", "text": "Hi."}]}, (Text("Hi."),)),
    ({"role": "assistant", "content": None}, ()),
    ({"role": "assistant"}, ()),
], ids=["string", "parts", "null", "absent"])
def test_each_content_shape_is_read_and_written_back_as_it_was(wire, blocks):
    message = read(wire)
    assert message.blocks == blocks
    assert codec.write_message(message) is wire
    # Emptied, each shape stays itself: "" or [], null, no key.
    emptied = codec.write_message(message.with_blocks(()))
    assert emptied == {"role": wire["role"], **({"content": {str: "", list: []}.get(type(wire["content"]), None)}
                                                 if "content" in wire else {})}


def test_a_changed_string_stays_a_string_and_changed_parts_stay_parts():
    assert codec.write_message(read({"role": "user", "content": "a"}).with_blocks((Text("b"),)))["content"] == "b"
    parts = read({"role": "user", "content": [{"type": "text", "text": "a", "x-note": 1}]})
    assert codec.write_message(parts.with_blocks((replace(parts.blocks[0], text="b"),)))["content"] == [
        {"type": "text", "text": "b", "x-note": 1}]


def test_parts_read_into_images_and_documents_and_unknown_parts_kept():
    parts = [{"type": "text", "text": "Look."},
             {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "high"}},
             {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
             {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
             {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]
    message = read({"role": "user", "content": parts})
    assert message.blocks == (Text("Look."), Image("image/png", "iVBORw0KGgo="), Image(url="https://example.com/a.png"),
                              Document("application/pdf", "JVBERi0="), Opaque("input_audio"))
    written = codec.write_message(message.with_blocks((Text("See."), *message.blocks[1:])))
    assert written["content"][0] == {"type": "text", "text": "See."}
    assert all(a is b for a, b in zip(written["content"][1:], parts[1:]))  # the others as read, detail and filename kept


@pytest.mark.parametrize("block, part", [
    (Image("image/png", "AA=="), {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}),
    (Image(url="https://x/y.png"), {"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
    (Document("application/pdf", "JVBERi0="), {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0="}}),
    (Text("hi"), {"type": "text", "text": "hi"}),
], ids=["image-data", "image-url", "document", "text"])
def test_a_part_an_operation_made_is_written_in_the_wire_shape(block, part):
    assert codec.write_part(block) == part
    assert codec.read_part(part, "") == block


# --- tool calls and results -------------------------------------------------------------------------

CALLS = {"role": "assistant", "content": None, "reasoning_content": "two reads",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py",  "n": 1}'}},
                        {"id": "call_2", "type": "function", "function": {"name": "grep", "arguments": "not json"}}]}


def test_tool_calls_are_read_with_their_arguments_decoded():
    message = read(CALLS)
    assert message.blocks == (ToolCall("call_1", "read", {"path": "a.py", "n": 1}), ToolCall("call_2", "grep", "not json"))
    assert codec.write_message(message) is CALLS


def test_a_removed_call_leaves_the_others_with_their_arguments_spelled_as_they_were():
    message = read(CALLS)
    written = codec.write_message(message.with_blocks(message.blocks[:1]))
    assert written == {**CALLS, "tool_calls": CALLS["tool_calls"][:1]}
    assert written["tool_calls"][0]["function"]["arguments"] == '{"path": "a.py",  "n": 1}'  # not re-encoded


def test_changed_arguments_are_encoded_again_and_removing_every_call_removes_the_key():
    message = read(CALLS)
    cleared = codec.write_message(message.with_blocks((replace(message.blocks[0], input={}), message.blocks[1])))
    assert [c["function"]["arguments"] for c in cleared["tool_calls"]] == ["{}", "not json"]
    assert codec.write_message(message.with_blocks(())) == {"role": "assistant", "content": None, "reasoning_content": "two reads"}


def test_a_call_without_an_id_is_written_without_one():
    wire = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    message = read(wire)
    assert message.blocks[-1] == ToolCall("", "f", {})
    written = codec.write_message(message.with_blocks((Text("Calling."), message.blocks[-1])))
    assert written["tool_calls"] == wire["tool_calls"]


def test_a_legacy_function_call_and_its_function_result():
    call = {"role": "assistant", "content": None, "function_call": {"name": "lookup", "arguments": '{"q": "x"}'}}
    answer = {"role": "function", "name": "lookup", "content": "found"}
    assert read(call).blocks == (ToolCall(codec.LEGACY_CALL_ID, "lookup", {"q": "x"}),)
    result = read(answer, 1)
    assert result.blocks == (ToolResult(codec.LEGACY_CALL_ID, "found"),)
    assert codec.write_message(result.with_blocks((replace(result.blocks[0], content="[cleared]"),))) == {
        **answer, "content": "[cleared]"}
    assert codec.write_message(read(call).with_blocks(())) == {"role": "assistant", "content": None}


@pytest.mark.parametrize("wire, result, rewritten", [
    ({"role": "tool", "tool_call_id": "call_1", "content": "out", "name": "read"},
     ToolResult("call_1", "out"), {"role": "tool", "tool_call_id": "call_1", "content": "[cleared]", "name": "read"}),
    ({"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "out"}]},
     ToolResult("call_1", (Text("out"),)), {"role": "tool", "tool_call_id": "call_1", "content": "[cleared]"}),
    ({"role": "tool", "tool_call_ids": ["call_7"], "content": "out"},  # SWE-agent names the call in a list
     ToolResult("call_7", "out"), {"role": "tool", "tool_call_ids": ["call_7"], "content": "[cleared]"}),
], ids=["string", "parts", "swe-agent-ids"])
def test_a_tool_message_is_one_result_written_back_in_its_fields(wire, result, rewritten):
    message = read(wire)
    assert message.blocks == (result,) and message.is_tool_result_message
    assert codec.write_message(message) is wire
    assert codec.write_message(message.with_blocks((replace(result, content="[cleared]"),))) == rewritten


def test_a_tool_message_an_operation_adds_is_written_whole():
    added = Message("tool", (ToolResult("call_1", "[missing]"),))
    assert codec.write_message(added) == {"role": "tool", "content": "[missing]", "tool_call_id": "call_1"}


# --- wrong shapes: a ShapeError naming where ------------------------------------------------------

CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize("message, error", [
    (["user", "hi"], "message 2: a message must be an object, not an array"),
    ({"content": "hi"}, "message 2: a message needs a string `role`"),
    ({"role": "user", "content": 7}, "message 2: `content` must be a string, an array of parts or null, not a number"),
    ({"role": "user", "content": ["hi"]}, "message 2: content/0: a content part must be an object, not a string"),
    ({"role": "user", "content": [{"type": "text", "text": "a"}, {"type": ["image_url"]}]},
     "message 2: content/1: a part's `type` must be a string, not an array"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": 5}}]},
     "message 2: content/0: `image_url.url` must be a string, not a number"),
    ({"role": "tool", "tool_call_id": 1, "content": "x"}, "message 2: `tool_call_id` must be a string, not a number"),
    ({"role": "assistant", "tool_calls": CALL}, "message 2: `tool_calls` must be an array, not an object"),
    ({"role": "assistant", "function_call": "f"}, "message 2: `function_call` must be an object, not a string"),
    ({"role": "assistant", "tool_calls": [CALL, "c2"]}, "message 2: tool_calls/1: a tool call must be an object, not a string"),
    ({"role": "assistant", "tool_calls": [{**CALL, "id": None}, {**CALL, "id": 2}]},
     "message 2: tool_calls/1: `id` must be a string, not a number"),
    ({"role": "assistant", "tool_calls": [{**CALL, "function": "f"}]}, "message 2: tool_calls/0: `function` must be an object, not a string"),
    ({"role": "assistant", "tool_calls": [{**CALL, "function": {"name": ["f"]}}]},
     "message 2: tool_calls/0: `function.name` must be a string, not an array"),
], ids=["not-an-object", "no-role", "content-number", "part-string", "part-type", "image-url", "tool-call-id",
        "tool-calls-object", "function-call-string", "call-string", "call-id", "function-string", "function-name"])
def test_a_wrong_shape_is_a_shape_error_naming_the_path(message, error):
    with pytest.raises(ShapeError) as raised:
        read(message, 2)
    assert str(raised.value) == error


# --- round trip: what an operation builds reads back as built -------------------------------------

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
ids = st.from_regex(r"call_[A-Za-z0-9]{1,8}", fullmatch=True)
json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | text,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=6)
base64 = st.from_regex(r"[A-Za-z0-9+/]{1,12}={0,2}", fullmatch=True)
parts = st.one_of(st.builds(Text, text), st.builds(Image, st.sampled_from(["image/png", "image/webp"]), base64),
                  st.builds(lambda url: Image(url=url), st.from_regex(r"https://[a-z]{1,8}\.example/[a-z]{0,8}", fullmatch=True)),
                  st.builds(Document, st.just("application/pdf"), base64))
calls = st.builds(ToolCall, ids, text, st.dictionaries(text, json_values, max_size=3))
messages = st.one_of(
    st.builds(lambda p: Message("user", tuple(p)), st.lists(parts, min_size=1, max_size=4)),
    st.builds(lambda p, c: Message("assistant", (*p, *c)), st.lists(parts, min_size=1, max_size=3), st.lists(calls, max_size=3)),
    st.builds(lambda i, c: Message("tool", (ToolResult(i, c),)), ids, text | st.lists(parts, max_size=3).map(tuple)),
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages)
def test_a_message_an_operation_builds_reads_back_as_built(message):
    wire = orjson.loads(orjson.dumps(codec.write_message(message)))
    assert read(wire) == message
