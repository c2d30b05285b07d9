"""`sessions`: the sessions each agent has stored, one line each (docs/sessions.md).

A line is made of two parts:

- what the file's size, its time and a glance at its two ends say (`io.sessions.glance`): the
  project, the last activity; read for every file, every time (a few kilobytes each);
- what only the whole file says, `measure`: the context tokens now (`estimate` with its defaults)
  and the bytes its agent never sends (what `slim` would take out). These are kept in a cache
  (`$XDG_CACHE_HOME/transcompact/sessions.json`) by the file's path, size, modification time
  and inode, and a file is read whole again only when one of them changed: an agent appends to
  the session it is in, and leaves the others as they are.

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
from ..core.errors import InputError, Location, TranscompactError
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
CACHE_VERSION = 2  # bumped when a figure means something else (slim learnt Codex, pi and Gemini CLI)


@dataclass(frozen=True)
class Measured:
    """What a whole file says: its format, the context tokens now, the bytes its agent never sends,
    the threshold it is judged by; or why it could not be read (`error`)."""

    format: str | None = None
    tokens: int | None = None
    unsent: int | None = None
    compacts_at: int | None = None
    near_from: int | None = None
    error: str | None = None


def measure(name: str, data: bytes) -> Measured:
    """Read `data` whole: its tokens (`estimate` with its defaults) and what `slim` would take out
    of it. An input error is the answer's `error`, not raised."""
    from ..formats import loads
    from .estimate import estimate
    from .pruning.slim import slim

    try:
        transcript = loads(data, name, lazily=True)
        counted = estimate(transcript)
        output, _ = slim(transcript, data)
    except TranscompactError as error:
        return Measured(error=_without_name(str(error), name))
    threshold = THRESHOLDS.get(transcript.format)
    return Measured(transcript.format, counted.tokens, len(data) - len(output),
                    threshold.compacts_at if threshold else counted.threshold,
                    threshold.near_from if threshold else counted.warning)


def _without_name(text: str, name: str) -> str:
    return text[len(name) + 1:].lstrip() if text.startswith(f"{name}:") else text


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
        return {"file": self.file, "agent": self.agent, "project": self.project, "last_activity": when,
                "bytes": self.bytes, "tokens": self.tokens, "unsent_bytes": self.unsent_bytes,
                "threshold": self.compacts_at, "status": self.status, "error": self.error}


@dataclass
class Listing:
    """The sessions found, sorted, and where they were looked for."""

    sessions: list[Session] = field(default_factory=list)
    looked_in: list[str] = field(default_factory=list)  # the places that exist (or the directory walked)
    measured: int = 0  # files read whole this time (the others: from the cache)

    def total(self) -> dict[str, int]:
        return {"sessions": len(self.sessions), "bytes": sum(s.bytes for s in self.sessions),
                "tokens": sum(s.tokens or 0 for s in self.sessions),
                "unsent_bytes": sum(s.unsent_bytes or 0 for s in self.sessions),
                **{status: sum(s.status == status for s in self.sessions) for status in (*STATUSES, "error")}}


# How the files not in the cache are read whole: (path) → Measured, in order. The command line
# hands its pool of processes (`run.batch`); alone, they are read here one after the other.
MeasureAll = Callable[[Sequence[str]], Iterable[Measured]]


def measure_here(paths: Sequence[str]) -> Iterator[Measured]:
    from ..io.inputs import read_input

    for path in paths:
        try:
            name, data = read_input(path)
        except InputError as error:
            yield Measured(error=_without_name(str(error), path))
            continue
        yield measure(name, data)


def sessions(paths: Sequence[str] = (), *, agent: str | None = None, environ: Mapping[str, str] | None = None,
             sort: str = settings.SESSIONS_SORT, cache: str | None = "", measure_all: MeasureAll | None = None) -> Listing:
    """The stored sessions of every agent (only `agent`'s when given) in their places; or, given
    `paths`, every log under each directory and each file named, whatever its agent (only those
    `agent` reads, when given). Sorted by `sort` (SORTS: the newest activity, the largest size,
    tokens or bytes never sent first; or by path). `cache`: the cache file ("": its default
    place, None: no cache)."""
    if sort not in SORTS:
        raise ValueError(f"sort is one of {', '.join(SORTS)}, not {sort!r}")
    listing = Listing()
    found: list[stored.Found] = []
    for path in paths:
        if os.path.isdir(path):
            listing.looked_in.append(path)
            found += stored.walk(path)
        elif os.path.exists(path):
            found.append(stored.stat_of(path, None))
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
    missing = [f for f in found if f.problem is None and _key(f) not in known]
    fresh = dict(zip((f.path for f in missing), (measure_all or measure_here)([f.path for f in missing])))
    listing.measured = len(missing)
    for f in found:
        if f.problem is not None:
            listing.sessions.append(Session(f.path, f.agent, None, 0.0, f.size, error=f.problem))
            continue
        key = _key(f)
        m = fresh[f.path] if f.path in fresh else Measured(*known[key][1:])
        kept[key[0]] = [list(key[1:]), m.format, m.tokens, m.unsent, m.compacts_at, m.near_from, m.error]
        who = f.agent or m.format  # a directory walked: the format it is read as
        if agent is not None and who != agent:
            continue
        listing.sessions.append(_session(f, who, m))
    if cache_file:
        _write_cache(cache_file, known, kept, listing.looked_in)
    listing.sessions.sort(key=_SORTS[sort])
    return listing


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


def _write_cache(path: str, known: Mapping[tuple[str, int, int, int], list[Any]], kept: dict[str, list[Any]],
                 looked_in: Sequence[str]) -> None:
    """The measures of this run, and those of files under no directory it looked in; a cache that
    cannot be written is left as it is (the next run reads the files again)."""
    import orjson

    roots = tuple(os.path.join(os.path.abspath(root), "") for root in looked_in)
    files = {key[0]: entry for key, entry in known.items() if not key[0].startswith(roots)}
    files.update(kept)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_file(path, orjson.dumps({"version": CACHE_VERSION, "transcompact": __version__, "files": files}),
                   durable=False)
    except (OSError, TranscompactError):  # a cache is never worth a failed listing
        return
