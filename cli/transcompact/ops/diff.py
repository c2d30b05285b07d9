"""What a rewrite changed, message by message and block by block: what `--diff` shows.

`diff(before, after)` matches the messages of a transcript and its rewrite, then the blocks of
each matched pair, and lists what differs. Matching goes from strict to loose, each step only
over what the one before left unmatched:

1. equal content: a message (or block) the rewrite kept as it was;
2. the same tool call ids, or for a message without any the same text: a message whose tool
   results prune trimmed, whose thinking compact dropped, whose empty text repair removed (and
   for a block: the same kind and tool call id);
3. position, where what is left on both sides is as long and has the same roles (kinds): a
   tool call id repair renamed.

Whatever stays unmatched was removed or added: a compaction's old part is removed and its
summary pair added, while the recent window is matched, changed only where it was pruned.
Tokens are the content estimate of each block (the counting options' tokenizer, no 4 per
message, no recorded-usage anchor), so they add up across changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher
from typing import Any

from ..core.jsondata import compact_json
from ..core.model import Block, Message, ServerToolCall, ServerToolResult, Text, ToolCall, ToolResult, Transcript, tool_names
from ..counting.counter import Options, _measure, pieces
from .validity.postcondition import comparable

EXCERPT_CHARS = 80  # of an excerpt, on one line
CONTEXT_CHARS = 12  # kept before the first difference of a replaced block, to show where it starts


@dataclass(frozen=True)
class BlockChange:
    """One block removed, added, or replaced by another (`block_before` and `block_after` are its
    positions in its message)."""

    action: str  # "removed", "added" or "replaced"
    kind: str  # text, thinking, redacted_thinking, tool_call, tool_result, image, document, or the wire type
    block_before: int | None
    block_after: int | None
    tokens_before: int
    tokens_after: int
    excerpt_before: str | None  # what goes (from its first difference, when replaced); None when added
    excerpt_after: str | None  # what replaces it (the marker, the placeholder); None when removed
    tool: str | None = None  # the tool a call or result is of
    tool_call_id: str | None = None  # its call id (after the rewrite, where it has one)
    tool_call_id_before: str | None = None  # the call id it had, where the rewrite renamed it (repair: an id used twice)


@dataclass(frozen=True)
class MessageChange:
    """One message removed, added, or changed (matched to one in the rewrite, some blocks differing)."""

    action: str  # "removed", "added" or "changed"
    role: str
    index_before: int | None
    index_after: int | None
    tokens_before: int
    tokens_after: int
    blocks: tuple[BlockChange, ...]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def diff(before: Transcript, after: Transcript, counting: Options = Options()) -> list[MessageChange]:
    """What differs between `before` and its rewrite `after`, in message order (see the module
    docstring); empty when the messages are the same. Counted with `counting`'s tokenizer."""
    measure, ratio, _ = _measure(counting)

    def tokens(block: Block) -> int:
        return sum(value if isinstance(value, int) else int(measure(value) * (ratio or 1)) for _, value in pieces(block))

    names = (tool_names(before.messages), tool_names(after.messages))  # each side's: an id used twice names two tools
    changes = []
    for i, j in _matched(before.messages, after.messages, (_same_message, _same_turn), _message_role):
        old = before.messages[i] if i is not None else None
        new = after.messages[j] if j is not None else None
        if old is not None and new is not None and _same_message(old) == _same_message(new):
            continue
        old_blocks, new_blocks = old.blocks if old else (), new.blocks if new else ()
        blocks = tuple(_block_change(old, new, k, m, tokens, names)
                       for k, m in _matched(old_blocks, new_blocks, (comparable, _same_block), _kind)
                       if not (k is not None and m is not None and comparable(old_blocks[k]) == comparable(new_blocks[m])))
        either = old or new
        assert either is not None  # _matched pairs at least one message
        changes.append(MessageChange("changed" if old and new else "removed" if old else "added", either.role, i, j,
                                     sum(map(tokens, old.blocks)) if old else 0, sum(map(tokens, new.blocks)) if new else 0,
                                     blocks))
    return changes


