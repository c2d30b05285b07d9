"""Gemini CLI chats written back: a changed message's turns laid over the record they came from (its calls
holding their results), new records after the one before them; the legacy document spliced where
only its messages changed, the JSON Lines log rewritten in place or appended to."""

from __future__ import annotations

import io
import re
import uuid as uuidlib
from collections.abc import Iterable, Iterator
from typing import Any, cast

import orjson

from ...core.jsondata import BLANK, CutLine, Lines, Parsed, Record, cut_between, cut_line, dumps, line_bytes, nested_value, shared_with
from ...core.model import ASSISTANT, USER, Block, Message, Text, ToolCall, ToolResult, Transcript
from .._log import cost, restating_ratio, written_back
from .parsing import ViewedRecordLine
from .reader import (
    _TURNS,
    ChatSource,
    Entry,
    ViewedRecord,
    _Origin,
    call_results,
    content_turn,
    holds_turn,
    is_unchanged,
    line_record,
    listed_calls,
    message_spans,
    parts,
    placed,
    read,
    read_part,
    result_turn,
    unrecorded_messages,
    viewed_record,
    whole,
    write_part,
    write_results,
)
from .records import line_view, restated
from .views import read_quickly


def rebuilt_records(source: ChatSource, messages: tuple[Message, ...], *, keep_unread: bool = True) -> list[dict]:
    """The message records for `messages`, in order: a record whose turns did not change is the
    same object as read; one that changed is a copy with the new content and calls laid over it.

    `keep_unread` keeps the records no message was read from (info, ignored input) in their place.
    A message an operation added becomes a record of its own, except a user message of tool
    results only, which goes into the calls it answers (as the agent records results).
    A message still unread (of a viewed document read whole since) holds its turn as read,
    without reading it.
    """
    turns: dict[int, dict[str, tuple[Block, ...] | None]] = {}  # None: the turn as read
    as_read: dict[int, set[str]] = {}  # the turns of each record a message holds as they were read
    added: dict[int, list[Message]] = {}  # new messages, by the entry of the message before them
    folded: dict[int, list[ToolResult]] = {}
    last = -1
    folds = False  # whether results added after the message before go into its record's calls
    for message in messages:
        if not message.is_read and (at := placed(message)) is not None:
            entry, turn = at
            as_read.setdefault(entry, set()).add(turn)
            turns.setdefault(entry, {})[turn] = None
            last, folds = entry, True
            continue
        origin = message.origin
        if isinstance(origin, _Origin):
            blocks = message.blocks
            rest: tuple[Block, ...] = ()
            if is_unchanged(message):
                as_read.setdefault(origin.entry, set()).add(origin.turn)
            elif origin.turn == "results":
                # The calls hold the results the turn opens with; what follows them (a placeholder repair
                # left, a text an operation added) is a user record of its own right after the record.
                head = next((k for k, b in enumerate(blocks) if not isinstance(b, ToolResult)), len(blocks))
                blocks, rest = blocks[:head], blocks[head:]
                if rest:
                    added.setdefault(origin.entry, []).append(Message(USER, rest))
            turns.setdefault(origin.entry, {})[origin.turn] = blocks
            last, folds = origin.entry, not rest
        elif message.role == USER and message.blocks and all(isinstance(b, ToolResult) for b in message.blocks) and folds:
            folded.setdefault(last, []).extend(cast("tuple[ToolResult, ...]", message.blocks))  # each is one: all() above
        else:
            added.setdefault(last, []).append(message)
    records = [entry.record for entry in source.active]
    unread_kept = source.silent_entries if keep_unread else ()
    dropped = {index for index in range(len(records)) if index not in turns and index not in unread_kept}
    changed = {index: _rebuilt(records[index], held, folded.get(index, [])) for index, held in turns.items()
               if not _left_as_read(records[index], held, as_read.get(index), index in folded)}
    inserted = {index: [_new_record(m, records[index] if index >= 0 else None, n) for n, m in enumerate(new)]
                for index, new in added.items()}
    return [record for record, _ in written_back(records, dropped=dropped, changed=changed, inserted=inserted)]


