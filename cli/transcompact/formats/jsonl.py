"""JSON Lines of messages: one message object per line, in either dialect.

Lines that an operation did not change are written back byte for byte; blank lines stay
with the message that follows them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dialects
from ..errors import Location, ShapeError
from ..jsondata import BLANK, BOM, Parsed, dumps
from ..model import Transcript

NAME = "jsonl"
DESCRIPTION = "JSON Lines, one message object per line (either dialect)"
LINES = True  # a line is what a rewrite changes, keeps or removes


@dataclass(frozen=True)
class LinesSource:
    # by 1-based line number of each message: the blank lines before it and its own bytes
    lines: dict[int, tuple[bytes, ...]]
    tail: tuple[bytes, ...]  # the blank lines after the last message (b"" after a final newline)
    bom: bool = False  # the first line's bytes hold it; a rewritten first line needs it again
    crlf: bool = False  # lines end with \r\n: a line written anew does too


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    if parsed.records is None or messages_path is not None:
        return False
    values = parsed.values()
    return bool(values) and all(isinstance(v, dict) and isinstance(v.get("role"), str) for v in values)


def read(parsed: Parsed, messages_path: str | None = None, dialect: str | None = None) -> Transcript:
    """The messages in `dialect`, or in the one detected from them."""
    dialect = dialect or dialects.detect(parsed.values())
    codec = dialects.DIALECTS[dialect]
    messages, lines = [], {}
    pending: list[bytes] = []
    for number, (line, value) in enumerate(parsed.records or (), start=1):
        if value is BLANK:
            pending.append(line)
            continue
        try:
            messages.append(codec.read_message(value, index=len(messages), line=number))
        except ShapeError as error:
            raise ShapeError(error.message, location=Location(parsed.name, number)) from None
        lines[number] = (*pending, line)
        pending = []
    crlf = next((bytes(line[-1:]) == b"\r" for line, value in parsed.records or () if value is not BLANK), False)
    source = LinesSource(lines, tuple(pending), parsed.bom, crlf)
    return Transcript(format=NAME, dialect=dialect, messages=tuple(messages), name=parsed.name, source=source)


def write(transcript: Transcript) -> bytes:
    """Joined by newlines exactly as read: split(b"\\n") then join gives the input back."""
    source: LinesSource = transcript.source
    codec = dialects.DIALECTS[transcript.dialect]
    pieces: list[bytes] = []
    ending = b"\r" if source.crlf else b""
    for message in transcript.messages:
        read_as = source.lines.get(message.line)
        if read_as is not None and codec.is_unchanged(message):
            pieces.extend(read_as)
            continue
        if read_as is not None:  # rewritten in place: the blank lines before it stay
            pieces.extend(read_as[:-1])
        pieces.append(dumps(codec.write_message(message), indent=False) + ending)
    pieces.extend(source.tail)
    out = b"\n".join(pieces)
    return BOM + out if source.bom and not out.startswith(BOM) else out
