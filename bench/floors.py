"""What the least a command could do costs: `python bench/floors.py estimate|prune|slim FILE [SHAPE]`.

Each is the design of a typed decode and a count, at its barest, with none of the product around it: click
imported (every command's start-up pays it), the file read by typed msgspec decodes that build
only what a count needs, and the characters counted. `prune` also replaces every tool result but
the last six with a placeholder, writes the other messages (or lines) as their own bytes, and
reads what it wrote back once (the least a post-condition can be).

SHAPE (`body` when left out): `body`, a request body; `list`, a bare list of messages; `jsonl`, JSON
Lines of messages; `log`, an agent's JSON Lines log (Claude Code, Codex, pi: each line's message
or payload decoded by one generic type); `gemini`, a Gemini CLI session document; `gemini-lines`,
Gemini CLI's JSON Lines log (each line's content and calls). `slim` (of a
Claude Code log, `log`) parses each line, walks the chain, cuts what slim cuts by its JSON, writes,
and reads the output back once: no model of the messages, no check of them.

What the floor leaves out and a command must do: its own modules' start-up, every check a
reading makes (a value of another type, a field of another name, a thinking's signature, a
cache_control), the detection of the dialect, the model a library caller gets, the report, and
the post-condition's `check`. `make bench` shows each floor beside the target of its command:
a target below its floor cannot be met by any command built this way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import click  # noqa: F401 (imported as every command's start-up imports it)
import msgspec
import orjson
from msgspec import Raw, Struct


class _Text(Struct, tag="text", tag_field="type"):
    text: str


class _ToolUse(Struct, tag="tool_use", tag_field="type"):
    id: str
    name: str
    input: Raw = Raw()


class _ToolResult(Struct, tag="tool_result", tag_field="type"):
    tool_use_id: str
    content: str | list[_Text] = ""


class _Message(Struct):
    role: str
    content: str | list[_Text | _ToolUse | _ToolResult]


class _Body(Struct):
    messages: list[_Message]


def _characters(messages: list[_Message]) -> int:
    count = 0
    for message in messages:
        if isinstance(message.content, str):
            count += len(message.content)
            continue
        for block in message.content:
            if isinstance(block, _Text):
                count += len(block.text)
            elif isinstance(block, _ToolResult):
                content = block.content
                count += len(content) if isinstance(content, str) else sum(len(t.text) for t in content)
            else:
                count += len(block.name) + len(block.input)
    return count


def estimate(data: bytes) -> None:
    body = msgspec.json.decode(data, type=_Body)
    print(_characters(body.messages) // 4 + 4 * len(body.messages))


def prune(data: bytes) -> None:
    top = msgspec.json.decode(data, type=dict[str, Raw])
    spans = [bytes(raw) for raw in msgspec.json.decode(top["messages"], type=list[Raw])]
    messages = msgspec.json.decode(top["messages"], type=list[_Message])
    _characters(messages)
    written = [orjson.Fragment(span) for span in _pruned(messages, spans)]
    output = orjson.dumps({key: written if key == "messages" else orjson.Fragment(bytes(raw)) for key, raw in top.items()})
    msgspec.json.decode(output, type=_Body)
    sys.stdout.buffer.write(output)


def estimate_list(data: bytes) -> None:
    messages = msgspec.json.decode(data, type=list[_Message])
    print(_characters(messages) // 4 + 4 * len(messages))


def estimate_jsonl(data: bytes) -> None:
    decode = msgspec.json.Decoder(_Message).decode
    messages = [decode(line) for line in data.splitlines() if line.strip()]
    print(_characters(messages) // 4 + 4 * len(messages))


def _pruned(messages: list[_Message], spans: list[bytes]) -> list[bytes]:
    """Each message's bytes: its own, or for a tool result but the last six, made anew with a placeholder."""
    results = [i for i, m in enumerate(messages)
               if not isinstance(m.content, str) and any(isinstance(b, _ToolResult) for b in m.content)]
    cleared = set(results[:-6])
    out = []
    for index, (message, span) in enumerate(zip(messages, spans)):
        if index in cleared:
            blocks = [{"type": "tool_result", "tool_use_id": b.tool_use_id, "content": "[cleared]"}
                      if isinstance(b, _ToolResult) else msgspec.to_builtins(b) for b in message.content]
            out.append(orjson.dumps({"role": message.role, "content": blocks}))
        else:
            out.append(span)
    return out


