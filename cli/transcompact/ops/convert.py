"""Conversion (`--to`): the active view of a transcript as a plain request body of one API.

What the agent would send now (a log's active view; for an Anthropic `compaction` block, what
the API reads after it) becomes the `messages` of an Anthropic Messages or OpenAI Chat
Completions request, or OpenAI messages one per line (`jsonl`), whatever format it was read
from. What the target API cannot carry is dropped; roles, tool calls and their results, and
thinking are mapped as the dialects define them; then `repair` makes the pairing the target
asks for. The result is read back from the bytes written and passes `check` with no error, or
the conversion fails (`PostConditionError`): a request body the API refuses is no use.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .. import dialects
from ..core.errors import PostConditionError, ShapeError, UsageError, option
from ..core.jsondata import Layout, dumps
from ..core.model import (
    ASSISTANT,
    USER,
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
    Transcript,
    result_text,
)
from ..core.summary_text import compose, parse
from ..counting.counter import server_compaction
from ..dialects.openai import LEGACY_CALL_ID
from ..formats import reload
from .validity.check import (
    OPENAI_PART_TYPES,
    RESULT_CONTENT_OPAQUE,
    check,
    errors,
    misplaced_thinking,
)
from .validity.postcondition import verified
from .validity.repair import PLACEHOLDER, repair

ANTHROPIC, OPENAI, JSONL = "anthropic", "openai", "jsonl"
TARGETS = (ANTHROPIC, OPENAI, JSONL)
# JSON Lines carry no request fields: OpenAI's messages, whose system prompt is a message, lose nothing there.
DIALECT = {ANTHROPIC: ANTHROPIC, OPENAI: OPENAI, JSONL: OPENAI}
# The extension of a converted file under --output-dir.
SUFFIX = {ANTHROPIC: ".json", OPENAI: ".json", JSONL: ".jsonl"}

SYSTEM_ROLES = frozenset({"system", "developer"})
# Block types of the Messages API that the model does not name, so they read as Opaque.
ANTHROPIC_OPAQUE = frozenset({"search_result", "container_upload"})


def convert(transcript: Transcript, to: str) -> Transcript:
    """The active view of `transcript` as a plain `to` request body (anthropic, openai) or JSON
    Lines of OpenAI messages (jsonl), read back from its bytes: `dumps` of it writes them."""
    if to not in TARGETS:
        raise UsageError(f"{option('to', to)}: cannot convert to that (choose from {', '.join(TARGETS)})")
    view = _answered_once(_named_legacy_calls(_active_view(transcript.messages)))
    if DIALECT[to] == ANTHROPIC:
        built = _to_anthropic(transcript, view)
    else:
        built = _to_openai(transcript, view)
    built, _ = repair(replace(built, format=to, name=transcript.name))
    operation = f"the conversion to {to}"
    if to == JSONL and not built.messages:
        raise PostConditionError(f"{transcript.name}: {operation} has no message to write, and an empty file reads as no "
                                 "transcript; nothing written", hint=f"{option('to', ANTHROPIC)} or {OPENAI} writes an empty request")
    data = _serialized(built, to)
    # verified() reads the bytes back, unless there is no message to read; the output is read back either way.
    converted = verified(built, built, data, operation=operation, same_messages=False)
    if converted is built:
        converted = reload(data, built)
    left = errors(check(converted))
    if left:
        v = left[0]
        raise PostConditionError(f"{transcript.name}: {operation} would leave {v.rule} at message {v.index}: {v.text}; "
                                 "nothing written")
    return converted


def _active_view(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The messages the API reads: after the last `compaction` block (Anthropic's, or a Codex
    item), its readable summary first as a summary message; an encrypted one has none to carry."""
    found = server_compaction(messages)
    if found is None:
        return messages
    index, position = found
    compaction = messages[index].blocks[position]
    summary = compaction.raw.get("content") if isinstance(compaction.raw, dict) else None
    head = (Message(USER, (Text(compose(parse(summary))),)),) if isinstance(summary, str) and summary.strip() else ()
    return head + (messages[index].with_blocks(messages[index].blocks[position + 1:]),) + messages[index + 1:]


