"""What `repair` changes and reports: renamed duplicate ids, no new errors, the report equal to
what `check` then says, and time linear in the size of the damage."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transcompact import dumps, loads, repair
from transcompact.core.model import Transcript
from transcompact.ops.validity.check import check, errors

from .builders import (
    LINEAR,
    SESSION,
    THINKING_OFF,
    anthropic,
    assistant,
    claude_code,
    growth,
    log_assistant,
    log_user,
    openai,
    openai_call,
    text,
    thinking,
    tool_result,
    tool_use,
    user,
)
from .builders import run_cli as run
from .conftest import CORPUS, FIXTURES, supported_corpus_files
from .strategies import anthropic_messages, claude_code_lines, conversations, encode_document, encode_lines, openai_messages

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ID = re.compile(r"[a-zA-Z0-9_-]+")


def fixed(transcript: Transcript) -> tuple[list[tuple[str, int | None, str]], Transcript]:
    """(rule, message index, text) of each fix, and the repaired transcript as written and read back."""
    repaired, report = repair(transcript)
    written = dumps(repaired)
    return [(f.rule, f.index, f.text) for f in report.fixes], loads(written, transcript.name, format=transcript.format)


def ids_of(transcript: Transcript) -> list[tuple[str, str]]:
    """(block kind, call id) of every tool call and result, in order."""
    return [(type(b).__name__, b.id if hasattr(b, "id") else b.tool_call_id)
            for m in transcript.messages for b in m.blocks if hasattr(b, "id") or hasattr(b, "tool_call_id")]


# --- duplicate tool ids ---------------------------------------------------------------------


def test_a_reused_tool_use_id_is_renamed_with_the_result_answering_it():
    transcript = anthropic(
        user("go"),
        assistant([tool_use("toolu_1")]), user([tool_result("toolu_1")]),
        assistant([tool_use("toolu_1"), tool_use("toolu_1")]), user([tool_result("toolu_1"), tool_result("toolu_1")]),
    )
    fixes, out = fixed(transcript)
    assert ids_of(out) == [("ToolCall", "toolu_1"), ("ToolResult", "toolu_1"),
                           ("ToolCall", "toolu_1_2"), ("ToolCall", "toolu_1_3"), ("ToolResult", "toolu_1_2"), ("ToolResult", "toolu_1_3")]
    assert [rule for rule, _, _ in fixes] == ["A6", "A6"]
    assert fixes[0][1] == 3 and "'toolu_1' to 'toolu_1_2'" in fixes[0][2]
    assert check(out) == []


def test_a_new_id_is_one_no_block_uses_and_matches_the_id_pattern():
    transcript = anthropic(
        user("go"),
        assistant([tool_use("toolu_1"), tool_use("toolu_1_2")]), user([tool_result("toolu_1"), tool_result("toolu_1_2")]),
        assistant([tool_use("toolu_1"), tool_use("call:9")]), user([tool_result("toolu_1"), tool_result("call:9")]),
    )
    _, out = fixed(transcript)
    assert ids_of(out)[4:] == [("ToolCall", "toolu_1_3"), ("ToolCall", "call_9"), ("ToolResult", "toolu_1_3"), ("ToolResult", "call_9")]
    assert all(ID.fullmatch(call_id) for _, call_id in ids_of(out))
    assert check(out) == []


def test_a_reused_id_without_a_result_is_renamed_then_answered():
    transcript = anthropic(user("go"), assistant([tool_use("toolu_1"), tool_use("toolu_1")]), user([tool_result("toolu_1")]))
    fixes, out = fixed(transcript)
    assert [rule for rule, _, _ in fixes] == ["A6", "A2"]
    assert ids_of(out) == [("ToolCall", "toolu_1"), ("ToolCall", "toolu_1_2"), ("ToolResult", "toolu_1"), ("ToolResult", "toolu_1_2")]
    assert check(out) == []


def test_a_reused_server_tool_id_is_renamed_with_its_result_in_the_same_message():
    call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    transcript = anthropic(user("go"), assistant([call, found, text("one")]), user("again"), assistant([call, found, text("two")]), user("ok"))
    fixes, out = fixed(transcript)
    assert [rule for rule, _, _ in fixes] == ["A6"]
    assert json.loads(dumps(out))["messages"][3]["content"][:2] == [{**call, "id": "srvtoolu_1_2"}, {**found, "tool_use_id": "srvtoolu_1_2"}]
    assert check(out) == []


def test_openai_calls_with_one_id_in_a_message_are_told_apart_with_their_tool_messages():
    transcript = openai(
        user("go"),
        {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1"), openai_call("call_1", "cat")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a"},
        {"role": "tool", "tool_call_id": "call_1", "content": "b"},
        {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1")]},  # another message: its own run
        {"role": "tool", "tool_call_id": "call_1", "content": "c"},
    )
    fixes, out = fixed(transcript)
    written = json.loads(dumps(out))
    assert [c["id"] for c in written[1]["tool_calls"]] == ["call_1", "call_1_2"]
    assert [m.get("tool_call_id") for m in written[2:]] == ["call_1", "call_1_2", None, "call_1"]
    assert [rule for rule, _, _ in fixes] == ["O1"]
    assert check(out) == []


def test_claude_code_log_lines_carry_the_new_ids():
    log = claude_code(
        log_user("go"),
        log_assistant([tool_use("toolu_1")], "msg_1"), log_user([tool_result("toolu_1")]),
        log_assistant([tool_use("toolu_1")], "msg_2"), log_user([tool_result("toolu_1")]),
    )
    repaired, report = repair(log)
    lines = [json.loads(line) for line in dumps(repaired).splitlines()]
    assert [(f.rule, f.line) for f in report.fixes] == [("A6", 4)]
    assert [line["message"]["content"][0].get("id") or line["message"]["content"][0].get("tool_use_id")
            for line in lines[1:]] == ["toolu_1", "toolu_1", "toolu_1_2", "toolu_1_2"]
    assert [line["uuid"] for line in lines] == [f"00000000-0000-4000-8000-{n:012d}" for n in range(1, 6)]  # nothing else changed


# --- no new errors --------------------------------------------------------------------------


def test_an_orphan_result_alone_in_the_first_message_leaves_a_placeholder_not_an_assistant_first():
    transcript = anthropic(user([tool_result("toolu_gone")]), assistant("I see."), user("go on"))
    fixes, out = fixed(transcript)
    assert fixes == [
        ("A1", 0, "removed tool_result toolu_gone that answers no tool_use"),
        ("A5", 0, "replaced an empty message by a user message '(no content)': removing it would break A7"),
    ]
    assert [(m.role, m.blocks[0].text) for m in out.messages[:1]] == [("user", "(no content)")]
    assert check(out) == []


def test_an_empty_message_between_others_is_still_removed():
    fixes, out = fixed(anthropic(user("go"), assistant("ok"), user([]), user("more")))
    assert fixes == [("A5", 2, "removed an empty message")]
    assert len(out.messages) == 3


def test_an_empty_last_user_message_is_kept_so_that_an_assistant_message_does_not_end_the_transcript():
    fixes, out = fixed(anthropic(user("go"), assistant([thinking(), text("Done.")]), user(""), **THINKING_OFF))
    assert [rule for rule, _, _ in fixes] == ["A5", "A5"]
    assert out.messages[-1].role == "user" and check(out) == []


def test_a_blank_text_after_thinking_becomes_a_placeholder_so_thinking_does_not_end_the_message():
    fixes, out = fixed(anthropic(user("go"), assistant([thinking(), text("ok"), thinking(), text("\n\n")]), user("more")))
    assert fixes == [("A5", 1, "replaced the whitespace-only text block that ends the message by '(no content)', "
                               "which keeps thinking from ending it")]
    assert [type(b).__name__ for b in out.messages[1].blocks] == ["Thinking", "Text", "Thinking", "Text"]
    assert check(out) == []


def test_a_bad_role_after_the_final_assistant_message_is_replaced_when_removing_it_would_break_a_rule():
    """With thinking disabled, an assistant message holding thinking may not be last (A4)."""
    transcript = anthropic(user("go"), assistant([thinking(), text("ok")]), {"role": "tool", "content": "x"}, **THINKING_OFF)
    fixes, out = fixed(transcript)
    assert fixes == [("A8", 2, "replaced a message with role 'tool' by a user message '(no content)': removing it would break A4")]
    assert check(out) == []


# --- repair's report is check's verdict -----------------------------------------------------




def assert_report_is_checks_verdict(data: bytes) -> None:
    """`repair` adds no error rule, and what it says cannot be repaired is what `check` says of its output."""
    before = run("check", "--json", "-", input=data)
    had = {v["rule"] for v in json.loads(before.stdout)["files"][0]["violations"] if v["severity"] == "error"}
    repaired = run("repair", "-", input=data)
    assert repaired.exit_code in (0, 1), repaired.output
    remaining = [line.replace(" cannot be repaired: ", " ", 1) for line in repaired.stderr.splitlines() if " cannot be repaired: " in line]
    after = run("check", "-", input=repaired.stdout_bytes)
    if after.exit_code == 3:
        assert remaining == []  # every message was removed: nothing to read back, nothing left
        return
    verdict = [line for line in after.stdout.splitlines() if " (warning) " not in line]
    assert remaining == verdict
    assert {re.search(r" ([ACO]\d+) ", line).group(1) for line in verdict} <= had
    assert repaired.exit_code == after.exit_code == (1 if verdict else 0)


def test_what_cannot_be_repaired_is_reported_on_the_line_check_then_names():
    """Repair drops the line of an orphan result above an unsigned thinking block it cannot fix:
    the report names the line the thinking block is on in the output."""
    log = claude_code(
        log_user("go"), log_assistant([text("ok")], "msg_1"), log_user([tool_result("toolu_gone")]), log_user("and?"),
        log_assistant([thinking(signature=None), text("ok")], "msg_2"), log_user("bye"),
    )
    data = dumps(log)
    result = run("repair", "-", input=data)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "<stdin>:3: message 2: A1 fixed: removed tool_result toolu_gone that answers no tool_use",
        "<stdin>:4: message 3: A4 cannot be repaired: thinking block without a signature",
    ]
    assert_report_is_checks_verdict(data)


@st.composite
def damaged_transcripts(draw):
    """(format, bytes) of a generated transcript that may also reuse tool ids and start with an orphan result."""
    turns, used, reused = draw(conversations()), [], []
    for turn in turns:
        if turn[0] == "calls":
            calls = [(draw(st.sampled_from(used)),) + call[1:] if used and draw(st.booleans()) else call for call in turn[1]]
            used += [call[0] for call in calls]
            turn = ("calls", calls, turn[2])
        reused.append(turn)
    if draw(st.booleans()):
        reused.insert(0, ("orphan", "toolu_gone", "output of a call compaction dropped"))
    kind = draw(st.sampled_from(["anthropic", "openai", "jsonl-anthropic", "jsonl-openai", "claude-code"]))
    if kind == "claude-code":
        return kind, encode_lines(claude_code_lines(reused))
    messages = anthropic_messages(reused) if kind.endswith("anthropic") else openai_messages(reused)
    if kind.startswith("jsonl"):
        return kind, encode_lines(messages)
    return kind, encode_document(messages, draw(st.sampled_from(["bare", "history", "request"])))


@SETTINGS
@given(damaged_transcripts())
def test_repair_of_generated_transcripts_adds_no_error_and_reports_what_check_says(generated):
    _, data = generated
    if run("check", "-", input=data).exit_code == 3:
        return  # an empty conversation is not a transcript
    assert_report_is_checks_verdict(data)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not present")
@pytest.mark.parametrize("path", supported_corpus_files())
def test_repair_of_corpus_files_adds_no_error_and_reports_what_check_says(path):
    assert_report_is_checks_verdict(path.read_bytes())


# --- linear time ----------------------------------------------------------------------------


def unanswered_log(calls: int) -> Transcript:
    """A Claude Code log whose responses each end on a tool call that got no result."""
    lines, parent = [], None
    for n in range(calls + 1):
        uid = f"00000000-0000-4000-8000-{n:012d}"
        stamp = f"2026-11-01T{10 + n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
        message = user("go") if n == 0 else {"id": f"msg_{n}", **assistant([tool_use(f"toolu_{n}")])}
        lines.append({"parentUuid": parent, "isSidechain": False, "sessionId": SESSION, "type": message["role"],
                      "message": message, "uuid": uid, "timestamp": stamp})
        parent = uid
    return loads(encode_lines(lines), f"{SESSION}.jsonl")


def parallel_calls(calls: int) -> Transcript:
    """One OpenAI message with many parallel tool calls, every other one unanswered."""
    return openai(
        user("go"),
        {"role": "assistant", "content": None, "tool_calls": [openai_call(f"call_{n}") for n in range(calls)]},
        *({"role": "tool", "tool_call_id": f"call_{n}", "content": "ok"} for n in range(0, calls, 2)),
    )


@pytest.mark.parametrize("make, size", [
    pytest.param(unanswered_log, 2_000, id="claude-code-unanswered-calls"),
    pytest.param(parallel_calls, 4_000, id="openai-parallel-calls"),
])
def test_repair_takes_linear_time_in_the_number_of_calls(make, size):
    small, large = make(size), make(4 * size)
    assert errors(check(repair(large)[0])) == []
    ratio = growth(repair, small, large)
    assert ratio <= LINEAR, ratio


def test_repair_that_would_add_an_error_writes_nothing(monkeypatch, tmp_path):
    """The post-condition of every rewrite: were a fix to add an error, nothing is written."""
    import importlib

    module = importlib.import_module("transcompact.ops.validity.repair")
    monkeypatch.setattr(module, "repair", lambda t: (t.with_messages(t.messages[1:]), []))
    target = tmp_path / "out.json"
    result = run("repair", "--format", "anthropic", "-o", str(target), "-", input=dumps(anthropic(user("go"), assistant("ok"), user("more"))))
    assert result.exit_code == 5
    assert result.stderr.splitlines()[0] == ("transcompact: error: <stdin>: repair would add A7 at message 0: "
                                             "the first message is assistant, not user; nothing written")
    assert not target.exists()


def test_a_call_answered_twice_is_flagged_and_repair_keeps_the_first_answer():
    """O1 (one tool message per tool_call_id), and the Anthropic API's single result
    for each tool_use: never flagged before, and `--to openai` wrote both."""
    call = {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}
    anthropic = {"model": "claude-sonnet-4-5", "messages": [
        {"role": "user", "content": "list"}, {"role": "assistant", "content": [call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"},
                                     {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]},
        {"role": "assistant", "content": "One file."}]}
    openai = {"model": "gpt-5", "messages": [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
                                                                "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        {"role": "assistant", "content": "One file."}]}
    for body, rule, said in ((anthropic, "A1", "tool_result toolu_1 answers a tool_use already answered"),
                             (openai, "O1", "tool call call_1 is answered by a second tool message")):
        transcript = loads(json.dumps(body).encode(), "t.json")
        assert [(v.rule, v.text) for v in errors(check(transcript))] == [(rule, said)]
        repaired, report = repair(transcript)
        assert [f.rule for f in report.fixes] == [rule] and errors(check(repaired)) == []
        assert json.loads(dumps(repaired))["messages"][2] == body["messages"][2] | (
            {"content": body["messages"][2]["content"][:1]} if rule == "A1" else {})


def test_a_tool_message_a_user_message_came_before_is_moved_to_its_call_not_thrown_away():
    """The only answer to a call, after a user message: check said it was a second answer, and
    repair removed it for a placeholder (found using repair as a user). It is moved to right after
    its call, what it says kept."""
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}
    body = {"messages": [{"role": "user", "content": "hi"}, call, {"role": "user", "content": "hm"},
                         {"role": "tool", "tool_call_id": "c1", "content": "r"}]}
    transcript = loads(json.dumps(body).encode(), "o.json")
    said = {(v.rule, v.text) for v in check(transcript)}
    assert ("O2", "tool message c1 answers tool call c1 of message 1, with other messages between them") in said
    repaired, report = repair(transcript)
    assert [fix.text for fix in report.fixes] == ["moved tool message c1 to right after its call (message 1)"]
    assert json.loads(dumps(repaired))["messages"] == [body["messages"][0], call, body["messages"][3], body["messages"][2]]
    assert errors(check(repaired)) == []


def test_a_pi_result_renamed_with_its_call_stays_in_its_entry():
    """An id used twice in a pi session: the later call and its result get a new id, the result in
    its own entry (its id, its times); it was written as a new entry, its id and times lost and the
    next entry re-linked (found using repair as a user)."""
    source = FIXTURES / "pi/2026-01-10T09-00-00-000Z_4f1c2a9e-6b1d-4c0e-9a51-0c3f5e2b7d11.jsonl"
    data = source.read_bytes().replace(b"toolu_01EditCalc", b"toolu_01ReadCalc")
    repaired, report = repair(loads(data, "p.jsonl"))
    assert [fix.rule for fix in report.fixes] == ["A6"]
    before, after = data.splitlines(), dumps(repaired).splitlines()
    changed = [(json.loads(a), json.loads(b)) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and [b["id"] for _, b in changed] == [a["id"] for a, _ in changed]
    result = next(b for _, b in changed if b["message"]["role"] == "toolResult")
    was = next(a for a, _ in changed if a["message"]["role"] == "toolResult")
    assert result["message"]["toolCallId"] == "toolu_01ReadCalc_2"
    assert {**result, "message": {**result["message"], "toolCallId": "toolu_01ReadCalc"}} == was  # nothing else changed
