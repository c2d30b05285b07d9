"""pi's part of `compact`: a compaction appended the way pi writes its own (`appendCompaction`),
its summary worded as pi words its own."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from ...core.errors import Location, ShapeError
from ...core.jsondata import BLANK, Parsed, Record, dumps, line_bytes
from ...core.model import Message, ToolCall, Transcript, named_paths
from ...core.summary_text import OPENING_HEADING, SUMMARY_PREFIX, SummaryText, compose
from .._log import Prompts
from .parsing import ViewedEntry
from .reader import SPLIT_TURN, SessionSource, _entry_type, _Origin, entry_records, find_path, read, record_of, whole_value
from .views import entry_timestamp
from .writer import entry_ids, new_entry_id, rewritten_records

MODIFYING_TOOLS = frozenset({"write", "edit"})  # pi's own tools that change a file (compaction/utils.ts)
# Entries that set what a session resumes with rather than what it sends: the model and thinking
# level (`buildSessionContext` takes the last on the path), its name, extensions' state.
SETTING_ENTRIES = frozenset({"model_change", "thinking_level_change", "session_info", "custom"})
MILLISECOND = timedelta(milliseconds=1)


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return moment.astimezone(timezone.utc) if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError):  # not a date, or one that leaves years 1 to 9999 in UTC
        return None


def _after_every_entry(records: list[Record]) -> str:
    """An ISO timestamp as pi writes them, 1 ms after the newest entry's (or the epoch)."""
    latest = max((m for record in records if (m := _moment(_timestamp(record))) is not None),
                 default=datetime(1970, 1, 1, tzinfo=timezone.utc))
    if latest.year < 9999:
        latest += MILLISECOND
    return latest.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _timestamp(record: Record) -> Any:
    line, value = record
    if type(value) is ViewedEntry:  # (its view keeps none)
        return entry_timestamp(bytes(line_bytes(record)))
    return value.get("timestamp") if isinstance(value, dict) else None


def view_before_compaction(transcript: Transcript) -> Transcript | None:
    """The session as pi read it before its newest compaction (the entries before that compaction's
    line), None when there is none: its recorded usage measured the system prompt and tools."""
    source = transcript.source
    if source.compaction is None or source.compaction == 0:
        return None
    try:
        return read(Parsed(transcript.name, b"", records=source.records[:source.compaction], bom=source.bom))
    except ShapeError:  # an entry pi no longer sends that is no message it could send: no view, as check reads none of it
        return None


def summary_wording(summary: SummaryText) -> str:
    """The summary as pi words its own (compaction.ts `compact`): the history's summary, then a
    split turn's part after a rule, here the request the turn began with, verbatim. The file
    lists pi appends after them come with `details` (`append_compaction`)."""
    text = compose(SummaryText(summary.body, summary.words)).removeprefix(SUMMARY_PREFIX)
    if summary.opening is None:
        return text
    return f"{text}{SPLIT_TURN}\n\n{OPENING_HEADING}\n\n{summary.opening}"


def worded_file_lists(details: dict[str, list[str]]) -> str:
    """The file lists as pi appends them to a summary (utils.ts `formatFileOperations`)."""
    sections = [f"<{tag}>\n" + "\n".join(details[key]) + f"\n</{tag}>"
                for tag, key in (("read-files", "readFiles"), ("modified-files", "modifiedFiles")) if details[key]]
    return "".join("\n\n" + section for section in sections)


def file_lists(old: Sequence[Message], previous: Any) -> dict[str, list[str]]:
    """`details` as pi keeps it: the files the summarized part only read, and those it changed
    (by pi's `write` and `edit`), from the paths its tool calls name, joined to the previous compaction's."""
    # (A message left unread is read apart, and only one that makes calls: the old part is most of a large session.)
    calls = [b for m in old if m.call_ids for b in m.read_apart().blocks if isinstance(b, ToolCall)]
    touched = {path for call in calls for path in named_paths(call.input)}
    modified = {path for call in calls if call.name in MODIFYING_TOOLS for path in named_paths(call.input)}
    earlier = previous if isinstance(previous, dict) else {}
    for key, into in (("readFiles", touched), ("modifiedFiles", modified)):
        listed = earlier.get(key)
        into.update(p for p in (listed if isinstance(listed, list) else ()) if isinstance(p, str))
    return {"readFiles": sorted(touched - modified), "modifiedFiles": sorted(modified)}


