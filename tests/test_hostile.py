"""Hostile input: a field of the wrong type is an input error naming the file, the message and the
field (never exit 70, never a silent change), and prune never makes a result longer."""

from __future__ import annotations

import orjson
import pytest

from transcompact.core.errors import ExitCode

from .builders import run_cli as run
from .builders import session


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)




def write(name: str, value) -> str:
    with open(name, "wb") as handle:
        handle.write(value if isinstance(value, bytes) else orjson.dumps(value))
    return name


def anthropic(*content: dict, **fields) -> dict:
    return {"system": "s", **fields, "messages": [{"role": "user", "content": [*content, {"type": "text", "text": "hi"}]}]}


COMMANDS = [["check"], ["estimate"], ["prune"], ["repair"], ["cut-point"], ["compact", "--emergency", "--force"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("body, error", [
    (anthropic({"type": "document", "source": {"type": "base64", "media_type": 7, "data": "JVBERi0="}}),
     "bad.json: message 0: content/0: `source.media_type` must be a string, not a number"),
    (anthropic({"type": "image", "source": {"type": "url", "url": ["https://x"]}}),
     "bad.json: message 0: content/0: `source.url` must be a string, not an array"),
    (anthropic({"type": {"name": "text"}, "text": "hi"}),
     "bad.json: message 0: content/0: a block's `type` must be a string, not an object"),
    (anthropic({"type": ["text"], "text": "hi"}),
     "bad.json: message 0: content/0: a block's `type` must be a string, not an array"),
    (anthropic(tools=True), "bad.json: `tools` must be a list of tool definitions, not a boolean"),
    (anthropic(tools=3), "bad.json: `tools` must be a list of tool definitions, not a number"),
    (anthropic(tools="read_file"), "bad.json: `tools` must be a list of tool definitions, not a string"),
    (anthropic(tools={"name": "read_file"}), "bad.json: `tools` must be a list of tool definitions, not an object"),
    ({"messages": [{"role": "user", "content": "go"},
                   {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                           "function": {"name": "f", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": ["c1"], "content": "out"}]},
     "bad.json: message 2: `tool_call_id` must be a string, not an array"),
    ({"messages": [{"role": "user", "content": "go"},
                   {"role": "assistant", "content": None, "tool_calls": [{"id": 1, "type": "function",
                                                                           "function": {"name": "f", "arguments": "{}"}}]}]},
     "bad.json: message 1: tool_calls/0: `id` must be a string, not a number"),
    ({"messages": [{"role": "user", "content": [{"type": {"x": 1}, "text": "hi"}, {"type": "image_url", "image_url": {"url": "u"}}]}]},
     "bad.json: message 0: content/0: a part's `type` must be a string, not an object"),
], ids=["media_type", "url", "type-object", "type-array", "tools-bool", "tools-number", "tools-string", "tools-object",
        "tool_call_id", "tool-call-id", "part-type"])
def test_a_field_of_the_wrong_type_is_an_input_error_naming_it(command, body, error):
    write("bad.json", body)
    before = open("bad.json", "rb").read()
    result = run(*command, "bad.json")
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.splitlines()[0] == f"transcompact: error: {error}"
    assert open("bad.json", "rb").read() == before


def test_null_tools_are_no_tools_and_stay_null():
    write("ok.json", anthropic(tools=None))
    result = run("repair", "-q", "ok.json")
    assert result.exit_code == ExitCode.OK
    assert result.stdout_bytes == open("ok.json", "rb").read()


# --- prune never makes a result longer -------------------------------------------------------------


@pytest.mark.parametrize("head, tail", [(2, 2), (0, 0), (10, 0), (30, 30)])
def test_soft_trim_never_makes_a_result_longer(head, tail):
    write("s.json", session(rounds=4, size=40))
    result = run("prune", "--report", "report.json", "--soft-trim-chars", "8", "--head", str(head), "--tail", str(tail),
                 "--hard-clear-after", "100", "--keep-last", "0", "s.json")
    assert result.exit_code == 0, result.stderr
    assert orjson.loads(result.stdout_bytes) == orjson.loads(session(rounds=4, size=40))  # every marker is longer than 40
    (report,) = [orjson.loads(line) for line in open("report.json", "rb")]  # JSON Lines: one per file
    assert report["soft_trimmed"] == 0 and report["tokens_after"] == report["tokens_before"]


def test_soft_trim_trims_when_the_marker_is_shorter_than_what_it_takes():
    write("s.json", session(rounds=4, size=200))
    result = run("prune", "-q", "--soft-trim-chars", "8", "--head", "10", "--tail", "10", "--hard-clear-after", "100",
                 "--keep-last", "0", "s.json")
    texts = [b["content"] for m in orjson.loads(result.stdout_bytes)["messages"] if isinstance(m["content"], list)
             for b in m["content"] if b["type"] == "tool_result"]
    assert all(len(text) < 200 and "--- trimmed (kept 10 head + 10 tail of 200 chars) ---" in text for text in texts)
