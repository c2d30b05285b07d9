"""The archive of what prune replaced (and what compact dropped): `prune --archive FILE` and
`compact --archive FILE` add to it, `expand --archive FILE` reads it.

A JSON Lines file, one record per line (or message) that a prune run changed or removed,
holding what was there. Every record names the transcript it applies to: the exact bytes that
run wrote (`pruned_sha256`, `pruned_bytes`), and `file`, the name it had. A file that grew
afterwards (a Claude Code session that went on) still starts with those bytes, so its records
still apply; another transcript sharing the archive, or one changed since, gets none of them.

- JSON Lines formats (jsonl and the agents' logs), where a line is the unit prune rewrites:
  `{"kind": "line", "line": N, "keep": [HEAD, TAIL], "original": TEXT}`: line N of the pruned
  output was its first HEAD and last TAIL characters around TEXT (what prune replaced, as text,
  so it comes back byte for byte);
  `{"kind": "removed-line", "line": N, "original": TEXT}`: a line prune removed (a line of nothing
  but thinking) stood before line N.
- documents (anthropic, openai, a legacy Gemini `.json`): `{"kind": "message", "path": [...],
  "message": I, "original": {...}}`:
  the message at index I of the list at `path` was this.
- `compact --archive`: `{"kind": "compaction", "original": TEXT}`: the whole transcript compact
  read, the messages it dropped and what its pruning replaced with them (a compaction rewrites
  more than lines or messages in place: it drops, adds and moves them).
- `slim` (and `compact --slim`): `{"kind": "slim", "original": BASE64}`: the whole log it read,
  gzip-compressed (a stored log compresses about tenfold: the archive of a slimmed log is not
  another copy of it), in base64.

Each record also has `original_sha256` (the bytes the run read) and `tool_call_ids` (the calls
and results the original holds, to find the one a marker names: "archived as toolu_01").

The file is rewritten whole (temporary file + rename) under a lock, so that a full disk or a
second prune at the same time never leaves a torn or lost record.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from ...core.errors import InputError, Location, OutputError, ParseError, option
from ...core.jsondata import BOM, Lines, kind_of, parse_value, with_member_replaced
from ...core.model import Transcript
from ...formats import adapter, rewrites_lines
from ...io.files import replaces, write_file

KINDS = ("line", "removed-line", "message", "compaction", "slim")
WHOLE = ("compaction", "slim")  # the kinds whose record holds the whole transcript read
CHANGED_HINT = "the archive holds what prune, compact and slim wrote: a changed or cut-off record cannot be used"


class Run(NamedTuple):
    """A prune run: the transcript it read and the bytes it wrote. Its records are undone together."""

    file: str
    pruned_sha256: str
    pruned_bytes: int
    original_sha256: str


@dataclass(frozen=True)
class Record:
    kind: str  # one of KINDS
    file: str  # the transcript's name when it was pruned
    pruned_sha256: str  # what the record applies to: the first `pruned_bytes` bytes of the transcript
    pruned_bytes: int
    original_sha256: str  # the bytes the prune run read
    original: Any  # TEXT for lines and "compaction" (the whole transcript), the message object for "message"
    line: int = 0  # "line", "removed-line": 1-based line of the pruned output
    keep: tuple[int, int] = (0, 0)  # "line": characters of the pruned line kept at its start and end
    path: tuple[str | int, ...] = ()  # "message": where the list of messages sits
    message: int = 0  # "message": index in that list
    tool_call_ids: tuple[str, ...] = ()

    @property
    def run(self) -> Run:
        return Run(self.file, self.pruned_sha256, self.pruned_bytes, self.original_sha256)

    def as_json(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind, "file": self.file, "pruned_sha256": self.pruned_sha256,
                               "pruned_bytes": self.pruned_bytes, "original_sha256": self.original_sha256}
        if self.kind == "message":
            out.update(path=list(self.path), message=self.message)
        elif self.kind not in WHOLE:
            out["line"] = self.line
        if self.kind == "line":
            out["keep"] = list(self.keep)
        out.update(tool_call_ids=list(self.tool_call_ids), original=self.original)
        return out


class Pruned(NamedTuple):
    """The bytes a run wrote, as its records name them: the first `size` bytes of a transcript."""

    sha256: str
    size: int


@dataclass(frozen=True)
class Archive:
    records: tuple[Record, ...]
    torn_line: int | None = None  # a last line cut short (an interrupted write): left out
    torn_pruned: Pruned | None = None  # what that line's record applied to, when it got that far


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- what prune replaced ---------------------------------------------------------------------


def records(before: bytes, after: bytes, transcript: Transcript) -> list[Record]:
    """What prune replaced when it rewrote `before` (read as `transcript`) to `after`, as records."""
    if before == after:
        return []
    run = dict(file=transcript.name, pruned_sha256=sha256(after), pruned_bytes=len(after),
               original_sha256=sha256(before))
    if rewrites_lines(transcript):
        return list(_line_records(before, after, run, adapter(transcript).line_id))
    return list(_message_records(transcript, after, run))


def compaction_record(before: bytes, after: bytes, name: str) -> list[Record]:
    """What compact dropped and replaced when it rewrote `before` to `after`: all of `before`."""
    if before == after:
        return []
    return [Record("compaction", name, sha256(after), len(after), sha256(before), before.decode("utf-8", "replace"))]


def slim_record(before: bytes, after: bytes | Lines, name: str) -> list[Record]:
    """What slim dropped when it rewrote `before` to `after` (its output: bytes, or a log's lines
    as they are to be joined): all of `before`, compressed; none when it dropped nothing."""
    after = after if isinstance(after, bytes) else bytes(after)
    if before == after:
        return []
    import base64
    import gzip

    packed = base64.b64encode(gzip.compress(before, compresslevel=6, mtime=0)).decode()
    return [Record("slim", name, sha256(after), len(after), sha256(before), packed)]


def _line_records(before: bytes, after: bytes, run: dict, line_id: Callable[[Any], Any]) -> Iterator[Record]:
    """Prune keeps the order of lines, rewrites some and removes some (never adds one): a line
    whose id (`line_id`, the format's: Claude Code's uuid; None for a line of a format without
    one) is that of the new line in its place was rewritten, any other removed."""
    old_lines, new_lines = before.split(b"\n"), after.split(b"\n")
    j = 0
    for old in old_lines:
        new = new_lines[j] if j < len(new_lines) else None
        if new == old:
            j += 1
            continue
        value = _line_value(old)
        ids = _tool_call_ids(value)
        if new is not None and line_id(value) == line_id(_line_value(new)):
            old_text, new_text = old.decode(), new.decode()
            head = _common_prefix(old_text, new_text)
            tail = _common_prefix(old_text[head:][::-1], new_text[head:][::-1])
            yield Record("line", **run, line=j + 1, keep=(head, tail), original=old_text[head:len(old_text) - tail],
                         tool_call_ids=ids)
            j += 1
        else:
            yield Record("removed-line", **run, line=j + 1, original=old.decode(), tool_call_ids=ids)
    if j != len(new_lines):
        raise ValueError("the pruned output has lines its input does not have: it is not prune's output")


def _line_value(line: bytes) -> Any:
    try:
        return orjson.loads(line.removeprefix(BOM))
    except orjson.JSONDecodeError:
        return None  # a blank line


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common start, by halving (slices compare in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _message_records(transcript: Transcript, after: bytes, run: dict) -> Iterator[Record]:
    import msgspec

    from ...core.jsondata import nested_value, parse

    path = transcript.source.path  # where the document holds the messages (its source says)
    old_messages = _at(transcript.source.document, path)
    new_messages = _at(parse(after, transcript.name).document, path)
    if len(old_messages) != len(new_messages):
        raise ValueError("the pruned output has another number of messages: it is not prune's output")
    for index, (old, new) in enumerate(zip(old_messages, new_messages)):
        if isinstance(old, msgspec.Raw):  # a message's own bytes (formats._document.read_quickly); a 0 is a 0
            old = nested_value(bytes(old), 1)
        if orjson.dumps(old) != orjson.dumps(new):  # as written: numbers kept as text compare by their text
            yield Record("message", **run, path=tuple(path), message=index, original=old, tool_call_ids=_tool_call_ids(old))


def _at(document: Any, path: Sequence[str | int]) -> Any:
    for key in path:
        document = document[key]
    return document


def _tool_call_ids(value: Any) -> tuple[str, ...]:
    """The ids of the tool calls and results a message (or a Claude Code line's message, or a
    Gemini record with its `toolCalls`) holds."""
    if not isinstance(value, dict):
        return ()
    message = value["message"] if isinstance(value.get("message"), dict) else value
    found = [message[k] for k in ("tool_call_id", "call_id") if isinstance(message.get(k), str)]  # call_id: a Responses item
    for key in ("content", "tool_calls", "toolCalls"):
        items = message.get(key)
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict):
                found += [item[k] for k in ("id", "tool_use_id") if isinstance(item.get(k), str)]
    return tuple(dict.fromkeys(found))


# --- the file --------------------------------------------------------------------------------


# A new archive is readable by its owner alone: it holds whole transcripts, an agent's private logs
# among them (one beside a log of mode 0600 was readable by every user). One already there keeps its mode.
NEW_ARCHIVE_MODE = 0o600


def create(path: str) -> None:
    """Create an empty archive at `path` unless something is there already.

    A prune run with an archive leaves one even when it pruned nothing or had no input, so that
    the `expand` that follows in a script finds it. An empty file appears whole: no rename needed.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_ARCHIVE_MODE))
    except FileExistsError:
        pass
    except OSError as error:
        raise OutputError(f"cannot write the archive: {error.strerror}", location=Location(path)) from None


