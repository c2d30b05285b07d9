"""`transcompact slim` of an OpenHands conversation: the events a condensation forgot go, and the
SDK resuming what is left reads what it read from the whole log. `resumed` below rebuilds what it
reads, from upstream software-agent-sdk: the event files by index (`event_store.py`), the active
branch (`path_to_root`, `state.py`), the view (`context/view/view.py`, before its properties,
which the post-condition judges through our reader), and what it reads of the raw log (the
prefix `Agent.init_state` scans, the stuck detector's window, the title's first message, the
final answer, the actions still pending)."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from transcompact import compact, dumps, loads
from transcompact.counting.counter import Options as EstimateOptions
from transcompact.io.openhands_store import read_conversation, write_conversation
from transcompact.ops.compaction.compact import CompactOptions
from transcompact.ops.compaction.summarize import SummaryOptions

from .conftest import CORPUS, FIXTURES

FIXTURE_DIRS = sorted(p for p in (FIXTURES / "openhands").iterdir() if p.is_dir())
FORGOTTEN = "the events a condensation forgot (scroll-back)"
EVENT_NAME = re.compile(r"^event-(?P<idx>\d{5,})-(?P<event_id>[0-9a-fA-F\-]{8,})\.json$")  # persistence_const.py
OBSERVATIONS = ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent")
SENT = ("SystemPromptEvent", "MessageEvent", "ActionEvent", *OBSERVATIONS)


def resumed(directory: Path) -> dict:
    """What the SDK reads when it resumes the conversation in `directory` (it fails where ours does)."""
    by_index = {int(m["idx"]): m["event_id"] for m in map(EVENT_NAME.match, (p.name for p in (directory / "events").iterdir())) if m}
    assert sorted(by_index) == list(range(len(by_index)))  # no gap: the scan loads every file
    log = [json.loads((directory / "events" / f"event-{i:05d}-{by_index[i]}.json").read_bytes()) for i in range(len(by_index))]
    assert [event["id"] for event in log] == [by_index[i] for i in range(len(log))]
    index: dict[str, int] = {}
    for i, event in enumerate(log):
        index.setdefault(event["id"], i)
    state = json.loads((directory / "base_state.json").read_bytes())
    at = state.get("leaf_event_id") or next(e["id"] for e in reversed(log) if e["kind"] != "ConversationStateUpdateEvent")
    branch: list[dict] = []
    while at is not None:
        i = index[at]  # a parent that is not there: KeyError, as in path_to_root
        branch.insert(0, log[i])
        parent = log[i].get("parent_id")
        at = None if parent == "__root__" else parent if parent is not None else (log[i - 1]["id"] if i else None)
    view: list[str] = []
    for event in branch:
        if event["kind"] == "Condensation":
            view = [i for i in view if i not in event["forgotten_event_ids"]]
            if event.get("summary") is not None and event.get("summary_offset") is not None:
                view.insert(event["summary_offset"], f"{event['id']}-summary")
        elif event["kind"] in SENT:
            view.append(event["id"])
    window = branch[-20:]
    asks = [k for k, e in enumerate(window) if is_user_message(e)]
    observed = {e.get("action_id") for e in branch if e["kind"] in OBSERVATIONS} | \
               {e["tool_call_id"] for e in branch if e["kind"] == "AgentErrorEvent"}
    return {"view": view, "prefix": [e["id"] for e in log[:3]],
            "stuck window": [e["id"] for e in window[asks[-1] + 1 if asks else 0:]],
            "title": next((e["id"] for e in branch if is_user_message(e) and e["llm_message"]["content"]), None),
            "final answer": next((e["id"] for e in reversed(log) if e["source"] == "agent" and (
                e["kind"] == "MessageEvent" or e["kind"] == "ActionEvent" and e["tool_name"] == "finish")), None),
            "pending": [e["id"] for e in branch if e["kind"] == "ActionEvent"
                        and e["id"] not in observed and e["tool_call_id"] not in observed]}


def is_user_message(event: dict) -> bool:
    return event["kind"] == "MessageEvent" and event["source"] == "user"


def conversation(turns: int, *, tree: bool = True, thinking: bool = False, updates_first: int = 0,
                 unanswered: bool = False) -> bytes:
    """The bundle of a conversation of `turns` rounds (a request, a call to read a file and its
    long output, a batch of two edits and their results, an answer, the state update that ends a
    run), as the SDK records it: with `tree`, each event a child of the leaf (a state update hangs
    from it, off the branch); `thinking`: the first call of each round has thinking blocks;
    `updates_first` state updates after the system prompt; `unanswered`: a last request."""
    made: list[dict] = []
    leaf: list[str] = []

    def add(source: str, kind: str, **body) -> dict:
        event = {"id": str(uuid.UUID(int=len(made) + 1, version=4)),
                 "timestamp": f"2026-04-01T09:{len(made) // 60:02d}:{len(made) % 60:02d}.000000", "source": source}
        if tree and leaf:
            event["parent_id"] = leaf[-1]
        made.append({**event, **body, "kind": kind})
        if kind != "ConversationStateUpdateEvent":
            leaf.append(event["id"])
        return made[-1]

    def call(call_id: str, command: str, response: str, thought: str = "", *, thinks: bool = False) -> dict:
        blocks = [{"type": "thinking", "thinking": "Which file?", "signature": "c2ln"}] if thinks else []
        return add("agent", "ActionEvent", thought=[{"type": "text", "text": thought}] if thought else [],
                   thinking_blocks=blocks, action={"command": command, "kind": "TerminalAction"}, tool_name="terminal",
                   tool_call_id=call_id, tool_call={"id": call_id, "name": "terminal", "arguments": json.dumps({"command": command}),
                                                    "origin": "completion"}, llm_response_id=response)

    def output(action: dict, text: str) -> None:
        add("environment", "ObservationEvent", tool_name="terminal", tool_call_id=action["tool_call_id"],
            observation={"content": [{"type": "text", "text": text}], "is_error": False, "kind": "TerminalObservation"},
            action_id=action["id"])

    def message(role: str, text: str) -> None:
        add("user" if role == "user" else "agent", "MessageEvent", llm_message={"role": role, "content": [{"type": "text", "text": text}]})

    add("agent", "SystemPromptEvent", system_prompt={"type": "text", "text": "You are OpenHands agent."}, tools=[])
    for _ in range(updates_first):
        add("environment", "ConversationStateUpdateEvent", key="execution_status", value="idle")
    for turn in range(turns):
        message("user", f"Step {turn}: tidy module{turn}.py.")
        read = call(f"call_read{turn}", f"cat module{turn}.py", f"resp{turn}a", "Reading it.", thinks=thinking)
        output(read, f"line of module{turn}\n" * 60)
        first, second = (call(f"call_edit{turn}{k}", f"sed -i s/{k}/z/ module{turn}.py", f"resp{turn}b", "Two edits." if k == "a" else "")
                         for k in "ab")
        output(first, "")
        output(second, "")
        message("assistant", f"module{turn}.py is tidy.")
        add("environment", "ConversationStateUpdateEvent", key="execution_status", value="finished")
    if unanswered:
        message("user", "One more thing.")
    state = {"id": "5eed", "agent": {"kind": "Agent"}, **({"leaf_event_id": leaf[-1]} if tree else {})}
    return b"".join(json.dumps(value, separators=(",", ":")).encode() + b"\n" for value in [state, *made])


def ids(bundle: bytes, kind: str | None = None) -> list[str]:
    return [v["id"] for v in map(json.loads, bundle.splitlines()[1:]) if kind in (None, v["kind"])]


def call_events(bundle: bytes, *call_ids: str) -> list[str]:
    return [v["id"] for v in map(json.loads, bundle.splitlines()[1:]) if v.get("tool_call_id") in call_ids]


def condensed(bundle: bytes, forgotten: list[str], *, summary: str | None = None, offset: int | None = None,
              **state) -> bytes:
    """`bundle` with a condensation appended as the SDK appends one (a child of the leaf, the new leaf)."""
    lines = [json.loads(line) for line in bundle.splitlines()]
    tree = "leaf_event_id" in lines[0]
    event = {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{len(lines)}")), "timestamp": "2026-04-02T00:00:00.000000",
             "source": "environment", **({"parent_id": lines[0]["leaf_event_id"]} if tree else {}),
             "forgotten_event_ids": forgotten, **({"summary": summary, "summary_offset": offset} if summary else {}),
             "llm_response_id": "condense", "kind": "Condensation"}
    head = {**lines[0], **state, **({"leaf_event_id": event["id"]} if tree else {})}
    return b"".join(json.dumps(v, separators=(",", ":")).encode() + b"\n" for v in [head, *lines[1:], event])


OPTIONS = CompactOptions(force=True, emergency=True, counting=EstimateOptions(count="content"),
                         summary=SummaryOptions(keep_recent_tokens=300))


def compacted(bundle: bytes, times: int = 1) -> bytes:
    """`bundle` after transcompact compact, which forgets the old events with a condensation."""
    for _ in range(times):
        result, _ = compact(loads(bundle, "b.jsonl"), OPTIONS)
        bundle = bytes(dumps(result))
    return bundle


def directory(bundle: bytes, path: Path) -> Path:
    write_conversation(path, bundle)
    return path


def slimmed(transcompact, bundle: bytes, tmp_path: Path) -> bytes:
    (tmp_path / "in.jsonl").write_bytes(bundle)
    result = transcompact("slim", tmp_path / "in.jsonl")
    assert result.exit_code == 0, result.stderr
    return result.stdout_bytes


def messages(data: bytes) -> list:
    return [(m.role, m.blocks) for m in loads(data, "b.jsonl").messages]


# --- what goes, and the SDK resumes the same ------------------------------------------------


@pytest.mark.parametrize("path", [p for p in FIXTURE_DIRS if b'"Condensation"' in read_conversation(str(p))],
                         ids=lambda p: p.name[:8])
def test_a_condensed_fixture_loses_what_it_forgot_and_gives_it_back(path, transcompact, tmp_path):
    original = read_conversation(str(path))
    result = transcompact("slim", "--archive", tmp_path / "archive.jsonl", path)
    assert result.exit_code == 0, result.stderr
    slim = result.stdout_bytes
    forgotten = {i for v in map(json.loads, original.splitlines()[1:]) for i in v.get("forgotten_event_ids", ())}
    assert set(ids(original)) - set(ids(slim)) == forgotten
    assert f"dropped {FORGOTTEN}" in result.stderr and f"({len(forgotten)} lines)" in result.stderr
    assert messages(slim) == messages(original)
    assert resumed(directory(slim, tmp_path / "slim" / path.name)) == resumed(path)
    again = transcompact("slim", tmp_path / "slim" / path.name)
    assert again.stdout_bytes == slim and "nothing its agent does not send" in again.stderr
    (tmp_path / "slim.jsonl").write_bytes(slim)
    expanded = transcompact("expand", "--archive", tmp_path / "archive.jsonl", tmp_path / "slim.jsonl")
    assert expanded.exit_code == 0 and expanded.stdout_bytes == original
    back = directory(expanded.stdout_bytes, tmp_path / "back" / path.name)
    assert {p.relative_to(back): p.read_bytes() for p in back.rglob("*.json")} == \
           {p.relative_to(path): p.read_bytes() for p in path.rglob("*.json")}


@pytest.mark.parametrize("path", [p for p in FIXTURE_DIRS if b'"Condensation"' not in read_conversation(str(p))],
                         ids=lambda p: p.name[:8])
def test_a_conversation_never_condensed_is_left_as_it_is(path, transcompact):
    result = transcompact("slim", path)
    assert result.exit_code == 0 and result.stdout_bytes == read_conversation(str(path))
    assert "nothing its agent does not send" in result.stderr


@pytest.mark.parametrize("tree", [True, False], ids=["tree", "linear"])
@pytest.mark.parametrize("times", [1, 2])
def test_a_compacted_conversation_resumes_the_same_from_a_fraction_of_it(tree, times, transcompact, tmp_path):
    original = compacted(conversation(12, tree=tree), times)
    slim = slimmed(transcompact, original, tmp_path)
    assert len(slim) < len(original) / 3
    assert messages(slim) == messages(original)
    assert resumed(directory(slim, tmp_path / "slim")) == resumed(directory(original, tmp_path / "original"))
    assert slimmed(transcompact, slim, tmp_path) == slim


def test_a_bundle_slimmed_in_place_is_archived_beside_it_and_expanded_back(transcompact, tmp_path):
    log = tmp_path / "conversation.jsonl"
    original = compacted(conversation(12))
    log.write_bytes(original)
    assert transcompact("slim", "-i", log).exit_code == 0
    assert len(log.read_bytes()) < len(original) and messages(log.read_bytes()) == messages(original)
    expanded = transcompact("expand", "-i", "--archive", tmp_path / "conversation.jsonl.slim-archive", log)
    assert expanded.exit_code == 0 and log.read_bytes() == original


# --- what the SDK reads of the raw log stays ---------------------------------------------------


@pytest.mark.parametrize("tree", [True, False], ids=["tree", "linear"])
@pytest.mark.parametrize("shape", ["as it starts", "state updates first", "a request unanswered"])
def test_after_a_hard_reset_only_what_the_sdk_reads_of_the_raw_log_stays(tree, shape, transcompact, tmp_path):
    """A hard context reset forgets every event, the system prompt too, and puts its summary first.
    What stays: the first three events (`init_state` looks for the system prompt there), the first
    request (the title), the stuck detector's window (the last 20 events, from the last request
    among them on), the agent's last answer, the result of every call kept, and the state updates
    and the condensation, which no condensation forgets."""
    built = conversation(12, tree=tree, updates_first=2 if shape == "state updates first" else 0,
                         unanswered=shape == "a request unanswered")
    sent = [v["id"] for v in map(json.loads, built.splitlines()[1:]) if v["kind"] in SENT]
    original = condensed(built, sent, summary="All done so far.", offset=0)
    slim = slimmed(transcompact, original, tmp_path)
    events = ids(original)
    kept = {*events[:3], *ids(original, "ConversationStateUpdateEvent"), events[-1]}
    if shape == "a request unanswered":
        kept |= {events[-4], events[-2]}  # the last answer, the last request
    else:
        kept |= set(events[-10:-2])  # the last round, from its request to its answer
    if shape == "state updates first":
        kept.add(events[3])  # the first request
    else:
        kept.add(call_events(original, "call_read0")[1])  # the result of the first call, one of the first three
    assert set(ids(slim)) == kept
    assert messages(slim) == messages(original)
    assert resumed(directory(slim, tmp_path / "slim")) == resumed(directory(original, tmp_path / "original"))


def test_a_batch_still_partly_in_view_keeps_its_forgotten_call(transcompact, tmp_path):
    """The view loses the rest of a batch one call of which was forgotten (the properties compare it
    with the whole branch): without the forgotten call in the log, the rest would be sent."""
    built = conversation(12)
    original = condensed(built, call_events(built, "call_edit1a")[:1])
    assert slimmed(transcompact, original, tmp_path) == original
    whole = condensed(built, call_events(built, "call_edit1a", "call_edit1b"))
    assert len(set(ids(whole)) - set(ids(slimmed(transcompact, whole, tmp_path)))) == 4


def test_a_tool_loop_still_partly_in_view_keeps_its_forgotten_part(transcompact, tmp_path):
    """With thinking, a round's calls and results are one tool loop, which the view keeps or loses whole."""
    forgotten = call_events(conversation(12), "call_read1")  # the first call of round 1 and its result
    looped = condensed(conversation(12, thinking=True), forgotten)
    assert slimmed(transcompact, looped, tmp_path) == looped
    plain = condensed(conversation(12), forgotten)
    assert set(ids(plain)) - set(ids(slimmed(transcompact, plain, tmp_path))) == set(forgotten)


