"""OpenHands conversations (the V1 event store of `OpenHands/software-agent-sdk`).

A conversation is a directory, `base_state.json` and `events/event-NNNNN-<id>.json`, read as its
bundle (`openhands_store`): JSON Lines of the state, then the events in index order. A JSON Lines
file of events alone (what the agent server exports) reads the same way. Each event is
`{id, timestamp, source, parent_id?, …, kind}`.

The messages are those the agent sends when it resumes (`ConversationState.rebuild_view`, then
`LLMConvertibleEvent.events_to_messages`): the events on the active branch (from the state's
`leaf_event_id`, else the last event, back to the root by `parent_id`; an event without one
follows the event before it), made into a view one at a time: an LLM-visible event is appended;
a `Condensation` removes the events it forgets and, with a summary and an offset, inserts its
summary there. Then the view's four properties are enforced as the agent does on a cold load
(`context/view/properties`): a second observation of a call, the rest of a batch whose other
calls are gone, an action without an observation and an observation without an action, the rest
of a tool loop that lost part of itself are dropped. What check reports of those is in
`openhands_rules`.

Dialect: openai. The `ActionEvent`s of one LLM response (`llm_response_id`) are one assistant
message (the first one's `thought`, then every `tool_call`, its `arguments` a JSON string); each
`ObservationEvent`, `UserRejectObservation` or `AgentErrorEvent` is a `tool` message answering a
call by `tool_call_id`; a `MessageEvent` is its `llm_message` (and its `extended_content`); the
`SystemPromptEvent` is the system part and its `tools` the tools. A condensation's summary reads
as transcompact's summary message (`[Previous conversation summary]` + the summary), so that
compacting again merges it; the agent sends the summary alone. The agent also joins consecutive
plain user messages into one; they are read one message per event. An observation reads as its
`content` (the agent prefixes an error header to an error's, and a tool's own observation class
may word it further).

Written: every line is kept; an event whose message changed is re-serialised in place (a
directory gets that one file rewritten); an event whose message was dropped is forgotten by an
appended `Condensation`, as the agent removes events, never deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.errors import Location, ShapeError
from ...core.jsondata import BLANK, Parsed, Record, kind_of
from ...core.model import ASSISTANT, TOOL, USER, Block, Image, Message, Text, ToolCall, ToolResult, Transcript
from ...dialects.openai import decode_arguments
from .._log import LineOrigin

NAME = "openhands"
DESCRIPTION = "OpenHands conversation (a directory of base_state.json and events/, or its events as JSON Lines)"
LINES = True  # a line (an event file) is what a rewrite changes, keeps or removes

ACTION = "ActionEvent"
OBSERVATIONS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
SYSTEM_PROMPT = "SystemPromptEvent"
SUMMARY = "CondensationSummaryEvent"
CONDENSATION = "Condensation"
LLM_VISIBLE = frozenset({SYSTEM_PROMPT, "MessageEvent", ACTION, SUMMARY, *OBSERVATIONS})
# Events the agent never takes for the leaf of the conversation tree (state.py `_resolve_active_leaf`).
NOT_TREE_NODES = frozenset({"ConversationStateUpdateEvent", "ConversationErrorEvent"})
ROOT_PARENT_ID = "__root__"
REJECTED = "Action rejected: "  # what the agent sends before a UserRejectObservation's reason
# What pairs and groups the calls: the agent refuses to load an event where one is not a string.
IDENTIFYING_KEYS = {ACTION: ("tool_call_id", "llm_response_id"), **{kind: ("tool_call_id",) for kind in OBSERVATIONS}}
# summary_message.SUMMARY_PREFIX (that module imports the formats): a condensation's summary reads as ours.
SUMMARY_PREFIX = "[Previous conversation summary]\n\n"


@dataclass(frozen=True, slots=True)
class Entry:
    """An event of the view: its id, its JSON, and the line that holds it (a summary: its condensation's)."""

    id: str
    value: dict
    record: int

    @property
    def kind(self) -> str:
        return self.value["kind"]


@dataclass(frozen=True)
class StoreSource:
    records: list[Record]
    state: int | None  # the record of base_state, when the input has one
    branch: tuple[int, ...]  # the event records of the active branch, root first
    view: tuple[Entry, ...]  # what the agent sends, properties enforced
    bom: bool = False


@dataclass(frozen=True, slots=True)
class _Origin(LineOrigin):
    entries: tuple[int, ...]  # positions in StoreSource.view
    blocks: tuple[Block, ...]


is_unchanged = _Origin.unchanged  # a message read from the log as it is


def is_event(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("kind"), str) and isinstance(value.get("id"), str)
            and isinstance(value.get("source"), str))