def _named_legacy_calls(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """An OpenAI legacy `function_call` (no id; the next `function` message answers it) as a tool
    call with an id and its answer a `tool` message: the form both targets take."""
    out, number, current = [], 0, None
    for m in messages:
        blocks = []
        for b in m.blocks:
            if isinstance(b, ToolCall) and b.id == LEGACY_CALL_ID:
                number += 1
                current = f"call_legacy_{number}"
                b = replace(b, id=current, raw=None)
            elif isinstance(b, ToolResult) and b.tool_call_id == LEGACY_CALL_ID and current is not None:
                b = replace(b, tool_call_id=current, raw=None)
            blocks.append(b)
        role = "tool" if m.role == "function" else m.role
        out.append(m if role == m.role and blocks == list(m.blocks) else m.replaced(role, tuple(blocks)))
    return tuple(out)


def _answered_once(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Each call answered once: a result that repeats an answer its call already has in the same
    turn goes (Gemini CLI 0.61 records and sends each result twice; the Messages API refuses a
    second `tool_result` for a `tool_use`)."""
    out: list[Message] = []
    answered: set[str] = set()
    for m in messages:
        if m.role == ASSISTANT:
            answered = set()
        elif any(isinstance(b, ToolResult) and b.tool_call_id in answered for b in m.blocks):
            m = m.with_blocks(tuple(b for b in m.blocks if not (isinstance(b, ToolResult) and b.tool_call_id in answered)))
        answered |= {b.tool_call_id for b in m.blocks if isinstance(b, ToolResult)}
        out.append(m)
    return tuple(out)


def _with_object_input(call: ToolCall) -> ToolCall:
    """Both APIs take a call's input as an object; a free-form one (a custom tool's text, arguments
    that are not JSON) is kept under `input`."""
    if isinstance(call.input, dict):
        return call
    return replace(call, input={} if call.input is None else {"input": call.input})


# --- Anthropic ----------------------------------------------------------------------------------


def _to_anthropic(t: Transcript, view: tuple[Message, ...]) -> Transcript:
    same_dialect = t.dialect == ANTHROPIC
    system = [_anthropic_block(b, same_dialect) for b in t.system if isinstance(b, Text)]
    messages = []
    for m in view:
        if m.role in SYSTEM_ROLES:  # the Messages API has one system prompt, before the messages
            system += [_anthropic_block(b, same_dialect) for b in m.blocks if isinstance(b, Text)]
            continue
        blocks = (_anthropic_block(b, same_dialect) for b in m.blocks)
        messages.append(Message(ASSISTANT if m.role == ASSISTANT else USER, tuple(b for b in blocks if b is not None)))
    messages = _settled(messages)
    if messages and messages[0].role != USER:  # the API takes a user message first
        messages.insert(0, Message(USER, (Text(PLACEHOLDER),)))
    tools = tuple(tool for tool in map(_anthropic_tool, t.tools) if tool is not None) if not same_dialect else t.tools
    return Transcript(format=ANTHROPIC, dialect=ANTHROPIC, messages=tuple(messages),
                      system=tuple(b for b in system if b is not None), tools=tools)


def _anthropic_block(block: Block, same_dialect: bool) -> Block | None:
    """The block as the Messages API takes it, or None when it cannot carry it."""
    if isinstance(block, Text) and not block.text.strip():
        return None  # an empty text block is refused
    if isinstance(block, Thinking) and not block.signature:
        return None  # unsigned thinking is refused
    if isinstance(block, ToolCall):
        block = _with_object_input(block)
    elif isinstance(block, ToolResult) and not isinstance(block.content, str):
        inner = (_anthropic_block(b, same_dialect) for b in block.content)
        block = replace(block, content=tuple(b for b in inner if b is not None and (
            isinstance(b, (Text, Image, Document)) or isinstance(b, Opaque) and b.type in RESULT_CONTENT_OPAQUE)))
    elif isinstance(block, (Image, Document)) and not (same_dialect and _reads_as(block)) and \
            block.url is None and not (block.data is not None and block.media_type):
        return None  # rebuilt, it needs a URL, or data with its media type
    elif isinstance(block, Opaque) and not (same_dialect and block.type in ANTHROPIC_OPAQUE | RESULT_CONTENT_OPAQUE):
        return None  # another agent's own item (reasoning, a thought), or a block the API does not know
    elif isinstance(block, (ServerToolCall, ServerToolResult)) and not same_dialect:
        return None
    return block if same_dialect and _reads_as(block) else replace(block, raw=None)


def _reads_as(block: Block) -> bool:
    """Whether the block's raw dict is a Messages API block that says the same (cache_control,
    citations and the like then go along), so the writer may give it back as it is."""
    if not isinstance(block.raw, dict):
        return False
    try:
        return dialects.anthropic.read_block(block.raw) == block
    except ShapeError:
        return False


def _settled(messages: list[Message]) -> list[Message]:
    """No empty message, one message per turn (its tool results first), and thinking only where
    the API takes it (first in its message, not last); again until nothing changes, since what
    one round drops can bring two turns together."""
    while True:
        merged: list[Message] = []
        for m in messages:
            if not m.blocks:
                continue
            if merged and merged[-1].role == m.role:
                m = _joined(merged.pop(), m)
            merged.append(m)
        settled = [_results_first(_placed_thinking(m)) for m in merged]
        if settled == messages:
            return settled
        messages = settled


def _joined(first: Message, second: Message) -> Message:
    return first.with_blocks(first.blocks + second.blocks)


def _placed_thinking(message: Message) -> Message:
    """Thinking that does not open its message, or that ends it, cannot be sent: the message goes without."""
    if not misplaced_thinking(message):
        return message
    return message.with_blocks(tuple(b for b in message.blocks if not isinstance(b, (Thinking, RedactedThinking))))


def _results_first(message: Message) -> Message:
    results = tuple(b for b in message.blocks if isinstance(b, ToolResult))
    if not results or message.blocks[:len(results)] == results:
        return message
    return message.with_blocks(results + tuple(b for b in message.blocks if not isinstance(b, ToolResult)))


def _function_of(tool: Any) -> dict | None:
    """An OpenAI function tool's name, description, parameters (and `strict`), in either of its
    shapes: Chat Completions' (under `function`) or the Responses API's (flat); None for any other
    tool (a custom tool, a built-in one)."""
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return None
    function = tool["function"] if isinstance(tool.get("function"), dict) else tool
    return function if isinstance(function.get("name"), str) else None


def _anthropic_tool(tool: Any) -> Any:
    """An OpenAI function as a Messages tool; None for any other tool (OpenAI's built-in and custom ones)."""
    function = _function_of(tool)
    if function is None:
        return None
    out = {"name": function["name"]}
    if isinstance(function.get("description"), str):
        out["description"] = function["description"]
    out["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return out


# --- OpenAI -------------------------------------------------------------------------------------


def _to_openai(t: Transcript, view: tuple[Message, ...]) -> Transcript:
    same_dialect = t.dialect == OPENAI
    system = tuple(replace(b, raw=None) for b in t.system if isinstance(b, Text))
    messages = [Message("system", system)] if system else []
    for m in view:
        messages += _openai_messages(m, same_dialect)
    tools = tuple(tool for tool in map(_chat_completions_tool if same_dialect else _openai_tool, t.tools) if tool is not None)
    return Transcript(format=OPENAI, dialect=OPENAI, messages=tuple(m for m in messages if m.blocks), tools=tools)


def _openai_messages(m: Message, same_dialect: bool) -> list[Message]:
    """One message as Chat Completions messages: each tool result a `tool` message of its own,
    before what else the turn holds (an image a result held among it: a tool message is text)."""
    if m.role in SYSTEM_ROLES:
        return [Message(m.role, tuple(replace(b, raw=None) for b in m.blocks if isinstance(b, Text)))]
    role = ASSISTANT if m.role == ASSISTANT else USER
    results: list[Message] = []
    rest: list[Block | None] = []
    for b in m.blocks:
        if isinstance(b, ToolResult):
            results.append(Message("tool", (ToolResult(b.tool_call_id, result_text(b)),)))
            if not isinstance(b.content, str):
                rest += (_openai_part(inner, USER, same_dialect) for inner in b.content if not isinstance(inner, Text))
        elif isinstance(b, ToolCall):
            rest.append(replace(_with_object_input(b), raw=None) if role == ASSISTANT else None)
        else:
            rest.append(_openai_part(b, role, same_dialect))
    return results + [Message(role, tuple(b for b in rest if b is not None))]


def _openai_part(block: Block, role: str, same_dialect: bool) -> Block | None:
    """The block as a content part of a `role` message, or None when Chat Completions cannot carry it."""
    if isinstance(block, Text):
        return replace(block, raw=None)
    if isinstance(block, Document) and _source_type(block) == "text":
        return Text(block.data) if role == USER and block.data is not None else None  # plain text, not base64
    if isinstance(block, (Image, Document)) and role == USER and (block.data is not None or block.url is not None):
        if isinstance(block, Document) and block.data is None:
            return None  # a file part holds its data; a document by URL has nowhere to go
        return replace(block, raw=None)
    if isinstance(block, Opaque) and same_dialect and isinstance(block.raw, dict) and block.type in OPENAI_PART_TYPES[role]:
        return block  # input_audio, refusal: parts the reader keeps as they are
    return None  # thinking, server tools, another agent's own items


def _source_type(block: Document) -> Any:
    """An Anthropic document's source type (`text`: its data is the text itself)."""
    source = block.raw.get("source") if isinstance(block.raw, dict) else None
    return source.get("type") if isinstance(source, dict) else None


def _chat_completions_tool(tool: Any) -> Any:
    """An OpenAI tool as Chat Completions takes it: one of its own as it is (its fields under its
    type: `function`, `custom`); a Responses API function (flat) under `function`; None for another
    Responses API tool (custom, built-in), which it has no place for."""
    if isinstance(tool, dict) and isinstance(tool.get("type"), str) and isinstance(tool.get(tool["type"]), dict):
        return tool
    return _openai_tool(tool)


def _openai_tool(tool: Any) -> Any:
    """A Messages tool, or a Responses API function, as a Chat Completions function; None for a
    server tool (web search, …), a custom or a built-in one."""
    if (function := _function_of(tool)) is not None:
        return {"type": "function", "function": {key: value for key, value in function.items() if key != "type"}}
    if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not isinstance(tool.get("input_schema"), dict):
        return None
    function = {"name": tool["name"]}
    if isinstance(tool.get("description"), str):
        function["description"] = tool["description"]
    function["parameters"] = tool["input_schema"]
    return {"type": "function", "function": function}


# --- bytes --------------------------------------------------------------------------------------


def _serialized(t: Transcript, to: str) -> bytes:
    """The request body (indented, as a person reads it) or the lines of messages."""
    if to == JSONL:
        return b"".join(dumps(_openai_message(m), indent=False) + b"\n" for m in t.messages)
    body: dict[str, Any] = {}
    if t.system:
        body["system"] = _anthropic_content(t.system)
    if t.tools:
        body["tools"] = list(t.tools)
    if to == ANTHROPIC:
        body["messages"] = [{"role": m.role, "content": _anthropic_content(m.blocks)} for m in t.messages]
    else:
        body["messages"] = [_openai_message(m) for m in t.messages]
    return Layout(indent=True, newline=True).dumps(body)


def _anthropic_content(blocks: tuple[Block, ...]) -> Any:
    """One plain text as a string, as people write it; blocks otherwise (a text block's own keys,
    cache_control or citations, stay)."""
    plain = len(blocks) == 1 and isinstance(blocks[0], Text) and not isinstance(blocks[0].raw, dict)
    return dialects.anthropic.write_content(blocks, plain)


def _openai_message(message: Message) -> dict:
    out = dialects.openai.write_message(message)
    if message.role == ASSISTANT and all(isinstance(b, ToolCall) for b in message.blocks):
        out["content"] = None  # beside tool calls, as the API writes it (an empty string would read as a text)
    return out
