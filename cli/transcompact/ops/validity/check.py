"""Validity against the providers' rules (docs/design.md §5), with stable rule ids.

A… are the Anthropic Messages rules (§5.1, numbered as there), O… the OpenAI Chat Completions
rules (§5.2); a format's own rules are its adapter's (`Format.check_log`, their texts
`Format.rule_texts`: C… the rules `claude --resume` needs of a Claude Code log, §5.4). Anthropic
rules are checked after merging consecutive same-role messages, as the API does. Rules that only
matter for a request about to be sent are warnings unless `strict`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeGuard

from ...core.model import (
    ASSISTANT,
    BLANK,
    ENDS_IN_SPACE,
    NOT_AN_OBJECT,
    UNSIGNED,
    USER,
    Block,
    BlockSize,
    Document,
    Image,
    Message,
    MessageView,
    Opaque,
    RedactedThinking,
    ServerToolCall,
    ServerToolResult,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
)
from ...core.violation import ERROR, WARNING, Violation
from ...formats import adapter, all_formats

# The providers' rules, by id: what must hold. `RULES` adds each format's own (`rules`).
PROVIDER_RULES = {
    "A1": "every tool_result answers a tool_use of the assistant message just before it, and one answers each",
    "A2": "every tool_use is answered in the next message, a user message, results first",
    "A3": "server tool calls and their results stay together in one assistant message",
    "A4": "thinking blocks are signed; a message with thinking starts with it and does not end with it",
    "A5": "no empty messages (but a final assistant one), no empty or whitespace-only text blocks",
    "A6": "tool_use ids are unique and match ^[a-zA-Z0-9_-]+$",
    "A7": "the first message is a user message; the last is a user message (warning)",
    "A8": "roles are user and assistant (system in messages is model-gated: warning)",
    "A9": "at most 4 cache_control breakpoints across tools, system and messages",
    "A10": "blocks are well formed and sit in the right role",
    "A11": "at most 100,000 messages",
    "O1": "an assistant message's tool_calls have distinct ids, each answered by one tool message after it",
    "O2": "a tool message answers a tool call of the assistant message before its run",
    "O3": "assistant content is null only beside tool_calls or function_call",
    "O4": "legacy function_call is answered by a function message and not mixed with tool_calls",
    "O5": "roles and content part types are ones the API accepts",
}


@cache
def rules() -> dict[str, str]:
    """Every rule check reports, by id, and what must hold: the providers', then each format's own
    (`Format.rule_texts`), in the order detection tries the formats. It imports every format: the
    table of the rules (`RULES`, docs/check.md's) asks for it, a check never does."""
    table = dict(PROVIDER_RULES)
    for fmt in all_formats():
        for rule, text in fmt.rule_texts.items():
            if rule in table:
                raise ValueError(f"rule {rule} of the {fmt.name} format is another rule's id too")
            table[rule] = text
    return table


def __getattr__(name: str) -> Any:
    """`RULES`: `rules()`, made when first asked for (it imports every format)."""
    if name == "RULES":
        return rules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

ID_PATTERN = re.compile(r"[a-zA-Z0-9_-]+")  # used with fullmatch: "$" would let a final newline through
RESULT_CONTENT_TYPES = (Text, Image, Document)
RESULT_CONTENT_OPAQUE = frozenset({"search_result", "tool_reference"})
OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
OPENAI_PART_TYPES = {
    "user": frozenset({"text", "image_url", "input_audio", "file"}),
    "assistant": frozenset({"text", "refusal"}),
    "system": frozenset({"text"}),
    "developer": frozenset({"text"}),
    "tool": frozenset({"text"}),
    "function": frozenset({"text"}),
}


@dataclass(frozen=True, slots=True)  # one per turn of a large log
class Turn:
    """Consecutive messages of one role, as the Anthropic API merges them."""

    role: str
    indices: tuple[int, ...]

    def blocks(self, messages: tuple[Message, ...]) -> Iterator[tuple[int, Block]]:
        for i in self.indices:
            for block in messages[i].blocks:
                yield i, block


def turns(messages: tuple[Message, ...]) -> list[Turn]:
    roles = [m.role for m in messages]
    starts = [i for i in range(len(roles)) if i == 0 or roles[i] != roles[i - 1]]
    return [Turn(roles[start], tuple(range(start, end))) for start, end in zip(starts, [*starts[1:], len(roles)])]


def check(transcript: Transcript, *, strict: bool = False, path: str | None = None) -> list[Violation]:
    """Every violation of the rules of the transcript's dialect (and format), in message order.
    A message left unread is checked by what its view says of it (`stood_in`), and stays unread."""
    transcript = stood_in(transcript)
    found: list[Violation] = []
    if transcript.dialect == "anthropic":
        found += _anthropic(transcript)
    else:
        found += _openai(transcript)
    found += adapter(transcript).check_log(transcript, path)
    if strict:
        found = [Violation(v.rule, ERROR, v.text, v.index, v.line) for v in found]
    return found


def stood_in(transcript: Transcript) -> Transcript:
    """The transcript with each unread message replaced by blocks made from its view: blocks that
    hold what the rules look at (ids, names, roles, whether a text is blank or ends in white space,
    a call's input an object, a thinking signed, the cache_control breakpoints, the line of each
    block), and nothing else. Only the rules (and repair, to find what to fix) see them; the
    transcript itself stays unread."""
    if all(m.view is None for m in transcript.messages):
        return transcript
    return transcript.with_messages(m if m.view is None else _stand_in(m, m.view) for m in transcript.messages)


def _stand_in(message: Message, view: MessageView) -> Message:
    lines: tuple[int | None, ...] = view.lines if view.lines is not None else (None,) * len(view.blocks)
    return Message(message.role, tuple(_block_like(size, line) for size, line in zip(view.blocks, lines)), line=message.line)


# The raw dicts of the blocks `stood_in` makes, shared by all of them (the rules only read them).
_RAW = {(kind, marked): {"type": kind, "cache_control": None} if marked else {"type": kind}
        for kind in ("text", "tool_result", "tool_use", "thinking", "redacted_thinking") for marked in (False, True)}


def _block_like(size: BlockSize, line: int | None) -> Block:
    def raw(kind: str) -> dict:
        return _RAW[kind, size.marks > 0]

    if size.type is Text:
        text = "" if not size.chars else " " if size.flags & BLANK else "x " if size.flags & ENDS_IN_SPACE else "x"
        return Text(text, raw=raw("text"), line=line)
    if size.type is ToolResult:
        inner = tuple(Text("x", raw=raw("text"), line=line) for _ in range(size.marks - 1))
        return ToolResult(size.call_id or "", inner or "", raw=raw("tool_result"), line=line)
    if size.type is ToolCall:
        return ToolCall(size.call_id or "", size.name or "", None if size.flags & NOT_AN_OBJECT else {}, raw=raw("tool_use"), line=line)
    if size.type is Thinking:
        return Thinking("x", None if size.flags & UNSIGNED else "x", raw=raw("thinking"), line=line)
    if size.type is Opaque:  # one with no raw, as its reader made it (a Codex reasoning item)
        return Opaque(size.name, line=line)
    return RedactedThinking("x" if size.chars else "", raw=raw("redacted_thinking"), line=line)


def errors(violations: Iterable[Violation]) -> list[Violation]:
    return [v for v in violations if v.severity == ERROR]


def _at(messages: tuple[Message, ...], index: int, block: Block | None = None) -> dict:
    line = block.line + 1 if block is not None and block.line is not None else messages[index].line
    return {"index": index, "line": line}


# --- Anthropic ------------------------------------------------------------------------------


def orphan_results(messages: tuple[Message, ...], all_turns: list[Turn] | None = None,
                   twice: bool = False) -> list[tuple[int, ToolResult]]:
    """Tool results with no tool call in the assistant turn just before their (merged) user turn,
    and a second result for a call already answered (the API takes one), unless `twice`: the
    agent sends each result twice itself (results_twice)."""
    out = []
    all_turns = turns(messages) if all_turns is None else all_turns
    for k, turn in enumerate(all_turns):
        if turn.role != USER:
            continue
        before = all_turns[k - 1] if k > 0 and all_turns[k - 1].role == ASSISTANT else None
        ids = {b.id for _, b in before.blocks(messages) if isinstance(b, ToolCall)} if before else set()
        answered: set[str] = set()
        for i, b in turn.blocks(messages):
            if isinstance(b, ToolResult):
                if b.tool_call_id not in ids or (b.tool_call_id in answered and not twice):
                    out.append((i, b))
                answered.add(b.tool_call_id)
    return out


def results_twice(transcript: Transcript) -> bool:
    """Whether the agent that wrote the transcript sends each tool result twice itself (Gemini CLI
    0.61): its own copy is then no second answer to correct."""
    return adapter(transcript).results_twice


def unanswered_calls(messages: tuple[Message, ...], all_turns: list[Turn] | None = None) -> list[tuple[int, ToolCall]]:
    """Tool calls whose result is not in the user turn right after their assistant turn."""
    out = []
    all_turns = turns(messages) if all_turns is None else all_turns
    for k, turn in enumerate(all_turns):
        if turn.role != ASSISTANT:
            continue
        after = all_turns[k + 1] if k + 1 < len(all_turns) and all_turns[k + 1].role == USER else None
        answered = {b.tool_call_id for _, b in after.blocks(messages) if isinstance(b, ToolResult)} if after else set()
        out += [(i, b) for i, b in turn.blocks(messages) if isinstance(b, ToolCall) and b.id not in answered]
    return out


def empty_text(block: Block) -> TypeGuard[Text]:
    return isinstance(block, Text) and not block.text.strip()


def is_thinking(block: Block) -> bool:
    return isinstance(block, (Thinking, RedactedThinking))


def misplaced_thinking(message: Message) -> list[tuple[Block, str]]:
    """(block, what is wrong) where a message with thinking does not start with it or ends with it.

    Thinking between other blocks is valid: with interleaved thinking the model thinks again
    after each server tool result, within the same message.
    """
    blocks = message.blocks
    first = next((b for b in blocks if is_thinking(b)), None)
    if first is None:
        return []
    out = []
    if not is_thinking(blocks[0]):
        out.append((first, "a message with thinking must start with a thinking block"))
    if is_thinking(blocks[-1]):
        out.append((blocks[-1], "a thinking block cannot end its message"))
    return out


def _anthropic(t: Transcript) -> list[Violation]:
    """Every Anthropic rule, a function each, in message order. The rules on a message's own
    blocks are checked in one pass over them (`_message_rules`), which keeps the violations of a
    message in block order."""
    messages = t.messages
    all_turns = turns(messages)
    last = len(messages) - 1
    ids: dict[str, int] = {}  # each tool_use id, with the message that used it first
    out = [*_message_count(messages),
           *_answered_results(t, all_turns),
           *_answered_calls(messages, all_turns),
           *_results_first(messages, all_turns)]
    for i, m in enumerate(messages):
        out += _message_rules(messages, i, m, last, ids)
    out += [*_thinking_config(t), *_cache_breakpoints(t), *_first_and_last(messages)]
    return sorted(out, key=lambda v: (v.index if v.index is not None else -1))


def _message_count(messages: tuple[Message, ...]) -> list[Violation]:
    """A11: at most 100,000 messages."""
    if len(messages) > 100_000:
        return [Violation("A11", ERROR, f"{len(messages)} messages, more than the 100,000 the API takes")]
    return []


def _answered_results(t: Transcript, all_turns: list[Turn]) -> list[Violation]:
    """A1: a tool_result answers a tool_use of the assistant turn just before, and one answers each."""
    messages = t.messages
    out = []
    for i, b in orphan_results(messages, all_turns, results_twice(t)):
        why = "answers a tool_use already answered" if b.tool_call_id in called_before(messages, i) else \
            "has no tool_use in the previous assistant message"
        out.append(Violation("A1", ERROR, f"tool_result {b.tool_call_id} {why}", **_at(messages, i, b)))
    return out


def _answered_calls(messages: tuple[Message, ...], all_turns: list[Turn]) -> list[Violation]:
    """A2: every tool_use is answered in the next (user) turn."""
    last = len(messages) - 1
    return [Violation("A2", ERROR, f"tool_use {b.id} ({b.name}) has no tool_result: "
                      f"{'the transcript ends on it' if i == last else 'the next message does not answer it'}",
                      **_at(messages, i, b))
            for i, b in unanswered_calls(messages, all_turns)]


def _results_first(messages: tuple[Message, ...], all_turns: list[Turn]) -> list[Violation]:
    """A2 (warning): a user turn's tool results come before its other content; one per turn."""
    out = []
    for turn in all_turns:
        if turn.role != USER:
            continue
        seen_other = False
        for i, b in turn.blocks(messages):
            if isinstance(b, ToolResult) and seen_other:
                out.append(Violation("A2", WARNING, f"tool_result {b.tool_call_id} comes after other content in its user turn",
                                     **_at(messages, i, b)))
                break
            seen_other = seen_other or not isinstance(b, ToolResult)
    return out


def _message_rules(messages: tuple[Message, ...], i: int, m: Message, last: int, ids: dict[str, int]) -> list[Violation]:
    """The rules on message `i` itself (A8, A5), then on each of its blocks in order (A5, A6, A3,
    A10), then on its server tools and thinking (A3, A4)."""
    out = [*_role(messages, i, m), *_empty_message(messages, i, m, last)]
    server_calls: dict[str, list[int]] = {}  # calls and results of each server tool call id
    for b in m.blocks:
        # The two commonest blocks, which no rule on a block can find anything wrong with.
        if (type(b) is Text and b.text.strip()) or (type(b) is ToolResult and type(b.content) is str and m.role == USER):
            continue
        out += _empty_text(messages, i, b)
        out += _tool_use_id(messages, i, b, ids)
        out += _server_result(messages, i, b, server_calls)
        out += _malformed(m, i, b, messages)
    if m.role == ASSISTANT:
        out += _server_calls_answered(messages, i, last, server_calls)
        out += _thinking(messages, i, m)
    return out


def _role(messages: tuple[Message, ...], i: int, m: Message) -> list[Violation]:
    """A8: roles are user and assistant (system is accepted by some models only)."""
    if m.role in (USER, ASSISTANT):
        return []
    if m.role == "system":
        return [Violation("A8", WARNING, "role system inside messages is accepted by some models only", **_at(messages, i))]
    return [Violation("A8", ERROR, f"role {m.role!r} is not one the Messages API accepts", **_at(messages, i))]


def _empty_message(messages: tuple[Message, ...], i: int, m: Message, last: int) -> list[Violation]:
    """A5: no empty message but a final assistant one."""
    if not m.blocks and not (i == last and m.role == ASSISTANT):
        return [Violation("A5", ERROR, "message has no content", **_at(messages, i))]
    return []


def _empty_text(messages: tuple[Message, ...], i: int, b: Block) -> list[Violation]:
    """A5: no empty or whitespace-only text block."""
    if not empty_text(b):
        return []
    kind = "empty" if not b.text else "whitespace-only"
    return [Violation("A5", ERROR, f"{kind} text block", **_at(messages, i, b))]


def _tool_use_id(messages: tuple[Message, ...], i: int, b: Block, ids: dict[str, int]) -> list[Violation]:
    """A6: tool_use ids are unique (`ids`: those seen so far) and match ^[a-zA-Z0-9_-]+$."""
    if not isinstance(b, (ToolCall, ServerToolCall)):
        return []
    out = []
    if b.id in ids:
        out.append(Violation("A6", ERROR, f"tool_use id {b.id} is used twice (first in message {ids[b.id]})", **_at(messages, i, b)))
    ids.setdefault(b.id, i)
    if not ID_PATTERN.fullmatch(b.id):
        out.append(Violation("A6", ERROR, f"tool_use id {b.id!r} does not match ^[a-zA-Z0-9_-]+$", **_at(messages, i, b)))
    return out


def _server_result(messages: tuple[Message, ...], i: int, b: Block, server_calls: dict[str, list[int]]) -> list[Violation]:
    """A3: a server tool result follows its call in the same message; counts both in `server_calls`."""
    if isinstance(b, ServerToolCall):
        server_calls.setdefault(b.id, [0, 0])[0] += 1
    elif isinstance(b, ServerToolResult):
        if b.tool_call_id not in server_calls:
            return [Violation("A3", ERROR, f"{b.type} {b.tool_call_id} has no server_tool_use before it in its message",
                              **_at(messages, i, b))]
        server_calls[b.tool_call_id][1] += 1
    return []


def _server_calls_answered(messages: tuple[Message, ...], i: int, last: int,
                           server_calls: dict[str, list[int]]) -> list[Violation]:
    """A3: each server tool call has its one result in its message (the final message may await it)."""
    out = []
    for call_id, (calls, answers) in server_calls.items():
        if answers != calls and not (answers == 0 and i == last):
            called = "" if calls == 1 else f" (called {calls} times)"
            out.append(Violation("A3", ERROR, f"server tool call {call_id}{called} has {answers} results in its message",
                                 **_at(messages, i)))
    return out


def _thinking(messages: tuple[Message, ...], i: int, m: Message) -> list[Violation]:
    """A4: thinking blocks are signed; a message with thinking starts with it and does not end with it."""
    out = []
    for b in m.blocks:
        if isinstance(b, Thinking) and not b.signature:
            out.append(Violation("A4", ERROR, "thinking block without a signature", **_at(messages, i, b)))
        elif isinstance(b, RedactedThinking) and not b.data:
            out.append(Violation("A4", ERROR, "redacted_thinking block without data", **_at(messages, i, b)))
    return out + [Violation("A4", ERROR, wrong, **_at(messages, i, b)) for b, wrong in misplaced_thinking(m)]


def _cache_breakpoints(t: Transcript) -> list[Violation]:
    """A9: at most 4 cache_control breakpoints across tools, system and messages (tool results' content too)."""
    def marked(raw) -> bool:
        return isinstance(raw, dict) and "cache_control" in raw

    count = sum(1 for b in t.system if marked(b.raw)) + sum(1 for tool in t.tools if marked(tool))
    for m in t.messages:
        for b in m.blocks:
            count += marked(b.raw)
            if isinstance(b, ToolResult) and not isinstance(b.content, str):
                count += sum(1 for inner in b.content if marked(inner.raw))
    if count > 4:
        return [Violation("A9", ERROR, f"{count} cache_control breakpoints, more than 4")]
    return []


def _first_and_last(messages: tuple[Message, ...]) -> list[Violation]:
    """A7: the first message is a user message; the last should be one, and a final assistant
    message cannot end in whitespace (warnings)."""
    if not messages:
        return []
    last = len(messages) - 1
    out = []
    if messages[0].role != USER:
        out.append(Violation("A7", ERROR, f"the first message is {messages[0].role}, not user", **_at(messages, 0)))
    if messages[-1].role != USER:
        out.append(Violation("A7", WARNING, f"the last message is {messages[-1].role}: models without prefill need a user message last",
                             **_at(messages, last)))
        tail = messages[-1].blocks[-1] if messages[-1].blocks else None
        if isinstance(tail, Text) and tail.text != tail.text.rstrip():
            out.append(Violation("A7", WARNING, "a final assistant message cannot end in whitespace", **_at(messages, last, tail)))
    return out


def _thinking_config(t: Transcript) -> list[Violation]:
    """Rules that depend on whether the request enables thinking (known for request bodies only)."""
    if "model" not in t.request or not t.messages:
        return []
    config = t.request.get("thinking")
    enabled = isinstance(config, dict) and config.get("type") in ("enabled", "adaptive")
    final = max((i for i, m in enumerate(t.messages) if m.role == ASSISTANT), default=None)
    if final is None:
        return []
    message = t.messages[final]
    has_thinking = any(is_thinking(b) for b in message.blocks)
    if not enabled and has_thinking and final == len(t.messages) - 1:
        return [Violation("A4", ERROR, "thinking is disabled but the final assistant message holds thinking", **_at(t.messages, final))]
    # The last assistant message with tool calls is in the current tool loop whether or not its
    # results are there yet: the caller appends them and sends it again.
    if enabled and message.tool_calls and not is_thinking(message.blocks[0]):
        return [Violation("A4", ERROR, "thinking is enabled: the assistant message of the current tool loop must start with thinking",
                          **_at(t.messages, final))]
    return []


# The blocks the Messages API types, with the fields each must hold as a string: one read without
# them (kept as it was, an `Opaque`) is refused by the API.
_TYPED_FIELDS = {"text": ("text",), "tool_use": ("id", "name"), "tool_result": ("tool_use_id",), "thinking": ("thinking",),
                 "redacted_thinking": ("data",), "server_tool_use": ("id",), "mcp_tool_use": ("id",)}


def _malformed(m: Message, i: int, b: Block, messages) -> list[Violation]:
    out = []
    if type(b) is Opaque and b.type in _TYPED_FIELDS and isinstance(b.raw, dict):
        wrong = [f"`{field}`" for field in _TYPED_FIELDS[b.type] if not isinstance(b.raw.get(field), str)]
        said = f"{' and '.join(wrong)} not a string" if wrong else "content neither a string nor a list of blocks"
        out.append(Violation("A10", ERROR, f"a {b.type} block with its {said}", **_at(messages, i, b)))
    if isinstance(b, ToolCall) and not isinstance(b.input, dict):
        out.append(Violation("A10", ERROR, f"tool_use {b.id} input is not an object", **_at(messages, i, b)))
    if isinstance(b, (ToolCall, ServerToolCall, ServerToolResult, Thinking, RedactedThinking)) and m.role != ASSISTANT:
        out.append(Violation("A10", ERROR, f"a {_type(b)} block in a {m.role} message", **_at(messages, i, b)))
    if isinstance(b, ToolResult):
        if m.role != USER:
            out.append(Violation("A10", ERROR, f"a tool_result block in a {m.role} message", **_at(messages, i, b)))
        if not isinstance(b.content, str):
            for inner in b.content:
                if not (isinstance(inner, RESULT_CONTENT_TYPES) or (isinstance(inner, Opaque) and inner.type in RESULT_CONTENT_OPAQUE)):
                    out.append(Violation("A10", ERROR, f"tool_result {b.tool_call_id} holds a {_type(inner)} block", **_at(messages, i, b)))
    if isinstance(b, (Image, Document)) and isinstance(b.raw, dict):
        out += _source(messages, i, b)
    return out


def _source(messages: tuple[Message, ...], i: int, b: Image | Document) -> list[Violation]:
    """A10: an image's or a document's source is of a type the API knows, base64 with its media type."""
    source = b.raw.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind not in ("base64", "url", "text", "content", "file"):
        return [Violation("A10", ERROR, f"{_type(b)} source type {kind!r} is not one the API knows", **_at(messages, i, b))]
    if kind == "base64" and not b.media_type:
        return [Violation("A10", ERROR, f"base64 {_type(b)} without media_type", **_at(messages, i, b))]
    return []


def _type(block: Block) -> str:
    if isinstance(block.raw, dict) and isinstance(block.raw.get("type"), str):
        return block.raw["type"]
    return type(block).__name__


# --- OpenAI ---------------------------------------------------------------------------------


def tool_runs(messages: tuple[Message, ...]) -> list[tuple[int | None, list[int]]]:
    """Each run of `tool` messages with the assistant message that precedes it (None if there is none)."""
    runs: list[tuple[int | None, list[int]]] = []
    for i, m in enumerate(messages):
        if m.role != "tool":
            continue
        if runs and runs[-1][1][-1] == i - 1:
            runs[-1][1].append(i)
        else:
            owner = i - 1 if i > 0 and messages[i - 1].role == ASSISTANT else None
            runs.append((owner, [i]))
    return runs


def openai_orphans(messages: tuple[Message, ...]) -> list[int]:
    """Tool messages that answer no tool call of the assistant message before their run, or a call
    a tool message before them in the run answered already (one per `tool_call_id`)."""
    out = []
    for owner, run in tool_runs(messages):
        ids = {c.id for c in messages[owner].tool_calls} if owner is not None else set()
        answered: set[str] = set()
        for i in run:
            call_id = answered_id(messages[i])
            if messages[i].blocks and (call_id not in ids or call_id in answered):
                out.append(i)
            if call_id is not None:
                answered.add(call_id)
    return out


def answered_id(message: Message) -> str | None:
    """The call a tool message answers (its one block is the ToolResult)."""
    first = message.blocks[0] if message.blocks else None
    return first.tool_call_id if isinstance(first, ToolResult) else None


def called_before(messages: tuple[Message, ...], index: int) -> set[str]:
    """The calls of the assistant message just before `index` (to tell a second answer from an orphan)."""
    before = next((m for m in reversed(messages[:index]) if m.role == ASSISTANT), None)
    return {c.id for c in before.tool_calls} if before is not None else set()


def openai_out_of_place(messages: tuple[Message, ...], orphans: Sequence[int],
                        unanswered: Sequence[tuple[int, ToolCall]]) -> dict[int, int]:
    """Of the tool messages that answer no call of the message before their run (`orphans`), those
    that answer a call left unanswered by an earlier assistant message (`unanswered`), its first
    answer after it (a user message came between): by the tool message, the message of the call."""
    calls = {c.id: i for i, c in unanswered}
    out: dict[int, int] = {}
    for i in orphans:
        call_id = answered_id(messages[i])
        owner = calls.pop(call_id, None) if call_id is not None else None
        if owner is not None and owner < i:
            out[i] = owner
    return out


def openai_unanswered(messages: tuple[Message, ...]) -> list[tuple[int, ToolCall]]:
    out = []
    for i, m in enumerate(messages):
        calls = [c for c in m.tool_calls if c.id != "<function_call>"]
        if m.role != ASSISTANT or not calls:
            continue
        answered: set[str] = set()
        j = i + 1
        while j < len(messages) and messages[j].role == "tool":
            answered.update(b.tool_call_id for b in messages[j].blocks if isinstance(b, ToolResult))
            j += 1
        out += [(i, c) for c in calls if c.id not in answered]
    return out


def openai_duplicate_calls(messages: tuple[Message, ...]) -> list[tuple[int, ToolCall]]:
    """Tool calls whose id an earlier call of the same message has: no tool message can tell them apart.

    Only within one message: the same id in a later assistant message is answered by its own run.
    """
    out = []
    for i, m in enumerate(messages):
        seen: set[str] = set()
        for c in m.tool_calls:
            if c.id == "<function_call>":
                continue
            if c.id in seen:
                out.append((i, c))
            seen.add(c.id)
    return out


def _openai(t: Transcript) -> list[Violation]:
    messages = t.messages
    out: list[Violation] = []
    add = out.append
    for i, c in openai_duplicate_calls(messages):
        add(Violation("O1", ERROR, f"tool call id {c.id or '(no id)'} ({c.name}) is used twice in its message", **_at(messages, i)))
    unanswered, orphans = openai_unanswered(messages), openai_orphans(messages)
    for i, c in unanswered:
        add(Violation("O1", ERROR, f"tool call {c.id or '(no id)'} ({c.name}) has no tool message after it", **_at(messages, i)))
    out_of_place = openai_out_of_place(messages, orphans, unanswered)
    for i in orphans:
        call_id = answered_id(messages[i])
        if i in out_of_place:
            add(Violation("O2", ERROR, f"tool message {call_id} answers tool call {call_id} of message {out_of_place[i]}, "
                                       "with other messages between them", **_at(messages, i)))
        elif call_id in called_before(messages, i):
            add(Violation("O1", ERROR, f"tool call {call_id} is answered by a second tool message", **_at(messages, i)))
        else:
            add(Violation("O2", ERROR, f"tool message {call_id or '(no id)'} answers no tool call of the assistant message before it", **_at(messages, i)))
    for i, m in enumerate(messages):
        legacy = [c for c in m.tool_calls if c.id == "<function_call>"]
        if m.role not in OPENAI_ROLES:
            add(Violation("O5", ERROR, f"role {m.role!r} is not one the Chat Completions API accepts", **_at(messages, i)))
            continue
        if m.role == ASSISTANT and not m.blocks:
            add(Violation("O3", ERROR, "assistant content is null without tool_calls", **_at(messages, i)))
        if legacy and len(m.tool_calls) > len(legacy):
            add(Violation("O4", ERROR, "function_call mixed with tool_calls in one message", **_at(messages, i)))
        if legacy and not (i + 1 < len(messages) and messages[i + 1].role == "function"):
            add(Violation("O4", ERROR, "function_call has no function message after it", **_at(messages, i)))
        if m.role == "function" and not (i > 0 and any(c.id == "<function_call>" for c in messages[i - 1].tool_calls)):
            add(Violation("O4", ERROR, "function message answers no function_call", **_at(messages, i)))
        allowed = OPENAI_PART_TYPES[m.role]
        first = m.blocks[0] if m.blocks else None
        parts = first.content if m.role in ("tool", "function") and isinstance(first, ToolResult) and not isinstance(first.content, str) else m.blocks
        for b in parts:
            if isinstance(b, (ToolCall, ToolResult)) or (isinstance(b, Opaque) and b.type == "compaction"):
                continue  # a compaction is an item of a Responses history (a message of its own), not a part
            kind = _type(b) if isinstance(b.raw, dict) else "text"
            if kind not in allowed:
                add(Violation("O5", ERROR, f"a {kind} part in a {m.role} message", **_at(messages, i)))
    return sorted(out, key=lambda v: (v.index if v.index is not None else -1))


def added_errors(before: Transcript, after: Transcript, *, same_messages: bool = True,
                 same_input: bool = False) -> list[Violation]:
    """The errors `after` has that `before` did not: the post-condition of every rewrite (docs/design.md §5).

    With `same_messages` (a rewrite that keeps every message in place, like prune) an error is
    new unless the same rule failed at the same message; otherwise (compact) unless the same
    rule failed anywhere in the input. `same_input`: `after` holds the messages, system prompt and
    tools of `before`, one for one (`slim`, which rewrites only what no message is read from):
    the providers' rules find the same in both, and only the format's rules are checked.
    """
    if same_input:  # what the providers' rules find in `after` they find in `before`
        found = errors(adapter(after).check_log(after, None))
        had = errors(adapter(before).check_log(before, None)) if found else []
    else:
        found = errors(check(after))
        if not found:
            return []
        had = errors(check(before))
    if same_messages:
        old = {(v.rule, v.index) for v in had}
        return [v for v in found if (v.rule, v.index) not in old]
    rules = {v.rule for v in had}
    return [v for v in found if v.rule not in rules]