def prune_list(data: bytes) -> None:
    spans = [bytes(raw) for raw in msgspec.json.decode(data, type=list[Raw])]
    messages = msgspec.json.decode(data, type=list[_Message])
    _characters(messages)
    output = orjson.dumps([orjson.Fragment(span) for span in _pruned(messages, spans)])
    msgspec.json.decode(output, type=list[_Message])
    sys.stdout.buffer.write(output)


def prune_jsonl(data: bytes) -> None:
    decode = msgspec.json.Decoder(_Message).decode
    spans = [line for line in data.splitlines() if line.strip()]
    messages = [decode(line) for line in spans]
    _characters(messages)
    output = b"\n".join(_pruned(messages, spans)) + b"\n"
    [decode(line) for line in output.splitlines()]
    sys.stdout.buffer.write(output)


class _AnyBlock(Struct):
    """A content block of any agent's log, with what a count reads of each kind."""

    type: str = ""
    text: str = ""
    thinking: str = ""
    content: Raw = Raw()
    input: Raw = Raw()
    arguments: Raw = Raw()


class _AnyMessage(Struct):
    content: str | list[_AnyBlock] | None = None


class _Payload(Struct):
    """A Codex line's payload: a message, a call or a call's output."""

    type: str = ""
    content: list[_AnyBlock] | None = None
    output: Raw = Raw()
    arguments: Raw = Raw()
    input: Raw = Raw()


class _LogLine(Struct):
    message: _AnyMessage | None = None  # Claude Code, pi
    payload: _Payload | None = None  # Codex


class _GeminiMessage(Struct):
    content: Raw = Raw()
    toolCalls: Raw = Raw()


class _GeminiSession(Struct):
    messages: list[_GeminiMessage]


def _block_characters(blocks: list[_AnyBlock]) -> int:
    return sum(len(b.text) + len(b.thinking) + len(b.content) + len(b.input) + len(b.arguments) for b in blocks)


def _log_characters(lines: list[_LogLine]) -> int:
    count = 0
    for line in lines:
        if line.message is not None:
            content = line.message.content
            count += len(content) if isinstance(content, str) else _block_characters(content or [])
        elif line.payload is not None:
            payload = line.payload
            count += _block_characters(payload.content or []) + len(payload.output) + len(payload.arguments) + len(payload.input)
    return count


