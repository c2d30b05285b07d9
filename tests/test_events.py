"""`compact --events` (compaction events as the seeds' UIs expect them) and `--log-format ci`."""

from __future__ import annotations

import json
import shutil

import pytest

from .builders import run_cli
from .conftest import FIXTURES


def run(*args, **given):
    return run_cli("compact", *args, **given)


def batch(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(FIXTURES / "anthropic/long-session.json", logs / "a.json")
    shutil.copy(FIXTURES / "anthropic/tool-loop.json", logs / "b.json")
    (logs / "c.json").write_text("{")
    return logs


def test_each_file_has_a_start_and_an_end_and_a_failed_one_its_error(tmp_path):
    logs = batch(tmp_path)
    events = tmp_path / "events.jsonl"
    result = run("--emergency", "--threshold", "1000", "-i", "--jobs", "2", "--events", str(events), str(logs))
    assert result.exit_code == 3
    found = [json.loads(line) for line in events.read_text().splitlines()]
    assert [(e["type"], e["file"]) for e in found] == [
        ("compact_start", f"{logs}/a.json"), ("compact_end", f"{logs}/a.json"),
        ("compact_start", f"{logs}/b.json"), ("compact_end", f"{logs}/b.json"), ("compact_end", f"{logs}/c.json")]
    start, end = found[0], found[1]
    assert (start["tokens"], start["threshold"]) == (8957, 1000)
    assert (end["tokens_before"], end["strategy"]) == (8957, "emergency") and end["tokens_after"] < 8957
    assert end["summary_chars"] > 0 and end["duration_ms"] >= 0 and end["time"] >= start["time"]
    assert found[3]["strategy"] == "none" and found[3]["tokens_after"] == found[3]["tokens_before"]
    assert found[4]["strategy"] is None and found[4]["exit"] == 3 and "malformed JSON" in found[4]["error"]


def test_events_on_stderr_with_a_dash():
    result = run("--emergency", "--force", "--events", "-", str(FIXTURES / "anthropic/long-session.json"))
    assert result.exit_code == 0
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert [e["type"] for e in events] == ["compact_start", "compact_end"]
    assert json.loads(result.stdout)["messages"]  # the transcript still goes to stdout


def test_the_ci_log_format(tmp_path):
    logs = batch(tmp_path)
    (logs / "c.json").unlink()
    result = run("--emergency", "--threshold", "1000", "-i", "--log-format", "ci", str(logs))
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    assert lines[0].startswith("[transcompact:compacted:emergency] 8957 → ") and lines[0].endswith(f" tokens ({logs}/a.json)")
    assert not any("unchanged:none" in line for line in lines)  # counted in the closing summary
    verbose = run("--emergency", "--threshold", "1000", "-i", "-v", "--log-format", "ci", str(logs))
    assert f"[transcompact:unchanged:none] 113 tokens ({logs}/b.json)" in verbose.stderr.splitlines()
    again = run("--emergency", "--threshold", "1000", str(FIXTURES / "anthropic/long-session.json"),
                env={"TRANSCOMPACT_LOG_FORMAT": "ci"})
    assert again.stderr.startswith("[transcompact:compacted:emergency] 8957 → ")


def test_pre_compact_sees_the_dropped_part_before_anything_is_written(tmp_path):
    session = tmp_path / "session.json"
    shutil.copy(FIXTURES / "anthropic/long-session.json", session)
    seen = tmp_path / "seen.json"
    hook = f"cat > {seen}; echo \"$TRANSCOMPACT_FILE $TRANSCOMPACT_CUT\""
    result = run("--emergency", "--threshold", "1000", "-i", "--pre-compact", hook, str(session))
    assert result.exit_code == 0, result.stderr
    dropped = json.loads(seen.read_text())
    report = json.loads(session.read_text())
    original = json.loads((FIXTURES / "anthropic/long-session.json").read_text())
    cut = len(dropped["messages"])
    assert result.stderr.startswith(f"{session} {cut}\n")  # its stdout went to stderr
    assert [m["role"] for m in dropped["messages"]] == [m["role"] for m in original["messages"][:cut]]
    assert len(report["messages"]) < len(original["messages"])


@pytest.mark.parametrize(("command", "ended"), [("cat > /dev/null; echo disk full; exit 3", "exited with status 3"),
                                               ("cat > /dev/null; echo disk full; kill -9 $$", "was killed by signal 9")])
def test_a_pre_compact_that_fails_stops_that_file_and_writes_nothing(tmp_path, command, ended):
    logs = batch(tmp_path)
    (logs / "c.json").unlink()
    before = {p.name: p.read_bytes() for p in logs.iterdir()}
    result = run("--emergency", "--threshold", "1000", "-i", "--pre-compact", command, str(logs))
    assert result.exit_code == 4
    error = f"transcompact: error: {logs}/a.json: --pre-compact '{command}' {ended}; nothing written"
    # What it printed says why, under the error (it was lost: found using compact as a user).
    assert f"{error}\nhint: it printed: disk full\n" in result.stderr
    assert {p.name: p.read_bytes() for p in logs.iterdir()} == before  # b.json is not compacted: the hook never ran
