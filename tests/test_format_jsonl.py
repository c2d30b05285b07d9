"""The JSON Lines format on its own: which inputs it takes, the dialect of its lines, lines an
operation did not change written back byte for byte (spacing, blank lines, a missing final
newline), changed lines re-serialised in place, and errors naming the line."""

from __future__ import annotations

import orjson
import pytest

from transcompact.core.errors import ShapeError, UnknownFormat
from transcompact.core.jsondata import parse
from transcompact.core.model import Message, Text, ToolResult
from transcompact.formats import dumps, jsonl, loads

from .conftest import FIXTURES

# Spaced as a person or another tool writes it, blank lines between, no newline at the end.
ANTHROPIC = (b'{"role": "user", "content": "List the files.", "ts": 1}\n'
             b'\n'
             b'{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}\n'
             b'\n\n'
             b'{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py b.py"}]}\n'
             b'{"role": "assistant", "content": "Two files."}')

OPENAI = (b'{"role":"user","content":"go"}\n'
          b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}\n'
          b'{"role":"tool","tool_call_id":"c1","content":"a.py"}\n')


def lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


# --- detection ----------------------------------------------------------------------------------


@pytest.mark.parametrize("data, dialect", [(ANTHROPIC, "anthropic"), (OPENAI, "openai"),
                                           ((FIXTURES / "jsonl" / "chat.jsonl").read_bytes(), "openai")],
                         ids=["anthropic", "openai", "fixture"])
def test_lines_of_messages_are_jsonl_in_the_dialect_they_show(data, dialect):
    transcript = loads(data, "chat.jsonl")
    assert (transcript.format, transcript.dialect) == ("jsonl", dialect)


def test_one_message_on_one_line_is_jsonl():
    assert loads(b'{"role": "user", "content": "hi"}\n', "one.jsonl").format == "jsonl"


@pytest.mark.parametrize("data", [
    b'{"role":"user","content":"hi"}\n{"content":"no role"}\n',
    b'{"role":"user","content":"hi"}\n[1, 2]\n',
    b'{"role":"user","content":"hi"}\n{"role":2,"content":"x"}\n',
], ids=["no-role", "not-an-object", "role-number"])
def test_a_line_that_is_not_a_message_is_not_jsonl(data):
    assert not jsonl.detect(parse(data, "x.jsonl"))
    with pytest.raises(UnknownFormat):
        loads(data, "x.jsonl")


def test_messages_path_is_for_documents_not_for_lines():
    assert not jsonl.detect(parse(ANTHROPIC, "chat.jsonl"), "0")
    with pytest.raises(UnknownFormat):
        loads(ANTHROPIC, "chat.jsonl", messages_path="messages")


def test_a_claude_code_log_is_not_read_as_plain_lines():
    log = b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","role":"user","message":{"role":"user","content":"hi"}}\n'
    assert loads(log, "s.jsonl").format == "claude-code"


def test_the_dialect_can_be_named_for_a_plain_conversation():
    plain = b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"hello"}\n'
    assert loads(plain, "p.jsonl").dialect == "openai"  # nothing shows the dialect: read as OpenAI accepts it
    assert jsonl.read(parse(plain, "p.jsonl"), dialect="anthropic").dialect == "anthropic"


# --- read -----------------------------------------------------------------------------------------


def test_each_message_knows_its_line_past_blank_lines():
    transcript = loads(ANTHROPIC, "chat.jsonl")
    assert [m.line for m in transcript.messages] == [1, 3, 6, 7]
    assert transcript.messages[2].blocks == (ToolResult("t1", "a.py b.py"),)
    assert transcript.messages[0].raw["ts"] == 1  # a field the model does not name, at hand


# --- write ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [ANTHROPIC, OPENAI, ANTHROPIC.replace(b"\n", b"\r\n"), b"\xef\xbb\xbf" + OPENAI],
                         ids=["anthropic", "openai", "crlf", "bom"])
