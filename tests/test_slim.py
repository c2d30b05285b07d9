"""`transcompact slim`: a stored log without what its agent never sends, read back as the very
messages it held, never larger, the original archived and given back byte for byte. (That Claude
Code sends the same request from it: tests/test_claude_resume.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from transcompact.formats import loads

from .builders import claude_code_logs, claude_log
from .conftest import CORPUS, FIXTURES, fixture_files


def _compacted_log(transcompact, path) -> None:
    """A Claude Code session with a file-history snapshot, compacted once: the history before the
    compaction stays in the file, which Claude Code no longer sends."""
    lines = claude_log(rounds=6, size=3000).splitlines(keepends=True)
    snapshot = {"type": "file-history-snapshot", "messageId": "line-1", "isSnapshotUpdate": False,
                "snapshot": {"messageId": "line-1", "trackedFileBackups": {"a.py": {"backupFileName": "x@v1", "version": 1}},
                             "timestamp": "2025-01-01T00:00:01.000Z"}}
    path.write_bytes(b"".join([*lines[:2], json.dumps(snapshot).encode() + b"\n", *lines[2:]]))
    result = transcompact("compact", "--emergency", "--force", "-q", "--keep-recent-tokens", "500", "-i", path)
    assert result.exit_code == 0, result.stderr


def _messages(data: bytes, name: str) -> list:
    return [(m.role, m.blocks) for m in loads(data, name).messages]


@pytest.mark.parametrize("path", claude_code_logs())
def test_a_slimmed_log_reads_as_the_original_and_gives_it_back(path, transcompact, tmp_path):
    log = tmp_path / path.name
    shutil.copyfile(path, log)
    original = log.read_bytes()
    result = transcompact("slim", "-i", log)
    assert result.exit_code == 0, result.stderr
    slimmed = log.read_bytes()
    assert len(slimmed) <= len(original)
    assert _messages(slimmed, log.name) == _messages(original, log.name)
    assert transcompact("check", "-q", log).exit_code <= transcompact("check", "-q", path).exit_code  # no error added
    again = transcompact("slim", log)  # twice is once
    assert again.stdout_bytes == slimmed and "nothing its agent does not send" in again.stderr
    archive = tmp_path / f"{path.name}.slim-archive"
    assert archive.is_file() is (slimmed != original)
    if slimmed != original:
        expanded = transcompact("expand", "--archive", archive, log)
        assert expanded.exit_code == 0 and expanded.stdout_bytes == original


@pytest.mark.parametrize("path", claude_code_logs())
def test_a_slimmed_log_is_read_as_lazily_as_the_original(path, transcompact):
    """A line slim took the session out of is still counted by its view, its message left unread."""
    def unread(data: bytes) -> int:
        return sum(m.view is not None for m in loads(data, path.name, lazily=True).messages)

    slimmed = transcompact("slim", "-q", path).stdout_bytes
    assert unread(slimmed) == unread(path.read_bytes())


def test_the_report_says_what_was_dropped_and_what_is_lost_with_it(transcompact, tmp_path):
    log = tmp_path / "s.jsonl"
    _compacted_log(transcompact, log)
    result = transcompact("slim", "--report", tmp_path / "report.jsonl", log)
    assert result.exit_code == 0
    assert "s.jsonl: slimmed " in result.stderr and "the history before the last compaction (scroll-back)" in result.stderr
    report = json.loads((tmp_path / "report.jsonl").read_text().splitlines()[0])
    assert report["bytes_after"] == len(result.stdout_bytes) < report["bytes_before"] == log.stat().st_size
    dropped = {d["what"] for d in report["dropped"]}
    assert {"the history before the last compaction (scroll-back)", "file-history snapshots (what /rewind restores files from)"} <= dropped
    assert "fields every line repeats" in {f["what"] for f in report["fields"]}
    assert not (tmp_path / "s.jsonl.slim-archive").exists()  # the input was not replaced: nothing to archive


@pytest.mark.parametrize("path", fixture_files())
def test_every_format_slims_or_is_left_as_it_is(path, transcompact):
    """An agent's log loses what its agent never sends and reads as the same messages; a request
    body, all of which is sent, and a legacy Gemini chat are left as they are."""
    result = transcompact("slim", path)
    assert result.exit_code == 0, result.stderr
    data = path.read_bytes()
    assert len(result.stdout_bytes) <= len(data)
    if path.parent.name not in ("claude-code", "codex", "pi", "gemini") or path.suffix == ".json":
        assert result.stdout_bytes == data and "left as it is" in result.stderr
    elif result.stdout_bytes != data:
        assert _messages(result.stdout_bytes, path.name) == _messages(data, path.name)


def test_no_archive_keeps_no_original(transcompact, tmp_path):
    log = tmp_path / "s.jsonl"
    _compacted_log(transcompact, log)
    original = log.read_bytes()
    assert transcompact("slim", "-i", "--no-archive", log).exit_code == 0
    assert len(log.read_bytes()) < len(original)
    assert list(tmp_path.iterdir()) == [log]
    both = transcompact("slim", "-i", "--no-archive", "--archive", tmp_path / "a.jsonl", log)
    assert both.exit_code == 2 and "cannot be used together" in both.stderr


def test_one_archive_for_a_batch_gives_each_file_back(transcompact, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        _compacted_log(transcompact, logs / name)
    shutil.copyfile(FIXTURES / "claude-code" / "broken-session.jsonl", logs / "c.jsonl")
    before = {p.name: p.read_bytes() for p in logs.iterdir()}
    assert transcompact("slim", "-i", "--archive", tmp_path / "archive.jsonl", logs).exit_code == 0
    for name, data in before.items():
        expanded = transcompact("expand", "--archive", tmp_path / "archive.jsonl", logs / name)
        assert expanded.stdout_bytes == data


def test_the_corpus_logs_claude_code_resumes_shrink_below_a_fifth():
    """The peer tool leaves 0.23× of these; the target is 0.18× (issue: stored logs smaller on disk)."""
    if not CORPUS.is_dir():
        pytest.skip("the shared corpus is not here")
    from transcompact.ops.pruning.slim import slim

    before = after = 0
    for path in sorted(CORPUS.glob("claude-code/*.jsonl")):
        data = path.read_bytes()
        out, report = slim(loads(data, path.name), data)
        before, after = before + len(data), after + len(out)
    assert after / before <= 0.18


COMPACTED_BY_THE_AGENT = sorted((Path(__file__).parent / "recorded" / "compacted").glob("*/*.jsonl"))


@pytest.mark.parametrize("path", COMPACTED_BY_THE_AGENT, ids=lambda path: path.parent.name)
def test_a_session_its_agent_compacted_slims_to_half_or_less(path, transcompact, tmp_path):
    """What each agent's own compactions leave behind (the history they replaced) goes."""
    out = tmp_path / path.name
    result = transcompact("slim", "-q", "-o", out, path)
    assert result.exit_code == 0, result.stderr
    assert out.stat().st_size <= 0.5 * path.stat().st_size
    assert [m.blocks for m in loads(out.read_bytes(), path.name).messages] == \
           [m.blocks for m in loads(path.read_bytes(), path.name).messages]


