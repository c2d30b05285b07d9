"""Where each agent stores its sessions, and what a glance at a stored log's two ends says
(`transcompact sessions`, docs/sessions.md).

Each agent keeps its sessions under a directory of its own, which a variable of its own moves:

- Claude Code: `$CLAUDE_CONFIG_DIR/projects/<project>/<session>.jsonl` (`~/.claude`);
- Codex: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` and `$CODEX_HOME/archived_sessions/`
  (`~/.codex`);
- Gemini CLI: `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/*.json[l]` (`GEMINI_CLI_HOME` stands
  for the home directory);
- pi: `$PI_CODING_AGENT_SESSION_DIR`, else `$PI_CODING_AGENT_DIR/sessions` (`~/.pi/agent`).

A glance reads a file's head and tail only (a few kilobytes each, more only when they do not
hold what is looked for): the first `cwd` of the head, and the newest timestamp of the tail. A
compressed file is read whole (its tail is found only by decompressing it all).

The ends of a log (`log_end`) are what a count anchored on the last recorded usage needs of it:
whole lines from one that records usage to the end of the file, ever further back.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from ..core.errors import InputError
from .compression import detect, plain
from .files import read_file
from .inputs import discover
from .openhands_store import is_conversation, read_conversation


@dataclass(frozen=True)
class Place:
    """Where an agent keeps its sessions: a directory, the files that are sessions in it
    (`patterns`, matched by name), and how deep under it they sit (None: at any depth)."""

    agent: str
    directory: str
    patterns: tuple[str, ...]
    depth: int | None = None  # directories between `directory` and a session file
    under: str | None = None  # the name of the directory a session file sits in (Gemini's `chats`)


AGENTS = ("claude-code", "codex", "gemini", "pi")
# The variables that move each agent's directory, as its own code reads them (docs/sessions.md#where).
VARIABLES = {
    "claude-code": ("CLAUDE_CONFIG_DIR",),
    "codex": ("CODEX_HOME",),
    "gemini": ("GEMINI_CLI_HOME",),
    "pi": ("PI_CODING_AGENT_SESSION_DIR", "PI_CODING_AGENT_DIR"),
}


def places(agent: str | None = None, environ: Mapping[str, str] | None = None) -> list[Place]:
    """Each agent's places (only `agent`'s when given), as its variables set them, else its default."""
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")

    def variable(name: str) -> str | None:
        value = env.get(name) or None
        return os.path.expanduser(value) if value and value.startswith("~") else value

    claude = variable("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
    codex = variable("CODEX_HOME") or os.path.join(home, ".codex")
    gemini = os.path.join(variable("GEMINI_CLI_HOME") or home, ".gemini", "tmp")
    pi = variable("PI_CODING_AGENT_SESSION_DIR") or os.path.join(
        variable("PI_CODING_AGENT_DIR") or os.path.join(home, ".pi", "agent"), "sessions")
    found = [
        Place("claude-code", os.path.join(claude, "projects"), ("*.jsonl",), depth=1),
        Place("codex", os.path.join(codex, "sessions"), ("rollout-*.jsonl",)),
        Place("codex", os.path.join(codex, "archived_sessions"), ("rollout-*.jsonl",)),
        Place("gemini", gemini, ("*.json", "*.jsonl"), depth=2, under="chats"),
        Place("pi", pi, ("*.jsonl",)),
    ]
    return [place for place in found if agent is None or place.agent == agent]


@dataclass(frozen=True)
class Found:
    """A file a walk found: its path, the agent whose place it is in (None: a directory walked),
    its size and modification time, and why it could not be looked at (`problem`)."""

    path: str
    agent: str | None
    size: int = 0
    mtime_ns: int = 0
    inode: int = 0
    problem: str | None = None
    left: str | None = None  # why a walk names it and leaves it (a link out of the tree, a FIFO): no session


def find(place: Place) -> Iterator[Found]:
    """The session files of `place` (nothing when it does not exist), each stat'ed. The walk is
    `inputs.discover`'s: hidden entries skipped, no link followed out of the directory."""
    if not os.path.isdir(place.directory):
        return
    for source in discover([place.directory], place.patterns, each_name=True):
        if source.problem or source.left:
            continue
        parts = source.relative.split("/")
        if place.depth is not None and len(parts) != place.depth + 1:
            continue
        if place.under is not None and (len(parts) < 2 or parts[-2] != place.under):
            continue
        yield stat_of(source.path, place.agent)


def walk(directory: str, patterns: Sequence[str] = ()) -> Iterator[Found]:
    """Every file under `directory` matching `patterns` (`inputs.discover`'s defaults when none),
    whatever its agent, each stat'ed."""
    for source in discover([directory], patterns, each_name=True):
        if source.left:  # a link out of the tree, a FIFO: named, as every walk names it, and left
            yield Found(source.path, None, left=source.left)
        elif source.problem and not source.relative:
            continue  # a directory with nothing to read
        else:
            yield stat_of(source.path, None) if not source.problem else Found(source.path, None, problem=source.problem)


def stat_of(path: str, agent: str | None) -> Found:
    """The file's size and modification time; of an OpenHands conversation (a directory, one
    input), the sum of its files' sizes and the newest of their times."""
    try:
        found = os.stat(path)
        if is_conversation(path):
            files = [os.stat(os.path.join(top, name)) for top, _, names in os.walk(path) for name in names]
            return Found(path, agent, sum(f.st_size for f in files), max((f.st_mtime_ns for f in files), default=found.st_mtime_ns),
                         found.st_ino)
    except OSError as error:
        return Found(path, agent, problem=f"cannot read: {error.strerror}")
    return Found(path, agent, found.st_size, found.st_mtime_ns, found.st_ino)


