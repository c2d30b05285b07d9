"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`).

Each line is a `RolloutLine` (codex-rs/protocol): `{"timestamp", "type", "payload"}`. The messages
of the model are the history Codex rebuilds when it resumes (core `reconstruct_history_from_rollout`):
the `response_item` payloads it sends to the API, in order; a `compacted` line replaces all of
them with its `replacement_history`, or, without one, with the real user messages (the newest, up
to 20,000 tokens) and a user message holding its `message`; an `event_msg` `thread_rolled_back`
drops the last `num_turns` user turns. Every line is kept and written back as read: a write
re-serialises only the lines holding an item that changed (its `response_item` line, or the
`compacted` line whose `replacement_history` holds it) and adds a `response_item` line for an
item an operation added.

Dialect: openai. Codex speaks the Responses API, whose items are Chat Completions messages one
for one: a `function_call` (`custom_tool_call`, `local_shell_call`) is a tool call of the
assistant's turn, and the `function_call_output` (`custom_tool_call_output`) answering it by
`call_id` is a tool message after that turn, which is the pairing check's O rules test. So the
items of one assistant turn (reasoning, text, calls, other tool items) make one assistant message,
each output one tool message, and each user or developer message one message.

A block read from an item has `line` = that item's index in `source.items` (not a file line) and,
except calls and results, no `raw`: check's OpenAI rules would take the Responses part types
(`input_text`, …) for unknown Chat Completions parts. What a write cannot rebuild from a block
comes from its item. Reasoning and the tool items Codex runs itself (web search, tool search,
image generation, `compaction`) are opaque blocks: their text is encrypted or not the model's to
read, and they go back as they were. The user message Codex makes of a summary (its prefix line,
then the summary) reads as transcompact's summary message, so that compacting again merges it
(Codex sends its prefix, some 80 tokens more than ours).

`session_meta.base_instructions` is the system part (read only). The `usage` of a
`token_usage_record` line (Codex 0.171 writes one per response) and the `last_token_usage` of an
`event_msg` `token_count` are recorded usage: put as `usage` on the raw of the assistant message
of the response they count (its `input_tokens` includes cached input), where calibrate's
`usage_tokens` finds it. Codex resumes with the last `token_count` as the size of its context
(`last_token_info_from_rollout`; before a turn it compacts a context over its limit): left as it
was, a count after a rewrite that shrank the history would make it compact a pruned rollout it no
longer needs to, and anchor `estimate` on content that is gone; cleared (as the Gemini writer
clears its records' `tokens`), Codex would count only what follows its last reply and not compact
one it needs to, and `estimate` would lose what the log never shows (the base instructions and
tools). So a write restates each usage line after a change, the prompt (`input_tokens`,
`total_tokens`) of its response less what the change took out before it (more what it added), by
Codex's own estimate of 4 characters a token; the running totals (`total_token_usage`,
`turn_token_usage`) stay as the API billed them.

A paginated rollout (`session_meta.history_mode: "paginated"`, what Codex 0.171 writes) numbers
its lines with a top-level `ordinal`, and Codex refuses one whose last line has none (rollout
ordinal.rs): a line a write adds takes the ordinal after the line before it, and the lines after it
move up by one (down by one after a line that went), so the numbering stays whole. A forked one
(`session_meta.history_base`) holds only its own lines: its history starts with its parent
rollout's lines below `end_ordinal_exclusive`, read from the parent's file as Codex finds it (by
its id, next to the fork or under the same `sessions` directory). Those lines are read, never
written: a change to one of their items is refused. What Codex keeps beside a paginated rollout
about its bytes (its thread-history projection, a fork's cut in its parent) is kept true by a write
over the file where Codex keeps it (thread_store.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...core.errors import InputError, Location, ShapeError
from ...core.jsondata import BLANK, Parsed, Record, parse, read_again
from ...core.model import (
    ASSISTANT,
    TOOL,
    USER,
    Block,
    BlockSize,
    Image,
    Message,
    MessageView,
    Opaque,
    Text,
    ToolCall,
    ToolResult,
    Transcript,
)
from ...core.summary_text import SUMMARY_PREFIX
from ...dialects.openai import decode_arguments
from ...io import urls
from .._log import LineOrigin, string_or_empty
from .parsing import NAME, ViewedItemLine

LINE_TYPES = frozenset({"session_meta", "response_item", "compacted", "turn_context", "event_msg"})
CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})
NOT_SENT = frozenset({"ghost_snapshot", "other"})  # items Codex keeps in the log but never sends (`is_api_message`)

