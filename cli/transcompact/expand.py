"""Put back what `prune --archive` replaced: `expand(prune(x), archive) == x`.

Each archive record names a tool call id, what prune wrote (`pruned`) and what was there
(`original`). A record is applied only where the transcript still holds exactly what prune
wrote, newest record first, so a result trimmed by one prune and cleared by a later one comes
back whole.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from .errors import InputError
from .model import ToolCall, ToolResult, Transcript
from .prune import content_json


def _blocks(content: Any, dialect: str) -> Any:
    if isinstance(content, str):
        return content
    from .dialects import anthropic, openai

    if dialect == "anthropic":
        return tuple(anthropic.read_block(b) for b in content)
    return tuple(openai.read_part(p, "archive") for p in content)


def expand(transcript: Transcript, records: Iterable[dict]) -> tuple[Transcript, int]:
    """The transcript with every archived original that still applies put back, and how many."""
    messages = list(transcript.messages)
    where: dict[tuple[str, str], list[tuple[int, int]]] = {}  # (kind, id) → [(message, block)]
    for m, message in enumerate(messages):
        for b, block in enumerate(message.blocks):
            if isinstance(block, ToolResult):
                where.setdefault(("result", block.tool_call_id), []).append((m, b))
            elif isinstance(block, ToolCall):
                where.setdefault(("input", block.id), []).append((m, b))
    restored = 0
    for record in reversed(list(records)):
        try:
            kind, call_id, pruned, original = record["kind"], record["tool_call_id"], record["pruned"], record["original"]
        except (KeyError, TypeError):
            raise InputError("an archive record needs kind, tool_call_id, pruned and original") from None
        # Ids can repeat in a log: the message the record names is tried first.
        for m, b in sorted(where.get((kind, call_id), ()), key=lambda at: at[0] != record.get("message")):
            block = messages[m].blocks[b]
            if kind == "result" and content_json(block.content, transcript.dialect) == pruned:
                new = replace(block, content=_blocks(original, transcript.dialect))
            elif kind == "input" and block.input == pruned:
                new = replace(block, input=original, raw=record.get("call", block.raw))
            else:
                continue
            blocks = list(messages[m].blocks)
            blocks[b] = new
            messages[m] = messages[m].with_blocks(tuple(blocks))
            restored += 1
            break
    return transcript.with_messages(messages), restored
