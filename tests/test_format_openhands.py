"""The openhands format on its own: a conversation directory (`base_state.json` and
`events/event-NNNNN-<id>.json`) read as one input, the view the agent sends (its active branch,
its condensations, its four properties), a write that leaves every event file it did not change
byte for byte, and a compaction written as the next event, a `Condensation`, which the agent's
own way of building its view (rebuilt below from upstream `event_store.py`, `state.py`,
`context/view/view.py` and `event/base.py`) resumes: our summary, then the kept window, every
call answered."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from transcompact import check, compact, dump, dumps, load, loads, prune, repair
from transcompact.cli.main import cli
from transcompact.core.jsondata import parse
from transcompact.core.model import Text, ToolResult
from transcompact.core.summary_text import SUMMARY_PREFIX
from transcompact.counting.counter import Options as EstimateOptions
from transcompact.formats import detect
from transcompact.formats.openhands import reader as openhands
from transcompact.io.openhands_store import is_conversation, read_conversation, write_conversation
from transcompact.ops.compaction.compact import CompactOptions
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.compaction.summary_message import is_summary_message
from transcompact.ops.pruning.prune import PruneOptions
from transcompact.ops.validity.check import errors

from .conftest import FIXTURES

FIXTURE_DIRS = sorted(p for p in (FIXTURES / "openhands").iterdir() if p.is_dir())
TOOLS = FIXTURES / "openhands" / "3f8c2a1e9b7d4c6a8e0f1a2b3c4d5e6f"  # the event tree: parent_id, leaf_event_id
CONDENSED = FIXTURES / "openhands" / "9a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d"  # older: no parent_id, condensed once
BROKEN = FIXTURES / "openhands" / "c0ffee00aa11bb22cc33dd44ee55ff66"  # a late second observation, a call never answered


def files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def events(directory: Path) -> list[dict]:
    return [json.loads(p.read_bytes()) for p in sorted((directory / "events").glob("event-*.json"))]


def texts(transcript) -> list[str]:
    return ["".join(b.text for b in m.blocks if isinstance(b, Text)) for m in transcript.messages]


def copy(directory: Path, tmp_path: Path) -> Path:
    target = tmp_path / directory.name
    shutil.copytree(directory, target)
    return target


# --- a directory is one input, written back as it was ----------------------------------------


@pytest.mark.parametrize("directory", FIXTURE_DIRS, ids=lambda p: p.name[:8])
def test_every_fixture_is_read_as_openhands_and_written_back_byte_for_byte(directory, tmp_path):
    assert is_conversation(directory)
    transcript = load(directory)
    assert transcript.format == "openhands" and transcript.dialect == "openai"
    assert dumps(transcript) == read_conversation(str(directory))
    target = copy(directory, tmp_path)
    dump(transcript, target)
    assert files(target) == files(directory)


def test_the_bundle_is_json_lines_that_read_back_the_same():
    """What goes to stdout: base_state, then each event file, one a line."""
    bundle = read_conversation(str(TOOLS))
    lines = bundle.splitlines()
    assert lines[0] == (TOOLS / "base_state.json").read_bytes()
    assert lines[1:] == [p.read_bytes() for p in sorted((TOOLS / "events").glob("*.json"))]
    assert detect(parse(bundle, "bundle.jsonl")) == "openhands"
    again = loads(bundle, "bundle.jsonl")
    assert again.messages == load(TOOLS).messages and dumps(again) == bundle


def test_other_formats_files_are_not_taken():
    others = [p for p in sorted(FIXTURES.glob("*/*")) if p.parent.name != "openhands" and p.is_file()]
    assert others and not any(openhands.detect(parse(p.read_bytes(), p.name)) for p in others)
    assert not is_conversation(FIXTURES / "openhands")


def test_an_event_file_laid_out_over_lines_is_read_and_left_as_it_is(tmp_path):
    target = copy(TOOLS, tmp_path)
    first = sorted((target / "events").glob("*.json"))[1]
    first.write_text(json.dumps(json.loads(first.read_bytes()), indent=2) + "\n")
    before = files(target)
    transcript = load(target)
    assert transcript.messages == load(TOOLS).messages
    dump(transcript, target)
    assert files(target) == before


# --- the view the agent sends ------------------------------------------------------------------


def test_the_calls_of_one_response_are_one_message_and_each_observation_answers_one():
    transcript = load(TOOLS)
    assert [m.role for m in transcript.messages] == ["user", "assistant", "tool", "assistant", "tool", "tool",
                                                     "assistant", "tool", "assistant", "tool", "assistant"]
    batch = transcript.messages[3]
    assert texts(transcript)[3] == "add() is wrong; let me read both files."
    assert [b.id for b in batch.tool_calls] == ["toolu_02ViewCalc", "toolu_03ViewTest"]
    assert batch.tool_calls[0].input == {"command": "view", "path": "/workspace/calc/calc.py"}
    assert [m.blocks[0].tool_call_id for m in transcript.messages[4:6]] == ["toolu_02ViewCalc", "toolu_03ViewTest"]
    assert transcript.system[0].text.startswith("You are OpenHands agent")
    assert [t["title"] for t in transcript.tools] == ["terminal", "file_editor"]
    assert errors(check(transcript)) == []


def test_after_a_condensation_its_summary_sits_at_its_offset_and_what_it_forgot_is_gone():
    transcript = load(CONDENSED)
    said = texts(transcript)
    assert said[0] == SUMMARY_PREFIX + "## Goal\nFix add() in calc.py.\n\n## Progress\n- The tests failed: add(2, 3) gave -1.\n" \
                                       "- Read calc.py and test_calc.py."
    assert is_summary_message(transcript.messages[0])
    assert said[1] == "The test for add() fails in calc.py. Fix it."  # kept: the condensation did not forget it
    called = [b.id for m in transcript.messages for b in m.tool_calls]
    assert called == ["toolu_04EditCalc", "toolu_05RunTests", "toolu_06RunTests"]  # the forgotten run and views are gone
    assert errors(check(transcript)) == []


def test_the_active_branch_ends_at_the_state_leaf():
    bundle = read_conversation(str(TOOLS)).splitlines()
    state = json.loads(bundle[0])
    ask = json.loads(bundle[2])
    assert ask["kind"] == "MessageEvent"
    state["leaf_event_id"] = ask["id"]  # navigated back to the first request: the rest is another branch
    moved = b"\n".join([json.dumps(state).encode(), *bundle[1:]]) + b"\n"
    assert texts(loads(moved, "b.jsonl")) == ["The test for add() fails in calc.py. Fix it."]


# --- check and repair: the four properties --------------------------------------------------


def with_condensation(bundle: bytes, forgotten: list[str]) -> bytes:
    """A bundle with a condensation (no summary) appended as the agent appends one, forgetting `forgotten`."""
    lines = bundle.splitlines()
    event = {"id": str(uuid.uuid4()), "timestamp": "2026-03-02T11:00:00.000000", "source": "environment",
             "parent_id": json.loads(lines[-1])["id"], "forgotten_event_ids": forgotten, "llm_response_id": "x",
             "kind": "Condensation"}
    state = {**json.loads(lines[0]), "leaf_event_id": event["id"]}
    return b"\n".join([json.dumps(state).encode(), *lines[1:], json.dumps(event).encode()]) + b"\n"


def rules(bundle: bytes) -> list[str]:
    return [v.rule for v in errors(check(loads(bundle, "b.jsonl")))]


def test_check_finds_a_second_observation_and_a_call_never_answered():
    found = errors(check(load(BROKEN), path=str(BROKEN)))
    assert [v.rule for v in found] == ["H1", "H3"]
    assert found[0].text.startswith("events/event-00004-") and "second observation of tool call toolu_07Ls" in found[0].text
    assert "tool call toolu_08Cat has no observation" in found[1].text
    # What the agent sends leaves both out already: the call is answered once.
    assert [m.role for m in load(BROKEN).messages] == ["user", "assistant", "tool"]


def event_id(log: list[dict], kind: str, call_id: str) -> str:
    return next(e["id"] for e in log if e["kind"] == kind and e.get("tool_call_id") == call_id)


def test_check_finds_a_batch_split_and_a_tool_loop_split():
    log = events(TOOLS)
    bundle = read_conversation(str(TOOLS))
    # One call of a batch of two forgotten: the other call goes (H2), then both results (H3).
    assert rules(with_condensation(bundle, [event_id(log, "ActionEvent", "toolu_02ViewCalc")])) == ["H2", "H3", "H3"]
    # The first call had thinking: every call and result after it, up to the answer, is one tool loop.
    lines = [json.loads(line) for line in bundle.splitlines()]
    next(e for e in lines if e.get("tool_call_id") == "toolu_01RunTests")["thinking_blocks"] = \
        [{"type": "thinking", "thinking": "Tests first.", "signature": "c2ln"}]
    looped = b"\n".join(json.dumps(e).encode() for e in lines) + b"\n"
    edit = [event_id(log, kind, "toolu_04EditCalc") for kind in ("ActionEvent", "ObservationEvent")]
    assert set(rules(with_condensation(looped, edit))) == {"H4"}


def test_repair_forgets_what_the_agent_drops_and_changes_no_event(tmp_path):
    target = copy(BROKEN, tmp_path)
    transcript = load(target)
    repaired, report = repair(transcript)
    assert [fix.rule for fix in report.fixes] == ["H1", "H3"]
    dump(repaired, target)
    after = files(target)
    before = files(BROKEN)
    new = [name for name in after if name not in before]
    assert len(new) == 1 and json.loads(after[new[0]])["kind"] == "Condensation"
    assert all(after[name] == before[name] for name in before if name != "base_state.json")
    again = load(target)
    assert errors(check(again)) == [] and again.messages == transcript.messages


# --- rewrites ---------------------------------------------------------------------------------


def test_prune_rewrites_the_observation_files_it_trims_and_nothing_else(tmp_path):
    target = copy(TOOLS, tmp_path)
    pruned, report = prune(load(target), PruneOptions(keep_last=0, soft_trim_chars=200, hard_clear_after=1))
    assert report.as_dict()["cleared"] > 0
    dump(pruned, target)
    before, after = files(TOOLS), files(target)
    changed = [name for name in before if after[name] != before[name]]
    assert set(after) == set(before) and changed
    for name in changed:
        old, new = json.loads(before[name]), json.loads(after[name])
        assert old["kind"] == "ObservationEvent" and {k: v for k, v in old.items() if k != "observation"} == \
            {k: v for k, v in new.items() if k != "observation"}
    assert load(target).messages == pruned.messages


def conversation(directory: Path, turns: int, *, tree: bool = True) -> Path:
    """A conversation of `turns` rounds (a request, a call to read a file and its long output, a
    batch of two edits and their results, an answer), as the SDK persists it."""
    (directory / "events").mkdir(parents=True)
    made: list[dict] = []

    def add(source: str, body: dict, kind: str) -> dict:
        event = {"id": str(uuid.UUID(int=len(made) + 1, version=4)), "timestamp": f"2026-04-01T09:{len(made) // 60:02d}:{len(made) % 60:02d}.000000",
                 "source": source}
        if tree and made:
            event["parent_id"] = made[-1]["id"]
        event.update(body, kind=kind)
        made.append(event)
        return event

    def call(tool: str, call_id: str, args: dict, response: str, thought: str = "") -> dict:
        return add("agent", {"thought": [{"cache_prompt": False, "type": "text", "text": thought}] if thought else [],
                             "thinking_blocks": [], "action": {**args, "kind": "TerminalAction"}, "tool_name": tool, "tool_call_id": call_id,
                             "tool_call": {"id": call_id, "name": tool, "arguments": json.dumps(args), "origin": "completion"},
                             "llm_response_id": response, "security_risk": "LOW"}, "ActionEvent")

    def output(action: dict, text: str) -> dict:
        return add("environment", {"tool_name": action["tool_name"], "tool_call_id": action["tool_call_id"],
                                   "observation": {"content": [{"cache_prompt": False, "type": "text", "text": text}], "is_error": False,
                                                   "kind": "TerminalObservation"}, "action_id": action["id"]}, "ObservationEvent")

    def message(role: str, text: str, response: str | None = None) -> dict:
        body: dict = {"llm_message": {"role": role, "content": [{"cache_prompt": False, "type": "text", "text": text}], "thinking_blocks": []}}
        if response:
            body["llm_response_id"] = response
        return add("agent" if role == "assistant" else "user", {**body, "activated_skills": [], "extended_content": []}, "MessageEvent")

    add("agent", {"system_prompt": {"cache_prompt": False, "type": "text", "text": "You are OpenHands agent."}, "tools": []}, "SystemPromptEvent")
    for turn in range(turns):
        message("user", f"Step {turn}: tidy module{turn}.py.")
        read = call("terminal", f"call_read{turn}", {"command": f"cat module{turn}.py"}, f"resp{turn}a", f"Reading module{turn}.py.")
        output(read, f"line of module{turn}\n" * 60)
        first = call("terminal", f"call_edit{turn}a", {"command": f"sed -i s/a/b/ module{turn}.py"}, f"resp{turn}b", "Two edits.")
        second = call("terminal", f"call_edit{turn}b", {"command": f"sed -i s/c/d/ module{turn}.py"}, f"resp{turn}b")
        output(first, "")
        output(second, "")
        message("assistant", f"module{turn}.py is tidy.", f"resp{turn}c")
        add("environment", {"key": "execution_status", "value": "finished"}, "ConversationStateUpdateEvent")
    for index, event in enumerate(made):
        (directory / "events" / f"event-{index:05d}-{event['id']}.json").write_text(json.dumps(event, separators=(",", ":")))
    state = {"id": directory.name, "agent": {"kind": "Agent"}, "workspace": {"kind": "LocalWorkspace"}}
    if tree:
        state["leaf_event_id"] = made[-1]["id"]
    (directory / "base_state.json").write_text(json.dumps(state, separators=(",", ":")))
    return directory


OPTIONS = CompactOptions(force=True, emergency=True, counting=EstimateOptions(count="content"),
                         summary=SummaryOptions(keep_recent_tokens=300))


def compacted(directory: Path):
    result, report = compact(load(directory), OPTIONS)
    assert report.strategy == "emergency" and report.cut is not None
    dump(result, directory)
    return report


@pytest.mark.parametrize("tree", [True, False], ids=["tree", "linear"])
def test_a_compaction_is_the_next_event_file_and_no_earlier_one_changes(tmp_path, tree):
    directory = conversation(tmp_path / "5d1e3f", 10, tree=tree)
    before = files(directory)
    compacted(directory)
    after = files(directory)
    new = [name for name in after if name not in before]
    assert len(new) == 1 and new[0].startswith(f"events/event-{len(before) - 1:05d}-")
    event = json.loads(after[new[0]])
    assert event["kind"] == "Condensation" and event["summary"].startswith("## Goal") and event["summary_offset"] == 1
    if tree:  # a child of the leaf, its fields in the SDK's order
        assert list(event)[:4] == ["id", "timestamp", "source", "parent_id"]
    else:  # an older log has no tree: the order of the files is the chain
        assert "parent_id" not in event
    assert new[0] == f"events/event-{len(before) - 1:05d}-{event['id']}.json"
    assert all(after[name] == before[name] for name in before if name != "base_state.json")
    state = json.loads(after["base_state.json"])
    assert state.get("leaf_event_id") == (event["id"] if tree else None)
    again = load(directory)
    assert sum(is_summary_message(m) for m in again.messages) == 1 and is_summary_message(again.messages[0])
    assert errors(check(again)) == []


def test_compacting_twice_keeps_one_summary(tmp_path):
    directory = conversation(tmp_path / "7a2b4c", 10)
    compacted(directory)
    compacted(directory)
    again = load(directory)
    assert sum(is_summary_message(m) for m in again.messages) == 1
    assert texts(again)[0].count(SUMMARY_PREFIX) == 1
    assert errors(check(again)) == []
    condensations = [e for e in events(directory) if e["kind"] == "Condensation"]
    assert len(condensations) == 2 and f"{condensations[0]['id']}-summary" in condensations[1]["forgotten_event_ids"]


# --- the agent resumes what we write ---------------------------------------------------------


def agent_messages(directory: Path) -> list[dict]:
    """The messages the agent sends when it resumes the conversation: `ConversationState.create`
    loads base_state and the event files (by index, to the first gap), `rebuild_view` builds the
    view of `path_to_root(leaf)` with `View.from_events` (each condensation applied in turn, then
    the properties enforced), then `LLMConvertibleEvent.events_to_messages`."""
    state = json.loads((directory / "base_state.json").read_bytes())
    log = events(directory)
    index = {e["id"]: i for i, e in enumerate(log)}
    leaf = state.get("leaf_event_id") or next(e["id"] for e in reversed(log) if e["kind"] != "ConversationStateUpdateEvent")
    branch, at = [], index[leaf]
    while at is not None:
        branch.insert(0, log[at])
        parent = log[at].get("parent_id")
        at = index[parent] if parent else (at - 1 if at > 0 else None)
    view: list[dict] = []
    for event in branch:
        if event["kind"] == "Condensation":
            view = [e for e in view if e["id"] not in set(event["forgotten_event_ids"])]
            if event.get("summary") is not None and event.get("summary_offset") is not None:
                view.insert(event["summary_offset"], {"kind": "CondensationSummaryEvent", "id": f"{event['id']}-summary",
                                                      "summary": event["summary"]})
        elif event["kind"] in ("SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent"):
            view.append(event)
    # Enforcement drops nothing from what we wrote: every call answered, every batch whole.
    calls = {e["tool_call_id"] for e in view if e["kind"] == "ActionEvent"}
    answers = [e["tool_call_id"] for e in view if e["kind"] == "ObservationEvent"]
    assert calls == set(answers) and len(answers) == len(set(answers))
    batches = {e["llm_response_id"] for e in view if e["kind"] == "ActionEvent"}
    assert all({e["id"] for e in branch if e["kind"] == "ActionEvent" and e["llm_response_id"] == r}
               <= {e["id"] for e in view} for r in batches)
    messages: list[dict] = []
    k = 0
    while k < len(view):
        event = view[k]
        if event["kind"] == "ActionEvent":
            batch = [event]
            while k + len(batch) < len(view) and view[k + len(batch)]["kind"] == "ActionEvent" \
                    and view[k + len(batch)]["llm_response_id"] == event["llm_response_id"]:
                batch.append(view[k + len(batch)])
            messages.append({"role": "assistant", "content": [t["text"] for t in event["thought"]],
                             "tool_calls": [e["tool_call"] for e in batch]})
            k += len(batch)
            continue
        if event["kind"] == "SystemPromptEvent":
            message = {"role": "system", "content": [event["system_prompt"]["text"]]}
        elif event["kind"] == "CondensationSummaryEvent":
            message = {"role": "user", "content": [event["summary"]]}
        elif event["kind"] == "ObservationEvent":
            message = {"role": "tool", "content": [t["text"] for t in event["observation"]["content"]],
                       "tool_call_id": event["tool_call_id"]}
        else:
            message = {"role": event["llm_message"]["role"], "content": [t["text"] for t in event["llm_message"]["content"]]}
        if messages and messages[-1]["role"] == message["role"] == "user" and "tool_call_id" not in message:
            messages[-1]["content"] += message["content"]  # plain user messages are sent as one
        else:
            messages.append(message)
        k += 1
    return messages


@pytest.mark.parametrize("tree", [True, False], ids=["tree", "linear"])
@pytest.mark.parametrize("times", [1, 2])
def test_the_agent_resumes_our_compaction_summary_first_then_the_window(tmp_path, tree, times):
    directory = conversation(tmp_path / "0b9e1d", 12, tree=tree)
    for _ in range(times):
        report = compacted(directory)
    ours = load(directory)
    sent = agent_messages(directory)
    summary = [e for e in events(directory) if e["kind"] == "Condensation"][-1]["summary"]
    assert sent[0] == {"role": "system", "content": ["You are OpenHands agent."]}
    assert sent[1]["role"] == "user" and sent[1]["content"][0] == summary
    assert texts(ours)[0] == SUMMARY_PREFIX + summary
    # The kept window is what we read after our summary: the same calls and results, in order.
    window = ours.messages[1:]
    assert len(window) == report.window_messages
    sent_calls = [c["id"] for m in sent for c in m.get("tool_calls", ())]
    assert sent_calls == [b.id for m in window for b in m.tool_calls]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == \
        [b.tool_call_id for m in window for b in m.blocks if isinstance(b, ToolResult)]
    # Every call is answered by the tool messages right after its message, and no result is alone.
    pending: set[str] = set()
    for message in sent[2:]:
        if message["role"] == "tool":
            assert message["tool_call_id"] in pending
            pending.discard(message["tool_call_id"])
        else:
            assert not pending
            pending = {c["id"] for c in message.get("tool_calls", ())}
    assert not pending


# --- the command line: a conversation directory is one input ---------------------------------


def test_a_conversation_directory_is_one_input_and_a_batch_finds_it(tmp_path, monkeypatch):
    logs = tmp_path / "logs"
    conversation(logs / "runs" / "1c2d3e", 10)
    shutil.copy(FIXTURES / "jsonl" / "chat.jsonl", logs / "chat.jsonl")
    monkeypatch.chdir(tmp_path)
    before = files(logs / "runs" / "1c2d3e")
    runner = CliRunner()
    alone = runner.invoke(cli, ["check", "logs/runs/1c2d3e"], prog_name="transcompact")
    assert alone.exit_code == 0, alone.output
    to_stdout = runner.invoke(cli, ["compact", "--emergency", "--force", "--keep-recent-tokens", "300", "logs/runs/1c2d3e"],
                              prog_name="transcompact")
    assert to_stdout.exit_code == 0, to_stdout.output
    assert loads(to_stdout.stdout_bytes, "out.jsonl").format == "openhands"
    assert files(logs / "runs" / "1c2d3e") == before  # stdout: the directory is left as it is
    result = runner.invoke(cli, ["compact", "--emergency", "-i", "--force", "--keep-recent-tokens", "300", "--jobs", "1", "logs"],
                           prog_name="transcompact")
    assert result.exit_code == 0, result.output
    assert "logs/runs/1c2d3e: compacted (emergency)" in result.stderr and "1 compacted, 1 unchanged" in result.stderr
    after = files(logs / "runs" / "1c2d3e")
    assert len(after) == len(before) + 1 and all(after[name] == before[name] for name in before if name != "base_state.json")
    out = runner.invoke(cli, ["prune", "--output-dir", "pruned", "--keep-last", "0", "--hard-clear-after", "1", "logs"],
                        prog_name="transcompact")
    assert out.exit_code == 0, out.output
    assert is_conversation(tmp_path / "pruned" / "runs" / "1c2d3e") and (tmp_path / "pruned" / "chat.jsonl").is_file()
    assert load(tmp_path / "pruned" / "runs" / "1c2d3e").format == "openhands"



def test_a_conversation_written_to_another_directory_takes_its_other_files_along(tmp_path):
    """What the agent or its user keeps beside the state and the events was left out of `-o DIR`."""
    source = copy(TOOLS, tmp_path)
    (source / "workspace" / "notes").mkdir(parents=True)
    (source / "workspace" / "notes" / "todo.md").write_bytes(b"- fix add()\n")
    (source / "TASKS.json").write_bytes(b'{"tasks": []}')
    (source / "events" / "README").write_bytes(b"not an event: the agent's scan skips it")
    target = tmp_path / "out" / source.name
    write_conversation(target, read_conversation(source), source)
    assert files(target) == files(source)
    write_conversation(source, read_conversation(source), source)  # in place: nothing to take along
    assert files(source) == files(target)


def test_compact_to_another_directory_takes_the_conversations_other_files_along(tmp_path, transcompact):
    source = copy(TOOLS, tmp_path)
    (source / "TASKS.json").write_bytes(b'{"tasks": []}')
    target = tmp_path / "out"
    result = transcompact("compact", "-q", "--emergency", "--force", "--keep-recent-tokens", "100", "-o", target, source)
    assert result.exit_code == 0, result.stderr
    assert (target / "TASKS.json").read_bytes() == b'{"tasks": []}'
    assert transcompact("check", target).exit_code == 0

def test_a_conversation_without_events_or_with_a_broken_one_is_named(tmp_path):
    empty = tmp_path / "e0e0e0"
    (empty / "events").mkdir(parents=True)
    (empty / "base_state.json").write_text('{"id":"e0e0e0","agent":{}}')
    runner = CliRunner()
    result = runner.invoke(cli, ["check", str(empty)], prog_name="transcompact")
    assert result.exit_code == 3 and "the conversation has no events yet" in result.stderr
    (empty / "events" / "event-00000-5eed0000.json").write_text("{")
    result = runner.invoke(cli, ["check", str(empty)], prog_name="transcompact")
    assert result.exit_code == 3 and f"{empty}/events/event-00000-5eed0000.json:1:" in result.stderr
    # --glob picks a conversation through its base_state.json, as it picks a file.
    only_lines = runner.invoke(cli, ["check", "--glob", "*.jsonl", str(tmp_path)], prog_name="transcompact")
    assert only_lines.exit_code == 3 and "no file matching *.jsonl" in only_lines.stderr


def gapped(directory: Path, index: int) -> Path:
    """The conversation with event `index`'s file gone."""
    next((directory / "events").glob(f"event-{index:05d}-*.json")).unlink()
    return directory


