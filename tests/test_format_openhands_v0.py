"""Legacy OpenHands (V0) event lists, read only: the messages the old agent's ConversationMemory
made of the events (function calls sent once every call of a response is answered, observations
worded as the agent worded them, its history filter and condensations), a file of several runs
read one run at a time, the reading commands and `--to`, every writing command refused."""

from __future__ import annotations

import json

import pytest

from transcompact import check, convert, dumps, estimate, loads, repair
from transcompact.core.errors import ExitCode, UnknownFormat, UsageError
from transcompact.core.model import Image, Text, ToolCall, ToolResult
from transcompact.ops.validity.check import errors

from .builders import formula
from .builders import run_cli as run
from .conftest import CORPUS, FIXTURES

TRAJECTORY = FIXTURES / "openhands-v0" / "trajectory.json"
OUTPUT = FIXTURES / "openhands-v0" / "output.jsonl"
BASIC_GUI = CORPUS / "trajectories/openhands-runtime-traj-basic-gui-mode.json"
THREE_RUNS = CORPUS / "trajectories/openhands-multi-swe-bench-output-3runs.jsonl"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not present")


def read(path, messages_path=None):
    return loads(path.read_bytes(), str(path), messages_path=messages_path)


def from_events(events):
    return loads(json.dumps(events).encode(), "trajectory.json")


def texts(message) -> str:
    return "".join(b.text for b in message.blocks if isinstance(b, Text))




def call(event_id, call_ids, response_id, own=0):
    """An action of the function-calling agent: call `own` of the calls of model response `response_id`."""
    calls = [{"id": c, "type": "function", "function": {"name": "execute_bash", "arguments": json.dumps({"command": c})}}
             for c in call_ids]
    metadata = {"function_name": "execute_bash", "tool_call_id": call_ids[own], "total_calls_in_response": len(calls),
                "model_response": {"id": response_id, "choices": [{"message": {"role": "assistant", "content": "", "tool_calls": calls}}]}}
    return {"id": event_id, "source": "agent", "message": "", "action": "run", "tool_call_metadata": metadata,
            "args": {"command": call_ids[own], "thought": ""}}


def answer(event_id, action, content="done", kind="run"):
    metadata = {**action["tool_call_metadata"], "tool_call_id": action["args"]["command"]}
    return {"id": event_id, "source": "agent", "message": "", "cause": action["id"], "observation": kind,
            "tool_call_metadata": metadata, "content": content, "extras": {}}


USER = {"id": 0, "source": "user", "message": "hi", "action": "message", "args": {"content": "fix it", "image_urls": []}}


# --- what is read ------------------------------------------------------------------------------


def test_the_trajectory_reads_as_the_agent_sent_it():
    transcript = read(TRAJECTORY)
    assert transcript.format == "openhands-v0" and transcript.dialect == "openai"
    assert [m.role for m in transcript.messages] == [
        "system", "user", "assistant", "tool", "tool", "assistant", "tool", "user", "user", "user", "assistant"]
    assert [t["function"]["name"] for t in transcript.tools] == ["execute_bash", "str_replace_editor", "finish"]
    batch = transcript.messages[2]
    assert texts(batch) == "Let me look at the project and its notes first."
    assert [c.id for c in batch.tool_calls] == ["toolu_01", "toolu_02"]  # both calls of the response, one message
    assert batch.tool_calls[0].input == {"command": "ls /workspace/todo"}
    output = transcript.messages[3].blocks[0]
    assert isinstance(output, ToolResult) and output.tool_call_id == "toolu_01"
    assert output.content == ("NOTES.md  app.js  index.html\n[The command completed with exit code 0.]\n"
                              "[Current working directory: /workspace/todo]\n"
                              "[Python interpreter: /openhands/poetry/openhands-ai-5O4_aCHf-py3.12/bin/python]\n"
                              "[Command finished with exit code 0]")
    assert texts(transcript.messages[7]) == "User executed the command:\nnpm test"
    # A user message after a user message starts with a blank line, as the agent separates them.
    assert texts(transcript.messages[8]).startswith("\n\n\nObserved result of command executed by user:\n> todo@1.0.0 test")
    assert texts(transcript.messages[9]) == ("\n\nParameter 'old_str' is required for command: str_replace.\n"
                                             "[Error occurred in processing last action]")
    assert texts(transcript.messages[10]) == "The edit is in and the tests pass."  # finish: its thought, once
    assert errors(check(transcript)) == []


