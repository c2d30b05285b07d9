"""`transcompact sessions`: each agent's stored sessions in its own place (or a directory walked),
one line each, from a fake home; never the real one."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import orjson
import pytest

from transcompact import TranscompactError, loads
from transcompact.ops.estimate import estimate
from transcompact.ops.pruning.slim import slim
from transcompact.ops.sessions import (
    CACHE_VERSION,
    SMALL,
    TAILS,
    THRESHOLDS,
    Reading,
    Session,
    context_of_end,
    measure_end,
    read_session,
    sessions,
)

from .builders import on_a_terminal
from .conftest import CORPUS, FIXTURES, LARGE

VARIABLES = ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR")
CLAUDE = FIXTURES / "claude-code/broken-session.jsonl"
CODEX = sorted((FIXTURES / "codex").glob("*.jsonl"))[0]
GEMINI = FIXTURES / "gemini/session-2026-01-16T09-00-3b1c2d4e.jsonl"
PI = sorted((FIXTURES / "pi").glob("*.jsonl"))[0]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home holding a session of each agent in its default place; HOME and the cache point there."""
    home = tmp_path / "home"
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    put(CLAUDE, home / ".claude/projects/-home-ada-shop/3f0c6a52-8d1e-4c57-9b7e-0f7f7f2b9a10.jsonl")
    put(CODEX, home / ".codex/sessions/2025/10/08" / CODEX.name)
    put(GEMINI, home / ".gemini/tmp/shop/chats" / GEMINI.name)
    (home / ".gemini/tmp/shop/.project_root").write_text("/home/ada/shop\n")
    put(PI, home / ".pi/agent/sessions/--home-dev-calc--" / PI.name)
    return home


def put(source: Path, target: Path, data: bytes | None = None) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(source.read_bytes() if data is None else data)
    return target


def listed(transcompact, *args: str) -> dict:
    result = transcompact("sessions", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def claude_log(rounds: int, *, size: int = 2000, sidechain: int = 0) -> bytes:
    """A Claude Code session whose responses record usage: each a thinking line and a tool_use line
    (one response, its usage on both), each result with the copy the UI shows (`toolUseResult`,
    which slim takes out); then, with `sidechain`, that many responses of a subagent whose lines
    are written in the session's file (Claude Code before subagents had files of their own)."""
    stamp = iter(f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z" for i in range(3600))
    lines: list[dict] = []

    def add(kind: str, message: dict, parent: str | None, aside: bool = False, **extra) -> str:
        uuid = f"{'side' if aside else 'line'}-{len(lines)}"
        lines.append({"parentUuid": parent, "isSidechain": aside, "cwd": "/home/ada/big", "sessionId": "s-1",
                      "type": kind, "message": message, "uuid": uuid, "timestamp": next(stamp), **extra})
        return uuid

    def respond(i: int, parent: str | None, aside: bool = False) -> str:
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 9000 + 700 * i,
                 "output_tokens": 40}
        response = {"id": f"msg_{'side' if aside else ''}{i}", "type": "message", "role": "assistant", "usage": usage}
        parent = add("assistant", {**response, "content": [{"type": "thinking", "thinking": f"Step {i}.", "signature": "c2ln"}]},
                     parent, aside)
        return add("assistant", {**response, "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash",
                                                          "input": {"command": f"make step{i}"}}]}, parent, aside)

    output = "".join(f"line {n} of the output\n" for n in range(size // 20))
    parent = add("user", {"role": "user", "content": "Fix the failing build."}, None)
    for i in range(rounds):
        parent = respond(i, parent)
        parent = add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": output}]},
                     parent, toolUseResult={"stdout": output, "stderr": ""})
    side = add("user", {"role": "user", "content": "Look into the linker."}, None, aside=True) if sidechain else None
    for i in range(sidechain):
        side = respond(i, side, aside=True)
        side = add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}]},
                   side, aside=True)
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def whole_tokens(data: bytes, name: str = "log.jsonl") -> int:
    return estimate(loads(data, name, lazily=True)).tokens