# What Codex leaves out of the user messages it keeps when it rebuilds a history without
# `replacement_history` (core `collect_user_messages`): context it injected, and earlier summaries.
CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<turn_aborted>")
# The first line of the user message Codex makes of a summary (core templates/compact/summary_prefix.md),
# its summary on the lines after it; older versions worded the end of the line otherwise.
CODEX_SUMMARY_START = "Another language model started to solve this problem"
CODEX_SUMMARY_PREFIX = (
    CODEX_SUMMARY_START + " and produced a summary of its thinking process. You also "
    "have access to the state of the tools that were used by that language model. Use this to build on the work "
    "that has already been done and avoid duplicating work. Here is the summary produced by the other language "
    "model, use the information in this summary to assist with your own analysis:")
REBUILD_USER_TOKENS = 20_000
CHARS_PER_TOKEN = 4  # Codex's own approximation (`approx_token_count`)


@dataclass(frozen=True, slots=True)
class Item:
    """A response item of the active view, and where it lives in the file."""

    value: dict
    record: int  # the line that holds it; below 0: a line of the parent rollouts (`RolloutSource.inherited`)
    slot: int | None  # its index in that line's `replacement_history`; None: it is the line's payload
    rebuilt: bool = False  # made by the rebuild of a `compacted` line without `replacement_history`


@dataclass(frozen=True)
class RolloutSource:
    records: list[Record]  # the file's own lines
    items: tuple[Item, ...]
    bom: bool = False
    inherited: tuple[Record, ...] = ()  # a fork's history: its parents' lines, read only

    @property
    def paginated(self) -> bool:
        return is_paginated(self.records)


@dataclass(frozen=True, slots=True)
class _Origin(LineOrigin):
    items: tuple[int, ...]  # indices into RolloutSource.items
    blocks: tuple[Block, ...]


is_unchanged = _Origin.unchanged  # a message read from the log as it is


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    if parsed.records is None or messages_path is not None:
        return False
    values = parsed.values()
    return all(isinstance(v, dict) and "payload" in v and isinstance(v.get("type"), str) for v in values) and any(
        v["type"] in LINE_TYPES for v in values)


def item_kind(item: dict) -> str | None:
    """An item's `type`; a message may leave it out (the Responses API's `EasyInputMessage`). A
    `type` that is not a string names no kind (None: an item nobody parses, kept as it is)."""
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else None


def _text(part: Any) -> str | None:
    text = part.get("text") if isinstance(part, dict) else None
    return text if isinstance(text, str) else None


def is_user_message(item: dict) -> bool:
    """A message the user typed: what a user turn starts with (not context Codex injected, not a summary)."""
    if item.get("type") != "message" or item.get("role") != USER:
        return False
    content = item.get("content")
    first = _text(content[0]) if isinstance(content, list) and content else content if isinstance(content, str) else None
    first = (first or "").lstrip()
    return not first.startswith(CONTEXT_PREFIXES) and not is_codex_summary(first)


def is_codex_summary(text: str) -> bool:
    """The text of the user message Codex makes of a summary."""
    return text.startswith(CODEX_SUMMARY_START)


def is_sent(item: dict) -> bool:
    """Whether Codex sends the item: not one it keeps for itself, nor one it cannot parse (a `type`
    that is not a string: Codex skips such a malformed line when it resumes)."""
    kind = item.get("type")
    return isinstance(kind, str) and kind not in NOT_SENT and not (kind == "message" and item.get("role") == "system")


