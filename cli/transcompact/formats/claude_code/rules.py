"""Claude Code's part of `check` and `repair`: the rules of the log's lines (docs/design.md §6.4)."""

from __future__ import annotations

import itertools
import uuid as uuidlib
from dataclasses import replace
from typing import Any

from ...core.jsondata import Parsed, dumps, kind_of, line_bytes
from ...core.model import Transcript
from ...core.violation import ERROR, WARNING, Violation
from .reader import LogSource, api_order, find_chain, read, whole_value

SIDECHAIN_SCAN_BYTES = 64 * 1024
REQUIRED_LINE_FIELDS = ("uuid", "type", "timestamp", "parentUuid")


def check_log(transcript: Transcript, path: str | None) -> list[Violation]:
    """The C rules of check (docs/design.md §6.4): what `claude --resume` needs of the log's lines."""
    source = transcript.source
    records = source.records
    out: list[Violation] = []
    add = out.append
    if path is not None:
        stem = path.rsplit("/", 1)[-1].removesuffix(".jsonl")
        try:
            uuidlib.UUID(stem)
        except ValueError:
            add(Violation("C1", WARNING, "the file name is not <session uuid>.jsonl: the /resume picker does not list it"))
    seen: dict[str, int] = {}
    for index, (_, value) in enumerate(records):
        if isinstance(value, dict) and value.get("type") in ("user", "assistant", "system", "attachment") and "uuid" in value:
            uid = value["uuid"]
            if uid in seen:
                add(Violation("C2", ERROR, f"uuid {uid} is used again (first on line {seen[uid] + 1})", line=index + 1))
            seen.setdefault(uid, index)
    on_chain = bytearray(len(records))  # not a set of a large log's every line
    for index in source.chain:
        on_chain[index] = 1
    for index in itertools.chain(source.chain, sorted({i for i in source.order if not on_chain[i]})):
        value = records[index][1]
        if value.get("type") not in ("user", "assistant"):
            continue
        missing = [f for f in REQUIRED_LINE_FIELDS if f not in value]
        if missing:
            add(Violation("C2", ERROR, f"{value.get('type')} line without {', '.join(missing)}", line=index + 1))
    if source.leaf is not None and "sessionId" not in records[source.leaf][1]:
        # Claude Code finds the session's title and settings by the leaf's session (a slimmed log keeps it there).
        add(Violation("C2", ERROR, f"the last {records[source.leaf][1].get('type')} line has no sessionId", line=source.leaf + 1))
    if source.chain:
        first = records[source.chain[0]][1]
        parent = first.get("parentUuid")
        if source.root is None and parent is not None:
            shown = parent if isinstance(parent, str) else dumps(parent, indent=False).decode()  # a number as written
            add(Violation("C3", ERROR, f"the chain stops at parentUuid {shown}, which is not in the file: resume loses what came before",
                          line=source.chain[0] + 1))
        if source.root is not None:
            summary = next((records[i][1] for i in source.chain if records[i][1].get("type") == "user"), None)
            if summary is None or not summary.get("isCompactSummary"):
                add(Violation("C5", ERROR, "the compact boundary is not followed by an isCompactSummary user message", line=source.root + 1))
    lines: list[bytes | memoryview] = []
    size = 0
    for record in records:
        if size >= SIDECHAIN_SCAN_BYTES:
            break
        lines.append(line_bytes(record))  # a line a rewrite made is given by its value
        size += len(lines[-1]) + 1
    head = b"\n".join(lines)[:SIDECHAIN_SCAN_BYTES]
    if b'"isSidechain":true' in head or b'"teamName"' in head:
        add(Violation("C6", WARNING, 'isSidechain:true or teamName in the first 64 KB: /resume hides this session'))
    return out


def repair_log(transcript: Transcript) -> tuple[Transcript, list[tuple[str, str, int]]]:
    """Fix the log-level errors of `check` (C2 duplicate uuids, C3 a chain hanging from a missing line).

    A uuid used by several lines is kept by the last of them (the one `claude --resume` keeps) and
    the others get new ones; a chain whose first line names a parent that is not in the file is
    made to start there, which is where resume stops anyway. Returns (transcript, [(rule, text, line)]).
    """
    source: LogSource = transcript.source
    records = list(source.records)
    fixes: list[tuple[str, str, int]] = []
    last_of: dict[str, int] = {}
    for index, (_, value) in enumerate(records):
        if isinstance(value, dict) and value.get("type") in ("user", "assistant", "system", "attachment") and "uuid" in value:
            last_of[value["uuid"]] = index
    for index, (_, value) in enumerate(records):
        if isinstance(value, dict) and value.get("type") in ("user", "assistant", "system", "attachment") and "uuid" in value:
            if last_of[value["uuid"]] != index:
                new = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{value['uuid']}:{index}"))
                records[index] = _rewritten(whole_value(index, records[index], transcript.name), uuid=new)
                fixes.append(("C2", f"gave the line a new uuid {new} ({value['uuid']} is used again later)", index + 1))
    if source.chain and source.root is None:
        first = source.chain[0]
        parent = records[first][1].get("parentUuid")
        if parent is not None:
            # The first line may be one kept only by its links (a progress line): written whole.
            records[first] = _rewritten(whole_value(first, records[first], transcript.name), parentUuid=None)
            why = f"its parent {parent} is not in the file" if isinstance(parent, str) else f"its parentUuid is {kind_of(parent)}"
            fixes.append(("C3", f"made the line a root: {why}", first + 1))
    if not fixes:
        return transcript, []
    chain, root, leaf = find_chain(records, transcript.name)
    order = api_order(records, chain, root)
    new_source = LogSource(records, chain, root, leaf, tuple(order), source.bom)
    if frozenset(order) != source.message_records:
        # New uuids can change what the chain holds: read the messages again from the fixed lines.
        fixed = read(Parsed(transcript.name, b"", records=records, bom=source.bom))
        return replace(fixed, source=new_source), fixes
    return replace(transcript, source=new_source), fixes


def _rewritten(value: dict, **changes: Any) -> tuple[bytes, Any]:
    obj = {**value, **changes}
    return dumps(obj, indent=False), obj
