"""pi's part of `check` and `repair`: what pi needs of a session's compaction entries and tree.

- P1 (error): the active compaction's `firstKeptEntryId` is a `toolResult`, or names no entry on
  the path before it: the kept window would start with a result whose call was summarized away,
  or lose what it meant to keep.
- P2 (error): the active compaction comes after a kept `toolCall` and before its `toolResult` (a
  known way to brick a pi session: pi sends the summary, the call, then whatever follows the
  compaction, which is not the result). A call with no result on the path at all is no P2 but the
  API rules' A2: pi sends it with an error result "No result provided" (pi-ai `transformMessages`),
  wherever the compaction is.
- P3 (error): an entry's `parentId` names no entry: pi's path stops there and loses what came before.
- P4 (error): in a version 2 or 3 session, entries without an `id` or without a `parentId` (as a
  version 1 list under a later header has them): pi migrates only version 1, so it reads no tree through
  them; it sends the path from the last entry alone (without an id, nothing can name it as a
  parent; without a `parentId`, it is a root), and what it appends hangs from that.

repair fixes P1 when the first kept entry is a result (it moves back to the entry of the call),
P2 when the result comes after the compaction (the compaction moves after it), P3 (the entry
becomes the root) and P4 as pi's migration from version 1 would: each such entry gets an id and,
unless its `parentId` names an entry, the entry before it in the file as its parent, a compaction
its `firstKeptEntryIndex` as `firstKeptEntryId`. A first kept entry that is not on the path names
nothing to move back to, and a call with no result at all gets one from the API rules' repair,
before the compaction. P4 comes first: it decides the path the other fixes work on.
"""

from __future__ import annotations

from typing import Any

from ...core.jsondata import BLANK, Parsed, Record, dumps, line_bytes
from ...core.model import ToolCall, Transcript
from ...core.violation import ERROR, Violation
from .parsing import ViewedEntry
from .reader import SessionSource, _entry_type, active_entries, entry_records, find_path, first_kept, read, version_of, whole_value
from .writer import entry_ids, new_entry_id, rewritten_records


def _message(value) -> dict:
    message = value.get("message") if _entry_type(value) == "message" else None
    return message if isinstance(message, dict) else {}


def check_log(transcript: Transcript, path: str | None) -> list[Violation]:
    source: SessionSource = transcript.source
    records, entries = source.records, source.path
    out: list[Violation] = []
    if source.compaction is not None:
        at = entries.index(source.compaction)
        start = first_kept(records, entries, at, source.version)
        entry = records[source.compaction][1]
        target = entry.get("firstKeptEntryId", entry.get("firstKeptEntryIndex"))
        if start is None:
            out.append(Violation("P1", ERROR, f"the compaction's first kept entry {target} is not on the path before it",
                                 line=source.compaction + 1))
        elif _message(records[entries[start]][1]).get("role") == "toolResult":
            out.append(Violation("P1", ERROR, f"the compaction's first kept entry {target} is a toolResult",
                                 line=source.compaction + 1))
        else:
            out += [Violation("P2", ERROR, f"the compaction comes between tool call {call_id} and its result",
                              line=source.compaction + 1) for call_id in _split_calls(records, entries, start, at)]
    if source.version >= 2 and entries:
        root = records[entries[0]][1]
        if root.get("parentId"):  # pi walks up while parentId is truthy
            out.append(Violation("P3", ERROR, f"parentId {root['parentId']!r} names no entry: pi loses what came before",
                                 line=entries[0] + 1))
    unthreaded = unthreaded_entries(records, source.version)
    if unthreaded:
        some = f"{len(unthreaded)} entries have" if len(unthreaded) > 1 else "an entry has"
        out.append(Violation("P4", ERROR, f"{some} no id or no parentId: pi migrates only version 1 sessions, so in this "
                                          f"version {source.version} one it sends the path from the last entry alone",
                             line=unthreaded[0] + 1))
    return out