def append_compaction(transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                      *, drop_history: bool = False, prompts: Prompts | None = None) -> Transcript:
    """What pi itself appends when it compacts, read back as a transcript.

    One `compaction` entry after the last line, a child of the leaf: `summary` (followed by
    the file lists, as pi's), `tokensBefore`, `details` (`readFiles` / `modifiedFiles`) and
    `firstKeptEntryId`, the entry the recent window starts at, which stays where it is (version 1:
    `firstKeptEntryIndex`, its line among the file's non-blank lines, which pi's migration turns
    into the id). The window is kept in place, as it is in the file; with `drop_history` the lines
    before it go but for the header and the settings entries on the path (`_without_history`). A
    window starting at a tool result starts at its call instead, so that neither the kept entry
    is a `toolResult` nor the compaction comes between a call and its result.

    A kept reply's recorded usage is no usage of the compacted session (pi, and the reader, judge
    by the replies after the compaction): `estimate` counts the session with the model of what
    comes before the compaction entry (`view_before_compaction`). With `drop_history` that is the
    window alone, whose usage counted the history that went: with `prompts` (the model compact
    counted with), each kept reply that recorded usage has its prompt (`totalTokens` less the
    output, as a rewrite restates it) restated as that model counts the window before it, so that
    the view's model is compact's, and `estimate` of the output says what compact reported.
    """
    source: SessionSource = transcript.source
    messages = transcript.messages
    first = len(messages) - len(recent)  # the window is the transcript's end (prune keeps indices)
    kept = _kept_record(transcript, first)
    # The window as compact left it (results trimmed, thinking dropped) is written into its entries.
    rewritten = rewritten_records(transcript.with_messages([*messages[:first], *recent]))
    records = [(line, value) for line, value, _ in rewritten]
    kept_at = next((k for k, (_, _, read_from) in enumerate(rewritten) if read_from == kept), None)
    if drop_history:
        records, kept_at = _without_history(records, kept_at, source.version, transcript.name)
        if prompts is not None:
            records = _restated(Parsed(transcript.name, b"", records=records, bom=source.bom), prompts)
    old = [m for m in messages[:first] if source.compaction is None or record_of(m) != source.compaction]
    previous = source.records[source.compaction][1].get("details") if source.compaction is not None else None
    entries = entry_records(records)
    leaf = records[entries[-1]][1] if entries else {}
    entry: dict[str, Any] = {"type": "compaction"}
    if source.version >= 2:
        if not isinstance(leaf.get("id"), str):
            raise ShapeError("the last entry's `id` is not a string: pi cannot hang a compaction (or anything) from it",
                             location=Location(transcript.name), hint="repair gives the entries ids, as pi's migration does (P4)")
        entry["id"] = new_entry_id(f"{leaf.get('id')}:compaction:{pre_tokens}", entry_ids(records))
        entry["parentId"] = leaf.get("id")
    entry["timestamp"] = _after_every_entry(records)
    details = file_lists(old, previous)
    entry["summary"] = summary + worded_file_lists(details)
    if source.version >= 2:
        entry["firstKeptEntryId"] = records[kept_at][1].get("id") if kept_at is not None else entry["id"]
    else:
        lines = [i for i, (_, v) in enumerate(records) if v is not BLANK]
        entry["firstKeptEntryIndex"] = lines.index(kept_at) if kept_at is not None else len(lines)
    entry["tokensBefore"] = pre_tokens
    entry["details"] = details
    # pi ends every line with a newline: the new line goes before the empty text after the last one.
    ends_with_newline = bool(records) and records[-1][1] is BLANK and len(line_bytes(records[-1])) == 0
    written: list[Record] = [*(records[:-1] if ends_with_newline else records), (dumps(entry, indent=False), entry), (b"", BLANK)]
    return read(Parsed(transcript.name, b"", records=written, bom=source.bom))