def _left_as_read(record: dict, turns: dict[str, tuple[Block, ...] | None], as_read: set[str] | None, folded: bool) -> bool:
    """Whether a record's messages hold each of its turns as it was read (`_rebuilt` would give the
    record itself), told without reading the record again: no result folded into it, and each
    turn it has a message of as read; a model record whose results no message holds, only when it
    has none."""
    if folded or as_read is None or len(as_read) != len(turns):
        return False
    return record.get("type") != "gemini" or "results" in as_read or not result_turn(record)


def _rebuilt(record: dict, turns: dict[str, tuple[Block, ...] | None], folded: list[ToolResult]) -> dict:
    """The record with `turns` laid over it (a turn None: as read), and `folded` results in its calls."""
    model = record.get("type") == "gemini"
    if model:
        own = content_turn(record)
        in_content = holds_turn(own)  # else the calls live in `toolCalls` only
        read_content = own if in_content else own + listed_calls(record)  # `model_turn`
    else:
        read_content, in_content = tuple(read_part(p) for p in parts(record.get("content"))), True
    content = turns.get("content", ())
    content = read_content if content is None else content
    calls = record["toolCalls"] if isinstance(record.get("toolCalls"), list) else []
    answers = {id(c): call_results(c) for c in calls if isinstance(c, dict)}  # each call's results, read once
    read_results = tuple(r for c in calls if isinstance(c, dict) for r in answers[id(c)])  # `result_turn`
    # A results turn holds tool results only: as read, and as an operation leaves it.
    held = turns.get("results", ())
    results = (read_results if held is None else cast("tuple[ToolResult, ...]", held)) + tuple(folded)
    if content == read_content and results == read_results:
        return record
    new = dict(record)
    content_blocks = [b for b in content if in_content or not isinstance(b, ToolCall)]
    if content_blocks != [b for b in read_content if in_content or not isinstance(b, ToolCall)]:
        written = [write_part(b) for b in content_blocks]
        only = content_blocks[0] if len(content_blocks) == 1 else None
        new["content"] = only.text if isinstance(only, Text) and isinstance(record.get("content"), str) else written
    if model:
        new_calls = _calls(calls, [b for b in content if isinstance(b, ToolCall)],
                           [b for b in read_content if isinstance(b, ToolCall)], results, answers)
        if new_calls != calls:
            new["toolCalls"] = new_calls
    return new


def _calls(calls: list, call_blocks: list[ToolCall], read_blocks: list[ToolCall], results: tuple[ToolResult, ...],
           answers: dict[int, tuple[ToolResult, ...]]) -> list:
    """The `toolCalls` entries for the model turn's calls, each holding its results (`answers`: the
    results each entry of `calls` holds, by its id()).

    A call is found by its place while the turn keeps as many calls as its record has (repair
    renames ids), else by its id; one that no entry holds gets a new entry. The results go back
    into the calls they were read from while they keep their number and ids (an entry may hold
    another call's result: `call_results`), else each call holds the (last) result of its id.
    """
    by_id = {c.get("id"): c for c in calls if isinstance(c, dict)}
    aligned = len(call_blocks) == len(calls) == len(read_blocks)
    entries = [calls[place] if aligned and isinstance(calls[place], dict) else by_id.get(block.id)
               for place, block in enumerate(call_blocks)]
    held = [(place, r) for place, entry in enumerate(entries) if entry is not None for r in answers[id(entry)]]
    owned: list[list[ToolResult]] = [[] for _ in call_blocks]
    if [r.tool_call_id for _, r in held] == [r.tool_call_id for r in results]:
        for (place, _), result in zip(held, results):
            owned[place].append(result)
    else:
        by_answer = {r.tool_call_id: r for r in results}
        for place, block in enumerate(call_blocks):
            if block.id in by_answer:
                owned[place].append(by_answer[block.id])
    names = {block.id: block.name for block in call_blocks}
    out = []
    for place, block in enumerate(call_blocks):
        call = entries[place]
        if call is None:
            call = {"id": block.id, "name": block.name, "args": block.input, "status": "success"}
        new = dict(call)
        if not (aligned and block == read_blocks[place]):
            new.update(id=block.id, name=block.name, args=block.input)
        mine, before = owned[place], list(answers.get(id(call), ()))
        if not mine:
            if before:
                new["result"] = None
        elif before != mine:
            new["result"] = write_results(mine, call, names)
        out.append(new if new != call else call)
    return out