AGENT_LOGS = [p for p in fixture_files() if p.values[0].parent.name in ("codex", "pi", "gemini")]


@pytest.mark.parametrize("path", [*claude_code_logs(), *AGENT_LOGS])
def test_compact_slim_never_writes_more_than_it_read(path, transcompact):
    result = transcompact("compact", "--emergency", "--force", "--slim", "-q", path)
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout_bytes) <= path.stat().st_size


def test_a_changed_archive_gives_nothing_back(transcompact, tmp_path):
    log = tmp_path / "s.jsonl"
    _compacted_log(transcompact, log)
    assert transcompact("slim", "-i", log).exit_code == 0
    archive = tmp_path / "s.jsonl.slim-archive"
    record = json.loads(archive.read_text())
    archive.write_text(json.dumps({**record, "original": record["original"][:-8] + "!!!!!!!!"}) + "\n")
    slimmed = log.read_bytes()
    result = transcompact("expand", "-i", "--archive", archive, log)
    assert result.exit_code == 3 and "the archive was changed" in result.stderr
    assert log.read_bytes() == slimmed


def test_a_compaction_of_a_slimmed_log_still_names_its_project(transcompact, tmp_path):
    """Slim keeps `cwd` on the log's first line only: the next compaction's boundary, the head of the
    chain Claude Code then resumes (where it reads the project's directory), takes it from there."""
    log = tmp_path / "s.jsonl"
    log.write_bytes(claude_log(rounds=8, size=3000))
    assert transcompact("compact", "--emergency", "--force", "-q", "--keep-recent-tokens", "4000", "-i", log).exit_code == 0
    assert transcompact("slim", "-i", "--no-archive", log).exit_code == 0
    result = transcompact("compact", "--emergency", "--force", "-q", "--keep-recent-tokens", "300", log)
    assert result.exit_code == 0, result.stderr
    boundaries = [v for v in map(json.loads, result.stdout_bytes.splitlines()) if v.get("subtype") == "compact_boundary"]
    assert len(boundaries) == 2
    assert boundaries[-1]["cwd"] == "/work" and boundaries[-1]["version"] == "1.0.0"