def doubled(directory: Path, index: int) -> Path:
    """The conversation with a second file holding event `index` (another id, the same event)."""
    held = next((directory / "events").glob(f"event-{index:05d}-*.json"))
    shutil.copy(held, directory / "events" / f"event-{index:05d}-aaaaaaaa-0000-4000-8000-000000000fff.json")
    return directory


@pytest.mark.parametrize("broken", ["gap", "gap at 0", "two files"])
def test_a_conversation_whose_indices_are_not_what_the_agent_loads_is_refused_and_left_as_it_is(tmp_path, broken):
    """The agent loads a directory only up to its first missing index, and of two files holding one
    index whichever the file system lists last: compact -i wrote its Condensation into the gap (the
    events after it entered the agent's view), -o DIR left the later files out. Each command now
    refuses it, naming the directory and the index, and writes nothing."""
    directory = conversation(tmp_path / "logs" / "3e4f5a", 6)
    {"gap": lambda: gapped(directory, 13), "gap at 0": lambda: gapped(directory, 0),
     "two files": lambda: doubled(directory, 13)}[broken]()
    said = {"gap": "event 13 is missing (no events/event-00013-<id>.json) and 41 later event files follow: "
                   "OpenHands loads only events 0 to 12",
            "gap at 0": "event 0 is missing (no events/event-00000-<id>.json) and 54 later event files follow: "
                        "OpenHands loads none of its events",
            "two files": "event 13 is held by 2 files (event-00013-"}[broken]
    (tmp_path / "archive.jsonl").write_text("")
    before = files(tmp_path)
    runner = CliRunner()
    for command in (["estimate"], ["check"], ["repair", "-i"], ["prune", "--keep-last", "0", "-o", str(tmp_path / "out")],
                    ["compact", "--emergency", "--force", "--keep-recent-tokens", "300", "-i"],
                    ["compact", "--emergency", "--force", "--keep-recent-tokens", "300", "--output-dir", str(tmp_path / "out")],
                    ["expand", "--archive", str(tmp_path / "archive.jsonl"), "-o", str(tmp_path / "out")]):
        result = runner.invoke(cli, [*command, str(directory)], prog_name="transcompact")
        assert result.exit_code == 3, (command, result.output)
        assert f"{directory}: {said}" in result.stderr, (command, result.stderr)
    batch = runner.invoke(cli, ["compact", "--emergency", "--force", "-i", "--jobs", "1", str(tmp_path / "logs")],
                          prog_name="transcompact")
    assert batch.exit_code == 3 and said in batch.stderr
    assert files(tmp_path) == before


