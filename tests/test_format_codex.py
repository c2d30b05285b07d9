"""Codex CLI rollouts: detection, the active view after each marker, writing back, recorded usage,
and a compaction Codex itself resumes (rebuilt here the way Codex rebuilds a history)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from transcompact import check, dumps, loads, repair
from transcompact.calibrate import recorded_usage, usage_tokens
from transcompact.check import errors
from transcompact.compact import CompactOptions, compact
from transcompact.errors import UnknownFormat
from transcompact.formats import detect
from transcompact.jsondata import parse
from transcompact.model import Opaque, Text, ToolCall
from transcompact.summarize import SummaryOptions
from transcompact.summary_message import SUMMARY_PREFIX, is_summary_message

from .conftest import CORPUS, FIXTURES

TOOL_LOOP = FIXTURES / "codex" / "rollout-2025-10-08T10-15-30-0199c3a1-7b2e-7c40-9d11-2f6a8e4b5c01.jsonl"
COMPACTED = FIXTURES / "codex" / "rollout-2025-10-08T11-02-10-0199c3b7-1d40-7e21-8a3c-6b0f4d2e9a17.jsonl"
LEGACY = FIXTURES / "codex" / "rollout-2025-10-08T12-00-00-0199c3c2-44aa-7b90-b1e5-90d1c7a3f268.jsonl"
FIXTURE_FILES = (TOOL_LOOP, COMPACTED, LEGACY)
CORPUS_FILE = CORPUS / "other" / "codex-cli-rollout-small.jsonl"


def read(path):
    return loads(path.read_bytes(), str(path))


def lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def texts(message) -> str:
    return "".join(b.text for b in message.blocks if isinstance(b, Text))


# --- reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_every_fixture_is_detected_and_written_back_byte_for_byte(path):
    data = path.read_bytes()
    assert detect(parse(data, path.name)) == "codex"
    transcript = loads(data, path.name)
    assert transcript.format == "codex" and transcript.dialect == "openai"
    assert dumps(transcript) == data
    assert errors(check(transcript)) == []


@pytest.mark.skipif(not CORPUS_FILE.exists(), reason="the shared corpus is not present")
def test_the_corpus_rollout_reads_from_its_last_compaction():
    transcript = read(CORPUS_FILE)
    assert transcript.format == "codex" and dumps(transcript) == CORPUS_FILE.read_bytes()
    # Line 111 is the last `compacted` line: every message comes from it or after it.
    assert {m.line for m in transcript.messages} == {111, 114, 115, 116}


def test_other_formats_are_not_taken_for_a_rollout():
    claude = FIXTURES / "claude-code" / "broken-session.jsonl"
    assert detect(parse(claude.read_bytes(), claude.name)) == "claude-code"
    assert detect(parse(b'{"role":"user","content":"hi"}\n', "chat.jsonl")) == "jsonl"
    with pytest.raises(UnknownFormat):
        detect(parse(b'{"timestamp":"t","kind":"session_meta"}\n', "x.jsonl"))


def test_the_tool_loop_reads_as_messages_paired_by_call_id():
    transcript = read(TOOL_LOOP)
    roles = [m.role for m in transcript.messages]
    assert roles == ["user", "user", "assistant", "tool", "tool", "assistant", "tool", "assistant", "tool", "assistant", "user"]
    first_turn = transcript.messages[2]
    assert [type(b) for b in first_turn.blocks] == [Opaque, ToolCall, ToolCall]  # reasoning, two parallel calls
    assert first_turn.blocks[1].input == {"command": ["bash", "-lc", "pytest tests/test_checkout.py -q"],
                                          "workdir": "/home/dev/shop", "timeout_ms": 120000}  # the JSON string decoded
    assert [m.blocks[0].tool_call_id for m in transcript.messages if m.role == "tool"] == [
        "call_shell_01", "call_shell_02", "call_patch_03", "call_local_04"]
    custom, local = transcript.messages[5].blocks[1], transcript.messages[7].blocks[0]
    assert custom.name == "apply_patch" and custom.input.startswith("*** Begin Patch")
    assert local.name == "local_shell" and local.input["command"] == ["pytest", "tests/test_checkout.py", "-q"]
    assert transcript.system[0].text.startswith("You are Codex")


def test_replacement_history_is_the_whole_history_before_what_follows_it():
    transcript = read(COMPACTED)
    assert [texts(m) for m in transcript.messages[:4]][1:] == [
        "Add a test for an empty cart.", transcript.messages[2].blocks[0].text, "Go ahead."]
    assert texts(transcript.messages[2]).startswith("Another language model started")
    assert all(m.line == 10 for m in transcript.messages[:3])  # they live in the `compacted` line
    assert "call_read_11" not in {b.id for m in transcript.messages for b in m.tool_calls}


def test_a_compaction_without_history_is_rebuilt_and_a_rollback_drops_the_last_turn():
    transcript = read(LEGACY)
    assert [(m.role, texts(m)) for m in transcript.messages] == [
        ("user", "Rename total() to cart_total()."),  # the real user messages (not the environment context)
        ("user", "Renaming total() to cart_total(): it is defined in shop/cart.py and called in shop/views.py."),
        ("user", "Also rename it in the docs."),
        ("assistant", "The docs do not mention total()."),
        ("user", "Only rename, do not delete anything."),  # "Then delete …" and its call were rolled back
    ]


# --- writing -----------------------------------------------------------------------------------


def test_a_changed_result_rewrites_its_line_only():
    data = TOOL_LOOP.read_bytes()
    transcript = read(TOOL_LOOP)
    messages = list(transcript.messages)
    result = messages[3].blocks[0]
    messages[3] = messages[3].with_blocks((replace(result, content="[cleared]"),))
    out = dumps(transcript.with_messages(messages))
    before, after = data.split(b"\n"), out.split(b"\n")
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert changed == [9]
    line = json.loads(after[9])
    assert line["type"] == "response_item" and line["payload"] == {
        "type": "function_call_output", "call_id": "call_shell_01", "output": "[cleared]"}
    assert dumps(loads(out, "x")) == out


def test_a_changed_item_of_a_replacement_history_rewrites_the_compacted_line():
    data = COMPACTED.read_bytes()
    transcript = read(COMPACTED)
    messages = list(transcript.messages)
    messages[1] = messages[1].with_blocks((Text("Add a test for an empty cart, please."),))
    out = dumps(transcript.with_messages(messages))
    changed = [i for i, (a, b) in enumerate(zip(data.split(b"\n"), out.split(b"\n"))) if a != b]
    assert changed == [9]
    history = json.loads(out.split(b"\n")[9])["payload"]["replacement_history"]
    assert history[1]["content"] == [{"type": "input_text", "text": "Add a test for an empty cart, please."}]
    assert texts(loads(out, "x").messages[1]) == "Add a test for an empty cart, please."


def test_a_changed_rebuilt_message_writes_the_history_it_was_rebuilt_as():
    transcript = read(LEGACY)
    messages = list(transcript.messages)
    messages[0] = messages[0].with_blocks((Text("Rename total()."),))
    out = dumps(transcript.with_messages(messages))
    assert [texts(m) for m in loads(out, "x").messages] == ["Rename total()."] + [texts(m) for m in messages[1:]]


def test_repair_answers_an_unanswered_call_on_the_line_after_it():
    data = TOOL_LOOP.read_bytes().split(b"\n")
    del data[17]  # the output of call_local_04
    broken = loads(b"\n".join(data), "broken.jsonl")
    assert {v.rule for v in errors(check(broken))} == {"O1"}
    repaired, report = repair(broken)
    out = dumps(repaired)
    assert report.fixes and errors(check(loads(out, "x"))) == []
    # The call and the assistant's text after it are one turn now: the answer follows that turn.
    items = [line["payload"] for line in lines(out) if line["type"] == "response_item"]
    added = next(i for i, item in enumerate(items) if item.get("call_id") == "call_local_04" and item["type"] == "function_call_output")
    assert items[added - 2]["type"] == "local_shell_call" and items[added - 1]["role"] == "assistant"
    assert items[added]["output"] and items[added + 1]["role"] == "user"


# --- recorded usage ----------------------------------------------------------------------------


def test_token_counts_are_the_usage_of_the_response_before_them():
    transcript = read(TOOL_LOOP)
    assert [usage_tokens(m) for m in transcript.messages] == [None, None, 4210, None, None, 4896, None, 5120, None, 5301, None]
    recorded = recorded_usage(transcript.messages)
    assert (recorded.tokens, recorded.output, recorded.message, recorded.responses) == (5301, 52, 9, 4)
    # A count after a compaction belongs to no message of the new history it did not see.
    assert [usage_tokens(m) for m in read(COMPACTED).messages] == [None, None, None, None, 1702, None, None]


# --- compaction --------------------------------------------------------------------------------


def with_turns(path, turns: int = 8) -> bytes:
    """The fixture with more turns of a tool loop after it, each with a long output: something to compact."""
    data = path.read_bytes()
    stamp = lines(data)[-1]["timestamp"]
    new = []
    for k in range(turns):
        for payload in (
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Step {k}: run the tests."}]},
            {"type": "reasoning", "summary": [], "content": None, "encrypted_content": f"gAAAAAB{k}"},
            {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["pytest", "-q", f"tests/test_{k}.py"]}),
             "call_id": f"call_step_{k}"},
            {"type": "function_call_output", "call_id": f"call_step_{k}", "output": f"test_{k}.py ....\n" * 60},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Step {k} passes."}]},
        ):
            new.append(json.dumps({"timestamp": stamp, "type": "response_item", "payload": payload}, separators=(",", ":")))
    return data + "\n".join(new).encode() + b"\n"


def compacted(transcript, keep=100):
    options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep))
    result, report = compact(transcript, options)
    assert report.strategy == "emergency"
    return dumps(result)


@pytest.mark.parametrize("path", (TOOL_LOOP, COMPACTED), ids=lambda p: p.name)
def test_compaction_appends_codex_own_marker_and_reads_back_with_one_summary(path):
    data = with_turns(path)
    out = compacted(loads(data, path.name), keep=600)
    assert out.startswith(data)  # nothing before it is rewritten
    new = lines(out[len(data):])
    assert [line["type"] for line in new] == ["compacted", "event_msg"]
    assert new[1]["payload"] == {"type": "context_compacted"}
    assert new[0]["payload"]["message"].startswith(SUMMARY_PREFIX)
    again = loads(out, path.name)
    assert sum(map(is_summary_message, again.messages)) == 1 and is_summary_message(again.messages[0])
    assert errors(check(again)) == []
    twice = loads(compacted(again, keep=200), path.name)
    assert sum(map(is_summary_message, twice.messages)) == 1
    assert sum(texts(m).count(SUMMARY_PREFIX) for m in twice.messages) == 1


def test_the_environment_codex_injects_is_the_checkpoints_context_not_the_users_goal():
    data = with_turns(TOOL_LOOP)
    moved = json.dumps({"timestamp": "2025-10-08T10:20:00.000Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text":
            "<environment_context>\n  <cwd>/home/dev/shop/api</cwd>\n  <writable_roots>\n    <root>/home/dev/shop</root>\n"
            "    <root>/tmp</root>\n  </writable_roots>\n</environment_context>"}]}}, separators=(",", ":")).encode()
    data = data + moved + b"\n" + with_turns(TOOL_LOOP, 4)[len(TOOL_LOOP.read_bytes()):]  # a later turn moved elsewhere
    out = compacted(loads(data, TOOL_LOOP.name), keep=600)
    summary = lines(out)[-2]["payload"]["message"]
    assert "<environment_context>" not in summary  # neither the goal nor the user's words
    assert summary.startswith(SUMMARY_PREFIX + "## Goal\nThe checkout test fails with a KeyError.")
    environment = ("### Environment\n- cwd: /home/dev/shop/api\n- approval_policy: on-request\n"
                   "- sandbox_mode: workspace-write\n- network_access: restricted\n- shell: bash\n"
                   "- writable_roots: /home/dev/shop, /tmp\n")
    assert "## Critical Context\n" + environment in summary  # each setting at its newest value
    again = loads(out, TOOL_LOOP.name)
    twice = lines(compacted(again, keep=200))[-2]["payload"]["message"]
    assert twice.count("### Environment") == 1 and environment in twice  # merged, not quoted


def agent_history(data: bytes) -> list[dict]:
    """The history Codex sends after resuming a rollout (core `reconstruct_history_from_rollout`):
    response items are recorded in order (not ghost snapshots nor system messages), a `compacted`
    line replaces the history with its `replacement_history`, `thread_rolled_back` drops the
    last user turns."""
    history: list[dict] = []
    for line in lines(data):
        payload = line["payload"]
        if line["type"] == "response_item" and payload["type"] not in ("ghost_snapshot", "other") \
                and payload.get("role") != "system":
            history.append(payload)
        elif line["type"] == "compacted":
            assert "replacement_history" in payload  # what we write never needs Codex's own rebuild
            history = list(payload["replacement_history"])
        elif line["type"] == "event_msg" and payload["type"] == "thread_rolled_back":
            starts = [i for i, item in enumerate(history) if item.get("role") == "user"]
            history = history[:starts[-payload["num_turns"]]]
    return history


def test_codex_resumes_our_compaction_with_the_summary_then_the_window_every_call_answered():
    transcript = read(TOOL_LOOP)
    out = compacted(transcript, keep=150)
    history = agent_history(out)
    summary = history[0]
    assert summary["role"] == "user" and summary["content"][0]["text"].startswith(SUMMARY_PREFIX)
    assert "pytest tests/test_checkout.py -q" in summary["content"][0]["text"]  # what the summary kept
    assert history[1]["role"] == "assistant"  # the acknowledgement
    window = history[2:]
    # The kept window is the end of the old history, item for item.
    assert window == agent_history(TOOL_LOOP.read_bytes())[-len(window):]
    assert window[-1] == {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Thanks. Is there a test for an empty cart?"}]}
    calls = {item["call_id"]: i for i, item in enumerate(window) if item["type"] in (
        "function_call", "custom_tool_call", "local_shell_call")}
    outputs = {item["call_id"]: i for i, item in enumerate(window) if item["type"] in (
        "function_call_output", "custom_tool_call_output")}
    assert calls.keys() == outputs.keys() and all(calls[c] < outputs[c] for c in calls)
    assert calls  # the window holds a tool loop


def test_drop_history_keeps_the_session_lines_and_the_compaction():
    options = CompactOptions(force=True, emergency=True, drop_history=True, summary=SummaryOptions(keep_recent_tokens=100))
    result, _ = compact(read(TOOL_LOOP), options)
    out = dumps(result)
    assert [(line["type"], line["payload"].get("type")) for line in lines(out)] == [
        ("session_meta", None), ("turn_context", None), ("compacted", None), ("event_msg", "context_compacted")]
    assert errors(check(loads(out, "x"))) == []