@pytest.mark.parametrize("written", [orjson.dumps, lambda line: json.dumps(line, separators=(", ", " : ")).encode()],
                         ids=["compact", "spaced"])
def test_the_copies_claude_code_reads_on_resume_stay_and_the_first_slug(written, transcompact):
    """The `toolUseResult` copies Claude Code reads when it resumes stay, found in lines read in
    part by their bytes (written compact or spaced): one naming a background task, one of a
    scheduled prompt (`CronCreate`) and the result answering it; every other copy goes, and only
    the first line with the plan file's name (`slug`) keeps it."""
    lines = [orjson.loads(line) for line in claude_log(rounds=6, size=3000).splitlines()]
    results = [line for line in lines if "toolUseResult" in line]
    results[1]["toolUseResult"] |= {"backgroundTaskId": "bash_1"}
    cron = next(line for line in lines if line["type"] == "assistant" and line["message"]["content"][0]["type"] == "tool_use"
                and line["message"]["content"][0]["id"] == "toolu_03")
    cron["message"]["content"][0]["name"] = "CronCreate"
    for line in lines[4:]:
        line["slug"] = "plan-a-fix"
    out = transcompact("slim", "-q", input=b"\n".join(written(line) for line in lines) + b"\n").stdout_bytes
    kept = [orjson.loads(line) for line in out.splitlines()]
    copies = [line["message"]["content"][0]["tool_use_id"] for line in kept if "toolUseResult" in line]
    assert copies == ["toolu_01", "toolu_03"]
    assert [line["uuid"] for line in kept if "slug" in line] == [lines[4]["uuid"]]


def test_a_log_ending_on_an_unanswered_call_slims_but_a_line_that_breaks_the_log_is_refused(transcompact, tmp_path):
    """The post-condition of a rewrite that keeps every message (slim) checks the providers' rules
    once, on the output: an error the log had (a call its last line leaves unanswered) is the
    log's, not slim's; a log rule the output breaks (a uuid used twice) is still refused."""
    from transcompact.core.errors import PostConditionError
    from transcompact.ops.validity.postcondition import verified

    lines = claude_log(rounds=3, size=2000).splitlines(keepends=True)[:-2]  # ends on a call and its result's copy
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"".join(lines[:-1]))  # ends on the call
    slimmed = tmp_path / "slimmed.jsonl"
    result = transcompact("slim", "-o", slimmed, log)
    assert result.exit_code == 0, result.stderr
    assert len(slimmed.read_bytes()) < len(log.read_bytes())
    assert "A2 tool_use toolu_02 (Bash) has no tool_result" in transcompact("check", slimmed).stdout
    transcript = loads(log.read_bytes(), log.name)
    first = orjson.loads(lines[0])
    twice = orjson.dumps({**first, "type": "system", "subtype": "informational", "content": "x",
                          "uuid": "line-1", "parentUuid": None}) + b"\n" + log.read_bytes()
    assert _messages(twice, log.name) == _messages(log.read_bytes(), log.name)  # the same messages, one for one
    with pytest.raises(PostConditionError, match="slim would add C2"):
        verified(transcript, transcript, twice, operation="slim")


