"""Input bytes → one JSON document or JSON Lines, with the location of anything malformed.

What is read must be writable again exactly, which orjson alone does not promise:
- a UTF-8 byte-order mark is skipped for parsing and kept: the first line's bytes still hold it,
  `Parsed.bom` tells writers, and `Layout.dumps` puts it back;
- orjson reads an integer beyond 64 bits as a float, and writes floats in its own spelling
  (`1e5` → `100000.0`): in a value that holds a float, a number orjson would spell differently is
  kept as an `orjson.Fragment` of its text (a value no operation looks into, written back as it
  was), the text found by the float's value among the members' numbers, or, where that is not
  certain, by the standard library's reading, which hands over each number's text;
- orjson refuses a number beyond a double (`1e400`, an integer of 309 digits), which is JSON:
  such a value is read by the standard library too, each such number kept as written;
- orjson reads 1024 levels of nesting but writes only 254: deeper input is refused on read.
Both checks take one walk over the containers of what was parsed, not over the bytes.
"""

from __future__ import annotations

import functools
import gc
import itertools
import math
import operator
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from .errors import Location, ParseError, option

BLANK = object()  # the value of a blank line in JSON Lines


class PartialLine(dict):
    """A line's value as a format's lazy trim keeps it (`Format.lazy_trim`, for work that mostly
    counts): the fields it names, and what the format saw of the rest on the way (`seen`). That
    format reads the rest from the line's bytes when it is asked for; no other reads such a line."""

    __slots__ = ("seen", "as_written")
    seen: Any
    # Set (True) where its line is what orjson writes of the value read from it: each member of the
    # line is then written as its key and its value's JSON (`with_member_replaced`). Unset: not known.
    as_written: bool


