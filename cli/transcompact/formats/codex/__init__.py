"""Codex CLI's rollouts (`~/.codex/sessions/**/rollout-*.jsonl`): `parsing` (the format's names,
and what is kept of each line as it is parsed), `reader` (the rollout read into messages),
`writer` (the messages written back into its lines), `rewrites` (compaction, injected context),
`slim` (what `codex resume` never sends), `thread_store` (Codex's index of a rollout, kept true
around a rewrite).
"""

from __future__ import annotations

from ..adapter import Format, lazy
from . import parsing


class CodexFormat(Format):
    """The adapter: the rollout's reader and rewrites are imported when an operation first asks
    for them (every JSON Lines input runs its trim: `parsing`)."""

    name, description, lines = parsing.NAME, parsing.DESCRIPTION, parsing.LINES
    detect, read = lazy("reader"), lazy("reader")
    trim = staticmethod(parsing.copies_trimmed)
    write, write_lines = lazy("writer"), lazy("writer")
    slimming = lazy("slim")
    append_compaction, injected_context, views_before_compaction = lazy("rewrites"), lazy("rewrites"), lazy("rewrites")


FORMAT = CodexFormat()
