"""Codex CLI rollouts: detection, the active view after each marker, writing back, recorded usage,
a compaction Codex itself resumes (rebuilt here the way Codex rebuilds a history), paginated
rollouts' ordinals and forked rollouts' parents (tests/test_codex_resume.py has the real Codex judge)."""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from dataclasses import replace

import pytest
from click.testing import CliRunner

from transcompact import PruneOptions, check, dumps, estimate, load, loads, prune, repair
from transcompact.cli.main import cli
from transcompact.core.errors import InputError, ShapeError, UnknownFormat
from transcompact.core.jsondata import parse
from transcompact.core.model import Opaque, Text, ToolCall
from transcompact.core.summary_text import SUMMARY_PREFIX
from transcompact.counting.calibrate import recorded_usage, usage_tokens
from transcompact.formats import detect
from transcompact.formats.codex.parsing import whole_value
from transcompact.formats.codex.reader import CODEX_SUMMARY_PREFIX
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.compaction.summary_message import is_summary_message
from transcompact.ops.validity.check import errors

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


def ndjson(values: list[dict]) -> bytes:
    return b"".join(json.dumps(v, separators=(",", ":")).encode() + b"\n" for v in values)


def paginated(data: bytes) -> bytes:
    """A rollout as Codex 0.171 writes it: `history_mode: "paginated"` and each line's `ordinal`
    after its timestamp."""
    values = lines(data)
    values[0]["payload"]["history_mode"] = "paginated"
    return ndjson([{"timestamp": v["timestamp"], "ordinal": n, **v} for n, v in enumerate(values)])


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
    assert all(m.line == 10 for m in transcript.messages[:3])  # they live in the `compacted` line
    assert "call_read_11" not in {b.id for m in transcript.messages for b in m.tool_calls}


def test_codex_summary_reads_as_ours_and_is_written_back_as_it_was():
    transcript = read(COMPACTED)
    summary = transcript.messages[2]
    assert is_summary_message(summary) and sum(map(is_summary_message, transcript.messages)) == 1
    assert texts(summary) == SUMMARY_PREFIX + "The checkout KeyError is fixed in shop/cart.py (SKUs are read from each " \
                                              "item); tests/test_checkout.py passes. Next: a test for an empty cart."
    messages = list(transcript.messages)
    messages[3] = messages[3].with_blocks((Text("Go ahead, please."),))
    history = lines(dumps(transcript.with_messages(messages)))[9]["payload"]["replacement_history"]
    assert history[2] == lines(COMPACTED.read_bytes())[9]["payload"]["replacement_history"][2]  # Codex's wording kept


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


def test_a_changed_result_rewrites_its_line_and_the_usage_counted_after_it():
    data = TOOL_LOOP.read_bytes()
    transcript = read(TOOL_LOOP)
    messages = list(transcript.messages)
    result = messages[3].blocks[0]
    messages[3] = messages[3].with_blocks((replace(result, content="[cleared]"),))
    out = dumps(transcript.with_messages(messages))
    before, after = data.split(b"\n"), out.split(b"\n")
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    # Its line, and the token counts of the three responses sent it (`restated_usage`).
    assert changed[0] == 9 and all(json.loads(after[i])["payload"]["type"] == "token_count" for i in changed[1:])
    assert len(changed) == 4
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
    assert changed == [9, 14]  # and the token count of the response after it, which was sent the old text
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


def test_a_token_usage_record_is_the_usage_of_the_response_before_it():
    """Codex 0.171 writes a `token_usage_record` line after each response (before its outputs), with
    its `response_id`; a rollout may hold those and no `token_count` event."""
    values = lines(TOOL_LOOP.read_bytes())
    for value in values:
        if value["type"] == "event_msg" and value["payload"]["type"] == "token_count":
            value["type"], value["payload"] = "token_usage_record", {
                "thread_id": "0199c3a1-7b2e-7c40-9d11-2f6a8e4b5c01", "response_id": "resp_1",
                "usage": value["payload"]["info"]["last_token_usage"], "turn_token_usage": {"input_tokens": 1}}
    transcript = loads(ndjson(values), "usage.jsonl")
    assert [usage_tokens(m) for m in transcript.messages] == [usage_tokens(m) for m in read(TOOL_LOOP).messages]
    assert recorded_usage(transcript.messages).tokens == 5301