def _restated(parsed: Parsed, prompts: Prompts) -> list[Record]:
    """The lines of `parsed` with each reply's recorded prompt restated to what `prompts` says of
    its message in the session they make."""
    records = list(parsed.records or [])
    try:
        view = read(parsed)
    except ShapeError:  # no view to count: nothing to restate by
        return records
    now = prompts(view)
    if now is None:
        return records
    for message, prompt in zip(view.messages, now):
        origin = message.origin
        recorded = message.raw.get("usage") if isinstance(message.raw, dict) else None
        if message.role != "assistant" or not isinstance(origin, _Origin) or not isinstance(recorded, dict):
            continue
        new = _with_prompt(whole_value(records[origin.record], parsed.name, origin.record), prompt)
        if new is not None:
            records[origin.record] = (dumps(new, indent=False), new)
    return records


def _with_prompt(value: dict, prompt: int) -> dict | None:
    """An assistant entry whose `usage` counts a prompt of `prompt` tokens, as a rewrite restates one
    (`totalTokens` the prompt and the output; the billed parts as they were, but `input`
    where the prompt is above them)."""
    message = value.get("message")
    if not isinstance(message, dict) or not isinstance(usage := message.get("usage"), dict):
        return None
    parts = {k: usage[k] if type(usage.get(k)) is int else 0 for k in ("input", "output", "cacheRead", "cacheWrite")}
    new = {**usage, "totalTokens": prompt + parts["output"]}
    above = prompt - parts["input"] - parts["cacheRead"] - parts["cacheWrite"]
    if above >= 0:
        new["input"] = parts["input"] + above
    return {**value, "message": {**message, "usage": new}}


def _without_history(records: list[Record], kept_at: int | None, version: int,
                     name: str) -> tuple[list[Record], int | None]:
    """The session as pi would resume it after the compaction, less what it no longer reads: the
    header, the settings entries on the path before the window, the window and what follows it on
    the path but for earlier compactions, each the child of the one before (other branches go
    too); and the window's first line in it."""
    path = find_path(records, version)
    start = path.index(kept_at) if kept_at is not None else len(path)
    kept = [i for i in path[:start] if _entry_type(records[i][1]) in SETTING_ENTRIES]
    kept += [i for i in path[start:] if _entry_type(records[i][1]) != "compaction"]
    out = [record for record in records if _entry_type(record[1]) == "session"][:1]
    parent, new_kept_at = None, None
    for index in kept:
        line, value = records[index]
        if version >= 2 and value.get("parentId") != parent:
            value = {**whole_value(records[index], name, index), "parentId": parent}
            line = dumps(value, indent=False)
        if index == kept_at:
            new_kept_at = len(out)
        out.append((line, value))
        parent = value.get("id")
    return out + [record for record in records[-1:] if record[1] is BLANK], new_kept_at


def _kept_record(transcript: Transcript, first: int) -> int | None:
    """The entry the window starts at: its first message's, moved back over tool results to their
    call (and over entries without an id), and past the previous summary (its compaction entry keeps nothing)."""
    messages = transcript.messages
    if any(not isinstance(m.origin, _Origin) for m in messages[first:]):
        raise ShapeError("compact can only keep messages read from this pi session")
    source: SessionSource = transcript.source

    def cannot_start(message: Message) -> bool:  # a result, or an entry pi cannot name (no string id)
        value = source.records[message.origin.record][1]
        return message.is_tool_result_message or (source.version >= 2 and not isinstance(value.get("id"), str))

    while 0 < first < len(messages) and cannot_start(messages[first]):
        first -= 1
    if first < len(messages) and messages[first].origin.record == source.compaction:
        first += 1
    return messages[first].origin.record if first < len(messages) else None
