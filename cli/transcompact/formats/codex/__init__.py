"""Codex CLI's rollouts (`~/.codex/sessions/**/rollout-*.jsonl`): `parsing` (the format's names,
and what is kept of each line as it is parsed), `reader` (the rollout read into messages),
`views` (what a count needs of a `response_item` line, its item's blocks kept as sizes),
`writer` (the messages written back into its lines), `rewrites` (compaction, injected context),
`slim` (what `codex resume` never sends), `thread_store` (Codex's index of a rollout, kept true
around a rewrite).
"""

from __future__ import annotations

from typing import Any

from ..adapter import Format, lazy
from . import parsing


def _line_view(text: memoryview) -> Any:
    """The view of a line that begins as Codex begins a `response_item` line (`views.item_view`);
    None for any other line (another format's too), without importing the reader."""
    if not parsing.begins_as_response_item(text):
        return None
    from . import views

    return views.item_view(text, parsing.ViewedItemLine)


class CodexFormat(Format):
    """The adapter: the rollout's reader and rewrites are imported when an operation first asks
    for them (every JSON Lines input runs its trim, and one read for counting its line view: `parsing`)."""

    name, description, lines = parsing.NAME, parsing.DESCRIPTION, parsing.LINES
    detect, read = lazy("reader"), lazy("reader")
    trim = staticmethod(parsing.copies_trimmed)
    line_view, partial_line = staticmethod(_line_view), parsing.ViewedItemLine  # for counting and checking
    write, write_lines = lazy("writer"), lazy("writer")
    slimming = lazy("slim")
    append_compaction, injected_context, views_before_compaction = lazy("rewrites"), lazy("rewrites"), lazy("rewrites")


FORMAT = CodexFormat()