@pytest.mark.parametrize("usage_lines", ["token_count", "token_usage_record"])
def test_a_prune_restates_the_usage_of_the_responses_after_what_it_cleared(usage_lines):
    """Codex resumes with the last recorded usage as the size of its context (it compacts before the
    turn when that is over its limit): each count after a cleared output counts it less, by Codex's
    4 characters a token; the session's running totals stay. `estimate` then says what prune said."""
    values = lines(TOOL_LOOP.read_bytes())
    if usage_lines == "token_usage_record":  # as Codex 0.171 writes them (with its token_count events too)
        values = [v for value in values for v in ([{"timestamp": value["timestamp"], "type": "token_usage_record",
                                                    "payload": {"response_id": "resp_1", "usage": value["payload"]["info"]["last_token_usage"]}},
                                                   value] if value["payload"].get("type") == "token_count" else [value])]
    data = ndjson(values)
    pruned, report = prune(loads(data, "r.jsonl"), PruneOptions(keep_last=1, hard_clear_after=1))
    out = dumps(pruned)
    assert (report.cleared, report.tokens_before, report.tokens_after) == (3, 5367, 5306)  # a KeyError kept under a notice
    assert estimate(loads(out, "r.jsonl")).tokens == report.tokens_after
    # The first response came before any cleared output, the second after one (51 tokens), the others after two.
    restated = [(old, new) for old, new in zip(values, lines(out)) if old != new and old["type"] != "response_item"]
    for old, new in restated:
        if old["type"] == "token_usage_record":
            assert {k: v for k, v in new["payload"].items() if k != "usage"} == \
                {k: v for k, v in old["payload"].items() if k != "usage"}
        else:
            assert new["payload"]["info"]["total_token_usage"] == old["payload"]["info"]["total_token_usage"]
    used = [(usage_tokens(a), usage_tokens(b)) for a, b in zip(read(TOOL_LOOP).messages, loads(out, "r.jsonl").messages)
            if usage_tokens(a)]
    assert used == [(4210, 4210), (4896, 4849), (5120, 5059), (5301, 5240)]
    assert len(restated) == 3 * (2 if usage_lines == "token_usage_record" else 1)


# --- compaction --------------------------------------------------------------------------------


def turn_items(k: int) -> list[dict]:
    """A turn of a tool loop with a long output: something to compact."""
    return [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"Step {k}: run the tests."}]},
        {"type": "reasoning", "summary": [], "content": None, "encrypted_content": f"gAAAAAB{k}"},
        {"type": "function_call", "name": "shell", "arguments": json.dumps({"command": ["pytest", "-q", f"tests/test_{k}.py"]}),
         "call_id": f"call_step_{k}"},
        {"type": "function_call_output", "call_id": f"call_step_{k}", "output": f"test_{k}.py ....\n" * 60},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Step {k} passes."}]},
    ]


def with_turns(path, turns: int = 8) -> bytes:
    """The fixture with more turns of a tool loop after it."""
    data = path.read_bytes()
    stamp = lines(data)[-1]["timestamp"]
    new = [json.dumps({"timestamp": stamp, "type": "response_item", "payload": payload}, separators=(",", ":"))
           for k in range(turns) for payload in turn_items(k)]
    return data + "\n".join(new).encode() + b"\n"


def compacted(transcript, keep=100):
    options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep))
    result, report = compact(transcript, options)
    assert report.strategy == "emergency"
    return dumps(result)


def appended(data: bytes, out: bytes) -> list[dict]:
    assert out.startswith(data.rstrip(b"\n"))  # nothing before it is rewritten
    return lines(out[len(data.rstrip(b"\n")):])


def compacted_line(out: bytes) -> dict:
    return next(v for v in reversed(lines(out)) if v["type"] == "compacted")


