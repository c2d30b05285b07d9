"""Anthropic Messages: one message object ↔ one Message, content blocks ↔ typed blocks.

Every block keeps the dict it was read from; writing a block that an operation did not change
gives back that same dict, and a changed one is laid over it so unknown keys keep their place.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ShapeError
from ..core.jsondata import kind_of
from ..core.model import (
    Block,
    Document,
    Image,
    Message,
    Opaque,
    RedactedThinking,
    ServerToolCall,
    ServerToolResult,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
)
from ._shape import message_role

NAME = "anthropic"

SERVER_TOOL_CALL_TYPES = frozenset({"server_tool_use", "mcp_tool_use"})
# Block types that only Anthropic messages carry: they decide the dialect of a plain message list.
SIGNATURE_TYPES = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use", "mcp_tool_use"}
)

# Request parameters only the Messages API has (not `top_k`, which OpenAI-compatible servers take too).
REQUEST_KEYS = frozenset({"system", "thinking", "mcp_servers", "stop_sequences", "context_management"})


def is_server_tool_result_type(block_type: Any) -> bool:
    return isinstance(block_type, str) and block_type.endswith("_tool_result") and block_type != "tool_result"


class _Origin:
    """What a message looked like when read, so an unchanged message is written back as is."""

    __slots__ = ("role", "blocks", "string_content")

    def __init__(self, role: str, blocks: tuple[Block, ...] | None, string_content: bool):
        self.role = role
        self.blocks = blocks  # None: rewritten
        self.string_content = string_content

    def rewritten(self, raw: Any) -> tuple[Any, _Origin]:
        """What a message keeps of its reading once an operation gave it other blocks
        (`Message.with_blocks`): its other fields in their order, and its content's shape; not the
        content it was read with, which `write_message` writes from the blocks."""
        if isinstance(raw, dict) and "content" in raw:
            raw = {**raw, "content": None}
        return raw, _Origin(self.role, None, self.string_content)


def read_block(obj: Any, line: int | None = None, where: str = "content") -> Block:
    if not isinstance(obj, dict):
        raise ShapeError(f"{where}: a content block must be an object, not {kind_of(obj)}")
    kind = obj.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ShapeError(f"{where}: a block's `type` must be a string, not {kind_of(kind)}")
    get = obj.get
    if kind == "text" and isinstance(get("text"), str):
        return Text(obj["text"], raw=obj, line=line)
    if kind == "tool_use" and isinstance(get("id"), str) and isinstance(get("name"), str):
        return ToolCall(obj["id"], obj["name"], get("input"), raw=obj, line=line)
    if kind == "tool_result" and isinstance(get("tool_use_id"), str):
        content = get("content", "")
        if isinstance(content, list):
            content = tuple(read_block(b, line, f"{where}/content/{i}") for i, b in enumerate(content))
        elif not isinstance(content, str):
            return Opaque(kind, raw=obj, line=line)
        return ToolResult(obj["tool_use_id"], content, get("is_error"), raw=obj, line=line)
    if kind == "thinking" and isinstance(get("thinking"), str):
        return Thinking(obj["thinking"], get("signature"), raw=obj, line=line)
    if kind == "redacted_thinking" and isinstance(get("data"), str):
        return RedactedThinking(obj["data"], raw=obj, line=line)
    if kind in ("image", "document"):
        source = get("source")
        source = source if isinstance(source, dict) else {}
        for key in ("media_type", "url"):  # operations read them as text
            if source.get(key) is not None and not isinstance(source[key], str):
                raise ShapeError(f"{where}: `source.{key}` must be a string, not {kind_of(source[key])}")
        cls = Image if kind == "image" else Document
        data = source.get("data")
        return cls(source.get("media_type"), data if isinstance(data, str) else None, source.get("url"), raw=obj, line=line)
    if kind in SERVER_TOOL_CALL_TYPES and isinstance(get("id"), str) and isinstance(get("name", ""), str):
        return ServerToolCall(kind, obj["id"], get("name", ""), get("input"), raw=obj, line=line)
    if isinstance(kind, str) and is_server_tool_result_type(kind) and isinstance(get("tool_use_id"), str):
        return ServerToolResult(kind, obj["tool_use_id"], raw=obj, line=line)
    return Opaque(kind if isinstance(kind, str) else None, raw=obj, line=line)


def write_block(block: Block) -> Any:
    raw = block.raw
    if raw is not None and isinstance(raw, dict) and _same(block, raw):
        return raw
    out: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
    if isinstance(block, Text):
        out.update(type="text", text=block.text)
    elif isinstance(block, ToolCall):
        out.update(type="tool_use", id=block.id, name=block.name, input=block.input)
    elif isinstance(block, ToolResult):
        out.update(type="tool_result", tool_use_id=block.tool_call_id)
        out["content"] = (
            block.content if isinstance(block.content, str) else [write_block(b) for b in block.content]
        )
        if block.is_error is None:
            out.pop("is_error", None)
        else:
            out["is_error"] = block.is_error
    elif isinstance(block, Thinking):
        out.update(type="thinking", thinking=block.thinking)
        if block.signature is not None:
            out["signature"] = block.signature
    elif isinstance(block, RedactedThinking):
        out.update(type="redacted_thinking", data=block.data)
    elif isinstance(block, (Image, Document)) and not out:
        kind = "image" if isinstance(block, Image) else "document"
        if block.url is not None:
            out = {"type": kind, "source": {"type": "url", "url": block.url}}
        else:
            out = {"type": kind, "source": {"type": "base64", "media_type": block.media_type, "data": block.data}}
    elif isinstance(block, ServerToolCall):
        out.update(type=block.type, id=block.id, name=block.name, input=block.input)
    return out


def _same(block: Block, raw: dict) -> bool:
    """Whether a block still says what its raw dict says (so the dict can be written as is)."""
    try:
        return read_block(raw, block.line) == block
    except ShapeError:
        return False


def read_message(obj: Any, *, index: int, line: int | None = None, line_of_blocks: int | None = None) -> Message:
    where = f"message {index}"
    role = message_role(obj, where)
    content = obj.get("content")
    if isinstance(content, str):
        blocks: tuple[Block, ...] = (Text(content, raw=content, line=line_of_blocks),)
        string_content = True
    elif isinstance(content, list):
        try:
            blocks = tuple([read_block(b, line_of_blocks) for b in content])
        except ShapeError:  # read again, naming where the bad block sits (kept off the common path)
            blocks = tuple(read_block(b, line_of_blocks, f"{where}: content/{i}") for i, b in enumerate(content))
        string_content = False
    elif content is None:
        blocks = ()
        string_content = False
    else:
        raise ShapeError(f"{where}: `content` must be a string or a list of blocks, not {kind_of(content)}")
    return Message(role, blocks, raw=obj, line=line, origin=_Origin(role, blocks, string_content))


def is_unchanged(message: Message) -> bool:
    origin = message.origin
    return isinstance(origin, _Origin) and message.role == origin.role and message.blocks == origin.blocks


def write_content(blocks: tuple[Block, ...], string_content: bool) -> Any:
    if string_content and len(blocks) == 1 and isinstance(blocks[0], Text):
        return blocks[0].text
    return [write_block(b) for b in blocks]


def write_message(message: Message) -> Any:
    if is_unchanged(message):
        return message.raw
    origin = message.origin
    string_content = origin.string_content if isinstance(origin, _Origin) else False
    out = dict(message.raw) if isinstance(message.raw, dict) else {}
    out["role"] = message.role
    out["content"] = write_content(message.blocks, string_content)
    return out


def read_system(value: Any) -> tuple[Block, ...]:
    """The top-level `system`: a string or a list of text blocks."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (Text(value, raw=value),)
    if isinstance(value, list):
        return tuple(read_block(b, None, f"system/{i}") for i, b in enumerate(value))
    raise ShapeError(f"`system` must be a string or a list of text blocks, not {kind_of(value)}")


