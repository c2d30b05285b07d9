"""What of an OpenHands conversation the agent never sends nor reads when it resumes it (`slim`):
the events a condensation forgot. Found in OpenHands/software-agent-sdk at 611629e (its
`conversation/`, `context/view/` and `agent/`): on resume `ConversationState.create` loads the
event files by index up to the first gap, walks the active branch from the leaf by `parent_id`
(an event without one: the file before it), and `View.from_events` builds what the model is
sent: each `Condensation` removes the events it forgets and inserts its summary at its offset,
then the view's properties are judged against every event of the branch. An event a
condensation removed is never sent again.

Some of them the SDK still reads from the raw log, and they stay: the first three events (where
`Agent.init_state` looks for the system prompt), what the stuck detector reads (the last 20
events of the branch, from the last user message among them on), the first user message (the
title), the agent's last answer (`get_agent_final_response`), the observations of every action
kept (an action without one is pending: `get_unmatched_actions`), an event that stood before a
summary's offset (the summary would land elsewhere), the forgotten part of a batch or a tool loop
still partly in view (the properties judge the view against the whole branch), and the ancestors
of another branch's events (its path stays whole). A conversation whose agent has a critic, or
whose goal loop can be resumed, is left as it is: they read every event. A kept event whose
parent is dropped hangs from its nearest kept ancestor; the files left are numbered again from 0
when the bundle is written as a directory (`io.openhands_store`), as the SDK's scan needs.
"""

from __future__ import annotations

from typing import Any

from ...core.jsondata import Record, dumps
from ...core.model import Transcript
from .._log import Slimming, surviving_parent
from .reader import ACTION, CONDENSATION, LLM_VISIBLE, OBSERVATIONS, ROOT_PARENT_ID, StoreSource, event_records, tool_loops

FORGOTTEN = "the events a condensation forgot (scroll-back)"
FIELDS = {"parent_id": "links past dropped events"}
INIT_STATE_PREFIX = 3  # agent.py INIT_STATE_PREFIX_SCAN_WINDOW
STUCK_SCAN = 20  # stuck_detector.py MAX_EVENTS_TO_SCAN_FOR_STUCK_DETECTION
STATE_UPDATE = "ConversationStateUpdateEvent"  # no node of the tree: it hangs from the leaf of its time
FINISH = "finish"  # FinishTool.name


def slimming(transcript: Transcript) -> Slimming:
    source: StoreSource = transcript.source
    records = source.records
    events = event_records(records)
    if _every_event_read(records, source.state, events):
        return Slimming()
    forgotten, pinned, view = _condensations(records, source.branch)
    dropped = _judged_alike(records, source.branch, events, view,
                            forgotten - pinned - _read_raw(records, source.branch, events))
    if not dropped:
        return Slimming()
    return Slimming(dict.fromkeys(sorted(dropped), FORGOTTEN), _relinked(records, events, dropped), FIELDS)


def _every_event_read(records: list[Record], state: int | None, events: list[int]) -> bool:
    """A critic (`critic_mixin`) or a resumable goal loop (`event_service.resume_goal_loop`, its
    judge) is handed every event of the log, forgotten or not."""
    agent = records[state][1].get("agent") if state is not None else None
    if isinstance(agent, dict) and agent.get("critic"):
        return True
    goal = next((value.get("value") for i in reversed(events)
                 if (value := records[i][1])["kind"] == STATE_UPDATE and value.get("key") == "goal"), None)
    return isinstance(goal, dict) and goal.get("status") not in ("complete", "capped")


def _condensations(records: list[Record], branch: tuple[int, ...]) -> tuple[set[int], set[int], set[int]]:
    """The events a condensation removed from the view (`View.append_event`), those that stood
    before a summary's offset when it was inserted, and those in the view at the end."""
    view: list[tuple[str, int | None]] = []  # (id, record); a summary has no record
    forgotten: set[int] = set()
    pinned: set[int] = set()
    for index in branch:
        value = records[index][1]
        if value["kind"] == CONDENSATION:
            ids = value.get("forgotten_event_ids")
            gone = {i for i in ids if isinstance(i, str)} if isinstance(ids, list) else set()
            forgotten.update(record for id_, record in view if id_ in gone and record is not None)
            view = [(id_, record) for id_, record in view if id_ not in gone]
            summary, offset = value.get("summary"), value.get("summary_offset")
            if isinstance(summary, str) and type(offset) is int and offset >= 0:
                pinned.update(record for _, record in view[:offset] if record is not None)
                view.insert(offset, (f"{value['id']}-summary", None))
        elif value["kind"] in LLM_VISIBLE:
            view.append((value["id"], index))
    return forgotten, pinned, {record for _, record in view if record is not None}


def _read_raw(records: list[Record], branch: tuple[int, ...], events: list[int]) -> set[int]:
    """The events the SDK reads from the log itself rather than from the view."""
    kept = set(events[:INIT_STATE_PREFIX])
    window = branch[-STUCK_SCAN:]
    asks = [k for k, i in enumerate(window) if _is_user_message(records[i][1])]
    kept.update(window[asks[-1] if asks else 0:])
    kept.update(next(([i] for i in branch if _is_user_message(records[i][1]) and _text(records[i][1])), []))
    kept.update(next(([i] for i in reversed(events) if _is_answer(records[i][1])), []))
    return kept | _ancestors_of_other_branches(records, branch, events)


