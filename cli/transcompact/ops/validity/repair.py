"""Make an invalid transcript valid with the smallest change, and say what changed.

Each fix answers one error that `check` reports, and nothing else changes: a transcript
with no errors comes back as it was. Fixes run in rounds until `check` has nothing left
that they can fix, because one fix can reveal another (removing an orphan result can
leave its message empty). No fix leaves an error of a rule the input did not break: where
the plain fix would (dropping an empty first message puts an assistant message first), a
placeholder text stays instead.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field, replace

from ...core.errors import Location, ShapeError
from ...core.model import ASSISTANT, BLANK, USER, Block, Message, ServerToolCall, ServerToolResult, Text, ToolCall, ToolResult, Transcript
from ...core.violation import Violation
from ...dialects.openai import LEGACY_CALL_ID
from ...formats import adapter
from .check import (
    ID_PATTERN,
    OPENAI_ROLES,
    answered_id,
    called_before,
    check,
    empty_text,
    errors,
    is_thinking,
    openai_orphans,
    openai_out_of_place,
    openai_unanswered,
    orphan_results,
    results_twice,
    stood_in,
    turns,
    unanswered_calls,
)

MISSING_RESULT = "[No result recorded]"
PLACEHOLDER = "(no content)"  # what Claude Code itself writes for a message with no content
MAX_ROUNDS = 16


@dataclass(frozen=True)
class Fix:
    rule: str
    text: str
    index: int | None = None
    line: int | None = None

    def as_dict(self) -> dict:
        return {"rule": self.rule, "text": self.text, "index": self.index, "line": self.line}


@dataclass(frozen=True)
class RepairReport:
    fixes: tuple[Fix, ...] = ()  # in the order they were made
    # What `check` says of the repaired transcript, where repair's last look at it came after its
    # last change (a valid input's, looked at once); None where a fix came after it.
    checked: tuple[Violation, ...] | None = field(default=None, compare=False)

    def as_dict(self) -> dict:
        return {"fixes": [fix.as_dict() for fix in self.fixes]}


def repair(transcript: Transcript) -> tuple[Transcript, RepairReport]:
    """The repaired transcript and the fixes made."""
    fixes: list[Fix] = []
    broken: set[str] | None = None  # the rules the input breaks
    checked: tuple[Transcript, list[Violation]] | None = None
    for _ in range(MAX_ROUNDS):
        checked = (transcript, check(transcript))
        failing = {v.rule for v in errors(checked[1])}
        broken = failing if broken is None else broken
        before = len(fixes)
        for step in _STEPS:
            if step.applies(failing):
                transcript = step(transcript, fixes)
                if len(fixes) > before:
                    break  # check again before the next kind of fix
        if len(fixes) == before:
            break
    _refuse_what_a_log_fix_breaks(transcript, broken or set(), fixes)
    return transcript, RepairReport(tuple(fixes), tuple(checked[1]) if checked is not None and checked[0] is transcript else None)


def _refuse_what_a_log_fix_breaks(repaired: Transcript, broken: set[str], fixes: list[Fix]) -> None:
    """A fix of the log's own lines can bring back what the agent had lost (pi's entries without
    an id, threaded as its migration would): when what comes back breaks a rule the input did
    not and no fix answers, the repair is refused rather than written."""
    log_fixes = [fix for fix in fixes if fix.index is None]
    if not log_fixes:
        return
    new = [v for v in errors(check(repaired)) if v.rule not in broken]
    if new:
        fix = log_fixes[0]
        raise ShapeError(f"{fix.text} ({fix.rule}): so repaired, the log breaks {new[0].rule}, which repair cannot fix "
                         f"({new[0].text}); fix those lines by hand", location=Location(repaired.name, fix.line))


class _Step:
    """A kind of fix, tried when one of its rules fails (any rule, without rule ids: a format's
    own log rules, which its `repair_log` knows)."""

    def __init__(self, fn, *rule_ids: str):
        self.fn, self.rules = fn, frozenset(rule_ids)

    def applies(self, failing: set[str]) -> bool:
        return bool(failing) and (not self.rules or bool(self.rules & failing))

    def __call__(self, transcript: Transcript, fixes: list[Fix]) -> Transcript:
        return self.fn(transcript, fixes)


def _repair_log_lines(t: Transcript, fixes: list[Fix]) -> Transcript:
    t, line_fixes = adapter(t).repair_log(t)
    fixes.extend(Fix(rule, text, None, line) for rule, text, line in line_fixes)
    return t


def _remove_bad_roles(t: Transcript, fixes: list[Fix]) -> Transcript:
    allowed = OPENAI_ROLES if t.dialect == "openai" else {USER, ASSISTANT, "system"}
    rule = "O5" if t.dialect == "openai" else "A8"
    bad = {i: (rule, f"a message with role {m.role!r}") for i, m in enumerate(t.messages) if m.role not in allowed}
    for i in list(bad):  # the answers to its calls go with it: nothing is left for them to answer
        j = i + 1
        while t.messages[i].tool_calls and j < len(t.messages) and t.messages[j].role in ("tool", "function"):
            bad.setdefault(j, (rule, f"the answer to a call of the message with role {t.messages[i].role!r}"))
            j += 1
    return _remove_messages(t, bad, fixes)


def _remove_empty_text(t: Transcript, fixes: list[Fix]) -> Transcript:
    if t.dialect != "anthropic":
        return t  # an OpenAI message whose only content is "" is valid
    out = []
    for i, m in enumerate(t.messages):
        if m.view is not None and not any(size.type is Text and size.flags & BLANK for size in m.view.blocks):
            out.append(m)  # unread, and its view says no text of it is blank
            continue
        blank = [b for b in m.blocks if empty_text(b)]
        if blank:
            blocks = tuple(b for b in m.blocks if not empty_text(b))
            if blocks and is_thinking(blocks[-1]) and not is_thinking(m.blocks[-1]):
                # Thinking cannot end a message (A4): the blank text that ends it gets a placeholder.
                blocks += (replace(blank[-1], text=PLACEHOLDER),)  # blank holds Text blocks (empty_text says so)
                fixes.append(Fix("A5", f"replaced the whitespace-only text block that ends the message by {PLACEHOLDER!r}, "
                                       "which keeps thinking from ending it", i, m.line))
                blank.pop()
            if blank:
                fixes.append(Fix("A5", f"removed {len(blank)} empty text block(s)", i, m.line))
            m = m.with_blocks(blocks)
        out.append(m)
    return t.with_messages(out)


def _remove_empty_messages(t: Transcript, fixes: list[Fix]) -> Transcript:
    last = len(t.messages) - 1
    rule = "A5" if t.dialect == "anthropic" else "O3"
    # Only a final assistant message may be empty; OpenAI allows empty content beside an assistant's.
    empty = {
        i: (rule, "an empty message") for i, m in enumerate(stood_in(t).messages)  # an unread one as its view says
        if not m.blocks and not (i == last and m.role == ASSISTANT) and (t.dialect == "anthropic" or m.role == ASSISTANT)
    }
    return _remove_messages(t, empty, fixes)


def _remove_messages(t: Transcript, doomed: dict[int, tuple[str, str]], fixes: list[Fix]) -> Transcript:
    """Remove the messages at `doomed` (index → rule, what the message is).

    Removing a message changes what the messages around it are to the API: two turns merge, an
    assistant message can end up first or last, another one becomes the final assistant message.
    Where that would make `check` find something it did not, each message stays in place instead,
    as a user message (or the assistant message it was) holding only a placeholder text.
    """
    if not doomed:
        return t
    removed = t.with_messages(m for i, m in enumerate(t.messages) if i not in doomed)
    broken = {(v.rule, v.severity) for v in check(removed)} - {(v.rule, v.severity) for v in check(t)}
    if not broken:
        fixes.extend(Fix(rule, f"removed {what}", i, t.messages[i].line) for i, (rule, what) in doomed.items())
        return removed
    why = ", ".join(sorted({rule for rule, _ in broken}))
    messages = list(t.messages)
    for i, (rule, what) in doomed.items():
        role = messages[i].role if messages[i].role in (USER, ASSISTANT) else USER
        messages[i] = messages[i].replaced(role, (Text(PLACEHOLDER),))
        fixes.append(Fix(rule, f"replaced {what} by a {role} message {PLACEHOLDER!r}: removing it would break {why}", i, t.messages[i].line))
    return t.with_messages(messages)


def _rename_taken_ids(t: Transcript, fixes: list[Fix]) -> Transcript:
    """A tool call whose id an earlier call has (or, in Anthropic, one that does not match the id
    pattern) gets a new id, and so does the result that answers that occurrence of it."""
    fresh = _FreshIds({b.id if isinstance(b, (ToolCall, ServerToolCall)) else b.tool_call_id
                       for m in t.messages for b in m.blocks
                       if isinstance(b, (ToolCall, ServerToolCall, ToolResult, ServerToolResult))})
    if t.dialect == "openai":
        return _rename_openai(t, fixes, fresh)
    messages = list(t.messages)
    seen: set[str] = set()
    all_turns = turns(t.messages)
    for k, turn in enumerate(all_turns):
        if turn.role != ASSISTANT:
            continue
        # The new id of each occurrence of an id in the turn (None: kept), in order: the n-th
        # result with that id in the next user turn answers the n-th call.
        occurrences: dict[str, deque[str | None]] = {}
        for i in turn.indices:
            server_occurrences: dict[str, deque[str | None]] = {}  # server results sit in the same message
            blocks = list(messages[i].blocks)
            for j, b in enumerate(blocks):
                if isinstance(b, (ToolCall, ServerToolCall)):
                    new = None
                    if b.id in seen or not ID_PATTERN.fullmatch(b.id):
                        new = fresh.id_for(re.sub(r"[^a-zA-Z0-9_-]", "_", b.id) or "toolu")
                        blocks[j] = _with_id(b, new)
                        why = "an earlier tool call has that id" if b.id in seen else "ids must match ^[a-zA-Z0-9_-]+$"
                        line = b.line + 1 if b.line is not None else messages[i].line
                        fixes.append(Fix("A6", f"renamed tool_use {b.id!r} to {new!r} (and its result, if any): {why}", i, line))
                    seen.add(b.id)
                    into = occurrences if isinstance(b, ToolCall) else server_occurrences
                    into.setdefault(b.id, deque()).append(new)
                elif isinstance(b, ServerToolResult) and server_occurrences.get(b.tool_call_id):
                    new = server_occurrences[b.tool_call_id].popleft()
                    if new is not None:
                        blocks[j] = _with_id(b, new)
            messages[i] = _with_blocks(messages[i], blocks)
        answers = all_turns[k + 1] if k + 1 < len(all_turns) and all_turns[k + 1].role == USER else None
        if answers is None or not any(new for news in occurrences.values() for new in news):
            continue
        for i in answers.indices:
            blocks = list(messages[i].blocks)
            for j, b in enumerate(blocks):
                if isinstance(b, ToolResult) and occurrences.get(b.tool_call_id):
                    new = occurrences[b.tool_call_id].popleft()
                    if new is not None:
                        blocks[j] = _with_id(b, new)
            messages[i] = _with_blocks(messages[i], blocks)
    return t.with_messages(messages)


def _rename_openai(t: Transcript, fixes: list[Fix], fresh: _FreshIds) -> Transcript:
    """In OpenAI only the calls of one message must differ: a later message's run answers its own."""
    messages = list(t.messages)
    for i, m in enumerate(t.messages):
        occurrences: dict[str, deque[str | None]] = {}
        blocks = list(m.blocks)
        for j, b in enumerate(blocks):
            if not isinstance(b, ToolCall) or b.id == LEGACY_CALL_ID:
                continue
            new = None
            if b.id in occurrences:
                new = fresh.id_for(b.id or "call")
                blocks[j] = _with_id(b, new)
                fixes.append(Fix("O1", f"renamed tool call {b.id!r} to {new!r} (and its tool message, if any): "
                                       "an earlier call of the message has that id", i, m.line))
            occurrences.setdefault(b.id, deque()).append(new)
        if not any(new for news in occurrences.values() for new in news):
            continue
        messages[i] = m.with_blocks(tuple(blocks))
        j = i + 1
        while j < len(messages) and messages[j].role == "tool":
            result = messages[j].blocks[0] if messages[j].blocks else None
            if isinstance(result, ToolResult) and occurrences.get(result.tool_call_id):
                new = occurrences[result.tool_call_id].popleft()
                if new is not None:
                    messages[j] = messages[j].with_blocks((_with_id(result, new),))
            j += 1
    return t.with_messages(messages)