def test_the_result_of_a_call_kept_stays(transcompact, tmp_path):
    """An action whose result is not in the log is pending: the SDK runs it again, or reports it failed."""
    built = conversation(12)
    action, result = call_events(built, "call_read1")
    alone = condensed(built, [result])
    assert slimmed(transcompact, alone, tmp_path) == alone
    assert resumed(directory(alone, tmp_path / "c"))["pending"] == []


def test_what_stood_before_a_summary_stays_where_the_summary_was_put(transcompact, tmp_path):
    """A summary goes at its offset in the view of its time: the events before it there stay, or it
    would land further on."""
    built = conversation(12)
    events = ids(built)
    round_1 = events[10:18]  # its request, calls, results and answer
    first = condensed(built, [], summary="Nothing yet.", offset=12)  # after round 1's first result
    original = condensed(first, round_1)
    slim = slimmed(transcompact, original, tmp_path)
    assert set(ids(original)) - set(ids(slim)) == set(round_1[3:])
    assert messages(slim) == messages(original)


def with_leaf(bundle: bytes, leaf: str) -> bytes:
    """`bundle` with its state's leaf moved to `leaf` (as `navigate_to` does)."""
    lines = bundle.splitlines()
    return b"\n".join([json.dumps({**json.loads(lines[0]), "leaf_event_id": leaf}).encode(), *lines[1:]]) + b"\n"


