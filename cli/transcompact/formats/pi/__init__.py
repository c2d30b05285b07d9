"""pi's sessions (`~/.pi/agent/sessions/**/*.jsonl`): `reader` (the reader and writer), `rules`
(the session's own rules: check, repair), and `rewrites` (compaction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapter import Format, LineFix
from . import reader

if TYPE_CHECKING:
    from ...core.model import Message, Transcript
    from ...core.summary_text import SummaryText
    from ...core.violation import Violation


class PiFormat(Format):
    """The adapter: the session's rules and rewrites are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, read, write = staticmethod(reader.detect), staticmethod(reader.read), staticmethod(reader.write)
    answers_each_message = True
    reload = staticmethod(reader.reload)

    def check_log(self, transcript: Transcript, path: str | None) -> list[Violation]:
        from .rules import check_log

        return check_log(transcript, path)

    def repair_log(self, transcript: Transcript) -> tuple[Transcript, list[LineFix]]:
        from .rules import repair_log

        return repair_log(transcript)

    def append_compaction(self, transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                          *, drop_history: bool = False) -> Transcript:
        from .rewrites import append_compaction

        return append_compaction(transcript, summary, recent, pre_tokens, drop_history=drop_history)

    def summary_wording(self, summary: SummaryText) -> str:
        from .rewrites import summary_wording

        return summary_wording(summary)

    def view_before_compaction(self, transcript: Transcript) -> Transcript | None:
        from .rewrites import view_before_compaction

        return view_before_compaction(transcript)


FORMAT = PiFormat()