def user_item(text: str) -> dict:
    return {"type": "message", "role": USER, "content": [{"type": "input_text", "text": text}]}


def assistant_item(text: str) -> dict:
    return {"type": "message", "role": ASSISTANT, "content": [{"type": "output_text", "text": text}]}


def active_items(records: list[Record], first: int = 0) -> tuple[list[Item], dict[int, Item]]:
    """The items Codex sends after the last line, and the lines that recorded usage of a response
    it still sends, each with the last assistant item of that response; `first` is the index of
    the first record (a fork's parents' lines come first, below 0)."""
    items: list[Item] = []
    counted: dict[int, Item] = {}
    # The last `replacement_history` replaces every item before it: the lines before it say
    # nothing of what is sent (a count reads the rollout before each of its compactions).
    start = _last_replacement(records)
    for index, (_, value) in enumerate(itertools.islice(records, start, None), first + start):
        payload = value.get("payload") if isinstance(value, dict) else None  # (a viewed line too)
        if not isinstance(payload, dict):
            continue
        kind = value.get("type")
        if kind == "response_item" and is_sent(payload):
            items.append(Item(payload, index, None))
        elif kind == "compacted":
            history = payload.get("replacement_history")
            if isinstance(history, list):
                items = [Item(v, index, slot) for slot, v in enumerate(history) if isinstance(v, dict) and is_sent(v)]
            else:
                items = _rebuilt(items, payload.get("message"), index)
        elif kind == "event_msg" and payload.get("type") == "thread_rolled_back":
            items = _rolled_back(items, payload.get("num_turns"))
        elif line_usage(value) is not None and (response := _last_response_item(items)) is not None:
            counted[index] = response
    return items, counted


def _last_replacement(records: list[Record]) -> int:
    """Where the last `compacted` line with a `replacement_history` is in `records` (0: none)."""
    for position in range(len(records) - 1, -1, -1):
        value = records[position][1]
        if type(value) is dict and value.get("type") == "compacted":
            payload = value.get("payload")
            if isinstance(payload, dict) and isinstance(payload.get("replacement_history"), list):
                return position
    return 0


def line_usage(value: Any) -> dict | None:
    """The usage a line recorded of one response: a `token_usage_record`'s `usage`, an `event_msg`
    `token_count`'s `info.last_token_usage` (its `total_token_usage` is the session's running total)."""
    payload = value.get("payload") if type(value) is dict else None
    if not isinstance(payload, dict):
        return None
    if value.get("type") == "token_usage_record":
        usage = payload.get("usage")
    elif value.get("type") == "event_msg" and payload.get("type") == "token_count" and isinstance(payload.get("info"), dict):
        usage = payload["info"].get("last_token_usage")
    else:
        return None
    return usage if isinstance(usage, dict) else None


def _last_response_item(items: list[Item]) -> Item | None:
    """The newest assistant item before a token count, not looking past the user's last message."""
    for item in reversed(items):
        if item.value.get("type") in OUTPUT_TYPES:
            continue
        if item.value.get("type") == "message" and item.value.get("role") != ASSISTANT:
            return None
        return item
    return None


def _rebuilt(items: list[Item], message: Any, record: int) -> list[Item]:
    """What Codex makes of a `compacted` line without `replacement_history` (core compact.rs
    `build_compacted_history`, less the initial context it takes from its configuration): the
    newest user messages up to 20,000 tokens, then a user message holding `message`."""
    texts = ["\n".join(t for p in item.value["content"] if (t := _text(p)) is not None)
             for item in items if is_user_message(item.value) and isinstance(item.value.get("content"), list)]
    kept: list[str] = []
    budget = REBUILD_USER_TOKENS * CHARS_PER_TOKEN
    for text in reversed(texts):
        if len(text) > budget:
            break
        kept.insert(0, text)
        budget -= len(text)
    values = [user_item(t) for t in kept] + [user_item(message if isinstance(message, str) else "")]
    return [Item(v, record, slot, rebuilt=True) for slot, v in enumerate(values)]


