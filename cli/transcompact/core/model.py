"""The one in-memory model of a transcript, shared by every format and every operation.

These are plain frozen values: two blocks with the same content are equal, and operations
return new values instead of changing old ones. Each value keeps the JSON it was read from
(`raw`, left out of equality) so that an adapter can write back exactly what it read for
everything an operation did not change.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any, NamedTuple

from .jsondata import compact_json

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


class Message:
    """One message as the provider's API sees it.

    `raw` is the JSON record the message was read from (the message object; for a Claude Code
    log, its first line, and of a log read lazily the fields of it the lazy trim kept), read-only,
    for fields the model does not name. `line` is the 1-based
    line of that record in a JSON Lines file. `origin` is private to the adapter that read it.

    A reader may leave a message unread (`Message.unread`): its `view` holds what the reader
    saw of it on the way (what a count and `check` need; None once it is read, and for a message
    read at once), `data` a request body's message's JSON as it was in the input (None for a log's,
    read again from its lines), and its blocks, `raw` and `origin` are read when first asked for.
    It is the same value as the message read at once; a rewrite that keeps it writes it back as it
    was read.
    A frozen value like the blocks (equal by role and blocks), written out by hand for that.
    """

    __slots__ = ("role", "_blocks", "_raw", "line", "_origin", "view", "data", "_read")

    role: str
    line: int | None
    view: MessageView | None
    data: Any  # bytes-like: the message's JSON as it was in the input, or None
    _blocks: tuple[Block, ...] | None
    _raw: Any
    _origin: Any
    _read: Callable[[], Message] | None

    def __init__(self, role: str, blocks: tuple[Block, ...], raw: Any = None, line: int | None = None,
                 origin: Any = None) -> None:
        self._fill(role, blocks, raw, line, origin, None, None, None)

    @classmethod
    def unread(cls, role: str, view: MessageView | None, data: Any, read: Callable[[], Message],
               line: int | None = None) -> Message:
        """A message read from `data` by `read` (the adapter's reading of the same bytes) when its
        blocks, `raw` or `origin` are first asked for."""
        message = object.__new__(cls)
        message._fill(role, None, None, line, None, view, data, read)
        return message

    def _fill(self, role: str, blocks: tuple[Block, ...] | None, raw: Any, line: int | None, origin: Any,
              view: MessageView | None, data: Any, read: Callable[[], Message] | None) -> None:
        init = object.__setattr__
        init(self, "role", role)
        init(self, "_blocks", blocks)
        init(self, "_raw", raw)
        init(self, "line", line)
        init(self, "_origin", origin)
        init(self, "view", view)
        init(self, "data", data)
        init(self, "_read", read)

    @property
    def blocks(self) -> tuple[Block, ...]:
        if self._read is not None:
            self._read_now()
        assert self._blocks is not None  # set by _read_now
        return self._blocks

    @property
    def raw(self) -> Any:
        if self._read is not None:
            self._read_now()
        return self._raw

    @property
    def origin(self) -> Any:
        if self._read is not None:
            self._read_now()
        return self._origin

    @property
    def record(self) -> Any:
        """What a count looks at of the record it was read from: `raw`, or of an unread message
        what its view kept of it (None for a request body's: its role and content only)."""
        return self.view.record if self.view is not None else self.raw

    @property
    def is_read(self) -> bool:
        """Whether its blocks are in memory (an unread message's are still only its bytes)."""
        return self._read is None

    @property
    def reading(self) -> Callable[[], Message] | None:
        """What reads an unread message (the adapter's own, which may say where in its source the
        message sits: a writer keeps an unread message as it was without reading it); None once
        it is read."""
        return self._read

    def read_apart(self) -> Message:
        """The message read, without keeping the reading: an unread one stays unread (and small),
        for a rewrite that reads each message once to make another of it."""
        return self if self._read is None else self._read()

    def _read_now(self) -> None:
        read = self._read
        assert read is not None
        whole = read()
        init = object.__setattr__
        init(self, "_blocks", whole.blocks)
        init(self, "_raw", whole.raw)
        init(self, "_origin", whole.origin)
        init(self, "view", None)  # the blocks say more
        init(self, "_read", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Message:
            return NotImplemented
        assert isinstance(other, Message)
        return self.role == other.role and self.blocks == other.blocks

    def __hash__(self) -> int:
        return hash((self.role, self.blocks))

    def __repr__(self) -> str:
        return f"Message(role={self.role!r}, blocks={self.blocks!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Read before it travels: the reading is the adapter's, and stays in this process.
        return Message, (self.role, self.blocks, self.raw, self.line, self.origin)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolCall))

    @property
    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(b for b in self.blocks if isinstance(b, ToolResult))

    @property
    def is_tool_result_message(self) -> bool:
        """A message that carries tool results (an Anthropic user turn, an OpenAI `tool` message)."""
        if (view := self.view) is not None:
            return any(size.type is ToolResult for size in view.blocks)
        return any(isinstance(b, ToolResult) for b in self.blocks)

    @property
    def holds_text(self) -> bool:
        """A message with a text block (from its view, when it is unread)."""
        if (view := self.view) is not None:
            return any(size.type is Text for size in view.blocks)
        return any(isinstance(b, Text) for b in self.blocks)

    @property
    def result_count(self) -> int:
        """How many tool results it carries (from its view, when it is unread)."""
        return len(self.answered_ids)

    @property
    def call_ids(self) -> tuple[str, ...]:
        """The ids of the tool calls it makes (from its view, when it is unread)."""
        if (view := self.view) is not None:
            return tuple(size.call_id or "" for size in view.blocks if size.type is ToolCall)
        return tuple(b.id for b in self.blocks if isinstance(b, ToolCall))

    @property
    def answered_ids(self) -> tuple[str, ...]:
        """The call ids its tool results answer (from its view, when it is unread)."""
        if (view := self.view) is not None:
            return tuple(size.call_id or "" for size in view.blocks if size.type is ToolResult)
        return tuple(b.tool_call_id for b in self.blocks if isinstance(b, ToolResult))

    def with_blocks(self, blocks: tuple[Block, ...]) -> Message:
        """Other blocks; what it was read from stays, less what the adapter's origin lets go of
        once the blocks are others (`origin.rewritten(raw)`, where it has one: the content its
        writer writes from the blocks, not held for a pruned result of a large transcript)."""
        blocks, raw, origin = tuple(blocks), self.raw, self.origin
        if blocks != self.blocks and (rewritten := getattr(origin, "rewritten", None)) is not None:
            raw, origin = rewritten(raw)
        return Message(self.role, blocks, raw, self.line, origin)

    def replaced(self, role: str, blocks: tuple[Block, ...]) -> Message:
        """Another role and other blocks; what it was read from stays."""
        return Message(role, tuple(blocks), self.raw, self.line, self.origin)


@dataclass(frozen=True, slots=True)
class Transcript:
    """A conversation: what the format keeps first (system, tools, request fields), then messages.

    `dialect` is the wire shape of the messages (`anthropic` or `openai`); `format` the file
    format it was read from. `request` holds the top-level fields of a request body that the
    model does not name (model, thinking, max_tokens, …), read-only. `source` is private to the
    adapter (the envelope, the lines of a log) so that a write gives back what was read.
    `tokens_per_char`: what a character of its content costs by the model the operation that made
    it counted with (counting/counter.py): a log's writer restates the usage its responses
    recorded by it, per character a rewrite took out of their prompts (None: a quarter, the
    estimator's, and the agents' own estimate; 0: none restated, where the count rested on usage
    that counted less than the log held, `TokenCounter.restating_ratio`); `tokens_per_block`, what
    a block costs besides its characters by that model (a fit's frame: a rewrite that drops a block,
    a thinking cleared, takes that out too; 0: none).
    """

    format: str
    dialect: str
    messages: tuple[Message, ...]
    system: tuple[Block, ...] = ()
    tools: tuple[Any, ...] = ()
    request: Mapping[str, Any] = field(default_factory=dict, compare=False)
    name: str = field(default="<stdin>", compare=False)
    source: Any = field(default=None, compare=False, repr=False)
    tokens_per_char: float | None = field(default=None, compare=False, repr=False)
    tokens_per_block: float = field(default=0.0, compare=False, repr=False)

    def with_messages(self, messages) -> Transcript:
        return Transcript(self.format, self.dialect, tuple(messages), self.system, self.tools, self.request, self.name,
                          self.source, self.tokens_per_char, self.tokens_per_block)


# What `check` needs of a block besides its size (`BlockSize.flags`), one bit each.
BLANK = 1  # a text that is empty or white space only
ENDS_IN_SPACE = 2  # a text that ends in white space
NOT_AN_OBJECT = 4  # a call whose input is not a JSON object
UNSIGNED = 8  # a thinking block without a signature
LISTED = 16  # a tool result whose content is a list of text blocks (joined by newlines where it is read as text)


class BlockSize(NamedTuple):
    """What a count and `check` need of a block of an unread message: its type, its characters as
    the counter measures them (a call: its name and its input as compact JSON; a result: its
    text), the call it makes (`call_id`, `name`) or answers (`call_id`), what the rules look at
    (`flags`: BLANK, ENDS_IN_SPACE, NOT_AN_OBJECT, UNSIGNED, LISTED) and the cache_control breakpoints it
    holds (`marks`: itself, and a result's text blocks). A tuple: a reader makes one per block of
    a large log."""

    type: type[Block]  # Text, Thinking, RedactedThinking, ToolCall, ToolResult, or Opaque (one counted as nothing)
    chars: int
    call_id: str | None = None
    name: str | None = None  # a call's tool (interned: a log calls a few tools, each many times); an opaque block's type
    flags: int = 0
    marks: int = 0


# A message of one text shorter than this shares its view (`dialects.views`) and its count's
# tally (`counting.counter`) with every other of its size and flags: a view or a tally is some
# 200 bytes, where such a message is some 50 bytes of the file, and many of them hold few sizes.
SHARED_TEXT_CHARS = 4096


class MessageView(NamedTuple):
    """What a reader saw of a message it left unread (`Message.unread`): the sizes of its blocks,
    in order; its `record` as far as a count looks at it (the usage a response recorded), or
    None when it has nothing but its role and content; and for a message read from the lines of
    a log, the line of each block (`lines`, 0-based, one per block, each line holding one at
    least: a flat tuple, for a log's tens of thousands of messages), or
    None. A message with a view holds no block an operation or a count would look for (a
    compaction block, an image)."""

    blocks: tuple[BlockSize, ...]
    record: Any = None
    lines: tuple[int, ...] | None = None


def text_flags(text: str) -> int:
    """BLANK and ENDS_IN_SPACE of a text, as `check` tells them (`strip`), without a copy of it."""
    return (BLANK if not text or text.isspace() else 0) | (ENDS_IN_SPACE if text[-1:].isspace() else 0)


def _marked(raw: Any) -> int:
    return 1 if isinstance(raw, dict) and "cache_control" in raw else 0


def block_size(block: Block) -> BlockSize | None:
    """What a count and `check` need of a block, as a view holds it (`BlockSize`), or None for a
    block no view holds (one that is not text, thinking, a tool call, a result of text, or an
    opaque block with nothing in it to count: a Codex reasoning item)."""
    if isinstance(block, Text):
        return BlockSize(Text, len(block.text), flags=text_flags(block.text), marks=_marked(block.raw))
    if isinstance(block, ToolResult):
        content = block.content
        if isinstance(content, str):
            return BlockSize(ToolResult, len(content), block.tool_call_id, marks=_marked(block.raw))
        if any(type(b) is not Text for b in content):
            return None
        return BlockSize(ToolResult, sum(len(b.text) for b in content if isinstance(b, Text)), block.tool_call_id,
                         flags=LISTED, marks=_marked(block.raw) + sum(_marked(b.raw) for b in content))
    if isinstance(block, ToolCall):
        name = sys.intern(block.name) if type(block.name) is str else block.name
        return BlockSize(ToolCall, len(name) + len(compact_json(block.input)), block.id, name,
                         0 if isinstance(block.input, dict) else NOT_AN_OBJECT, _marked(block.raw))
    if isinstance(block, Thinking):
        return BlockSize(Thinking, len(block.thinking), flags=0 if block.signature else UNSIGNED, marks=_marked(block.raw))
    if isinstance(block, RedactedThinking):
        return BlockSize(RedactedThinking, len(block.data), marks=_marked(block.raw))
    if isinstance(block, Opaque) and block.raw is None and block.type != "compaction":
        return BlockSize(Opaque, 0, name=block.type)  # counted as nothing (`counter.pieces`; a compaction is read otherwise)
    return None


def tool_names(messages) -> dict[str, str]:
    """The name of the tool each call id calls (client and server tool calls), for naming results."""
    names: dict[str, str] = {}
    for m in messages:
        if (view := m.view) is not None:
            names.update((b.call_id, b.name) for b in view.blocks if b.call_id is not None and b.name is not None)
        else:
            names.update((b.id, b.name) for b in m.blocks if isinstance(b, (ToolCall, ServerToolCall)))
    return names


def tool_inputs(messages) -> dict[str, Any]:
    """The input each client call id was given, for telling a tool's results apart (a file view).
    An unread message is read (apart: not kept read) only when its view holds a call."""
    inputs: dict[str, Any] = {}
    for m in messages:
        if m.call_ids:
            inputs.update((b.id, b.input) for b in m.read_apart().blocks if isinstance(b, ToolCall))
    return inputs


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