def estimate_log(data: bytes) -> None:
    decode = msgspec.json.Decoder(_LogLine).decode
    print(_log_characters([decode(line) for line in data.splitlines() if line.strip()]) // 4)


# The lines a prune of a log changes: those holding a tool's result, in one agent's log or another's.
_RESULT_MARKS = (b'"tool_result"', b'"toolResult"', b'_output"')


def prune_log(data: bytes) -> None:
    decode = msgspec.json.Decoder(_LogLine).decode
    spans = [line for line in data.splitlines() if line.strip()]
    _log_characters([decode(line) for line in spans])
    results = [i for i, line in enumerate(spans) if any(mark in line for mark in _RESULT_MARKS)]
    for index in results[:-6]:  # made anew: read, the result replaced, written
        spans[index] = orjson.dumps({**orjson.loads(spans[index]), "toolUseResult": "[cleared]"})
    output = b"\n".join(spans) + b"\n"
    [decode(line) for line in output.splitlines()]
    sys.stdout.buffer.write(output)


# What every line of a Claude Code log repeats, and the UI's copy of a result: what `slim` cuts.
_SLIMMED = ("cwd", "version", "gitBranch", "userType", "slug", "requestId", "entrypoint", "sessionId", "toolUseResult")


def slim_log(data: bytes) -> None:
    """A Claude Code log: each line parsed, the chain walked back from the newest message, its lines
    but progress kept with what `slim` cuts found by its JSON and cut, written, read back once."""
    lines = data.split(b"\n")
    values = [orjson.loads(line) if line.strip() else None for line in lines]
    by_uuid = {v["uuid"]: i for i, v in enumerate(values) if v and "uuid" in v}
    at: int | None = max(i for i, v in enumerate(values) if v and v.get("type") in ("user", "assistant"))
    chain = []
    while at is not None:
        chain.append(at)
        parent = values[at].get("parentUuid")
        at = by_uuid.get(parent) if parent else None
    out = []
    for i in reversed(chain):
        value, line = values[i], lines[i]
        if value.get("type") == "progress":
            continue
        for key in _SLIMMED:
            if key in value and (found := line.find(b',"%s":%s' % (key.encode(), orjson.dumps(value[key])))) >= 0:
                line = line[:found] + line[found + len(key) + 4 + len(orjson.dumps(value[key])):]
        out.append(line)
    output = b"\n".join(out)
    [orjson.loads(line) for line in output.split(b"\n")]
    sys.stdout.buffer.write(output)


def _gemini_characters(messages: Iterable[_GeminiMessage]) -> int:
    return sum(len(m.content) + len(m.toolCalls) for m in messages)


def estimate_gemini(data: bytes) -> None:
    session = msgspec.json.decode(data, type=_GeminiSession)
    print(_gemini_characters(session.messages) // 4)


def prune_gemini(data: bytes) -> None:
    top = msgspec.json.decode(data, type=dict[str, Raw])
    spans = msgspec.json.decode(top["messages"], type=list[Raw])
    session = msgspec.json.decode(data, type=_GeminiSession)
    _gemini_characters(session.messages)
    calls = [i for i, m in enumerate(session.messages) if len(m.toolCalls)]
    cleared = set(calls[:-6])
    written = [orjson.Fragment(orjson.dumps({**orjson.loads(bytes(span)), "toolCalls": []}) if i in cleared else bytes(span))
               for i, span in enumerate(spans)]
    output = orjson.dumps({key: written if key == "messages" else orjson.Fragment(bytes(raw)) for key, raw in top.items()})
    msgspec.json.decode(output, type=_GeminiSession)
    sys.stdout.buffer.write(output)


def estimate_gemini_lines(data: bytes) -> None:
    decode = msgspec.json.Decoder(_GeminiMessage).decode
    print(_gemini_characters(decode(line) for line in data.splitlines() if line.strip()) // 4)


def prune_gemini_lines(data: bytes) -> None:
    decode = msgspec.json.Decoder(_GeminiMessage).decode
    spans = [line for line in data.splitlines() if line.strip()]
    messages = [decode(line) for line in spans]
    _gemini_characters(messages)
    calls = [i for i, m in enumerate(messages) if len(m.toolCalls)]
    for index in calls[:-6]:  # made anew: read, the calls' results replaced, written
        spans[index] = orjson.dumps({**orjson.loads(spans[index]), "toolCalls": []})
    output = b"\n".join(spans) + b"\n"
    [decode(line) for line in output.splitlines()]
    sys.stdout.buffer.write(output)


FLOORS = {
    "body": {"estimate": estimate, "prune": prune},
    "list": {"estimate": estimate_list, "prune": prune_list},
    "jsonl": {"estimate": estimate_jsonl, "prune": prune_jsonl},
    "log": {"estimate": estimate_log, "prune": prune_log, "slim": slim_log},
    "gemini": {"estimate": estimate_gemini, "prune": prune_gemini},
    "gemini-lines": {"estimate": estimate_gemini_lines, "prune": prune_gemini_lines},
}

if __name__ == "__main__":
    command, path, *shape = sys.argv[1:]
    with open(path, "rb") as file:
        FLOORS[shape[0] if shape else "body"][command](file.read())