def _rolled_back(items: list[Item], turns: Any) -> list[Item]:
    """`thread_rolled_back`: the history before the last `turns` user turns."""
    if not isinstance(turns, int) or isinstance(turns, bool) or turns <= 0:
        return items
    starts = [i for i, item in enumerate(items) if is_user_message(item.value)]
    if not starts:
        return items
    return items[:starts[max(0, len(starts) - turns)]]


# --- items ↔ blocks ---------------------------------------------------------------------------


def turns(values: list[dict]) -> list[tuple[str, list[int]]]:
    """The messages a history's items make: (role, the indices of its items). Each user, system or
    developer message is one, each output one `tool` message, the items of an assistant turn
    between them (reasoning, text, calls, other tool items) one assistant message."""
    out: list[tuple[str, list[int]]] = []
    turn: list[int] = []  # the items of the assistant turn being read

    def end_turn() -> None:
        if turn:
            out.append((ASSISTANT, list(turn)))
            turn.clear()

    for index, value in enumerate(values):
        kind = item_kind(value)
        if kind == "message" and value.get("role") != ASSISTANT:
            end_turn()
            role = value.get("role")
            out.append((role if isinstance(role, str) else USER, [index]))
        elif kind in OUTPUT_TYPES:
            end_turn()
            out.append((TOOL, [index]))
        elif kind == "compaction":  # the API reads nothing before it: a message of its own marks where that is
            end_turn()
            out.append((ASSISTANT, [index]))
        else:
            turn.append(index)
    end_turn()
    return out


def _part_block(part: Any, index: int) -> Block:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in ("input_text", "output_text") and (text := _text(part)) is not None:
        return Text(text, line=index)
    if kind == "input_image":
        url = part.get("image_url")
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url[:200]:
            head, _, data = url.partition(";base64,")
            return Image(head[5:] or None, data, None, line=index)
        return Image(None, None, url if isinstance(url, str) else None, line=index)
    return Opaque(kind if isinstance(kind, str) else None, line=index)


def item_blocks(item: dict, index: int) -> tuple[Block, ...]:
    kind = item_kind(item)
    if kind == "message":
        content = item.get("content")
        if isinstance(content, str):
            blocks: tuple[Block, ...] = (Text(content, line=index),)
        else:
            blocks = tuple(_part_block(p, index) for p in content) if isinstance(content, list) else ()
        if item.get("role") == USER and blocks and isinstance(blocks[0], Text) and is_codex_summary(blocks[0].text.lstrip()):
            # Codex's summary reads as transcompact's summary message: compacting again merges it.
            summary = blocks[0].text.lstrip().partition("\n")[2]
            blocks = (Text(SUMMARY_PREFIX + summary, line=index), *blocks[1:])
        return blocks
    if kind == "function_call":
        return (ToolCall(string_or_empty(item.get("call_id")), string_or_empty(item.get("name")), decode_arguments(item.get("arguments")),
                         raw=item, line=index),)
    if kind == "custom_tool_call":
        return (ToolCall(string_or_empty(item.get("call_id")), string_or_empty(item.get("name")), item.get("input"), raw=item, line=index),)
    if kind == "local_shell_call":
        call_id = item.get("call_id") if isinstance(item.get("call_id"), str) else item.get("id")
        return (ToolCall(string_or_empty(call_id), "local_shell", item.get("action"), raw=item, line=index),)
    if kind in OUTPUT_TYPES:
        output = item.get("output")
        if isinstance(output, str):
            result: str | tuple[Block, ...] = output
        elif isinstance(output, list):
            result = tuple(_part_block(p, index) for p in output)
        else:
            result = (Opaque(None, line=index),)
        return (ToolResult(string_or_empty(item.get("call_id")), result, raw=item, line=index),)
    return (Opaque(kind if isinstance(kind, str) else None, line=index),)


