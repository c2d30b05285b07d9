"""What the least a command could do costs: `python bench/floors.py estimate|prune FILE`.

Each is the design of a typed decode and a count, at its barest, with none of the product around it: click
imported (every command's start-up pays it), the request body read by one typed msgspec decode
that builds only what a count needs, and the characters counted. `prune` also replaces every
tool result but the last six with a placeholder, writes the body with the other messages as
their own bytes, and reads what it wrote back once (the least a post-condition can be).

What the floor leaves out and a command must do: its own modules' start-up, every check a
reading makes (a value of another type, a field of another name, a thinking's signature, a
cache_control), the detection of the dialect, the model a library caller gets, the report, and
the post-condition's `check`. `make bench` shows each floor beside the target of its command:
a target below its floor cannot be met by any command built this way.
"""

from __future__ import annotations

import sys

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
    spans = msgspec.json.decode(top["messages"], type=list[Raw])
    messages = msgspec.json.decode(top["messages"], type=list[_Message])
    _characters(messages)
    results = [i for i, m in enumerate(messages)
               if not isinstance(m.content, str) and any(isinstance(b, _ToolResult) for b in m.content)]
    cleared = set(results[:-6])
    written = []
    for index, (message, span) in enumerate(zip(messages, spans)):
        if index in cleared:
            blocks = [{"type": "tool_result", "tool_use_id": b.tool_use_id, "content": "[cleared]"}
                      if isinstance(b, _ToolResult) else msgspec.to_builtins(b) for b in message.content]
            written.append(orjson.Fragment(orjson.dumps({"role": message.role, "content": blocks})))
        else:
            written.append(orjson.Fragment(bytes(span)))
    output = orjson.dumps({key: written if key == "messages" else orjson.Fragment(bytes(raw)) for key, raw in top.items()})
    msgspec.json.decode(output, type=_Body)
    sys.stdout.buffer.write(output)


if __name__ == "__main__":
    command, path = sys.argv[1:]
    with open(path, "rb") as file:
        {"estimate": estimate, "prune": prune}[command](file.read())
