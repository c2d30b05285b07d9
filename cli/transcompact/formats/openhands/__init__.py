"""OpenHands: conversations (event directories or their bundle): `reader` (read and written),
`rules`, `rewrites`; and `v0` trajectories (read only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapter import Format, LineFix
from . import reader

if TYPE_CHECKING:
    from ...core.model import Message, Transcript
    from ...core.violation import Violation


class OpenHandsFormat(Format):
    """The adapter of a conversation (the V0 events have theirs in v0.py): its rules and rewrites
    are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, read, write = staticmethod(reader.detect), staticmethod(reader.read), staticmethod(reader.write)

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


FORMAT = OpenHandsFormat()