class CutLine:
    """A line made of another (an input line) by `without_members` or `with_member_replaced`: the spans of that line it keeps
    (start, end, …) and what goes between them (`inserts`: one insert's bytes, several in a tuple;
    None: nothing), not a copy, so that a large log's slimmed lines are not held a second time until
    they are written (each is small: a large log's restated lines are many). It reads as the
    value it is paired with (proven, or read to make sure): `parse_written` takes it as it is.
    `bytes()` (and `line_bytes`) gives it, as `Lines` writes it."""

    __slots__ = ("source", "spans", "inserts")

    def __init__(self, source: bytes | memoryview, spans: array, inserts: bytes | tuple[bytes, ...] | None) -> None:
        self.source, self.spans, self.inserts = source, spans, inserts

    def __len__(self) -> int:
        spans, inserts = self.spans, self.inserts
        kept = sum(spans[i + 1] - spans[i] for i in range(0, len(spans), 2))
        return kept + (0 if inserts is None else len(inserts) if isinstance(inserts, bytes) else sum(map(len, inserts)))

    def __bytes__(self) -> bytes:
        source, spans, inserts = self.source, self.spans, self.inserts
        if inserts is None:
            return b"".join([source[spans[i]:spans[i + 1]] for i in range(0, len(spans), 2)])
        between = (inserts,) if isinstance(inserts, bytes) else inserts
        parts = [source[spans[0]:spans[1]]]
        for i in range(2, len(spans), 2):
            parts += (between[i // 2 - 1], source[spans[i]:spans[i + 1]])
        return b"".join(parts)


# A line of JSON Lines and its value: the line's bytes (a view into the input, bytes made anew, or
# a `CutLine`), or None for a line given by its value, whose bytes are made when it is written.
Record = tuple["bytes | memoryview | CutLine | None", Any]
BOM = b"\xef\xbb\xbf"
MAX_DEPTH = 254  # the deepest nesting orjson.dumps writes
_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'  # a JSON string, its escapes and all (what the scans below skip whole)


@dataclass
class Parsed:
    """What the input holds: `document` when it is one JSON value, `records` when it is JSON Lines.

    A single line that is one JSON value is both. `records` pairs each line's bytes (without its
    newline; the first keeps a byte-order mark; a memoryview into `data`) with its value; the last record is the empty text
    after a final newline, if any.
    """

    name: str
    data: bytes
    document: Any = None
    records: list[Record] | None = None
    # What detection found out, so that formats tried one after another do not scan it again.
    detected: dict[Any, Any] = field(default_factory=dict, repr=False)
    bom: bool = False

    @property
    def is_document(self) -> bool:
        if self.records is None:
            return True
        values = (v for _, v in self.records if v is not BLANK)
        return next(values, BLANK) is not BLANK and next(values, BLANK) is BLANK

    def values(self) -> list[Any]:
        """The value of each line but blank ones (made once: each format's detection asks)."""
        if (values := self.detected.get(_VALUES)) is None:
            values = self.detected[_VALUES] = [v for _, v in self.records or () if v is not BLANK]
        return values


_VALUES = object()  # `Parsed.detected`'s key for `values`


@dataclass(frozen=True)
class Layout:
    """How a JSON document was laid out, so that a rewritten one looks the same."""

    indent: bool = False
    newline: bool = False
    bom: bool = False

    @classmethod
    def of(cls, data: bytes) -> Layout:
        head = data[:512]
        return cls(indent=b"\n " in head or b"\n\t" in head, newline=data.endswith(b"\n"), bom=data.startswith(BOM))

    def dumps(self, value: Any) -> bytes:
        out = dumps(value, indent=self.indent)
        return (BOM if self.bom else b"") + out + (b"\n" if self.newline else b"")


@dataclass(frozen=True)
class Lines:
    """A JSON Lines file as a rewrite makes it: each line's bytes (without its newline) with the
    value it holds, joined by newlines only as it is written out.

    A large log is neither copied whole nor held twice: its unchanged lines are still the input's
    own records (views into the input, and the values read from them), and a line made anew may
    be given as `(None, value)`, serialised each time its bytes are needed (`dumps` gives the same
    bytes each time: the bytes `parse_written` reads back are the bytes written), or as
    `(bytes, None)`, its bytes made at once (a log read in part holds no value of it).
    """

    records: list[Record]

    @classmethod
    def of(cls, records: list[Record], *, bom: bool) -> Lines:
        """The lines of a file that began with a byte-order mark (`bom`) begin with it again,
        though the line that held it was made anew or went."""
        first = bytes(cls(records[:1])) if bom else BOM
        if not first.startswith(BOM):
            records[:1] = [(BOM + first, records[0][1] if records else BLANK)]
        return cls(records)

    def __bytes__(self) -> bytes:
        return b"".join(self.chunks())

    def __len__(self) -> int:
        if self._crlf():
            return sum(map(len, self.chunks()))
        return sum(len(line_bytes(record)) if record[0] is None else len(record[0]) for record in self.records) + max(
            len(self.records) - 1, 0)

    def chunks(self) -> Iterator[bytes | memoryview]:
        """The file's bytes in order, a line or a newline at a time; in a file whose lines end in
        CRLF, a line made anew ends so too (not one of its lines LF alone)."""
        crlf = self._crlf()
        last = len(self.records) - 1
        for i, record in enumerate(self.records):
            if i:
                yield b"\n"
            written = line_bytes(record)
            if crlf and i == last and bytes(written[-1:]) == b"\r":
                written = written[:-1]  # (the line after it went, as a file without a last line break: no lone CR)
            yield written
            if crlf and _needs_cr(record, written, i == last):
                yield b"\r"

    def _crlf(self) -> bool:
        """Whether the input's lines end in CRLF: told by the first of its own lines (a view into it)."""
        line = next((line for line, _ in self.records if type(line) is memoryview and len(line)), None)
        return line is not None and bytes(line[-1:]) == b"\r"

    def __reduce__(self):
        # A worker process hands its output over as the bytes (views into its input cannot travel).
        return bytes, (bytes(self),)


def _needs_cr(record: Record, written: bytes | memoryview, last: bool) -> bool:
    """Whether a line of a CRLF file (`written`, of `record`) lacks its CR before the line break
    after it: one made anew, or the input's own last line, which had no line break and has a line
    after it now (the input's other lines end in theirs). Never the `last` line, after which
    comes no line break (nor a lone CR)."""
    if last or not written or bytes(written[-1:]) == b"\r":
        return False
    line = record[0]
    if type(line) is not memoryview:
        return True
    whole = line.obj  # (the input's bytes: is this line their end?)
    return isinstance(whole, bytes) and whole[len(whole) - len(line):] == bytes(line)


def line_bytes(record: Record) -> bytes | memoryview:
    """A record's line as written: its bytes, or its value serialised when it is given by its
    value (a `CutLine` put together)."""
    line, value = record
    if line is None:
        return dumps(value, indent=False)
    return bytes(line) if isinstance(line, CutLine) else line


def same_bytes(output: bytes | Lines, data: bytes) -> bool:
    """Whether a rewrite's output is `data` again, byte for byte."""
    if isinstance(output, Lines):
        if len(output) != len(data):  # (a length that differs settles most)
            return False
        at = 0
        for chunk in output.chunks():  # compared in place: a large log's output is not joined to be compared
            if not data.startswith(chunk, at):
                return False
            at += len(chunk)
        return at == len(data)
    return output == data


def parse_written(lines: Lines, name: str, bom: bool, trim: Callable[[Any], Any] | None = None,
                  view: Callable[[memoryview], Any] | None = None) -> Parsed:
    """`lines` as a reader will find them once written. A line kept from the input is taken as it
    was read; a line made anew is read again from its bytes (by `view`, else parsed and trimmed
    by `trim`, as `parse` reads a line), and keeps the value it was made from when that is what
    its bytes read as (the value read is not held a second time; a line given by its value stays
    so: its bytes are made again when written)."""
    records = []
    for number, record in enumerate(lines.records, start=1):
        line, value = record
        if type(line) is memoryview or type(line) is CutLine or value is BLANK:  # an input line, and what was read from it
            records.append(record)
            continue
        whole = bytes(line_bytes(record))  # made anew: bytes already
        text = whole[len(BOM):] if number == 1 and bom else whole
        read = view(memoryview(text)) if view is not None else None
        if read is None:
            read = parse_value(text, name, number) if text.strip() else BLANK
            if trim is not None:
                read = trim(read)
        records.append(record if read == value else (whole, read))
    return Parsed(name, b"", records=records, bom=bom)


def is_blank(data: bytes) -> bool:
    """An input with nothing in it: no byte, or only white space (after a byte-order mark)."""
    text = data[len(BOM):] if data.startswith(BOM) else data
    return not text or text.isspace()


def parse(data: bytes, name: str, known: Sequence[Record] = (),
          trim: Callable[[Any], Any] | None = None, view: Callable[[memoryview], Any] | None = None) -> Parsed:
    """`known`: lines read before (a rewrite's input) whose values are taken again for the same
    bytes instead of being parsed and held twice (values are never changed in place). `trim`:
    what is kept of each line of JSON Lines, given its value, as it is parsed (before the next
    line is), for the lines whose bytes say all a rewrite needs of them. `view`: what a format's
    typed decoder keeps of a line of JSON Lines (a `PartialLine`) instead of parsing it, or None
    (`Format.line_view`)."""
    bom = data.startswith(BOM)
    text = data[len(BOM):] if bom else data
    if is_blank(data):
        raise ParseError("the input is empty", location=Location(name))
    if first_line_is_a_value(text):  # JSON Lines: never parsed (and copied to a str) whole
        return Parsed(name, data, records=_parse_lines(data, name, None, bom, known, trim, view), bom=bom)
    whole: _Failure | None = None
    try:
        document = load_json(text)
    except orjson.JSONDecodeError as error:
        if text.startswith(BOM):  # a second one (files joined whole): no encoding problem, a stray mark
            raise _stray_mark(name, 1) from None
        if "UTF-8" in error.msg:
            raise _not_utf8(data, name) from None
        if error.msg.startswith("depth limit"):
            raise _too_deep(text, name, first_line=1) from None
        whole = _Failure(error.msg, error.lineno, error.colno)  # not the error, which holds the whole input as a str
    if whole is not None:
        return Parsed(name, data, records=_parse_lines(data, name, whole, bom, (), trim), bom=bom)
    document = _writable(document, text, name, first_line=1)
    records: list[Record] | None = None
    if isinstance(document, dict) and _could_be_a_record(document) and b"\n" not in text.strip():
        # One line, blank ones around it (a log whose other lines a rewrite took out): also a JSON
        # Lines file of one record (the value already parsed, not parsed again).
        lines = text.split(b"\n")
        records = [(line, document if lines[i].strip() else BLANK) for i, line in enumerate(data.split(b"\n"))]
    return Parsed(name, data, document=document, records=records, bom=bom)


class _Failure(NamedTuple):
    msg: str
    lineno: int
    colno: int


_NOT_SPACE = re.compile(rb"\S")  # what bytes.isspace() is not


def first_line_is_a_value(text: bytes) -> bool:
    """More than one line, and the first is a complete JSON value: JSON Lines (a document spread
    over several lines never parses on its first line)."""
    end = text.find(b"\n")
    if end < 0 or _NOT_SPACE.search(text, end) is None:  # (not `text[end:].isspace()`: a copy of the rest)
        return False
    try:
        load_json(text[:end])
    except orjson.JSONDecodeError:
        return False
    return True


def _could_be_a_record(value: dict) -> bool:
    """A message (`role`) or a log line (`type`, `uuid`); a request body or an envelope is not."""
    return "role" in value or "type" in value or "uuid" in value


def _parse_lines(data: bytes, name: str, whole: _Failure | None, bom: bool, known: Sequence[Record] = (),
                 trim: Callable[[Any], Any] | None = None, view: Callable[[memoryview], Any] | None = None) -> list[Record]:
    # The collector would walk every dict made so far again and again as they pile up (quadratic
    # in effect on a large log); what is parsed here lives until the command ends anyway.
    collecting = gc.isenabled()  # a batch's file work has it off already: it stays off
    gc.disable()
    try:
        return _parse_each_line(data, name, whole, bom, known, trim, view)
    finally:
        if collecting:
            gc.enable()


def line_views(data: bytes, bom: bool) -> Iterator[tuple[int, memoryview, memoryview]]:
    """(number, line, text) of each line of JSON Lines, as `parse` splits them: the line a view
    into `data`, not a copy (the lines of a large log would double it), its text without the
    byte-order mark the first line may begin with."""
    view = memoryview(data)
    start, number, size = 0, 0, len(data)
    while start <= size:
        end = data.find(b"\n", start)
        end = size if end < 0 else end
        number += 1
        line = view[start:end]
        start = end + 1
        yield number, line, line[len(BOM):] if number == 1 and bom else line


# From this size, a log's lines keep one copy of the strings of its envelope (session, cwd,
# version), which each line repeats: they weigh on a large log's reading. Below it they weigh
# little, and comparing every member of every line would cost a quarter of the reading.
SHARED_ENVELOPES = 1 << 20


def _parse_each_line(data: bytes, name: str, whole: _Failure | None, bom: bool, known: Sequence[Record],
                     trim: Callable[[Any], Any] | None, view: Callable[[memoryview], Any] | None) -> list[Record]:
    records: list[Record] = []
    seen: dict[Any, Any] = {line: value for line, value in known if value is not BLANK}
    shares = len(data) >= SHARED_ENVELOPES
    previous: dict = {}
    for number, line, text in line_views(data, bom):
        # Only a rewrite's read-back knows lines: a lookup hashes the whole line (a megabyte-long
        # one too), which a first reading has no use for.
        if seen and (value := seen.get(line, BLANK)) is not BLANK:
            records.append((line, value))
            continue
        if view is not None and (value := view(text)) is not None:
            records.append((line, value))
            continue
        try:
            value = load_json(text)
        except orjson.JSONDecodeError as error:
            if not bytes(text).strip():
                records.append((line, BLANK))
                continue
            if bytes(text[:len(BOM)]) == BOM:
                raise _stray_mark(name, number) from None
            if "UTF-8" in error.msg:
                raise _not_utf8(data, name) from None
            if whole is not None and not any(v is not BLANK for _, v in records) and not error.msg.startswith("depth"):
                # The first value is already broken: this is one malformed document, not JSON Lines.
                raise ParseError(
                    f"malformed JSON: {whole.msg}", location=Location(name, whole.lineno, whole.colno)
                ) from None
            raise _malformed_line(error, bytes(text), name, number) from None
        as_written = _writes_as_read(value, text)
        if not as_written:
            value = _exactly(value, text, name, first_line=number)
        if trim is not None:
            value = trim(value)
            if as_written and type(value) is PartialLine:
                value.as_written = True
        if shares and isinstance(value, dict):  # (what the trim kept: what it dropped goes anyway)
            for key, item in value.items():
                if type(item) is str and (same := previous.get(key)) == item:
                    value[key] = same
            previous = value
        records.append((line, value))
    return records


def parse_value(text: bytes, name: str, line: int) -> Any:
    """One line of JSON Lines (line `line` of `name`), read as `parse` reads each record."""
    try:
        value = load_json(text)
    except orjson.JSONDecodeError as error:
        raise _malformed_line(error, text, name, line) from None
    return _writable(value, text, name, first_line=line)


def read_again(record: Record, name: str, index: int) -> Any:
    """The value of line `index` read again from its bytes, as `parse` reads it (a byte-order mark
    it begins with left out): for a line a format's trim kept only part of."""
    text = bytes(line_bytes(record))
    return parse_value(text[len(BOM):] if text.startswith(BOM) else text, name, index + 1)


def _malformed_line(error: orjson.JSONDecodeError, text: bytes, name: str, line: int) -> ParseError:
    if error.msg.startswith("depth limit"):
        return _too_deep(text, name, first_line=line)
    return ParseError(f"malformed JSON line: {error.msg}", location=Location(name, line, error.colno),
                      hint="every line of a JSON Lines file must be one complete JSON value")


def _writable(value: Any, text: bytes | memoryview, name: str, first_line: int) -> Any:
    """The value, read again with every number as written when it holds a float; refused when too deep."""
    if _writes_as_read(value, text):  # as an agent writes its log: nothing to keep, nothing too deep to write
        return value
    return _exactly(value, text, name, first_line)


def _exactly(value: Any, text: bytes | memoryview, name: str, first_line: int) -> Any:
    """`_writable` of a value orjson does not write back as `text`: walked for its depth and floats."""
    too_deep, has_float, has_zero = _scan(value)
    if too_deep:
        raise _too_deep(bytes(text), name, first_line)
    return _numbers_as_written(value, text, has_float, has_zero)


# An integer written `-0`, which orjson reads as 0 and writes so: `_holds_negative_zero`.
_MINUS_ZERO = re.compile(rb'-0(?![.\deE])')


def _holds_negative_zero(text: bytes | memoryview) -> bool:
    """Whether `text` holds `-0` after what may come before a number (one in a string is found
    too, which only takes the slower reading). The pattern begins with its text, which the search
    looks for quickly; what comes before each is looked at by hand (a few, where any)."""
    for found in _MINUS_ZERO.finditer(text):
        at = found.start() - 1
        while at >= 0 and text[at] in b" \t\r\n":
            at -= 1
        if at >= 0 and text[at] in b":[,":
            return True
    return False


def _numbers_as_written(value: Any, text: bytes | memoryview, has_float: bool, has_zero: bool) -> Any:
    """`value`, orjson's fresh reading of `text`, with every number as written: its floats
    (`_floats_as_written`), and where it holds a 0 written `-0`, all by the standard library's reading."""
    if has_zero and _holds_negative_zero(text):
        return _exact_loads(bytes(text))
    return _floats_as_written(value, text) if has_float else value


def _writes_as_read(value: Any, text: bytes | memoryview) -> bool:
    """Whether orjson writes `value` back as `text`, every number as written: then the standard
    library's slower reading, which keeps each number's text, has nothing to keep (a log written
    compact by its agent, its floats as their shortest form, as pi's costs are), and the value is
    no deeper than orjson writes (it refuses to). One C pass, where walking the value is Python's."""
    try:
        if type(text) is bytes and text[1:4] == b"\n  ":  # laid out indented: never orjson's compact writing
            return _indented_as_read(value, text)
        written = orjson.dumps(value)
    except orjson.JSONEncodeError:  # too deep, or an integer beyond 64 bits: the walk says which
        return False
    # (a memoryview compares byte by byte, as Python objects: a copy compares at C speed)
    return len(written) == len(text) and written == (text if type(text) is bytes else bytes(text))


def _indented_as_read(value: Any, text: bytes) -> bool:
    """Whether `text` is orjson's writing of `value` indented by two spaces, white space after it
    aside: a document as JSON.stringify(value, null, 2) writes it (Gemini CLI's chats, most request
    bodies saved by hand), every number as written. One C pass again, where walking it is Python's."""
    indented = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    size = len(indented)
    return len(text) >= size and text.startswith(indented) and (size == len(text) or text[size:].isspace())


def nested_value(text: bytes, depth: int) -> Any:
    """A value that sits `depth` levels deep in a document (1: the document itself), read as
    `parse` reads it; ValueError when it is not JSON or would make the document too deep to
    write (the caller reads the whole input again, which says where)."""
    value = load_json(text)
    too_deep, has_float, has_zero = _scan(value, depth)
    if too_deep:
        raise ValueError("nested too deep")
    return _numbers_as_written(value, text, has_float, has_zero)


def plain_value(text: bytes | memoryview, parts: Callable[[Any], Iterable[Any]]) -> Any:
    """orjson's reading of `text` where it is the value `nested_value` reads (no number written
    otherwise than orjson writes it back), told by walking only `parts(value)` for a float: for a
    value a typed decoder checked but those parts (their nesting, and that nothing else holds a
    number but an integer). None where it may not be (the caller reads it by `nested_value`)."""
    if _holds_negative_zero(text):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:  # a number beyond a double
        return None
    return None if any(_scan(part)[1] for part in parts(value)) else value


def _scan(value: Any, depth: int = 1) -> tuple[bool, bool, bool]:
    """(nested deeper than MAX_DEPTH, holds a float, holds an integer 0, which may have been written
    `-0`): one pass over the containers, no recursion. `depth`: how deep the value itself sits."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return depth > MAX_DEPTH, kind is float, kind is int and value == 0
    has_float = has_zero = False
    stack = [(value, depth)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > MAX_DEPTH:
            return True, has_float, has_zero
        for item in node.values() if type(node) is dict else node:
            kind = type(item)
            if kind is dict or kind is list:
                push((item, depth + 1))
            elif kind is float:
                has_float = True
            elif kind is int and item == 0:
                has_zero = True
    return False, has_float, has_zero


_BEYOND_A_DOUBLE = "number is infinity when parsed as double"  # orjson's refusal of `1e400`
# A JSON string (skipped whole) or a number: enough to find the numbers of a document.
_STRING_OR_NUMBER = re.compile(_STRING + rb'|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')


def load_json(text: bytes | memoryview) -> Any:
    """orjson's reading of one JSON value, and of a number beyond a double too (`1e400`, which
    orjson refuses): orjson checks the rest with each such number read as 0 (so that any other
    error is its own, where it is), then the standard library reads it, each number as written."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        # A lone surrogate escape (`no low surrogate in string`, …): read as U+FFFD (its line keeps its bytes).
        if error.msg.endswith(" surrogate in string") and (fixed := without_lone_surrogates(bytes(text))) != text:
            return load_json(fixed)
        if error.msg != _BEYOND_A_DOUBLE:
            raise
    data = bytes(text)
    checked = orjson.loads(_STRING_OR_NUMBER.sub(_zero_if_beyond_a_double, data))
    if _scan(checked)[0]:
        return checked  # too deep to write: its reader refuses it (the standard library would recurse that deep)
    return _exact_loads(data)


# An escaped backslash, a surrogate pair, or a surrogate escape alone (JSON.stringify writes one
# for a string cut inside a character: valid JSON, which orjson refuses), in a JSON text's strings.
_SURROGATE_ESCAPE = re.compile(rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def without_lone_surrogates(data: bytes) -> bytes:
    """`data` with each lone surrogate escape written `\\ufffd`, as long (positions stay the input's)."""
    return _SURROGATE_ESCAPE.sub(lambda found: found.group() if len(found.group()) != 6 else b"\\ufffd", data)


def _zero_if_beyond_a_double(match: re.Match[bytes]) -> bytes:
    token = match.group()
    if token[:1] == b'"' or not math.isinf(float(token)):
        return token
    return b"0".ljust(len(token))  # as long as the number: orjson's positions stay the input's


# A number as an object's member, which orjson may read as a float: a fraction, an exponent, twenty
# digits or more (an integer beyond 64 bits). One in a string is found too, which only adds a spelling.
_MEMBER_FLOAT = re.compile(rb':[ \t\r\n]*(-?\d+(?:\.\d+)?[eE][+-]?\d+|-?\d+\.\d+|-?\d{20,})')


def _floats_as_written(value: Any, text: bytes | memoryview) -> Any:
    """`value`, orjson's fresh reading of `text`, with each float orjson would spell otherwise made
    a Fragment of its text in place (JavaScript writes 9e-6 as `0.000009`: pi's costs). A float's
    text is found by its value among the members of `text`; the standard library reads it all when
    that does not say it for certain: a float in an array, one value spelled two ways (`-0.0` and
    `0.0`, or a string's text), an integer that may be beyond 64 bits."""
    if type(value) is not dict and type(value) is not list:
        return _exact_loads(bytes(text))  # a number alone
    spelled: dict[float, bytes] = {}
    for token in _MEMBER_FLOAT.findall(text):
        if (len(token) >= 20 and token.lstrip(b"-").isdigit()) or spelled.setdefault(float(token), token) != token:
            return _exact_loads(bytes(text))
    kept = {number: orjson.Fragment(token) for number, token in spelled.items() if orjson.dumps(number) != token}
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for item in node:
                kind = type(item)
                if kind is float:
                    return _exact_loads(bytes(text))
                if kind is dict or kind is list:
                    stack.append(item)
            continue
        for key, item in node.items():
            kind = type(item)
            if kind is float:
                if item not in spelled:
                    return _exact_loads(bytes(text))
                if item in kept:
                    node[key] = kept[item]
            elif kind is dict or kind is list:
                stack.append(item)
    return value


def _exact_loads(text: bytes) -> Any:
    """The standard library's reading, which sees each number's text: keep the ones orjson would change."""
    import json

    return json.loads(without_lone_surrogates(text).decode("utf-8") if b"\\u" in text else text.decode("utf-8"),
                      parse_int=_exact_int, parse_float=_exact_float)


def _exact_int(text: str) -> Any:
    if len(text) > 20 or text == "-0":  # beyond 64 bits (`-9223372036854775808`; not converted: Python refuses 4300 digits), or -0
        return orjson.Fragment(text)
    value = int(text)
    return value if -(2**63) <= value < 2**64 else orjson.Fragment(text)  # what orjson writes as an integer


def _exact_float(text: str) -> Any:
    value = float(text)
    return value if orjson.dumps(value) == text.encode() else orjson.Fragment(text)


# A JSON string (skipped whole) or a bracket: enough to find how deep a position is nested.
_STRING_OR_BRACKET = re.compile(_STRING + rb'|[\[\]{}]')


def array_item_spans(data: bytes, key: str) -> list[tuple[int, int]]:
    """The byte range of each object or array in the array that the member `key` of the top-level
    object holds (a string or a number there has none), found by every string and bracket of
    `data`."""
    spans: list[tuple[int, int]] = []
    named = orjson.dumps(key)
    depth, last_key, inside, start = 0, None, False, 0
    for match in _STRING_OR_BRACKET.finditer(data):
        token = match.group()
        if token[:1] == b'"':
            last_key = token if depth == 1 else last_key  # at the top level, the last string before `[` is its key
            continue
        if token in (b"[", b"{"):
            depth += 1
            if depth == 2 and token == b"[" and last_key == named:
                inside = True
            elif inside and depth == 3:
                start = match.start()
        else:
            if inside and depth == 3:
                spans.append((start, match.end()))
            elif inside and depth == 2:
                inside = False
            depth -= 1
    return spans


def _too_deep(text: bytes, name: str, first_line: int) -> ParseError:
    """The error for input nested beyond MAX_DEPTH, at the bracket that goes one level too deep."""
    depth, offset = 0, 0
    for match in _STRING_OR_BRACKET.finditer(text):
        char = text[match.start()]
        if char in b"[{":
            depth += 1
            if depth > MAX_DEPTH:
                offset = match.start()
                break
        elif char in b"]}":
            depth -= 1
    line, column = _line_and_column(text, offset)
    return ParseError(f"JSON nested deeper than {MAX_DEPTH} levels, which transcompact cannot write back",
                      location=Location(name, first_line + line - 1, column))


def _stray_mark(name: str, line: int) -> ParseError:
    """A byte-order mark that does not begin the file (logs joined with `cat`, each with its own)."""
    return ParseError("a byte-order mark (U+FEFF) begins this line: only a file's first bytes may be one",
                      location=Location(name, line, 1),
                      hint="files joined with their byte-order marks? remove every mark but the file's first")


def _not_utf8(data: bytes, name: str) -> ParseError:
    hint = f"transcripts are read as UTF-8: convert the file first, or read it with {option('encoding_errors', 'replace')}"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        line, column = _line_and_column(data, error.start)
        if line == 1 and data.startswith(BOM):
            column -= 1  # as an editor counts: the byte-order mark is no character of the line
        return ParseError(f"not valid UTF-8: byte 0x{data[error.start]:02x} at byte offset {error.start}",
                          location=Location(name, line, column), hint=hint)
    return ParseError("not valid UTF-8", location=Location(name), hint=hint)


def _line_and_column(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column (in characters) of a byte offset."""
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, len(data[start:offset].decode("utf-8", "replace")) + 1


SMALL_OUTPUT = 1 << 17  # below this, malloc serves orjson's buffer from the heap, where it stays


def dumps(value: Any, *, indent: bool) -> bytes:
    out = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    # orjson keeps the buffer it reserved (4 KB or more, 8× a short line): a log rewritten line
    # by line would hold many times its size. A copy is as long as the text.
    return bytes(memoryview(out)) if len(out) < SMALL_OUTPUT else out


def compact_json(value: Any) -> str:
    """A value as the counter measures it: a string as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def shared_with(value: Any, was: Any) -> Any:
    """`value` (read again from a rewrite's output) with each part equal to the part of `was` (what
    the input held there) at the same place made `was`'s own object: what a rewrite kept of a
    changed message (a call's arguments, the UI's copy of its output) is not held twice. Parts
    compare as values; containers are new where anything in them changed."""
    if type(value) is not type(was) or value is was:
        return value
    if type(value) is dict:
        parts = {key: shared_with(item, was[key]) if key in was else item for key, item in value.items()}
        same = list(parts) == list(was) and all(item is was[key] for key, item in parts.items())  # (in the same order)
        return was if same else parts
    if type(value) is list:
        items = [shared_with(item, before) for item, before in zip(value, was)] + value[len(was):]
        return was if len(items) == len(was) and all(map(operator.is_, items, was)) else items
    if type(value) is float:  # (-0.0 == 0.0: compared by their bits)
        return was if value.hex() == was.hex() else value
    return was if value == was else value


def kind_of(value: Any) -> str:
    """A JSON value's type as an error message names it: "an object", "a string", …"""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def too_deep(value: Any, depth: int = 1) -> bool:
    """Whether orjson could not write the value back (nested deeper than MAX_DEPTH), where it sits
    `depth` levels deep in its document (1: the document itself)."""
    return _scan(value, depth)[0]


_MEMBER_TOKEN = re.compile(_STRING + rb'|[\[\]{},:]')
_SPACE = b" \t\r\n"


class Member(NamedTuple):
    """Where a member of a JSON object sits in its text (byte offsets): its key, its value's start and end."""

    start: int
    value: int
    end: int


def members(text: bytes | memoryview) -> dict[str, Member]:
    """The members of the object `text` holds (a line of JSON Lines), by key, where they sit in it:
    so that a member can be taken out, or its value replaced, and every other byte stay as written.
    Empty when `text` holds no object."""
    text = bytes(text)
    out: dict[str, Member] = {}
    depth, key, start, value = 0, None, 0, 0
    for match in _MEMBER_TOKEN.finditer(text):
        at = match.start()
        first = text[at]
        if first == 0x22:  # a string: a key where one is due
            if depth == 1 and key is None:
                raw = text[at + 1:match.end() - 1]
                key, start = (raw.decode() if b"\\" not in raw else orjson.loads(text[at:match.end()])), at
            continue
        if first in b"[{":
            depth += 1
        elif first == 0x3A:  # ":"
            if depth == 1:
                value = match.end()
                while value < len(text) and text[value] in _SPACE:
                    value += 1
        elif depth == 1 and first in b",}":
            if key is not None:
                end = at
                while end > value and text[end - 1] in _SPACE:
                    end -= 1
                out[key] = Member(start, value, end)
                key = None
            if first == 0x7D:  # "}"
                break
        elif first in b"]}":
            depth -= 1
    return out


def without_members(line: bytes | memoryview, edits: Mapping[str, bytes | None], value: dict | None = None,
                    view: PartialLine | None = None) -> tuple[CutLine | bytes, dict[str, int], Any]:
    """`line` (an object, as `members` reads it) with the members `edits` names taken out (None:
    one it does not hold stays so) or given a new value (its JSON), every other byte as written
    (a `CutLine` of `line`; bytes where it does not read); the bytes each edit took out (less what
    it put in); and the value the new text reads as (as `parse_value` reads it; None where it
    does not read).
    `value`, the object `line` holds (read from it when not given: a line parsed in part), lets a
    member be found by its JSON, at C speed (checked by reading the result, or proven without:
    `_by_value`). `view`: the part of the line a format's lazy trim kept (`line` parsed in part);
    the new text then reads as that view, edited alike."""
    text = bytes(line)
    if value is None:
        value, written = _object_in(text)
    else:
        written = _written_members(value, text)
    if value is not None and (found := _by_value(line, text, edits, value, view, written)) is not None:
        return found
    spans = members(text)
    order = sorted(spans.items(), key=lambda item: item[1].start)
    cuts: list[tuple[int, int, bytes, str]] = []  # (start, end, new bytes, key) in the old text
    kept_before = False
    for place, (key, member) in enumerate(order):
        if key not in edits:
            kept_before = True
            continue
        new = edits[key]
        if new is not None:
            cuts.append((member.value, member.end, new, key))
            kept_before = True
        elif kept_before:  # `,"key":value` after the member before it
            cuts.append((order[place - 1][1].end, member.end, b"", key))
        else:  # `"key":value,` up to the next member
            cuts.append((member.start, order[place + 1][1].start if place + 1 < len(order) else member.end, b"", key))
    out, taken = cut_line(line, len(text), cuts)
    try:
        read = parse_value(bytes(out), "<line>", 1)
    except ParseError:  # not an object Claude Code wrote: the post-condition says so, reading it again
        return bytes(out), taken, None
    return out, taken, read if view is None else _edited(view, edits)


def _object_in(text: bytes) -> tuple[dict | None, dict[str, tuple[int, int]] | None]:
    """The object `text` holds, as `parse_value` reads it (None: no object), and where its
    members are when `text` is that object as orjson writes it (`_written_members`)."""
    try:
        value = load_json(text)
        if type(value) is not dict:
            return None, None
        written = _written_members(value, text)  # (found where orjson writes `value` as `text`: else walked)
        return (value if written is not None else _exactly(value, text, "<line>", 1)), written
    except (orjson.JSONDecodeError, ParseError):
        return None, None


@functools.lru_cache(maxsize=1024)
def _head(key: str) -> bytes:
    return orjson.dumps(key) + b":"


def _written_members(value: dict, text: bytes) -> dict[str, tuple[int, int]] | None:
    """Where each member of `value` sits in `text` (where it starts, how long it is) when `text`
    is `value` as orjson writes it, every number as written (`_writes_as_read`): found from each
    member's written length, in one orjson write of the members; None when `text` is not that."""
    try:
        members = list(map(bytes.__add__, map(_head, value), map(orjson.dumps, value.values())))
    except (orjson.JSONEncodeError, TypeError):  # too deep, an integer beyond 64 bits
        return None
    joined = b",".join(members)
    if len(text) != len(joined) + 2 or text[:1] != b"{" or text[-1:] != b"}" or not text.startswith(joined, 1):
        return None
    sizes = list(map(len, members))
    starts = itertools.accumulate(map((1).__add__, sizes), initial=1)  # after "{", then after each member and its ","
    return dict(zip(value, zip(starts, sizes)))


def _by_value(line: bytes | memoryview, text: bytes, edits: Mapping[str, bytes | None], value: dict, view: PartialLine | None,
              written: dict[str, tuple[int, int]] | None) -> tuple[CutLine, dict[str, int], Any] | None:
    """`without_members` where each member edited is found in `text`, and the result reads as
    `value` edited; None where not (a value written another way).
    Where `text` is `value` as orjson writes it, `written` says where each member is: the result
    is `value` edited without reading it again. Elsewhere a member is found as its key and its
    value's JSON; the first place that is found may be in a nested object: the result then still
    holds the member, or its old value, and does not read as `value` edited (read to make sure)."""
    cuts: list[tuple[int, int, bytes, str]] = []
    for key, new in edits.items():
        if key not in value:
            if new is None:  # nothing to take out
                continue
            return None
        if written is not None:
            at, size = written[key]
            start, end = at + len(_head(key)), at + size
        else:
            head = _head(key)
            needle = head + orjson.dumps(value[key])
            at = text.find(needle)
            if at < 1:
                return None
            start, end = at + len(head), at + len(needle)
        if new is not None:
            cuts.append((start, end, new, key))
        elif text[at - 1] == 0x2C:  # ","
            cuts.append((at - 1, end, b"", key))
        elif text[at - 1] == 0x7B:  # "{": the first member, and its comma after it
            cuts.append((at, end + 1 if text[end:end + 1] == b"," else end, b"", key))
        else:
            return None
    out, taken = cut_line(line, len(text), cuts)
    if written is not None and len(taken) == len(cuts):  # (no two cuts over the same bytes: the first member's comma)
        return out, taken, _edited(value if view is None else view, edits)
    try:
        read = orjson.loads(bytes(out))
    except orjson.JSONDecodeError:
        return None
    edited = _edited(value, edits)
    return (out, taken, edited if view is None else _edited(view, edits)) if read == edited else None


def with_member_replaced(line: bytes | memoryview, key: str, old: Any, new: Any) -> CutLine | None:
    """`line` with its member `key` given `new` where it holds `old` (a `CutLine` of it), when the
    line is what orjson writes of its value (`PartialLine.as_written`: each member is written as
    its key and its value's JSON, and a key's JSON in a string would show its quotes escaped): the
    key written once is then the member, at any depth. None where the key is written more than
    once, or its value is not `old`'s JSON."""
    text = bytes(line)
    start = _written_once(text, key)
    if start is None:
        return None
    was = orjson.dumps(old)
    if not text.startswith(was, start):
        return None
    return cut_line(line, len(text), [(start, start + len(was), dumps(new, indent=False), key)])[0]


def _written_once(text: bytes, key: str) -> int | None:
    """Where the value of the member `key` begins in `text`, when its key is written there once
    (at any depth: a key's JSON in a string shows its quotes escaped), else None."""
    head = _head(key)
    found = text.find(head)
    if found < 0 or text.find(head, found + len(head)) >= 0:
        return None
    return found + len(head)


def with_member_added(line: bytes | memoryview, parent: str, key: str, new: Any) -> CutLine | None:
    """`line` with the member `key` (which it does not hold) added last to the object that the
    member `parent` holds, given `new` (a `CutLine` of it), when `parent`'s key is written once
    (the member, at any depth: a key's JSON in a string shows its quotes escaped) and its value is
    an object holding objects no deeper than one level (a usage's cost); else None. The caller
    proves the result (reads it)."""
    text = bytes(line)
    start = _written_once(text, parent)
    after = _NOT_SPACE.search(text, start) if start is not None else None  # the value, past any white space
    value = _SHALLOW_OBJECT.match(text, after.start()) if after is not None else None
    if value is None:
        return None
    end = value.end() - 1  # its "}"
    member = (b"," if _NOT_SPACE.search(text, value.start() + 1, end) else b"") + _head(key) + dumps(new, indent=False)
    return cut_line(line, len(text), [(end, end, member, key)])[0]


# An object whose members hold no array, nor an object holding one or an object (one character or
# string at a time: each alternative begins otherwise, so nothing is tried twice).
_SHALLOW_OBJECT = re.compile(rb"\{(?:[^{}\[\]\"]|" + _STRING + rb"|\{(?:[^{}\[\]\"]|" + _STRING + rb")*\})*\}")


def _edited(value: dict, edits: Mapping[str, bytes | None]) -> dict:
    """`value` with the members `edits` takes out gone and those it gives a value edited; a
    `PartialLine` stays one, with what it has seen (the members it never held stay so)."""
    edited: dict
    if isinstance(value, PartialLine):  # (a format's own kind of it too: pi's `ViewedEntry`)
        edited = partial = type(value)(value)
        partial.seen = value.seen
    else:
        edited = dict(value)
    for key, new in edits.items():
        if new is None:
            edited.pop(key, None)
        elif key in value:  # given a new value where it is
            edited[key] = orjson.loads(new)
    return edited


def cut_between(line: bytes | memoryview, new: bytes) -> CutLine:
    """`new` as a cut of `line` (an input line it was written from): the bytes they begin and end
    with alike kept as `line`'s (not copied), what differs between them given. Its bytes are `new`'s."""
    old = bytes(line)  # (the comparisons below slice it: a copy while the cut is made)
    most = min(len(old), len(new))
    same, differs = 0, most + 1  # a prefix of `same` bytes is alike, of `differs` not
    while differs - same > 1:
        middle = (same + differs) // 2
        if old[:middle] == new[:middle]:
            same = middle
        else:
            differs = middle
    tail, differs = 0, most - same + 1  # nor the bytes of the prefix again
    while differs - tail > 1:
        middle = (tail + differs) // 2
        if old[len(old) - middle:] == new[len(new) - middle:]:
            tail = middle
        else:
            differs = middle
    return cut_line(line, len(old), [(same, len(old) - tail, new[same:len(new) - tail], "")])[0]


def cut_line(line: bytes | memoryview, size: int, cuts: list[tuple[int, int, bytes, str]]) -> tuple[CutLine, dict[str, int]]:
    """`line` (`size` bytes) with each span (start, end) of `cuts` given the bytes beside it (a
    `CutLine`: not a copy), and how many bytes each cut took out, by the name beside it; of two
    cuts over the same bytes the first is made."""
    spans: list[int] = []
    inserts: list[bytes] = []
    at, taken = 0, {}
    for start, end, new, key in sorted(cuts):
        if start < at:  # two cuts over the same bytes (the first member's comma, and the member after it): left
            continue
        spans += (at, start)
        inserts.append(new)
        taken[key] = end - start - len(new)
        at = end
    spans += (at, size)
    kept = array("I" if size < 1 << 32 else "Q", spans)  # (4 bytes an offset: most lines are short)
    return CutLine(line, kept, None if not any(inserts) else inserts[0] if len(inserts) == 1 else tuple(inserts)), taken