@dataclass(frozen=True)
class Glance:
    """What the two ends of a log say: the first `cwd` (of the head), the newest timestamp (of
    the tail; seconds since the epoch), and the `lastUpdated` of a Gemini CLI document."""

    cwd: str | None = None
    last: float | None = None


HEAD = 16 * 1024
TAIL = 16 * 1024
FURTHEST = 1 << 20  # how far into a file a glance goes for what the first look did not find
_CWD = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\]|\\.)*)"')
_TIME = re.compile(rb'"(?:timestamp|lastUpdated)"\s*:\s*"(\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:?\d\d)?)"')


def glance(path: str) -> Glance:
    """The first `cwd` and the newest timestamp of the file at `path`, read from its ends (of an
    OpenHands conversation, from the ends of its bundle, which is read whole)."""
    if is_conversation(path):
        try:
            data = read_conversation(path)
        except InputError:  # no events yet: its error is the reading's to say
            return Glance()
        return Glance(_cwd(data[:FURTHEST]), _newest(data[-FURTHEST:]))
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, HEAD, 0)
        if detect(head) is not None:  # compressed: what it holds is read whole
            os.close(fd)
            fd = -1
            data, _ = plain(read_file(path), path)
            return Glance(_cwd(data[:FURTHEST]), _newest(data[-FURTHEST:]))
        cwd = _cwd(head)
        if cwd is None and size > HEAD:
            cwd = _cwd(os.pread(fd, FURTHEST, 0))
        last = _newest(head if size <= TAIL else os.pread(fd, TAIL, size - TAIL))
        if last is None and size > TAIL:
            last = _newest(os.pread(fd, min(FURTHEST, size), max(0, size - FURTHEST)))
        return Glance(cwd, last)
    finally:
        if fd >= 0:
            os.close(fd)


END = 64 * 1024  # how much of a log's end `log_end` first looks for the lines it starts at


def log_end(path: str, markers: Sequence[bytes], runs: int, share: float = 1.0) -> bytes | None:
    """The end of the log at `path` from the `runs`-th last run of lines holding one of `markers`
    (a run: such lines one after the other, the lines of one response), whole lines. Looked for in
    the last END bytes, then four times as many, up to FURTHEST. None when there are fewer runs
    there, or the end would hold more than `share` of the file, or its first line; and for a
    compressed file, whose end is found only by decompressing it all."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        if detect(os.pread(fd, HEAD, 0)) is not None:
            return None
        length = min(END, size)
        while True:
            end = os.pread(fd, length, size - length)
            begin = next(itertools.islice(_runs_back(end, markers), runs - 1, None), None)
            if begin is not None:
                return end[begin:] if length - begin <= share * size else None
            if length >= min(size, FURTHEST):
                return None
            length = min(4 * length, size, FURTHEST)
    finally:
        os.close(fd)


def first_line(path: str) -> bytes:
    """The first line of the file at `path` with its newline; its first HEAD bytes when it is longer."""
    with open(path, "rb") as held:
        head = held.read(HEAD)
    return head[:head.find(b"\n") + 1] or head


def _runs_back(data: bytes, markers: Sequence[bytes]) -> Iterator[int]:
    """Where each run of lines of `data` holding one of `markers` starts (lines one after the other
    are one run: the lines of one response), the last first; not the run of the first line of
    `data`, whose start may lie before it."""
    start = None  # of the run being followed back
    before = len(data)
    while True:
        at = max(data.rfind(marker, 0, before) for marker in markers)
        if at < 0:
            if start is not None:
                yield start
            return
        line = data.rfind(b"\n", 0, at) + 1
        if start is not None and data.find(b"\n", at) + 1 != start:
            yield start
        if not line:
            return
        start = before = line


def _cwd(data: bytes) -> str | None:
    import orjson

    match = _CWD.search(data)
    if match is None:
        return None
    try:
        value = orjson.loads(b'"' + match[1] + b'"')
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) and value else None


def _newest(data: bytes) -> float | None:
    """The newest timestamp written in `data` (ISO 8601, as every agent writes them)."""
    written = _TIME.findall(data)
    # (`Z` ends a time when it is in it at all: counted at C speed, as the lengths are)
    if written and b"".join(written).count(b"Z") == len(written) and len(set(map(len, written))) == 1:
        # All in UTC, to the same precision (as an agent writes them): the newest sorts last.
        when = seconds(max(written).decode())
        if when is not None:
            return when
    newest = None
    for text in written:
        when = seconds(text.decode())
        if when is not None and (newest is None or when > newest):
            newest = when
    return newest


_FRACTION = re.compile(r"\.(\d+)")


def seconds(text: str) -> float | None:
    """Seconds since the epoch of an ISO 8601 time (`Z` or an offset; none: UTC)."""
    text = _FRACTION.sub(lambda m: "." + (m[1] + "000000")[:6], text.replace("Z", "+00:00"), count=1)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def project_root(path: str) -> str | None:
    """Gemini CLI: the project a session file belongs to, from the `.project_root` marker of its
    project directory (`tmp/<project>/chats/<file>`); None without one."""
    marker = os.path.join(os.path.dirname(os.path.dirname(path)), ".project_root")
    try:
        with open(marker, encoding="utf-8", errors="replace") as held:
            text = held.read(4096).strip()
    except OSError:
        return None
    return text or None