def read(parsed: Parsed, messages_path: str | None = None) -> Transcript:
    records = parsed.records or []
    return rollout(records, parsed.name, parsed.bom, inherited_records(records, parsed.name))


def rollout(records: list[Record], name: str, bom: bool, inherited: tuple[Record, ...]) -> Transcript:
    """The transcript of a rollout's lines, after the lines its history starts with (a fork's
    parents'). A message all of whose items their line's view read (`parsing.ViewedItemLine`) is
    left unread: its view counts and checks it, and it is read from those lines when asked for."""
    lines = [*inherited, *records]
    found, counted = active_items(lines, -len(inherited))
    items = tuple(found)
    usage = {(item.record, item.slot): line_usage(lines[record + len(inherited)][1]) for record, item in counted.items()}
    messages: list[Message] = []
    for role, indices in turns([item.value for item in items]):
        recorded = [usage[key] for i in indices if (key := (items[i].record, items[i].slot)) in usage]
        record = items[indices[0]].record
        line = record + 1 if record >= 0 else None
        seen = [sizes for i in indices if (sizes := _seen(records, items[i])) is not None]
        if len(seen) == len(indices):
            view = MessageView(tuple(size for sizes in seen for size in sizes), _with_usage(items[indices[0]].value, recorded),
                               tuple(i for i, sizes in zip(indices, seen) for _ in sizes))
            messages.append(Message.unread(role, view, None, _ReadLater(role, records, items, tuple(indices), recorded, name),
                                           line=line))
        else:
            messages.append(_message(role, records, items, tuple(indices), recorded, name))
    return Transcript(format=NAME, dialect="openai", messages=tuple(messages), system=_system([*records, *inherited]),
                      name=name, source=RolloutSource(records, items, bom, inherited))


def _seen(records: list[Record], item: Item) -> tuple[BlockSize, ...] | None:
    """The sizes of the blocks of an item its line's view read, or None: the item is read."""
    value = records[item.record][1] if item.record >= 0 and item.slot is None else None
    return value.seen if type(value) is ViewedItemLine else None


def _message(role: str, records: list[Record], items: tuple[Item, ...], indices: tuple[int, ...],
             recorded: list[Any], name: str) -> Message:
    """The message of a turn's items (`indices`), each read whole (again from its line, where its
    view read it); `recorded`: the usage lines that counted its response."""
    values = [whole_item(records, items[i], name) for i in indices]
    blocks = tuple(b for i, value in zip(indices, values) for b in item_blocks(value, i))
    record = items[indices[0]].record
    return Message(role, blocks, raw=_with_usage(values[0], recorded), line=record + 1 if record >= 0 else None,
                   origin=_Origin(indices, blocks))


def _with_usage(value: dict, recorded: list[Any]) -> dict:
    return {**value, "usage": recorded[-1]} if recorded else value


def whole_item(records: list[Record], item: Item, name: str) -> dict:
    """An item with everything in it: read again from its line where its view read the line."""
    if _seen(records, item) is None:
        return item.value
    payload = read_again(records[item.record], name, item.record)["payload"]
    assert type(payload) is dict  # what the view read
    return payload


def read_whole(source: RolloutSource, name: str) -> RolloutSource:
    """The rollout with each line its view read read whole, and the items of those lines with
    everything in them: what a write works on (a rollout read for counting that is written)."""
    records = source.records
    if not any(type(value) is ViewedItemLine for _, value in records):
        return source
    whole = [(line, read_again((line, value), name, k)) if type(value) is ViewedItemLine else (line, value)
             for k, (line, value) in enumerate(records)]
    items = tuple(replace(item, value=whole[item.record][1]["payload"]) if _seen(records, item) is not None else item
                  for item in source.items)
    return replace(source, records=whole, items=items)


