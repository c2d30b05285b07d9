"""Gemini CLI's chat recordings (`~/.gemini/tmp/*/chats/*.json[l]`): `reader` (the chat read
into messages), `views` (a legacy chat read for counting and pruning, its records' messages left unread),
`writer` (the messages written back into its records), `rewrites` (compaction, UI copies), and
`slim` (what Gemini never sends when it resumes).
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
    detect, read = staticmethod(reader.detect), staticmethod(reader.read)
    read_quickly = lazy("views")  # the legacy document, for counting and pruning
    write, read_back = lazy("writer"), lazy("writer")
    rewrites_lines, unrecorded_messages = lazy("writer"), staticmethod(reader.unrecorded_messages)
    view_before_compaction = staticmethod(reader.view_before_compaction)
    append_compaction, replace_ui_copies = lazy("rewrites"), lazy("rewrites")
    slimming = lazy("slim")


FORMAT = GeminiFormat()
