"""Codex CLI's rollouts (`~/.codex/sessions/**/rollout-*.jsonl`): `reader` (the rollout read
into messages), `writer` (the messages written back into its lines), `rewrites` (compaction,
injected context), `slim` (what `codex resume` never sends), `thread_store` (Codex's index of a
rollout, kept true around a rewrite).
"""

from __future__ import annotations

from ..adapter import Format, lazy
from . import reader


class CodexFormat(Format):
    """The adapter: the rollout's rewrites are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, read = staticmethod(reader.detect), staticmethod(reader.read)
    write = lazy("writer")
    slimming = lazy("slim")
    append_compaction, injected_context, views_before_compaction = lazy("rewrites"), lazy("rewrites"), lazy("rewrites")


FORMAT = CodexFormat()
