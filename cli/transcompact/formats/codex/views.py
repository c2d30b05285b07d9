"""What a count and `check` need of a Codex `response_item` line (`parsing.line_view`, for
`loads(lazily=True)`): the line is read, and its item made into blocks by the reader's own
`item_blocks`, then only the sizes of those blocks are kept (`parsing.ViewedItemLine`), and of
the item what the reader tells items apart by. A rollout's tool outputs, replies and calls are
then held as figures; the reader leaves the messages made of such items unread, and reads them
from their lines when asked for (`reader._ReadLater`), as a write reads them (`parsing.whole_value`).

An item is viewed where every block the reader makes of it has a size (`block_size`): an opaque
item (reasoning, a web search) is one that counts as nothing, having no `raw` in a Codex reading;
a `compaction` item, which a count reads otherwise, has none. A user's (or developer's) message is
not viewed: the reader looks at its text to tell the user's words from context Codex injected.
"""

from __future__ import annotations

import sys
from typing import Any

from ...core.errors import TranscompactError
from ...core.jsondata import PartialLine, parse_value
from ...core.model import ASSISTANT, BlockSize, block_size
from .parsing import LINE_KEYS, one_of_each
from .reader import is_sent, item_blocks, item_kind


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
    if type(payload) is not dict or (sizes := _sizes(payload)) is None or None in sizes:
        return value
    kept = kind((key, field) for key, field in value.items() if key != "payload")
    kept["type"] = "response_item"
    kept["payload"] = _fields(payload)
    kept.seen = sizes
    return kept


def _sizes(item: dict) -> tuple[BlockSize | None, ...] | None:
    """The sizes of the blocks the reader makes of `item` (none of an item Codex does not send; None
    for a block no view holds), or None where it is read whole: a user's or developer's message."""
    if not is_sent(item):
        return ()
    if item_kind(item) == "message" and item.get("role") != ASSISTANT:
        return None
    return tuple(block_size(block) for block in item_blocks(item, 0))


def _fields(item: dict) -> dict:
    """What the reader tells items apart by (`item_kind`, `is_sent`, `turns`): `type` and `role`."""
    return one_of_each({key: sys.intern(field) if type(field) is str else field for key in ("type", "role") if key in item
                        for field in (item[key],)})
