"""The pi format's names, and what of a line a count reads without parsing it: a message entry's
view (`line_view`, by `views`), which parsing asks of every line of JSON Lines read for work that
mostly counts, before the format is known."""

from __future__ import annotations

from functools import cache
from typing import Any

from ...core.jsondata import PartialLine

NAME = "pi"
DESCRIPTION = "pi coding-agent session (JSON Lines: a `session` header, then entries with id / parentId)"
LINES = True  # a line is what a rewrite changes, keeps or removes
MESSAGE_LINE = b'{"type":"message"'  # how pi begins a message entry's line: only such a line is viewed


class ViewedEntry(PartialLine):
    """A message entry as its view keeps it (`views.entry_view`): `type`, `id` and `parentId` (the
    tree), and a `message` of what the reader and a count look at; `seen`: the sizes of the
    message's blocks (those of a result's content make one result's). Read whole from its
    line's bytes when a message is read from it, and by a write of the entry (`reader.whole_value`)."""

    __slots__ = ()


def line_view(text: memoryview) -> ViewedEntry | None:
    """The view of a line that begins as pi begins a message entry's (`views.entry_view`); None
    for any other line (another format's too), without importing the typed decoder."""
    if text[:len(MESSAGE_LINE)] != MESSAGE_LINE or (viewed := _views().entry_view(text, ViewedEntry)) is None:
        return None
    kept, kept.seen = viewed
    return kept


@cache
def _views() -> Any:
    from . import views

    return views