def event(bundle: bytes, **body) -> bytes:
    """`bundle` with one more event, off the active branch (the leaf stays)."""
    value = {"id": str(uuid.uuid4()), "timestamp": "2026-04-03T00:00:00.000000", **body}
    return bundle + json.dumps(value).encode() + b"\n"


def test_another_branch_keeps_its_path(transcompact, tmp_path):
    """A branch the conversation left (the SDK can navigate back to it) keeps every event on its path."""
    built = compacted(conversation(12))
    forgotten = [i for v in map(json.loads, built.splitlines()) for i in v.get("forgotten_event_ids", ())]
    fork = forgotten[len(forgotten) // 2]
    original = event(built, source="user", parent_id=fork, kind="MessageEvent",
                     llm_message={"role": "user", "content": [{"type": "text", "text": "Try another way."}]})
    slim = slimmed(transcompact, original, tmp_path)
    path = set(ids(original)[:ids(original).index(fork) + 1])
    assert path <= set(ids(slim)) and set(forgotten) - path - set(ids(slim))
    assert messages(slim) == messages(original)
    other = ids(original)[-1]
    assert messages(with_leaf(slim, other)) == messages(with_leaf(original, other))


GOAL = {"active": False, "status": "interrupted", "iteration": 1, "max_iterations": 5, "objective": "Tidy every module."}


def with_critic(bundle: bytes) -> bytes:
    lines = bundle.splitlines()
    state = json.loads(lines[0])
    return b"\n".join([json.dumps({**state, "agent": {**state["agent"], "critic": {"kind": "APIBasedCritic"}}}).encode(),
                       *lines[1:]]) + b"\n"


@pytest.mark.parametrize("reader", ["critic", "goal judge"])
def test_a_conversation_whose_critic_or_goal_judge_reads_every_event_is_left_as_it_is(reader, transcompact, tmp_path):
    built = compacted(conversation(12))
    original = with_critic(built) if reader == "critic" else \
        event(built, source="environment", key="goal", value=GOAL, kind="ConversationStateUpdateEvent")
    assert slimmed(transcompact, original, tmp_path) == original


def test_a_goal_loop_that_ended_does_not_keep_the_log_whole(transcompact, tmp_path):
    ended = event(compacted(conversation(12)), source="environment", key="goal", value={**GOAL, "status": "complete"},
                  kind="ConversationStateUpdateEvent")
    assert len(slimmed(transcompact, ended, tmp_path)) < len(ended) / 3


# --- the corpus -------------------------------------------------------------------------------


@pytest.mark.parametrize("name, reading", [("openhands-runtime-traj-basic-gui-mode.json", ()),
                                           ("openhands-multi-swe-bench-output-3runs.jsonl", ("--messages-path", "0.history"))])
def test_the_corpus_openhands_logs_are_left_as_they_are(name, reading, transcompact):
    """They are the older (V0) event streams, which the agent replays whole."""
    path = CORPUS / "trajectories" / name
    if not path.is_file():
        pytest.skip("the shared corpus is not here")
    result = transcompact("slim", *reading, path)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == path.read_bytes() and "left as it is" in result.stderr


# --- a conversation directory (needs the io/ change) -----------------------------------------


def test_a_conversation_directory_is_slimmed_into_another_and_not_in_place(transcompact, tmp_path):
    source = directory(compacted(conversation(12)), tmp_path / "logs" / "5eed")
    (source / "TASKS.json").write_bytes(b'{"tasks": []}')
    before = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}
    result = transcompact("slim", "--archive", tmp_path / "a.jsonl", "-o", tmp_path / "slim", source)
    assert result.exit_code == 0, result.stderr
    target = tmp_path / "slim"
    assert resumed(target) == resumed(source) and (target / "TASKS.json").read_bytes() == b'{"tasks": []}'
    assert sum(1 for _ in (target / "events").iterdir()) < sum(1 for _ in (source / "events").iterdir())
    for archive in (["--no-archive"], []):  # nothing written: no archive of the original beside it either
        in_place = transcompact("slim", "-i", *archive, source)
        assert in_place.exit_code == 5 and "is not renumbered in place; nothing written" in in_place.stderr
        assert {p: p.read_bytes() for p in source.rglob("*") if p.is_file()} == before
        assert [p.name for p in source.parent.iterdir()] == [source.name]
    back = transcompact("expand", "--archive", tmp_path / "a.jsonl", "-o", tmp_path / "back", target)
    assert back.exit_code == 0, back.stderr
    assert {p.relative_to(tmp_path / "back"): p.read_bytes() for p in (tmp_path / "back").rglob("*") if p.is_file()} == \
           {p.relative_to(source): data for p, data in before.items()}