def test_each_agents_sessions_in_its_own_place(home, transcompact):
    report = listed(transcompact)
    assert list(report) == ["version", "command", "files", "total"] and report["command"] == "sessions"
    by_agent = {entry["agent"]: entry for entry in report["files"]}
    assert set(by_agent) == {"claude-code", "codex", "gemini", "pi"}
    claude = by_agent["claude-code"]
    assert claude["file"] == str(home / ".claude/projects/-home-ada-shop/3f0c6a52-8d1e-4c57-9b7e-0f7f7f2b9a10.jsonl")
    assert claude["bytes"] == CLAUDE.stat().st_size
    first_cwd = next(json.loads(line)["cwd"] for line in CLAUDE.read_text().splitlines() if '"cwd"' in line)
    assert claude["project"] == first_cwd
    assert by_agent["gemini"]["project"] == "/home/ada/shop"  # its project directory's .project_root
    assert by_agent["pi"]["project"] == json.loads(PI.read_text().splitlines()[0])["cwd"]
    codex_meta = json.loads(CODEX.read_text().splitlines()[0])
    assert by_agent["codex"]["project"] == codex_meta["payload"]["cwd"]
    for entry in report["files"]:
        assert entry["threshold"] == THRESHOLDS[entry["agent"]].compacts_at
        assert entry["status"] == "ok" and entry["error"] is None and entry["tokens"] > 0
    total = report["total"]
    assert total["sessions"] == 4 and total["bytes"] == sum(e["bytes"] for e in report["files"])
    # sorted by the last activity, the newest first
    times = [entry["last_activity"] for entry in report["files"]]
    assert times == sorted(times, reverse=True)


def test_each_name_of_a_hard_linked_session_is_a_session(home, transcompact):
    """An agent knows a stored session by its name: a hard link of one is listed too (a batch
    command reads a file once however it is named; a listing of sessions lists names)."""
    original = home / ".claude/projects/-home-ada-shop/3f0c6a52-8d1e-4c57-9b7e-0f7f7f2b9a10.jsonl"
    os.link(original, original.with_name("7a3f0c6a-8d1e-4c57-9b7e-0f7f7f2b9a10.jsonl"))
    assert listed(transcompact)["total"]["sessions"] == 5


def test_the_last_activity_is_the_newest_timestamp_else_the_files_time(home, transcompact):
    newest = max(json.loads(line)["timestamp"] for line in PI.read_text().splitlines())
    entry = next(e for e in listed(transcompact, "--agent", "pi")["files"])
    assert entry["last_activity"] == newest[:19] + "Z"
    plain = put(FIXTURES / "jsonl/chat.jsonl", home / "logs/chat.jsonl")
    os.utime(plain, (1_700_000_000, 1_700_000_000))
    (entry,) = listed(transcompact, str(home / "logs"))["files"]
    assert entry["last_activity"] == "2023-11-14T22:13:20Z"


def test_the_bytes_never_sent_are_what_slim_takes_out(home, transcompact):
    (entry,) = listed(transcompact, "--agent", "claude-code")["files"]
    data = CLAUDE.read_bytes()
    out, _ = slim(loads(data, "s.jsonl"), data)
    assert entry["unsent_bytes"] == len(data) - len(out) > 0


def test_each_agents_variable_moves_its_place(home, tmp_path, transcompact, monkeypatch):
    moved = tmp_path / "moved"
    put(CLAUDE, moved / "claude/projects/p/s.jsonl")
    put(CODEX, moved / "codex/archived_sessions" / CODEX.name)
    put(GEMINI, moved / "gemini-home/.gemini/tmp/h/chats/s.jsonl")
    put(PI, moved / "pi-sessions/--x--/s.jsonl")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(moved / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(moved / "codex"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(moved / "gemini-home"))
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(moved / "pi-sessions"))
    files = {entry["agent"]: entry["file"] for entry in listed(transcompact)["files"]}
    assert files == {"claude-code": str(moved / "claude/projects/p/s.jsonl"),
                     "codex": str(moved / "codex/archived_sessions" / CODEX.name),
                     "gemini": str(moved / "gemini-home/.gemini/tmp/h/chats/s.jsonl"),
                     "pi": str(moved / "pi-sessions/--x--/s.jsonl")}
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(moved / "pi-agent"))
    put(PI, moved / "pi-agent/sessions/--y--/t.jsonl")
    (pi,) = listed(transcompact, "--agent", "pi")["files"]
    assert pi["file"] == str(moved / "pi-agent/sessions/--y--/t.jsonl")