def unthreaded_entries(records: list[Record], version: int) -> list[int]:
    """P4: the entry records of a version 2 or 3 session that have no string `id` or no `parentId`."""
    if version < 2:
        return []
    return [i for i in entry_records(records)
            if not isinstance(records[i][1].get("id"), str) or "parentId" not in records[i][1]]


def _split_calls(records, path: tuple[int, ...], start: int, at: int) -> list[str]:
    """The ids of the calls kept before the compaction at `path[at]` (from `path[start]`) whose result
    comes after it (P2)."""
    pending: dict[str, None] = {}
    for index in path[start:at]:
        value = records[index][1]
        message = _message(value)
        if message.get("role") == "assistant" and message.get("stopReason") not in ("error", "aborted"):
            if type(value) is ViewedEntry:  # its calls are in the sizes its view kept
                pending.update((size.call_id, None) for size in value.seen if size.type is ToolCall)
            elif isinstance(message.get("content"), list):
                pending.update((b["id"], None) for b in message["content"]
                               if isinstance(b, dict) and b.get("type") == "toolCall" and isinstance(b.get("id"), str))
        elif message.get("role") == "toolResult" and isinstance(message.get("toolCallId"), str):
            pending.pop(message["toolCallId"], None)
    answered_later = {_message(records[index][1]).get("toolCallId") for index in path[at + 1:]}
    return [call_id for call_id in pending if call_id in answered_later]


def repair_log(transcript: Transcript) -> tuple[Transcript, list[tuple[str, str, int]]]:
    """Fix P1, P2, P3 and P4 where pi's tree says how (see above); returns (transcript, [(rule, text, line)]).

    The view pi sends keeps its order: the first kept entry moves back only over the results of
    the calls before it, and the compaction moves only later on the path, which holds the same
    entries before and after it. Threading (P4) brings back the entries pi lost: a session whose
    entries, threaded, hold an error no repair fixes that the session did not have is refused
    (`ops.validity.repair`).
    """
    if not any(v.severity == ERROR for v in check_log(transcript, None)):
        return transcript, []
    # The lines as the transcript now has them: what the repair's earlier fixes changed stays (whole:
    # a fix makes new entries of them).
    records: list[Record] = [(line, whole_value((line, value), transcript.name, index))
                             for index, (line, value, _) in enumerate(rewritten_records(transcript))]
    version = version_of(records)
    fixes: list[tuple[str, str, int]] = []
    _thread_as_migrated(records, version, fixes)
    path = find_path(records, version)
    if version >= 2 and path and records[path[0]][1].get("parentId"):
        parent = records[path[0]][1]["parentId"]
        records[path[0]] = _with(records[path[0]][1], parentId=None)
        fixes.append(("P3", f"made the entry a root: its parent {parent!r} is not in the file", path[0] + 1))
    _, compaction = active_entries(records, path, version)
    if compaction is not None:
        at = path.index(compaction)
        start = first_kept(records, path, at, version)
        if start is not None and _message(records[path[start]][1]).get("role") == "toolResult":
            _keep_from_the_call(records, path, at, start, version, fixes)
        elif start is not None:
            _after_the_results(records, path, at, start, version, fixes)
    if not fixes:
        return transcript, []
    return read(Parsed(transcript.name, b"", records=records, bom=transcript.source.bom)), fixes


