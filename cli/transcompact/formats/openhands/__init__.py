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
    # The properties the agent holds its view to (it drops an event that breaks one), checked by rules.py.
    rule_texts = {
        "H1": "an action's observation comes once",
        "H2": "an action's batch (the other calls of its response) is all in the view",
        "H3": "each action has its observation and each observation its action",
        "H4": "a tool loop (the actions and observations after a call with thinking) is all in the view",
    }


FORMAT = OpenHandsFormat()
