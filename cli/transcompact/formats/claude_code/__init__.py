"""Claude Code's session logs (`~/.claude/projects/*/*.jsonl`): `reader` (the log read into messages),
`writer` (the messages written back into its lines), `rules` (the log's own rules: check, repair),
`rewrites` (compaction, UI copies), and `slim` (what `claude --resume` never sends).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...core.jsondata import PartialLine
from ..adapter import Format, lazy
from . import reader

if TYPE_CHECKING:
    from ...core.model import Message


class ClaudeCodeFormat(Format):
    """The adapter: the log's rules and rewrites are imported when an operation first asks for them."""

    name, description, lines = reader.NAME, reader.DESCRIPTION, reader.LINES
    detect, read, reload = staticmethod(reader.detect), staticmethod(reader.read), staticmethod(reader.reload)
    write, write_lines = lazy("writer"), lazy("writer")
    trim, lazy_trim = staticmethod(reader.linking_fields), staticmethod(reader.viewed_lines)
    partial_line = PartialLine  # what `viewed_lines` keeps
    # What `claude --resume` needs of a log (docs/design.md §5.4), checked by rules.py.
    rule_texts = {
        "C1": "the file is named <session uuid>.jsonl",
        "C2": "transcript lines have uuid, type, timestamp, parentUuid; uuids are unique; the last names its sessionId",
        "C3": "the chain from the newest leaf reaches a root or a compact boundary",
        "C5": "a compact boundary is followed by its isCompactSummary message",
        "C6": "no isSidechain:true or teamName in the first 64 KB (the session would be hidden)",
    }
    check_log, repair_log = lazy("rules"), lazy("rules")
    append_compaction, replace_ui_copies = lazy("rewrites"), lazy("rewrites")
    agent_lines, view_before_compaction = lazy("rewrites"), lazy("rewrites")
    slimming = lazy("slim")

    tree_members = ("uuid", "parentUuid")

    def leaf_of(self, transcript: Any) -> Any:
        source = transcript.source
        return None if source.leaf is None else self.line_id(source.records[source.leaf][1])

    def line_id(self, record: Any) -> Any:
        return record.get("uuid") if isinstance(record, dict) else None

    def is_earlier_summary(self, record: Any) -> bool:
        """The user line of a compaction (`isCompactSummary`), Claude Code's or ours."""
        return isinstance(record, dict) and record.get("isCompactSummary") is True

    def earlier_summary_body(self, text: str) -> str:
        """The summary without Claude Code's words around it: its preamble, and the instruction it
        ends with to go on with the last task (which a later compaction's window may no longer be)."""
        from .rewrites import COMPACT_PREAMBLE

        body = text[len(COMPACT_PREAMBLE):] if text.startswith(COMPACT_PREAMBLE) else text
        return _GO_ON.sub("", body)

    def written_by_agent(self, message: Message) -> bool:
        """A message whose line is `isMeta` (its first, when the turn has several)."""
        return isinstance(message.raw, dict) and bool(message.raw.get("isMeta"))


# What Claude Code ends its summary message with (after the transcript's path).
_GO_ON = re.compile(r"\s*Please continue the conversation from where we left it off without asking the user any further "
                    r"questions\. Continue with the last task that you were asked to work on\.\s*$")

FORMAT = ClaudeCodeFormat()
