"""The one in-memory model of a transcript, shared by every format and every operation.

These are plain frozen values: two blocks with the same content are equal, and operations
return new values instead of changing old ones. Each value keeps the JSON it was read from
(`raw`, left out of equality) so that an adapter can write back exactly what it read for
everything an operation did not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Roles as they appear on the wire; OpenAI adds system, developer, tool and function.
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"  # OpenAI's message of a tool's result


@dataclass(frozen=True, slots=True)
class Block:
    """Base of every content block.

    `raw` is the JSON value the block was read from (None for a block an operation made);
    `line` is the record (0-based line) it came from, for formats that split a message over
    several lines. Neither takes part in equality.
    """

    raw: Any = field(default=None, compare=False, repr=False, kw_only=True)
    line: int | None = field(default=None, compare=False, repr=False, kw_only=True)


@dataclass(frozen=True, slots=True)
class Text(Block):
    text: str


@dataclass(frozen=True, slots=True)
class Thinking(Block):
    thinking: str
    signature: str | None = None


@dataclass(frozen=True, slots=True)
class RedactedThinking(Block):
    data: str


@dataclass(frozen=True, slots=True)
class ToolCall(Block):
    """A client tool call: Anthropic `tool_use`, an OpenAI `tool_calls` entry or legacy `function_call`."""

    id: str
    name: str
    input: Any  # the decoded arguments (OpenAI's JSON string is decoded when it parses)


@dataclass(frozen=True, slots=True)
class ToolResult(Block):
    """The answer to a ToolCall: Anthropic `tool_result`, an OpenAI `tool` (or `function`) message."""

    tool_call_id: str
    content: str | tuple[Block, ...]
    is_error: bool | None = None


@dataclass(frozen=True, slots=True)
class Image(Block):
    media_type: str | None = None
    data: str | None = None  # base64, never counted as text
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Document(Block):
    media_type: str | None = None
    data: str | None = None  # base64 (PDF) or plain text, per media_type
    url: str | None = None


@dataclass(frozen=True, slots=True)
class ServerToolCall(Block):
    """A call the provider runs itself (`server_tool_use`, `mcp_tool_use`); its result sits in the same message."""

    type: str
    id: str
    name: str
    input: Any


@dataclass(frozen=True, slots=True)
class ServerToolResult(Block):
    """`web_search_tool_result`, `mcp_tool_result`, `advisor_tool_result` … answering a ServerToolCall."""

    type: str
    tool_call_id: str


@dataclass(frozen=True, slots=True)
class Opaque(Block):
    """Any block this model does not name; written back exactly as read."""

    type: str | None


@dataclass(frozen=True, slots=True)
class Message:
    """One message as the provider's API sees it.

    `raw` is the JSON record the message was read from (the message object; for a Claude Code
    log, its first line), read-only, for fields the model does not name. `line` is the 1-based
    line of that record in a JSON Lines file. `origin` is private to the adapter that read it.
    """

    role: str
    blocks: tuple[Block, ...]
    raw: Any = field(default=None, compare=False, repr=False)
    line: int | None = field(default=None, compare=False, repr=False)
    origin: Any = field(default=None, compare=False, repr=False)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolResult))

    @property
    def is_tool_result_message(self) -> bool:
        """A message that carries tool results (an Anthropic user turn, an OpenAI `tool` message)."""
        return any(isinstance(b, ToolResult) for b in self.blocks)

    def with_blocks(self, blocks: tuple[Block, ...]) -> Message:
        # Spelled out: dataclasses.replace inspects the fields on every call, and a rewrite calls this per message.
        return Message(self.role, tuple(blocks), self.raw, self.line, self.origin)


@dataclass(frozen=True, slots=True)
class Transcript:
    """A conversation: what the format keeps first (system, tools, request fields), then messages.

    `dialect` is the wire shape of the messages (`anthropic` or `openai`); `format` the file
    format it was read from. `request` holds the top-level fields of a request body that the
    model does not name (model, thinking, max_tokens, …), read-only. `source` is private to the
    adapter (the envelope, the lines of a log) so that a write gives back what was read.
    """

    format: str
    dialect: str
    messages: tuple[Message, ...]
    system: tuple[Block, ...] = ()
    tools: tuple[Any, ...] = ()
    request: Mapping[str, Any] = field(default_factory=dict, compare=False)
    name: str = field(default="<stdin>", compare=False)
    source: Any = field(default=None, compare=False, repr=False)

    def with_messages(self, messages) -> Transcript:
        return Transcript(self.format, self.dialect, tuple(messages), self.system, self.tools, self.request, self.name,
                          self.source)


def tool_names(messages) -> dict[str, str]:
    """The name of the tool each call id calls (client and server tool calls), for naming results."""
    return {b.id: b.name for m in messages for b in m.blocks if isinstance(b, (ToolCall, ServerToolCall))}


def tool_inputs(messages) -> dict[str, Any]:
    """The input each client call id was given, for telling a tool's results apart (a file view)."""
    return {b.id: b.input for m in messages for b in m.blocks if isinstance(b, ToolCall)}


PATH_KEYS = ("path", "file_path", "filename", "file", "notebook_path", "target_file", "absolute_path")


def named_paths(arguments: Any) -> list[str]:
    """The file paths a tool call's input names, under the keys the agents' tools use."""
    if not isinstance(arguments, dict):
        return []
    return [arguments[k].strip() for k in PATH_KEYS if isinstance(arguments.get(k), str) and arguments[k].strip()]


def result_text(result: ToolResult) -> str:
    """The text of a tool result: its string content, or its text blocks joined."""
    if isinstance(result.content, str):
        return result.content
    return "\n".join(b.text for b in result.content if isinstance(b, Text))