def test_state_changes_recall_and_hidden_events_are_not_read():
    hidden = {"id": 1, "source": "agent", "message": "", "action": "run", "args": {"command": "env", "hidden": True}}
    events = [{"id": 9, "source": "environment", "message": "", "observation": "agent_state_changed", "content": "",
               "extras": {"agent_state": "running"}}, USER, hidden,
              {"id": 2, "source": "environment", "message": "", "cause": 0, "observation": "recall",
               "content": "Added workspace context", "extras": {"recall_type": "workspace_context"}},
              {"id": 3, "source": "user", "message": "No observation", "cause": 0, "observation": "null", "content": "", "extras": {}}]
    assert [(m.role, texts(m)) for m in from_events(events).messages] == [("user", "fix it")]


def test_a_response_is_sent_only_when_every_call_of_it_is_answered():
    first, second = call(1, ["a"], "r1"), call(2, ["b", "c"], "r2")
    third = call(3, ["b", "c"], "r2", own=1)
    events = [USER, first, second, third, answer(4, first), answer(5, second)]
    transcript = from_events(events)
    # r2's call c has no observation: the agent never sent r2, nor b's result.
    assert [(m.role, [b.id for b in m.tool_calls]) for m in transcript.messages] == [("user", []), ("assistant", ["a"]), ("tool", [])]
    assert errors(check(transcript)) == []
    answered = from_events([*events, answer(6, third)])
    assert [m.role for m in answered.messages] == ["user", "assistant", "tool", "assistant", "tool", "tool"]
    assert [b.tool_call_id for m in answered.messages[4:] for b in m.tool_results] == ["b", "c"]



def test_a_response_that_names_a_call_id_twice_is_read_with_its_result_once(tmp_path):
    """It was an internal error (a KeyError) in every command; check now names the duplicate id."""
    action = call(1, ["a", "a"], "r1")
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([USER, action, answer(2, action)]))
    transcript = read(path)
    assert [(m.role, [b.id for b in m.tool_calls], [b.tool_call_id for b in m.tool_results]) for m in transcript.messages] == [
        ("user", [], []), ("assistant", ["a", "a"], []), ("tool", [], ["a"])]
    checked = run("check", path)
    assert checked.exit_code == 1 and "O1 tool call id a (execute_bash) is used twice in its message" in checked.stdout
    assert run("estimate", path).exit_code == 0


def test_a_response_whose_tool_calls_are_no_list_makes_no_call(tmp_path):
    """Iterated as they were: an internal error for every reading command."""
    action = call(1, ["a"], "r1")
    action["tool_call_metadata"]["model_response"]["choices"][0]["message"]["tool_calls"] = 5
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps([USER, action, answer(2, action)]))
    # A response with no call waits on no observation: it is sent, and the observation with it is no call's.
    assert [(m.role, m.tool_calls) for m in read(path).messages] == [("user", ()), ("assistant", ())]
    assert "O3 assistant content is null without tool_calls" in run("check", path).stdout
    assert run("estimate", path).exit_code == 0


def test_a_condensation_forgets_its_events_and_puts_its_summary_at_its_offset():
    transcript = read(OUTPUT)
    assert transcript.format == "openhands-v0"
    roles = [m.role for m in transcript.messages]
    assert roles == ["system", "user", "user", "assistant", "tool", "assistant"]
    assert texts(transcript.messages[2]).startswith("\n\nUSER_CONTEXT: fix the segfault")
    assert [c.id for c in transcript.messages[3].tool_calls] == ["toolu_a3"]  # a1 and a2 (ids 2 to 5) forgotten
    assert errors(check(transcript)) == []