def test_only_the_sessions_themselves(home, transcompact):
    """A Claude Code subagent's log and a file of another kind in a place are no session."""
    project = home / ".claude/projects/-home-ada-shop"
    put(CLAUDE, project / "3f0c6a52-8d1e-4c57-9b7e-0f7f7f2b9a10/subagents/agent-a1.jsonl")
    put(CODEX, home / ".codex/sessions/2025/10/08/notes.jsonl")
    put(GEMINI, home / ".gemini/tmp/shop/logs.json")
    assert len(listed(transcompact)["files"]) == 4


def test_agent_filters(home, transcompact):
    for agent in ("claude-code", "codex", "gemini", "pi"):
        assert [entry["agent"] for entry in listed(transcompact, "--agent", agent)["files"]] == [agent]


def test_a_broken_file_is_listed_with_its_error(home, transcompact):
    broken = put(CLAUDE, home / ".claude/projects/-p/broken.jsonl", b'{"type":"user","cwd":"/p","timestamp":"2026-01-01T00:00:00Z"\n')
    report = listed(transcompact)
    entry = next(e for e in report["files"] if e["file"] == str(broken))
    assert entry["status"] == "error" and "malformed JSON" in entry["error"] and entry["tokens"] is None
    assert entry["project"] == "/p" and entry["last_activity"] == "2026-01-01T00:00:00Z"
    assert report["total"]["error"] == 1
    result = transcompact("sessions")
    assert result.exit_code == 0
    line = next(line for line in result.stdout.splitlines() if str(broken) in line).split("\t")
    assert line[6:8] == ["error", str(broken)] and line[8] == entry["error"]
    assert result.stderr.splitlines()[-1].endswith("; 1 error")
    put(CLAUDE, home / ".claude/projects/-p/broken-too.jsonl", b'{"type":"user"\n')
    assert transcompact("sessions").stderr.splitlines()[-1].endswith("; 2 errors")


def test_every_name_is_shown_escaped_one_line_a_session(home, tmp_path, transcompact):
    """A name that is not UTF-8 ended sessions (exit 70, the cache and the output); a line break
    in a name was shown as a space, the name of another file a pipeline then slimmed (found using
    sessions as a user). Each is shown escaped, as every message shows it, and read again each run."""
    logs = tmp_path / "logs"
    names = [os.fsdecode(b"bad\xff.jsonl"), "a\nb.jsonl", "a b.jsonl"]
    for name in names:
        put(CLAUDE, logs / name)
    for _ in range(2):  # the second from the cache, where a name can be written
        result = transcompact("sessions", "--sort", "path", str(logs))
        assert result.exit_code == 0, result.stderr
        assert [line.split("\t")[7] for line in result.stdout.splitlines()] == [
            f"{logs}/a\\nb.jsonl", f"{logs}/a b.jsonl", f"{logs}/bad\\xff.jsonl"]
    assert [e["file"] for e in listed(transcompact, "--sort", "path", str(logs))["files"]] == [
        f"{logs}/a\\nb.jsonl", f"{logs}/a b.jsonl", f"{logs}/bad\\xff.jsonl"]