@pytest.mark.parametrize("path", (TOOL_LOOP, COMPACTED), ids=lambda p: p.name)
def test_compaction_appends_what_codex_writes_and_reads_back_with_one_summary(path):
    data = with_turns(path)
    out = compacted(loads(data, path.name), keep=600)
    new = appended(data, out)
    # Codex's own order: the compaction, its event, the turn context the history stands on; then the window.
    assert [line["type"] for line in new[:3]] == ["compacted", "event_msg", "turn_context"]
    assert new[1]["payload"] == {"type": "context_compacted"} and new[2]["payload"] == lines(data)[2]["payload"]
    window = [line["payload"] for line in new[3:]]
    assert {line["type"] for line in new[3:]} == {"response_item"} and window == agent_history(data)[-len(window):]
    payload = new[0]["payload"]
    assert list(payload) == ["message", "replacement_history"]  # a legacy rollout keeps no context window
    history = payload["replacement_history"]
    # The user's words (oldest first), the context Codex injected before the last of them, then the
    # summary after Codex's prefix; no acknowledgement, no tool item.
    assert history[-1] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": payload["message"]}]}
    assert payload["message"].startswith(CODEX_SUMMARY_PREFIX + "\n## ")
    assert all(item["type"] == "message" and item["role"] in ("user", "developer") for item in history)
    kinds = ["context" if item["content"][0]["text"].startswith("<environment_context>") else "user" for item in history[:-1]]
    assert kinds == ["user"] * (len(kinds) - 2) + ["context", "user"] and len(kinds) > 3
    assert all(f"> {item['content'][0]['text']}" not in payload["message"] for item in history[:-1])  # not quoted again
    again = loads(out, path.name)
    assert sum(map(is_summary_message, again.messages)) == 1 and is_summary_message(again.messages[len(history) - 1])
    assert errors(check(again)) == []
    twice = loads(compacted(again, keep=200), path.name)
    assert sum(map(is_summary_message, twice.messages)) == 1
    assert sum(texts(m).count(SUMMARY_PREFIX) for m in twice.messages) == 1
    words = Counter(texts(m) for m in twice.messages if m.role == "user" and not is_summary_message(m))
    assert words and max(words.values()) == 1  # each of the user's messages once


def test_the_environment_codex_injects_is_the_checkpoints_context_not_the_users_goal():
    data = with_turns(TOOL_LOOP)
    moved = json.dumps({"timestamp": "2025-10-08T10:20:00.000Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text":
            "<environment_context>\n  <cwd>/home/dev/shop/api</cwd>\n  <writable_roots>\n    <root>/home/dev/shop</root>\n"
            "    <root>/tmp</root>\n  </writable_roots>\n</environment_context>"}]}}, separators=(",", ":")).encode()
    data = data + moved + b"\n" + with_turns(TOOL_LOOP, 4)[len(TOOL_LOOP.read_bytes()):]  # a later turn moved elsewhere
    out = compacted(loads(data, TOOL_LOOP.name), keep=600)
    summary = compacted_line(out)["payload"]["message"].removeprefix(CODEX_SUMMARY_PREFIX + "\n")
    assert "<environment_context>" not in summary  # neither the goal nor the user's words
    assert summary.startswith("## Goal\nThe checkout test fails with a KeyError.")
    environment = ("### Environment\n- cwd: /home/dev/shop/api\n- approval_policy: on-request\n"
                   "- sandbox_mode: workspace-write\n- network_access: restricted\n- shell: bash\n"
                   "- writable_roots: /home/dev/shop, /tmp\n")
    assert "## Critical Context\n" + environment in summary  # each setting at its newest value
    again = loads(out, TOOL_LOOP.name)
    twice = compacted_line(compacted(again, keep=200))["payload"]["message"]
    assert twice.count("### Environment") == 1 and environment in twice  # merged, not quoted
    # The context Codex injected goes into the history as it was, each text once.
    history = compacted_line(out)["payload"]["replacement_history"]
    assert [i["content"][0]["text"] for i in history if i["content"][0]["text"].startswith("<environment")] == [
        lines(data)[1]["payload"]["content"][0]["text"], json.loads(moved)["payload"]["content"][0]["text"]]


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
    at = next(i for i, item in enumerate(history) if item["content"][0]["text"].startswith(CODEX_SUMMARY_PREFIX))
    summary = history[at]["content"][0]["text"]
    assert history[at]["role"] == "user" and "pytest tests/test_checkout.py -q" in summary  # what the summary kept
    window = history[at + 1:]
    # The kept window is the end of the old history, item for item (no acknowledgement before it).
    assert window == agent_history(TOOL_LOOP.read_bytes())[-len(window):]
    assert window[-1] == {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "Thanks. Is there a test for an empty cart?"}]}
    calls = {item["call_id"]: i for i, item in enumerate(window) if item["type"] in (
        "function_call", "custom_tool_call", "local_shell_call")}
    outputs = {item["call_id"]: i for i, item in enumerate(window) if item["type"] in (
        "function_call_output", "custom_tool_call_output")}
    assert calls.keys() == outputs.keys() and all(calls[c] < outputs[c] for c in calls)
    assert calls  # the window holds a tool loop