def is_state(value: Any) -> bool:
    """`base_state.json`: the conversation's id and agent, and no `kind`."""
    return isinstance(value, dict) and "kind" not in value and isinstance(value.get("id"), str) and "agent" in value


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    if parsed.records is None or messages_path is not None:
        return False
    values = parsed.values()
    events = values[1:] if values and is_state(values[0]) else values
    return bool(events) and all(is_event(v) for v in events)


def state_record(records: list[Record]) -> int | None:
    """The line of base_state: the first one, when it is the state."""
    first = next((i for i, (_, v) in enumerate(records) if v is not BLANK), None)
    return first if first is not None and is_state(records[first][1]) else None


def event_records(records: list[Record]) -> list[int]:
    state = state_record(records)
    return [i for i, (_, v) in enumerate(records) if v is not BLANK and i != state]


def active_branch(records: list[Record], state: int | None) -> tuple[int, ...]:
    """The event records from the root to the leaf (`EventLog.path_to_root`)."""
    events = event_records(records)
    by_id: dict[str, int] = {}
    for k, i in enumerate(events):
        by_id.setdefault(records[i][1]["id"], k)  # an id written twice: the agent keeps the first
    leaf = records[state][1].get("leaf_event_id") if state is not None else None
    at = by_id.get(leaf) if isinstance(leaf, str) else None
    if at is None and not (state is not None and records[state][1].get("head_is_empty") is True):
        at = next((k for k in range(len(events) - 1, -1, -1) if records[events[k]][1]["kind"] not in NOT_TREE_NODES), None)
    path: list[int] = []
    seen: set[int] = set()
    while at is not None and at not in seen:
        seen.add(at)
        path.append(events[at])
        parent = records[events[at]][1].get("parent_id")
        if parent == ROOT_PARENT_ID:
            break
        at = by_id.get(parent) if isinstance(parent, str) else (at - 1 if at > 0 else None)
    return tuple(reversed(path))


def condensed(records: list[Record], branch: tuple[int, ...]) -> list[Entry]:
    """The view before its properties are enforced (`View.append_event`, one event at a time)."""
    view: list[Entry] = []
    for index in branch:
        value = records[index][1]
        if value["kind"] == CONDENSATION:
            forgotten = value.get("forgotten_event_ids")
            gone = {i for i in forgotten if isinstance(i, str)} if isinstance(forgotten, list) else set()
            view = [entry for entry in view if entry.id not in gone]
            summary, offset = value.get("summary"), value.get("summary_offset")
            if isinstance(summary, str) and type(offset) is int and offset >= 0:
                summary_id = f"{value['id']}-summary"
                view.insert(offset, Entry(summary_id, {"kind": SUMMARY, "id": summary_id, "summary": summary}, index))
        elif value["kind"] in LLM_VISIBLE:
            view.append(Entry(value["id"], value, index))
    return view


# --- the four properties of a view (context/view/properties), in the order the agent enforces them


def _call_id(entry: Entry) -> Any:
    return entry.value.get("tool_call_id")


def observation_uniqueness(view: list[Entry], branch: list[dict]) -> dict[str, str]:
    seen: set = set()
    out = {}
    for entry in view:
        if entry.kind in OBSERVATIONS:
            if _call_id(entry) in seen:
                out[entry.id] = f"a second observation of tool call {_call_id(entry)}"
            seen.add(_call_id(entry))
    return out