def _thread_as_migrated(records: list[Record], version: int, fixes: list) -> None:
    """P4: what pi's `migrateV1ToV2` does, to the entries it would have had to: an id for each
    entry without one, the entry before it in the file as the parent of each whose `parentId`
    names no entry (a link pi follows stays), and a compaction's `firstKeptEntryIndex` (an index
    into the file's non-blank lines) turned into its `firstKeptEntryId`."""
    unthreaded = unthreaded_entries(records, version)
    if not unthreaded:
        return
    taken = entry_ids(records)
    named = set(taken)  # the ids a parentId can name as the file stands
    previous = None
    for index in entry_records(records):
        value = records[index][1]
        if index in unthreaded:
            entry_id = value.get("id")
            if not isinstance(entry_id, str):
                entry_id = new_entry_id(f"{previous}:{bytes(line_bytes(records[index])).decode(errors='replace')}", taken)
                taken.add(entry_id)
            parent = value["parentId"] if isinstance(value.get("parentId"), str) and value["parentId"] in named else previous
            # pi's own order: type, id, parentId, then the rest.
            records[index] = _with({"type": value["type"], "id": entry_id, "parentId": parent, **value},
                                   id=entry_id, parentId=parent)
        previous = records[index][1]["id"]
    lines = [i for i, (_, v) in enumerate(records) if v is not BLANK]
    for index in unthreaded:
        value = records[index][1]
        kept = value.get("firstKeptEntryIndex")
        if _entry_type(value) == "compaction" and type(kept) is int and not isinstance(value.get("firstKeptEntryId"), str):
            target = records[lines[kept]][1] if 0 <= kept < len(lines) else None
            value = {k: v for k, v in value.items() if k != "firstKeptEntryIndex"}
            if target is not None and _entry_type(target) not in (None, "session"):
                value["firstKeptEntryId"] = target["id"]
            records[index] = _with(value)
    fixes.append(("P4", f"threaded {len(unthreaded)} entries into pi's tree as its migration from version 1 does: "
                        "an id where there was none, the entry before as the parent where none was named",
                  unthreaded[0] + 1))


def _with(value: dict, **changes: Any) -> tuple[bytes, Any]:
    new = {**value, **changes}
    return dumps(new, indent=False), new


def _named(records, index: int) -> str:
    entry_id = records[index][1].get("id")
    return entry_id if isinstance(entry_id, str) else f"line {index + 1}"


def _keep_from_the_call(records, path, at: int, start: int, version: int, fixes: list) -> None:
    """P1: the compaction keeps from the entry before the results its first kept entry is one of."""
    k = start
    while k > 0 and _message(records[path[k]][1]).get("role") == "toolResult":
        k -= 1
    target = records[path[k]][1]
    if _message(target).get("role") == "toolResult" or (version >= 2 and not isinstance(target.get("id"), str)):
        return  # no entry before the results that pi can name
    entry = records[path[at]][1]
    if version >= 2:
        records[path[at]] = _with(entry, firstKeptEntryId=target["id"])
    else:
        lines = [i for i, (_, v) in enumerate(records) if v is not BLANK]
        records[path[at]] = _with(entry, firstKeptEntryIndex=lines.index(path[k]))
    fixes.append(("P1", f"moved the compaction's first kept entry back from toolResult {_named(records, path[start])} "
                        f"to {_named(records, path[k])}, the entry before the results (the call's)", path[at] + 1))


def _after_the_results(records, path, at: int, start: int, version: int, fixes: list) -> None:
    """P2: the compaction moves after the last result, later on the path, of a call it came
    before; its line follows that result's, so that the leaf (pi's last entry) stays on the path."""
    split = set(_split_calls(records, path, start, at))
    answering = [k for k in range(at + 1, len(path)) if _message(records[path[k]][1]).get("toolCallId") in split]
    if not answering:
        return  # no call is split
    last = answering[-1]
    compaction, result = path[at], path[last]
    answered = sorted({_message(records[path[k]][1])["toolCallId"] for k in answering})
    if version >= 2:
        entry = records[compaction][1]
        records[path[at + 1]] = _with(records[path[at + 1]][1], parentId=entry.get("parentId"))
        if last + 1 < len(path):
            records[path[last + 1]] = _with(records[path[last + 1]][1], parentId=entry.get("id"))
        records[compaction] = _with(entry, parentId=records[result][1].get("id"))
    moved = records.pop(compaction)
    records.insert(result if result > compaction else result + 1, moved)
    fixes.append(("P2", f"moved the compaction after the result of tool call {', '.join(answered)}, "
                        "which it came before", compaction + 1))