def test_a_directory_already_holding_events_the_output_has_not_is_not_written_into(tmp_path):
    """What is written stays one conversation: an event file the output does not hold (a stale
    compaction of an earlier run, another conversation's events) would be loaded with it."""
    directory = conversation(tmp_path / "6a7b8c", 6)
    out = tmp_path / "out" / directory.name
    runner = CliRunner()
    compacting = ["compact", "--emergency", "--force", "--keep-recent-tokens", "300", "--output-dir", str(out.parent),
                  str(directory)]
    assert runner.invoke(cli, compacting, prog_name="transcompact").exit_code == 0
    compacted_files = files(out)
    pruned = runner.invoke(cli, ["prune", "--keep-last", "0", "--output-dir", str(out.parent), str(directory)],
                           prog_name="transcompact")
    assert pruned.exit_code == 5
    assert f"{out}/events: already holds event 55 as event-00055-" in pruned.stderr
    assert "past this conversation's 55 events; nothing written" in pruned.stderr
    assert files(out) == compacted_files
    doubled(out, 3)
    again = runner.invoke(cli, compacting, prog_name="transcompact")
    assert again.exit_code == 5 and "already holds event 3 as event-00003-" in again.stderr


def test_a_message_event_in_the_tool_role_is_a_clear_error(tmp_path):
    """A tool message that answers no call: only an observation's message has that role (it was an
    internal error in check, repair and prune)."""
    directory = copy(TOOLS, tmp_path)
    path = next(p for p in sorted((directory / "events").iterdir()) if json.loads(p.read_text())["kind"] == "MessageEvent"
                and json.loads(p.read_text())["llm_message"]["role"] == "assistant")
    value = json.loads(path.read_text())
    value["llm_message"]["role"] = "tool"
    path.write_text(json.dumps(value))
    for command in ("estimate", "check", "repair", "prune"):
        result = CliRunner().invoke(cli, [command, str(directory)], prog_name="transcompact")
        assert result.exit_code == 3, (command, result.stderr)
        assert "a MessageEvent's `llm_message.role` is `tool`" in result.stderr