def test_an_unchanged_file_is_written_back_byte_for_byte_without_the_original(data):
    assert dumps(loads(data, "chat.jsonl")) == data


def clear_result(transcript, index: int):
    """The transcript with the tool result of message `index` replaced, as prune does."""
    message = transcript.messages[index]
    block = message.blocks[0]
    cleared = message.with_blocks((ToolResult(block.tool_call_id, "[cleared]", raw=block.raw, line=block.line),))
    return transcript.with_messages([*transcript.messages[:index], cleared, *transcript.messages[index + 1:]])


def test_a_changed_message_rewrites_its_line_only():
    spaced = OPENAI.replace(b'":', b'": ')
    out = dumps(clear_result(loads(spaced, "chat.jsonl"), 2))
    before, after = lines(spaced), lines(out)
    assert len(after) == len(before)
    assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == [2]
    assert orjson.loads(after[2]) == {"role": "tool", "tool_call_id": "c1", "content": "[cleared]"}


def test_the_blank_lines_before_a_changed_message_stay():
    out = dumps(clear_result(loads(ANTHROPIC, "chat.jsonl"), 2))
    assert lines(out)[3:5] == [b"", b""] and len(lines(out)) == len(lines(ANTHROPIC))


def test_a_changed_line_of_a_crlf_file_keeps_its_crlf():
    out = dumps(clear_result(loads(OPENAI.replace(b"\n", b"\r\n"), "chat.jsonl"), 2))
    assert out.count(b"\r\n") == out.count(b"\n") == 3


def test_a_removed_message_takes_its_blank_lines_with_it():
    transcript = loads(ANTHROPIC, "chat.jsonl")
    out = dumps(transcript.with_messages([transcript.messages[0], transcript.messages[3]]))
    assert out == lines(ANTHROPIC)[0] + b"\n" + lines(ANTHROPIC)[-1]


def test_an_added_message_goes_on_a_line_of_its_own_before_the_final_newline():
    transcript = loads(OPENAI, "chat.jsonl")
    out = dumps(transcript.with_messages([*transcript.messages, Message("user", (Text("Thanks."),))]))
    assert out == OPENAI + b'{"role":"user","content":"Thanks."}\n'
    assert [m.role for m in loads(out, "chat.jsonl").messages] == ["user", "assistant", "tool", "user"]


# --- errors name the line -------------------------------------------------------------------------


@pytest.mark.parametrize("data, error", [
    (b'{"role":"user","content":"hi"}\n\n{"role":"assistant","content":7}\n',
     "chat.jsonl:3: message 1: `content` must be a string, an array of parts or null, not a number"),
    (b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}\n'
     b'{"role":"assistant","content":[{"type":"text","text":"ok"}, 3]}\n',
     "chat.jsonl:2: message 1: content/1: a content block must be an object, not a number"),
], ids=["openai-content", "anthropic-block"])
def test_a_wrong_shape_names_the_file_line_message_and_path(data, error):
    with pytest.raises(ShapeError) as raised:
        loads(data, "chat.jsonl")
    assert str(raised.value) == error


def test_a_repaired_file_whose_rewritten_lines_are_read_back_as_values(tmp_path):
    """A line repair rewrites is written from its value; the repaired file, read back for the
    post-condition and for what is left to say, holds such lines (a regression: reading one
    back looked at its bytes for a \\r)."""
    from click.testing import CliRunner

    from transcompact.cli.main import cli

    path = tmp_path / "chat.jsonl"
    path.write_bytes(b'{"role": "user", "content": [{"type": "text", "text": "Hi."}, '
                     b'{"type": "tool_result", "tool_use_id": "toolu_1", "content": ""}]}\n'
                     b'{"role": "assistant", "content": "Hello."}\n')
    result = CliRunner().invoke(cli, ["repair", "-q", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout == '{"role":"user","content":[{"type":"text","text":"Hi."}]}\n{"role": "assistant", "content": "Hello."}\n'