class _FreshIds:
    """Ids that no block of the transcript uses: `base` itself if free, else `<base>_2`, `<base>_3` …"""

    def __init__(self, used: set[str]):
        self.used = used
        self.next_suffix: dict[str, int] = {}  # where to look next for each base, so many renames stay linear

    def id_for(self, base: str) -> str:
        new = base
        if new in self.used:
            n = self.next_suffix.get(base, 2)
            while f"{base}_{n}" in self.used:
                n += 1
            self.next_suffix[base] = n + 1
            new = f"{base}_{n}"
        self.used.add(new)
        return new


def _with_blocks(message: Message, blocks: list[Block]) -> Message:
    return message if tuple(blocks) == message.blocks else message.with_blocks(tuple(blocks))


def _with_id(block: ToolCall | ServerToolCall | ToolResult | ServerToolResult, new: str) -> Block:
    """The block with another call id; its raw dict says so too, so that every writer writes the new id."""
    changed: Block
    if isinstance(block, (ToolCall, ServerToolCall)):
        key, changed = "id", replace(block, id=new)
    else:
        key, changed = "tool_use_id", replace(block, tool_call_id=new)
    if isinstance(block.raw, dict) and key in block.raw:
        changed = replace(changed, raw={**block.raw, key: new})
    return changed