def add(path: str, new: Sequence[Record]) -> int | None:
    """Add records to the archive at `path`, creating it even with none to add.

    The old records are read (and checked) first, and the whole file written again. Returns the
    number of a torn last line it left out, if any. What is not a regular file (a FIFO,
    /dev/null, /dev/stderr) has nothing to read back: the new records are written to it.
    """
    added = b"".join(orjson.dumps(r.as_json()) + b"\n" for r in new)
    if not replaces(path):
        write_file(path, added)
        return None
    with _locked(path):
        try:
            with open(path, "rb") as handle:
                old = handle.read()
        except FileNotFoundError:  # where there is no lock (Windows), nothing has created it yet
            old = b""
        found = parse(old, path)
        kept = old[: _offset_of_line(old, found.torn_line)] if found.torn_line else old
        if kept and not kept.endswith(b"\n"):
            kept += b"\n"  # a last record someone left without its newline
        write_file(path, kept + added)
    return found.torn_line


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold an exclusive lock on the archive, so that two prunes do not each add to the same old copy.

    A prune that waited finds the file replaced by the one before it: it locks the new one.
    """
    try:
        import fcntl
    except ImportError:  # no flock here (Windows): one prune at a time is up to the user
        yield
        return
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, NEW_ARCHIVE_MODE)
        except OSError as error:
            raise OutputError(f"cannot write the archive: {error.strerror}", location=Location(path)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                break
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def _offset_of_line(data: bytes, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        offset = data.index(b"\n", offset) + 1
    return offset


def read(path: str) -> Archive:
    from ...io.inputs import read_input

    name, data = read_input(path)
    return parse(data, name)


def parse(data: bytes, name: str) -> Archive:
    """The records of an archive; InputError names the line of one that is malformed or changed.

    A last line without its newline that does not read is a write that was cut short (by an older
    transcompact, or a full disk): it is left out, and `torn_line` says so; `torn_pruned`, what
    its record applied to, when the line holds that much (the fields come first), tells whether
    it was a transcript's.
    """
    lines = data.split(b"\n")
    found = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            found.append(_record(parse_value(line, name, number), Location(name, number)))
        except InputError as error:
            if number == len(lines):  # no newline after it
                return Archive(tuple(found), torn_line=number, torn_pruned=_pruned_of_torn(line))
            if not isinstance(error, ParseError):
                raise
            # (A line that is no JSON: the file is named as the archive, where its hint was JSON Lines' in general.)
            raise error.with_hint(f"{option('archive', name)} is read as an archive, the originals prune, compact and slim "
                                  "put aside, one JSON object a line: this is none") from None
    return Archive(tuple(found))


_TORN_SHA256 = re.compile(rb'"pruned_sha256"\s*:\s*"([0-9a-f]{64})"')
_TORN_BYTES = re.compile(rb'"pruned_bytes"\s*:\s*(\d+)\s*[,}]')  # the number whole: a comma or brace after it


def _pruned_of_torn(line: bytes) -> Pruned | None:
    digest, size = _TORN_SHA256.search(line), _TORN_BYTES.search(line)
    return Pruned(digest[1].decode(), int(size[1])) if digest and size else None


def _record(value: Any, where: Location) -> Record:
    if not isinstance(value, dict):
        raise InputError(f"an archive record must be an object, not {kind_of(value)}", location=where,
                         hint=CHANGED_HINT)

    def field(key: str, expected: str, ok) -> Any:
        if key not in value:
            raise InputError(f"archive record: `{key}` is missing", location=where, hint=CHANGED_HINT)
        if not ok(value[key]):
            raise InputError(f"archive record: `{key}` must be {expected}, not {kind_of(value[key])}",
                             location=where, hint=CHANGED_HINT)
        return value[key]

    kind = field("kind", "a string", _is(str))
    if kind not in KINDS:  # "result" and "input": an archive of an older transcompact, which expand cannot use
        raise InputError(f"archive record: `kind` must be one of {', '.join(KINDS)}, not {kind!r}", location=where,
                         hint=CHANGED_HINT)
    common = dict(
        file=field("file", "a string", _is(str)),
        pruned_sha256=field("pruned_sha256", "a SHA-256 in hex", _is_sha256),
        pruned_bytes=field("pruned_bytes", "a count", _is_count),
        original_sha256=field("original_sha256", "a SHA-256 in hex", _is_sha256),
        tool_call_ids=tuple(field("tool_call_ids", "a list of strings",
                                  lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v))),
    )
    if kind == "message":
        return Record(kind, **common, original=field("original", "a message object", _is(dict)),
                      path=tuple(field("path", "a list of keys and indices",
                                       lambda v: isinstance(v, list) and all(_is(str)(k) or _is_count(k) for k in v))),
                      message=field("message", "a count", _is_count))
    if kind in WHOLE:
        return Record(kind, **common, original=field("original", "a string", _is(str)))
    line = field("line", "a line number", lambda v: _is_count(v) and v >= 1)
    original = field("original", "a string", _is(str))
    if kind == "removed-line":
        return Record(kind, **common, line=line, original=original)
    keep = field("keep", "two counts", lambda v: isinstance(v, list) and len(v) == 2 and all(map(_is_count, v)))
    return Record(kind, **common, line=line, keep=tuple(keep), original=original)


def _is(kind: type):
    return lambda v: isinstance(v, kind)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_sha256(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


# --- putting it back -------------------------------------------------------------------------


def undo(data: bytes, run: Sequence[Record], name: str, *, whole: bool = False) -> tuple[bytes, bool]:
    """The bytes a prune run read, from the bytes it wrote (and whatever was added after them),
    and whether they are those it read, byte for byte. They are not when a record of the run is
    missing or was changed, or, for a document, when it is written again in another layout than
    the one it was read in (expand gives back equal JSON there). `whole`: `data` is what the run
    wrote and nothing after, as equal JSON (a document a later run's undo wrote again)."""
    if run[0].kind == "message":
        restored = _undo_messages(data, run, name)
        return restored, sha256(restored) == run[0].original_sha256
    pruned, added = (data, b"") if whole else (data[: run[0].pruned_bytes], data[run[0].pruned_bytes:])
    if run[0].kind == "slim":
        restored = _unpacked(run[0].original, name)
    else:
        restored = run[0].original.encode() if run[0].kind == "compaction" else _undo_lines(pruned, run, name)
    if run[0].kind == "compaction" and added.strip():
        added = _hung_from_the_restored(added, pruned, restored, name)
    return restored + added, sha256(restored) == run[0].original_sha256


def _hung_from_the_restored(added: bytes, compacted: bytes, restored: bytes, name: str) -> bytes:
    """The lines a session added after a compaction (an agent resumed it and went on), where one
    hangs from a line the compaction made (its summary, its copy of the recent part), which the
    restored session does not hold: hung from the line the session went on from before it was
    compacted (`Format.leaf_of`), so that the restored session and what came after are one path."""
    from ...formats import loads

    try:
        original = loads(restored, name, lazily=True)
    except InputError:
        return added
    fmt = adapter(original)
    if fmt.tree_members is None or (leaf := fmt.leaf_of(original)) is None:
        return added
    own, parent = fmt.tree_members
    made = _ids(compacted, own) - _ids(restored, own)
    lines = added.split(b"\n")
    for at, line in enumerate(lines):
        try:
            value = orjson.loads(line) if line.strip() else None
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get(parent), str) and value[parent] in made:
            replaced = with_member_replaced(line, parent, value[parent], leaf)
            lines[at] = bytes(replaced) if replaced is not None else orjson.dumps({**value, parent: leaf})
    return b"\n".join(lines)


