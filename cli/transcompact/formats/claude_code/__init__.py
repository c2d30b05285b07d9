"""Claude Code's session logs (`~/.claude/projects/*/*.jsonl`): the reader and writer, the
log's own rules (check, repair), and its rewrites (compaction, UI copies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapter import Format, LineFix
from . import reader

if TYPE_CHECKING:
    from ...core.model import Message, Transcript
    from ...core.violation import Violation


class ClaudeCodeFormat(Format):
    """The adapter: the log's rules and rewrites are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, read, reload = staticmethod(reader.detect), staticmethod(reader.read), staticmethod(reader.reload)
    write, write_lines = staticmethod(reader.write), staticmethod(reader.write_lines)
    trim, lazy_trim = staticmethod(reader.linking_fields), staticmethod(reader.viewed_lines)

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

    def replace_ui_copies(self, transcript: Transcript) -> Transcript:
        from .rewrites import replace_ui_copies

        return replace_ui_copies(transcript)

    def agent_lines(self, transcript: Transcript) -> frozenset[int]:
        from .rewrites import agent_lines

        return agent_lines(transcript)

    def view_before_compaction(self, transcript: Transcript) -> Transcript | None:
        from .rewrites import view_before_compaction

        return view_before_compaction(transcript)


FORMAT = ClaudeCodeFormat()