def _remove_orphan_results(t: Transcript, fixes: list[Fix]) -> Transcript:
    messages = list(t.messages)
    if t.dialect == "openai":
        found = openai_orphans(t.messages)
        orphans, out_of_place = set(found), openai_out_of_place(t.messages, found, openai_unanswered(t.messages))
        put_after: dict[int, list[Message]] = {}  # a result moved to the end of its call's run: nothing it says is lost
        for i in sorted(orphans):
            call_id = answered_id(t.messages[i])
            if i in out_of_place:
                owner = end = out_of_place[i]
                while end + 1 < len(messages) and messages[end + 1].role == "tool" and end + 1 not in orphans:
                    end += 1
                put_after.setdefault(end, []).append(messages[i])
                fixes.append(Fix("O2", f"moved tool message {call_id} to right after its call (message {owner})", i, t.messages[i].line))
            elif call_id in called_before(t.messages, i):
                fixes.append(Fix("O1", f"removed a second tool message for tool call {call_id}", i, t.messages[i].line))
            else:
                fixes.append(Fix("O2", f"removed tool message {call_id or '(no id)'} that answers no call", i, t.messages[i].line))
        return t.with_messages(kept for i, m in enumerate(messages)
                               for kept in ((() if i in orphans else (m,)) + tuple(put_after.get(i, ()))))
    by_message: dict[int, set[int]] = {}
    for i, block in orphan_results(t.messages, twice=results_twice(t)):
        by_message.setdefault(i, set()).add(id(block))
        if block.tool_call_id in called_before(t.messages, i):
            fixes.append(Fix("A1", f"removed a second tool_result for tool_use {block.tool_call_id}", i, t.messages[i].line))
        else:
            fixes.append(Fix("A1", f"removed tool_result {block.tool_call_id} that answers no tool_use", i, t.messages[i].line))
    for i, dropped in by_message.items():
        messages[i] = messages[i].with_blocks(tuple(b for b in messages[i].blocks if id(b) not in dropped))
    return t.with_messages(messages)