def test_slim_keeps_the_session_lines_and_the_compaction():
    options = CompactOptions(force=True, emergency=True, slim=True, summary=SummaryOptions(keep_recent_tokens=100))
    result, _ = compact(read(TOOL_LOOP), options)
    out = dumps(result)
    assert [(line["type"], line["payload"].get("type")) for line in lines(out)][:5] == [
        ("session_meta", None), ("turn_context", None), ("compacted", None), ("event_msg", "context_compacted"),
        ("turn_context", None)]
    # The window's items, each response's usage line after it (restated on compact's model).
    assert {(line["type"], line["payload"].get("type")) for line in lines(out)[5:]} <= {
        ("response_item", line["payload"].get("type")) for line in lines(out)[5:]} | {("event_msg", "token_count")}
    assert errors(check(loads(out, "x"))) == []


def test_slim_keeps_the_token_count_codex_restores_wherever_it_is():
    """Codex restores its context's size from the newest token count that has its `info`, before
    the compaction too (`last_token_info_from_rollout`): slim keeps that one, and drops one without
    `info` after it, which Codex passes over."""
    values = lines(COMPACTED.read_bytes())
    compaction = next(i for i, v in enumerate(values) if v["type"] == "compacted")
    values = [v for i, v in enumerate(values) if i < compaction or v["payload"].get("type") != "token_count"]
    restored = next(v for v in reversed(values) if v["payload"].get("type") == "token_count")
    values.append({**restored, "payload": {"type": "token_count", "info": None}})
    result = CliRunner().invoke(cli, ["slim", "-q"], input=ndjson(values))
    assert result.exit_code == 0, result.stderr
    counts = [v for v in lines(result.stdout_bytes) if v["payload"].get("type") == "token_count"]
    assert counts == [restored]


# --- paginated rollouts: ordinals ------------------------------------------------------------


def test_every_line_a_compaction_appends_to_a_paginated_rollout_continues_its_ordinals():
    data = paginated(with_turns(TOOL_LOOP))
    out = compacted(loads(data, "paginated.jsonl"), keep=600)
    values = lines(out)
    assert [v["ordinal"] for v in values] == list(range(len(values)))
    assert all(list(v)[:2] == ["timestamp", "ordinal"] for v in values)  # where Codex puts it
    assert not any("ordinal" in v for v in lines(compacted(loads(with_turns(TOOL_LOOP), "legacy.jsonl"), keep=600)))


def test_a_line_added_inside_a_paginated_rollout_moves_the_ordinals_after_it():
    values = lines(TOOL_LOOP.read_bytes())
    del values[17]  # the output of call_local_04
    data = paginated(ndjson(values)).split(b"\n")
    broken = loads(b"\n".join(data), "broken.jsonl")
    out = dumps(repair(broken)[0])
    values = lines(out)
    assert [v["ordinal"] for v in values] == list(range(len(values)))
    added = next(i for i, v in enumerate(values) if v["payload"].get("call_id") == "call_local_04"
                 and v["payload"]["type"] == "function_call_output")
    after = out.split(b"\n")[added + 1:]
    # The lines after it are as they were but for their ordinal, one up.
    assert [re.sub(rb'"ordinal":\d+', b"", line) for line in after] == [
        re.sub(rb'"ordinal":\d+', b"", line) for line in data[added:]]