def batch_atomicity(view: list[Entry], branch: list[dict]) -> dict[str, str]:
    def batches(events) -> dict[Any, set[str]]:
        out: dict[Any, set[str]] = {}
        for value in events:
            if value["kind"] == ACTION:
                out.setdefault(value.get("llm_response_id"), set()).add(value["id"])
        return out

    every = batches(branch)
    out: dict[str, str] = {}
    for response, ids in batches(e.value for e in view).items():
        if ids != every.get(response):
            out.update((i, f"the other calls of LLM response {response} are not in the view") for i in ids)
    return out


def tool_call_matching(view: list[Entry], branch: list[dict]) -> dict[str, str]:
    calls = {_call_id(e) for e in view if e.kind == ACTION}
    answers = {_call_id(e) for e in view if e.kind in OBSERVATIONS}
    out = {}
    for entry in view:
        if entry.kind == ACTION and _call_id(entry) not in answers:
            out[entry.id] = f"tool call {_call_id(entry)} has no observation"
        elif entry.kind in OBSERVATIONS and _call_id(entry) not in calls:
            out[entry.id] = f"the observation of tool call {_call_id(entry)} has no action"
    return out


def _starts_loop(value: dict) -> bool:
    return value["kind"] == ACTION and bool(value.get("thinking_blocks"))


def tool_loops(events) -> list[set[str]]:
    """Runs of actions and observations that start at an action with thinking blocks."""
    loops: list[set[str]] = []
    current: set[str] | None = None
    for value in events:
        if _starts_loop(value):
            if current is not None:
                loops.append(current)
            current = {value["id"]}
        elif value["kind"] == ACTION or value["kind"] in OBSERVATIONS:
            if current is not None:
                current.add(value["id"])
        elif current is not None:
            loops.append(current)
            current = None
    if current is not None:
        loops.append(current)
    return loops


def tool_loop_atomicity(view: list[Entry], branch: list[dict]) -> dict[str, str]:
    present = {e.id for e in view}
    out: dict[str, str] = {}
    for loop in tool_loops(branch):
        if loop & present and not loop <= present:
            out.update((i, "part of its tool loop (from a call with thinking) is not in the view") for i in loop & present)
    return out


PROPERTIES: tuple[tuple[str, Callable[[list[Entry], list[dict]], dict[str, str]]], ...] = (
    ("H1", observation_uniqueness),
    ("H2", batch_atomicity),
    ("H3", tool_call_matching),
    ("H4", tool_loop_atomicity),
)


def enforced(view: list[Entry], branch: list[dict]) -> tuple[list[Entry], list[tuple[str, Entry, str]]]:
    """The view as the agent leaves it (`View.enforce_properties`: the first property that drops
    anything drops it, then all are tried again), and what each rule dropped."""
    dropped: list[tuple[str, Entry, str]] = []
    while True:
        for rule, prop in PROPERTIES:
            found = prop(view, branch)
            if found:
                dropped += [(rule, e, found[e.id]) for e in view if e.id in found]
                view = [e for e in view if e.id not in found]
                break
        else:
            return view, dropped


# --- reading ---------------------------------------------------------------------------------


def _content_blocks(items: Any) -> tuple[Block, ...]:
    """OpenHands TextContent / ImageContent items as blocks (an image item holds several URLs)."""
    blocks: list[Block] = []
    for item in items if isinstance(items, list) else ():
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text" and isinstance(item.get("text"), str):
            blocks.append(Text(item["text"]))
        elif kind == "image" and isinstance(item.get("image_urls"), list):
            for url in item["image_urls"]:
                if isinstance(url, str) and url.startswith("data:") and ";base64," in url[:200]:
                    head, _, data = url.partition(";base64,")
                    blocks.append(Image(head[5:] or None, data))
                elif isinstance(url, str):
                    blocks.append(Image(url=url))
    return tuple(blocks)


def _observation_content(value: dict) -> tuple[tuple[Block, ...], bool]:
    """What an observation-like event answers its call with, and whether it is an error."""
    if value["kind"] == "AgentErrorEvent":
        error = value.get("error")
        return (Text(error if isinstance(error, str) else ""),), True
    if value["kind"] == "UserRejectObservation":
        reason = value.get("rejection_reason")
        return (Text(REJECTED + (reason if isinstance(reason, str) else "User rejected the action")),), False
    observation = value["observation"] if isinstance(value.get("observation"), dict) else {}
    blocks = _content_blocks(observation.get("content")) + _content_blocks(value.get("extended_content"))
    return blocks, observation.get("is_error") is True


