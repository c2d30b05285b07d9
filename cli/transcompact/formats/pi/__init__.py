"""pi's sessions (`~/.pi/agent/sessions/**/*.jsonl`): `reader` (the session read into
messages), `writer` (the messages written back into its entries), `rules` (the session's own rules:
check, repair), `rewrites` (compaction), and `slim` (what pi never sends when it resumes).
"""

from __future__ import annotations

from ..adapter import Format, lazy
from . import reader


class PiFormat(Format):
    """The adapter: the session's rules and rewrites are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, read = staticmethod(reader.detect), staticmethod(reader.read)
    write, slimming = lazy("writer"), lazy("slim")
    answers_each_message = True
    reload, blocks_as_sent = staticmethod(reader.reload), staticmethod(reader.blocks_as_sent)
    check_log, repair_log = lazy("rules"), lazy("rules")
    append_compaction, summary_wording, view_before_compaction = lazy("rewrites"), lazy("rewrites"), lazy("rewrites")


FORMAT = PiFormat()
