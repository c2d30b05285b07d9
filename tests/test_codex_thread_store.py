"""What a write over a Codex rollout does to what Codex keeps beside it (formats/codex/thread_store.py):
its thread-history projection (the byte offset and ordinal of the next line, and the rows of the
lines before it) is left as it is when the write only appends, and forgotten, after the write,
when it changes the bytes projected; a rewrite that changes the bytes a fork reads is refused.
Without Codex: a CODEX_HOME is made here, its database with the columns transcompact reads and
deletes by (tests/test_codex_resume.py has the real Codex judge, in the home that recorded it)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from transcompact import PruneOptions, dump, load, prune
from transcompact.cli.main import cli
from transcompact.core.errors import OutputError, UsageError
from transcompact.core.jsondata import Lines, parse
from transcompact.formats.codex import thread_store
from transcompact.formats.codex.thread_store import codex_home, rewriting

from .conftest import FIXTURES

THREAD = "0199c3a1-7b2e-7c40-9d11-2f6a8e4b5c01"
FIXTURE = FIXTURES / "codex" / f"rollout-2025-10-08T10-15-30-{THREAD}.jsonl"
TABLES = ("thread_items", "thread_realtime_items", "thread_turns")


def paginated(data: bytes) -> bytes:
    """The fixture as Codex 0.171 writes a rollout: `history_mode: "paginated"`, each line's `ordinal`."""
    values = [json.loads(line) for line in data.splitlines() if line.strip()]
    values[0]["payload"]["history_mode"] = "paginated"
    return b"".join(json.dumps({"timestamp": v["timestamp"], "ordinal": n, **v}, separators=(",", ":")).encode() + b"\n"
                    for n, v in enumerate(values))


def appended(log: bytes, *types: str) -> bytes:
    """The rollout with lines appended, numbered on."""
    last = json.loads(log.rstrip().rsplit(b"\n", 1)[-1])
    return log + b"".join(json.dumps({"timestamp": last["timestamp"], "ordinal": last["ordinal"] + 1 + n, "type": kind,
                                      "payload": {"type": "context_compacted"}}, separators=(",", ":")).encode() + b"\n"
                          for n, kind in enumerate(types))


def changed(log: bytes) -> bytes:
    """The rollout with a line in its middle shorter (as prune leaves a cleared result)."""
    return log.replace(b"The checkout test fails", b"The test fails", 1)


class Home:
    """A CODEX_HOME holding one rollout, and the projection Codex made of it."""

    def __init__(self, root: Path, log: bytes, *, projected: int | None = None):
        self.codex = root / ".codex"
        self.rollout = self.codex / "sessions" / "2025" / "10" / "08" / FIXTURE.name
        self.rollout.parent.mkdir(parents=True)
        self.rollout.write_bytes(log)
        self.database = self.codex / "thread_history_1.sqlite"
        with contextlib.closing(sqlite3.connect(self.database)) as db, db:
            db.execute("PRAGMA journal_mode = WAL")  # as Codex keeps it: a reader waits for no writer
            db.execute("CREATE TABLE thread_history_projection_state (thread_id TEXT PRIMARY KEY, "
                       "next_rollout_byte_offset INTEGER NOT NULL, next_rollout_ordinal INTEGER NOT NULL)")
            for table in TABLES:
                db.execute(f"CREATE TABLE {table} (thread_id TEXT NOT NULL, rollout_ordinal INTEGER NOT NULL)")
            offset = len(log) if projected is None else projected
            lines = log[:offset].count(b"\n")
            db.execute("INSERT INTO thread_history_projection_state VALUES (?, ?, ?)", (THREAD, offset, lines))
            db.execute("INSERT INTO thread_history_projection_state VALUES ('another', 10, 1)")
            for table in TABLES:
                db.executemany(f"INSERT INTO {table} VALUES (?, ?)", [(THREAD, n) for n in range(lines)] + [("another", 0)])

    def rows(self, thread: str = THREAD) -> dict[str, int]:
        with contextlib.closing(sqlite3.connect(self.database)) as db:
            return {table: db.execute(f"SELECT count(*) FROM {table} WHERE thread_id = ?", (thread,)).fetchone()[0]
                    for table in (*TABLES, "thread_history_projection_state")}

    def write(self, data: bytes | Lines) -> None:
        with rewriting(self.rollout, data):
            self.rollout.write_bytes(bytes(data))


