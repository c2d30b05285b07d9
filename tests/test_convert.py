"""Conversion (`--to`): the active view of any readable format as a plain request body that passes
`check`, keeping every user text and every tool call with its result."""

from __future__ import annotations

import json
from collections import Counter

import orjson
import pytest

from transcompact import check, convert, dumps, loads
from transcompact.cli.options import CONVERSION_TARGETS
from transcompact.core.errors import UsageError
from transcompact.core.model import ASSISTANT, USER, Text, ToolCall, ToolResult, result_text
from transcompact.counting.counter import server_compaction
from transcompact.ops.convert import TARGETS
from transcompact.ops.validity.check import errors

from .builders import run_cli as run
from .conftest import CORPUS, FIXTURES, ROOT, fixture_files, supported_corpus_files


def body(messages, **fields) -> bytes:
    return orjson.dumps({**fields, "messages": messages})


def active_messages(transcript):
    """The messages the API reads: those after the last compaction block, as the conversion takes them."""
    found = server_compaction(transcript.messages)
    if found is None:
        return transcript.messages
    index, position = found
    messages = transcript.messages
    return (messages[index].with_blocks(messages[index].blocks[position + 1:]),) + messages[index + 1:]


def user_texts(messages) -> Counter:
    return Counter(b.text for m in messages if m.role == USER for b in m.blocks if isinstance(b, Text) and b.text.strip())


def tool_pairs(messages) -> Counter:
    """(tool name, result text) of every call answered by a result, whatever the dialect puts them in."""
    names, pairs = {}, Counter()
    for m in messages:
        for b in m.blocks:
            if isinstance(b, ToolCall):
                names[b.id] = b.name
            elif isinstance(b, ToolResult) and b.tool_call_id in names:
                pairs[names[b.tool_call_id], result_text(b)] += 1
    return pairs


@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("path", fixture_files())
def test_every_fixture_converts_to_every_target_and_passes_check(path, to):
    transcript = loads(path.read_bytes(), path.name)
    converted = convert(transcript, to)
    assert converted.format == to and errors(check(converted)) == []
    assert loads(dumps(converted), "out", format=to).messages == converted.messages  # the bytes say what it holds
    assert user_texts(converted.messages) >= user_texts(active_messages(transcript))
    assert tool_pairs(converted.messages) >= tool_pairs(active_messages(transcript))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not present")
@pytest.mark.parametrize("path", supported_corpus_files(read_only=True))
def test_every_readable_corpus_file_converts_and_passes_check(path):
    transcript = loads(path.read_bytes(), path.name)
    for to in ("anthropic", "openai"):
        converted = convert(transcript, to)
        assert errors(check(converted)) == [], to
        assert tool_pairs(converted.messages) >= tool_pairs(active_messages(transcript)), to


def test_the_command_line_offers_the_targets_convert_takes():
    assert CONVERSION_TARGETS == TARGETS


def test_an_unknown_target_is_a_usage_error():
    transcript = loads(body([{"role": "user", "content": "hi"}]))
    with pytest.raises(UsageError, match="to='gemini'"):
        convert(transcript, "gemini")


# --- Anthropic → OpenAI ---------------------------------------------------------------------------

ANTHROPIC_LOOP = body([
    {"role": "user", "content": "Look at the screen."},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "A screenshot first.", "signature": "sig"},
        {"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "1280x800"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        ]},
        {"type": "text", "text": "What do you see?"},
    ]},
], system="Be brief.", tools=[{"name": "screenshot", "description": "Take one", "input_schema": {"type": "object"}}])


def test_anthropic_to_openai_maps_system_results_images_and_tools():
    out = orjson.loads(dumps(convert(loads(ANTHROPIC_LOOP), "openai")))
    assert out["tools"] == [{"type": "function", "function": {"name": "screenshot", "description": "Take one",
                                                              "parameters": {"type": "object"}}}]
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    assert out["messages"][0]["content"] == "Be brief."
    assert out["messages"][2]["content"] is None  # the thinking is dropped: Chat Completions has no place for it
    assert out["messages"][2]["tool_calls"][0]["function"] == {"name": "screenshot", "arguments": "{}"}
    assert out["messages"][3] == {"role": "tool", "content": "1280x800", "tool_call_id": "toolu_1"}
    # A tool message holds text: the result's image goes to the user turn after it.
    assert [part["type"] for part in out["messages"][4]["content"]] == ["image_url", "text"]


