"""What a count and `check` need of a Codex `response_item` line (`parsing.line_view`, for
`loads(lazily=True)`): the line is read, and its item made into blocks by the reader's own
`item_blocks`, then only the sizes of those blocks are kept (`parsing.ViewedItemLine`), and of
the item what the reader tells items apart by. A rollout's tool outputs, replies and calls are
then held as figures; the reader leaves the messages made of such items unread, and reads them
from their lines when asked for (`reader._ReadLater`), as a write reads them (`parsing.whole_value`).

An item is viewed where every block the reader makes of it has a size (`block_size`): an opaque
item (reasoning, a web search) is one that counts as nothing, having no `raw` in a Codex reading.
A user's (or developer's) message is not viewed: the reader looks at its text to tell the user's
words from context Codex injected. Nor is a `compaction` item, which a count reads otherwise.
"""

from __future__ import annotations

import sys
from typing import Any

import orjson

from ...core.errors import TranscompactError
from ...core.jsondata import PartialLine, parse_value
from ...core.model import ASSISTANT, BlockSize, Opaque, block_size
from .parsing import LINE_KEYS
from .reader import is_sent, item_blocks, item_kind

_FIELDS: dict[bytes, dict] = {}  # the item fields views keep, one of each (values are never changed in place)


def item_view(text: memoryview, kind: type[PartialLine]) -> Any:
    """The view of a `response_item` line: a `kind` (`parsing.ViewedItemLine`) that has seen the
    sizes of its item's blocks; the line's value whole where the item has no view; None where the
    line does not read as JSON, or as a Codex line (the full reading says what it is)."""
    try:
        value = parse_value(bytes(text), "", 0)
    except (TranscompactError, RecursionError):
        return None
    if type(value) is not dict or value.get("type") != "response_item" or not value.keys() <= LINE_KEYS:
        return None
    payload = value.get("payload")
    if type(payload) is not dict or (sizes := _sizes(payload)) is None:
        return value
    kept = kind((key, field) for key, field in value.items() if key != "payload")
    kept["type"] = "response_item"
    kept["payload"] = _fields(payload)
    kept.seen = sizes
    return kept


def _sizes(item: dict) -> tuple[BlockSize, ...] | None:
    """The sizes of the blocks the reader makes of `item` (none of an item Codex does not send), or
    None where it is read whole."""
    if not is_sent(item):
        return ()
    kind = item_kind(item)
    if kind == "compaction" or kind == "message" and item.get("role") != ASSISTANT:
        return None
    sizes = []
    for block in item_blocks(item, 0):
        if type(block) is Opaque:
            if block.raw is not None:
                return None
            sizes.append(BlockSize(Opaque, 0, name=block.type))  # counted as nothing, as `counter.pieces` counts it
        elif (size := block_size(block)) is not None:
            sizes.append(size)
        else:
            return None
    return tuple(sizes)


def _fields(item: dict) -> dict:
    """What the reader tells items apart by (`item_kind`, `is_sent`, `turns`): `type` and `role`."""
    fields = {key: sys.intern(field) if type(field) is str else field for key in ("type", "role") if key in item
              for field in (item[key],)}
    try:
        key = orjson.dumps(fields)
    except TypeError:  # (a number beyond 64 bits: kept alone)
        return fields
    return _FIELDS.setdefault(key, fields) if len(_FIELDS) < 1000 else _FIELDS.get(key, fields)
