"""Claude Code's part of `compact` and `prune`: a compaction appended the way Claude Code writes
its own, the lines it wrote in the user's turn itself, and the UI's copies of tool results made
to match what prune left."""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import replace
from datetime import datetime, timedelta, timezone

from ...core.errors import ShapeError
from ...core.jsondata import BLANK, Parsed, dumps
from ...core.model import ASSISTANT, USER, Message, ToolResult, Transcript, result_text
from ...dialects import anthropic as codec
from .._log import Prompts
from .reader import EPOCH, LogSource, _Origin, _timestamp, read, whole_value
from .writer import _prompt, _usage_less


def view_before_compaction(transcript: Transcript) -> Transcript | None:
    """The log as `claude --resume` read it before its newest compaction (the lines before the
    boundary), None when it was never compacted: its recorded usage measured the system prompt and
    tools, which the compaction did not change."""
    source: LogSource = transcript.source
    if source.root is None or source.root == 0:
        return None
    earlier = Parsed(transcript.name, b"", records=source.records[:source.root], bom=source.bom)
    return read(earlier)


def agent_lines(transcript: Transcript) -> frozenset[int]:
    """The lines Claude Code wrote in the user's turn itself (`isMeta`: a skill's body, a command's
    expansion, a reminder): sent as user text, never the user's words."""
    source: LogSource = transcript.source
    return frozenset(i for i in source.message_records
                     if isinstance(value := source.records[i][1], dict) and value.get("isMeta") is True)


def replace_ui_copies(transcript: Transcript) -> Transcript:
    """Give each changed tool result's line a `toolUseResult` (the copy Claude Code's UI shows)
    equal to the result's new text, so that a pruned output is pruned for the UI too."""
    source: LogSource = transcript.source
    records = list(source.records)
    for message in transcript.messages:
        if not message.is_read:
            continue  # unchanged: its copy is the UI's as it was
        origin = message.origin
        if not isinstance(origin, _Origin):
            continue
        before = {b.tool_call_id: b for b in origin.blocks if isinstance(b, ToolResult)}
        for block in message.blocks:
            if not isinstance(block, ToolResult) or block.line is None or before.get(block.tool_call_id) in (None, block):
                continue
            value = whole_value(block.line, records[block.line], transcript.name)
            if isinstance(value, dict) and "toolUseResult" in value:
                value = {**value, "toolUseResult": result_text(block)}
                records[block.line] = (dumps(value, indent=False), value)
    return replace(transcript, source=replace(source, records=records))


COMPACT_PREAMBLE = ("This session is being continued from a previous conversation that ran out of context. "
                    "The summary below covers the earlier portion of the conversation.\n\n")


MILLISECOND = timedelta(milliseconds=1)
# The range an ISO timestamp with a four-digit year can write, in milliseconds since 1970.
FIRST_MS = (datetime(1, 1, 1, tzinfo=timezone.utc) - EPOCH) // MILLISECOND
LAST_MS = (datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=timezone.utc) - EPOCH) // MILLISECOND


