"""The Gemini CLI format's names, and what the views of its records (`records`) and its reader
share, light enough for parsing to ask of every line of JSON Lines read for counting or
rewriting, before the format is known (the adapter's `line_view`)."""

from __future__ import annotations

from typing import Any

from ...core.jsondata import PartialLine
from ...core.model import BlockSize

NAME = "gemini"
DESCRIPTION = "Gemini CLI chat (JSON Lines of message records with $set / $rewindTo, or the legacy whole-file JSON)"
LINES = True  # in the JSON Lines log a line is what a rewrite changes or keeps; not in a legacy document
RECORD_LINE = b'{"id":"'  # how Gemini CLI begins a message record's line: only such a line is viewed
IGNORED_USER_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")  # sessionUtils.ts isIgnoredUserContent
# What the view of a results turn left unread keeps of its record (`MessageView.record`): no usage
# (the record's `tokens` belong to its model turn), and the turn it is.
RESULTS_TURN = ("results",)
# A message the agent sends of a record its view read: its role, the sizes of its blocks, and what
# a count reads of the record (`MessageView.record`: the usage of a model turn, `RESULTS_TURN`).
Turn = tuple[str, tuple[BlockSize, ...], Any]


def is_ignored_input(text: str) -> bool:
    """User input the agent does not send: empty, or a command (`/…`, `?`) or context it adds."""
    said = text.strip()
    return not said or said.startswith(IGNORED_USER_PREFIXES)


class ViewedRecordLine(PartialLine):
    """A message record's line as its view keeps it (`records.line_view`): its `id`, `type` and
    `tokens`; `seen`: what each message the agent sends of it is (its role, the sizes of its
    blocks, and what a count reads of the record). Read whole from its line's bytes when a message
    is read from it, or a rewrite changes it (`writer._lines_of_views`)."""

    __slots__ = ()
