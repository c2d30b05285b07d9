"""JSON Lines of messages: one message object per line, in either dialect.

Lines that an operation did not change are written back byte for byte; blank lines stay
with the message that follows them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .. import dialects
from ..core.errors import Location, ParseError, ShapeError
from ..core.jsondata import BLANK, BOM, Lines, Parsed, Record, dumps, first_line_is_a_value, line_views, parse_value
from ..core.model import Message, Transcript
from .adapter import Format

NAME = "jsonl"
DESCRIPTION = "JSON Lines, one message object per line (either dialect)"
LINES = True  # a line is what a rewrite changes, keeps or removes


@dataclass(frozen=True)
class LinesSource:
    records: list[Record]  # the file's lines as read: (bytes, value)
    # by 1-based line number of each message: the indices in `records` of the blank lines before it and of its own
    lines: dict[int, tuple[int, ...]]
    tail: tuple[int, ...]  # the blank lines after the last message (b"" after a final newline)
    bom: bool = False  # the first line's bytes hold it; a rewritten first line needs it again
    crlf: bool = False  # lines end with \r\n: a line written anew does too


class UnreadLine(dict):
    """The value of a line left unread (`read_quickly`): its role, all that detection and
    `Parsed.values` see of it, and its view (`viewed`), which the message is counted and checked by."""

    __slots__ = ("viewed",)
    viewed: Any


_AN_OBJECT = re.compile(rb"\s*\{")


def read_quickly(data: bytes, name: str) -> Parsed | None:
    """JSON Lines of messages as `parse` reads them, each line whose shape `dialects.views` names
    left unread (an `UnreadLine`: its bytes decoded by the typed decoder, no value built), the
    others read whole; `read` makes a message of an unread line that reads it when first asked.

    None when the input is not JSON Lines of objects with a `role`, or anything is wrong with a
    line: the whole reading then decides, and says where.
    """
    bom = data.startswith(BOM)
    text = data[len(BOM):] if bom else data
    if not _AN_OBJECT.match(text) or not first_line_is_a_value(text):
        return None
    from ..dialects import views

    records: list[Record] = []
    for number, line, own in line_views(data, bom):
        viewed = views.view(own, 1)
        if viewed is not None:
            unread = UnreadLine(role=viewed.role)
            unread.viewed = viewed
            records.append((line, unread))
            continue
        if not bytes(own).strip():
            records.append((line, BLANK))
            continue
        try:
            value = parse_value(bytes(own), name, number)
        except ParseError:
            return None
        if not (isinstance(value, dict) and isinstance(value.get("role"), str)):
            return None
        records.append((line, value))
    return Parsed(name, data, records=records, bom=bom)


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    if parsed.records is None or messages_path is not None:
        return False
    values = parsed.values()
    return bool(values) and all(isinstance(v, dict) and isinstance(v.get("role"), str) for v in values)


def read(parsed: Parsed, messages_path: str | None = None, dialect: str | None = None) -> Transcript:
    """The messages in `dialect`, or in the one detected from them; a line left unread
    (`UnreadLine`) is a message read from its bytes when first asked for, where its view can count
    and check it in that dialect."""
    dialect = dialect or dialects.detect([v.viewed.shape if type(v) is UnreadLine else v for v in parsed.values()])
    codec = dialects.DIALECTS[dialect]
    reading = (codec, parsed.name)
    messages: list[Message] = []
    lines: dict[int, tuple[int, ...]] = {}
    pending: list[int] = []
    records = parsed.records or []
    for number, (line, value) in enumerate(records, start=1):
        if value is BLANK:
            pending.append(number - 1)
            continue
        try:
            if type(value) is UnreadLine:
                assert isinstance(line, (bytes, memoryview))  # an unread line is read from its bytes
                own = line[len(BOM):] if number == 1 and parsed.bom else line
                viewed = value.viewed
                if dialect == "anthropic" or viewed.string_content and viewed.role not in ("tool", "function"):
                    read_later = _LineReading(reading, own, len(messages), number)
                    messages.append(Message.unread(viewed.role, viewed.view, line, read_later, line=number))
                else:  # a view of the other dialect's shape: read now
                    messages.append(_LineReading(reading, own, len(messages), number)())
            else:
                messages.append(codec.read_message(value, index=len(messages), line=number))
        except ShapeError as error:
            raise ShapeError(error.message, location=Location(parsed.name, number)) from None
        lines[number] = (*pending, number - 1)
        pending = []
    # A line a rewrite made (given by its value, or cut from another), read back, says nothing: it is written without \r only in a file without.
    crlf = next((bytes(line[-1:]) == b"\r" for line, value in records if value is not BLANK and isinstance(line, (bytes, memoryview))), False)
    source = LinesSource(records, lines, tuple(pending), parsed.bom, crlf)
    return Transcript(format=NAME, dialect=dialect, messages=tuple(messages), name=parsed.name, source=source)


class _LineReading:
    """What reads the message of a line left unread (`Message.unread`'s `read`): one object a
    line, its dialect's codec and the file's name shared (`reading`), where a `partial` made three."""

    __slots__ = ("reading", "line", "index", "number")

    def __init__(self, reading: tuple[Any, str], line: Any, index: int, number: int):
        self.reading, self.line, self.index, self.number = reading, line, index, number

    def __call__(self) -> Message:
        codec, name = self.reading
        return codec.read_message(parse_value(bytes(self.line), name, self.number), index=self.index, line=self.number)


def write(transcript: Transcript) -> bytes:
    """Joined by newlines exactly as read: split(b"\\n") then join gives the input back."""
    return bytes(write_lines(transcript))


def write_lines(transcript: Transcript) -> Lines:
    """The lines of an unchanged message are the records read (their bytes, their values; a
    message still unread is unchanged); a changed one is given by its value, serialised as it is
    written (`jsondata.Lines`)."""
    source: LinesSource = transcript.source
    records = source.records
    codec = dialects.DIALECTS[transcript.dialect]
    out: list[Record] = []
    ending = b"\r" if source.crlf else b""
    for message in transcript.messages:
        read_as = None if message.line is None else source.lines.get(message.line)
        if read_as is not None and (message.data is not None or codec.is_unchanged(message)):
            out.extend(records[i] for i in read_as)
            continue
        if read_as is not None:  # rewritten in place: the blank lines before it stay
            out.extend(records[i] for i in read_as[:-1])
        value = codec.write_message(message)
        out.append((dumps(value, indent=False) + ending, value) if ending else (None, value))
    out.extend(records[i] for i in source.tail)
    if ending and out and type(out[-1][0]) is bytes:  # the file's last line, made anew: no line break after it, nor a CR
        out[-1] = (out[-1][0][:-len(ending)], out[-1][1])
    return Lines.of(out, bom=source.bom)


class JsonlFormat(Format):
    name, description, lines = NAME, DESCRIPTION, LINES
    detect, read, write, write_lines = staticmethod(detect), staticmethod(read), staticmethod(write), staticmethod(write_lines)

    def reload(self, parsed: Parsed, written: Transcript, messages_path: str | None = None) -> Transcript:
        """In the dialect it was written in: a file that no longer shows its dialect (a plain
        conversation) is not judged by the other dialect's rules."""
        return read(parsed, messages_path, dialect=written.dialect)


FORMAT = JsonlFormat()