def write_system(blocks: tuple[Block, ...], original: Any) -> Any:
    if blocks == read_system(original):
        return original
    return write_content(blocks, isinstance(original, str))


def signals(messages: list) -> int:
    """How many messages show an Anthropic-only shape."""
    count = 0
    for m in messages:
        content = m.get("content") if type(m) is dict else None
        if type(content) is not list:
            continue
        for b in content:
            kind = b.get("type") if type(b) is dict else None
            if type(kind) is not str:  # not a block this dialect knows (an object as `type` cannot be looked up)
                continue
            if kind in SIGNATURE_TYPES or is_server_tool_result_type(kind) or (kind == "image" and "source" in b):
                count += 1
                break
    return count


def names_request(request: dict) -> bool:
    """Whether a request body has a parameter or a tool definition (`input_schema`) only this API has."""
    tools = request.get("tools")
    return any(key in request for key in REQUEST_KEYS) or (
        type(tools) is list and any(type(t) is dict and "input_schema" in t for t in tools))


def only_it_accepts(messages: list) -> bool:
    """Whether a plain conversation (no `signals` of either dialect) holds what Anthropic's rules
    accept and OpenAI's do not: a block that is not text (the other types OpenAI takes are its
    signals), a `tool_call_id` that is not a string (which the OpenAI reader refuses), or a last
    assistant message with no content."""
    for m in messages:
        if type(m) is not dict:
            continue
        content = m.get("content")
        if type(content) is list and any(type(b) is dict and b.get("type") != "text" for b in content):
            return True
        if m.get("tool_call_id") is not None and type(m["tool_call_id"]) is not str:
            return True
    last = messages[-1] if messages else None
    return type(last) is dict and last.get("role") == "assistant" and last.get("content") in (None, [])