def _new_record(message: Message, before: dict | None, n: int) -> dict:
    """A record for the `n`th message an operation added after `before`, stamped like it; its id
    is made from them, so that the same rewrite gives the same file."""
    content = [write_part(b) for b in message.blocks if not isinstance(b, ToolCall)]
    seed = f"{before.get('id') if before else None}:{n}:{dumps(content, indent=False).decode()}"
    record: dict[str, Any] = {"id": str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, seed))}
    if before is not None and isinstance(before.get("timestamp"), str):
        record["timestamp"] = before["timestamp"]
    record.update(type="user" if message.role == USER else "gemini", content=content)
    calls = [b for b in message.blocks if isinstance(b, ToolCall)]
    if calls and message.role == ASSISTANT:
        record["toolCalls"] = _calls([], calls, [], (), {})
    return record


def write(transcript: Transcript) -> bytes:
    out = write_lines(transcript)
    return out if isinstance(out, bytes) else bytes(out)


def write_lines(transcript: Transcript) -> bytes | Lines:
    """The chat after a rewrite: the legacy document's bytes, or the JSON Lines log's lines as they
    are to be joined (`Lines`: its kept lines the input's own, read back as they were read)."""
    source: ChatSource = transcript.source
    if source.viewed is not None and (turns := _turns_laid_over(transcript)) is not None:
        if source.records is not None:
            return _lines_of_views(transcript, turns)
        assert source.document is not None  # (the legacy document's)
        if len(source.spans) == len(source.document["messages"]):
            return _spliced_views(transcript, turns)
    transcript = whole(transcript)
    source = transcript.source
    new = rebuilt_records(source, transcript.messages)
    old = [e.record for e in source.active]
    if len(new) == len(old) and all(a is b for a, b in zip(new, old)):
        return source.data if source.records is None else Lines(list(source.records))
    new = restated_usage(new, old, transcript)
    same_ids = [r.get("id") for r in new] == [r.get("id") for r in old]
    if source.records is None:
        document, layout = source.document, source.layout
        assert document is not None and layout is not None  # the legacy document: read sets both
        spans = source.spans if same_ids else []
        if len(spans) != len(document["messages"]) or not same_ids:
            if same_ids:  # what is no message (a null) stays where it was: the agent skips it
                rewritten = iter(new)
                new = [next(rewritten) if isinstance(m, dict) else m for m in document["messages"]]
            return layout.dumps({**document, "messages": new})
        return _spliced(source, new, spans)
    if same_ids:
        return _lines_with(source, zip(source.active, new))
    return Lines(append_line(list(source.records), {"$set": {"messages": new}}))


def _turns_laid_over(transcript: Transcript) -> dict[int, dict[str, tuple[Block, ...] | None]] | None:
    """Of a chat read by its views, the turns of each record a message holds (None: as read), by
    the record's entry, where the rewrite holds each message it read, in its order, as read or
    changed (a prune's), each in a place of its own. None for any other rewrite (messages added,
    dropped, moved): the chat is read whole (`whole`)."""
    if len(transcript.messages) != transcript.source.viewed:
        return None
    turns: dict[int, dict[str, tuple[Block, ...] | None]] = {}
    last = (-1, -1)
    for message in transcript.messages:
        if (at := placed(message)) is None:
            return None  # a message an operation made
        entry, turn = at
        blocks = None if not message.is_read or is_unchanged(message) else message.blocks
        if (entry, _TURNS.index(turn)) <= last or turn == "results" and blocks and not all(isinstance(b, ToolResult) for b in blocks):
            return None  # (what follows a record's results is a record of its own: `rebuilt_records`)
        last = (entry, _TURNS.index(turn))
        turns.setdefault(entry, {})[turn] = blocks
    return turns