def _matched(before: Sequence, after: Sequence, keys: Sequence[Callable[[Any], Hashable]],
             shape: Callable[[Any], Hashable]) -> Iterator[tuple[int | None, int | None]]:
    """(i, j) for each item of `before` matched to one of `after`, (i, None) for one removed and
    (None, j) for one added, in order: matched by each of `keys` in turn over what the previous
    left, then by position where the rest has the same `shape` on both sides."""
    if not keys:
        if len(before) == len(after) and all(shape(a) == shape(b) for a, b in zip(before, after)):
            yield from zip(range(len(before)), range(len(after)))
        else:
            yield from ((i, None) for i in range(len(before)))
            yield from ((None, j) for j in range(len(after)))
        return
    if len(before) == len(after) and all(map(lambda a, b: keys[-1](a) == keys[-1](b), before, after)):
        # One for one, in order (a prune, a repair that changed messages in place): matched by
        # position, as the matcher would, where its matching takes the square of a long
        # transcript's length when its messages repeat.
        yield from zip(range(len(before)), range(len(after)))
        return
    matcher = SequenceMatcher(None, [keys[0](a) for a in before], [keys[0](b) for b in after], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            yield from zip(range(i1, i2), range(j1, j2))
            continue
        for i, j in _matched(before[i1:i2], after[j1:j2], keys[1:], shape):
            yield (None if i is None else i1 + i), (None if j is None else j1 + j)


def _same_message(message: Message) -> Hashable:
    return message.role, tuple(map(comparable, message.blocks))


def _same_turn(message: Message) -> Hashable:
    """What survives a rewrite of a message: its tool call ids, or when it has none, its text."""
    ids = tuple(_call_id(b) for b in message.blocks if _call_id(b) is not None)
    return message.role, ids or "".join(b.text for b in message.blocks if isinstance(b, Text))


def _message_role(message: Message) -> str:
    return message.role


def _same_block(block: Block) -> Hashable:
    return _kind(block), _call_id(block)


def _call_id(block: Block) -> str | None:
    if isinstance(block, (ToolCall, ServerToolCall)):
        return block.id
    if isinstance(block, (ToolResult, ServerToolResult)):
        return block.tool_call_id
    return None


def _kind(block: Block) -> str:
    wire_type = getattr(block, "type", None)  # server tools and blocks the model does not name
    if isinstance(wire_type, str):
        return wire_type
    name = type(block).__name__
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def _block_change(old: Message | None, new: Message | None, k: int | None, m: int | None,
                  tokens: Callable[[Block], int], names: tuple[dict[str, str], dict[str, str]]) -> BlockChange:
    gone = old.blocks[k] if old is not None and k is not None else None
    kept = new.blocks[m] if new is not None and m is not None else None
    block = gone or kept
    assert block is not None  # _matched pairs at least one block
    before, after = _content(gone) if gone else None, _content(kept) if kept else None
    start = len(os.path.commonprefix([before, after])) if before is not None and after is not None else 0
    start = max(0, start - CONTEXT_CHARS)
    call_id = _call_id(kept if kept is not None else block)
    was = _call_id(gone) if gone is not None else None
    side = names[1] if kept is not None else names[0]
    tool = block.name if isinstance(block, (ToolCall, ServerToolCall)) else side.get(call_id) if call_id else None
    return BlockChange("replaced" if gone and kept else "removed" if gone else "added", _kind(block), k, m,
                       tokens(gone) if gone else 0, tokens(kept) if kept else 0,
                       None if before is None else excerpt(before, start), None if after is None else excerpt(after, start),
                       tool, call_id, was if kept is not None and was != call_id else None)


def _content(block: Block) -> str:
    """The block's text as a reader would look for it: a call as its name and its input."""
    if isinstance(block, (ToolCall, ServerToolCall)):
        return f"{block.name} {compact_json(block.input)}"
    return "".join(value for _, value in pieces(block) if isinstance(value, str))


def excerpt(text: str, start: int = 0) -> str:
    """`text` from `start` on one line (each run of white space one space), cut to EXCERPT_CHARS;
    `…` where something was left out."""
    flat = " ".join(text[start:start + 4 * EXCERPT_CHARS].split())  # enough to fill a line, however spaced
    cut = len(flat) > EXCERPT_CHARS or start + 4 * EXCERPT_CHARS < len(text)
    return ("…" if start else "") + flat[:EXCERPT_CHARS] + ("…" if cut else "")