def _answer_calls(t: Transcript, fixes: list[Fix]) -> Transcript:
    if t.dialect == "openai":
        return _answer_openai_calls(t, fixes)
    messages = t.messages
    if adapter(t).answers_each_message:  # right after the call's message, where the agent has its results
        answer_after = list(range(len(messages)))
    else:
        answer_after = [turn.indices[-1] for turn in turns(messages) for _ in turn.indices]
    results: dict[int, list[ToolResult]] = {}  # the results to add after a message
    for i, call in unanswered_calls(stood_in(t).messages):  # the calls' ids, an unread message's from its view
        if answer_after[i] == len(messages) - 1 and _waits_on_server_tool(messages[-1]):
            continue  # a message after it would split the server call from its result (A3)
        results.setdefault(answer_after[i], []).append(ToolResult(call.id, MISSING_RESULT, True))
        fixes.append(Fix("A2", f"added a tool_result {MISSING_RESULT} (is_error) for tool_use {call.id}", i, messages[i].line))
    out = []
    for i, m in enumerate(messages):
        added = tuple(results.get(i - 1, ()))
        if added and m.role == USER:
            # Results go first in the user turn, after the results it already holds.
            head = 0
            while head < len(m.blocks) and isinstance(m.blocks[head], ToolResult):
                head += 1
            m = m.with_blocks(m.blocks[:head] + added + m.blocks[head:])
        elif added:
            out.append(Message(USER, added))
        out.append(m)
    if len(messages) - 1 in results:
        out.append(Message(USER, tuple(results[len(messages) - 1])))
    return t.with_messages(out)