def _rewritten_records(transcript: Transcript, turns: dict[int, dict[str, tuple[Block, ...] | None]]) -> Iterator[tuple[Entry, dict]]:
    """Each entry of a chat read by its views with its record as the rewrite leaves it (the
    entry's own where nothing changed), one at a time: one whose messages changed read whole from
    its bytes and rebuilt (`_rebuilt`), the `tokens` of each after the first change restated."""
    source: ChatSource = transcript.source
    changed = {entry for entry, held in turns.items() if any(blocks is not None for blocks in held.values())}
    taken = _taken(transcript)
    so_far = 0.0
    for index, entry in enumerate(source.active):
        record = entry.record
        if index in changed:
            read = _whole_record(source, entry)
            if (rebuilt := _rebuilt(read, turns[index], [])) is not read:
                record = rebuilt
        yield entry, _restated(record, round(so_far))
        so_far += taken.get(index, 0)


def _spliced_views(transcript: Transcript, turns: dict[int, dict[str, tuple[Block, ...] | None]]) -> bytes:
    """A legacy document read by its views (views.py), where its layout finds each of its messages
    (`ChatSource.spans`), written as `write` writes it whole, one record at a time (`_rewritten_records`: a large chat's pruned records are not all held)."""
    source: ChatSource = transcript.source
    return _spliced(source, (record for _, record in _rewritten_records(transcript, turns)), source.spans)


def _lines_of_views(transcript: Transcript, turns: dict[int, dict[str, tuple[Block, ...] | None]]) -> Lines:
    """A JSON Lines log read by its views (`parsing.ViewedRecordLine`) written as `write` writes it
    whole, one record at a time (`_rewritten_records`): a line whose record is as read keeps its
    bytes unread."""
    return _lines_with(transcript.source, _rewritten_records(transcript, turns))


def _whole_record(source: ChatSource, entry: Entry) -> dict:
    """A chat's record read whole, as the full reading reads it: one its view kept in part (a
    legacy document's `ViewedRecord`, a log's `ViewedRecordLine`) from its bytes; any other is."""
    record = entry.record
    if type(record) is ViewedRecordLine:
        assert source.records is not None and entry.line is not None  # (a record on a line of its own)
        return line_record(source.records[entry.line])
    if type(record) is ViewedRecord:
        assert source.document is not None and entry.position is not None  # (a viewed legacy document's)
        return viewed_record(memoryview(source.document["messages"][entry.position]), 3)
    return record


def _spliced(source: ChatSource, new: Iterable[dict], spans: list[tuple[int, int]]) -> bytes:
    """The legacy document with each changed message written on one line where it was (one whose
    `tokens` alone were restated keeps its own bytes but the figures: `_restated_figures`): the
    rest keeps its bytes, and the file never gains a line. A restated record its view kept in
    part that cannot keep its bytes is read whole to be written anew."""
    data = source.data
    kept = memoryview(data)  # (what is kept is written from the input's bytes: not copied first)
    out = io.BytesIO()  # (each changed record written at once, not held until the end; its buffer is the output)
    end = 0
    for entry, record in zip(source.active, new):
        if record is not entry.record:
            assert entry.position is not None  # every entry of the legacy document has its place
            start, stop = spans[entry.position]
            text = data[start:stop]
            if (figures := _restated_figures(text, entry.record, record)) is not None:
                written: bytes | CutLine = cut_line(text, len(text), figures)[0]
            else:
                written = dumps(_every_field(source, entry, record), indent=False)
            out.write(kept[end:start])
            out.write(bytes(written))
            end = stop
    out.write(kept[end:])
    return out.getvalue()


