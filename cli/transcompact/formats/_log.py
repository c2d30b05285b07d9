"""What the agent logs share in reading their lines and writing them back: the origin of a message
(`LineOrigin`: the blocks it was read as, by which a message a rewrite left as it was is told from
one it changed, and written as the very lines it came from), the write-back itself (`written_back`:
the lines kept as they were, changed, dropped, and new ones after the line they follow), the parent
a line hangs from once lines are dropped (`surviving_parent`), and the values of a line's fields
(`string_or_empty`, `arguments`).

Each agent's writer (`writer.py` of its package) works out what its messages' changes do to its
lines, hands them to `written_back`, and then restates the usage its agent judges the size of its
context by (each writer's `restated_usage`: the recorded prompt less what the change took out
before it, by the model the operation counted with, `restating_ratio`, so that the agent does
not compact, or refuse, a log a rewrite shrank, and `estimate` of it says what the rewrite did).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from ..core.jsondata import CutLine, Record, compact_json
from ..core.media import IMAGE_UNKNOWN_TOKENS, image_tokens, pdf_tokens
from ..core.model import Document, Image, RedactedThinking, Text, Thinking, ToolCall, ToolResult
from ..dialects.openai import decode_arguments

if TYPE_CHECKING:
    from ..core.model import Block, Message, Transcript


# What a character costs where no model says (`Transcript.tokens_per_char` None): the estimator's
# quarter, and the agents' own estimate (4 characters a token).
TOKENS_PER_CHAR = 0.25


def restating_ratio(transcript: Any) -> float:
    """The tokens a character a rewrite took out of a prompt took out of the usage recorded for it:
    the model's the operation counted with (`Transcript.tokens_per_char`; 0: none restated), else
    `TOKENS_PER_CHAR`."""
    ratio = transcript.tokens_per_char
    return ratio if ratio is not None and ratio >= 0 else TOKENS_PER_CHAR


# The prompt each message of a transcript is sent after, by the model a compaction is counted with
# (`TokenCounter.prompts`; None: no model says it): what `append_compaction` restates the usage of
# the responses it keeps to, so that the compacted log's usage lies on that model.
Prompts = Callable[["Transcript"], "list[int] | None"]


def cost(block: Block, ratio: float, frame: float = 0.0) -> float:
    """A block's tokens by the run's model, as `counting.counter.pieces` measures it: its characters
    (a text, a call's name and input as compact JSON, a thinking, a result's content) times `ratio`,
    an image's or a document's figure (`priced`), and the `frame` every block costs besides
    (`Transcript.tokens_per_block`)."""
    characters, tokens = priced(block)
    return characters * ratio + tokens + frame


def priced_all(blocks: Iterable[Block]) -> tuple[int, int]:
    """`priced` of blocks together: their characters and their tokens besides."""
    parts = [priced(block) for block in blocks]
    return sum(characters for characters, _ in parts), sum(tokens for _, tokens in parts)


def priced(block: Block) -> tuple[int, int]:
    """What a block costs, as `cost` counts it: its characters (each `ratio` tokens) and the
    tokens it costs besides (an image's, a document's figure); all a write needs of blocks an
    operation replaced, where their content is let go of."""
    if isinstance(block, Text):
        return len(block.text), 0
    if isinstance(block, ToolResult):
        content = block.content
        return (len(content), 0) if isinstance(content, str) else priced_all(content)
    if isinstance(block, ToolCall):
        return len(block.name + compact_json(block.input)), 0
    if isinstance(block, Thinking):
        return len(block.thinking), 0
    if isinstance(block, RedactedThinking):
        return len(block.data), 0
    if isinstance(block, Image):
        return 0, image_tokens(block.data) if block.data else IMAGE_UNKNOWN_TOKENS
    if isinstance(block, Document):
        return (0, pdf_tokens(block.data)) if block.data and not (block.media_type or "").startswith("text/") else (len(block.data or ""), 0)
    return len(compact_json(block.raw)) if block.raw is not None else 0, 0


Line = TypeVar("Line")  # what a log is a sequence of: a line's (bytes, value), or a record
Rewritten = tuple["bytes | memoryview | CutLine | None", Any, "int | None"]  # a line written: bytes, value, the line it was read from (None: new)


def written_back(lines: Sequence[Line], *, dropped: Collection[int] = (), changed: Mapping[int, Line] | None = None,
                 inserted: Mapping[int, Sequence[Line]] | None = None) -> list[tuple[Line, int | None]]:
    """The lines of a log after a rewrite, each with the place it was read from (None: a new line):
    every line as it was, in its place, but those `dropped`, those `changed` (by place: what each
    becomes), and after a line the new ones `inserted` after it (at -1: before the first). A line
    no message was read from stays as it was: a rewrite changes only what it changes."""
    changed, inserted = changed or {}, inserted or {}
    out: list[tuple[Line, int | None]] = [(new, None) for new in inserted.get(-1, ())]
    for index, line in enumerate(lines):
        if index not in dropped:
            out.append((changed.get(index, line), index))
        out.extend((new, None) for new in inserted.get(index, ()))
    return out


@dataclass(frozen=True)
class Slimming:
    """What of a log its agent never sends, by line (`Format.slimming`, for `slim`): the lines to
    drop, each with what it holds (named for the user: what is lost with it); in the lines kept,
    the members to take out (None) or to give another value (its JSON), each member's key named
    for the user in `fields`; and for a log whose agent replays it (Gemini CLI's), lines written
    anew (`replaced`: their text, which may be several lines) and the lines whose text is now
    in them (`merged`), which go without being counted as dropped."""

    dropped: Mapping[int, str] = field(default_factory=dict)
    edits: Mapping[int, Mapping[str, bytes | None]] = field(default_factory=dict)
    fields: Mapping[str, str] = field(default_factory=dict)
    replaced: Mapping[int, Sequence[Record]] = field(default_factory=dict)
    merged: Collection[int] = frozenset()


class LineOrigin:
    """The base of a log's `_Origin`, which each message read from its lines holds (`Message.origin`):
    where in the log it came from, and the blocks it was read as (`blocks`)."""

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def blocks(self) -> tuple[Block, ...]: ...

    @classmethod
    def unchanged(cls, message: Message) -> bool:
        """Whether `message` was read from the log as it is (an origin of this format's, and the
        same blocks): it is written back as the lines it came from."""
        origin = message.origin
        return isinstance(origin, cls) and message.blocks == origin.blocks


def surviving_parent(parent: Any, skip: Mapping[Any, Any]) -> Any:
    """The id a line hangs from once the lines of `skip` (a dropped line's id → the id it hung
    from) are dropped: `parent`, or its nearest ancestor kept. A parent that is not a string (a
    hand-edited line may hold anything there) ends the walk, and so does a cycle."""
    seen = set()
    while isinstance(parent, str) and parent in skip and parent not in seen:
        seen.add(parent)
        parent = skip[parent]
    return parent


def string_or_none(value: Any) -> str | None:
    """A field's value where it is a string (a hand-edited line may hold anything there), else None."""
    return value if isinstance(value, str) else None


def string_or_empty(value: Any) -> str:
    """A field's value where it is a string, else "" (a field missing or of another type)."""
    return value if isinstance(value, str) else ""


def arguments(original: Any, value: Any) -> Any:
    """A call's arguments as written back: the value read (`original`, a JSON string) where it still
    decodes to `value`, else `value` as JSON text."""
    if decode_arguments(original) == value:
        return original
    return value if isinstance(value, str) else orjson.dumps(value).decode()
