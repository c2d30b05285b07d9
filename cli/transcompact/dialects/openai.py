"""OpenAI Chat Completions: one message object ↔ one Message.

`content` may be a string, an array of parts, null or absent; an assistant's `tool_calls` (and
the legacy `function_call`) become ToolCall blocks after its content; a `tool` (or legacy
`function`) message becomes one ToolResult. How `content` was written is remembered so an
unchanged message, and the unchanged parts of a changed one, come back as they were read.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ..core.errors import ShapeError
from ..core.jsondata import kind_of, nested_value, too_deep
from ..core.model import Block, Document, Image, Message, Opaque, Text, ToolCall, ToolResult
from ._shape import message_role

NAME = "openai"

RESULT_ROLES = frozenset({"tool", "function"})
SIGNATURE_ROLES = frozenset({"tool", "function", "developer"})
SIGNATURE_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
# Request parameters only the Chat Completions API has (not words an envelope may use too, like `n` or `seed`).
REQUEST_KEYS = frozenset({"max_completion_tokens", "response_format", "frequency_penalty", "presence_penalty", "logit_bias",
                          "top_logprobs", "parallel_tool_calls", "reasoning_effort", "stream_options", "functions",
                          "function_call", "web_search_options"})
LEGACY_CALL_ID = "<function_call>"  # a legacy `function_call` has no id; the next `function` message answers it

_ABSENT = "absent"


class _Origin:
    __slots__ = ("role", "blocks", "content_shape")

    def __init__(self, role: str, blocks: tuple[Block, ...], content_shape: str):
        self.role = role
        self.blocks = blocks
        self.content_shape = content_shape  # "string", "parts", "null" or "absent"


# A number orjson would not give back as written (`1.50`, `1e5`, `-0`, an integer beyond 64 bits):
# arguments that may hold one are read with every number as written (`jsondata.nested_value`).
_NOT_AS_WRITTEN = re.compile(r"\d[.eE]|\d{19}|-0")


def decode_arguments(arguments: Any) -> Any:
    """The arguments a JSON string holds, every number as written; the string itself when it
    holds none, or nesting too deep to write."""
    if not isinstance(arguments, str):
        return arguments
    try:
        if _NOT_AS_WRITTEN.search(arguments) is not None:
            return nested_value(arguments.encode("utf-8", "surrogatepass"), 1)
        decoded = orjson.loads(arguments)
    except ValueError:  # not JSON (orjson's error is one), or too deep
        return arguments
    return arguments if too_deep(decoded) else decoded


def read_part(part: Any, where: str) -> Block:
    if not isinstance(part, dict):
        raise ShapeError(f"{where}: a content part must be an object, not {kind_of(part)}")
    kind = part.get("type")
    if kind is not None and not isinstance(kind, str):
        raise ShapeError(f"{where}: a part's `type` must be a string, not {kind_of(kind)}")
    if kind == "text" and isinstance(part.get("text"), str):
        return Text(part["text"], raw=part)
    if kind == "image_url" and isinstance(part.get("image_url"), dict):
        url = part["image_url"].get("url")
        if url is not None and not isinstance(url, str):  # operations read it as text
            raise ShapeError(f"{where}: `image_url.url` must be a string, not {kind_of(url)}")
        media_type, data = _split_data_url(url)
        return Image(media_type, data, None if data is not None else url, raw=part)
    if kind == "file" and isinstance(part.get("file"), dict):
        media_type, data = _split_data_url(part["file"].get("file_data"))
        return Document(media_type, data, None, raw=part)
    return Opaque(kind if isinstance(kind, str) else None, raw=part)


def _split_data_url(url: Any) -> tuple[str | None, str | None]:
    """`data:image/png;base64,AAAA` → ("image/png", "AAAA"); anything else → (None, None)."""
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url[:200]:
        head, _, data = url.partition(";base64,")
        return head[5:] or None, data
    return None, None


def _read_content(content: Any, where: str) -> tuple[tuple[Block, ...], str]:
    if isinstance(content, str):
        return (Text(content, raw=content),), "string"
    if isinstance(content, list):
        return tuple(read_part(p, f"{where}: content/{i}") for i, p in enumerate(content)), "parts"
    if content is None:
        return (), "null"
    raise ShapeError(f"{where}: `content` must be a string, an array of parts or null, not {kind_of(content)}")


def read_message(obj: Any, *, index: int, line: int | None = None) -> Message:
    where = f"message {index}"
    role = message_role(obj, where)
    if "content" in obj:
        blocks, shape = _read_content(obj["content"], where)
    else:
        blocks, shape = (), _ABSENT
    # Fields a rewrite writes back from the model: any other type would come back changed.
    for key, kinds, expected in (("tool_call_id", str, "a string"), ("tool_calls", list, "an array"),
                                 ("function_call", dict, "an object")):
        if obj.get(key) is not None and not isinstance(obj[key], kinds):
            raise ShapeError(f"{where}: `{key}` must be {expected}, not {kind_of(obj[key])}")
    if role in RESULT_ROLES:
        call_id = obj.get("tool_call_id") if role == "tool" else LEGACY_CALL_ID
        if call_id is None and isinstance(obj.get("tool_call_ids"), list) and obj["tool_call_ids"]:
            call_id = obj["tool_call_ids"][0]  # SWE-agent's histories name the call in a list
        content = blocks[0].text if shape == "string" and isinstance(blocks[0], Text) else blocks
        result = ToolResult(call_id if isinstance(call_id, str) else "", content, None)
        blocks = (result,)
    else:
        calls = obj.get("tool_calls")
        if isinstance(calls, list):
            blocks = blocks + tuple(_read_tool_call(c, f"{where}: tool_calls/{i}") for i, c in enumerate(calls))
        legacy = obj.get("function_call")
        if isinstance(legacy, dict):
            blocks = blocks + (
                ToolCall(LEGACY_CALL_ID, str(legacy.get("name", "")), decode_arguments(legacy.get("arguments")), raw=legacy),
            )
    return Message(role, blocks, raw=obj, line=line, origin=_Origin(role, blocks, shape))


def _read_tool_call(call: Any, where: str) -> ToolCall:
    if not isinstance(call, dict):
        raise ShapeError(f"{where}: a tool call must be an object, not {kind_of(call)}")
    for key, kinds, expected in (("id", str, "a string"), ("function", dict, "an object")):
        if call.get(key) is not None and not isinstance(call[key], kinds):
            raise ShapeError(f"{where}: `{key}` must be {expected}, not {kind_of(call[key])}")
    function = call.get("function") or {}
    if function.get("name") is not None and not isinstance(function["name"], str):
        raise ShapeError(f"{where}: `function.name` must be a string, not {kind_of(function['name'])}")
    call_id = call.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) else "",
        str(function.get("name", "")),
        decode_arguments(function.get("arguments")),
        raw=call,
    )


def is_unchanged(message: Message) -> bool:
    origin = message.origin
    return isinstance(origin, _Origin) and message.role == origin.role and message.blocks == origin.blocks


def write_part(block: Block) -> Any:
    raw = block.raw
    if raw is not None:
        try:
            if read_part(raw, "") == block:
                return raw
        except ShapeError:
            pass
    if isinstance(block, Text):
        return {**raw, "type": "text", "text": block.text} if isinstance(raw, dict) else {"type": "text", "text": block.text}
    if isinstance(block, Image):
        url = block.url if block.data is None else f"data:{block.media_type};base64,{block.data}"
        return {"type": "image_url", "image_url": {"url": url}}
    if isinstance(block, Document):
        return {"type": "file", "file": {"file_data": f"data:{block.media_type};base64,{block.data}"}}
    return raw if raw is not None else {"type": "text", "text": ""}


def _write_arguments(call: ToolCall, original: Any) -> Any:
    if decode_arguments(original) == call.input:
        return original
    return call.input if isinstance(call.input, str) else orjson.dumps(call.input).decode()


def _write_tool_call(call: ToolCall) -> Any:
    raw = call.raw if isinstance(call.raw, dict) else {}
    function = raw.get("function")
    function = function if isinstance(function, dict) else {}
    out = dict(raw)
    out["id"] = call.id
    out.setdefault("type", "function")
    out["function"] = {**function, "name": call.name, "arguments": _write_arguments(call, function.get("arguments"))}
    if raw and "id" not in raw and not call.id:
        del out["id"]  # some OpenAI-compatible servers send calls without ids; keep them so
    return out


def _write_content(blocks: tuple[Block, ...], shape: str) -> tuple[bool, Any]:
    """(whether to write the `content` key, its value)."""
    if not blocks:
        if shape == _ABSENT:
            return False, None
        if shape == "null":
            return True, None
        return True, "" if shape == "string" else []
    if shape == "string" and len(blocks) == 1 and isinstance(blocks[0], Text):
        return True, blocks[0].text
    return True, [write_part(b) for b in blocks]


def write_message(message: Message) -> Any:
    if is_unchanged(message):
        return message.raw
    origin = message.origin
    shape = origin.content_shape if isinstance(origin, _Origin) else "string"
    out = dict(message.raw) if isinstance(message.raw, dict) else {}
    out["role"] = message.role
    if message.role in RESULT_ROLES and len(message.blocks) == 1 and isinstance(message.blocks[0], ToolResult):
        result = message.blocks[0]
        if isinstance(result.content, str):
            out["content"] = result.content
        else:
            out["content"] = _write_content(result.content, "parts")[1]
        if message.role == "tool":
            if "tool_call_ids" in out and "tool_call_id" not in out:
                out["tool_call_ids"] = [result.tool_call_id]
            else:
                out["tool_call_id"] = result.tool_call_id
        return out
    content = tuple(b for b in message.blocks if not isinstance(b, ToolCall))
    calls = [b for b in message.blocks if isinstance(b, ToolCall) and b.id != LEGACY_CALL_ID]
    legacy = [b for b in message.blocks if isinstance(b, ToolCall) and b.id == LEGACY_CALL_ID]
    present, value = _write_content(content, shape)
    if present:
        out["content"] = value
    else:
        out.pop("content", None)
    if calls:
        out["tool_calls"] = [_write_tool_call(c) for c in calls]
    elif out.get("tool_calls"):  # the calls were removed; an empty or null field stays as it was
        del out["tool_calls"]
    if legacy:
        original = legacy[0].raw if isinstance(legacy[0].raw, dict) else {}
        out["function_call"] = {
            **original,
            "name": legacy[0].name,
            "arguments": _write_arguments(legacy[0], original.get("arguments")),
        }
    elif isinstance(out.get("function_call"), dict):
        del out["function_call"]
    return out


def signals(messages: list) -> int:
    """How many messages show an OpenAI-only shape."""
    count = 0
    for m in messages:
        if type(m) is not dict:
            continue
        content = m.get("content")
        if (
            "tool_calls" in m
            or "function_call" in m
            or type(m.get("role")) is str and m["role"] in SIGNATURE_ROLES
            or (type(content) is list and any(type(p) is dict and type(p.get("type")) is str and p["type"] in SIGNATURE_PARTS
                                              for p in content))
        ):
            count += 1
    return count


def names_request(request: dict) -> bool:
    """Whether a request body has a parameter or a tool definition (`type: function`) only this API has."""
    tools = request.get("tools")
    return any(key in request for key in REQUEST_KEYS) or (
        type(tools) is list and any(type(t) is dict and t.get("type") == "function" and "function" in t for t in tools))


def only_it_accepts(messages: list) -> bool:
    """Whether a plain conversation (no `signals` of either dialect) holds what OpenAI's rules
    accept and Anthropic's do not: a first message that is not the user's (a system prompt), a
    message other than the assistant's with no content, or a blank text."""
    if messages and type(messages[0]) is dict and messages[0].get("role") != "user":
        return True
    for m in messages:
        if type(m) is not dict:
            continue
        content = m.get("content")
        if m.get("role") != "assistant" and content in (None, []):
            return True
        if type(content) is str:
            texts = [content]
        elif type(content) is list:
            texts = [b["text"] for b in content if type(b) is dict and b.get("type") == "text" and type(b.get("text")) is str]
        else:
            texts = []
        if any(not text.strip() for text in texts):
            return True
    return False
