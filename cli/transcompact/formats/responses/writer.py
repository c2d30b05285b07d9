"""Responses API request bodies written back: the items before the active compaction as they were, each
message's blocks as the items they came from, in the document's own layout."""

from __future__ import annotations

from typing import Any

from ...core.model import Transcript
from ..codex.reader import _Origin, is_unchanged
from ..codex.writer import message_items
from .reader import (
    InputSource,
)


def write(transcript: Transcript) -> bytes:
    source: InputSource = transcript.source
    origins = [m.origin for m in transcript.messages]
    read_as = [i for o in origins if isinstance(o, _Origin) for i in o.items]
    if read_as == list(range(source.active, len(source.items))) and all(map(is_unchanged, transcript.messages)):
        return source.data
    values = [item.value for item in source.items[:source.active]]
    values += [value for message in transcript.messages for _, value in message_items(message, source.items)]
    return source.layout.dumps(with_items(source, values))


def with_items(source: InputSource, values: list) -> Any:
    """The document with `values` as its items."""
    return {**source.document, "input": values} if source.path else values
