"""GitHub Copilot CLI sessions (`~/.copilot/session-state/<id>/events.jsonl`), read only.

Each line is a session event (`github/copilot-sdk` `nodejs/src/generated/session-events.ts`):
`{"type", "id", "timestamp", "parentId", "data"}`. Copilot rebuilds its history from these itself
and its code is closed, so transcompact does not write them: estimate, check, cut-point and
summarize read them; a command that would write one is refused (its registration's `writes`).

The messages are the conversation of the main agent (an event with an `agentId` is a sub-agent's):
`system.message` a system or developer message; `user.message` a user message, its
`transformedContent` (what the model is sent) or else its `content`; `assistant.message` an
assistant message, its `content` then one tool call per `toolRequests` entry (the chunks of one
response, same `apiCallId`, are one message; reasoning is for display, and its encrypted parts are
stripped on resume, so it is not read); `tool.execution_complete` a `tool` message answering its
call by `toolCallId` (`result.content`, what the model is sent, or the `error` message of a failed
call; a tool the user ran himself, `isUserRequested`, answers no call and is not read). That is the
Chat Completions pairing, so check applies the OpenAI rules.

A successful `session.compaction_complete` with a `summaryContent` replaces the history: the summary
as a user message, then the messages recorded since its `session.compaction_start` (a background
compaction runs while the session goes on). `session.context_cleared` empties the history.
There is no recorded usage: `assistant.usage` is an ephemeral event, never written to the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.jsondata import BLANK, Parsed
from ..core.model import ASSISTANT, TOOL, USER, Block, Message, Text, ToolCall, ToolResult, Transcript
from ._log import string_or_empty
from .adapter import ReadOnlyFormat

NAME = "copilot"
DESCRIPTION = "GitHub Copilot CLI session events (JSON Lines of type / id / parentId / data)"
LINES = True  # a line is the unit a rewrite would change (none does: see `writes`)

SYSTEM_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True)
class EventsSource:
    data: bytes
    messages: tuple[Message, ...]  # as read: a transcript that still holds them is written back as it was


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    """Every line an event: a string `type` and `id`, a `data` object, a `parentId`."""
    if parsed.records is None or messages_path is not None:
        return False
    values = parsed.values()
    return bool(values) and all(
        isinstance(v, dict) and isinstance(v.get("type"), str) and isinstance(v.get("id"), str)
        and isinstance(v.get("data"), dict) and "parentId" in v for v in values)


def read(parsed: Parsed, messages_path: str | None = None) -> Transcript:
    messages: list[Message] = []
    compaction_started = 0  # how many messages there were when the newest compaction started
    for index, (_, event) in enumerate(parsed.records or ()):
        if event is BLANK or "agentId" in event:
            continue
        kind, data, line = event["type"], event["data"], index + 1
        if kind == "system.message" and isinstance(data.get("role"), str) and data["role"] in SYSTEM_ROLES:
            messages.append(Message(data["role"], (Text(string_or_empty(data.get("content"))),), raw=event, line=line))
        elif kind == "user.message":
            text = data.get("transformedContent")
            messages.append(Message(USER, (Text(text if isinstance(text, str) else string_or_empty(data.get("content"))),),
                                    raw=event, line=line))
        elif kind == "assistant.message":
            blocks = _assistant_blocks(data)
            previous = messages[-1] if messages else None
            if previous is not None and previous.role == ASSISTANT and _same_response(previous.raw, event):
                messages[-1] = Message(ASSISTANT, previous.blocks + blocks, raw=previous.raw, line=previous.line)
            else:
                messages.append(Message(ASSISTANT, blocks, raw=event, line=line))
        elif kind == "tool.execution_complete" and not data.get("isUserRequested"):
            messages.append(Message(TOOL, (_result(data),), raw=event, line=line))
        elif kind == "session.compaction_start":
            compaction_started = len(messages)
        elif kind == "session.compaction_complete" and data.get("success") is True and isinstance(data.get("summaryContent"), str):
            summary = Message(USER, (Text(data["summaryContent"]),), raw=event, line=line)
            messages = [summary] + messages[compaction_started:]
            compaction_started = len(messages)  # a compaction whose start is not in the log keeps nothing before it
        elif kind == "session.context_cleared":
            messages, compaction_started = [], 0
    return Transcript(format=NAME, dialect="openai", messages=tuple(messages), name=parsed.name,
                      source=EventsSource(parsed.data, tuple(messages)))


def _assistant_blocks(data: dict) -> tuple[Block, ...]:
    blocks: list[Block] = [Text(data["content"])] if isinstance(data.get("content"), str) and data["content"] else []
    requests = data.get("toolRequests")
    for request in requests if isinstance(requests, list) else ():
        if isinstance(request, dict):
            blocks.append(ToolCall(string_or_empty(request.get("toolCallId")), string_or_empty(request.get("name")),
                                   request.get("arguments", {}), raw=request))
    return tuple(blocks)


def _same_response(first: Any, event: dict) -> bool:
    """Two chunks of one model response (`apiCallId`, split at a reasoning boundary)."""
    call = event["data"].get("apiCallId")
    return isinstance(call, str) and isinstance(first, dict) and first["data"].get("apiCallId") == call


def _result(data: dict) -> ToolResult:
    result, error = data.get("result"), data.get("error")
    if isinstance(result, dict) and isinstance(result.get("content"), str):
        content = result["content"]
    elif isinstance(error, dict):
        content = string_or_empty(error.get("message"))
    else:
        content = ""
    return ToolResult(string_or_empty(data.get("toolCallId")), content, is_error=True if data.get("success") is not True else None)



class CopilotFormat(ReadOnlyFormat):
    name, description, lines = NAME, DESCRIPTION, LINES
    detect, read = staticmethod(detect), staticmethod(read)


FORMAT = CopilotFormat()