def test_a_log_slimmed_again_gives_the_same_bytes_when_dropping_a_branch_moved_the_leaf(transcompact):
    """The resume point is a response that a progress line hangs from; after it, a result and the
    user's interruption, and a line of another session hanging from that: slim drops those two
    branches and the progress line, which leaves the result the newest line without a child, the
    leaf Claude Code picks in the slimmed log. What the leaf keeps of what every line repeats (its
    branch, its session) goes there: it went to the line that was the leaf before, and a second
    slim took it out (found using slim as a user)."""
    envelope = {"isSidechain": False, "userType": "external", "cwd": "/work", "version": "2.1.38", "gitBranch": "main"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}
    lines = [
        {"parentUuid": "gone-0", **envelope, "sessionId": "s-1", "type": "assistant", "uuid": "a-1", "timestamp": "2026-02-10T22:59:36.157Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "Reading it."}]}},
        {"parentUuid": "a-1", **envelope, "sessionId": "s-1", "type": "progress", "uuid": "p-1", "timestamp": "2026-02-10T22:59:36.163Z",
         "data": {"type": "hook_progress"}},
        {"parentUuid": "gone-1", **envelope, "sessionId": "s-1", "type": "assistant", "uuid": "a-2", "timestamp": "2026-02-10T22:59:37.598Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "m", "content": [call]}},
        {"parentUuid": "a-2", **envelope, "sessionId": "s-1", "type": "user", "uuid": "u-1", "timestamp": "2026-02-10T22:59:42.850Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "print(1)"}]}},
        {"parentUuid": "u-1", **envelope, "sessionId": "s-1", "type": "user", "uuid": "u-2", "timestamp": "2026-02-10T22:59:46.748Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user]"}]}},
        {"parentUuid": "u-2", **envelope, "gitBranch": "", "sessionId": "s-2", "type": "user", "uuid": "u-3",
         "timestamp": "2025-09-03T00:47:19.293Z", "message": {"role": "user", "content": "/init"}},
    ]
    log = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    once = transcompact("slim", "-q", input=log).stdout_bytes
    assert transcompact("slim", "-q", input=once).stdout_bytes == once
    kept = [orjson.loads(line) for line in once.splitlines()]
    assert [line["uuid"] for line in kept] == ["a-1", "a-2", "u-1"]
    assert [line["uuid"] for line in kept if "gitBranch" in line] == ["u-1"]
    assert _messages(once, "s.jsonl") == _messages(log, "s.jsonl")


def test_the_library_archives_what_slim_gives_and_expands_it_back():
    """docs/library.md's `slim`: its output (a log's `Lines`), its archive records, `expand` (found
    using the docs as a user: `slim_record` refused the `Lines` slim gave)."""
    from transcompact import expand, slim
    from transcompact.ops.pruning import archive

    path = next(iter(sorted((FIXTURES / "codex").glob("*.jsonl"))))
    data = path.read_bytes()
    out, report = slim(loads(data, str(path)), data)
    assert report.bytes_after == len(bytes(out)) < len(data)
    records = archive.slim_record(data, out, str(path))
    assert len(records) == 1 and expand(bytes(out), records, str(path)).data == data
    assert archive.slim_record(data, data, str(path)) == []


@pytest.mark.parametrize("name", [b"n\nl.jsonl", b"bad\xff.jsonl"], ids=["line-break", "not-utf-8"])
def test_the_archive_beside_a_log_is_named_after_it_and_as_private(transcompact, tmp_path, name):
    """A name with a line break or a byte that is not UTF-8 got its archive under the name as shown
    (`n\\nl.jsonl.slim-archive`, a backslash and an n), which `expand --archive FILE.slim-archive`
    did not find; the archive of a log of mode 0600 was readable by every user (found using slim
    as a user). Now FILE.slim-archive, its mode 0600, and expand says so in one line."""
    import os
    import stat

    from transcompact.core.errors import shown_name

    log = tmp_path / os.fsdecode(name)
    _compacted_log(transcompact, log)
    original = log.read_bytes()
    log.chmod(0o600)
    assert transcompact("slim", "-i", "-q", log).exit_code == 0
    archive = tmp_path / os.fsdecode(name + b".slim-archive")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([log.name, archive.name])
    assert stat.S_IMODE(archive.stat().st_mode) == stat.S_IMODE(log.stat().st_mode) == 0o600
    back = transcompact("expand", "--archive", archive, log)
    assert back.exit_code == 0 and back.stdout_bytes == original
    (said,) = back.stderr.splitlines()
    assert said == f"{shown_name(str(log))}: restored 1 original from {shown_name(str(archive))}"