def _lines_with(source: ChatSource, new: Iterable[tuple[Entry, dict]]) -> Lines:
    """The log's lines with each entry's record as `new` gives it, where it is not the entry's own:
    on a line of its own, the line keeps its bytes but the figures where only its `tokens` were
    restated (`_restated_figures`: a `CutLine`), else it is written anew; inside a line's
    `messages` (a `$set`), that line is written anew once, with all its changed records."""
    records = list(source.records or ())
    held: dict[int, dict[int, dict]] = {}  # the changed records inside a line's messages, by line and place
    for entry, record in new:
        if record is entry.record:
            continue
        assert entry.line is not None  # every entry of a JSON Lines log has its line
        if entry.position is not None:
            held.setdefault(entry.line, {})[entry.position] = record
            continue
        line = records[entry.line][0]
        assert isinstance(line, (bytes, memoryview))  # (the input's own line)
        text = bytes(line)
        if (figures := _restated_figures(text, entry.record, record)) is not None:
            kept = entry.record
            records[entry.line] = (cut_line(line, len(text), figures)[0],
                                   restated(kept, record["tokens"]) if type(kept) is ViewedRecordLine else record)
        else:
            record = _every_field(source, entry, record)
            written = dumps(record, indent=False)
            if type(entry.record) is ViewedRecordLine and (view := line_view(memoryview(written), ViewedRecordLine)) is not None:
                records[entry.line] = (cut_between(line, written), view)  # (a view as the log's others: read back as read)
            else:
                records[entry.line] = (written, record)
    for number, changed in held.items():
        value = records[number][1]
        key = "$set" if "$set" in value and isinstance(value["$set"].get("messages"), list) else None
        holder = value["$set"] if key is not None else value
        messages = [changed.get(place, message) for place, message in enumerate(holder["messages"])]
        value = {**value, key: {**holder, "messages": messages}} if key is not None else {**value, "messages": messages}
        records[number] = (dumps(value, indent=False), value)
    return Lines.of(records, bom=source.bom)  # (a first line written anew gets its byte-order mark back)


def _every_field(source: ChatSource, entry: Entry, record: dict) -> dict:
    """A record to be written anew with every field it has: one its view kept in part, given its
    restated `tokens` (no more), read whole from its bytes first."""
    if type(entry.record) in (ViewedRecord, ViewedRecordLine) and record.keys() == entry.record.keys():
        return {**_whole_record(source, entry), **record}
    return record


# A record's `tokens` as the agent writes them: an object of numbers (its key written once in the
# record: a key in a string shows its quotes escaped), and one figure of it.
_TOKENS = re.compile(rb'"tokens":\s*\{[^{}\[\]"]*(?:"[^"\\]*"[^{}\[\]"]*)*\}')
_FIGURE = re.compile(rb'"(input|total)":\s*(-?\d+)')


def _restated_figures(text: bytes, old: dict, new: dict) -> list[tuple[int, int, bytes, str]] | None:
    """Where a record's bytes hold the figures of its `tokens` that `restated_usage` restates
    (`input`, `total`), each with its new bytes (a cut: `jsondata.cut_line`), where that is all
    that changed: every other byte stays as the agent laid it out; proven by reading the new
    `tokens` back. None else: the record is written anew."""
    if new.keys() != old.keys() or any(new[key] is not old[key] for key in old if key != "tokens"):
        return None
    found = list(_TOKENS.finditer(text))
    if len(found) != 1 or text.count(b'"tokens":') != 1:
        return None
    tokens = found[0]
    figures = [(match.group(1).decode(), match) for match in _FIGURE.finditer(text, tokens.start(), tokens.end())]
    if len({name for name, _ in figures}) != len(figures) or any(type(new["tokens"].get(name)) is not int for name, _ in figures):
        return None
    cuts = [(match.start(2), match.end(2), str(new["tokens"][name]).encode(), name) for name, match in figures]
    restated = bytes(cut_line(text, len(text), cuts)[0])
    try:
        if orjson.loads(restated[tokens.start() + len(b'"tokens":'):tokens.end() + len(restated) - len(text)]) != new["tokens"]:
            return None
    except orjson.JSONDecodeError:
        return None
    return cuts


