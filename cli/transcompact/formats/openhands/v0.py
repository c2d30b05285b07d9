"""Legacy OpenHands (V0) event lists, read only: a best-effort view of what the old agent sent.

Before the V1 SDK, OpenHands kept a conversation as a stream of events serialised by
`openhands/events/serialization/event.py` (`event_to_dict`): `{id, timestamp, source, message,
cause?, action | observation, args | content + extras, tool_call_metadata?, llm_metrics?}`. They
are found as a JSON array of such events (`tests/runtime/trajs/*.json`) or under `history` in an
evaluation output (`evaluation/.../output.jsonl`: JSON Lines, one run a line, each
`{instance_id, instruction, metadata, history, metrics, error, …}`; a resolver's is one issue a
line, its history holding entries besides events, which are left out). A file of one run is read
as it is; one of several is read one run at a time: `--messages-path N.history` picks the run on
line N + 1.

The messages are rebuilt the way the V0 `CodeActAgent` built them (`StateTracker`'s history
filter, `View.from_events`, then `ConversationMemory.process_events`), as far as the stream
records what it used:

- state changes and null events, and events marked `hidden`, are not the agent's history;
  a `condensation` action forgets its events (by id or id range) and itself, and the newest
  one with a `summary` puts it back as a user message at its `summary_offset`;
- the `system` action is the system message (its `tools`: the tool schemas); a `message`
  action is a user or assistant message by `source`, with its `image_urls`;
- an action that carries `tool_call_metadata` (the function-calling agent's) stands for the
  model response it came from: one assistant message, the response's text and every call in
  it, sent when every call has its observation, each then a `tool` message (paired by
  `tool_call_id`); a `finish` action is assistant text (its thought and the response's text);
- an observation reads as the agent worded it: a command's output with the prefix, suffix,
  working directory, interpreter and exit code of its `metadata` (one of a command the user ran
  under `Observed result of command executed by user:`); an error with
  `[Error occurred in processing last action]`; a rejection with `OBSERVATION:` and
  `[Last action has been rejected by the user]`; the others as their `content`. One with no
  `tool_call_metadata` is a user message; a user message after a user message starts with
  the blank line the agent puts there.

Approximated, because the stream does not record it: actions with no `tool_call_metadata`
(the older CodeAct, which wrote its calls as text) are assistant text of their thought and
`message`, their observations user text; the system prompt the agent added when the stream has
no `system` action, and the initial user message it put second when the stream's was not
there, are not read; `recall` observations (workspace context, microagent knowledge), which
the agent renders with its prompt templates, are not read; an LLM-based file edit reads as its
`content`, not as the diff the agent rendered from the old and new file; `max_message_chars`
truncation (a setting of the agent's) is not applied; a delegate's own events are read as the
parent's. Dialect: openai.

Read only (its registration's `writes`, as for Copilot CLI sessions): these are records of finished runs, which no
agent resumes, and a rewritten message has no field to go back to (the stream holds an
observation's `content`, not the agent's wording of it, nor what it approximates). transcompact
reads them (estimate, check, cut-point, summarize) and converts them (`--to`); a command that
would write one is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.errors import Location, ShapeError, UsageError, option
from ...core.jsondata import Parsed
from ...core.model import ASSISTANT, TOOL, USER, Block, Image, Message, Text, ToolCall, ToolResult, Transcript
from ...dialects.openai import decode_arguments
from .._document import split_path
from .._log import string_or_empty
from ..adapter import ReadOnlyFormat

NAME = "openhands-v0"
DESCRIPTION = ("legacy OpenHands (V0) events: a JSON array of action / observation events, "
               "or an evaluation output holding one under `history`")
LINES = False  # what a rewrite would change is a run's `history` (none does: see `writes`)

SYSTEM = "system"
HISTORY = "history"
# StateTracker.agent_history_filter: events that are the controller's, never the agent's history.
NOT_HISTORY_ACTIONS = frozenset({"null", "change_agent_state"})
NOT_HISTORY_OBSERVATIONS = frozenset({"null", "agent_state_changed"})
# ConversationMemory._process_action: the actions the function-calling agent made from tool calls
# (a `run` only when the agent ran it: a command the user ran is their message).
TOOL_ACTIONS = frozenset({"delegate", "think", "run_ipython", "edit", "read", "browse_interactive", "browse",
                          "call_tool_mcp", "task_tracking"})
# Observations the agent does not send: `recall`'s text comes from prompt templates the stream lacks.
UNSENT_OBSERVATIONS = frozenset({"recall", "loop_detection"})
ERROR_TRAILER = "\n[Error occurred in processing last action]"
REJECTED_TRAILER = "\n[Last action has been rejected by the user]"
USER_COMMAND = "\nObserved result of command executed by user:\n"
IPYTHON_IMAGE = "![image](data:image/png;base64,"
IPYTHON_IMAGE_SHOWN = "![image](data:image/png;base64, ...) already displayed to user"


@dataclass(frozen=True)
class HistorySource:
    data: bytes
    messages: tuple[Message, ...]  # as read: a transcript that still holds them is written back as it was


def is_event(value: Any) -> bool:
    """A V0 event: a `source`, and an `action` or an `observation` type (V1 events have a `kind`)."""
    return (isinstance(value, dict) and isinstance(value.get("source"), str) and "kind" not in value
            and (isinstance(value.get("action"), str) or isinstance(value.get("observation"), str)))


def _is_event_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(is_event(v) for v in value)


def _runs(parsed: Parsed) -> Any:
    """What `--messages-path` starts from: the document, or the list of a JSON Lines file's values
    (so that `2.history` is the history of the third run)."""
    return parsed.document if parsed.is_document else parsed.values()


def find_events(parsed: Parsed, messages_path: str | None) -> list[dict] | None:
    """The event list the input holds (at `messages_path` when given), else None."""
    path = split_path(messages_path)
    node = _runs(parsed)
    if path is None:
        if isinstance(node, dict):  # one run: an evaluation's, or a resolver's issue
            return _history_events(node.get(HISTORY))
        return node if _is_event_list(node) else None
    if path[:1] == (0,) and isinstance(node, dict):
        node = [node]  # a file of one run (one line, read as a document) holds run 0 as well
    runs = node
    for depth, key in enumerate(path):
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            if depth < 2 and _are_runs(runs):  # a run, or a run's field, it does not hold: as a document's missing key
                raise UsageError(f"{option('messages_path', messages_path)}: the input has nothing at {key!r} "
                                 f"(it holds OpenHands runs 0 to {len(runs) - 1:,}, each with its {HISTORY!r})") from None
            return None  # not this format: the formats after it say what is missing
    return _history_events(node)


def _are_runs(runs: Any) -> bool:
    """A list of OpenHands outputs (an evaluation's runs, a resolver's issues): one of its first
    50 holds a `history` of events."""
    return isinstance(runs, list) and any(
        isinstance(run, dict) and isinstance(run.get(HISTORY), list) and any(is_event(v) for v in run[HISTORY])
        for run in runs[:50])


def _history_events(history: Any) -> list[dict] | None:
    """The events of a run's history, which may hold entries besides them (a resolver's notes)."""
    if isinstance(history, list) and all(isinstance(v, dict) for v in history) and any(is_event(v) for v in history):
        return [v for v in history if is_event(v)]
    return None


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    return find_events(parsed, messages_path) is not None


def runs_hint(parsed: Parsed) -> str | None:
    """For a list of OpenHands outputs (an evaluation's runs, a resolver's issues; none chosen, or
    one whose history holds more than events): how many, and how to pick one."""
    runs = _runs(parsed)
    if not _are_runs(runs):
        return None
    if len(runs) == 1:
        return (f"this holds an OpenHands run, a legacy (V0) event stream under 'history': "
                f"read it with {option('messages_path', '0.history')}")
    return (f"this holds {len(runs):,} OpenHands runs, each a legacy (V0) event stream under 'history': "
            f"read one with {option('messages_path', '0.history')} (runs 0 to {len(runs) - 1:,})")


# --- the agent's history (StateTracker, View.from_events) ----------------------------------------


def _fields(event: dict, key: str) -> dict:
    value = event.get(key)
    return value if isinstance(value, dict) else {}


def _is_history(event: dict) -> bool:
    hidden = _fields(event, "args").get("hidden") is True or _fields(event, "extras").get("hidden") is True
    return not hidden and event.get("action") not in NOT_HISTORY_ACTIONS \
        and event.get("observation") not in NOT_HISTORY_OBSERVATIONS


def _event_id(event: dict) -> int | str | None:
    at = event.get("id")
    return at if isinstance(at, (int, str)) else None


def _forgotten(args: dict) -> tuple[set[int], tuple[int, int] | None]:
    """CondensationAction.forgotten: the ids it lists, or the first and last of a range (ids only
    increase, so every id between them)."""
    listed = args.get("forgotten_event_ids")
    if isinstance(listed, list):
        return {i for i in listed if type(i) is int}, None
    start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
    return set(), (start, end) if type(start) is int and type(end) is int else None


def agent_view(events: list[dict]) -> list[dict]:
    """The events the agent turned into messages: its history, condensed."""
    history = [e for e in events if _is_history(e)]
    gone: set[Any] = set()
    ranges: list[tuple[int, int]] = []
    for event in history:
        if event.get("action") == "condensation":
            listed, span = _forgotten(_fields(event, "args"))
            gone |= listed
            ranges += [span] if span else []
            gone.add(_event_id(event))
        elif event.get("action") == "condensation_request":
            gone.add(_event_id(event))

    def kept(event: dict) -> bool:
        at = _event_id(event)
        return at is None or at not in gone and not (type(at) is int and any(start <= at <= end for start, end in ranges))

    view = [e for e in history if kept(e)]
    for event in reversed(history):  # only the newest condensation's summary is sent
        args = _fields(event, "args")
        if event.get("action") == "condensation" and isinstance(args.get("summary"), str) \
                and type(args.get("summary_offset")) is int:
            view.insert(args["summary_offset"], {"observation": "condense", "source": "agent", "content": args["summary"]})
            break
    return view


# --- messages (ConversationMemory.process_events) ------------------------------------------------


def _image(url: str) -> Image:
    if url.startswith("data:") and ";base64," in url[:200]:
        head, _, data = url.partition(";base64,")
        return Image(head[5:] or None, data)
    return Image(url=url)


def _images(urls: Any) -> tuple[Block, ...]:
    return tuple(_image(u) for u in urls if isinstance(u, str) and u.strip()) if isinstance(urls, list) else ()


def _response_message(metadata: dict) -> dict:
    """The assistant message of the model response an action came from (`choices[0].message`)."""
    choices = _fields(metadata, "model_response").get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    return _fields(first, "message")


def _tool_calls(response: dict) -> tuple[ToolCall, ...]:
    calls = []
    listed = response.get("tool_calls")
    for call in listed if isinstance(listed, list) else ():
        if isinstance(call, dict):
            function = _fields(call, "function")
            calls.append(ToolCall(string_or_empty(call.get("id")), string_or_empty(function.get("name")),
                                  decode_arguments(function.get("arguments", "{}")), raw=call))
    return tuple(calls)


def _role(event: dict) -> str:
    return USER if event.get("source") == "user" else ASSISTANT


def _action(event: dict, pending: dict[Any, Message]) -> list[Message]:
    kind, args = event["action"], _fields(event, "args")
    metadata = event.get("tool_call_metadata")
    if kind in TOOL_ACTIONS or kind == "run" and event.get("source") == "agent":
        if not isinstance(metadata, dict):
            text = "\n".join(part for part in (string_or_empty(args.get("thought")), string_or_empty(event.get("message"))) if part)
            return [Message(_role(event), (Text(text),), raw=event)]
        response = _response_message(metadata)
        content = string_or_empty(response.get("content"))
        # A later action of the same response stands for the same message: it replaces it, in its place.
        response_id = _fields(metadata, "model_response").get("id")
        pending[response_id if isinstance(response_id, (str, int)) else None] = Message(
            ASSISTANT, ((Text(content),) if content.strip() else ()) + _tool_calls(response), raw=event)
        return []
    if kind == "finish":
        thought = string_or_empty(args.get("thought"))
        if isinstance(metadata, dict):
            content = string_or_empty(_response_message(metadata).get("content"))
            thought = (thought + "\n" + content if thought != content else thought) if thought else content
        return [Message(_role(event), (Text(thought),), raw=event)]
    if kind == "message":
        return [Message(_role(event), (Text(string_or_empty(args.get("content"))), *_images(args.get("image_urls"))), raw=event)]
    if kind == "run":  # the user's own command
        return [Message(USER, (Text("User executed the command:\n" + string_or_empty(args.get("command"))),), raw=event)]
    if kind == SYSTEM:
        return [Message(SYSTEM, (Text(string_or_empty(args.get("content"))),), raw=event)]
    return []


def _command_output(event: dict) -> str:
    """CmdOutputObservation.to_agent_observation, from the `metadata` it was serialised with."""
    extras = _fields(event, "extras")
    metadata = _fields(extras, "metadata")
    exit_code = metadata.get("exit_code", extras.get("exit_code", -1))  # `exit_code` in extras: before metadata
    text = string_or_empty(metadata.get("prefix")) + string_or_empty(event.get("content")) + string_or_empty(metadata.get("suffix"))
    if metadata.get("working_dir"):
        text += f"\n[Current working directory: {metadata['working_dir']}]"
    if metadata.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {metadata['py_interpreter_path']}]"
    if exit_code != -1:
        text += f"\n[Command finished with exit code {exit_code}]"
    return text


def _observation_blocks(event: dict) -> tuple[Block, ...]:
    """What the agent sent of an observation (`_process_observation`), before it is a tool result."""
    kind, content, extras = event["observation"], string_or_empty(event.get("content")), _fields(event, "extras")
    if kind == "run":
        text = _command_output(event)
        # Without a tool call, the agent took it for the output of a command the user ran; the older
        # CodeAct's own commands (no metadata either, but the agent's) did not get that heading.
        by_user = not isinstance(event.get("tool_call_metadata"), dict) and event.get("source") != "agent"
        return (Text(USER_COMMAND + text if by_user else text),)
    if kind == "run_ipython":
        lines = [IPYTHON_IMAGE_SHOWN if IPYTHON_IMAGE in line else line for line in content.split("\n")]
        return (Text("\n".join(lines)), *_images(extras.get("image_urls")))
    if kind == "edit" and extras.get("impl_source") != "oh_aci" and extras.get("prev_exist") is False:
        return (Text(f"[New file {string_or_empty(extras.get('path'))} is created with the provided content.]\n"),)
    if kind == "delegate":
        outputs = _fields(extras, "outputs")
        return (Text(outputs["content"] if isinstance(outputs.get("content"), str) else content),)
    if kind == "error":
        return (Text(content + ERROR_TRAILER),)
    if kind == "user_rejected":
        return (Text("OBSERVATION:\n" + content + REJECTED_TRAILER),)
    return (Text(content),)


def _observation(event: dict, results: dict[str, Message]) -> list[Message]:
    if event["observation"] in UNSENT_OBSERVATIONS:
        return []
    blocks = _observation_blocks(event)
    metadata = event.get("tool_call_metadata")
    if not isinstance(metadata, dict):
        return [Message(USER, blocks, raw=event)]
    call_id = string_or_empty(metadata.get("tool_call_id"))
    content = blocks[0].text if len(blocks) == 1 and isinstance(blocks[0], Text) else blocks  # one block: a Text
    is_error = True if event["observation"] == "error" else None
    # Sent after the assistant message that made the call, once all of that message's calls are answered.
    results[call_id] = Message(TOOL, (ToolResult(call_id, content, is_error),), raw=event)
    return []


def messages_of(view: list[dict]) -> list[Message]:
    messages: list[Message] = []
    pending: dict[Any, Message] = {}  # by model response id
    results: dict[str, Message] = {}  # by tool call id
    for event in view:
        added = _action(event, pending) if "action" in event else _observation(event, results)
        for response_id, message in list(pending.items()):
            if all(call.id in results for call in message.tool_calls):
                # A response that names a call id twice has its one result once (the agent's own pop would fail).
                added += [message, *(results.pop(call_id) for call_id in dict.fromkeys(c.id for c in message.tool_calls))]
                del pending[response_id]
        messages += added
    return _separated(messages)


def _separated(messages: list[Message]) -> list[Message]:
    """`_apply_user_message_formatting`: a user message after a user message starts with a blank line."""
    out: list[Message] = []
    for message in messages:
        if message.role == USER and out and out[-1].role == USER and message.blocks:
            first = next(((k, b) for k, b in enumerate(message.blocks) if isinstance(b, Text)), None)
            if first is not None:
                at, text = first
                blocks = list(message.blocks)
                blocks[at] = Text("\n\n" + text.text)
                message = message.with_blocks(tuple(blocks))
        out.append(message)
    return out


def read(parsed: Parsed, messages_path: str | None = None) -> Transcript:
    events = find_events(parsed, messages_path)
    if events is None:
        raise ShapeError("no legacy OpenHands (V0) event list found", location=Location(parsed.name),
                         hint=runs_hint(parsed))
    view = agent_view(events)
    tools = next((tuple(_fields(e, "args")["tools"]) for e in view
                  if e.get("action") == SYSTEM and isinstance(_fields(e, "args").get("tools"), list)), ())
    messages = tuple(messages_of(view))
    return Transcript(format=NAME, dialect="openai", messages=messages, tools=tools, name=parsed.name,
                      source=HistorySource(parsed.data, messages))



class OpenHandsV0Format(ReadOnlyFormat):
    name, description, lines = NAME, DESCRIPTION, LINES
    detect, read, hint = staticmethod(detect), staticmethod(read), staticmethod(runs_hint)


FORMAT = OpenHandsV0Format()
