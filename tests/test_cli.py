"""What a user sees from `check` and `repair` on the shipped fixtures, pinned by snapshots."""

from __future__ import annotations

import json

import pytest

from transcompact.cli.main import COMMANDS, cli

from .builders import TextSnapshot, relative
from .builders import run_cli as run
from .conftest import FIXTURES, ROOT, fixture_files


@pytest.mark.parametrize("path", fixture_files())
def test_check_output(path, in_root, snapshot):
    result = run("check", relative(path))
    assert result.stderr == ""
    assert f"exit {result.exit_code}\n{result.stdout}" == snapshot(extension_class=TextSnapshot)


@pytest.mark.parametrize("path", fixture_files(written=True))
def test_repair_output(path, in_root, snapshot):
    result = run("repair", relative(path))
    assert result.exit_code == 0
    assert f"--- stderr\n{result.stderr}--- stdout\n{result.stdout}" == snapshot(extension_class=TextSnapshot)
    assert run("check", "-", input=result.stdout_bytes).exit_code == 0


def test_check_json_lists_the_violations_of_each_file(in_root):
    result = run("check", "--json", "fixtures/openai/orphans.json", "fixtures/anthropic/tool-loop.json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"version": 1, "command": "check", "files": [
        {"file": "fixtures/openai/orphans.json", "errors": 2, "warnings": 0, "violations": [
            {"rule": "O1", "severity": "error", "message": "tool call call_a (ls) has no tool message after it",
             "index": 1, "line": None},
            {"rule": "O2", "severity": "error",
             "message": "tool message call_zzz answers no tool call of the assistant message before it", "index": 3, "line": None},
        ]},
        {"file": "fixtures/anthropic/tool-loop.json", "errors": 0, "warnings": 0, "violations": []},
    ]}


def test_warnings_exit_0_and_strict_makes_them_errors(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    assert run("check", str(path)).exit_code == 0
    strict = run("check", "--strict", str(path))
    assert strict.exit_code == 0 and strict.stdout == ""  # read as OpenAI, which has no last-message rule
    path.write_text(json.dumps({"system": "s", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}))
    warned = run("check", str(path))
    assert warned.exit_code == 0 and "A7 (warning) the last message is assistant" in warned.stdout
    assert run("check", "--strict", str(path)).exit_code == 1


def test_check_reads_stdin_and_several_files(in_root):
    good = (FIXTURES / "anthropic/tool-loop.json").read_bytes()
    assert run("check", input=good).exit_code == 0
    both = run("check", "fixtures/anthropic/tool-loop.json", "fixtures/anthropic/orphans.json")
    assert both.exit_code == 1 and both.stdout.count("fixtures/anthropic/orphans.json") == 3


def test_repair_of_a_valid_transcript_is_byte_identical(in_root):
    for path in ("fixtures/anthropic/tool-loop.json", "fixtures/openai/tool-calls.json", "fixtures/jsonl/chat.jsonl"):
        result = run("repair", path)
        assert result.exit_code == 0 and result.stderr == ""
        assert result.stdout_bytes == (ROOT / path).read_bytes()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help(command, snapshot):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert result.stdout == snapshot(extension_class=TextSnapshot)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_is_documented(command):
    """A page of its own under docs/, linked from the README's command list."""
    page = (ROOT / "docs" / f"{command}.md").read_text()
    assert page.startswith(f"# `transcompact {command}`\n")
    assert f"[`{command}`](docs/{command}.md)" in (ROOT / "README.md").read_text()
    assert cli.get_command(None, command).help


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_command_list_says_what_each_command_says_of_itself(command):
    """`transcompact --help` lists the commands from a table, so that it imports none of them."""
    first_paragraph = cli.get_command(None, command).help.split("\n\n")[0].replace("\n", " ")
    assert COMMANDS[command][1] == first_paragraph


@pytest.mark.parametrize("path", fixture_files(written=True))
@pytest.mark.parametrize("command", ["prune", "repair"])
def test_a_second_run_gives_its_input_back_without_writing_it_again(path, command, tmp_path, monkeypatch):
    """Pruning or repairing twice is doing it once: the second run changes nothing and gives its
    input back as it came, neither writing it again nor reading that back (a directory pruned
    again costs a reading of each file)."""
    import transcompact.formats as formats

    once = tmp_path / f"once{path.suffix}"
    assert run(command, "-q", "-o", once, path).exit_code in (0, 1)  # (1: errors repair cannot mend)

    def refused(*args, **kwargs):
        raise AssertionError("written again")

    monkeypatch.setattr(formats, "written", refused)
    monkeypatch.setattr(formats, "reload", refused)
    again = run(command, "-q", once)
    assert again.exit_code in (0, 1)
    assert again.stdout_bytes == once.read_bytes()