def test_an_event_copy_held_in_part_is_written_whole_when_its_ordinal_moves():
    """The events nothing reads into (a command's output again, for the UI) are held by their type
    as they are parsed; one that is not in Codex's layout, whose ordinal a repair moves, is written
    anew from its bytes, with everything it held."""
    values = lines(TOOL_LOOP.read_bytes())
    del values[17]  # the output of call_local_04: repair adds a result there, the lines after it move
    event = {"timestamp": values[20]["timestamp"], "type": "event_msg",
             "payload": {"type": "exec_command_end", "call_id": "call_local_05", "aggregated_output": "ok\n" * 200,
                         "exit_code": 0}}
    values.insert(20, event)
    data = paginated(ndjson(values)).split(b"\n")
    data[20] = json.dumps(json.loads(data[20])).encode()  # spaced: not the layout the ordinal is moved in
    out = lines(dumps(repair(loads(b"\n".join(data), "rollout.jsonl"))[0]))
    copy = next(v for v in out if v["payload"].get("type") == "exec_command_end")
    assert copy == {**event, "ordinal": 21, "timestamp": event["timestamp"]} and copy["payload"] == event["payload"]
    assert [v["ordinal"] for v in out] == list(range(len(out)))


def test_a_line_dropped_inside_a_paginated_rollout_moves_the_ordinals_after_it_down():
    data = paginated(TOOL_LOOP.read_bytes())
    values = lines(data)
    values.insert(12, {"timestamp": values[11]["timestamp"], "ordinal": 0, "type": "response_item", "payload": {
        "type": "function_call_output", "call_id": "call_gone", "output": "an orphan"}})
    for n, value in enumerate(values):
        value["ordinal"] = n
    repaired, report = repair(loads(ndjson(values), "orphan.jsonl"))
    out = lines(dumps(repaired))
    assert report.fixes and not any(v["payload"].get("call_id") == "call_gone" for v in out)
    assert [v["ordinal"] for v in out] == list(range(len(out)))


def test_compact_slim_of_a_paginated_rollout_numbers_what_is_left_again(tmp_path):
    """Codex reads a paginated rollout into its index by byte offset: compact --slim drops what it
    does not read and numbers the lines left from the first one's ordinal, with no gap (the index
    is reset when the file is rewritten where Codex keeps it: test_codex_thread_store.py)."""
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(paginated(with_turns(TOOL_LOOP)))
    result = CliRunner().invoke(cli, ["compact", "--emergency", "--force", "--keep-recent-tokens", "600", "--slim",
                                      str(path)])
    assert result.exit_code == 0, result.output
    out = [json.loads(line) for line in result.stdout_bytes.splitlines() if line.strip()]
    assert [v["ordinal"] for v in out] == list(range(out[0]["ordinal"], out[0]["ordinal"] + len(out)))
    assert len(result.stdout_bytes) < path.stat().st_size
    assert [v["type"] for v in out].count("compacted") == 1


def test_the_compaction_carries_the_next_context_window():
    """Codex 0.171 numbers its context windows (session_meta `context_window`, then each compaction's)."""
    values = lines(paginated(with_turns(TOOL_LOOP)))
    values[0]["payload"]["context_window"] = {"window_id": "0199c3a1-7b30-7000-8000-000000000001"}
    out = compacted(loads(ndjson(values), "paginated.jsonl"), keep=600)
    payload = compacted_line(out)["payload"]
    assert list(payload) == ["message", "replacement_history", "window_number", "first_window_id", "previous_window_id",
                             "window_id"]
    assert (payload["window_number"], payload["first_window_id"], payload["previous_window_id"]) == (
        1, "0199c3a1-7b30-7000-8000-000000000001", "0199c3a1-7b30-7000-8000-000000000001")
    window = uuid.UUID(payload["window_id"])
    assert window.version == 7 and window.int >> 80 == 1759918565000  # the last line's time, in ms
    assert compacted(loads(ndjson(values), "paginated.jsonl"), keep=600) == out  # the same input, the same bytes
    again = compacted_line(compacted(loads(out, "paginated.jsonl"), keep=200))["payload"]
    assert (again["window_number"], again["first_window_id"], again["previous_window_id"]) == (
        2, payload["first_window_id"], payload["window_id"])


