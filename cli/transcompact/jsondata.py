"""Input bytes → one JSON document or JSON Lines, with the location of anything malformed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .errors import Location, ParseError

BLANK = object()  # the value of a blank line in JSON Lines


@dataclass
class Parsed:
    """What the input holds: `document` when it is one JSON value, `records` when it is JSON Lines.

    A single line that is one JSON value is both. `records` pairs each line's bytes (without its
    newline) with its value; the last record is the empty text after a final newline, if any.
    """

    name: str
    data: bytes
    document: Any = None
    records: list[tuple[bytes, Any]] | None = None
    # What detection found out, so that formats tried one after another do not scan it again.
    detected: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def is_document(self) -> bool:
        return self.records is None or len(self.values()) == 1

    def values(self) -> list[Any]:
        return [v for _, v in self.records or () if v is not BLANK]


def parse(data: bytes, name: str) -> Parsed:
    if not data.strip():
        raise ParseError("the input is empty", location=Location(name))
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as whole:
        return Parsed(name, data, records=_parse_lines(data, name, whole))
    records = None
    if isinstance(document, dict) and _could_be_a_record(document) and b"\n" not in data.rstrip():
        # One line: also a JSON Lines file of one record (the value already parsed, not parsed again).
        records = [(line, document if i == 0 else BLANK) for i, line in enumerate(data.split(b"\n"))]
    return Parsed(name, data, document=document, records=records)


def _could_be_a_record(value: dict) -> bool:
    """A message (`role`) or a log line (`type`, `uuid`); a request body or an envelope is not."""
    return "role" in value or "type" in value or "uuid" in value


def _parse_lines(data: bytes, name: str, whole: orjson.JSONDecodeError | None) -> list[tuple[bytes, Any]]:
    records: list[tuple[bytes, Any]] = []
    loads = orjson.loads
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            records.append((line, BLANK))
            continue
        try:
            records.append((line, loads(line)))
        except orjson.JSONDecodeError as error:
            if whole is not None and not any(v is not BLANK for _, v in records):
                # The first value is already broken: this is one malformed document, not JSON Lines.
                raise ParseError(
                    f"malformed JSON: {whole.msg}", location=Location(name, whole.lineno, whole.colno)
                ) from None
            raise ParseError(
                f"malformed JSON line: {error.msg}",
                location=Location(name, number, error.colno),
                hint="every line of a JSON Lines file must be one complete JSON value",
            ) from None
    return records


def dumps(value: Any, *, indent: bool) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