def _ids(data: bytes, member: str) -> set[str]:
    """The `member` of each line of `data` that is a JSON object holding it as a string."""
    found = set()
    for line in data.split(b"\n"):
        try:
            value = orjson.loads(line) if line.strip() else None
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and isinstance(value.get(member), str):
            found.add(value[member])
    return found


def _unpacked(original: str, name: str) -> bytes:
    import base64
    import binascii
    import gzip
    import zlib

    try:
        return gzip.decompress(base64.b64decode(original, validate=True))
    except (binascii.Error, OSError, EOFError, zlib.error):
        raise InputError("a slim record's original is not base64 of gzip: the archive was changed",
                         location=Location(name), hint=CHANGED_HINT) from None


def _undo_lines(data: bytes, run: Sequence[Record], name: str) -> bytes:
    lines = data.split(b"\n")
    replaced = {r.line: r for r in run if r.kind == "line"}
    removed: dict[int, list[bytes]] = {}
    for r in run:
        if r.kind == "removed-line":
            removed.setdefault(r.line, []).append(r.original.encode())
    if any(n > len(lines) for n in replaced) or any(n > len(lines) + 1 for n in removed):
        raise InputError("an archive record names a line it does not have: the archive was changed",
                         location=Location(name), hint=CHANGED_HINT)
    out: list[bytes] = []
    for number, line in enumerate(lines, start=1):
        out.extend(removed.pop(number, ()))
        if number in replaced:
            record, text = replaced[number], line.decode()
            head, tail = record.keep
            line = (text[:head] + record.original + text[len(text) - tail:]).encode()
        out.append(line)
    out.extend(removed.pop(len(lines) + 1, ()))
    return b"\n".join(out)


def _undo_messages(data: bytes, run: Sequence[Record], name: str) -> bytes:
    from ...core.jsondata import Layout, parse

    document = parse(data, name).document
    try:
        messages = _at(document, run[0].path)
        for record in run:
            messages[record.message] = record.original
    except (KeyError, IndexError, TypeError):
        raise InputError("an archive record names a message it does not have: the archive was changed",
                         location=Location(name), hint=CHANGED_HINT) from None
    return Layout.of(data).dumps(document)


def runs(found: Iterable[Record]) -> dict[Run, list[Record]]:
    """The records grouped by the prune run that wrote them (one run's records are written
    together), oldest first; a run repeated with the same input and output counts once."""
    grouped: dict[Run, list[Record]] = {}
    previous = None
    for record in found:
        if record.run != previous:
            grouped.pop(record.run, None)  # the same run again: its records again
            grouped[record.run] = []
            previous = record.run
        grouped[record.run].append(record)
    return grouped


def torn_warning(archive: str, line: int) -> str:
    return f"{archive}:{line}: warning: left out a last line that was cut short (an earlier write did not finish)"
