"""The Anthropic dialect on its own: each content block kind read into the model and written back,
unknown fields kept where they were, unchanged values given back as the very objects read, and a
wrong shape refused with a ShapeError naming where it is (message, then the path in its content)."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transcompact.core.errors import ShapeError
from transcompact.core.model import (
    Document,
    Image,
    Message,
    Opaque,
    RedactedThinking,
    ServerToolCall,
    ServerToolResult,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from transcompact.dialects import anthropic as codec

# --- reading each block kind ---------------------------------------------------------------------

BLOCKS = [
    ({"type": "text", "text": "Hello."}, Text("Hello.")),
    ({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
     ToolCall("toolu_1", "read_file", {"path": "a.py"})),
    ({"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}, ToolResult("toolu_1", "print(1)")),
    ({"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a"}], "is_error": True},
     ToolResult("toolu_1", (Text("a"),), True)),
    ({"type": "tool_result", "tool_use_id": "toolu_1"}, ToolResult("toolu_1", "")),
    ({"type": "thinking", "thinking": "Let me see.", "signature": "c2ln"}, Thinking("Let me see.", "c2ln")),
    ({"type": "redacted_thinking", "data": "ZW5j"}, RedactedThinking("ZW5j")),
    ({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
     Image("image/png", "iVBORw0KGgo=")),
    ({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
     Image(url="https://example.com/a.png")),
    ({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}},
     Document("application/pdf", "JVBERi0=")),
    ({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rfc 9110"}},
     ServerToolCall("server_tool_use", "srvtoolu_1", "web_search", {"query": "rfc 9110"})),
    ({"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "lookup", "server_name": "db", "input": {}},
     ServerToolCall("mcp_tool_use", "mcptoolu_1", "lookup", {})),
    ({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
     ServerToolResult("web_search_tool_result", "srvtoolu_1")),
    ({"type": "search_result", "source": "s", "title": "t", "content": []}, Opaque("search_result")),
    ({"type": "tool_result", "tool_use_id": "toolu_1", "content": 7}, Opaque("tool_result")),  # kept, not read
    ({"type": "text"}, Opaque("text")),  # no text: not a Text block, written back as it was
    ({"text": "no type"}, Opaque(None)),
]


@pytest.mark.parametrize("wire, block", BLOCKS, ids=lambda v: v.get("type", "untyped") if isinstance(v, dict) else "")
def test_each_block_kind_is_read_and_an_unchanged_one_written_back_as_the_same_object(wire, block):
    read = codec.read_block(wire)
    assert read == block and type(read) is type(block)
    assert read.raw is wire
    assert codec.write_block(read) is wire


@pytest.mark.parametrize("block, wire", [
    (Text("hi"), {"type": "text", "text": "hi"}),
    (ToolCall("toolu_9", "bash", {"command": "ls"}), {"type": "tool_use", "id": "toolu_9", "name": "bash", "input": {"command": "ls"}}),
    (ToolResult("toolu_9", "[missing]", True), {"type": "tool_result", "tool_use_id": "toolu_9", "content": "[missing]", "is_error": True}),
    (ToolResult("toolu_9", (Text("a"), Image("image/png", "AA=="))),
     {"type": "tool_result", "tool_use_id": "toolu_9",
      "content": [{"type": "text", "text": "a"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}]}),
    (Thinking("hm"), {"type": "thinking", "thinking": "hm"}),
    (RedactedThinking("ZW5j"), {"type": "redacted_thinking", "data": "ZW5j"}),
    (Image(url="https://x/y.png"), {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}),
    (Document("application/pdf", "JVBERi0="),
     {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}),
], ids=lambda v: type(v).__name__ if not isinstance(v, dict) else "")
def test_a_block_an_operation_made_is_written_in_the_wire_shape(block, wire):
    assert codec.write_block(block) == wire
    assert codec.read_block(wire) == block


# --- unknown fields are kept ---------------------------------------------------------------------


def test_a_changed_block_keeps_its_unknown_fields_in_their_place():
    wire = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x" * 100, "cache_control": {"type": "ephemeral"},
            "is_error": False, "x-trace": 7}
    block = codec.read_block(wire)
    written = codec.write_block(replace(block, content="[cleared]"))
    assert written == {**wire, "content": "[cleared]"}
    assert list(written) == list(wire)  # same key order: a diff shows one changed value
    assert wire["content"] == "x" * 100  # the dict read is never changed


def test_a_result_whose_error_flag_is_cleared_loses_the_key():
    block = codec.read_block({"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": True})
    assert codec.write_block(replace(block, is_error=None)) == {"type": "tool_result", "tool_use_id": "t", "content": "boom"}


def test_a_changed_text_inside_a_result_keeps_the_other_blocks_as_read():
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}, "cache_control": {}}
    wire = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "long", "citations": []}, image]}
    block = codec.read_block(wire)
    changed = replace(block, content=(replace(block.content[0], text="short"), block.content[1]))
    written = codec.write_block(changed)
    assert written["content"][0] == {"type": "text", "text": "short", "citations": []}
    assert written["content"][1] is image


def test_an_unchanged_message_is_the_object_read_and_a_changed_one_keeps_its_other_fields():
    wire = {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "thinking", "thinking": "hm", "signature": "c2ln"}, {"type": "text", "text": "Done."}],
            "usage": {"input_tokens": 5}}
    message = codec.read_message(wire, index=0)
    assert codec.is_unchanged(message) and codec.write_message(message) is wire
    without_thinking = message.with_blocks(message.blocks[1:])
    assert not codec.is_unchanged(without_thinking)
    written = codec.write_message(without_thinking)
    assert written == {**wire, "content": [{"type": "text", "text": "Done."}]}
    assert written["content"][0] is wire["content"][1]


@pytest.mark.parametrize("content, blocks, rewritten", [
    ("Fix it.", (Text("Fix it."),), "Fix it. Now."),  # a string stays a string
    ([{"type": "text", "text": "Fix it."}], (Text("Fix it."),), [{"type": "text", "text": "Fix it. Now."}]),
])
def test_string_content_is_written_back_as_a_string(content, blocks, rewritten):
    message = codec.read_message({"role": "user", "content": content}, index=0)
    assert message.blocks == blocks
    assert codec.write_message(message.with_blocks((Text("Fix it. Now."),)))["content"] == rewritten


def test_null_content_is_no_blocks():
    assert codec.read_message({"role": "assistant", "content": None}, index=0).blocks == ()


def test_the_system_prompt_as_a_string_or_blocks():
    assert codec.read_system("Be brief.") == (Text("Be brief."),)
    blocks = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert codec.read_system(blocks) == (Text("Be brief."),)
    assert codec.write_system(codec.read_system(blocks), blocks) is blocks
    assert codec.write_system((Text("Be terse."),), "Be brief.") == "Be terse."
    terse = replace(codec.read_system(blocks)[0], text="Be terse.")
    assert codec.write_system((terse,), blocks) == [{**blocks[0], "text": "Be terse."}]  # cache_control kept
    assert codec.read_system(None) == ()


# --- wrong shapes: a ShapeError naming where ------------------------------------------------------


@pytest.mark.parametrize("message, error", [
    ("hello", "message 4: a message must be an object, not a string"),
    ({"content": "hi"}, "message 4: a message needs a string `role`"),
    ({"role": 1, "content": "hi"}, "message 4: a message needs a string `role`"),
    ({"role": "user", "content": 7}, "message 4: `content` must be a string or a list of blocks, not a number"),
    ({"role": "user", "content": {"type": "text", "text": "hi"}},
     "message 4: `content` must be a string or a list of blocks, not an object"),
    ({"role": "user", "content": [{"type": "text", "text": "a"}, "b"]},
     "message 4: content/1: a content block must be an object, not a string"),
    ({"role": "user", "content": [{"type": 3}]}, "message 4: content/0: a block's `type` must be a string, not a number"),
    ({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "a"}, None]}]},
     "message 4: content/0/content/1: a content block must be an object, not null"),
    ({"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": ["image/png"], "data": "AA"}}]},
     "message 4: content/0: `source.media_type` must be a string, not an array"),
], ids=["not-an-object", "no-role", "role-number", "content-number", "content-object", "block-string", "type-number",
        "nested-result-block", "media-type-array"])
def test_a_wrong_shape_is_a_shape_error_naming_the_path(message, error):
    with pytest.raises(ShapeError) as raised:
        codec.read_message(message, index=4)
    assert str(raised.value) == error


def test_a_system_prompt_of_the_wrong_shape_is_named():
    with pytest.raises(ShapeError, match=r"^`system` must be a string or a list of text blocks, not a number$"):
        codec.read_system(3)
    with pytest.raises(ShapeError, match=r"^system/1: a content block must be an object, not a string$"):
        codec.read_system([{"type": "text", "text": "a"}, "b"])


# --- round trip: what an operation builds reads back as built -------------------------------------

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
ids = st.from_regex(r"[A-Za-z0-9_]{1,10}", fullmatch=True)
json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | text,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=6)
inputs = st.dictionaries(text, json_values, max_size=3)
base64 = st.from_regex(r"[A-Za-z0-9+/]{0,12}={0,2}", fullmatch=True)
images = st.one_of(st.builds(Image, st.sampled_from(["image/png", "image/jpeg"]), base64),
                   st.builds(lambda url: Image(url=url), text))
documents = st.one_of(st.builds(Document, st.just("application/pdf"), base64), st.builds(lambda url: Document(url=url), text))
results = st.builds(ToolResult, ids, text | st.tuples(st.builds(Text, text)) | st.lists(st.builds(Text, text) | images, max_size=3).map(tuple),
                    st.sampled_from([None, True, False]))
blocks = st.one_of(
    st.builds(Text, text), st.builds(ToolCall, ids, text, inputs), results, st.builds(Thinking, text, st.none() | text),
    st.builds(RedactedThinking, base64), images, documents,
    st.builds(ServerToolCall, st.sampled_from(["server_tool_use", "mcp_tool_use"]), ids, text, inputs),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["user", "assistant"]), st.lists(blocks, max_size=5))
def test_a_message_an_operation_builds_reads_back_as_built(role, built):
    message = Message(role, tuple(built))
    wire = orjson.loads(orjson.dumps(codec.write_message(message)))
    assert codec.read_message(wire, index=0) == message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(blocks, min_size=1, max_size=5), st.data())
def test_changing_one_block_changes_only_that_block_on_the_wire(built, data):
    """Read, change one block, write: every other block is the very object read."""
    wire = {"role": "assistant", "content": [codec.write_block(b) for b in built], "id": "msg_1"}
    message = codec.read_message(orjson.loads(orjson.dumps(wire)), index=0)
    i = data.draw(st.integers(0, len(built) - 1))
    changed = message.with_blocks(message.blocks[:i] + (Text("[changed]"),) + message.blocks[i + 1:])
    written = codec.write_message(changed)
    assert written["id"] == "msg_1" and written["content"][i] == {"type": "text", "text": "[changed]"}
    assert all(written["content"][j] is message.raw["content"][j] for j in range(len(built)) if j != i)


def test_a_server_tool_call_whose_name_is_not_a_string_is_kept_as_it_is():
    """A name that is a number (here beyond 64 bits) is not made a string: its text would differ
    from one reading to the next, and a rewrite would read back as other messages."""
    from transcompact.core.model import Opaque
    from transcompact.dialects.anthropic import read_block

    block = {"type": "server_tool_use", "id": "srvtoolu_1", "name": 18446744073709551616, "input": {}}
    assert isinstance(read_block(block, None, "message 0: content/0"), Opaque)