@pytest.fixture
def log() -> bytes:
    return paginated(FIXTURE.read_bytes())


def test_a_write_that_only_appends_leaves_the_projection_as_codex_made_it(tmp_path, log):
    home = Home(tmp_path, log)
    before = home.rows()
    home.write(appended(log, "event_msg", "event_msg"))
    assert home.rows() == before and before["thread_history_projection_state"] == 1


def test_a_write_that_changes_projected_bytes_forgets_the_projection_after_the_write(tmp_path, log):
    """Codex then projects the file afresh from its first byte; other threads keep theirs."""
    home = Home(tmp_path, log)
    with rewriting(home.rollout, changed(log)):
        assert home.rows()["thread_history_projection_state"] == 1  # not before the file is replaced
        home.rollout.write_bytes(changed(log))
    assert set(home.rows().values()) == {0}
    assert set(home.rows("another").values()) == {1}


def test_a_write_that_fails_leaves_the_projection(tmp_path, log):
    home = Home(tmp_path, log)
    with pytest.raises(OSError), rewriting(home.rollout, changed(log)):
        raise OSError("disk full")
    assert home.rows()["thread_history_projection_state"] == 1


@pytest.mark.parametrize("projected", [0, 1, -1], ids=["nothing-projected", "mid-line", "a-line-short"])
def test_a_projection_already_stale_is_forgotten_though_the_write_only_appends(tmp_path, log, projected):
    """A projection whose offset is not the end of the line before its next ordinal (one an older
    rewrite left) is forgotten; one at byte 0 holds whatever is written."""
    if projected == -1:
        projected = len(log) - len(log.rstrip(b"\n").rsplit(b"\n", 1)[-1]) - 1  # the state claims the last line too
        home = Home(tmp_path, log, projected=projected)
        with contextlib.closing(sqlite3.connect(home.database)) as db, db:
            db.execute("UPDATE thread_history_projection_state SET next_rollout_ordinal = next_rollout_ordinal + 1")
    else:
        home = Home(tmp_path, log, projected=projected)
    home.write(appended(log, "event_msg"))
    assert home.rows()["thread_history_projection_state"] == (1 if projected == 0 else 0)


def test_the_output_as_lines(tmp_path, log):
    """A rewrite's output given as its lines (`Lines`), the way a log is written without a copy."""
    home = Home(tmp_path, log)
    records = parse(changed(log), "x").records
    assert records is not None
    home.write(Lines(records))
    assert home.rows()["thread_history_projection_state"] == 0


def test_codex_sqlite_home(tmp_path, log, monkeypatch):
    """Codex's `sqlite_home` ($CODEX_SQLITE_HOME) holds its databases when it is set."""
    home = Home(tmp_path / "home", log)
    elsewhere = tmp_path / "sqlite"
    elsewhere.mkdir()
    home.database = home.database.rename(elsewhere / home.database.name)
    monkeypatch.setenv("CODEX_SQLITE_HOME", str(elsewhere))
    home.write(changed(log))
    assert home.rows()["thread_history_projection_state"] == 0


def test_a_database_codex_holds_locked_is_an_output_error_that_says_what_to_run(tmp_path, log, monkeypatch):
    """Codex writing its database all the while: the file is written, and the error says how to
    forget the projection by hand."""
    home = Home(tmp_path, log)
    monkeypatch.setattr(thread_store, "LOCK_TIMEOUT", 0.05)
    with contextlib.closing(sqlite3.connect(home.database, isolation_level=None)) as codex:
        codex.execute("BEGIN IMMEDIATE")
        with pytest.raises(OutputError, match="could not be reset") as raised:
            home.write(changed(log))
        codex.execute("ROLLBACK")
    assert raised.value.hint is not None and "DELETE FROM thread_history_projection_state" in raised.value.hint
    assert home.rollout.read_bytes() == changed(log)


