"""GitHub Copilot CLI sessions, read only: which logs it takes, the main agent's conversation read
from the events (chunks of one response together, sub-agents left out, a background compaction's
summary then what came after it started), the reading commands, and every writing command refused
with exit 2 before it does anything."""

from __future__ import annotations

import json

import pytest

from transcompact import check, dumps, estimate, loads
from transcompact.core.errors import UnknownFormat, UsageError
from transcompact.core.jsondata import parse
from transcompact.core.model import Text, ToolCall, ToolResult
from transcompact.formats import detect
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.validity.check import errors

from .builders import run_cli as run
from .conftest import FIXTURES

TOOL_LOOP = FIXTURES / "copilot" / "events.jsonl"
COMPACTED = FIXTURES / "copilot" / "events-compacted.jsonl"
FIXTURE_FILES = (TOOL_LOOP, COMPACTED)


def read(path):
    return loads(path.read_bytes(), str(path))


def texts(message) -> str:
    return "".join(b.text for b in message.blocks if isinstance(b, Text))




# --- reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_every_fixture_is_detected_and_written_back_byte_for_byte(path):
    data = path.read_bytes()
    assert detect(parse(data, path.name)) == "copilot"
    transcript = loads(data, path.name)
    assert transcript.format == "copilot" and transcript.dialect == "openai"
    assert dumps(transcript) == data
    assert errors(check(transcript)) == []


def test_other_logs_are_not_taken_for_copilot_events():
    for path in (FIXTURES / "claude-code" / "broken-session.jsonl", *sorted((FIXTURES / "codex").glob("*.jsonl"))):
        assert detect(parse(path.read_bytes(), path.name)) != "copilot"
    with pytest.raises(UnknownFormat):  # not events: no `data` object
        detect(parse(b'{"type":"user.message","id":"a","parentId":null,"content":"hi"}\n' * 2, "x.jsonl"))


def test_the_tool_loop_reads_as_the_main_agent_sends_it():
    transcript = read(TOOL_LOOP)
    assert [m.role for m in transcript.messages] == [
        "user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"]
    first = transcript.messages[0]
    assert texts(first).startswith("<current_datetime>")  # the transformed content: what the model was sent
    calls = transcript.messages[1].blocks
    assert [type(b) for b in calls] == [Text, ToolCall, ToolCall]  # the reasoning is display only
    assert calls[1].input == {"command": "pytest tests/test_checkout.py -q", "description": "Run the checkout tests"}
    assert [m.blocks[0].tool_call_id for m in transcript.messages if m.role == "tool"] == [
        "toolu_bash_01", "toolu_view_02", "toolu_edit_03", "toolu_bash_05", "toolu_bash_06"]
    failed = transcript.messages[7].blocks[0]
    assert failed == ToolResult("toolu_bash_05", "The command timed out after 120 seconds.", is_error=True)
    # The sub-agent's messages are not the main conversation's; the two chunks of one response are one message.
    assert not any("shop/views.py:14" in texts(m) for m in transcript.messages)
    assert texts(transcript.messages[8]) == "The full run timed out; the checkout tests alone pass now.Should I look into the slow tests?"
    assert transcript.messages[8].line == 19


def test_a_compaction_leaves_its_summary_then_what_came_after_it_started():
    transcript = read(COMPACTED)
    events = [json.loads(line) for line in COMPACTED.read_bytes().splitlines()]
    summary = next(e for e in events if e["type"] == "session.compaction_complete")["data"]["summaryContent"]
    assert texts(transcript.messages[0]) == summary and transcript.messages[0].role == "user"
    assert [m.role for m in transcript.messages[1:]] == ["assistant", "user", "assistant", "tool", "assistant"]
    assert texts(transcript.messages[1]).startswith("Done: `import --dry-run`")  # recorded while the compaction ran
    assert "call_view_01" not in {b.id for m in transcript.messages for b in m.tool_calls}


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_estimate_check_and_cut_point_read_it(path):
    result = run("estimate", "--json", path)
    assert result.exit_code == 0
    report = json.loads(result.stdout)["files"][0]
    assert report["tokens"] == estimate(read(path)).tokens and report["messages"] == len(read(path).messages)
    assert run("check", path).exit_code == 0
    cut = run("cut-point", "--keep-recent-tokens", "50", path)
    assert cut.exit_code == 0 and 0 < int(cut.stdout) < len(read(path).messages)


# --- not written -------------------------------------------------------------------------------


def test_the_library_writes_it_back_only_unchanged():
    transcript = read(TOOL_LOOP)
    result, report = compact(transcript, CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=100)))
    assert report.strategy == "emergency"
    with pytest.raises(UsageError, match="does not write the copilot format"):
        dumps(result)


@pytest.mark.parametrize("requests", ["5", "true", "1180591620717411303424"], ids=["a-number", "a-boolean", "beyond-64-bits"])
def test_tool_requests_that_are_no_list_are_no_calls(requests, tmp_path):
    """Iterated as they were: an internal error for every reading command."""
    lines = TOOL_LOOP.read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if b'"toolRequests":[{' in line)
    value = json.loads(lines[at])
    value["data"]["toolRequests"] = "REQUESTS"
    lines[at] = json.dumps(value).replace('"REQUESTS"', requests).encode()
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    reply = next(m for m in read(path).messages if m.line == at + 1)
    assert reply.role == "assistant" and not reply.tool_calls and texts(reply)
    assert run("check", path).exit_code == 1  # the calls' results now answer nothing
    assert run("estimate", path).exit_code == 0
