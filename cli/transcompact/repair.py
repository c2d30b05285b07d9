"""Make an invalid transcript valid with the smallest change, and say what changed.

Each fix answers one error that `check` reports, and nothing else changes: a transcript
with no errors comes back as it was. Fixes run in rounds until `check` has nothing left
that they can fix, because one fix can reveal another (removing an orphan result can
leave its message empty).
"""

from __future__ import annotations

from dataclasses import dataclass

from .check import (
    OPENAI_ROLES,
    check,
    empty_text,
    errors,
    openai_orphans,
    openai_unanswered,
    orphan_results,
    unanswered_calls,
)
from .formats import claude_code
from .model import ASSISTANT, USER, Message, ToolResult, Transcript

MISSING_RESULT = "[No result recorded]"
MAX_ROUNDS = 8


@dataclass(frozen=True)
class Fix:
    rule: str
    text: str
    index: int | None = None
    line: int | None = None


def repair(transcript: Transcript) -> tuple[Transcript, list[Fix]]:
    """The repaired transcript and the fixes made, in order."""
    fixes: list[Fix] = []
    for _ in range(MAX_ROUNDS):
        failing = {v.rule for v in errors(check(transcript))}
        before = len(fixes)
        for step in _STEPS:
            if step.rules & failing:
                transcript = step(transcript, fixes)
                if len(fixes) > before:
                    break  # check again before the next kind of fix
        if len(fixes) == before:
            break
    return transcript, fixes


class _Step:
    def __init__(self, fn, *rule_ids: str):
        self.fn, self.rules = fn, frozenset(rule_ids)

    def __call__(self, transcript: Transcript, fixes: list[Fix]) -> Transcript:
        return self.fn(transcript, fixes)


def _remove_bad_roles(t: Transcript, fixes: list[Fix]) -> Transcript:
    allowed = OPENAI_ROLES if t.dialect == "openai" else {USER, ASSISTANT, "system"}
    kept = []
    for i, m in enumerate(t.messages):
        if m.role in allowed:
            kept.append(m)
        else:
            fixes.append(Fix("O5" if t.dialect == "openai" else "A8", f"removed a message with role {m.role!r}", i, m.line))
    return t.with_messages(kept)


def _remove_empty_text(t: Transcript, fixes: list[Fix]) -> Transcript:
    out = []
    for i, m in enumerate(t.messages):
        blocks = tuple(b for b in m.blocks if not empty_text(b))
        # An OpenAI message whose only content is "" is valid; only Anthropic forbids empty text.
        if t.dialect == "anthropic" and len(blocks) != len(m.blocks):
            fixes.append(Fix("A5", f"removed {len(m.blocks) - len(blocks)} empty text block(s)", i, m.line))
            m = m.with_blocks(blocks)
        out.append(m)
    return t.with_messages(out)


def _remove_orphan_results(t: Transcript, fixes: list[Fix]) -> Transcript:
    messages = list(t.messages)
    if t.dialect == "openai":
        orphans = set(openai_orphans(t.messages))
        for i in sorted(orphans):
            fixes.append(Fix("O2", f"removed tool message {t.messages[i].blocks[0].tool_call_id or '(no id)'} that answers no call", i, t.messages[i].line))
        return t.with_messages(m for i, m in enumerate(messages) if i not in orphans)
    by_message: dict[int, set[int]] = {}
    for i, block in orphan_results(t.messages):
        by_message.setdefault(i, set()).add(id(block))
        fixes.append(Fix("A1", f"removed tool_result {block.tool_call_id} that answers no tool_use", i, t.messages[i].line))
    for i, dropped in by_message.items():
        messages[i] = messages[i].with_blocks(tuple(b for b in messages[i].blocks if id(b) not in dropped))
    return t.with_messages(messages)


def _remove_empty_messages(t: Transcript, fixes: list[Fix]) -> Transcript:
    last = len(t.messages) - 1
    kept = []
    for i, m in enumerate(t.messages):
        empty = not m.blocks and not (i == last and m.role == ASSISTANT)
        if empty and (t.dialect == "anthropic" or m.role == ASSISTANT):
            fixes.append(Fix("A5" if t.dialect == "anthropic" else "O3", "removed an empty message", i, m.line))
        else:
            kept.append(m)
    return t.with_messages(kept)


def _answer_calls(t: Transcript, fixes: list[Fix]) -> Transcript:
    messages = list(t.messages)
    if t.dialect == "openai":
        missing = openai_unanswered(t.messages)
        inserts: dict[int, list[Message]] = {}
        for i, call in missing:
            j = i + 1
            while j < len(messages) and messages[j].role == "tool":
                j += 1
            result = ToolResult(call.id, MISSING_RESULT)
            inserts.setdefault(j, []).append(Message("tool", (result,)))
            fixes.append(Fix("O1", f"added a tool message {MISSING_RESULT} for tool call {call.id}", i, messages[i].line))
        out = []
        for j, m in enumerate(messages + [None]):
            out.extend(inserts.get(j, ()))
            if m is not None:
                out.append(m)
        return t.with_messages(out)
    missing = unanswered_calls(t.messages)
    by_turn: dict[int, list[ToolResult]] = {}
    for i, call in missing:
        turn_end = i
        while turn_end + 1 < len(messages) and messages[turn_end + 1].role == ASSISTANT:
            turn_end += 1
        by_turn.setdefault(turn_end, []).append(ToolResult(call.id, MISSING_RESULT, True))
        fixes.append(Fix("A2", f"added a tool_result {MISSING_RESULT} (is_error) for tool_use {call.id}", i, messages[i].line))
    for turn_end in sorted(by_turn, reverse=True):
        results = tuple(by_turn[turn_end])
        following = messages[turn_end + 1] if turn_end + 1 < len(messages) else None
        if following is not None and following.role == USER:
            # Results go first in the user turn, after the results it already holds.
            head = 0
            while head < len(following.blocks) and isinstance(following.blocks[head], ToolResult):
                head += 1
            messages[turn_end + 1] = following.with_blocks(following.blocks[:head] + results + following.blocks[head:])
        else:
            messages.insert(turn_end + 1, Message(USER, results))
    return t.with_messages(messages)


def _repair_log_lines(t: Transcript, fixes: list[Fix]) -> Transcript:
    if t.format != claude_code.NAME:
        return t
    t, line_fixes = claude_code.repair_lines(t)
    fixes.extend(Fix(rule, text, None, line) for rule, text, line in line_fixes)
    return t


_STEPS = (
    _Step(_remove_bad_roles, "O5", "A8"),
    _Step(_remove_empty_text, "A5"),
    _Step(_remove_orphan_results, "A1", "O2"),
    _Step(_remove_empty_messages, "A5", "O3"),
    _Step(_answer_calls, "A2", "O1"),
    _Step(_repair_log_lines, "C2", "C3"),
)