def test_the_world_state_the_history_stands_on_follows_the_compaction():
    """Codex rebuilds its context's baseline from the newest full `world_state` and the patches
    after it; without one after a compaction it injects its whole context again."""
    values = lines(with_turns(TOOL_LOOP))
    values[3:3] = [{"timestamp": values[2]["timestamp"], "type": "world_state",
                    "payload": {"full": True, "state": {"environments": {"cwd": "/home/dev/shop", "shell": "bash"}, "skills": "a"}}}]
    values.append({"timestamp": values[-1]["timestamp"], "type": "world_state",
                   "payload": {"full": False, "state": {"environments": {"cwd": "/home/dev/shop/api"}, "skills": None}}})
    new = appended(ndjson(values), compacted(loads(ndjson(values), "state.jsonl"), keep=600))
    assert [line["type"] for line in new[:4]] == ["compacted", "event_msg", "world_state", "turn_context"]
    assert new[2]["payload"] == {"full": True, "state": {"environments": {"cwd": "/home/dev/shop/api", "shell": "bash"}}}


def test_a_turn_context_and_a_world_state_are_held_in_part_until_a_compaction_carries_them():
    """Their many small values are not held once the line is parsed (a world state keeps whether it
    is whole); what a compaction carries over is read again from the line's bytes."""
    values = lines(with_turns(TOOL_LOOP))
    state = {"full": True, "state": {"environments": {"cwd": "/home/dev/shop", "shell": "bash"}}}
    values[3:3] = [{"timestamp": values[2]["timestamp"], "type": "world_state", "payload": state}]
    records = loads(ndjson(values), "state.jsonl").source.records
    settings = [(record, value) for record, value in zip(records, values) if value["type"] in ("turn_context", "world_state")]
    assert {value["type"] for _, value in settings} == {"turn_context", "world_state"}
    assert all(record[1]["payload"] == ({"full": True} if value["type"] == "world_state" else {}) for record, value in settings)
    assert [whole_value(record) for record, _ in settings] == [value for _, value in settings]


@pytest.mark.parametrize("path", [TOOL_LOOP, COMPACTED], ids=["tool loop", "compacted"])
def test_a_rollout_read_for_counting_holds_its_outputs_replies_and_calls_as_sizes(path):
    """Read for counting (`estimate`, `check`, `cut-point`), a `response_item` line of an output, a
    reply, a call or a reasoning item is viewed: the messages made of such items stay unread while
    counted and checked, and read as the whole reading reads them; a user's message is read (its
    text tells the user's words from what Codex injected), and a paginated rollout alike."""
    for data in (path.read_bytes(), paginated(path.read_bytes())):
        lazily, whole = loads(data, path.name, lazily=True), loads(data, path.name)
        unread = [m for m in lazily.messages if not m.is_read]
        assert {m.role for m in unread} == {"assistant", "tool"}
        assert all(m.is_read for m in lazily.messages if m.role == "user")
        assert estimate(lazily) == estimate(whole) and check(lazily) == check(whole)
        assert not any(m.is_read for m in unread)
        assert lazily.messages == whole.messages and [m.line for m in lazily.messages] == [m.line for m in whole.messages]
        assert dumps(lazily) == data  # written back as read: the viewed lines whole again
        changed = lazily.with_messages(lazily.messages[:-1])
        assert dumps(changed) == dumps(whole.with_messages(whole.messages[:-1]))


# --- forked rollouts -----------------------------------------------------------------------------


def forked(tmp_path, parent_lines: int = 12) -> tuple:
    """A parent rollout under a CODEX_HOME and a fork of it in another day's directory, as Codex
    0.171 writes one: its own lines only, numbered on from the parent's first `parent_lines`."""
    parent = paginated(TOOL_LOOP.read_bytes())
    parent_id = lines(parent)[0]["payload"]["id"]
    child_id = "0199c3a1-0000-7000-8000-00000000f0a4"
    meta = {"timestamp": "2025-10-08T10:20:00.000Z", "type": "session_meta", "payload": {
        **lines(parent)[0]["payload"], "id": child_id, "forked_from_id": parent_id,
        "history_base": {"thread_id": parent_id, "end_ordinal_exclusive": parent_lines,
                         "end_byte_offset": len(b"".join(line + b"\n" for line in parent.split(b"\n")[:parent_lines]))}}}
    own = [meta, {"timestamp": "2025-10-08T10:20:01.000Z", "type": "response_item", "payload": {
        "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Branch off: only read."}]}},
        *({"timestamp": "2025-10-08T10:20:02.000Z", "type": "response_item", "payload": item}
          for k in range(3) for item in turn_items(k))]
    child = ndjson([{"timestamp": v["timestamp"], "ordinal": n, **v} for n, v in enumerate(own, parent_lines)])
    sessions = tmp_path / ".codex" / "sessions"
    (sessions / "2025" / "10" / "08").mkdir(parents=True)
    (sessions / "2025" / "10" / "09").mkdir(parents=True)
    (sessions / "2025" / "10" / "08" / TOOL_LOOP.name).write_bytes(parent)
    path = sessions / "2025" / "10" / "09" / f"rollout-2025-10-08T10-20-00-{child_id}.jsonl"
    path.write_bytes(child)
    return path, parent


