"""A legacy Gemini CLI document read for counting and pruning without building its messages
(`read_quickly`, for `loads(lazily=True)` and `"logs"`): each record is read by the typed decoder
of `records` from its bytes, and a record of the shape Gemini CLI writes (its content a string or
text parts, each call's result a string or `functionResponse` parts with an `output` or an `error`
string) gives messages
left unread, with the sizes of their blocks; their blocks are read from the record's bytes when
first asked for. The writer reads whole only the records whose messages changed
(`writer._spliced_views`; a rewrite that adds, drops or moves a message reads the document whole
again, `reader.whole`). Any other record is read whole, as the full reading reads it; a document
of another shape is left to the full reading, which says what is wrong with it.

A record is viewed only when everything it holds is a field `records` names, of the type it names:
the decoder has then checked all of it (UTF-8, escapes, nesting) as the full reading would, and
the blocks read later from the same bytes are the ones the sizes describe. A line of the JSON
Lines log is viewed so too (`records.line_view`; its writer: `writer._lines_of_views`).
"""

from __future__ import annotations

import msgspec
from msgspec import Raw, Struct

from ...core.jsondata import BOM, Layout, first_line_is_a_value, nested_value
from ...core.model import (
    Message,
    MessageView,
    Transcript,
)
from ...dialects.views import ABSENT
from . import records
from .reader import NAME, ChatSource, Entry, LastRead, TurnReading, ViewedRecord, _check_call_ids, entry_messages, viewed_record


# The fields of the document around its messages, each read whole (as the full reading reads them).
class _Document(Struct, forbid_unknown_fields=True):
    sessionId: Raw
    messages: list[Raw]
    projectHash: Raw = ABSENT
    startTime: Raw = ABSENT
    lastUpdated: Raw = ABSENT
    kind: Raw = ABSENT
    summary: Raw = ABSENT
    directories: Raw = ABSENT


_DOCUMENT = msgspec.json.Decoder(_Document)


def read_quickly(data: bytes, name: str) -> Transcript | None:
    """The legacy document as `reader.read` reads it, the messages of each record of the agent's
    shape left unread; None for any other input (the full reading decides, and says where).
    `loads` offers it only a document whose first key is `sessionId` (the registration's)."""
    bom = data.startswith(BOM)
    text = data[len(BOM):] if bom else data
    if first_line_is_a_value(text):
        return None  # not a legacy document (the JSON Lines log begins with its metadata line)
    try:
        document = _DOCUMENT.decode(text)
        # The agent's own documents only (`reader.is_metadata`): any other is detected by the full reading.
        if not document.projectHash or not all(
                isinstance(nested_value(bytes(field), 2), str) for field in (document.sessionId, document.projectHash)):
            return None
        for field in (document.startTime, document.lastUpdated, document.kind, document.summary, document.directories):
            if field:
                nested_value(bytes(field), 2)  # as the full reading checks it (its depth)
        last = LastRead()
        active: list[Entry] = []
        messages: list[Message] = []
        silent_entries = []
        for position, raw in enumerate(document.messages):
            index = len(active)
            made = _read(raw, position, index, last, name)
            if made is None:
                continue  # the agent skips it, as the full reading does
            active.append(made[0])
            messages += made[1]
            if not made[1]:
                silent_entries.append(index)
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    source = ChatSource(None, {"messages": document.messages}, Layout.of(data), data, tuple(active), frozenset(silent_entries), bom,
                        viewed=len(messages))
    return Transcript(format=NAME, dialect="anthropic", messages=tuple(messages), name=name, source=source)


def _read(raw: Raw, position: int, index: int, last: LastRead, name: str) -> tuple[Entry, tuple[Message, ...]] | None:
    """The `position`th record of a document, which takes the `index`th entry: read by its view,
    else whole (None: no object)."""
    view = _viewed(raw, index, last)
    if view is not None:
        return Entry(view[0], None, position), view[1]
    record = nested_value(bytes(raw), 3)
    if not isinstance(record, dict):
        return None
    entry = Entry(record, None, position)
    _check_call_ids((entry,), name)
    return entry, entry_messages(index, record, None)


def _viewed(raw: Raw, index: int, last: LastRead) -> tuple[ViewedRecord, tuple[Message, ...]] | None:
    """What is kept of a record of a document read by its view (its `id`, `type` and `tokens`) and
    its messages left unread, as `reader.entry_messages` reads them; None: it is read whole."""
    found = records.viewed(raw, 3, ViewedRecord)
    if found is None:
        return None
    fields, sent = found
    return fields, tuple(Message.unread(role, MessageView(sizes, seen), None, _ReadLater(raw, index, turn, last))
                                       for turn, (role, sizes, seen) in enumerate(sent))


class _ReadLater(TurnReading):
    """A message of a document's record its view read, read from the record's bytes when first
    asked for."""

    __slots__ = ("raw",)

    def __init__(self, raw: Raw, index: int, turn: int, last: LastRead) -> None:
        super().__init__(index, turn, last)
        self.raw = raw

    def record_messages(self) -> tuple[Message, ...]:
        return entry_messages(self.index, viewed_record(memoryview(self.raw), 3), None)