class _ReadLater:
    """The message of a turn whose items their lines' views read, read from those lines when
    first asked for: one per unread message of a rollout, so small (slots)."""

    __slots__ = ("role", "records", "items", "indices", "recorded", "name")

    def __init__(self, role: str, records: list[Record], items: tuple[Item, ...], indices: tuple[int, ...],
                 recorded: list[Any], name: str) -> None:
        self.role, self.records, self.items, self.indices, self.recorded, self.name = role, records, items, indices, recorded, name

    def __call__(self) -> Message:
        return _message(self.role, self.records, self.items, self.indices, self.recorded, self.name)


def session_meta(records: list[Record] | tuple[Record, ...]) -> dict:
    """The payload of the rollout's first line, its `session_meta` (Codex reads the history mode there)."""
    value = next((v for _, v in records if v is not BLANK), None)
    payload = value.get("payload") if isinstance(value, dict) and value.get("type") == "session_meta" else None
    return payload if isinstance(payload, dict) else {}


def is_paginated(records: list[Record]) -> bool:
    return session_meta(records).get("history_mode") == "paginated"


# --- a fork's parents ------------------------------------------------------------------------


def inherited_records(records: list[Record], name: str, forks: tuple[str, ...] = ()) -> tuple[Record, ...]:
    """The lines a forked rollout's history starts with: its parent's below `end_ordinal_exclusive`
    (after the parent's own parents'); none for a rollout that is no fork."""
    base = session_meta(records).get("history_base")
    if not isinstance(base, dict):
        return ()
    parent, end = base.get("thread_id"), base.get("end_ordinal_exclusive")
    if not isinstance(parent, str) or not isinstance(end, int) or isinstance(end, bool):
        raise ShapeError("`session_meta.history_base` names no rollout (`thread_id`) and ordinal (`end_ordinal_exclusive`)",
                         location=Location(name))
    found = parent_rollout(name, parent)
    if found is None:
        raise InputError(
            f"a forked rollout: its history starts with the first {end} lines of rollout {parent}, "
            "and no file of that rollout is next to it or under its sessions directory",
            location=Location(name), hint=f"put rollout-…-{parent}.jsonl beside it, as Codex keeps it under $CODEX_HOME/sessions")
    if str(found) in forks:
        raise ShapeError(f"a forked rollout whose parents come back to {found}", location=Location(name))
    parsed = parse(found.read_bytes(), str(found))
    own = [(line, value) for line, value in parsed.records or () if isinstance(value, dict)
           and isinstance(ordinal := value.get("ordinal"), int) and ordinal < end]
    if not own or own[-1][1]["ordinal"] != end - 1:
        raise InputError(f"a forked rollout: its history starts with the first {end} lines of rollout {parent}, "
                         f"which {found} does not hold", location=Location(name))
    return (*inherited_records(parsed.records or [], str(found), (*forks, name)), *own)


def parent_rollout(name: str, rollout_id: str) -> Path | None:
    """The file of rollout `rollout_id`, where Codex finds it from a fork (its id ends the file's
    name): in the fork's directory, else under the `sessions` (or `archived_sessions`) directory of
    the CODEX_HOME the fork is in."""
    if name.startswith("<") or urls.is_url(name):
        return None
    pattern = f"rollout-*-{rollout_id}.jsonl"
    here = Path(name).absolute().parent
    found = sorted(here.glob(pattern))
    sessions = next((d for d in (here, *here.parents[:3]) if d.name == "sessions"), None)
    for tree in (sessions, sessions.parent / "archived_sessions") if sessions else ():
        found = found or sorted(tree.rglob(pattern))
    return found[0] if found else None


def _system(records: list[Record]) -> tuple[Block, ...]:
    """The session's `base_instructions` (a string, or `{"text": …}` in newer versions)."""
    for _, value in records:
        if type(value) is dict and value.get("type") == "session_meta" and isinstance(value.get("payload"), dict):
            instructions = value["payload"].get("base_instructions")
            text = instructions if isinstance(instructions, str) else _text(instructions)
            return (Text(text),) if text else ()
    return ()


# --- blocks → items ---------------------------------------------------------------------------
