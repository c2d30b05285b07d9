"""A file name is bytes: one that is not UTF-8, or holds a control character or brackets, is
shown escaped the same way on stderr, in --json and in --report, and a batch goes on past it.
A walk goes on past a link that leads nowhere; a device that never ends is not read."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from .builders import on_a_terminal
from .conftest import FIXTURES

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="names that are not UTF-8 are a POSIX file system's")

NOT_UTF8 = os.fsdecode(b"bad\xff.json")  # what Python makes of the byte: a surrogate
CONTROL = "forged\ncompacted.json"


@pytest.fixture
def logs(tmp_path, monkeypatch):
    """logs/ holding a transcript under each hostile name, and a plain one after them."""
    monkeypatch.chdir(tmp_path)
    Path("logs").mkdir()
    for name in (NOT_UTF8, CONTROL, "z.json"):
        shutil.copy(FIXTURES / "anthropic/long-session.json", Path("logs") / name)
    return Path("logs")


SHOWN = ["logs/bad\\xff.json", "logs/forged\\ncompacted.json", "logs/z.json"]


def test_estimate_and_check_name_every_file_escaped(logs, transcompact):
    table = transcompact("estimate", "logs")
    assert table.exit_code == 0, table.stderr
    assert all(name in table.stdout for name in SHOWN)
    checked = transcompact("check", "--json", "logs")
    assert checked.exit_code == 0, checked.stderr
    assert [file["file"] for file in json.loads(checked.stdout)["files"]] == SHOWN


def test_a_batch_reports_every_file_escaped_and_goes_on(logs, transcompact):
    result = transcompact("compact", "-i", "--emergency", "--force", "--keep-recent-tokens", "3000", "--report",
                          "report.jsonl", "logs")
    assert result.exit_code == 0, result.stderr
    reported = [json.loads(line) for line in Path("report.jsonl").read_text().splitlines()]
    assert [(line["file"], line["output"], line["status"]) for line in reported] == [(name, name, "changed") for name in SHOWN]
    lines = result.stderr.splitlines()
    assert [line.split(": compacted")[0] for line in lines if ": compacted" in line] == SHOWN
    assert not any(line.startswith("compacted.json") for line in lines)  # the newline forged no line


def test_an_error_names_the_file_escaped(tmp_path, transcompact):
    broken = tmp_path / os.fsdecode(b"t\x1b[31m\xfe.json")
    broken.write_bytes(b'{"messages": [')
    result = transcompact("check", str(broken))
    assert result.exit_code == 3
    assert result.stderr.startswith(f"transcompact: error: {tmp_path}/t\\x1b[31m\\xfe.json:1:")
    assert "\x1b" not in result.stderr


def test_a_terminal_shows_names_as_they_are_not_as_markup(tmp_path):
    """rich reads `[...]` as markup: a tool named `[/x]` ended the run, `[copy]` vanished."""
    body = json.loads((FIXTURES / "anthropic/long-session.json").read_text())
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block.get("type") == "tool_use":
                block["name"] = "[/x]"
    path = tmp_path / "session [copy].json"
    path.write_text(json.dumps(body))
    done, shown = on_a_terminal("estimate", "--top", "3", str(path), env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert done.returncode == 0, done.stderr
    assert "session [copy].json" in shown and "[/x]" in shown


def test_a_link_in_a_loop_is_named_and_left(logs, transcompact):
    os.symlink("loop2.json", "logs/loop1.json")
    os.symlink("loop1.json", "logs/loop2.json")
    result = transcompact("compact", "-i", "--emergency", "--force", "logs")
    assert result.exit_code == 0, result.stderr
    assert "logs/loop1.json: a link that leads nowhere (Too many levels of symbolic links): left as it is" in result.stderr
    assert "logs/z.json: compacted" in result.stderr


def test_a_dangling_link_a_device_and_a_fifo_in_a_walk_are_named_and_left(logs, transcompact):
    """As a link in a loop is: they were passed over without a word (found using a walk as a user)."""
    os.symlink("missing.json", "logs/dangling.json")
    os.symlink("/dev/zero", "logs/zero.json")
    os.mkfifo("logs/fifo.json")
    result = transcompact("prune", "-i", "logs")
    assert result.exit_code == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if "left as it is" in line] == [
        "logs/dangling.json: a link that leads nowhere: left as it is",
        "logs/fifo.json: not a regular file (a device, a FIFO or a socket): left as it is",
        "logs/zero.json: not a regular file (a device, a FIFO or a socket): left as it is"]


def test_an_empty_glob_is_a_usage_error(logs, transcompact):
    """pathlib refuses to match an empty pattern: that was an internal error in the walk (exit 70)."""
    result = transcompact("check", "--glob", "", "logs")
    assert result.exit_code == 2
    assert "Invalid value for '--glob': an empty pattern matches no file" in result.stderr


def test_a_device_that_never_ends_is_not_read(tmp_path, transcompact):
    os.symlink("/dev/zero", tmp_path / "zero.json")
    result = transcompact("check", str(tmp_path / "zero.json"))
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == (f"transcompact: error: {tmp_path}/zero.json: is a device, not a transcript: "
                                             "a file, a pipe or a terminal is read")