def _is_user_message(value: dict) -> bool:
    return value["kind"] == "MessageEvent" and value["source"] == "user"


def _text(value: dict) -> str:
    """`title_utils.extract_message_text`: what a message says in text."""
    message = value.get("llm_message")
    items = message.get("content") if isinstance(message, dict) else None
    return " ".join(item["text"] for item in items if isinstance(item, dict) and item.get("type") == "text"
                    and isinstance(item.get("text"), str)).strip() if isinstance(items, list) else ""


def _is_answer(value: dict) -> bool:
    """What `get_agent_final_response` stops at, scanning the log from its end."""
    return value["source"] == "agent" and (value["kind"] == "MessageEvent"
                                           or value["kind"] == ACTION and value.get("tool_name") == FINISH)


def _ancestors_of_other_branches(records: list[Record], branch: tuple[int, ...], events: list[int]) -> set[int]:
    on_branch = set(branch)
    by_id: dict[str, int] = {}
    for k, i in enumerate(events):
        by_id.setdefault(records[i][1]["id"], k)
    kept: set[int] = set()
    for k, i in enumerate(events):
        if i in on_branch or records[i][1]["kind"] == STATE_UPDATE:
            continue
        at = _parent(records, events, by_id, k)
        while at is not None and events[at] not in kept:
            kept.add(events[at])
            at = _parent(records, events, by_id, at)
    return kept


def _parent(records: list[Record], events: list[int], by_id: dict[str, int], k: int) -> int | None:
    """`EventLog._effective_parent_id`, as a position in `events`."""
    parent = records[events[k]][1].get("parent_id")
    if parent == ROOT_PARENT_ID:
        return None
    return by_id.get(parent) if isinstance(parent, str) else (k - 1 if k else None)


def _judged_alike(records: list[Record], branch: tuple[int, ...], events: list[int], view: set[int],
                  dropped: set[int]) -> set[int]:
    """`dropped` less what keeps the SDK's other readers of the raw log as they were: the answers
    of an action kept, and every batch and tool loop of the view as whole as it was on the
    branch (`enforce_properties` compares the view with all its events), until nothing changes."""
    batches: dict[Any, set[int]] = {}
    for i in branch:
        if records[i][1]["kind"] == ACTION:
            batches.setdefault(records[i][1].get("llm_response_id"), set()).add(i)
    position = {i: k for k, i in enumerate(branch)}
    loops = _loop_members(records, branch)
    while True:
        before = len(dropped)
        actions = [records[i][1] for i in events if records[i][1]["kind"] == ACTION and i not in dropped]
        ids, calls = {a["id"] for a in actions}, {a.get("tool_call_id") for a in actions}
        dropped = {i for i in dropped if not (records[i][1]["kind"] in OBSERVATIONS
                                              and (records[i][1].get("action_id") in ids
                                                   or records[i][1].get("tool_call_id") in calls))}
        for members in batches.values():
            if members & view and members & dropped:
                dropped -= members
        left = _loop_members(records, tuple(i for i in branch if i not in dropped))
        for i in view:
            if loops.get(i) != left.get(i):  # a part forgotten, or loops run together once a separator went
                touched = [position[j] for j in loops.get(i, set()) | left.get(i, set())]
                dropped -= set(branch[min(touched):max(touched) + 1])
        if len(dropped) == before:
            return dropped


def _loop_members(records: list[Record], branch: tuple[int, ...]) -> dict[int, frozenset[int]]:
    """Each event of a tool loop (`ToolLoopAtomicityProperty._tool_loops`) → the events of its loop."""
    record_of = {records[i][1]["id"]: i for i in branch}
    out: dict[int, frozenset[int]] = {}
    for loop in tool_loops([records[i][1] for i in branch]):
        members = frozenset(record_of[id_] for id_ in loop)
        out.update(dict.fromkeys(members, members))
    return out


def _relinked(records: list[Record], events: list[int], dropped: set[int]) -> dict[int, dict[str, bytes | None]]:
    """A kept event whose `parent_id` names a dropped one names its nearest kept ancestor. An
    event without one follows the file before it, which is what it followed (the SDK stamps every
    event from its first stamped one on)."""
    skip: dict[str, Any] = {}
    for k, i in enumerate(events):
        if i in dropped:  # never one of the first events: k > 0
            parent = records[i][1].get("parent_id")
            skip[records[i][1]["id"]] = parent if isinstance(parent, str) else records[events[k - 1]][1]["id"]
    edits: dict[int, dict[str, bytes | None]] = {}
    for i in events:
        parent = records[i][1].get("parent_id")
        if i not in dropped and isinstance(parent, str) and (new := surviving_parent(parent, skip)) != parent:
            edits[i] = {"parent_id": dumps(new, indent=False)}
    return edits
