"""Gemini CLI's chat recordings (`~/.gemini/tmp/*/chats/*.json[l]`): `reader` (the reader and
writer), and `rewrites` (compaction, UI copies).
"""

from __future__ import annotations

from ..adapter import Format, lazy
from . import reader


class GeminiFormat(Format):
    """The adapter: the chat's rewrites are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    # Gemini CLI 0.61 records each tool result twice and sends both (the agents' issue): check and
    # repair do not count its own copy as a second answer (check.results_twice).
    results_twice = True
    answers_each_message = True  # a record holds its calls' results: they follow its model turn
    detect, read, write = staticmethod(reader.detect), staticmethod(reader.read), staticmethod(reader.write)
    rewrites_lines, unrecorded_messages = staticmethod(reader.rewrites_lines), staticmethod(reader.unrecorded_messages)
    append_compaction, replace_ui_copies = lazy("rewrites"), lazy("rewrites")


FORMAT = GeminiFormat()
