"""Gemini CLI's chat recordings (`~/.gemini/tmp/*/chats/*.json[l]`): `parsing` (the format's
names, and what a count reads of a log's line before the format is known), `reader` (the chat
read into messages), `records` (the typed view of a record), `views` (a legacy chat read for counting and pruning,
its records' messages left unread),
`writer` (the messages written back into its records), `rewrites` (compaction, UI copies), and
`slim` (what Gemini never sends when it resumes).
"""

from __future__ import annotations

from typing import Any

from ..adapter import Format, lazy
from . import parsing


def _line_view(text: memoryview) -> Any:
    """The view of a line that begins as Gemini CLI begins a message record's (`records.line_view`);
    None for any other line (another format's too), without importing the typed decoder."""
    if text[:len(parsing.RECORD_LINE)] != parsing.RECORD_LINE:
        return None
    from . import records

    return records.line_view(text, parsing.ViewedRecordLine)


class GeminiFormat(Format):
    """The adapter: the chat's reader, views and rewrites are imported when an operation first
    asks for them (every JSON Lines input read lazily asks its line view: `parsing`)."""

    name, description, lines = parsing.NAME, parsing.DESCRIPTION, parsing.LINES
    # Gemini CLI 0.61 records each tool result twice and sends both (the agents' issue): check and
    # repair do not count its own copy as a second answer (check.results_twice).
    results_twice = True
    answers_each_message = True  # a record holds its calls' results: they follow its model turn
    detect, read = lazy("reader"), lazy("reader")
    read_quickly = lazy("views")  # the legacy document, for counting and pruning
    line_view, partial_line = staticmethod(_line_view), parsing.ViewedRecordLine  # the JSON Lines log
    rewrites_viewed_lines = True  # its writer reads a viewed line whole only where a record of it changed
    rereads_viewed_lines = True  # a record's messages are read once while read one after another (`reader.LastRead`)
    write, write_lines, read_back = lazy("writer"), lazy("writer"), lazy("writer")
    rewrites_lines, unrecorded_messages = lazy("writer"), lazy("reader")
    view_before_compaction = lazy("reader")
    append_compaction, replace_ui_copies = lazy("rewrites"), lazy("rewrites")
    slimming = lazy("slim")


FORMAT = GeminiFormat()
