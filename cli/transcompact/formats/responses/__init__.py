"""OpenAI Responses API request bodies (`input` items): `reader` (the body read into messages),
`writer` (the messages written back into its items), and `rewrites` (compaction).
"""

from __future__ import annotations

from ..adapter import Format, lazy
from . import reader


class ResponsesFormat(Format):
    """The adapter: its writer and rewrite are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, readable = staticmethod(reader.detect), staticmethod(reader.readable)
    read, write = staticmethod(reader.read), lazy("writer")
    append_compaction = lazy("rewrites")


FORMAT = ResponsesFormat()