def read_back(data: bytes, written: Transcript) -> Transcript | None:
    """A legacy document a rewrite spliced (`_spliced`), read back without parsing what it kept:
    where its layout (`message_spans`: messages with commas between them) finds as many messages
    as the input's, between the same bytes before and after them, a message of the same bytes as
    the input's is the value read from them; the others are parsed. None for anything else (a JSON
    Lines log, a document written again whole): it is parsed whole."""
    source: ChatSource = written.source
    document = source.document
    if source.viewed is not None and source.records is None:
        return read_quickly(data, written.name)  # read back as the input was: by views
    if source.records is not None or document is None:
        return None
    old, new = source.spans, message_spans(data)
    if not new or len(new) != len(old) or len(old) != len(document["messages"]) \
            or data[:new[0][0]] != source.data[:old[0][0]] or data[new[-1][1]:] != source.data[old[-1][1]:]:
        return None
    try:
        messages = [value if data[start:end] == source.data[was_start:was_end] else shared_with(nested_value(data[start:end], 3), value)
                    for (start, end), (was_start, was_end), value in zip(new, old, document["messages"])]
    except ValueError:  # not JSON: the whole reading says where
        return None
    return read(Parsed(written.name, data, document={**document, "messages": messages}, bom=source.bom))


def restated_usage(new: list[dict], old: list[dict], transcript: Transcript) -> list[dict]:
    """`new` with the recorded `tokens` of each record after a change restated: its prompt (`input`,
    and `total` with it) less what the change took out of the messages before it that a usage
    counts (`unrecorded_messages` aside), by the model the rewrite was counted with
    (`restating_ratio`); the output and the other parts as recorded. Where the records no longer
    pair with those read (messages added or removed), `tokens` are cleared on every record after
    the first that changed: each counted a prompt that held the old content, and read as usage it
    would anchor every later count on it."""
    first = next((i for i, (a, b) in enumerate(zip(new, old)) if a is not b), min(len(new), len(old)))
    if len(new) != len(old) or any(a.get("id") != b.get("id") for a, b in zip(new, old)):
        return new[:first + 1] + [{**r, "tokens": None} if isinstance(r.get("tokens"), dict) else r for r in new[first + 1:]]
    taken = _taken(transcript)
    out, so_far = [], 0.0
    for entry, record in enumerate(new):
        out.append(_restated(record, round(so_far)))
        so_far += taken.get(entry, 0)
    return out


def _taken(transcript: Transcript) -> dict[int, float]:
    """The tokens a rewrite took out of each entry's messages that a usage counts, by entry (a
    message still unread is as it was read)."""
    ratio, frame = restating_ratio(transcript), transcript.tokens_per_block
    unrecorded = unrecorded_messages(transcript)
    taken: dict[int, float] = {}
    if not ratio:  # none restated (`restating_ratio`): not even an image's figure
        return taken
    for index, message in enumerate(transcript.messages):
        if not message.is_read:
            continue
        origin = message.origin
        if isinstance(origin, _Origin) and index not in unrecorded and not is_unchanged(message):
            taken[origin.entry] = taken.get(origin.entry, 0) + origin.cost(ratio, frame) - sum(cost(b, ratio, frame) for b in message.blocks)
    return taken


def _restated(record: dict, less: int) -> dict:
    """The record with its recorded prompt `less` tokens smaller (itself when 0 or it records none)."""
    tokens = record.get("tokens")
    if less and isinstance(tokens, dict) and type(tokens.get("input")) is int:
        return {**record, "tokens": _tokens_less(tokens, less)}
    return record


def _tokens_less(tokens: dict, less: int) -> dict:
    """A record's `tokens` whose prompt (`input`, and the `total` it is part of) counts `less` fewer."""
    new = {**tokens, "input": max(0, tokens["input"] - less)}
    if type(tokens.get("total")) is int:
        new["total"] = tokens["total"] - (tokens["input"] - new["input"])
    return new


def append_line(records: list[Record], value: dict) -> list[Record]:
    """The records with one more line, before the final newline if the file ends with one."""
    ends_blank = bool(records) and records[-1][1] is BLANK and not bytes(line_bytes(records[-1])).strip()
    body = records[:-1] if ends_blank else list(records)
    return body + [(dumps(value, indent=False), value)] + ([(b"", BLANK)] if ends_blank else [])


def rewrites_lines(transcript: Transcript) -> bool:
    """A line of the JSON Lines log; in the legacy document, a message (a changed one shrinks to
    one line, so the lines of the rest no longer pair with those read)."""
    return transcript.source.records is not None