def test_a_file_that_cannot_be_read_is_a_row_and_the_listing_goes_on(home, tmp_path, transcompact):
    """A compressed log cut off ended the listing (exit 3, no row); a FIFO named hung it (found
    using sessions as a user): each is a row with its error, exit 0. stdin is no stored file."""
    logs = tmp_path / "logs"
    put(CLAUDE, logs / "cut.jsonl.gz", gzip.compress(CLAUDE.read_bytes())[:200])
    put(CLAUDE, logs / "whole.jsonl")
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # no writer: a look inside would wait for ever
    result = transcompact("sessions", "--sort", "path", str(logs), str(fifo))
    assert result.exit_code == 0, result.stderr
    rows = {Path(line.split("\t")[7]).name: line.split("\t") for line in result.stdout.splitlines()}
    assert rows["cut.jsonl.gz"][6] == "error" and "cut-off gzip data" in rows["cut.jsonl.gz"][8]
    assert rows["pipe.jsonl"][6] == "error" and "not a stored file" in rows["pipe.jsonl"][8]
    assert rows["whole.jsonl"][6] != "error"
    assert transcompact("sessions", "-").exit_code == 2


def test_nothing_stored_is_said_on_stderr(tmp_path, transcompact, monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    result = transcompact("sessions")
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.startswith("transcompact: no stored sessions")
    assert json.loads(transcompact("sessions", "--json").stdout)["files"] == []


def test_a_directory_that_does_not_exist_is_an_input_error(tmp_path, transcompact):
    result = transcompact("sessions", str(tmp_path / "nowhere"))
    assert result.exit_code == 3
    assert result.stderr.splitlines() == [f"transcompact: error: {tmp_path / 'nowhere'}: no such file or directory"]


def test_a_directory_walked_detects_each_format_reads_compressed_logs_and_stays_inside(home, tmp_path, transcompact):
    logs = tmp_path / "logs"
    put(CODEX, logs / "a/rollout.jsonl")
    put(PI, logs / "b/pi.jsonl.gz", gzip.compress(PI.read_bytes()))
    put(FIXTURES / "anthropic/long-session.json", logs / "request.json")
    outside = put(CLAUDE, tmp_path / "outside/s.jsonl")
    (logs / "link.jsonl").symlink_to(outside)
    report = listed(transcompact, str(logs), "--sort", "path")
    assert [(Path(e["file"]).relative_to(logs).as_posix(), e["agent"]) for e in report["files"]] == [
        ("a/rollout.jsonl", "codex"), ("b/pi.jsonl.gz", "pi"), ("request.json", "anthropic")]
    pi = report["files"][1]
    assert pi["project"] == json.loads(PI.read_text().splitlines()[0])["cwd"] and pi["tokens"] > 0
    assert [e["agent"] for e in listed(transcompact, str(logs), "--agent", "pi")["files"]] == ["pi"]


def test_an_openhands_conversation_walked_is_one_session(home, tmp_path, transcompact):
    """A conversation directory is one input, as every command reads it: its tokens, the bytes of
    its files, its last event's time (found using the docs as a user: each was an error)."""
    import shutil

    conversation = tmp_path / "logs/c0ffee00aa11bb22cc33dd44ee55ff66"
    shutil.copytree(FIXTURES / "openhands/c0ffee00aa11bb22cc33dd44ee55ff66", conversation)
    files = [path for path in conversation.rglob("*") if path.is_file()]
    for named in (str(tmp_path / "logs"), str(conversation)):
        (entry,) = listed(transcompact, named)["files"]
        assert (entry["file"], entry["agent"], entry["status"]) == (str(conversation), "openhands", "ok"), entry
        assert entry["tokens"] == json.loads(transcompact("estimate", "--json", str(conversation)).stdout)["files"][0]["tokens"] > 0
        assert entry["bytes"] == sum(path.stat().st_size for path in files)


def test_the_cache_keeps_what_was_read_whole_until_the_file_changes(home, tmp_path):
    cache = str(tmp_path / "cache.json")
    first = sessions(cache=cache)
    assert first.measured == 4 and os.path.exists(cache)
    again = sessions(cache=cache)
    assert again.measured == 0 and again.sessions == first.sessions
    log = Path(next(s.file for s in first.sessions if s.agent == "pi"))
    log.write_bytes(log.read_bytes() + log.read_bytes().splitlines(keepends=True)[-1])
    assert sessions(cache=cache).measured == 1
    assert sessions(cache=None).measured == 4


def test_a_broken_cache_is_read_as_none(home, tmp_path):
    cache = tmp_path / "cache.json"
    cache.write_bytes(b"{not json")
    assert sessions(cache=str(cache)).measured == 4
    assert json.loads(cache.read_bytes())["version"] == CACHE_VERSION


def test_the_status_against_the_agents_threshold():
    claude = THRESHOLDS["claude-code"]

    def status(tokens):
        return Session("f", "claude-code", None, 0.0, 1, tokens, 0, claude.compacts_at, claude.near_from).status

    assert (claude.window, claude.compacts_at, claude.near_from) == (200_000, 167_000, 147_000)
    assert [status(t) for t in (10, 146_999, 147_000, 166_999, 167_000)] == ["ok", "ok", "near", "near", "over"]


def test_piped_a_line_a_session_whose_file_feeds_other_commands(home, transcompact, tmp_path):
    result = transcompact("sessions", "--agent", "claude-code")
    assert result.exit_code == 0
    (line,) = result.stdout.splitlines()
    fields = line.split("\t")
    assert len(fields) == 9 and fields[0] == "claude-code" and fields[8] == ""
    assert transcompact("slim", "-o", str(tmp_path / "out.jsonl"), fields[7]).exit_code == 0
    assert result.stderr.startswith("1 session: ")


def test_sorted_as_asked(home, transcompact):
    report = listed(transcompact, "--sort", "size")["files"]
    assert [e["bytes"] for e in report] == sorted((e["bytes"] for e in report), reverse=True)
    report = listed(transcompact, "--sort", "path")["files"]
    assert [e["file"] for e in report] == sorted(e["file"] for e in report)


def test_a_large_log_is_read_by_its_end_its_bytes_never_sent_left_unknown(home, transcompact):
    data = claude_log(20)
    big = put(CLAUDE, home / ".claude/projects/-home-ada-big/9d2f.jsonl", data)
    assert big.stat().st_size > SMALL
    report = listed(transcompact, "--agent", "claude-code")
    by_file = {entry["file"]: entry for entry in report["files"]}
    entry = by_file[str(big)]
    assert entry["tokens"] == whole_tokens(data) and entry["unsent_bytes"] is None and entry["status"] == "ok"
    small = next(e for e in report["files"] if e["file"] != str(big))
    assert small["unsent_bytes"] > 0  # a small log is read whole: both figures
    assert report["total"]["unsent_unknown"] == 1 and report["total"]["unsent_bytes"] == small["unsent_bytes"]
    result = transcompact("sessions", "--agent", "claude-code", "--no-cache")
    fields = {line.split("\t")[7]: line.split("\t") for line in result.stdout.splitlines()}
    assert fields[str(big)][5] == "?" and fields[str(big)][4] == str(entry["tokens"])
    assert fields[small["file"]][5] == str(small["unsent_bytes"])
    assert "never sent in 1 of them (--unsent measures the other 1)" in result.stderr
    done, shown = on_a_terminal("sessions", "--agent", "claude-code")
    assert done.returncode == 0 and "--unsent measures the other 1" in shown
    (row,) = [line.split() for line in shown.splitlines() if f"{entry['tokens']:,}" in line]
    assert row[row.index(f"{entry['tokens']:,}") + 1:][:2] == ["?", "ok"]


def test_unsent_reads_whole_the_logs_whose_bytes_never_sent_are_not_kept(home, tmp_path, transcompact):
    data = claude_log(20)
    big = put(CLAUDE, home / ".claude/projects/-home-ada-big/9d2f.jsonl", data)
    cache = str(tmp_path / "cache.json")
    first = sessions(cache=cache)
    assert first.measured == 5 and next(s for s in first.sessions if s.file == str(big)).unsent_bytes is None
    asked = sessions(cache=cache, unsent=True)
    assert asked.measured == 1  # the others' are kept
    entry = next(s for s in asked.sessions if s.file == str(big))
    out, _ = slim(loads(data, "s.jsonl"), data)
    assert entry.unsent_bytes == len(data) - len(out) > 0 and entry.tokens == whole_tokens(data)
    kept = sessions(cache=cache)
    assert kept.measured == 0 and kept.sessions == asked.sessions
    assert kept.total()["unsent_unknown"] == 0
    # sorted by the bytes never sent, every file's are measured
    report = listed(transcompact, "--no-cache", "--sort", "unsent")
    assert all(e["unsent_bytes"] is not None for e in report["files"]) and report["files"][0]["file"] == str(big)


def test_a_subagents_lines_at_the_end_leave_the_count_to_the_whole_log(home, transcompact):
    """In a log where a subagent's lines follow the session's own (an older Claude Code's), the
    session goes on from its own chain: its end is a subagent's, and the whole log is read."""
    data = claude_log(12, sidechain=12)  # the end of two responses: within a quarter of the subagent's log
    big = put(CLAUDE, home / ".claude/projects/-home-ada-big/9d2f.jsonl", data)
    assert measure_end(str(big), "claude-code") is None
    (entry,) = [e for e in listed(transcompact, "--agent", "claude-code")["files"] if e["file"] == str(big)]
    assert entry["tokens"] == whole_tokens(data)
    alone = put(CLAUDE, home / ".claude/projects/-home-ada-big/agent-a1.jsonl", data[data.index(b'{"parentUuid":null,"isSidechain":true'):])
    assert measure_end(str(alone), "claude-code").tokens == whole_tokens(alone.read_bytes())  # a subagent's own log


def logs_of_the_agents() -> list:
    """(agent, log, whether a line at its end keeps every end from saying the context) for each
    fixture of the four agents, a Claude Code log of the builder's with a subagent's lines at its
    end, and a Codex rollout whose last line rolls two turns back (its usage with them)."""
    fixtures = [pytest.param(agent, path.read_bytes(), False, id=str(path.relative_to(FIXTURES)))
                for agent in ("claude-code", "codex", "gemini", "pi") for path in sorted((FIXTURES / agent).glob("*.json*"))]
    rolled_back = CODEX.read_bytes() + b'{"timestamp":"2025-10-08T10:20:00.000Z","type":"event_msg",' \
                                       b'"payload":{"type":"thread_rolled_back","num_turns":2}}\n'
    return [*fixtures, pytest.param("claude-code", claude_log(3, size=200, sidechain=3), True, id="claude-code-sidechain"),
            pytest.param("codex", rolled_back, True, id="codex-rolled-back")]


@pytest.mark.parametrize(("agent", "data", "guarded"), logs_of_the_agents())
def test_the_end_of_a_log_says_the_context_estimate_counts_of_the_whole(agent, data, guarded, tmp_path):
    """At each point of the session (the log cut after each line), each end of it (from each line
    on) that says the context says what `estimate` counts of the whole; one does wherever the log
    has two responses with recorded usage, but where a line at its end may refer to what is before
    the end. Gemini CLI's chats are read whole."""
    if agent not in TAILS:
        log = put(CLAUDE, tmp_path / "chat.jsonl", data)
        assert read_session(Reading(str(log), agent, unsent=False)).tokens == whole_tokens(data)
        return
    first = data[:data.index(b"\n") + 1]
    said = 0
    for cut in (i + 1 for i, byte in enumerate(data) if byte == ord("\n")):
        log = data[:cut]
        try:
            whole = whole_tokens(log)
        except TranscompactError:  # a log cut before it is one: nothing to compare
            continue
        for start in (i + 1 for i, byte in enumerate(log[:-1]) if byte == ord("\n")):
            tokens = context_of_end(log[start:], agent, first)
            assert tokens in (None, whole), f"cut after byte {cut}, end from byte {start}"
            said += tokens is not None and cut == len(data)
    recorded = estimate(loads(data, "log.jsonl", lazily=True)).recorded
    assert bool(said) == (not guarded and recorded is not None and recorded.responses >= 2)


def corpus_logs_of_the_agents() -> list:
    """The corpus's logs of the four agents, as `bench/run.py` finds them for its home of sessions."""
    if not CORPUS.is_dir():
        return []
    found = [("claude-code", p) for p in sorted((CORPUS / "claude-code").glob("*.jsonl"))]
    found += [("codex", p) for p in sorted((CORPUS / "other").glob("codex-*.jsonl"))]
    found += [("gemini", p) for p in sorted((CORPUS / "other").glob("*gemini*.json"))]
    found += [("pi", p) for p in sorted((CORPUS / "trajectories").glob("pi-*.jsonl"))]
    return [pytest.param(agent, path, id=str(path.relative_to(CORPUS)),
                         marks=[pytest.mark.slow] if path.stat().st_size > LARGE else []) for agent, path in found]


@pytest.mark.parametrize(("agent", "path"), corpus_logs_of_the_agents())
def test_a_corpus_log_is_counted_from_its_end_as_estimate_counts_it_whole(agent, path, tmp_path):
    """The log as it is, and a log of JSON Lines cut at five earlier points: what the first run
    lists (read by its end where that says the context) is `estimate`'s count of the whole; a large
    log is read by its end."""
    data = path.read_bytes()
    ends = [i + 1 for i, byte in enumerate(data) if byte == ord("\n")] if path.suffix == ".jsonl" else []
    by_end = []
    for cut in [len(data), *ends[-2::-max(1, len(ends) // 6)][:5]]:
        log = put(path, tmp_path / f"cut-{cut}{path.suffix}", data[:cut])
        whole = whole_tokens(data[:cut], path.name)
        measured = read_session(Reading(str(log), agent, unsent=False))
        assert measured.tokens == whole and measured.unsent is None, f"cut after byte {cut}"
        if agent in TAILS:
            by_end.append(measure_end(str(log), agent))
    if agent in TAILS and len(data) > 256 * 1024:
        assert by_end[0] is not None and by_end[0].tokens == whole_tokens(data, path.name)


def test_the_cache_is_promised_only_when_there_is_one(home, tmp_path, transcompact):
    """`--no-cache` said the next run would take the sessions from the cache (found using
    sessions as a user)."""
    logs = tmp_path / "logs"
    for n in range(21):  # more than a glance: the run says it is reading them
        put(CLAUDE, logs / f"s{n:02}.jsonl")
    reading = [line for line in transcompact("sessions", "--no-cache", str(logs)).stderr.splitlines() if "reading" in line]
    assert reading == ["transcompact: reading 21 sessions"]
    cached = [line for line in transcompact("sessions", str(logs)).stderr.splitlines() if "reading" in line]
    assert cached == ["transcompact: reading 21 sessions (the next run takes them from the cache)"]


def test_a_walk_names_what_it_leaves_as_every_walk_does(home, tmp_path, transcompact):
    """A link out of the directory and a FIFO in it were passed over in silence (found using
    sessions as a user): named on stderr, as estimate and slim name them, and listed as no session."""
    logs = tmp_path / "logs"
    put(CLAUDE, logs / "a.jsonl")
    outside = put(CLAUDE, tmp_path / "elsewhere/x.jsonl")
    (logs / "link.jsonl").symlink_to(outside)
    os.mkfifo(logs / "pipe.jsonl")
    result = transcompact("sessions", "--no-cache", str(logs))
    assert result.exit_code == 0, result.stderr
    assert [line.split("\t")[7] for line in result.stdout.splitlines()] == [str(logs / "a.jsonl")]
    assert f"{logs / 'link.jsonl'}: a link to {outside}, outside the directory: left as it is" in result.stderr
    assert f"{logs / 'pipe.jsonl'}: not a regular file (a device, a FIFO or a socket): left as it is" in result.stderr
