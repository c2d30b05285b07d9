"""pi's sessions (`~/.pi/agent/sessions/**/*.jsonl`): `parsing` (the format's names, and what a
count reads of a line before the format is known), `reader` (the session read into messages),
`views` (what a count needs of a message entry, read without parsing it), `writer` (the messages
written back into its entries), `rules` (the session's own rules: check, repair), `rewrites`
(compaction), and `slim` (what pi never sends when it resumes).
"""

from __future__ import annotations

from typing import Any

from ..adapter import Format, lazy
from . import parsing


class PiFormat(Format):
    """The adapter: the session's reader, rules and rewrites are imported when an operation first
    asks for them (every JSON Lines input read for counting asks its line view: `parsing`)."""

    name, description, lines = parsing.NAME, parsing.DESCRIPTION, parsing.LINES
    detect, read, reload, blocks_as_sent = lazy("reader"), lazy("reader"), lazy("reader"), lazy("reader")
    line_view, partial_line = staticmethod(parsing.line_view), parsing.ViewedEntry
    rewrites_viewed_lines = True  # its writer reads a viewed line whole only where it makes a new entry of it
    write, write_lines, slimming = lazy("writer"), lazy("writer"), lazy("slim")
    answers_each_message = True
    tree_members = ("id", "parentId")
    check_log, repair_log = lazy("rules"), lazy("rules")
    # What pi needs of a session it resumes, checked by rules.py.
    rule_texts = {
        "P1": "a compaction's first kept entry is on the path before it and is no toolResult",
        "P2": "no compaction comes between a toolCall and its result",
        "P3": "every parentId on the path pi resumes names an entry",
        "P4": "every entry of a version 2 or 3 session has an id and a parentId",
    }
    append_compaction, summary_wording, view_before_compaction = lazy("rewrites"), lazy("rewrites"), lazy("rewrites")

    def leaf_of(self, transcript: Any) -> Any:
        path = transcript.source.path
        value = transcript.source.records[path[-1]][1] if path else None
        return value.get("id") if isinstance(value, dict) else None


FORMAT = PiFormat()
