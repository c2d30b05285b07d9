"""Every `--json` report is one object of one shape (docs/input-output.md#json-reports):
`{"version": 1, "command": ..., "files": [{"file": ..., ...}, ...]}`, for one input as for many.
Every rewriting command's `--report FILE` is JSON Lines, one object per file, `version` and
`command` in each (docs/input-output.md#reports)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from transcompact.cli.main import COMMANDS, cli
from transcompact.cli.render import JSON_VERSION

from .builders import run_cli as run
from .conftest import FIXTURES

ONE = [str(FIXTURES / "anthropic/long-session.json")]
TWO = ONE + [str(FIXTURES / "openai/tool-calls.json")]




def report_on_stdout(command: str, *args: str) -> tuple[int, dict]:
    result = run(command, "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def report_lines(command: str, *args: str, tmp: Path) -> tuple[int, list[dict]]:
    report = tmp / f"{command}-report.jsonl"
    result = run(command, "-q", "--report", str(report), "--output-dir", str(tmp / command), *args)
    return result.exit_code, [json.loads(line) for line in report.read_bytes().splitlines()]


def expand_lines(files: list[str], tmp: Path) -> tuple[int, list[dict]]:
    (tmp / "archive.jsonl").write_bytes(b"")  # nothing to put back: the shape is the same
    return report_lines("expand", "--archive", str(tmp / "archive.jsonl"), *files, tmp=tmp)


# Each command with a JSON report on stdout (--json): how to get it for these inputs.
REPORTERS = {
    "estimate": lambda files, tmp: report_on_stdout("estimate", *files),
    "check": lambda files, tmp: report_on_stdout("check", *files),
    "cut-point": lambda files, tmp: report_on_stdout("cut-point", "--keep-recent-tokens", "1000", *files),
    "summarize": lambda files, tmp: report_on_stdout("summarize", "--all", *files),
    "sessions": lambda files, tmp: report_on_stdout("sessions", "--no-cache", "--sort", "path", *files),
}
ONE_INPUT_ONLY = {"summarize"}  # takes one transcript; its report is still the envelope

# Each rewriting command: its --report lines for these inputs.
LINE_REPORTERS = {
    "prune": lambda files, tmp: report_lines("prune", *files, tmp=tmp),
    "compact": lambda files, tmp: report_lines("compact", "--force", "--emergency", "--keep-recent-tokens", "1000", *files,
                                               tmp=tmp),
    "repair": lambda files, tmp: report_lines("repair", *files, tmp=tmp),
    "slim": lambda files, tmp: report_lines("slim", *files, tmp=tmp),
    "expand": expand_lines,
}
LINE_KEYS = ["version", "command", "file", "status", "exit", "output", "written", "error"]  # then the command's own


def commands_with(parameter: str) -> set[str]:
    return {name for name in COMMANDS if parameter in {p.name for p in cli.get_command(None, name).params}}


def test_every_command_with_a_json_report_is_tested():
    assert commands_with("as_json") == set(REPORTERS)
    assert commands_with("report_file") == set(LINE_REPORTERS)


def assert_envelope(report: dict, command: str, files: list[str]) -> None:
    assert list(report)[:3] == ["version", "command", "files"]
    assert report["version"] == JSON_VERSION == 1 and report["command"] == command
    assert [entry["file"] for entry in report["files"]] == files
    assert all(list(entry)[0] == "file" for entry in report["files"])


@pytest.mark.parametrize("command", sorted(REPORTERS))
def test_one_input_or_two_give_the_same_shape(command, api, tmp_path):
    code, one = REPORTERS[command](ONE, tmp_path)
    assert code in (0, 1), one
    assert_envelope(one, command, ONE)
    if command in ONE_INPUT_ONLY:
        return
    code, two = REPORTERS[command](TWO, tmp_path)
    assert code in (0, 1), two
    assert_envelope(two, command, TWO)
    assert set(two) == set(one)  # the keys beside `files` (estimate's total) too
    assert set(two["files"][0]) == set(one["files"][0])  # the same input, reported the same way
    one_entry, two_entry = one["files"][0], two["files"][0]
    assert {k: v for k, v in two_entry.items() if k != "file"} == {k: v for k, v in one_entry.items() if k != "file"}


def test_a_script_reads_the_first_file_the_same_way_for_every_command(tmp_path, api):
    """`jq '.files[0].X'`: no command answers one input with anything but the envelope."""
    for command, reporter in REPORTERS.items():
        _, report = reporter(ONE, tmp_path)
        assert isinstance(report, dict) and isinstance(report["files"], list) and len(report["files"]) == 1, command


@pytest.mark.parametrize("command", sorted(LINE_REPORTERS))
def test_report_lines_one_per_file_in_input_order(command, tmp_path):
    code, one = LINE_REPORTERS[command](ONE, tmp_path)
    assert code in (0, 1), one
    code, two = LINE_REPORTERS[command](TWO, tmp_path)
    assert code in (0, 1), two
    for lines, files in ((one, ONE), (two, TWO)):
        assert [line["file"] for line in lines] == files
        for line, file in zip(lines, files):
            assert list(line)[:len(LINE_KEYS)] == LINE_KEYS
            assert (line["version"], line["command"], line["exit"], line["error"]) == (JSON_VERSION, command, code, None)
            assert line["status"] in ("changed", "unchanged") and line["written"] is True
            assert line["output"] == str(tmp_path / command / Path(file).name)
    assert set(one[0]) == set(two[0]) and set(two[0]) == set(two[1])  # every file, reported the same way


def test_a_file_that_fails_has_its_line_with_the_error(tmp_path):
    (tmp_path / "bad.json").write_bytes(b"{")
    code, (good, bad) = report_lines("prune", ONE[0], str(tmp_path / "bad.json"), tmp=tmp_path)
    assert code == 3
    assert (good["status"], good["exit"], good["error"]) == ("changed", 0, None)
    assert bad == {"version": 1, "command": "prune", "file": str(tmp_path / "bad.json"), "status": "failed", "exit": 3,
                   "output": str(tmp_path / "prune/bad.json"), "written": False,
                   "error": f"{tmp_path / 'bad.json'}:1:2: malformed JSON: unexpected end of data"}


def test_summarize_with_nothing_old_reports_a_null_summary_and_why(api):
    code, report = report_on_stdout("summarize", str(FIXTURES / "anthropic/tool-loop.json"))
    assert code == 0
    assert_envelope(report, "summarize", [str(FIXTURES / "anthropic/tool-loop.json")])
    (entry,) = report["files"]
    assert entry["summary"] is None and entry["notes"][0].startswith("nothing old to summarize")
    assert api.requests == []


def test_check_reports_every_file_even_a_valid_one():
    code, report = report_on_stdout("check", *TWO)
    assert code == 0
    assert [(e["errors"], e["warnings"], e["violations"]) for e in report["files"]] == [(0, 0, []), (0, 0, [])]


def test_nothing_to_compact_is_status_0_strategy_none_and_a_note(tmp_path):
    small = str(FIXTURES / "anthropic/tool-loop.json")
    result = run("compact", "--force", "--emergency", "--report", str(tmp_path / "report.json"), small)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == Path(small).read_bytes()  # the input, as it was
    entry = json.loads((tmp_path / "report.json").read_bytes())  # one file: one JSON line
    assert (entry["status"], entry["written"]) == ("unchanged", True)  # to stdout, as it was
    assert entry["strategy"] == "none" and entry["tokens_after"] == entry["tokens_before"]
    assert entry["notes"] == ["nothing to compact: neither pruning nor a summary makes it smaller"]
    assert "not compacted" in result.stderr and "error" not in result.stderr


def test_an_interrupted_batch_leaves_the_report_lines_of_the_files_it_did(tmp_path):
    """The report is made when the run starts and gets each file's line once it is done: a run
    cut short leaves the lines of the files done, each one a file really written."""
    original = (FIXTURES / "anthropic/long-session.json").read_bytes()
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(400):
        (logs / f"s{i:03}.json").write_bytes(original)
    report = tmp_path / "report.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCOMPACT_")}
    command = subprocess.Popen([sys.executable, "-m", "transcompact", "compact", "--emergency", "--force",
                                "--keep-recent-tokens", "1000", "-i", "--jobs", "2", "--report", str(report), str(logs)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.monotonic() + 20
    done = 0
    while done < 3:  # a few files are done, and reported
        assert time.monotonic() < deadline and command.poll() is None
        done += b"compacted (emergency)" in command.stderr.readline()
    command.send_signal(signal.SIGTERM)
    _, stderr = command.communicate(timeout=20)
    assert command.returncode == 130, stderr[-2000:]
    lines = [json.loads(line) for line in report.read_bytes().splitlines()]  # every line whole
    assert 3 <= len(lines) < 400
    # In input order; with two workers a file done before an earlier one that the stop cut short
    # is reported without it (docs/input-output.md), so they need not be the first ones.
    reported = [line["file"] for line in lines]
    assert reported == sorted(reported) and len(set(reported)) == len(reported)
    assert set(reported) <= {str(logs / f"s{i:03}.json") for i in range(400)}
    assert all((line["status"], line["written"]) == ("changed", True) for line in lines)
    assert all(Path(line["file"]).read_bytes() != original for line in lines)


def test_a_report_through_a_link_is_written_where_it_points_and_the_link_stays(tmp_path):
    target, link = tmp_path / "report.jsonl", tmp_path / "link.jsonl"
    target.write_bytes(b"a line of an earlier run\n")
    link.symlink_to(target)
    result = run("prune", "-q", "--report", str(link), "--output-dir", str(tmp_path / "out"), *TWO)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and [json.loads(line)["file"] for line in target.read_bytes().splitlines()] == TWO


def test_a_report_and_an_archive_inside_the_walked_tree_are_no_inputs(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "session.json").write_bytes((FIXTURES / "anthropic/long-session.json").read_bytes())
    (logs / "report.jsonl").write_text('{"version":1,"command":"prune","file":"gone.json","status":"unchanged"}\n')  # yesterday's
    result = run("prune", "-i", "--hard-clear-after", "1", "--report", str(logs / "report.jsonl"),
                 "--archive", str(logs / "archive.jsonl"), str(logs))
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line)["file"] for line in (logs / "report.jsonl").read_text().splitlines()] == [str(logs / "session.json")]
    again = run("expand", "-i", "--archive", str(logs / "archive.jsonl"), "--report", str(logs / "report.jsonl"), str(logs))
    assert again.exit_code == 0, again.stderr
    assert (logs / "session.json").read_bytes() == (FIXTURES / "anthropic/long-session.json").read_bytes()
