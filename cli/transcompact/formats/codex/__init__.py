"""Codex CLI's rollouts (`~/.codex/sessions/**/rollout-*.jsonl`): `reader` (the reader and
writer), `rewrites` (compaction, injected context), `thread_store` (Codex's index of a rollout,
kept true around a rewrite).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapter import Format
from . import reader

if TYPE_CHECKING:
    from ...core.model import Message, Transcript


class CodexFormat(Format):
    """The adapter: the rollout's rewrites are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, read, write = staticmethod(reader.detect), staticmethod(reader.read), staticmethod(reader.write)

    def append_compaction(self, transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                          *, drop_history: bool = False) -> Transcript:
        from .rewrites import append_compaction

        return append_compaction(transcript, summary, recent, pre_tokens, drop_history=drop_history)

    def injected_context(self, message: Message) -> tuple[tuple[str, str], ...] | None:
        from .rewrites import injected_context

        return injected_context(message)

    def view_before_compaction(self, transcript: Transcript) -> Transcript | None:
        from .rewrites import view_before_compaction

        return view_before_compaction(transcript)


FORMAT = CodexFormat()
