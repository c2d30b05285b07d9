"""The format adapters, a module or package each: `claude_code`, `codex`, `gemini`, `pi`,
`openhands` (and its `v0`), `copilot`, `jsonl`, `responses`, `anthropic`, `openai`; `adapter`, the
type each declares, `_log`, what the agent logs share (a message's origin in the lines, a field's
value), and `_document`, what the request bodies share. Detection tries them in the order they are
registered (most specific first).

Each format declares one adapter, `FORMAT` in its package or module: a `Format` (adapter.py) with
its name, description and `lines`; `detect`, `read` and `write` (a log format adds `write_lines`,
which a rewrite writes without joining; a format transcompact only reads is registered with
`writes=False`, and a command that would write it stops: `ensure_writable`); what --format and a
rewrite's read-back take of it (`readable`, `reload`, `read_back`); and the hooks through which the operations
reach the format's own part of them (its log's rules, a compaction written as its agent writes one,
...), each with a default for a format that has none, so that no operation asks which format it has:
`adapter(transcript).check_log(transcript, path)`.

Each format is registered in core/format_names.py (`FORMATS`: its name, its module, whether it
trims, writes, or writes summaries of its own, and what the documentation says of it), which
--format takes without importing the readers; `MODULES`, `TRIMMED` and `OWN_SUMMARIES` here are made
from it, and the registry checks an adapter agrees with its registration as it imports it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any, Literal

from ..core.errors import Location, TranscompactError, UnknownFormat, UsageError, option
from ..core.format_names import FORMAT_NAMES, FORMATS, REGISTERED, Registration
from ..core.jsondata import BOM, Lines, Parsed, PartialLine, Record, load_json, parse, parse_written
from ..core.model import Transcript
from ._document import read_quickly
from .adapter import Format

# How `loads` reads for the work at hand: at once (False), or leaving what a view can count unread
# (True: counting and checking; "logs", "rereads": rewriting; `loads` says which reads what).
Laziness = bool | Literal["logs", "rereads"]
LAZINESS = (False, True, "logs", "rereads")
# Each format's module, in the order detection tries them: a module is imported when its format is
# first asked for (a request body read quickly needs its own; detection imports them one by one
# until one takes the input), so that a command pays only for the formats it meets.
MODULES = {registration.name: registration.module for registration in FORMATS}
NAMES = FORMAT_NAMES
# The formats with a trim (`Format.trim`, `lazy_trim`) or a line view (`line_view`), which `parse`
# runs before the format is known: only these are imported to read a file of JSON Lines, the
# others when detection asks.
TRIMMED = tuple(registration.name for registration in FORMATS if registration.trims)
# The formats that read a document of their own for counting and pruning (`Format.read_quickly`), by the
# first key of their agent's documents.
DOCUMENT_FIRST_KEYS = {registration.document_first_key: registration.name
                       for registration in FORMATS if registration.document_first_key}
# The formats whose agent writes a summary of its own into the log (`Format.is_earlier_summary`),
# which compact looks for in a message alone: `earlier_summary`.
OWN_SUMMARIES = tuple(registration.name for registration in FORMATS if registration.own_summaries)


class _Registry(Mapping[str, Format]):
    """The adapters by name, each imported when first looked up (its module's `FORMAT`), then
    kept: detection looks each one up for every file of a batch."""

    def __init__(self) -> None:
        self._imported: dict[str, Format] = {}

    def __getitem__(self, name: str) -> Format:
        found = self._imported.get(name)
        if found is None:
            if name not in MODULES:
                raise KeyError(name)
            found = importlib.import_module(MODULES[name], __name__).FORMAT
            _agrees(found, REGISTERED[name])
            self._imported[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(NAMES)

    def __len__(self) -> int:
        return len(NAMES)


def _agrees(found: Format, registration: Registration) -> None:
    """Stop at the import of an adapter that its registration (core/format_names.py) misdescribes."""
    name = registration.name
    if found.name != name:
        raise ImportError(f"the adapter of {registration.module} is named {found.name!r}, its registration {name!r}")
    if (found.trim is not None or found.lazy_trim is not None or found.line_view is not None) != registration.trims:
        raise ImportError(f"the {name} format {'lacks' if registration.trims else 'has'} a trim: "
                          f"make its registration say trims={not registration.trims}")
    if (type(found).is_earlier_summary is not Format.is_earlier_summary) != registration.own_summaries:
        raise ImportError(f"the {name} format {'lacks' if registration.own_summaries else 'has'} an is_earlier_summary: "
                          f"make its registration say own_summaries={not registration.own_summaries}")
    if (type(found).read_quickly is not None) != bool(registration.document_first_key):  # (on the class: a lazy hook is not imported)
        raise ImportError(f"the {name} format {'lacks' if registration.document_first_key else 'has'} a read_quickly: "
                          "its registration's document_first_key says whether it has one")
    if found.writes != registration.writes:
        raise ImportError(f"the {name} format's adapter sets writes={found.writes}: its registration says whether it writes")


BY_NAME: Mapping[str, Format] = _Registry()


def all_formats() -> Iterator[Format]:
    """Every adapter, in the order detection tries them, each imported as it comes."""
    return (BY_NAME[name] for name in NAMES)


@cache
def trim(lazily: bool = False) -> Callable[[Any], Any] | None:
    """The formats' trims, one after the other (`parse` runs it before the format is known);
    `lazily`: their lazy trims where they have one."""
    adapters = [BY_NAME[name] for name in TRIMMED]
    trims = [one for f in adapters if (one := f.lazy_trim if lazily and f.lazy_trim is not None else f.trim) is not None]
    if len(trims) <= 1:
        return trims[0] if trims else None

    def each_trim(value: Any) -> Any:
        for one in trims:
            value = one(value)
        return value

    return each_trim


@cache
def line_view(lazily: Laziness = True) -> Callable[[memoryview], Any] | None:
    """The formats' line views (`Format.line_view`), for `parse`: each line is offered to each in
    turn, the first that reads it gives its value (each reads only its own format's lines). For a
    rewrite (`lazily="logs"`), only those whose writer writes a line its view read
    (`Format.rewrites_viewed_lines`); for one that reads the part it changes several times over
    (`"rereads"`), only those whose reading keeps that cheap (`Format.rereads_viewed_lines`)."""
    views = tuple(f.line_view for f in (BY_NAME[name] for name in TRIMMED)
                  if f.line_view is not None and (lazily is True or f.rewrites_viewed_lines and (lazily == "logs" or f.rereads_viewed_lines)))
    if len(views) < 2:
        return views[0] if views else None

    def viewed(text: memoryview) -> Any:
        for view in views:
            if (value := view(text)) is not None:
                return value
        return None

    return viewed


def earlier_summary(record: Any) -> Format | None:
    """The format whose agent wrote the message read from `record` (a message's `raw`, or an unread
    one's `view.record`) as a summary of what came before it (`Format.is_earlier_summary`), or None.
    Compact asks it of a message alone: only the formats registered with `own_summaries` are asked."""
    for name in OWN_SUMMARIES:
        if (fmt := BY_NAME[name]).is_earlier_summary(record):
            return fmt
    return None


def adapter(transcript: Transcript) -> Format:
    """The adapter of the format that read `transcript`."""
    return BY_NAME[transcript.format]


def rewrites_lines(transcript: Transcript) -> bool:
    """Whether a line of `transcript`'s file is the unit a rewrite changes, keeps or removes (else
    a message of one JSON document is)."""
    return adapter(transcript).rewrites_lines(transcript)


def ensure_writable(transcript: Transcript) -> None:
    """Refuse a transcript whose format transcompact reads but does not write (`writes = False`),
    before a command that would write it does any work."""
    if not adapter(transcript).writes:
        raise not_written(transcript)


def not_written(transcript: Transcript) -> UsageError:
    return UsageError(
        f"transcompact does not write the {transcript.format} format: it only reads it (estimate, check, cut-point, summarize)",
        location=Location(transcript.name),
        hint=f"write its conversation as a request body instead: {option('to', 'anthropic')} or {option('to', 'openai')}")


def detect(parsed: Parsed, messages_path: str | None = None) -> str:
    for fmt in all_formats():
        if fmt.detect(parsed, messages_path):
            return fmt.name
    raise UnknownFormat(
        f"not a transcript in a format transcompact reads (tried {', '.join(NAMES)})",
        location=Location(parsed.name),
        hint=_hint(parsed, messages_path),
    )


def loads(data: bytes | str, name: str = "<stdin>", *, format: str | None = None, messages_path: str | None = None,
          lazily: Laziness = False) -> Transcript:
    """Read a transcript from bytes (or a str, read as its UTF-8), detecting its format unless `format` is given.

    `lazily`: for work that counts or checks (estimate, cut-point, check), each message of a
    request body, a bare list, JSON Lines of messages, a Claude Code log, a Codex rollout, a pi
    session or a Gemini CLI chat (a legacy document, or the JSON Lines log) whose view can count
    and check it is left unread (`Message.unread`), its blocks read when first asked for.
    `"logs"`: the same, for work that changes what it reads (prune, slim, repair): what it changes
    is read apart (`Message.read_apart`), what it leaves is written back as its own bytes, escapes
    and spacing as they were (a document's messages split off at once: most are written back), and
    a log's lines are left to the views of the formats whose writer writes a line its view read
    (`Format.rewrites_viewed_lines`).
    `"rereads"`: the same, for work that reads the part it changes several times over (compact:
    its prune, its facts, its file lists), but for the lines of the formats whose line view would
    make that costly (`Format.rereads_viewed_lines` unset: a pi session's), which it reads whole:
    each reading apart parses a line again.
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")  # (a lone surrogate is then the reading's "not valid UTF-8")
    elif isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    elif not isinstance(data, bytes):
        raise TypeError(f"loads reads a transcript from bytes or a str, not {type(data).__name__}")
    if lazily not in LAZINESS:
        raise UsageError(f"{option('lazily', lazily)} is none of {', '.join(map(repr, LAZINESS))}")
    if lazily in (True, "logs") and messages_path is None and (offered := _document_offered(data, format)) is not None:
        read_document = BY_NAME[offered].read_quickly
        assert read_document is not None  # its registration names a first key: `_agrees` checked it has one
        quickly = read_document(data, name)
        if quickly is not None:
            return quickly
    if lazily and messages_path is None and format in (None, "anthropic", "openai"):
        quickly = read_quickly(data, name, format, split=lazily in ("logs", "rereads"))
        if quickly is not None:
            return quickly
    if lazily and messages_path is None and format in (None, "jsonl") and _begins_with_a_message(data):
        from .jsonl import read_quickly as read_lines_quickly

        lines = read_lines_quickly(data, name)
        if lines is not None and (format == "jsonl" or detect(lines) == "jsonl"):
            return BY_NAME["jsonl"].read(lines)
    parsed = parse(data, name, trim=trim(bool(lazily)), view=line_view(lazily) if lazily else None)
    named = format
    if format is None:
        format = detect(parsed, messages_path)
    elif format not in BY_NAME:
        raise UsageError(f"unknown format {format!r} (choose from {', '.join(NAMES)})")
    if lazily and _kept_in_part(parsed.records, BY_NAME[format].partial_line):
        # Lines kept in part for another format, in the input of a format that reads them whole: all again.
        return loads(data, name, format=named, messages_path=messages_path)
    if named is not None and not BY_NAME[format].readable(parsed, messages_path):
        raise UnknownFormat(
            f"the input is not in the {format} format ({BY_NAME[format].description})",
            location=Location(name),
            hint=_hint(parsed, messages_path, named),
        )
    return BY_NAME[format].read(parsed, messages_path)


_FIRST_KEY = re.compile(rb'(?:\xef\xbb\xbf)?\s*\{\s*"([^"\\]*)"\s*:')


def _document_offered(data: bytes, format: str | None) -> str | None:
    """The format whose documents begin with the first key of `data` (`DOCUMENT_FIRST_KEYS`), when
    it is the one named or none is, else None: it reads the document quickly first."""
    first = _FIRST_KEY.match(data)
    offered = DOCUMENT_FIRST_KEYS.get(first.group(1).decode("utf-8", "replace")) if first is not None else None
    return offered if offered is not None and format in (None, offered) else None


def _begins_with_a_message(data: bytes) -> bool:
    """Whether the first line is an object with a `role`, as each of JSON Lines of messages is: a
    log's lines have none, and its reading imports neither the typed decoder nor this format."""
    start = len(BOM) if data.startswith(BOM) else 0
    end = data.find(b"\n", start)
    try:
        first = load_json(memoryview(data)[start:end]) if end > 0 else None
    except ValueError:  # orjson.JSONDecodeError is one
        return False
    return isinstance(first, dict) and isinstance(first.get("role"), str)


def _kept_in_part(records: list[Record] | None, taken: type | None = None) -> bool:
    """Whether a lazy trim or a line view kept any of these lines in part, as another kind of
    `PartialLine` than `taken` (the kind a format's reader takes)."""
    return any(isinstance(value, PartialLine) and type(value) is not taken for _, value in records or ())


def reload(data: bytes | Lines, written: Transcript, messages_path: str | None = None) -> Transcript:
    """Read the bytes `dumps(written)` gave as what they were written in: its format and its dialect.

    The post-condition of a rewrite judges the output as it will be read, not the object in
    memory; naming the dialect keeps a JSON Lines file that no longer shows its dialect (a plain
    conversation) from being judged by the other dialect's rules.
    """
    # A request body whose messages went out unread is read back as quickly, those left unread again.
    if isinstance(data, bytes) and messages_path is None and written.format in ("anthropic", "openai") \
            and any(not m.is_read for m in written.messages):
        quickly = read_quickly(data, written.name, written.dialect)
        if quickly is not None:
            return quickly
    # A document that kept most of its bytes reads back without parsing them again (`Format.read_back`).
    if isinstance(data, bytes) and messages_path is None and (kept := adapter(written).read_back(data, written)) is not None:
        return kept
    # A log's lines that the rewrite kept are not parsed and held a second time.
    if isinstance(data, Lines):
        # The lines a rewrite made of a log read in part are read back in part too.
        in_part = _kept_in_part(getattr(written.source, "records", None))
        parsed = parse_written(data, written.name, bom=getattr(written.source, "bom", False), trim=trim(True) if in_part else None,
                               view=line_view("logs") if in_part else None)
    else:
        parsed = parse(data, written.name, known=getattr(written.source, "records", None) or (), trim=trim())
    fmt = adapter(written)
    if not fmt.readable(parsed, messages_path):
        raise UnknownFormat(f"the output is not in the {written.format} format ({fmt.description})",
                            location=Location(written.name))
    return fmt.reload(parsed, written, messages_path)


def dumps(transcript: Transcript) -> bytes:
    """Write a transcript back in the format it was read from, as it was read where unchanged."""
    return adapter(transcript).write(transcript)


def written(transcript: Transcript) -> bytes | Lines:
    """What a rewrite writes: `dumps`, or a log's lines as they are to be joined (`Lines`), which
    the post-condition reads back and the file is written from without a copy of the whole."""
    return adapter(transcript).write_lines(transcript)


def load(path: str | os.PathLike, *, format: str | None = None, messages_path: str | None = None,
         lazily: Laziness = False) -> Transcript:
    """Read a transcript from a file (`-`: standard input); `lazily` as `loads` says."""
    from ..io.inputs import read_input

    name, data = read_input(os.fspath(path))
    return loads(data, name, format=format, messages_path=messages_path, lazily=lazily)


def dump(transcript: Transcript, path: str | os.PathLike) -> None:
    """Write a transcript to a file, atomically (`-`: standard output); one read from an OpenHands
    conversation directory, to a directory."""
    from ..io.files import STDIN, write_stdout
    from ..io.outputs import write_output

    data = dumps(transcript)
    if os.fspath(path) == STDIN:
        write_stdout(data)
        return
    with rewriting(path, data):
        write_output(path, data, transcript.name)


def rewriting(path: str | os.PathLike, data: bytes | Lines) -> contextlib.AbstractContextManager[None]:
    """Around a rewrite's write of `data` over the file at `path`: what an agent keeps beside its
    logs about that file's bytes, checked before the write (a change it cannot follow is refused)
    and brought up to date after it (Codex's thread-history projection, codex/thread_store.py).
    Any other file is written as it is."""
    from .codex.parsing import named_as_rollout

    if not named_as_rollout(os.fspath(path)):
        return contextlib.nullcontext()
    from .codex.thread_store import rewriting

    return rewriting(path, data)


def _hint(parsed: Parsed, messages_path: str | None, named: str | None = None) -> str | None:
    """What to do instead: the format that reads the input where another was named; the formats
    we recognise but do not read yet, so the user knows what they have; where messages may sit
    (never the path already given)."""
    if named is not None:
        for fmt in all_formats():
            try:
                reads = fmt.name != named and fmt.detect(parsed, messages_path)
            except TranscompactError:  # (the path given finds nothing in it: said by the other formats' hints)
                reads = False
            if reads:
                return f"it reads as {fmt.name}: leave out {option('format')}, or give {option('format', fmt.name)}"
    for fmt in all_formats():
        if (hint := fmt.hint(parsed)) is not None:
            return hint
    document = parsed.document
    if isinstance(document, list) and document and isinstance(document[0], dict):
        for key, value in document[0].items():
            if isinstance(value, list) and value and isinstance(value[0], dict) and "role" in value[0] and messages_path != f"0.{key}":
                return f"the items hold messages under {key!r}: read one with {option('messages_path', f'0.{key}')}"
    if isinstance(document, dict):
        for key, value in document.items():
            if isinstance(value, list) and value and isinstance(value[0], dict) and "role" in value[0] and messages_path != key:
                return f"messages may sit under {key!r}: try {option('messages_path', key)}"
    return None