def test_the_older_codeact_actions_read_as_text():
    """No tool_call_metadata: the calls were the model's text, the outputs the user's turn."""
    events = [USER,
              {"id": 1, "source": "agent", "message": "Running command: ls", "action": "run",
               "args": {"command": "ls", "thought": "Let me look around."}},
              {"id": 2, "source": "agent", "message": "Command `ls` executed with exit code 0.", "cause": 1,
               "observation": "run", "content": "README.md", "extras": {"command": "ls", "metadata": {"exit_code": 0}}},
              {"id": 3, "source": "agent", "message": "", "action": "message",
               "args": {"content": "Here is a screenshot.", "image_urls": ["data:image/png;base64,iVBORw0KGgo="]}}]
    messages = from_events(events).messages
    assert [(m.role, texts(m)) for m in messages] == [
        ("user", "fix it"), ("assistant", "Let me look around.\nRunning command: ls"),
        ("user", "README.md\n[Command finished with exit code 0]"), ("assistant", "Here is a screenshot.")]
    assert messages[3].blocks[1] == Image("image/png", "iVBORw0KGgo=")


def test_a_user_rejection_and_an_error_answer_their_calls():
    first, second = call(1, ["a"], "r1"), call(3, ["b"], "r2")
    events = [USER, first, {**answer(2, first, "no", kind="user_rejected")}, second, answer(4, second, "boom", kind="error")]
    results = [b for m in from_events(events).messages for b in m.tool_results]
    assert [(r.content, r.is_error) for r in results] == [
        ("OBSERVATION:\nno\n[Last action has been rejected by the user]", None),
        ("boom\n[Error occurred in processing last action]", True)]


def test_v1_events_and_plain_messages_are_not_taken_for_it():
    v1 = [{"kind": "MessageEvent", "id": "e1", "source": "user", "action": "x"}]
    assert from_events([{"role": "user", "content": "hi"}]).format == "openai"
    with pytest.raises(UnknownFormat):
        loads(json.dumps(v1).encode(), "v1.json", format="openhands-v0")


# --- several runs ------------------------------------------------------------------------------


def test_a_file_of_several_runs_says_how_many_and_how_to_pick_one(tmp_path):
    path = tmp_path / "output.jsonl"
    line = OUTPUT.read_bytes()
    path.write_bytes(line * 3)
    result = run("check", path)
    assert result.exit_code == ExitCode.INPUT and result.stderr.splitlines()[1] == (
        "hint: this holds 3 OpenHands runs, each a legacy (V0) event stream under 'history': "
        "read one with --messages-path 0.history (runs 0 to 2)")
    picked = read(path, "2.history")
    assert picked.messages == read(OUTPUT).messages and dumps(picked) == path.read_bytes()
    assert run("check", "--messages-path", "1.history", path).exit_code == 0
    # A run, or a run's field, it does not hold: a usage error, as a document's missing key is.
    for missing, key in (("3.history", "3"), ("0.nope", "'nope'")):
        result = run("estimate", "--messages-path", missing, path)
        assert result.exit_code == ExitCode.USAGE and result.stderr == (
            f"transcompact: error: --messages-path {missing}: the input has nothing at {key} "
            "(it holds OpenHands runs 0 to 2, each with its 'history')\n")


def test_a_resolver_output_gets_the_hint_too(tmp_path):
    """The resolver's output.jsonl: an issue a line, its history among other fields, some of its
    entries not events the reader knows."""
    run_of = json.loads(OUTPUT.read_bytes())
    issue = {"issue": {"number": 7}, "issue_type": "issue", "git_patch": "", "success": False,
             "history": [*run_of["history"], {"id": 99, "timestamp": "2025-01-01T00:00:00", "message": "done"}]}
    path = tmp_path / "output.jsonl"
    path.write_bytes((json.dumps(issue) + "\n").encode() * 2)
    result = run("check", path)
    assert result.exit_code == ExitCode.INPUT and result.stderr.splitlines()[1] == (
        "hint: this holds 2 OpenHands runs, each a legacy (V0) event stream under 'history': "
        "read one with --messages-path 0.history (runs 0 to 1)")