def test_a_responses_input_s_functions_become_each_target_s_tools():
    """The Responses API writes a function flat (`name` beside `type`): Chat Completions wants it
    under `function`, the Messages API as `input_schema`; a custom or built-in tool has no
    counterpart (found using --to as a user: copied flat to openai, all dropped for anthropic)."""
    source = loads((FIXTURES / "responses/tool-loop.json").read_bytes(), "tool-loop.json")
    shell = next(tool for tool in source.tools if tool.get("name") == "shell")
    to_openai = json.loads(dumps(convert(source, "openai")))["tools"]
    assert [tool["function"]["name"] for tool in to_openai] == ["shell", "read_file"]
    assert to_openai[0] == {"type": "function", "function": {key: value for key, value in shell.items() if key != "type"}}
    to_anthropic = json.loads(dumps(convert(source, "anthropic")))["tools"]
    assert to_anthropic[0] == {"name": "shell", "description": shell["description"], "input_schema": shell["parameters"]}
    assert [tool["name"] for tool in to_anthropic] == ["shell", "read_file"]


def test_jsonl_is_openai_messages_one_a_line():
    data = dumps(convert(loads(ANTHROPIC_LOOP), "jsonl"))
    lines = [json.loads(line) for line in data.decode().splitlines()]
    assert [line["role"] for line in lines] == ["system", "user", "assistant", "tool", "user"]
    assert data.endswith(b"\n") and loads(data, "out.jsonl").format == "jsonl"


def test_anthropic_to_anthropic_keeps_signed_thinking_and_drops_the_request_parameters():
    data = body([
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "unsigned"}, {"type": "text", "text": "A"}]},
        {"role": "user", "content": "Again."},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "signed", "signature": "s"},
                                          {"type": "text", "text": "B"}]},
    ], model="claude-sonnet-4-5", max_tokens=100)
    out = orjson.loads(dumps(convert(loads(data), "anthropic")))
    assert list(out) == ["messages"]  # the caller sets the model and its parameters for the provider it replays against
    assert out["messages"][1]["content"] == [{"type": "text", "text": "A"}]  # unsigned thinking is refused by the API
    assert out["messages"][3]["content"][0] == {"type": "thinking", "thinking": "signed", "signature": "s"}


def test_a_compaction_block_leaves_its_summary_and_what_follows_it():
    data = body([
        {"role": "user", "content": "Old request."},
        {"role": "assistant", "content": [{"type": "compaction", "content": "The story so far."},
                                          {"type": "text", "text": "Continuing."}]},
        {"role": "user", "content": "Next."},
    ], context_management={"edits": []})
    converted = convert(loads(data), "openai")
    texts = [(m.role, b.text) for m in converted.messages for b in m.blocks]
    assert texts[0][0] == USER and "The story so far." in texts[0][1] and "Old request." not in texts[0][1]
    assert texts[1:] == [(ASSISTANT, "Continuing."), (USER, "Next.")]


# --- OpenAI → Anthropic ---------------------------------------------------------------------------

def test_openai_to_anthropic_maps_system_tool_messages_and_legacy_calls():
    data = body([
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Use tools."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": "not json"}},
        ]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "rainy"},
        {"role": "assistant", "content": None, "function_call": {"name": "clock", "arguments": "{}"}},
        {"role": "function", "name": "clock", "content": "noon"},
    ], tools=[{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}},
              {"type": "web_search_preview"}])
    converted = convert(loads(data), "anthropic")
    out = orjson.loads(dumps(converted))
    assert out["system"] == [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Use tools."}]
    assert out["tools"] == [{"name": "weather", "input_schema": {"type": "object"}}]  # OpenAI's own tools cannot go
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user", "assistant", "user"]
    calls = out["messages"][1]["content"]
    assert calls[1]["input"] == {"input": "not json"}  # the API takes an object
    assert [b["tool_use_id"] for b in out["messages"][2]["content"]] == ["call_1", "call_2"]  # one user turn
    legacy = out["messages"][3]["content"][0]
    assert legacy["name"] == "clock" and out["messages"][4]["content"][0]["tool_use_id"] == legacy["id"]


def test_a_conversation_that_opens_with_the_assistant_gets_a_user_message_first():
    data = orjson.dumps([{"role": "system", "content": "s"}, {"role": "assistant", "content": "Hello."},
                         {"role": "user", "content": "Hi."}])
    out = orjson.loads(dumps(convert(loads(data), "anthropic")))
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]


# --- the command line -------------------------------------------------------------------------------

