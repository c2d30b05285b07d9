"""What Codex keeps beside a paginated rollout about the file's bytes, and what a write over the
file does to it (Codex 0.171, codex-rs `thread-store/src/local`).

**The thread-history projection.** Codex projects each paginated rollout into its thread-history
database (`thread_history_1.sqlite` in `$CODEX_SQLITE_HOME`, else in `$CODEX_HOME`) as an
append-only log, a line at a time: `thread_history_projection_state` holds, per thread id, the
byte offset and the ordinal of the next line to project (`next_rollout_byte_offset`,
`next_rollout_ordinal`), and `thread_turns`, `thread_items` and `thread_realtime_items` the rows
made of the lines before it, each with its ordinal (a turn with its byte span too). Each time Codex
flushes the thread it reads the file from that offset on and expects the line there to carry that
ordinal (thread_history_materialization.rs); it checks nothing of the bytes before it, nor the
file's size, time or inode, save that the file is not shorter ("durable rollout shrank before
projection", and nothing is projected until it has grown past the offset). So a file rewritten under
it is read from the middle of a line ("skipping malformed rollout line during projection"), its
next ordinals are taken for a gap ("skipping missing rollout ordinal range"), and the rows of the
lines before the offset stay those of the old bytes: the history Codex shows of the thread
(thread/turns, thread/items) leaves those lines out. What Codex sends the model is rebuilt from the
file itself (load_latest_model_context.rs), never from these rows.

No rewrite can keep the rows valid: a line that changes moves every byte after it. So around a
write over a rollout Codex has projected, its projection is left as it is when the bytes before the
projection's offset stay as they were and end with the line of the ordinal before its next one (a
compaction only appends), and is otherwise forgotten as Codex forgets a thread it deletes (the
thread's rows of those four tables, thread_history.rs `delete_thread`): the next time Codex flushes
the thread it projects the file afresh from its first byte. A legacy rollout has no projection.

**Forks.** A fork's `session_meta.history_base` names its parent (`thread_id`), the ordinal its own
lines start at (`end_ordinal_exclusive`) and the parent's size when it forked (`end_byte_offset`):
Codex reads the parent's lines below that offset as the fork's history, and refuses a parent shorter
than it ("cutoff byte offset is past the source rollout", rollout_lineage.rs). A write that changes
those bytes of a parent is refused before anything is written.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from ...core.errors import Location, OutputError, UsageError
from ...core.jsondata import Lines

if TYPE_CHECKING:  # imported where a database is opened: every file a rewrite writes passes through `rewriting`
    import sqlite3

# Codex finds a rollout by the thread id that ends its name (rollout-<time>-<id>.jsonl).
ROLLOUT_NAME = re.compile(r"rollout-(.+)-([0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12})\.jsonl")
SESSION_DIRECTORIES = ("sessions", "archived_sessions")
DATABASES = "thread_history_*.sqlite"
SQLITE_HOME = "CODEX_SQLITE_HOME"
# What Codex deletes of a thread's projection (thread_history.rs `delete_thread`), the state last.
PROJECTION_TABLES = ("thread_items", "thread_realtime_items", "thread_turns", "thread_history_projection_state")
LOCK_TIMEOUT = 5.0  # seconds to wait for a Codex that is writing the database
FIRST_LINE_LIMIT = 1 << 22  # the bytes of a fork's session_meta line read for its `history_base`


@contextlib.contextmanager
def rewriting(path: str | os.PathLike, data: bytes | Lines) -> Iterator[None]:
    """Around the write of `data` over the file at `path`: when that file is a rollout under a
    CODEX_HOME, refuse (before the write) a change to the bytes a fork of it reads, and forget
    (after it) Codex's projection of the file when the write leaves it stale. Anything else is
    written as it is, at the cost of matching its name."""
    found = ROLLOUT_NAME.fullmatch(os.path.basename(os.fspath(path)))
    home = codex_home(path) if found else None
    if found is None or home is None:
        yield
        return
    target = Path(path)
    thread = found[2].lower()
    dependents = list(forks(home, thread, found[1]))
    states = projections(home, thread, os.fspath(path))
    old = _head_of_file(target, max([offset for _, offset in dependents] + [s.offset for _, s in states] + [0]))
    for fork, offset in dependents:
        if not _keeps(old, data, offset):
            raise UsageError(
                f"Codex rollout {fork.name} is a fork of this one: its history is this file's first {offset} bytes, "
                "which the rewrite changes, and Codex would then refuse it (\"cutoff byte offset is past the source "
                "rollout\") or read another history",
                location=Location(os.fspath(path)),
                hint="compact the fork instead: a compaction appended to it replaces the history it reads from this file")
    stale = [database for database, state in states if not _still_valid(state, old, data)]
    yield
    for database in stale:
        forget(database, thread, os.fspath(path))


def codex_home(path: str | os.PathLike) -> Path | None:
    """The CODEX_HOME a rollout is kept in: the folder holding the `sessions` (or
    `archived_sessions`) folder it is under (sessions/YYYY/MM/DD/rollout-…); None elsewhere."""
    for where in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):  # a link's place, then its file's
        folder = Path(where).parent
        for directory in (folder, *folder.parents[:3]):
            if directory.name in SESSION_DIRECTORIES:
                return directory.parent
    return None


def databases(home: Path) -> list[Path]:
    """Codex's thread-history databases for a CODEX_HOME: in $CODEX_SQLITE_HOME when it is set
    (Codex's `sqlite_home`), and in the CODEX_HOME itself."""
    folders = [Path(os.environ[SQLITE_HOME]).absolute()] if os.environ.get(SQLITE_HOME) else []
    found: list[Path] = []
    for folder in (*folders, home):
        found += [file for file in sorted(folder.glob(DATABASES)) if file not in found]
    return found


@dataclass(frozen=True)
class Projection:
    """Where Codex's projection of a thread stands: the byte offset and ordinal of its next line."""

    offset: int
    ordinal: int


def projections(home: Path, thread: str, name: str) -> list[tuple[Path, Projection]]:
    """Each of Codex's thread-history databases that holds a projection of `thread`, with it."""
    import sqlite3

    found = []
    for database in databases(home):
        try:
            with contextlib.closing(sqlite3.connect(database, timeout=LOCK_TIMEOUT)) as db:
                row = db.execute("SELECT next_rollout_byte_offset, next_rollout_ordinal FROM "
                                 "thread_history_projection_state WHERE thread_id = ?", (thread,)).fetchone()
        except sqlite3.Error as error:
            if _locked(error):
                raise OutputError(f"Codex's index of this rollout in {database} is locked ({error}): nothing written",
                                  location=Location(name), hint="run it again once Codex has let go of it") from error
            continue  # not one of Codex's, or of another schema: nothing of the thread in it
        if row is not None:
            found.append((database, Projection(*row)))
    return found


def _locked(error: sqlite3.Error) -> bool:
    """Whether another process holds the database (SQLITE_BUSY, SQLITE_LOCKED), not that it is not Codex's."""
    return "locked" in str(error) or "busy" in str(error)


def forget(database: Path, thread: str, name: str) -> None:
    """Delete Codex's projection of `thread` from `database`, as Codex does when it deletes the
    thread: it projects the file afresh the next time it flushes the thread."""
    import sqlite3

    try:
        with contextlib.closing(sqlite3.connect(database, timeout=LOCK_TIMEOUT, isolation_level=None)) as db:
            db.execute("BEGIN IMMEDIATE")
            present = {table for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            for table in (t for t in PROJECTION_TABLES if t in present):  # the schema of another version may lack one
                db.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread,))
            db.execute("COMMIT")
    except sqlite3.Error as error:
        statements = "; ".join(f"DELETE FROM {table} WHERE thread_id = '{thread}'" for table in PROJECTION_TABLES)
        raise OutputError(
            f"written, but Codex's index of it in {database} could not be reset ({error}): Codex will read the "
            "rewritten file from the middle of a line", location=Location(name),
            hint=f"with Codex closed, run: sqlite3 {database} \"{statements}\"") from error


