"""OpenAI Responses API request bodies (`input` items): `reader` (the reader and writer), and
`rewrites` (compaction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapter import Format
from . import reader

if TYPE_CHECKING:
    from ...core.model import Message, Transcript


class ResponsesFormat(Format):
    """The adapter: its rewrite is imported when compact first asks for it."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, readable = staticmethod(reader.detect), staticmethod(reader.readable)
    read, write = staticmethod(reader.read), staticmethod(reader.write)

    def append_compaction(self, transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                          *, drop_history: bool = False) -> Transcript:
        from .rewrites import append_compaction

        return append_compaction(transcript, summary, recent, pre_tokens, drop_history=drop_history)


FORMAT = ResponsesFormat()