def test_a_database_locked_against_reading_is_an_output_error_before_the_write(tmp_path, log, monkeypatch):
    home = Home(tmp_path, log)
    with contextlib.closing(sqlite3.connect(home.database)) as db:
        db.execute("PRAGMA journal_mode = DELETE")
    monkeypatch.setattr(thread_store, "LOCK_TIMEOUT", 0.05)
    with contextlib.closing(sqlite3.connect(home.database, isolation_level=None)) as codex:
        codex.execute("BEGIN EXCLUSIVE")
        with pytest.raises(OutputError, match="is locked"), rewriting(home.rollout, changed(log)):
            pytest.fail("written")
        codex.execute("ROLLBACK")


def test_other_files_are_written_as_they_are(tmp_path, log):
    """A file not named as a rollout, or not under a CODEX_HOME's sessions, asks nothing of Codex."""
    home = Home(tmp_path, log)
    for path in (tmp_path / FIXTURE.name, home.rollout.with_name("notes.jsonl")):
        assert codex_home(path) is None or not thread_store.ROLLOUT_NAME.fullmatch(path.name)
        with rewriting(path, changed(log)):
            path.write_bytes(changed(log))
    assert home.rows()["thread_history_projection_state"] == 1
    assert codex_home(home.rollout) == home.codex


def fork_of(home: Home, end: int) -> Path:
    """A fork of the home's rollout made when it was `end` bytes long."""
    fork = home.rollout.with_name("rollout-2025-10-08T10-20-00-0199c3a1-0000-7000-8000-000000000001.jsonl")
    meta = {"id": "0199c3a1-0000-7000-8000-000000000001", "forked_from_id": THREAD, "base_instructions": "x" * 5000,
            "history_mode": "paginated",
            "history_base": {"thread_id": THREAD, "end_ordinal_exclusive": 5, "end_byte_offset": end}}
    fork.write_text(json.dumps({"timestamp": "2025-10-08T10:20:00Z", "ordinal": 5, "type": "session_meta", "payload": meta}) + "\n")
    return fork


def test_a_rewrite_that_changes_what_a_fork_reads_is_refused_before_the_write(tmp_path, log):
    home = Home(tmp_path, log)
    fork = fork_of(home, len(log))
    with pytest.raises(UsageError, match=f"{fork.name} is a fork of this one"), rewriting(home.rollout, changed(log)):
        pytest.fail("written")
    assert home.rows()["thread_history_projection_state"] == 1
    home.write(appended(log, "event_msg"))  # beyond what the fork reads: written
    assert home.rollout.read_bytes().startswith(log)


def test_a_fork_made_before_its_parent_is_no_fork(tmp_path, log):
    """A fork is named after the time it was made, after its parent's: older rollouts are not read."""
    home = Home(tmp_path, log)
    fork = fork_of(home, len(log))
    fork.rename(fork.with_name(fork.name.replace("2025-10-08T10-20-00", "2025-10-08T09-00-00")))
    home.write(changed(log))
    assert home.rollout.read_bytes() == changed(log)


def test_prune_in_place_forgets_codex_projection(tmp_path, log):
    """The command: `prune -i` over a rollout Codex projected (the real Codex: test_codex_resume.py)."""
    home = Home(tmp_path, log)
    result = CliRunner().invoke(cli, ["prune", "--hard-clear-after", "0", "--keep-last", "0", "-i", str(home.rollout)],
                                prog_name="transcompact")
    assert result.exit_code == 0, result.output
    assert home.rollout.read_bytes() != log
    assert set(home.rows().values()) == {0}


def test_a_fork_made_after_a_first_look_is_found(tmp_path, log):
    """What was read of a folder is kept while its time stays: a fork made there since changes it."""
    home = Home(tmp_path, log)
    past = time.time() - 60
    os.utime(home.rollout.parent, (past, past))
    home.write(appended(log, "event_msg"))  # a first look, with no fork: the folder as read is kept
    grown = home.rollout.read_bytes()
    fork_of(home, len(grown))
    with pytest.raises(UsageError, match="is a fork of this one"), rewriting(home.rollout, changed(grown)):
        pytest.fail("written")


def test_dump_over_the_rollout_forgets_codex_projection(tmp_path, log):
    """The library: `dump` of a pruned rollout over its file, as `-i` writes it."""
    home = Home(tmp_path, log)
    pruned, _ = prune(load(home.rollout), PruneOptions(keep_last=0, hard_clear_after=0))
    dump(pruned, home.rollout)
    assert home.rollout.read_bytes() != log
    assert set(home.rows().values()) == {0}
