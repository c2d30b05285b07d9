"""Gemini CLI's chat recordings (`~/.gemini/tmp/*/chats/*.json[l]`): `reader` (the reader and
writer), and `rewrites` (compaction, UI copies).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..adapter import Format
from . import reader

if TYPE_CHECKING:
    from ...core.model import Message, Transcript


class GeminiFormat(Format):
    """The adapter: the chat's rewrites are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    # Gemini CLI 0.61 records each tool result twice and sends both (the agents' issue): check and
    # repair do not count its own copy as a second answer (check.results_twice).
    results_twice = True
    answers_each_message = True  # a record holds its calls' results: they follow its model turn
    detect, read, write = staticmethod(reader.detect), staticmethod(reader.read), staticmethod(reader.write)
    rewrites_lines, unrecorded_messages = staticmethod(reader.rewrites_lines), staticmethod(reader.unrecorded_messages)

    def append_compaction(self, transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                          *, drop_history: bool = False) -> Transcript:
        from .rewrites import append_compaction

        return append_compaction(transcript, summary, recent, pre_tokens, drop_history=drop_history)

    def replace_ui_copies(self, transcript: Transcript) -> Transcript:
        from .rewrites import replace_ui_copies

        return replace_ui_copies(transcript)


FORMAT = GeminiFormat()
