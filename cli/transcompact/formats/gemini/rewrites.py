"""Gemini CLI's part of `compact` and `prune`: a compaction recorded the way the agent records a
rewritten history (`updateMessagesFromHistory`): one appended `{"$set": {"messages": [...]}}`
line that replaces every message record before it; and the UI's copies of tool results
(`resultDisplay`) made to match what prune left."""

from __future__ import annotations

import uuid as uuidlib
from dataclasses import replace

from ...core.errors import ShapeError
from ...core.jsondata import Parsed
from ...core.model import ASSISTANT, Message, ToolResult, Transcript, result_text
from ...core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX
from .._log import Prompts
from .reader import ChatSource, Entry, _Origin, is_unchanged, read, result_turn, whole
from .writer import _tokens_less, _whole_record, append_line, rebuilt_records


def replace_ui_copies(transcript: Transcript) -> Transcript:
    """Give each changed result's call a `resultDisplay` (the text the agent's UI shows) equal to
    the result's new text, so that a pruned chat is pruned for the UI too. A display that is not
    text (a file diff) is left as it is."""
    transcript = whole(transcript)
    source: ChatSource = transcript.source
    active = list(source.active)
    for message in transcript.messages:
        origin = message.origin
        if not isinstance(origin, _Origin) or origin.turn != "results" or is_unchanged(message):
            continue
        record = active[origin.entry].record
        as_read = origin.blocks if origin.released is None else result_turn(record)  # (its reading let go of: read again)
        changed = {b.tool_call_id: b for b in message.blocks if isinstance(b, ToolResult) and b not in as_read}
        calls = [{**c, "resultDisplay": result_text(changed[c["id"]])}
                 if isinstance(c, dict) and c.get("id") in changed and isinstance(c.get("resultDisplay"), str) else c
                 for c in record["toolCalls"]]
        active[origin.entry] = replace(active[origin.entry], record={**record, "toolCalls": calls})
    return replace(transcript, source=replace(source, active=tuple(active)))


def append_compaction(transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                      *, drop_history: bool = False, prompts: Prompts | None = None) -> Transcript:
    """The log with the compacted messages appended as a `$set`, read back as a transcript.

    The new list is the summary pair (a user record, then a gemini record acknowledging it, but
    where the window begins with the model's part of a turn the cut split) and the records of the
    recent window, with their ids (a record the window changed is written
    with its change). Their `tokens` are cleared: they counted a context that no longer exists;
    with `prompts` (the model compact counted with), a record's recorded prompt (`input`, and
    `total` with it) is restated instead, as that model counts the prompt it now follows (the
    summary and the window before it), its output as it was: so the new list's usage lies on the
    model (the history it was fitted on may go, with `drop_history`), and `estimate` of the output
    says what compact reported.
    With `drop_history` the JSON Lines log keeps only its metadata line before the `$set`. The
    legacy document has no lines to append to: its `messages` array becomes the new list (the
    agent moves such a file to JSON Lines when it resumes it anyway).
    """
    if any(not isinstance(m.origin, _Origin) for m in recent):
        raise ShapeError("compact can only carry over messages read from this chat")
    if transcript.source.records is None:
        transcript = whole(transcript)  # (the legacy document's fields around its messages: a view holds none)
    source = _recent_read_whole(transcript.source, recent)
    kept = rebuilt_records(source, recent, keep_unread=False)
    if prompts is None:
        kept = [_without_usage(r) for r in kept]
    stamp = next((stamp for entry in reversed(source.active)
                  if isinstance(stamp := _whole_record(source, entry).get("timestamp"), str)), None)
    seed = f"{[e.record.get('id') for e in source.active[-1:]]}:compaction:{pre_tokens}"
    summary_id = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, seed))
    pair = [{"id": summary_id, **_at(stamp), "type": "user", "content": [{"text": SUMMARY_PREFIX + summary}]}]
    if not (recent and recent[0].role == ASSISTANT):  # a turn split by the cut: its model part follows the summary
        pair.append({"id": str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{summary_id}:ack")), **_at(stamp), "type": "gemini",
                     "content": [{"text": SUMMARY_ACK}]})
    messages = pair + kept

    def written(messages: list[dict]) -> Transcript:
        if source.records is None:
            assert source.document is not None and source.layout is not None  # the legacy document: read sets both
            document = {**source.document, "messages": messages}
            return read(Parsed(transcript.name, source.layout.dumps(document), document=document, bom=source.bom))
        records = source.records[:1] if drop_history else source.records
        lines = append_line(list(records), {"$set": {"messages": messages}})
        return read(Parsed(transcript.name, b"", records=lines, bom=source.bom))  # (its bytes are its lines': not copied)

    compacted = written(messages)
    if prompts is None:
        return compacted
    return written(_restated(compacted, messages, prompts(compacted), len(pair)))


def _recent_read_whole(source: ChatSource, recent: tuple[Message, ...]) -> ChatSource:
    """`source` with the records of the recent window read whole (those its view kept in part,
    `writer._whole_record`): the new list holds them, every field; the rest stay as read."""
    entries = {m.origin.entry for m in recent}
    if source.viewed is None or not entries:
        return source
    active = tuple(Entry(_whole_record(source, e), e.line, e.position) if index in entries else e
                   for index, e in enumerate(source.active))
    return replace(source, active=active)


def _restated(compacted: Transcript, records: list[dict], prompts: list[int] | None, first: int) -> list[dict]:
    """The records of the new list (the window's from `first` on), each with its recorded prompt
    restated to what `prompts` says of its model turn in `compacted`; cleared without `prompts`."""
    out = [_without_usage(r) for r in records]
    if prompts is None:
        return out
    for message, prompt in zip(compacted.messages, prompts):
        origin = message.origin
        if not isinstance(origin, _Origin) or origin.turn != "content" or origin.entry < first or origin.entry >= len(records):
            continue
        tokens = records[origin.entry].get("tokens")
        if isinstance(tokens, dict) and type(tokens.get("input")) is int and tokens["input"] > 0:
            out[origin.entry] = {**records[origin.entry], "tokens": _tokens_less(tokens, tokens["input"] - prompt)}
    return out


def _at(stamp: str | None) -> dict:
    return {"timestamp": stamp} if stamp is not None else {}


def _without_usage(record: dict) -> dict:
    return {**record, "tokens": None} if isinstance(record.get("tokens"), dict) else record