def forks(home: Path, thread: str, stamp: str) -> Iterator[tuple[Path, int]]:
    """The rollouts under `home` forked from `thread`, each with the bytes of its parent it reads
    (`history_base.end_byte_offset`). A fork is made after its parent: only the folders and
    rollouts named with a time from the parent's (`stamp`) on are looked at."""
    for directory in SESSION_DIRECTORIES:
        for path, parent in _rollouts_forked(home / directory, (), stamp):
            if parent != thread:
                continue
            try:
                with open(path, "rb") as file:
                    base = orjson.loads(file.readline(FIRST_LINE_LIMIT))["payload"]["history_base"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if isinstance(base, dict) and str(base.get("thread_id", "")).lower() == thread \
                    and isinstance(offset := base.get("end_byte_offset"), int):
                yield Path(path), offset


# A fork names its parent near the start of its first line (`session_meta.forked_from_id`, before
# the base instructions), so that the start of each rollout is enough to tell the forks.
FORKED_FROM = re.compile(rb'"forked_from_id"\s*:\s*"([0-9A-Fa-f-]{36})"')
HEAD = 4096
SETTLED = 2_000_000_000  # nanoseconds after which a folder's time is taken to be settled
# What was read of a folder, while its time stays (a rollout made, renamed or removed changes it): its
# subfolders, and the forks in it, each as (its name's time, its path, its parent's thread id). A
# batch rewrites many rollouts of one CODEX_HOME: each looks for forks without reading them all again.
_FOLDERS: dict[str, tuple[int, tuple[str, ...], tuple[tuple[str, str, str], ...]]] = {}


def _rollouts_forked(folder: Path, dates: tuple[str, ...], stamp: str) -> Iterator[tuple[str, str]]:
    """The forks under `folder` (sessions/YYYY/MM/DD) named with a time from `stamp` on: (path,
    parent's thread id). A folder of a date (its digits after `dates`) before the stamp's is skipped."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return
    cached = _FOLDERS.get(str(folder))
    if cached is None or cached[0] != mtime:
        cached = _read_folder(folder, mtime)
    _, subfolders, found = cached
    for fork_stamp, path, parent in found:
        if fork_stamp >= stamp:
            yield path, parent
    for name in subfolders:
        prefix = "-".join((*dates, name))
        if name.isdigit() and prefix < stamp[:len(prefix)]:
            continue
        yield from _rollouts_forked(folder / name, (*dates, name) if name.isdigit() else dates, stamp)


def _read_folder(folder: Path, mtime: int) -> tuple[int, tuple[str, ...], tuple[tuple[str, str, str], ...]]:
    """A folder's subfolders and the forks in it (the start of each rollout read), kept in `_FOLDERS`."""
    subfolders, found, whole = [], [], True
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return mtime, (), ()
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            subfolders.append(entry.name)
            continue
        name = ROLLOUT_NAME.fullmatch(entry.name)
        if name is None:
            continue
        try:
            with open(entry.path, "rb") as file:
                head = file.read(HEAD)
        except OSError:
            continue
        parent = FORKED_FROM.search(head)
        if parent is not None:
            found.append((name[1], entry.path, parent[1].decode().lower()))
        whole = whole and (b"\n" in head or len(head) == HEAD)  # a first line still being written: read again
    cached = (mtime, tuple(sorted(subfolders)), tuple(found))
    # A folder changed within the last seconds may change again within its time's grain (a second on
    # some file systems) and keep its time: it is read again next time.
    if whole and mtime < time.time_ns() - SETTLED:
        _FOLDERS[str(folder)] = cached
    return cached


def _head_of_file(path: Path, size: int) -> bytes:
    """The first `size` bytes of the file as it is before the write (none when it is not there)."""
    if size == 0:
        return b""
    try:
        with path.open("rb") as file:
            return file.read(size)
    except OSError:
        return b""


def _head(data: bytes | Lines, size: int) -> bytes:
    """The first `size` bytes of what is written."""
    if isinstance(data, bytes):
        return data[:size]
    out = bytearray()
    for chunk in data.chunks():
        if len(out) >= size:
            break
        out += chunk
    return bytes(out[:size])


def _keeps(old: bytes, data: bytes | Lines, size: int) -> bool:
    """Whether the write keeps the old file's first `size` bytes as they are."""
    return len(old) >= size and _head(data, size) == old[:size]


def _still_valid(state: Projection, old: bytes, data: bytes | Lines) -> bool:
    """Whether Codex's projection still holds for the file once `data` replaces `old`: the bytes
    it projected stay, and end with a whole line of the ordinal before its next one (a projection
    that was stale before the write is forgotten too)."""
    if not _keeps(old, data, state.offset):
        return False
    if state.offset == 0:
        return True
    projected = old[:state.offset]
    if not projected.endswith(b"\n"):
        return False
    last = projected.rstrip().rsplit(b"\n", 1)[-1]  # Codex passes over blank lines
    try:
        value = orjson.loads(last)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("ordinal") == state.ordinal - 1
