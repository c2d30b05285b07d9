"""What the agent logs share in reading their lines and writing them back: the origin of a message
(`LineOrigin`: the blocks it was read as, by which a message a rewrite left as it was is told from
one it changed, and written as the very lines it came from), the parent a line hangs from once
lines are dropped (`surviving_parent`), and the values of a line's fields (`string_or_empty`,
`arguments`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from ..dialects.openai import decode_arguments

if TYPE_CHECKING:
    from ..core.model import Block, Message


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


def string_or_empty(value: Any) -> str:
    """A field's value where it is a string, else "" (a field missing or of another type)."""
    return value if isinstance(value, str) else ""


def arguments(original: Any, value: Any) -> Any:
    """A call's arguments as written back: the value read (`original`, a JSON string) where it still
    decodes to `value`, else `value` as JSON text."""
    if decode_arguments(original) == value:
        return original
    return value if isinstance(value, str) else orjson.dumps(value).decode()