def _waits_on_server_tool(message: Message) -> bool:
    """Whether an assistant message ends paused on a server tool call (`pause_turn`): only the API
    can continue it, so nothing may follow it yet."""
    answered = {b.tool_call_id for b in message.blocks if isinstance(b, ServerToolResult)}
    return message.role == ASSISTANT and any(isinstance(b, ServerToolCall) and b.id not in answered for b in message.blocks)


def _answer_openai_calls(t: Transcript, fixes: list[Fix]) -> Transcript:
    messages = t.messages
    missing: dict[int, list[ToolCall]] = {}
    for i, call in openai_unanswered(messages):
        missing.setdefault(i, []).append(call)
        fixes.append(Fix("O1", f"added a tool message {MISSING_RESULT} for tool call {call.id}", i, messages[i].line))
    inserts: dict[int, list[Message]] = {}  # the tool messages to add before a message (or at the end)
    for i, calls in missing.items():
        end = i + 1
        while end < len(messages) and messages[end].role == "tool":
            end += 1
        inserts.setdefault(end, []).extend(Message("tool", (ToolResult(c.id, MISSING_RESULT),)) for c in calls)
    out: list[Message] = []
    for j, m in enumerate(messages):
        out.extend(inserts.get(j, ()))
        out.append(m)
    out.extend(inserts.get(len(messages), ()))
    return t.with_messages(out)


# In this order: the log's chain decides which messages there are; a message's blocks decide
# whether it is empty; the ids of the calls decide which result answers which call.
_STEPS = (
    _Step(_repair_log_lines),
    _Step(_remove_bad_roles, "O5", "A8"),
    _Step(_remove_empty_text, "A5"),
    _Step(_remove_empty_messages, "A5", "O3"),
    _Step(_rename_taken_ids, "A6", "O1"),
    _Step(_remove_orphan_results, "A1", "O1", "O2"),
    _Step(_answer_calls, "A2", "O1"),
)