def test_a_forked_rollout_is_read_after_the_lines_of_its_parent_it_starts_with(tmp_path):
    path, parent = forked(tmp_path)
    transcript = load(path)
    prefix = loads(b"\n".join(parent.split(b"\n")[:12]), "prefix.jsonl")
    assert [texts(m) for m in transcript.messages[:len(prefix.messages) + 1]] == [
        texts(m) for m in prefix.messages] + ["Branch off: only read."]
    assert transcript.messages[len(prefix.messages)].line == 2 and transcript.messages[0].line is None  # not its lines
    assert dumps(transcript) == path.read_bytes() and errors(check(transcript)) == []
    out = compacted(transcript, keep=200)  # appended to the fork, numbered on from its own lines
    assert out.startswith(path.read_bytes()) and [v["ordinal"] for v in lines(out)] == list(range(12, 12 + len(lines(out))))


def test_a_fork_whose_parent_is_missing_is_refused_naming_it(tmp_path):
    path, _ = forked(tmp_path)
    (tmp_path / ".codex" / "sessions" / "2025" / "10" / "08" / TOOL_LOOP.name).unlink()
    with pytest.raises(InputError, match="rollout 0199c3a1-7b2e-7c40-9d11-2f6a8e4b5c01") as raised:
        load(path)
    assert raised.value.exit_code == 3
    result = CliRunner().invoke(cli, ["estimate", str(path)])
    assert result.exit_code == 3 and "0199c3a1-7b2e-7c40-9d11-2f6a8e4b5c01" in result.output


def test_a_change_to_what_a_fork_takes_from_its_parent_is_refused(tmp_path):
    path, _ = forked(tmp_path)
    transcript = load(path)
    messages = list(transcript.messages)
    messages[1] = messages[1].with_blocks((Text("Another request."),))
    with pytest.raises(ShapeError, match="parent rollout"):
        dumps(transcript.with_messages(messages))


def test_an_item_whose_type_is_not_a_string_is_not_sent(tmp_path):
    """Codex skips a line it cannot parse; every command reads the rest (it was an internal error)."""
    lines = TOOL_LOOP.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == "response_item")
    value = json.loads(lines[first])
    value["payload"]["type"] = ["message"]
    lines[first] = json.dumps(value)
    path = tmp_path / TOOL_LOOP.name
    path.write_text("\n".join(lines) + "\n")
    assert len(load(path).messages) == len(load(TOOL_LOOP).messages) - 1
    for command in (["estimate"], ["check"], ["repair"], ["prune"], ["compact", "--emergency", "--force"]):
        result = CliRunner().invoke(cli, [*command, str(path)], prog_name="transcompact")
        assert result.exit_code in (0, 1) and "internal error" not in result.stderr, (command, result.stderr)


def test_compaction_keeps_every_line_before_it_blank_ones_too(tmp_path):
    """An append-only log changes nothing before what it appends (blank lines were dropped,
    so every later line moved)."""
    lines = TOOL_LOOP.read_text().splitlines()
    path = tmp_path / TOOL_LOOP.name
    path.write_text("\n".join([*lines[:3], "", *lines[3:6], "", *lines[6:]]) + "\n")
    result = CliRunner().invoke(cli, ["compact", "--emergency", "--force", "-q", "--keep-recent-tokens", "100", str(path)],
                                prog_name="transcompact")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes.startswith(path.read_bytes()) and len(result.stdout_bytes) > len(path.read_bytes())
