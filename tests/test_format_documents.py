"""The `anthropic` and `openai` formats: one JSON document (a request body, a bare array of
messages, or an envelope that holds them), read with its dialect, and written back with every key
outside the messages where it was, in the layout it had."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest

from transcompact.core.errors import ShapeError, UnknownFormat, UsageError
from transcompact.core.jsondata import BOM, parse
from transcompact.core.model import Message, Text
from transcompact.formats import anthropic, dumps, loads, openai

from .conftest import FIXTURES

ANTHROPIC_BODY = {
    "model": "claude-sonnet-4-5", "max_tokens": 1024,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
    "messages": [{"role": "user", "content": "Read a.py"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}]},
                 {"role": "assistant", "content": "It prints 1."}],
    "metadata": {"user_id": "u-1"},
}
OPENAI_BODY = {
    "model": "gpt-4o", "temperature": 0,
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Read a.py"},
                 {"role": "assistant", "content": None,
                  "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a.py"}'}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": "print(1)"},
                 {"role": "assistant", "content": "It prints 1."}],
    "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
}


def encode(value, indent: bool = False) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)


def without_last(transcript):
    return transcript.with_messages(transcript.messages[:-1])


# --- detection ----------------------------------------------------------------------------------


@pytest.mark.parametrize("document, format", [
    (ANTHROPIC_BODY, "anthropic"), (OPENAI_BODY, "openai"),
    (ANTHROPIC_BODY["messages"], "anthropic"), (OPENAI_BODY["messages"], "openai"),
    ({"history": OPENAI_BODY["messages"], "info": {"exit_status": "submitted"}}, "openai"),  # SWE-agent
], ids=["anthropic-body", "openai-body", "anthropic-array", "openai-array", "history-envelope"])
def test_a_document_is_read_in_the_format_of_its_dialect(document, format):
    data = encode(document)
    assert anthropic.detect(parse(data, "t.json")) is (format == "anthropic")
    assert openai.detect(parse(data, "t.json")) is (format == "openai")
    transcript = loads(data, "t.json")
    assert (transcript.format, transcript.dialect) == (format, format)
    messages = document if isinstance(document, list) else document.get("messages", document.get("history"))
    assert [m.raw for m in transcript.messages] == messages


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("anthropic/*.json")) + sorted(FIXTURES.glob("openai/*.json")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_document_fixture_reads_in_its_directory_s_format(path):
    assert loads(path.read_bytes(), path.name).format == path.parent.name


def test_a_document_with_no_list_of_messages_is_no_format():
    for document in ({"model": "m"}, {"messages": "hi"}, [1, 2], {"messages": [{"content": "no role"}]}):
        with pytest.raises(UnknownFormat):
            loads(encode(document), "t.json")


def test_messages_under_another_key_get_a_hint_naming_the_flag():
    with pytest.raises(UnknownFormat) as raised:
        loads(encode({"steps": OPENAI_BODY["messages"]}), "t.json")
    hint = raised.value.hint  # the setting spelled as the caller gives it: a flag, or the library's parameter
    assert hint.startswith("messages may sit under 'steps': try ") and hint.split(" try ")[1].replace("'", "").endswith("steps")


# --- --messages-path ------------------------------------------------------------------------------

NESTED = {"instance": "django-1", "trajectory": [{"step": 0, "messages": OPENAI_BODY["messages"], "score": 1}],
          "meta": {"seed": 7}}


def test_messages_path_reads_messages_nested_in_objects_and_arrays():
    data = encode(NESTED, indent=True) + b"\n"
    with pytest.raises(UnknownFormat):
        loads(data, "run.json")  # not found without the path
    transcript = loads(data, "run.json", messages_path="trajectory.0.messages")
    assert (transcript.format, len(transcript.messages)) == ("openai", 5)
    assert transcript.request == {"step": 0, "score": 1}  # the fields beside the messages
    out = dumps(without_last(transcript))
    assert orjson.loads(out) == {**NESTED, "trajectory": [{"step": 0, "messages": OPENAI_BODY["messages"][:-1], "score": 1}]}
    assert out.startswith(b'{\n  "instance"') and out.endswith(b"}\n")  # indented and ended as read


def test_messages_path_to_nothing_is_a_usage_error_naming_the_missing_key():
    with pytest.raises(UsageError) as raised:
        loads(encode(NESTED), "run.json", messages_path="trajectory.3.messages")
    assert "trajectory.3.messages" in str(raised.value) and str(raised.value).endswith(": the input has nothing at 3")


def test_messages_path_to_something_that_is_not_messages_is_no_format():
    with pytest.raises(UnknownFormat):
        loads(encode(NESTED), "run.json", messages_path="meta")


def test_messages_path_ending_inside_a_list_writes_back_there():
    # Was a crash on write: the list that holds the messages was treated as an object.
    runs = {"runs": [OPENAI_BODY["messages"][:1], OPENAI_BODY["messages"]], "seed": 7}
    transcript = loads(encode(runs), "runs.json", messages_path="runs.1")
    assert len(transcript.messages) == 5
    written = orjson.loads(dumps(without_last(transcript)))
    assert written == {**runs, "runs": [OPENAI_BODY["messages"][:1], OPENAI_BODY["messages"][:-1]]}


def test_messages_path_over_a_bare_array_and_an_empty_path():
    assert len(loads(encode([{"messages": OPENAI_BODY["messages"]}]), "a.json", messages_path="0.messages").messages) == 5
    assert len(loads(encode(OPENAI_BODY["messages"]), "a.json", messages_path="").messages) == 5


# --- read: system, tools, request fields ------------------------------------------------------------


def test_an_anthropic_body_reads_system_tools_and_the_other_fields():
    transcript = loads(encode(ANTHROPIC_BODY), "body.json")
    assert transcript.system == (Text("Be brief."),)
    assert transcript.tools == tuple(ANTHROPIC_BODY["tools"])
    assert transcript.request == {"model": "claude-sonnet-4-5", "max_tokens": 1024, "metadata": {"user_id": "u-1"}}


def test_an_openai_body_keeps_its_system_prompt_as_a_message():
    transcript = loads(encode(OPENAI_BODY), "body.json")
    assert transcript.system == () and transcript.messages[0].role == "system"
    assert transcript.request == {"model": "gpt-4o", "temperature": 0}


@pytest.mark.parametrize("body, error", [
    ({**ANTHROPIC_BODY, "system": 3}, "body.json: `system` must be a string or a list of text blocks, not a number"),
    ({**ANTHROPIC_BODY, "system": ["Be brief."]}, "body.json: system/0: a content block must be an object, not a string"),
    ({**ANTHROPIC_BODY, "messages": [*ANTHROPIC_BODY["messages"], {"role": "user", "content": 5}]},
     "body.json: message 4: `content` must be a string or a list of blocks, not a number"),
], ids=["system-number", "system-string-block", "content-number"])
def test_a_wrong_shape_in_a_body_names_the_file_and_where(body, error):
    with pytest.raises(ShapeError) as raised:
        loads(encode(body), "body.json")
    assert str(raised.value) == error


# --- write: the envelope kept -------------------------------------------------------------------------


@pytest.mark.parametrize("body", [ANTHROPIC_BODY, OPENAI_BODY], ids=["anthropic", "openai"])
def test_unchanged_bytes_come_back_as_they_were(body):
    data = encode(body, indent=True).replace(b'"model"', b'"model"  ')  # spacing orjson would not write
    assert dumps(loads(data, "body.json")) == data


@pytest.mark.parametrize("body", [ANTHROPIC_BODY, OPENAI_BODY], ids=["anthropic", "openai"])
def test_changed_messages_go_back_in_place_with_every_other_key_in_its_order(body):
    out = dumps(without_last(loads(encode(body), "body.json")))
    written = orjson.loads(out)
    assert list(written) == list(body)
    assert written == {**body, "messages": body["messages"][:-1]}


@pytest.mark.parametrize("indent, newline, bom", [(False, False, False), (True, True, False), (True, False, True)],
                         ids=["compact", "indented-newline", "bom"])
def test_a_rewritten_document_keeps_its_layout(indent, newline, bom):
    data = (BOM if bom else b"") + encode(ANTHROPIC_BODY, indent) + (b"\n" if newline else b"")
    out = dumps(without_last(loads(data, "body.json")))
    assert out.startswith(BOM) is bom and out.endswith(b"\n") is newline
    assert (b'\n  "model"' in out) is indent


def test_a_changed_system_prompt_keeps_its_block_fields_and_other_keys_stay():
    transcript = loads(encode(ANTHROPIC_BODY), "body.json")
    terse = replace(transcript.system[0], text="Be terse.")
    written = orjson.loads(dumps(replace(transcript, system=(terse,))))
    assert written["system"] == [{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}]
    assert written["messages"] == ANTHROPIC_BODY["messages"] and written["tools"] == ANTHROPIC_BODY["tools"]


def test_an_added_message_is_written_in_the_dialect():
    transcript = loads(encode(OPENAI_BODY), "body.json")
    written = orjson.loads(dumps(transcript.with_messages([*transcript.messages, Message("user", (Text("Thanks."),))])))
    assert written["messages"][-1] == {"role": "user", "content": "Thanks."}
    assert written["tools"] == OPENAI_BODY["tools"] and written["model"] == "gpt-4o"


def test_an_envelope_keeps_its_other_keys_when_the_messages_change():
    document = {"history": OPENAI_BODY["messages"], "info": {"exit_status": "submitted", "cost": 0.25}, "trajectory": []}
    written = orjson.loads(dumps(without_last(loads(encode(document), "run.json"))))
    assert written == {**document, "history": OPENAI_BODY["messages"][:-1]}


# --- --format picks between the document formats, not the shape -------------------------------------


def test_format_reads_a_document_in_the_other_dialect_but_never_lines_as_a_document():
    transcript = loads(encode(OPENAI_BODY["messages"][1:2]), "a.json", format="anthropic")
    assert (transcript.format, transcript.dialect) == ("anthropic", "anthropic")
    lines = b"\n".join(encode(m) for m in ANTHROPIC_BODY["messages"]) + b"\n"
    with pytest.raises(UnknownFormat, match="the input is not in the anthropic format"):
        loads(lines, "chat.jsonl", format="anthropic")
    with pytest.raises(UsageError, match="unknown format 'nosuch'"):
        loads(encode(ANTHROPIC_BODY), "body.json", format="nosuch")
