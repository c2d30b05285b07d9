"""OpenHands' part of `check` and `repair`: the four properties the agent keeps its view to
(`context/view/properties`). When it loads a conversation it drops every event that breaks one,
without a word, so each of these is an event the model will not be sent:

- H1 (error): a second observation of one tool call (the first one stays).
- H2 (error): an action whose batch (the other calls of its LLM response) is not all in the view.
- H3 (error): an action without an observation, or an observation without its action.
- H4 (error): part of a tool loop (the actions and observations after a call with thinking
  blocks) not in the view: the rest of it goes too.

Found in the order the agent enforces them, each on what the earlier ones left, as it does.
repair forgets those events with an appended `Condensation`, the agent's own way of taking
events out of the view: what the agent sends stays the same, and the log now says so.
"""

from __future__ import annotations

from ...core.jsondata import Parsed
from ...core.model import Transcript
from ...core.violation import ERROR, Violation
from ...io.openhands_store import EVENTS_DIR, event_file_name
from .reader import Entry, StoreSource, condensed, enforced, event_records, read
from .writer import appended, condensation, rewritten_records


def _dropped(source: StoreSource) -> list[tuple[str, Entry, str]]:
    records = source.records
    return enforced(condensed(records, source.branch), [records[i][1] for i in source.branch])[1]


def _where(source: StoreSource, entry: Entry) -> str:
    """The event's file, which says where it is in a conversation directory (the line is the bundle's)."""
    index = event_records(source.records).index(entry.record)
    return f"{EVENTS_DIR}/{event_file_name(index, entry.id)} ({entry.kind})"


def check_log(transcript: Transcript, path: str | None) -> list[Violation]:
    source: StoreSource = transcript.source
    return [Violation(rule, ERROR, f"{_where(source, entry)}: {why}: the agent drops it", line=entry.record + 1)
            for rule, entry, why in _dropped(source)]


def repair_log(transcript: Transcript) -> tuple[Transcript, list[tuple[str, str, int]]]:
    source: StoreSource = transcript.source
    dropped = _dropped(source)
    if not dropped:
        return transcript, []
    records, gone = rewritten_records(transcript)
    forget = condensation(records, source, [*gone, *(entry.id for _, entry, _ in dropped)])
    fixed = read(Parsed(transcript.name, b"", records=appended(records, source, forget), bom=source.bom))
    return fixed, [(rule, f"forgot {_where(source, entry)}, which the agent drops: {why}", entry.record + 1)
                   for rule, entry, why in dropped]
