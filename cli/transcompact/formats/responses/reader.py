"""OpenAI Responses API input (`openai-python` `types/responses/response_input_item_param.py`): a
request body whose `input` is a list of items, or that list on its own.

Items are read as Codex reads its own (the same API): each user, system or developer `message` is a
message, each `function_call_output` (`custom_tool_call_output`) a `tool` message answering its call
by `call_id`, and the items of an assistant turn between them (reasoning, text, `function_call`,
`custom_tool_call` and every other tool item) one assistant message. That is the Chat Completions
pairing, so check applies the OpenAI rules. Unknown items and fields are kept as they are.

A `compaction` item (`encrypted_content`, made by `/responses/compact` or by the API's own
`context_management`) is opaque: a message of its own, counted as its bytes, never summarized. The
API may drop every item before the newest one, so those items are not read: they are written back
as they were, before the messages.

`instructions` is the system part and `tools` the tool schemas (both read only). A write puts the
items of the messages back in place of the active ones; the bytes read, when nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...core.errors import Location, ShapeError
from ...core.jsondata import Layout, Parsed
from ...core.model import Block, Message, Opaque, Text, Transcript
from ..codex.reader import Item, _Origin, item_blocks, item_kind, turns

NAME = "responses"
DESCRIPTION = "OpenAI Responses API input items (a request body with `input`, or an array of items)"
LINES = False  # the document is written again whole

COMPACTION = "compaction"
# Content part types only the Responses API has (Chat Completions has `text`, `image_url`, `input_audio`,
# `file`, `refusal`).
RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
ROLES = frozenset({"user", "assistant", "system", "developer"})  # a `tool` or `function` message is Chat Completions' own


@dataclass(frozen=True)
class InputSource:
    document: Any  # a request body or the array of items
    path: tuple[str, ...]  # where the items sit in it: ("input",) or () (prune's archive records them there)
    items: tuple[Item, ...]  # every item of the list; `Item.slot` is its index
    active: int  # the index of the first item the API reads: the newest compaction, else 0
    layout: Layout
    data: bytes


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    return messages_path is None and parsed.is_document and find_items(parsed.document, plain=False) is not None


def readable(parsed: Parsed, messages_path: str | None = None) -> bool:
    """Whether the input reads as Responses input when it is named so (`--format`, or a rewrite's
    output read back): an array of plain role/content messages is, though detection leaves it to
    the other formats."""
    return messages_path is None and parsed.is_document and find_items(parsed.document, plain=True) is not None


def find_items(document: Any, *, plain: bool = True) -> list | None:
    """The items of a request body (`input` is a Responses-only field) or of an array; without
    `plain`, an array must hold a Responses-only shape: a list of plain role/content messages is
    left to the Chat Completions and Messages formats, which read it alike."""
    if isinstance(document, dict):
        items = document.get("input")
        if isinstance(items, list) and "messages" not in document and all(map(_is_item, items)):
            return items
        return None
    if (isinstance(document, list) and all(_is_item(i) for i in document)
            and (plain or any(_responses_only(i) for i in document))):
        return document
    return None


def _is_item(value: Any) -> bool:
    """A message of a role the API takes, or an object with a `type` (an `item_reference` may leave
    it out: it has an `id`)."""
    if not isinstance(value, dict):
        return False
    if "role" in value:
        return isinstance(value["role"], str) and value["role"] in ROLES
    return isinstance(value.get("type"), str) or isinstance(value.get("id"), str)


def _responses_only(item: dict) -> bool:
    """A typed item (no Chat Completions or Messages API message has a `type`), or Responses content parts."""
    if "type" in item:
        return True
    content = item.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and isinstance(p.get("type"), str) and p["type"] in RESPONSES_PARTS
                                             for p in content)


def newest_compaction(values: list) -> int | None:
    return next((i for i in range(len(values) - 1, -1, -1) if item_kind(values[i]) == COMPACTION), None)


def read(parsed: Parsed, messages_path: str | None = None) -> Transcript:
    values = find_items(parsed.document)
    if values is None:  # what detection and `readable` rule out, as `_document.read` does
        raise ShapeError("no list of Responses input items found", location=Location(parsed.name))
    items = tuple(Item(value, 0, slot) for slot, value in enumerate(values))
    active = newest_compaction(values) or 0
    messages = []
    for role, indices in turns(values[active:]):
        indices = [active + i for i in indices]
        blocks = tuple(_counted_as_its_bytes(b, values[i]) for i in indices for b in item_blocks(values[i], i))
        messages.append(Message(role, blocks, raw=values[indices[0]], origin=_Origin(tuple(indices), blocks)))
    in_body = isinstance(parsed.document, dict)
    body = parsed.document if in_body else {}
    instructions = body.get("instructions")
    tools = body.get("tools")
    return Transcript(
        format=NAME, dialect="openai", messages=tuple(messages),
        system=(Text(instructions),) if isinstance(instructions, str) and instructions else (),
        tools=tuple(tools) if isinstance(tools, list) else (),
        request={k: v for k, v in body.items() if k not in ("input", "instructions", "tools")},
        name=parsed.name,
        source=InputSource(parsed.document, ("input",) if in_body else (), items, active, Layout.of(parsed.data), parsed.data))


def _counted_as_its_bytes(block: Block, item: dict) -> Block:
    """A compaction block with its item as `raw`, which estimate counts (the API reads it encrypted)."""
    return replace(block, raw=item) if isinstance(block, Opaque) and block.type == COMPACTION else block
