"""OpenAI Responses API input: which documents it takes (and which it leaves to Chat Completions and
Messages), the items read as messages paired by `call_id`, a `compaction` item counted as its bytes
with everything before the newest one inactive, a write that keeps what it did not change, and a
compaction that what the API is sent (rebuilt below) reads as the summary, then the kept window,
every call answered."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from transcompact import check, dumps, estimate, loads, repair
from transcompact.cli.main import cli
from transcompact.core.jsondata import parse
from transcompact.core.model import Image, Opaque, Text, ToolCall
from transcompact.core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX
from transcompact.counting.counter import Options as EstimateOptions
from transcompact.formats import detect
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.compaction.summary_message import is_summary_message
from transcompact.ops.validity.check import errors

from .conftest import FIXTURES

TOOL_LOOP = FIXTURES / "responses" / "tool-loop.json"  # a request body, indented
COMPACTED = FIXTURES / "responses" / "compacted.json"  # a bare array with two compaction items, on one line
CALLS = ("function_call", "custom_tool_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")


def read(path):
    return loads(path.read_bytes(), str(path))


def items_of(data: bytes) -> list[dict]:
    document = json.loads(data)
    return document["input"] if isinstance(document, dict) else document


def texts(message) -> str:
    return "".join(b.text for b in message.blocks if isinstance(b, Text))


# --- reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", (TOOL_LOOP, COMPACTED), ids=lambda p: p.name)
def test_every_fixture_is_detected_and_written_back_byte_for_byte(path):
    data = path.read_bytes()
    assert detect(parse(data, path.name)) == "responses"
    transcript = loads(data, path.name)
    assert transcript.format == "responses" and transcript.dialect == "openai"
    assert dumps(transcript) == data
    assert errors(check(transcript)) == []


def test_plain_messages_are_left_to_chat_completions_and_messages():
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert detect(parse(json.dumps(plain).encode(), "chat.json")) == "openai"
    anthropic = FIXTURES / "anthropic" / "tool-loop.json"
    assert detect(parse(anthropic.read_bytes(), anthropic.name)) == "anthropic"
    openai = FIXTURES / "openai" / "tool-calls.json"
    assert detect(parse(openai.read_bytes(), openai.name)) == "openai"
    # The same plain list inside `input` is a Responses request, and --format reads the bare list as one.
    assert detect(parse(json.dumps({"model": "gpt-5", "input": plain}).encode(), "body.json")) == "responses"
    assert loads(json.dumps(plain).encode(), "chat.json", format="responses").format == "responses"


def test_the_tool_loop_reads_as_messages_paired_by_call_id():
    transcript = read(TOOL_LOOP)
    assert [m.role for m in transcript.messages] == [
        "developer", "user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    first_turn = transcript.messages[2]
    assert [type(b) for b in first_turn.blocks] == [Opaque, ToolCall, ToolCall]  # reasoning, two parallel calls
    assert first_turn.blocks[1].input == {"command": "pytest tests/test_orders.py -q"}  # the JSON string decoded
    assert [m.blocks[0].tool_call_id for m in transcript.messages if m.role == "tool"] == [
        "call_Qm1xV7tB2", "call_Rk8yW3nC5", "call_Tp4zX9mD1", "call_Vn2aY5pE8"]
    search_and_patch = transcript.messages[5].blocks  # a web search item kept in the turn, as it is
    assert [type(b) for b in search_and_patch] == [Opaque, Text, ToolCall] and search_and_patch[0].type == "web_search_call"
    assert isinstance(transcript.messages[-1].blocks[1], Image)
    assert transcript.system[0].text.startswith("You are a coding agent")
    assert [t.get("name") for t in transcript.tools] == ["shell", "read_file", "apply_patch", None]


def test_everything_before_the_newest_compaction_is_inactive_and_the_compaction_counts_as_its_bytes():
    transcript = read(COMPACTED)
    items = items_of(COMPACTED.read_bytes())
    assert [m.role for m in transcript.messages] == ["assistant", "user", "assistant", "tool", "assistant", "user"]
    compaction = transcript.messages[0].blocks[0]
    assert compaction == Opaque("compaction") and compaction.raw == items[5]  # the newest of the two
    counted = estimate(transcript, EstimateOptions(count="content"))
    assert counted.by_kind["other"] == int(len(json.dumps(items[5], separators=(",", ":"))) * 0.25)
    # The inactive items are not read, so not counted, not checked, not summarized.
    assert "call_old_01" not in {b.id for m in transcript.messages for b in m.tool_calls}


# --- writing -----------------------------------------------------------------------------------


def test_a_changed_result_rewrites_its_item_only_and_keeps_the_inactive_items():
    transcript = read(COMPACTED)
    messages = list(transcript.messages)
    result = messages[3].blocks[0]
    messages[3] = messages[3].with_blocks((replace(result, content="[cleared]"),))
    out = dumps(transcript.with_messages(messages))
    before, after = items_of(COMPACTED.read_bytes()), items_of(out)
    assert [i for i, (a, b) in enumerate(zip(before, after)) if a != b] == [9] and len(after) == len(before)
    assert after[9] == {"type": "function_call_output", "call_id": "call_test_02", "output": "[cleared]"}
    assert b"\n" not in out.strip()  # written as it was laid out: one line
    assert dumps(loads(out, "x")) == out


def test_repair_answers_an_unanswered_call_after_its_turn():
    document = json.loads(TOOL_LOOP.read_bytes())
    document["input"] = [i for i in document["input"] if i.get("call_id") != "call_Vn2aY5pE8" or i["type"] != "function_call_output"]
    broken = loads(json.dumps(document, indent=2).encode(), "broken.json")
    assert {v.rule for v in errors(check(broken))} == {"O1"}
    repaired, report = repair(broken)
    out = dumps(repaired)
    assert report.fixes and errors(check(loads(out, "x"))) == []
    items = items_of(out)
    added = next(i for i, item in enumerate(items) if item.get("call_id") == "call_Vn2aY5pE8" and item["type"] == "function_call_output")
    assert items[added - 2]["type"] == "function_call" and items[added - 1]["role"] == "assistant"  # after the turn's text
    assert json.loads(out)["tools"] == document["tools"]  # the request's other fields as they were


# --- compaction --------------------------------------------------------------------------------


def with_turns(path, turns: int = 8) -> bytes:
    """The fixture with more turns of a tool loop after it, each with a long output: something to compact."""
    document = json.loads(path.read_bytes())
    items = document["input"] if isinstance(document, dict) else document
    for k in range(turns):
        items += [
            {"role": "user", "content": f"Step {k}: run the tests."},
            {"id": f"rs_step_{k}", "type": "reasoning", "summary": [], "encrypted_content": f"gAAAAAB{k}"},
            {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": f"pytest -q tests/test_{k}.py"}),
             "call_id": f"call_step_{k}"},
            {"type": "function_call_output", "call_id": f"call_step_{k}", "output": f"test_{k}.py ....\n" * 20},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Step {k} passes."}]},
        ]
    return json.dumps(document if isinstance(document, dict) else items, indent=2).encode()


def compacted(transcript, keep):
    result, report = compact(transcript, CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep)))
    assert report.strategy == "emergency"
    return dumps(result)


def sent(data: bytes) -> list[dict]:
    """What the API reads of a request's `input`: the items from the newest `compaction` item on
    (it may drop every item before it), each a message or an item of its `type`."""
    items = items_of(data)
    start = max((i for i, item in enumerate(items) if item.get("type") == "compaction"), default=0)
    return items[start:]


@pytest.mark.parametrize("path", (TOOL_LOOP, COMPACTED), ids=lambda p: p.name)
@pytest.mark.parametrize("keep, split", ((550, False), (300, True)), ids=("at-a-turn", "in-a-turn"))
def test_the_api_reads_our_compaction_as_the_summary_then_the_window_every_call_answered(path, keep, split):
    data = with_turns(path)
    result, report = compact(loads(data, path.name), CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep)))
    assert report.split_turn is split
    out = dumps(result)
    items = sent(out)
    before = sent(data)
    lead = [item for item in before[:2] if item.get("type") == "compaction" or item.get("role") == "developer"]
    assert items[:len(lead)] == lead  # the API's own compaction and the instructions stay first, as they were
    summary, window = items[len(lead)], items[len(lead) + 1:]
    assert summary["role"] == "user" and summary["content"][0]["text"].startswith(SUMMARY_PREFIX)
    if split:  # no acknowledgement: the assistant's items of the turn the cut split follow the summary
        assert window[0].get("role") not in ("user", "developer", "system")
    else:
        assert window[0]["role"] == "assistant" and window[0]["content"][0]["text"] == SUMMARY_ACK
        window = window[1:]
        assert window[0]["role"] == "user"
    assert window == before[-len(window):]  # the end of the old input, item for item
    calls = {item["call_id"]: i for i, item in enumerate(window) if item.get("type") in CALLS}
    outputs = {item["call_id"]: i for i, item in enumerate(window) if item.get("type") in OUTPUTS}
    assert calls and calls.keys() == outputs.keys() and all(calls[c] < outputs[c] for c in calls)
    assert sum(1 for item in items_of(out) if item.get("type") == "compaction") == (1 if lead and lead[0].get("type") == "compaction" else 0)
    if isinstance(json.loads(data), dict):
        assert {k: v for k, v in json.loads(out).items() if k != "input"} == {k: v for k, v in json.loads(data).items() if k != "input"}


@pytest.mark.parametrize("path", (TOOL_LOOP, COMPACTED), ids=lambda p: p.name)
def test_compacting_twice_leaves_one_summary(path):
    once = loads(compacted(loads(with_turns(path), path.name), keep=600), path.name)
    assert sum(map(is_summary_message, once.messages)) == 1
    assert errors(check(once)) == []
    twice = loads(compacted(once, keep=200), path.name)
    assert sum(map(is_summary_message, twice.messages)) == 1
    assert sum(texts(m).count(SUMMARY_PREFIX) for m in twice.messages) == 1
    assert errors(check(twice)) == []


def test_the_commands_run_on_a_request_body(tmp_path):
    path = tmp_path / "request.json"
    path.write_bytes(with_turns(TOOL_LOOP))
    runner = CliRunner()
    assert runner.invoke(cli, ["check", str(path)]).exit_code == 0
    assert runner.invoke(cli, ["estimate", str(path)]).exit_code == 0
    assert int(runner.invoke(cli, ["cut-point", "--keep-recent-tokens", "600", str(path)]).stdout) > 0
    pruned = runner.invoke(cli, ["prune", "--keep-last", "1", str(path)])
    assert pruned.exit_code == 0 and loads(pruned.stdout_bytes, "pruned.json").format == "responses"
    result = runner.invoke(cli, ["compact", "--emergency", "--force", "--keep-recent-tokens", "600", "-i", str(path)])
    assert result.exit_code == 0, result.output
    assert sum(map(is_summary_message, loads(path.read_bytes(), path.name).messages)) == 1


def test_an_item_whose_type_is_not_a_string_is_kept_and_named_as_no_kind(tmp_path):
    """It was an internal error in every command (an unhashable `type`)."""
    from .conftest import FIXTURES

    body = json.loads((FIXTURES / "responses" / "tool-loop.json").read_bytes())
    body["input"][1]["type"] = [body["input"][1].get("type", "message")]
    path = tmp_path / "tool-loop.json"
    path.write_text(json.dumps(body))
    for command in (["estimate"], ["check"], ["repair"], ["prune"]):
        result = CliRunner().invoke(cli, [*command, str(path)], prog_name="transcompact")
        assert result.exit_code in (0, 1) and "internal error" not in result.stderr, (command, result.stderr)
