"""Hostile Claude Code logs: a field of the wrong type is an input error naming the file, the line
and the field, or is read as Claude Code reads it (never exit 70); a timestamp in year 9999 or none
at all; a progress chain with thousands of leaves, read in linear time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from transcompact import loads
from transcompact.cli.main import cli
from transcompact.core.errors import ExitCode

from .builders import LINEAR, growth
from .builders import run_cli as run

SESSION = "5b0e8a1c-2f4d-4c6e-9a7b-3d1f0e2c4b6a"
NAME = f"{SESSION}.jsonl"  # a session file name, so that check has nothing to say about it
OUTPUT = "line of output\n" * 400  # 6,000 characters: prune soft-trims it
COMMANDS = [["estimate"], ["check"], ["prune"], ["compact", "--emergency", "--force", "--keep-recent-tokens", "2000"],
            ["repair"]]


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)


def entry(uuid: str, parent: str | None, kind: str, second: int, **fields) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ada/shop",
            "sessionId": SESSION, "version": "2.1.20", "type": kind, "uuid": uuid,
            "timestamp": f"2026-11-02T09:{second // 60:02d}:{second % 60:02d}.000Z", **fields}


def session() -> dict[str, dict]:
    """The lines by uuid, in file order (line numbers in brackets, messages in parentheses):
    a prompt u0 [1] (0); six rounds i of a Bash call a{i} [2+3i] (1+2i), a progress line p{i} under it
    and its 6,000-character result r{i} [4+3i] (2+2i); a second prompt u1 [20], which joins r5's
    message (12); an answer a6 [21] (13) and thanks u2 [22] (14)."""
    lines = [entry("u0", None, "user", 0, message={"role": "user", "content": "Fix the failing tests."})]
    parent = "u0"
    for i in range(6):
        call = f"toolu_{i:02d}"
        lines += [
            entry(f"a{i}", parent, "assistant", 3 * i + 1, message={
                "id": f"msg_{i}", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": f"Running step {i}."},
                            {"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"make step-{i}"}}]}),
            entry(f"p{i}", f"a{i}", "progress", 3 * i + 2, data={"type": "bash_progress", "output": "running"}),
            entry(f"r{i}", f"a{i}", "user", 3 * i + 3, message={
                "role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": OUTPUT}]},
                toolUseResult={"stdout": OUTPUT}, sourceToolAssistantUUID=f"a{i}"),
        ]
        parent = f"r{i}"
    lines += [
        entry("u1", parent, "user", 20, message={"role": "user", "content": "Now run the linter."}),
        entry("a6", "u1", "assistant", 21, message={"id": "msg_6", "type": "message", "role": "assistant",
                                                    "content": [{"type": "text", "text": "The linter passes."}]}),
        entry("u2", "a6", "user", 22, message={"role": "user", "content": "Thanks."}),
    ]
    return {line["uuid"]: line for line in lines}


def jsonl(lines) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)




def test_the_log_these_tests_spoil_is_valid_and_every_command_rewrites_it():
    Path(NAME).write_bytes(jsonl(session().values()))
    transcript = loads(Path(NAME).read_bytes(), NAME)
    assert len(transcript.messages) == 15
    for command in COMMANDS:
        result = run(*command, NAME)
        assert result.exit_code == ExitCode.OK, (command, result.stderr)
    assert len(run("prune", "-q", NAME).stdout_bytes) < len(Path(NAME).read_bytes())  # the results were trimmed


REMOVE = object()


def spoil(which: str, /, **changes):
    """A change of the fields of line `which` (`message__role` is `message.role`; REMOVE removes)."""
    def change(lines: dict[str, dict]) -> None:
        line = lines[which]
        for key, value in changes.items():
            target, key = (line["message"], key.split("__")[1]) if "__" in key else (line, key)
            if value is REMOVE:
                del target[key]
            else:
                target[key] = value
    return change


# A line that Claude Code would send to the model (user and assistant lines on the chain), or that
# names the lines (uuid), must hold what it needs: refused with the line and the field, and the file
# left as it was.
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("change, error", [
    (spoil("u1", message="Now run the linter."), "20: message 12: `message` must be an object, not a string"),
    (spoil("a6", message=[{"type": "text", "text": "The linter passes."}]), "21: message 13: `message` must be an object, not an array"),
    (spoil("u0", message=None), "1: message 0: `message` must be an object, not null"),
    (spoil("a3", message=REMOVE), "11: message 7: `message` is missing"),
    (spoil("r3", message__content=3), "13: message 8: `message.content` must be a string or a list of blocks, not a number"),
    (spoil("a4", message__content={"type": "text", "text": "x"}),
     "14: message 9: `message.content` must be a string or a list of blocks, not an object"),
    (spoil("r1", uuid=["r1"]), "7: `uuid` must be a string, not an array"),
    (spoil("a2", uuid={"id": "a2"}), "8: `uuid` must be a string, not an object"),
    (spoil("p4", uuid=4), "15: `uuid` must be a string, not a number"),  # off the chain, but nothing can point at it
], ids=["message-string", "message-array", "message-null", "message-missing", "content-number", "content-object",
        "uuid-array", "uuid-object", "uuid-of-a-progress-line"])
def test_a_field_claude_code_needs_of_the_wrong_type_is_an_input_error_naming_the_line(command, change, error):
    lines = session()
    change(lines)
    Path(NAME).write_bytes(jsonl(lines.values()))
    result = run(*command, NAME)
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.splitlines()[0] == f"transcompact: error: {NAME}:{error}"
    assert Path(NAME).read_bytes() == jsonl(lines.values())


# What Claude Code itself reads past: it sends a user line as role user whatever `message.role`
# says, a parentUuid that is not a string ends the chain (check says so and repair makes the line a
# root), a line off the chain is never read.
@pytest.mark.parametrize("change, messages, exits", [
    (spoil("a1", message__role={"name": "assistant"}), 15, {}),
    (spoil("r1", message__role=3), 15, {}),
    (spoil("a2", message__role=None), 15, {}),
    (spoil("u1", parentUuid={"uuid": "r5"}), 3, {"check": ExitCode.VIOLATIONS}),
    (spoil("p2", parentUuid=["a2"]), 15, {}),
    (spoil("r5", sourceToolAssistantUUID=["a5"]), 15, {}),
    (spoil("p3", message="not a message line"), 15, {}),
], ids=["role-object", "role-number", "role-null", "parent-object-on-the-chain", "parent-array-off-the-chain",
        "source-tool-uuid-array", "message-of-a-progress-line"])
def test_a_field_claude_code_reads_past_is_read_as_it_does(change, messages, exits):
    lines = session()
    change(lines)
    data = jsonl(lines.values())
    Path(NAME).write_bytes(data)
    transcript = loads(data, NAME)
    assert len(transcript.messages) == messages
    assert [m.role for m in transcript.messages] == [line["type"] for line in (m.raw for m in transcript.messages)]
    for command in COMMANDS:
        result = run(*command, NAME)
        assert result.exit_code == exits.get(command[0], ExitCode.OK), (command, result.stderr)


def test_repair_makes_a_line_whose_parent_is_not_a_uuid_a_root():
    lines = session()
    spoil("u1", parentUuid={"uuid": "r5"})(lines)
    Path(NAME).write_bytes(jsonl(lines.values()))
    result = run("repair", NAME)
    assert result.stderr.splitlines() == [f"{NAME}:20: C3 fixed: made the line a root: its parentUuid is an object"]
    repaired = [json.loads(line) for line in result.stdout.splitlines()]
    assert repaired[19]["parentUuid"] is None
    Path(NAME).write_bytes(result.stdout_bytes)
    assert run("check", NAME).exit_code == ExitCode.OK


def test_repair_keeps_everything_a_progress_line_it_makes_a_root_holds():
    """A log that starts with a progress line hanging from a line cut away: repair makes that line
    the root, and writes it whole (parsing keeps only a progress line's links, not its output)."""
    progress = entry("p0", "cut-away", "progress", 0, data={"type": "bash_progress", "output": "building"},
                     toolUseID="bash-progress-0", parentToolUseID="toolu_0")
    lines = [progress, entry("u0", "p0", "user", 1, message={"role": "user", "content": "Go on."}),
             entry("a0", "u0", "assistant", 2, message={"role": "assistant", "content": [{"type": "text", "text": "Done."}]})]
    Path(NAME).write_bytes(jsonl(lines))
    result = run("repair", NAME)
    assert result.stderr.splitlines() == [f"{NAME}:1: C3 fixed: made the line a root: its parent cut-away is not in the file"]
    assert [json.loads(line) for line in result.stdout.splitlines()] == [{**progress, "parentUuid": None}, *lines[1:]]


# --- timestamps --------------------------------------------------------------------------------


def appended(out: bytes, data: bytes) -> list[dict]:
    assert out.startswith(data)
    return [json.loads(line) for line in out[len(data):].splitlines()]


@pytest.mark.parametrize("latest, stamps", [
    ("9999-12-31T23:59:59.999Z", ["9999-12-31T23:59:59.999Z"] * 3),
    ("9999-12-31T23:59:59.998Z", ["9999-12-31T23:59:59.999Z"] * 3),
    ("9999-12-31T23:59:58.500Z", ["9999-12-31T23:59:58.501Z", "9999-12-31T23:59:58.502Z", "9999-12-31T23:59:58.503Z"]),
    ("2026-11-02T09:00:22.000400Z", ["2026-11-02T09:00:22.001Z", "2026-11-02T09:00:22.002Z", "2026-11-02T09:00:22.003Z"]),
])
def test_compaction_stamps_its_lines_after_the_newest_even_in_year_9999(latest, stamps):
    lines = session()
    lines["u2"]["timestamp"] = latest
    data = jsonl(lines.values())
    Path(NAME).write_bytes(data)
    result = run("compact", "--emergency", "--force", "--keep-recent-tokens", "2000", NAME)
    assert result.exit_code == ExitCode.OK, result.stderr
    new = appended(result.stdout_bytes, data)
    assert [line["timestamp"] for line in new[:3]] == stamps
    assert sorted(line["timestamp"] for line in new) == [line["timestamp"] for line in new]
    # The log resumes from what compaction wrote: its summary first, the old prompt no more.
    compacted = loads(result.stdout_bytes, NAME)
    assert compacted.messages[0].raw["isCompactSummary"] is True
    assert compacted.messages[-1].raw["uuid"] == new[-1]["uuid"]


def test_a_timestamp_past_year_9999_in_utc_is_no_crash():
    """No later timestamp can be written: the appended lines would not be resumed, so compact prunes."""
    lines = session()
    lines["u2"]["timestamp"] = "9999-12-31T23:59:59.999-05:00"
    Path(NAME).write_bytes(jsonl(lines.values()))
    result = run("compact", "--emergency", "--force", "--keep-recent-tokens", "2000", NAME)
    assert result.exit_code == ExitCode.OK
    assert "compacted (prune)" in result.stderr


def test_a_parent_uuid_that_is_a_large_number_is_named_as_written():
    """A number orjson cannot hold (kept as written) is shown as its text, not as a Python object."""
    data = jsonl(session().values())
    assert data.startswith(b'{"parentUuid": null')  # the first line: the root
    Path(NAME).write_bytes(data.replace(b"null", b"18446744073709551616", 1))
    result = run("check", NAME)
    assert f"{NAME}:1: C3 the chain stops at parentUuid 18446744073709551616, which is not in the file" in result.stdout


def test_a_log_without_timestamps_is_read_to_its_last_leaf_not_as_empty():
    lines = session()
    for line in lines.values():
        del line["timestamp"]
    Path(NAME).write_bytes(jsonl(lines.values()))
    estimated = json.loads(run("estimate", "--json", NAME).stdout)["files"][0]
    assert estimated["messages"] == 15 and estimated["tokens"] > 6 * len(OUTPUT) / 4
    result = run("check", NAME)
    assert result.exit_code == ExitCode.VIOLATIONS  # check says what Claude Code would make of it
    assert f"{NAME}:1: C2 user line without timestamp" in result.stdout.splitlines()


def test_a_leaf_without_a_timestamp_is_not_chosen_over_one_with_a_timestamp():
    """Claude Code never resumes from a line whose timestamp it cannot parse; neither do we."""
    lines = list(session().values())
    branch = entry("u2b", "a6", "user", 0, message={"role": "user", "content": "An edited thanks."})
    branch["timestamp"] = "yesterday"
    transcript = loads(jsonl([*lines, branch]), NAME)
    assert transcript.messages[-1].raw["uuid"] == "u2"
    undated = [{k: v for k, v in line.items() if k != "timestamp"} for line in [*lines, branch]]
    assert loads(jsonl(undated), NAME).messages[-1].raw["uuid"] == "u2b"  # none dated: the last in the file


# --- linear time -------------------------------------------------------------------------------


def many_leaves(lines: int) -> bytes:
    """A prompt and an answer, then a chain of progress lines, each with a progress leaf of its own:
    every leaf walks back over the whole chain to the answer it resumes from."""
    out = [entry("u", None, "user", 0, message={"role": "user", "content": "Run the suite."}),
           entry("a", "u", "assistant", 1, message={"id": "msg_a", "role": "assistant",
                                                    "content": [{"type": "text", "text": "Running."}]})]
    parent = "a"
    for i in range(lines // 2):
        out += [entry(f"p{i}", parent, "progress", 2, data={}), entry(f"q{i}", f"p{i}", "progress", 2, data={})]
        parent = f"p{i}"
    return jsonl(out)


def test_a_progress_chain_with_many_leaves_is_read_in_linear_time():
    small, large = many_leaves(8_000), many_leaves(32_000)
    assert [m.raw["uuid"] for m in loads(large, NAME).messages] == ["u", "a"]
    ratio = growth(lambda data: loads(data, NAME), small, large)
    assert ratio <= LINEAR, ratio


def test_a_result_added_after_a_line_that_repair_empties_is_written():
    """repair adds the missing result after the response, whose last line (blank text) it drops."""
    log = (b'{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-11-01T10:00:01Z",'
           b'"message":{"role":"user","content":"go"}}\n'
           b'{"type":"assistant","uuid":"a2","parentUuid":"u1","sessionId":"s","timestamp":"2026-11-01T10:00:02Z",'
           b'"message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]}}\n'
           b'{"type":"assistant","uuid":"a3","parentUuid":"a2","sessionId":"s","timestamp":"2026-11-01T10:00:03Z",'
           b'"message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"  "}]}}\n')
    result = CliRunner().invoke(cli, ["repair", "--format", "claude-code", "-"], input=log)
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout_bytes.splitlines()]
    assert [line["uuid"] for line in lines[:2]] == ["u1", "a2"] and len(lines) == 3
    assert lines[2]["parentUuid"] == "a2" and lines[2]["message"]["content"][0]["tool_use_id"] == "t1"
