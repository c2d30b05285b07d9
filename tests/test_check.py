"""Every rule of `check`: a small transcript that breaks it and one that keeps it, and check's speed."""

from __future__ import annotations

from pathlib import Path

import pytest

from transcompact.core.model import USER, Message, Text, Transcript
from transcompact.core.violation import ERROR, WARNING
from transcompact.ops.validity.check import RULES, check, errors

from .builders import (
    LINEAR,
    SESSION,
    THINKING_OFF,
    THINKING_ON,
    anthropic,
    assistant,
    claude_code,
    growth,
    log_assistant,
    log_user,
    openai,
    openai_call,
    server_call,
    server_result,
    text,
    thinking,
    tool_result,
    tool_use,
    user,
)

INTERLEAVED = [thinking("Search first."), server_call("srvtoolu_1"), server_result("srvtoolu_1"),
               thinking("Now the second one."), server_call("srvtoolu_2"), server_result("srvtoolu_2"), text("Both say GET is safe.")]


def many(count: int) -> Transcript:
    return Transcript("anthropic", "anthropic", (Message(USER, (Text("hi"),)),) * count)


# (rule, the transcript, the path it is checked under): each failing case breaks its rule, the
# passing case beside it is the nearest transcript that keeps it.
FAILING = [
    pytest.param("A1", lambda: anthropic(user("go"), assistant("ok"), user([tool_result("toolu_gone")])), None, id="A1-orphan"),
    pytest.param("A2", lambda: anthropic(user("go"), assistant([tool_use("toolu_1")]), user("and?")), None, id="A2-unanswered"),
    pytest.param("A2", lambda: anthropic(user("go"), assistant([tool_use("toolu_1")])), None, id="A2-ends-on-call"),
    pytest.param("A3", lambda: anthropic(user("go"), assistant([server_call("srvtoolu_1"), text("found")]), user("and?")), None, id="A3-no-result"),
    pytest.param("A3", lambda: anthropic(user("go"), assistant([server_result("srvtoolu_1"), text("found")])), None, id="A3-result-first"),
    pytest.param("A4", lambda: anthropic(user("go"), assistant([text("Hmm."), thinking(), text("ok")])), None, id="A4-text-before"),
    pytest.param("A4", lambda: anthropic(user("go"), assistant([thinking(), text("ok"), thinking()])), None, id="A4-thinking-last"),
    pytest.param("A4", lambda: anthropic(user("go"), assistant([thinking(signature=None), text("ok")])), None, id="A4-unsigned"),
    pytest.param("A4", lambda: anthropic(user("go"), assistant([text("ok"), tool_use("toolu_1")]), user([tool_result("toolu_1")]), **THINKING_ON),
                 None, id="A4-tool-loop-without-thinking"),
    pytest.param("A4", lambda: anthropic(user("go"), assistant([thinking(), text("ok")]), **THINKING_OFF), None, id="A4-disabled-final"),
    pytest.param("A5", lambda: anthropic(user("go"), assistant([text(" \n"), text("ok")]), user("more")), None, id="A5-blank-text"),
    pytest.param("A5", lambda: anthropic(user("go"), assistant([]), user("more")), None, id="A5-empty-message"),
    pytest.param("A6", lambda: anthropic(user("go"), assistant([tool_use("toolu_1")]), user([tool_result("toolu_1")]),
                                         assistant([tool_use("toolu_1")]), user([tool_result("toolu_1")])), None, id="A6-twice"),
    pytest.param("A6", lambda: anthropic(user("go"), assistant([tool_use("call:1")]), user([tool_result("call:1")])), None, id="A6-pattern"),
    pytest.param("A6", lambda: anthropic(user("go"), assistant([tool_use("toolu_1\n")]), user([tool_result("toolu_1\n")])), None,
                 id="A6-final-newline"),
    pytest.param("A7", lambda: anthropic(assistant("Hello."), user("hi")), None, id="A7-assistant-first"),
    pytest.param("A8", lambda: anthropic(user("go"), {"role": "tool", "content": "x"}, user("more")), None, id="A8-role"),
    pytest.param("A9", lambda: anthropic(user([text(f"part {n}", cache_control={"type": "ephemeral"}) for n in range(5)])), None, id="A9-five"),
    pytest.param("A10", lambda: anthropic(user("go"), assistant([{**tool_use("toolu_1"), "input": "ls"}]), user([tool_result("toolu_1")])),
                 None, id="A10-input-string"),
    # A typed block whose fields are not strings (an object id): kept as it was read, and refused by the API.
    pytest.param("A10", lambda: anthropic(user("go"), assistant([{**tool_use("toolu_1"), "id": {"x": 1}}]), user("ok")), None,
                 id="A10-id-not-a-string"),
    pytest.param("A10", lambda: anthropic(user([text("see"), {"type": "image", "source": {"type": "base64", "data": "iVBORw0KGgo="}}])),
                 None, id="A10-no-media-type"),
    pytest.param("A11", lambda: many(100_001), None, id="A11-too-many"),
    pytest.param("O1", lambda: openai(user("go"), {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1")]}, user("and?")),
                 None, id="O1-unanswered"),
    pytest.param("O1", lambda: openai(user("go"), {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1"), openai_call("call_1")]},
                                      {"role": "tool", "tool_call_id": "call_1", "content": "a"},
                                      {"role": "tool", "tool_call_id": "call_1", "content": "b"}), None, id="O1-id-twice-in-message"),
    pytest.param("O2", lambda: openai(user("go"), assistant("ok"), {"role": "tool", "tool_call_id": "call_gone", "content": "a"}), None, id="O2-orphan"),
    pytest.param("O3", lambda: openai(user("go"), {"role": "assistant", "content": None}, user("and?")), None, id="O3-null"),
    pytest.param("O4", lambda: openai(user("go"), {"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{}"}},
                                      user("and?")), None, id="O4-unanswered"),
    pytest.param("O5", lambda: openai(user("go"), assistant("ok"), {"role": "exit", "content": "done"}), None, id="O5-role"),
    pytest.param("O5", lambda: openai(user("go"), assistant([{"type": "image_url", "image_url": {"url": "https://x/y.png"}}])), None, id="O5-part"),
    pytest.param("C1", lambda: claude_code(log_user("go"), log_assistant([text("ok")])), "session.jsonl", id="C1-name"),
    pytest.param("C2", lambda: claude_code(log_user("go"), log_assistant([text("ok")], sessionId=...)), None, id="C2-field"),
    pytest.param("C3", lambda: claude_code(log_user("go", parentUuid="00000000-0000-4000-8000-999999999999"), log_assistant([text("ok")])),
                 None, id="C3-missing-parent"),
    pytest.param("C5", lambda: claude_code({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
                                           log_user("Summary: ..."), log_assistant([text("ok")])), None, id="C5-no-summary"),
    pytest.param("C6", lambda: claude_code(log_user("go", isSidechain=True), log_assistant([text("ok")])), None, id="C6-sidechain"),
]

PASSING = [
    pytest.param("A1", lambda: anthropic(user("go"), assistant([tool_use("toolu_1")]), user([tool_result("toolu_1")])), None, id="A1"),
    pytest.param("A2", lambda: anthropic(user("go"), assistant([tool_use("toolu_1")]), user([tool_result("toolu_1"), text("and?")])), None, id="A2"),
    pytest.param("A3", lambda: anthropic(user("go"), assistant([server_call("srvtoolu_1"), server_result("srvtoolu_1"), text("found")]), user("and?")),
                 None, id="A3"),
    pytest.param("A4", lambda: anthropic(user("go"), assistant([thinking(), text("ok"), tool_use("toolu_1")]), user([tool_result("toolu_1")]),
                                         **THINKING_ON), None, id="A4-tool-loop"),
    pytest.param("A5", lambda: anthropic(user("go"), assistant([text("ok")]), user("more")), None, id="A5"),
    pytest.param("A6", lambda: anthropic(user("go"), assistant([tool_use("toolu_1")]), user([tool_result("toolu_1")]),
                                         assistant([tool_use("toolu_2")]), user([tool_result("toolu_2")])), None, id="A6"),
    pytest.param("A7", lambda: anthropic(user("hi"), assistant("Hello."), user("bye")), None, id="A7"),
    pytest.param("A8", lambda: anthropic(user("go"), assistant("ok"), user("more")), None, id="A8"),
    pytest.param("A9", lambda: anthropic(user([text(f"part {n}", cache_control={"type": "ephemeral"}) for n in range(4)])), None, id="A9"),
    pytest.param("A10", lambda: anthropic(user("go"), assistant([tool_use("toolu_1")]), user([tool_result("toolu_1")])), None, id="A10"),
    pytest.param("A11", lambda: many(100_000), None, id="A11"),
    pytest.param("O1", lambda: openai(user("go"), {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1"), openai_call("call_2")]},
                                      {"role": "tool", "tool_call_id": "call_1", "content": "a"},
                                      {"role": "tool", "tool_call_id": "call_2", "content": "b"}), None, id="O1"),
    pytest.param("O1", lambda: openai(user("go"), {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1")]},
                                      {"role": "tool", "tool_call_id": "call_1", "content": "a"},
                                      {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1")]},
                                      {"role": "tool", "tool_call_id": "call_1", "content": "b"}), None, id="O1-same-id-in-another-message"),
    pytest.param("O2", lambda: openai(user("go"), {"role": "assistant", "content": None, "tool_calls": [openai_call("call_1")]},
                                      {"role": "tool", "tool_call_id": "call_1", "content": "a"}), None, id="O2"),
    pytest.param("O3", lambda: openai(user("go"), {"role": "assistant", "content": "ok"}, user("and?")), None, id="O3"),
    pytest.param("O4", lambda: openai(user("go"), {"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{}"}},
                                      {"role": "function", "name": "ls", "content": "a"}), None, id="O4"),
    pytest.param("O5", lambda: openai({"role": "developer", "content": "Be brief."}, user("go"), assistant("ok")), None, id="O5"),
    pytest.param("C1", lambda: claude_code(log_user("go"), log_assistant([text("ok")])), f"{SESSION}.jsonl", id="C1"),
    pytest.param("C2", lambda: claude_code(log_user("go"), log_assistant([text("ok")])), None, id="C2"),
    pytest.param("C3", lambda: claude_code(log_user("go"), log_assistant([text("ok")])), None, id="C3"),
    pytest.param("C5", lambda: claude_code({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted"},
                                           log_user("Summary: ...", isCompactSummary=True), log_assistant([text("ok")])), None, id="C5"),
    pytest.param("C6", lambda: claude_code(log_user("go"), log_assistant([text("ok")])), None, id="C6"),
]


@pytest.mark.parametrize("rule, make, path", FAILING)
def test_a_transcript_that_breaks_a_rule_is_reported_under_its_id(rule, make, path):
    reported = {v.rule: v.severity for v in check(make(), path=path)}
    assert rule in reported
    assert reported[rule] == (WARNING if rule in ("C1", "C6") else ERROR)


@pytest.mark.parametrize("rule, make, path", PASSING)
def test_the_nearest_transcript_that_keeps_the_rule_has_no_error(rule, make, path):
    violations = check(make(), path=path)
    assert rule not in {v.rule for v in violations}
    assert errors(violations) == []


# The rules of a session's own tree, each broken and kept by a real session of its format there.
IN_THEIR_FORMATS_TESTS = {"test_format_pi.py": ("P1", "P2", "P3", "P4"), "test_format_openhands.py": ("H1", "H2", "H3", "H4")}


def test_every_rule_has_a_failing_and_a_passing_case():
    elsewhere = {rule for rules in IN_THEIR_FORMATS_TESTS.values() for rule in rules}
    assert {case.values[0] for case in FAILING} == set(RULES) - elsewhere
    assert {case.values[0] for case in PASSING} == set(RULES) - elsewhere
    for module, rules in IN_THEIR_FORMATS_TESTS.items():
        source = (Path(__file__).parent / module).read_text()
        assert all(f'"{rule}"' in source for rule in rules), module


def test_interleaved_thinking_in_one_assistant_message_is_valid():
    """The API accepted thinking, a server tool call and its result, thinking again, … text."""
    assert check(anthropic(user("Is GET safe?"), assistant(INTERLEAVED), user("Thanks."), **THINKING_ON)) == []


def test_a_thinking_rule_names_the_block_and_what_is_wrong():
    late = check(anthropic(user("go"), assistant([text("Hmm."), thinking(), text("ok")]), user("more")))
    assert [(v.rule, v.index, v.text) for v in late] == [("A4", 1, "a message with thinking must start with a thinking block")]
    last = check(anthropic(user("go"), assistant([thinking(), text("ok"), thinking()]), user("more")))
    assert [(v.rule, v.index, v.text) for v in last] == [("A4", 1, "a thinking block cannot end its message")]


def test_in_a_claude_code_log_a_violation_names_the_line_of_its_block():
    log = claude_code(log_user("go"), log_assistant([text("\n\n")]), log_assistant([thinking()]), log_assistant([text("ok")]))
    assert [(v.rule, v.line, v.text) for v in errors(check(log))] == [
        ("A5", 2, "whitespace-only text block"),
        ("A4", 3, "a message with thinking must start with a thinking block"),
    ]


# --- linear time ----------------------------------------------------------------------------








def test_growth_tells_quadratic_work_from_linear():
    assert growth(lambda n: sum(1 for _ in range(n)), 20_000, 80_000) <= LINEAR
    assert growth(lambda n: sum(1 for _ in range(n) for _ in range(n)), 150, 600) > LINEAR


def test_check_takes_linear_time_over_consecutive_messages_of_one_role():
    ratio = growth(check, many(10_000), many(40_000))
    assert ratio <= LINEAR, ratio