def _iso(milliseconds: int) -> str:
    """A timestamp as Claude Code writes it (`2026-02-10T22:57:51.291Z`), held within years 1 to 9999."""
    moment = EPOCH + max(FIRST_MS, min(milliseconds, LAST_MS)) * MILLISECOND
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def append_compaction(transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                      *, drop_history: bool = False, prompts: Prompts | None = None) -> Transcript:
    """What Claude Code itself writes when it compacts (docs/design.md §6.3), read back as a transcript.

    After the original lines (or instead of them, with `drop_history`): a `compact_boundary`
    line (`parentUuid` null, `logicalParentUuid` the old leaf), a user line with
    `isCompactSummary` holding the summary, then the recent window copied with new uuids,
    re-parented in order, with timestamps after every line of the file (or equal to the newest
    when that is the last millisecond of year 9999: `find_chain` reads the later of two equal
    leaves) and the same session.

    A copied response gets a new `message.id` (shared by its lines): Claude Code's loader
    gathers the lines of a response by that id across the whole file, so the old id would pull
    the originals before the boundary back in. Its `usage` is zeroed, as Claude Code's loader
    does for preserved messages: it counted a context that no longer exists; with `prompts` (the
    model compact counted with), a response that recorded a prompt has it restated instead, as
    that model counts the prompt it now follows (the summary and the window before it), its
    output as it was: so the new chain's usage lies on the model (the log the model was fitted on
    may go, with `--slim`), and `estimate` of the output says what compact reported. A result
    read as the microcompact placeholder is copied as the placeholder, what the API saw: the
    boundary that cleared it is not on the new chain.
    """
    source: LogSource = transcript.source
    records = source.records
    leaf = whole_value(source.leaf, records[source.leaf], transcript.name) if source.leaf is not None else {}
    latest = max((t for _, v in records if isinstance(v, dict) and (t := _timestamp(v.get("timestamp"))) is not None),
                 default=0)
    after = latest // 1000  # new lines are stamped 1, 2, 3 … ms after the newest line (capped in year 9999)
    # The leaf's envelope; a field it lacks (a slimmed log keeps `cwd` and `version` on its first line
    # only) from the head of the chain, where Claude Code reads the project's directory.
    head_index = source.root if source.root is not None else source.chain[0] if source.chain else None
    head = whole_value(head_index, records[head_index], transcript.name) if head_index is not None else {}
    envelope = {key: leaf[key] if key in leaf else head[key] for key in ("userType", "cwd", "sessionId", "version", "gitBranch")
                if key in leaf or key in head}
    boundary_uuid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{leaf.get('uuid')}:compact_boundary:{pre_tokens}"))
    summary_uuid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{boundary_uuid}:summary"))
    new: list[dict] = [
        {"parentUuid": None, "logicalParentUuid": leaf.get("uuid"), "isSidechain": False, **envelope,
         "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
         "timestamp": _iso(after + 1), "uuid": boundary_uuid, "level": "info",
         "compactMetadata": {"trigger": "manual", "preTokens": pre_tokens}},
        {"parentUuid": boundary_uuid, "isSidechain": False, **envelope, "type": USER,
         "message": {"role": USER, "content": COMPACT_PREAMBLE + summary}, "isCompactSummary": True,
         "isVisibleInTranscriptOnly": True, "uuid": summary_uuid, "timestamp": _iso(after + 2)},
    ]
    renamed: dict[str | None, str] = {}  # a line of a response read with its group may have no uuid
    recorded: dict[int, dict] = {}  # by place in `new`: the usage a copied response recorded, which has a prompt
    for message in recent:
        origin = message.origin
        if not isinstance(origin, _Origin):
            raise ShapeError("compact can only carry over messages read from this log")
        original = origin.blocks  # once: a message read from lines kept in part reads them again
        for index in origin.records:
            blocks = tuple(b for b in message.blocks if b.line == index)
            if not blocks:
                continue  # a line whose only block was dropped (thinking)
            value = dict(whole_value(index, records[index], transcript.name))
            placeholders = any(type(b) is ToolResult and origin.cleared.get(b.tool_call_id) == b for b in blocks)
            if placeholders or blocks != tuple(b for b in original if b.line == index):
                value["message"] = {**value["message"], "content": codec.write_content(blocks, index in origin.string_records)}
            if placeholders:
                value.pop("toolUseResult", None)  # the UI copy of the cleared output; Claude Code drops it too
            if value.get("type") == ASSISTANT:
                usage = value["message"].get("usage")
                if isinstance(usage, dict) and _prompt(usage) > 0:
                    recorded[len(new)] = usage
                value["message"] = _copied_response(value["message"], boundary_uuid)
            old_uuid = value.get("uuid")
            # From the line, not its uuid: a broken log may give two lines one uuid, and the copies must differ.
            renamed[old_uuid] = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{boundary_uuid}:{old_uuid}:{index}"))
            if isinstance(value.get("sourceToolAssistantUUID"), str) and value["sourceToolAssistantUUID"] in renamed:
                value["sourceToolAssistantUUID"] = renamed[value["sourceToolAssistantUUID"]]
            value.update(parentUuid=new[-1]["uuid"], uuid=renamed[old_uuid], isSidechain=False,
                         timestamp=_iso(after + len(new) + 1))
            if "sessionId" in envelope:
                value["sessionId"] = envelope["sessionId"]
            new.append(value)
    # The new lines are read back from these values: only they are serialised, nothing is parsed again.
    kept = [] if drop_history else [record for record in records if record[1] is not BLANK]
    lines = kept + [(dumps(value, indent=False), value) for value in new] + [(b"", BLANK)]
    compacted = read(Parsed(transcript.name, b"", records=lines, bom=source.bom))
    if prompts is None or not recorded or (now := prompts(compacted)) is None:
        return compacted
    for message, prompt in zip(compacted.messages, now):
        for line in (message.origin.records if isinstance(message.origin, _Origin) else ()):
            usage = recorded.get(line - len(kept)) if line >= len(kept) else None  # a copy that recorded a prompt
            if usage is not None:
                value = new[line - len(kept)]
                value["message"] = {**value["message"], "usage": _usage_less(usage, _prompt(usage) - prompt)}
                lines[line] = (dumps(value, indent=False), value)
    return read(Parsed(transcript.name, b"", records=lines, bom=source.bom))


_ZEROED_USAGE = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _copied_response(message: dict, boundary_uuid: str) -> dict:
    """An assistant line's `message` as copied after a new boundary: a new id, the usage zeroed."""
    out = dict(message)
    if isinstance(out.get("id"), str):
        out["id"] = "msg_" + uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{boundary_uuid}:{out['id']}").hex
    if isinstance(out.get("usage"), dict):
        out["usage"] = {**out["usage"], **{key: 0 for key in _ZEROED_USAGE}}
    return out