def _tool_call(value: dict) -> ToolCall:
    call = value["tool_call"] if isinstance(value.get("tool_call"), dict) else {}
    call_id = call.get("id") if isinstance(call.get("id"), str) else value.get("tool_call_id")
    name = call.get("name") if isinstance(call.get("name"), str) else value.get("tool_name")
    return ToolCall(call_id if isinstance(call_id, str) else "", name if isinstance(name, str) else "",
                    decode_arguments(call.get("arguments", "{}")))


def _message(entries: list[Entry], positions: tuple[int, ...]) -> Message:
    first = entries[0].value
    kind = first["kind"]
    if kind == ACTION:
        blocks = _content_blocks(first.get("thought")) + tuple(_tool_call(e.value) for e in entries)
        role = ASSISTANT
    elif kind in OBSERVATIONS:
        content, is_error = _observation_content(first)
        text = content[0].text if len(content) == 1 and type(content[0]) is Text else None
        blocks = (ToolResult(_call_id(entries[0]) or "", content if text is None else text, True if is_error else None),)
        role = TOOL
    elif kind == SUMMARY:
        blocks, role = (Text(SUMMARY_PREFIX + first["summary"]),), USER
    else:
        message = first["llm_message"] if isinstance(first.get("llm_message"), dict) else {}
        blocks = _content_blocks(message.get("content")) + _content_blocks(first.get("extended_content"))
        role = message["role"] if isinstance(message.get("role"), str) else USER
    return Message(role, blocks, raw=first, line=entries[0].record + 1, origin=_Origin(positions, blocks))


def messages_of(view: tuple[Entry, ...]) -> list[Message]:
    """`events_to_messages`: the actions of one LLM response are one message; each other event one."""
    messages = []
    k = 0
    while k < len(view):
        entry = view[k]
        end = k + 1
        if entry.kind == ACTION:
            while (end < len(view) and view[end].kind == ACTION
                   and view[end].value.get("llm_response_id") == entry.value.get("llm_response_id")):
                end += 1
        if entry.kind != SYSTEM_PROMPT:
            messages.append(_message(list(view[k:end]), tuple(range(k, end))))
        k = end
    return messages


def _system(view: tuple[Entry, ...]) -> tuple[tuple[Block, ...], tuple[Any, ...]]:
    blocks: list[Block] = []
    tools: list[Any] = []
    for entry in view:
        if entry.kind == SYSTEM_PROMPT:
            for key in ("system_prompt", "dynamic_context"):
                part = entry.value.get(key)
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    blocks.append(Text(part["text"]))
            if isinstance(entry.value.get("tools"), list):
                tools += entry.value["tools"]
    return tuple(blocks), tuple(tools)


def _check_ids(records: list[Record], branch: tuple[int, ...], name: str) -> None:
    for index in branch:
        value = records[index][1]
        for key in IDENTIFYING_KEYS.get(value["kind"], ()):
            if not isinstance(value.get(key), str):
                raise ShapeError(f"the `{key}` of a {value['kind']} must be a string, not {kind_of(value.get(key))}",
                                 location=Location(name, index + 1))
        message = value.get("llm_message")
        if value["kind"] == "MessageEvent" and isinstance(message, dict) and message.get("role") == TOOL:
            # The agent would send a tool message that answers no call: only an observation is one.
            raise ShapeError("a MessageEvent's `llm_message.role` is `tool`, which only an observation's message has",
                             location=Location(name, index + 1))


def read(parsed: Parsed, messages_path: str | None = None) -> Transcript:
    records = parsed.records or []
    state = state_record(records)
    branch = active_branch(records, state)
    _check_ids(records, branch, parsed.name)
    view, _ = enforced(condensed(records, branch), [records[i][1] for i in branch])
    source = StoreSource(records, state, branch, tuple(view), parsed.bom)
    system, tools = _system(source.view)
    return Transcript(format=NAME, dialect="openai", messages=tuple(messages_of(source.view)), system=system,
                      tools=tools, name=parsed.name, source=source)


# --- writing ---------------------------------------------------------------------------------