def test_a_resolver_output_of_one_issue_is_read_as_it_is_and_as_run_0(tmp_path):
    """One line, which reads as a document: it was refused with no hint, and with the hint's own
    --messages-path 0.history ("the input has nothing at 0")."""
    run_of = json.loads(OUTPUT.read_bytes())
    issue = {"issue": {"number": 7}, "issue_type": "issue", "git_patch": "", "success": False,
             "history": [*run_of["history"], {"id": 99, "timestamp": "2025-01-01T00:00:00", "message": "done"}]}
    path = tmp_path / "output.jsonl"
    path.write_bytes((json.dumps(issue) + "\n").encode())
    assert read(path).messages == read(path, "0.history").messages == read(OUTPUT).messages
    for flags in ((), ("--messages-path", "0.history")):
        for command in ("check", "estimate"):
            result = run(command, *flags, path)
            assert result.exit_code == 0, (command, flags, result.stderr)
    assert "nothing at 1" in run("check", "--messages-path", "1.history", path).stderr

@needs_corpus
def test_the_corpus_trajectory_reads():
    transcript = read(BASIC_GUI)
    assert transcript.format == "openhands-v0" and len(transcript.messages) == 10
    assert transcript.messages[0].role == "user" and transcript.messages[-1].role == "assistant"
    assert errors(check(transcript)) == []


@needs_corpus
@pytest.mark.parametrize("run_index", range(3))
def test_each_corpus_run_reads_checks_estimates_and_converts(run_index):
    """What tests/test_corpus.py asks of a file it reads as it is, for each run of the three."""
    data = THREE_RUNS.read_bytes()
    transcript = loads(data, THREE_RUNS.name, messages_path=f"{run_index}.history")
    assert transcript.format == "openhands-v0" and transcript.messages[0].role == "system"
    assert dumps(transcript) == data
    assert errors(check(transcript)) == []
    repaired, report = repair(transcript)
    assert report.fixes == () and dumps(repaired) == data
    assert estimate(transcript).tokens == formula(transcript)
    for to in ("anthropic", "openai"):
        assert errors(check(convert(transcript, to))) == [], to


# --- the reading commands, and every writing command refused -------------------------------------


def test_estimate_check_cut_point_and_export_read_it():
    result = run("estimate", "--json", TRAJECTORY)
    assert result.exit_code == 0
    assert json.loads(result.stdout)["files"][0]["tokens"] == estimate(read(TRAJECTORY)).tokens
    assert run("check", TRAJECTORY).exit_code == 0
    cut = run("cut-point", "--keep-recent-tokens", "50", TRAJECTORY)
    assert cut.exit_code == 0 and 0 < int(cut.stdout) < len(read(TRAJECTORY).messages)
    exported = run("compact", "--emergency", "--force", "--keep-recent-tokens", "50", "--to", "openai", TRAJECTORY)
    assert exported.exit_code == 0
    body = json.loads(exported.stdout)
    assert body["messages"][0]["role"] == "system" and body["tools"][0]["function"]["name"] == "execute_bash"


def test_the_library_writes_it_back_only_unchanged():
    transcript = read(TRAJECTORY)
    assert dumps(transcript) == TRAJECTORY.read_bytes()
    with pytest.raises(UsageError, match="does not write the openhands-v0 format"):
        dumps(transcript.with_messages(transcript.messages[:-1]))


def test_tool_calls_keep_their_wire_objects():
    batch = read(TRAJECTORY).messages[2]
    assert all(isinstance(c, ToolCall) and c.raw["type"] == "function" for c in batch.tool_calls)
