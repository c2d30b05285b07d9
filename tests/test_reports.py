"""Every JSON report (`--json`, `--report`) is one object of one shape (docs/input-output.md#json-reports):
`{"version": 1, "command": ..., "files": [{"file": ..., ...}, ...]}`, for one input as for many."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from transcompact.cli import COMMANDS, cli
from transcompact.render import JSON_VERSION

from .conftest import FIXTURES

ONE = [str(FIXTURES / "anthropic/long-session.json")]
TWO = ONE + [str(FIXTURES / "openai/tool-calls.json")]


def run(*args):
    return CliRunner().invoke(cli, list(args), prog_name="transcompact")


def report_on_stdout(command: str, *args: str) -> tuple[int, dict]:
    result = run(command, "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def report_in_a_file(command: str, *args: str, tmp: Path) -> tuple[int, dict]:
    out = tmp / "out"
    result = run(command, "--report", str(tmp / "report.json"), "--output-dir", str(out), *args)
    return result.exit_code, json.loads((tmp / "report.json").read_bytes())


# Each command with a JSON report: how to get it for these inputs (stdout or a file).
REPORTERS = {
    "estimate": lambda files, tmp: report_on_stdout("estimate", *files),
    "check": lambda files, tmp: report_on_stdout("check", *files),
    "cut-point": lambda files, tmp: report_on_stdout("cut-point", "--keep-recent-tokens", "1000", *files),
    "summarize": lambda files, tmp: report_on_stdout("summarize", "--all", *files),
    "prune": lambda files, tmp: report_in_a_file("prune", *files, tmp=tmp),
    "compact": lambda files, tmp: report_in_a_file("compact", "--force", "--emergency", "--keep-recent-tokens", "1000",
                                                   *files, tmp=tmp),
}
ONE_INPUT_ONLY = {"summarize"}  # takes one transcript; its report is still the envelope


def test_every_command_with_a_json_report_is_tested():
    with_a_report = {name for name in COMMANDS
                     if {"as_json", "report_file"} & {p.name for p in cli.get_command(None, name).params}}
    assert with_a_report == set(REPORTERS)


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
    (entry,) = json.loads((tmp_path / "report.json").read_bytes())["files"]
    assert entry["strategy"] == "none" and entry["tokens_after"] == entry["tokens_before"]
    assert entry["notes"] == ["nothing to compact: neither pruning nor a summary makes it smaller"]
    assert "not compacted" in result.stderr and "error" not in result.stderr
