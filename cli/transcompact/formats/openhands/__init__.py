"""OpenHands: conversations (event directories or their bundle): `reader` (read), `writer` (written back),
`rules`, `rewrites`, `slim` (what the agent never sends nor reads when it resumes); and `v0`
trajectories (read only).
"""

from __future__ import annotations

from ..adapter import Format, lazy
from . import reader


class OpenHandsFormat(Format):
    """The adapter of a conversation (the V0 events have theirs in v0.py): its rules and rewrites
    are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, read = staticmethod(reader.detect), staticmethod(reader.read)
    write, slimming = lazy("writer"), lazy("slim")
    check_log, repair_log, append_compaction = lazy("rules"), lazy("rules"), lazy("rewrites")


FORMAT = OpenHandsFormat()
