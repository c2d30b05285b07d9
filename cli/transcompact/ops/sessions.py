"""`sessions`: the sessions each agent has stored, one line each (docs/sessions.md).

A line is made of three parts:

- what the file's size, its time and a glance at its two ends say (`io.sessions.glance`): the
  project, the last activity; read for every file, every time (a few kilobytes each);
- the context tokens now (`estimate` with its defaults): the usage the last response recorded
  and an estimate of what follows it, which the end of the log says (`measure_end`, for the
  agents of `TAILS`), else the whole file (`measure`);
- the bytes its agent never sends (what `slim` would take out), which only the whole file says:
  measured for a small file (SMALL), and for every file when asked for (`unsent`); unknown
  (None) otherwise, even where the end of a log did not say its context and it was read whole.

The last two are kept in a cache (`$XDG_CACHE_HOME/transcompact/sessions.json`) by the file's
path, size, modification time and inode, and a file is read again only when one of them changed
(an agent appends to the session it is in, and leaves the others as they are), or when its bytes
never sent are asked for and not kept.

The status is the context against the agent's own threshold for compacting (`THRESHOLDS`):
`ok`, `near`, or `over`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..core import settings
from ..core.errors import InputError, Location, TranscompactError, UsageError, shown_name
from ..io import sessions as stored
from ..io.files import write_file


@dataclass(frozen=True)
class Threshold:
    """An agent's context window and the context at which it compacts on its own; `near_from`:
    where the status becomes `near` (the agent's own warning, where it has one)."""

    window: int
    compacts_at: int
    near_from: int


# Each agent's compaction threshold with its defaults, from its own code (the releases tests/npm_agent.py pins):
THRESHOLDS = {
    # cli.js 2.1.112: compacts at the window − min(max output, 20,000) − 13,000, warns 20,000 below that.
    "claude-code": Threshold(200_000, 167_000, 147_000),
    # codex-rs `ModelInfo::auto_compact_token_limit`: 9/10 of the window when the model sets none (0.171.0's
    # models: none does); the window of its gpt-5 models, 272,000. No warning of its own: near from 90%.
    "codex": Threshold(272_000, 244_800, 220_320),
    # gemini-cli 0.61.0 chatCompressionService: DEFAULT_COMPRESSION_TOKEN_THRESHOLD 0.5 × tokenLimit (1,048,576).
    "gemini": Threshold(1_048_576, 524_288, 471_859),
    # pi 0.73.1 `shouldCompact`: above the window − reserveTokens (16,384); a 200,000-token model's window.
    "pi": Threshold(200_000, 183_616, 165_254),
}
STATUSES = ("ok", "near", "over")
SORTS = ("activity", "size", "tokens", "unsent", "path")
CACHE_VERSION = 3  # bumped when a figure means something else (3: the bytes never sent may be unknown)


@dataclass(frozen=True)
class Tail:
    """How the end of an agent's log says its context (`context_of_end`), and when it may not."""

    usage: tuple[bytes, ...]  # what a line that records the API's usage holds (the reader judges whether it does)
    header: bool = False  # the reader needs the file's first line
    # What a line that undoes a number of turns before it holds: an end holding one may not reach
    # back to the first of them.
    undoes: tuple[bytes, ...] = ()
    # What marks the lines of a conversation aside in the same file, whose chain the reader picks
    # only when the log has no other (which may end before the end read): an end holding one says
    # nothing, unless the file is that conversation's own (its first line is marked so).
    aside: bytes | None = None


# The agents whose context the end of a log says: past the last response whose usage it recorded,
# the messages are the lines after it. Not Gemini CLI's: its records are rewritten in place by id
# (a later copy keeps the place of the first, which may be before the end read), and its count
# adds, on top of the usage, the copies of tool results no usage counted, wherever they sit.
TAILS = {
    # A sidechain: a subagent's lines, in the session's file before subagents had files of their own.
    "claude-code": Tail((b'"usage"',), aside=b'"isSidechain":true'),
    "codex": Tail((b'"last_token_usage"', b'"token_usage_record"'), undoes=(b'"thread_rolled_back"',)),
    "pi": Tail((b'"usage"',), header=True),
}
# The most of a file an end read for its context may hold (`measure_end`): an end that does not
# say is read on top of the whole, so a longer one costs more when it fails than it saves when it
# says (and the two ends of a log one response short cost about the whole already).
END_SHARE = 0.25
# A file below this is read whole, its bytes never sent measured too, even where its end would do:
# a few tenths of a millisecond more than its end. Above it, slim costs several times what an end
# does (a millisecond and more from 10 KB): over a home of thousands of sessions, seconds.
SMALL = 8 * 1024


@dataclass(frozen=True)
class Measured:
    """What a file says: its format, the context tokens now, the bytes its agent never sends (None:
    not measured), the threshold it is judged by; or why it could not be read (`error`)."""

    format: str | None = None
    tokens: int | None = None
    unsent: int | None = None
    compacts_at: int | None = None
    near_from: int | None = None
    error: str | None = None


def measure(name: str, data: bytes, *, unsent: bool = True) -> Measured:
    """Read `data` whole: its tokens (`estimate` with its defaults) and, with `unsent`, what `slim`
    would take out of it. An input error is the answer's `error`, not raised."""
    from ..formats import loads
    from .estimate import estimate
    from .pruning.slim import slim

    try:
        transcript = loads(data, name, lazily=True)
        counted = estimate(transcript)
        output = slim(transcript, data)[0] if unsent else None
    except TranscompactError as error:
        return Measured(error=_without_name(str(error), name))
    threshold = THRESHOLDS.get(transcript.format)
    return Measured(transcript.format, counted.tokens, None if output is None else len(data) - len(output),
                    threshold.compacts_at if threshold else counted.threshold,
                    threshold.near_from if threshold else counted.warning)


def measure_end(path: str, agent: str) -> Measured | None:
    """The context tokens of `agent`'s log at `path`, from the shortest of its ends
    (`io.sessions.log_end`) that says them (`context_of_end`); None when none does, or the file
    could not be read: the whole file says."""
    tail = TAILS[agent]
    runs = 2  # from the 2nd last run: the last alone holds one response
    first: bytes | None = None  # read when needed
    try:
        while (end := stored.log_end(path, tail.usage, runs, END_SHARE)) is not None:
            if first is None and (tail.header or (tail.aside and tail.aside in end)):
                first = stored.first_line(path)
            counted = _counted_end(end, agent, first or b"")
            if counted is None:
                return None
            responses, tokens = counted
            if responses >= 2:
                threshold = THRESHOLDS[agent]
                return Measured(agent, tokens, None, threshold.compacts_at, threshold.near_from)
            # One response short: the run before is likely the one before it (a response's lines
            # around its tool results are runs of their own). None: twice as far.
            runs = runs + 1 if responses else 2 * runs
    except OSError:  # the whole file says what is wrong with it
        return None
    return None


def context_of_end(end: bytes, agent: str, first: bytes = b"") -> int | None:
    """The context tokens (`estimate` with its defaults: the usage the last response recorded, and
    the estimate of what follows it) that `end`, whole lines at the end of `agent`'s log whose
    first line is `first`, says; None where it may not say what the whole log does. It does when it
    reads as two responses with recorded usage or more (the one before the last ended before the
    last began: the last is read whole, and what follows it is all that follows it in the file),
    and no line of it may refer to what is before it (`Tail`)."""
    counted = _counted_end(end, agent, first)
    return counted[1] if counted is not None and counted[0] >= 2 else None


def _counted_end(end: bytes, agent: str, first: bytes) -> tuple[int, int] | None:
    """(responses with recorded usage, context tokens) of `end` read as `context_of_end` says;
    None when no end of this log says its context: a line of it may refer to what is before it
    (`Tail`), or it cannot be read."""
    from ..counting.counter import TokenCounter
    from ..formats import loads

    tail = TAILS[agent]
    if any(line in end for line in tail.undoes) or (tail.aside and tail.aside in end and tail.aside not in first):
        return None
    try:
        transcript = loads(first + end if tail.header else end, "<end>", format=agent, lazily=True)
        counter = TokenCounter(transcript)  # what `estimate` counts with, without its breakdown
        recorded = counter.recorded(transcript)
    except TranscompactError:  # and the whole file says what is wrong with it
        return None
    return (0, 0) if recorded is None else (recorded.responses, counter.tokens(transcript))


def _without_name(text: str, name: str) -> str:
    return text[len(name) + 1:].lstrip() if text.startswith(f"{name}:") else text


@dataclass(frozen=True)
class Reading:
    """How a file not in the cache is read: for its tokens (by its end where its agent's log says
    them there, else whole), or with `unsent` for its bytes never sent too (whole). Plain values:
    it crosses to a worker process."""

    path: str
    agent: str | None
    unsent: bool


def read_session(reading: Reading) -> Measured:
    """What the file `reading` names says: its tokens from its end where that says them
    (`measure_end`), else from the whole file (`measure`), its bytes never sent with them when
    asked; one that cannot be read is the answer's `error`."""
    from ..io.inputs import read_input

    if not reading.unsent and reading.agent is not None and reading.agent in TAILS:
        measured = measure_end(reading.path, reading.agent)
        if measured is not None:
            return measured
    try:
        name, data = read_input(reading.path)
    except InputError as error:
        return Measured(error=_without_name(str(error), reading.path))
    return measure(name, data, unsent=reading.unsent)


@dataclass(frozen=True)
class Session:
    """One stored session: its file, agent, project, last activity (seconds since the epoch: its
    newest timestamp, else the file's modification time), bytes on disk, and what `measure` says."""

    file: str
    agent: str | None
    project: str | None
    last_activity: float
    bytes: int
    tokens: int | None = None
    unsent_bytes: int | None = None
    compacts_at: int | None = None
    near_from: int | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        """`ok`, `near` (from the agent's warning), `over` (at its threshold), `error`, or `unknown`."""
        if self.error is not None:
            return "error"
        if self.tokens is None or self.compacts_at is None or self.near_from is None:
            return "unknown"
        return "over" if self.tokens >= self.compacts_at else "near" if self.tokens >= self.near_from else "ok"

    def as_dict(self) -> dict[str, Any]:
        from datetime import datetime, timezone

        when = datetime.fromtimestamp(self.last_activity, timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        return {"file": shown_name(self.file), "agent": self.agent, "project": self.project, "last_activity": when,
                "bytes": self.bytes, "tokens": self.tokens, "unsent_bytes": self.unsent_bytes,
                "threshold": self.compacts_at, "status": self.status, "error": self.error}


@dataclass
class Listing:
    """The sessions found, sorted, and where they were looked for."""

    sessions: list[Session] = field(default_factory=list)
    looked_in: list[str] = field(default_factory=list)  # the places that exist (or the directory walked)
    measured: int = 0  # files read this time, whole or by their end (the others: from the cache)
    left: list[tuple[str, str]] = field(default_factory=list)  # what a walk named and left (a link out of it), and why

    def total(self) -> dict[str, int]:
        """The sums; `unsent_bytes` over the sessions whose bytes never sent are known, and
        `unsent_unknown` the others (errors aside)."""
        return {"sessions": len(self.sessions), "bytes": sum(s.bytes for s in self.sessions),
                "tokens": sum(s.tokens or 0 for s in self.sessions),
                "unsent_bytes": sum(s.unsent_bytes or 0 for s in self.sessions),
                "unsent_unknown": sum(s.unsent_bytes is None and s.error is None for s in self.sessions),
                **{status: sum(s.status == status for s in self.sessions) for status in (*STATUSES, "error")}}


# How the files not in the cache are read (`read_session`), in order. The command line hands its
# pool of processes (`run.batch`); alone, they are read here one after the other.
MeasureAll = Callable[[Sequence[Reading]], Iterable[Measured]]


def measure_here(readings: Sequence[Reading]) -> Iterator[Measured]:
    return map(read_session, readings)


def sessions(paths: Sequence[str] = (), *, agent: str | None = None, environ: Mapping[str, str] | None = None,
             sort: str = settings.SESSIONS_SORT, unsent: bool = False, cache: str | None = "",
             measure_all: MeasureAll | None = None) -> Listing:
    """The stored sessions of every agent (only `agent`'s when given) in their places; or, given
    `paths`, every log under each directory and each file named, whatever its agent (only those
    `agent` reads, when given). Sorted by `sort` (SORTS: the newest activity, the largest size,
    tokens or bytes never sent first; or by path). `unsent`: read whole every file whose bytes
    never sent are not kept (sorting by them implies it); else a file is read by its end where
    that says its context. `cache`: the cache file ("": its default place, None: no cache)."""
    if sort not in SORTS:
        raise ValueError(f"sort is one of {', '.join(SORTS)}, not {sort!r}")
    unsent = unsent or sort == "unsent"
    listing = Listing()
    found: list[stored.Found] = []
    for path in paths:
        if os.path.isdir(path):
            listing.looked_in.append(path)
            for walked in stored.walk(path):
                if walked.left is not None:
                    listing.left.append((walked.path, walked.left))
                else:
                    found.append(walked)
        elif os.path.isfile(path):
            found.append(stored.stat_of(path, None))
        elif os.path.exists(path):  # a FIFO, a device: what it holds is read once, and a listing looks twice
            found.append(stored.Found(path, None, problem="not a stored file (a pipe, a device): sessions lists the files agents store"))
        elif path == "-":
            raise UsageError("sessions lists the files agents store, not stdin: give files or directories")
        else:
            raise InputError("no such file or directory", location=Location(path))
    if not paths:
        for place in stored.places(agent, environ):
            if os.path.isdir(place.directory):
                listing.looked_in.append(place.directory)
                found += stored.find(place)
    cache_file = default_cache(environ) if cache == "" else cache
    known = _read_cache(cache_file) if cache_file else {}
    kept: dict[str, list[Any]] = {}
    to_read = [f.problem is None and _to_read(known.get(_key(f)), unsent) for f in found]
    missing = [f for f, read in zip(found, to_read) if read]
    # Taken in order as the files are listed: the glance at each one overlaps the reading of the next.
    fresh = iter((measure_all or measure_here)([Reading(f.path, f.agent, unsent or f.size < SMALL) for f in missing]))
    listing.measured = len(missing)
    for f, read in zip(found, to_read):
        if f.problem is not None:
            listing.sessions.append(Session(f.path, f.agent, None, 0.0, f.size, error=f.problem))
            continue
        key = _key(f)
        m = next(fresh) if read else Measured(*known[key][1:])
        kept[key[0]] = [list(key[1:]), m.format, m.tokens, m.unsent, m.compacts_at, m.near_from, m.error]
        who = f.agent or m.format  # a directory walked: the format it is read as
        if agent is not None and who != agent:
            continue
        listing.sessions.append(_session(f, who, m))
    if cache_file:
        _write_cache(cache_file, known, kept, listing.looked_in)
    listing.sessions.sort(key=_SORTS[sort])
    return listing


def _to_read(entry: list[Any] | None, unsent: bool) -> bool:
    """Whether a file is read: not in the cache, or its bytes never sent are asked for and not kept
    (an entry: the key's rest, then `Measured`'s fields)."""
    if entry is None:
        return True
    kept = Measured(*entry[1:])
    return unsent and kept.unsent is None and kept.error is None


_SORTS: dict[str, Callable[[Session], Any]] = {
    "activity": lambda s: (-s.last_activity, s.file),
    "size": lambda s: (-s.bytes, s.file),
    "tokens": lambda s: (-(s.tokens or 0), s.file),
    "unsent": lambda s: (-(s.unsent_bytes or 0), s.file),
    "path": lambda s: s.file,
}


def _session(f: stored.Found, agent: str | None, m: Measured) -> Session:
    try:
        seen = stored.glance(f.path)
    except OSError as error:
        return Session(f.path, agent, None, f.mtime_ns / 1e9, f.size, error=f"cannot read: {error.strerror}")
    except InputError as error:  # a compressed file cut off, or not what its first bytes say: its row says so
        return Session(f.path, agent, None, f.mtime_ns / 1e9, f.size, error=_without_name(str(error), f.path))
    project = seen.cwd
    if agent == "gemini":
        project = stored.project_root(f.path) or _gemini_directory(f.path)
    elif project is None and agent == "claude-code":
        project = os.path.basename(os.path.dirname(f.path))  # the project's directory, named after its path
    last = seen.last if seen.last is not None else f.mtime_ns / 1e9
    return Session(f.path, agent, project, last, f.size, m.tokens, m.unsent, m.compacts_at, m.near_from, m.error)


def _gemini_directory(path: str) -> str | None:
    chats = os.path.dirname(path)
    return os.path.basename(os.path.dirname(chats)) if os.path.basename(chats) == "chats" else None


def default_cache(environ: Mapping[str, str] | None = None) -> str:
    """`$XDG_CACHE_HOME/transcompact/sessions.json`, `~/.cache/…` without the variable."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "transcompact", "sessions.json")


def _key(f: stored.Found) -> tuple[str, int, int, int]:
    return (os.path.abspath(f.path), f.size, f.mtime_ns, f.inode)


def _read_cache(path: str) -> dict[tuple[str, int, int, int], list[Any]]:
    """The measures kept, by (path, size, mtime, inode); nothing when the cache is missing, broken,
    or written by another release (whose measures may differ)."""
    import orjson

    try:
        with open(path, "rb") as held:
            data = orjson.loads(held.read())
        if data.get("version") != CACHE_VERSION or data.get("transcompact") != __version__:
            return {}
        return {(name, *entry[0]): entry for name, entry in data["files"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def _encodable(name: str) -> bool:
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def _write_cache(path: str, known: Mapping[tuple[str, int, int, int], list[Any]], kept: dict[str, list[Any]],
                 looked_in: Sequence[str]) -> None:
    """The measures of this run, and those of files under no directory it looked in; a cache that
    cannot be written is left as it is (the next run reads the files again)."""
    import orjson

    roots = tuple(os.path.join(os.path.abspath(root), "") for root in looked_in)
    files = {key[0]: entry for key, entry in known.items() if not key[0].startswith(roots)}
    files.update(kept)
    files = {name: entry for name, entry in files.items() if _encodable(name)}  # (a name not UTF-8: read again each run)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_file(path, orjson.dumps({"version": CACHE_VERSION, "transcompact": __version__, "files": files}),
                   durable=False)
    except (OSError, TranscompactError):  # a cache is never worth a failed listing
        return