@pytest.mark.parametrize("to", TARGETS)
@pytest.mark.parametrize("command", [["prune"], ["repair"], ["compact", "--emergency", "--force"]])
def test_each_rewriting_command_writes_the_target(command, to, in_root):
    result = run(*command, "--to", to, "fixtures/claude-code/broken-session.jsonl")
    assert result.exit_code == 0, result.output
    written = loads(result.stdout_bytes, "out", format=to)
    assert written.dialect == ("anthropic" if to == "anthropic" else "openai") and errors(check(written)) == []
    assert run("check", "--format", to, "-", input=result.stdout_bytes).exit_code == 0


def test_the_target_comes_from_the_environment_too(in_root):
    result = run("repair", "fixtures/openai/orphans.json", env={"TRANSCOMPACT_TO": "jsonl"})
    assert result.exit_code == 0 and result.stdout.startswith('{"role":"user"')


def test_the_output_directory_gets_the_extension_of_the_target(tmp_path, in_root):
    out = tmp_path / "out"
    result = run("prune", "--to", "anthropic", "--output-dir", str(out), "-j", "1", "fixtures/jsonl", "fixtures/pi")
    assert result.exit_code == 0, result.output
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    assert written == ["2025-11-20T23-00-00-000Z_2c4e6a8b-1d3f-4b5c-9e7a-0f2d4b6c8e35.json",
                       "2025-12-20T08-00-00-000Z_5b8d1f3a-9c2e-4a6b-8d0f-1e3a5c7b9d24.json",
                       "2026-01-10T09-00-00-000Z_4f1c2a9e-6b1d-4c0e-9a51-0c3f5e2b7d11.json",
                       "2026-01-11T10-00-00-000Z_7a0e4c2b-3d5f-4e8a-b1c9-2f6d8e0a4b13.json", "chat.json"]
    for path in out.rglob("*"):
        assert errors(check(loads(path.read_bytes(), path.name, format="anthropic"))) == []


def test_a_batch_converts_every_file_in_parallel(tmp_path):
    out = tmp_path / "out"
    result = run("compact", "--emergency", "--to", "openai", "--output-dir", str(out), "-j", "2",
                 str(FIXTURES / "anthropic"), str(FIXTURES / "codex"))
    assert result.exit_code == 0, result.output
    assert len(list(out.glob("*.json"))) == len(list((FIXTURES / "anthropic").glob("*"))) + len(list((FIXTURES / "codex").glob("*")))


def test_to_refuses_in_place_and_the_archive(tmp_path):
    source = tmp_path / "s.json"
    source.write_bytes((FIXTURES / "anthropic/tool-loop.json").read_bytes())
    for command in (["prune"], ["repair"], ["compact"]):
        result = run(*command, "--to", "openai", "-i", str(source))
        assert result.exit_code == 2 and "-i and --to cannot be used together" in result.stderr
    result = run("prune", "--to", "openai", "--archive", str(tmp_path / "a.jsonl"), str(source))
    assert result.exit_code == 2 and "--archive and --to" in result.stderr
    assert source.read_bytes() == (ROOT / "fixtures/anthropic/tool-loop.json").read_bytes()


def test_an_empty_view_converts_to_an_empty_request_but_not_to_an_empty_file():
    transcript = loads(body([]))
    assert orjson.loads(dumps(convert(transcript, "anthropic"))) == {"messages": []}
    result = run("repair", "--to", "jsonl", "-", input=body([]))
    assert result.exit_code == 5 and "no message to write" in result.stderr


NUMBERS = '{"order_id": 18446744073709551617, "amount": 1.50, "scale": 1e5, "huge": 1e400, "zero": -0}'


@pytest.mark.parametrize("to", ["anthropic", "openai", "jsonl"])
def test_a_converted_calls_numbers_are_written_as_they_were(to):
    """Found using --to as a user: OpenAI's arguments gave `1.8446744073709552e+19` and `1.5` to
    Anthropic, `1e400` wrapped as text; Anthropic's `1.50` stopped the conversion to OpenAI as a bug."""
    as_openai = body([{"role": "user", "content": "go"},
                      {"role": "assistant", "content": None, "tool_calls": [
                          {"id": "call_1", "type": "function", "function": {"name": "pay", "arguments": NUMBERS}}]},
                      {"role": "tool", "tool_call_id": "call_1", "content": "ok"}])
    as_anthropic = b'{"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", ' \
        b'"id": "toolu_1", "name": "pay", "input": ' + NUMBERS.encode() + b'}]}, {"role": "user", "content": [' \
        b'{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]}'
    for source in (as_openai, as_anthropic):
        written = dumps(convert(loads(source), to))
        for number in (b"18446744073709551617", b"1.50", b"1e5", b"1e400", b"-0"):
            assert number in written, (to, number)
        assert b"1.8446744073709552e+19" not in written and b'"input":"' not in written.replace(b" ", b"")
