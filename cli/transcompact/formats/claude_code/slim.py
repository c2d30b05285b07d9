"""What of a Claude Code log `claude --resume` never sends (`slim`), found in Claude Code 2.1.112
and 2.1.332 and judged by both (tests/test_claude_resume.py: the request from the slimmed log is
the request from the original).

Claude Code builds its request from one chain: from the newest leaf back along `parentUuid` to
the last `compact_boundary`, progress lines passed over, with the lines of a response split by
`message.id`; 2.1.332 adds the lines below the leaf that are no user or assistant line (a
`local_command`'s `/model` and its output, sent as text). What is kept:
- the chain's lines, its boundary, the lines read with them (`LogSource.order`) and those below
  the leaf, each as it was but for the members below;
- every line of a type it reads besides (the last of each session setting: title, tag, mode…;
  a `summary` of a kept leaf; `content-replacement` and the types transcompact does not know).
What is dropped:
- the history before the last compaction, branches the chain does not take (rewinds,
  sidechains), and progress lines, which Claude Code never loads (a child of one hangs from its
  parent, as Claude Code links it);
- file-history snapshots (what `/rewind` restores files from) and queued-prompt records;
- the UI's copy of each tool result (`toolUseResult`), but those Claude Code reads when it
  resumes: a `CronCreate` result's (the session's scheduled prompts), and one that names a task
  it started (a background shell, an agent, a workflow: 2.1.332 tells the model of one left
  running);
- the fields every line repeats (`cwd`, `version`, `gitBranch`, …): the first line keeps those
  Claude Code reads from the head of a session, the last those it reads from its tail, and the
  first line with a `slug` (the plan file's name) keeps it; the leaf keeps its session (by which
  Claude Code finds the session's title): the leaf of the slimmed log, which a branch dropped
  may have moved (`_leaf_once_slimmed`), so that slimming it again changes nothing. `timestamp`, `uuid`, `message`
  and every field that says what a line is stay on every line.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import orjson

from ...core.jsondata import PartialLine, Record, dumps, line_bytes
from ...core.model import Transcript
from .._log import Slimming, string_or_none, surviving_parent
from .reader import TRANSCRIPT_TYPES, LogSource, find_chain, line_type, whole_value

# Session settings Claude Code keeps the last of (by session), read when it resumes or lists sessions.
SETTINGS = frozenset({"custom-title", "ai-title", "tag", "agent-name", "agent-color", "agent-setting", "last-prompt",
                      "mode", "permission-mode", "worktree-state", "pr-link"})
# Lines no resume reads: what `/rewind` restores files from, and prompts queued while a turn ran.
UNREAD = {"file-history-snapshot": "file-history snapshots (what /rewind restores files from)",
          "queue-operation": "queued-prompt records"}
# What every line repeats. The head keeps what Claude Code reads from a session's start (the
# project's directory, how it was started), the tail what it reads from its end (the branch).
ENVELOPE = ("cwd", "version", "gitBranch", "userType", "slug", "requestId", "entrypoint", "sessionKind", "promptId",
            "sessionId")
AT_THE_HEAD = frozenset({"cwd", "version", "entrypoint", "sessionKind", "teamName", "sessionId"})
AT_THE_TAIL = frozenset({"gitBranch", "sessionId"})
FIELDS = {"toolUseResult": "the UI's copies of tool results", "isSidechain": "fields every line repeats",
          **dict.fromkeys(ENVELOPE, "fields every line repeats"), "parentUuid": "links past dropped lines"}
KEPT_COPIES = frozenset({"CronCreate"})  # whose result's copy Claude Code reads on resume
TAKEN = frozenset({*ENVELOPE, "toolUseResult"})  # the members slim may take out of a kept line
# A copy naming a task Claude Code started, which 2.1.332 reads on resume (`rbe`) by these fields.
TASK_FIELDS = frozenset({"backgroundTaskId", "task_id", "resumedAgentId", "revivedAgentId", "workflowName", "runId"})
# What the bytes of a line hold that a line read in part may need read whole for (a key however
# spaced before its colon): a result's copy, and in it what names a task (`_names_a_task`); the
# plan file's name; a scheduled prompt's call.
_COPY = re.compile(rb'"toolUseResult"\s*:')
_NAMES_A_TASK = re.compile(rb'"(?:%s)"\s*:|"async_launched"' % b"|".join(
    name.encode() for name in sorted({*TASK_FIELDS, "taskId", "forked"})))
_SLUG = re.compile(rb'"slug"\s*:')
_CRON = re.compile(rb'"CronCreate"')
BELOW = frozenset({"system", "attachment"})  # the types of line that hang below the leaf and are resumed (`_below`)


def slimming(transcript: Transcript) -> Slimming:
    source: LogSource = transcript.source
    records = source.records
    if not source.chain or source.leaf is None or records[source.leaf][1].get("isSidechain") is True:
        return Slimming()  # nothing Claude Code resumes (a subagent's log is all sidechain): left as it is
    # What places a line on the chain is in every value read (a line parsed in part keeps it).
    values = [r[1] for r in records]
    kept = {i for i in source.chain if line_type(values[i]) != "progress"} | set(source.order)
    if source.root is not None:
        kept.add(source.root)
    kept |= _below(source.leaf, values)
    dropped: dict[int, str] = {}
    last_setting: dict[tuple[str, Any], int] = {}
    for index, value in enumerate(values):
        kind = line_type(value) if isinstance(value, dict) else None
        if kind in TRANSCRIPT_TYPES and index not in kept:
            dropped[index] = _lost_with(index, kind, source)
        elif kind in UNREAD:
            dropped[index] = UNREAD[kind]
        elif kind in SETTINGS:
            setting = (kind, string_or_none(value.get("sessionId")))
            if setting in last_setting:
                dropped[last_setting[setting]] = "titles and settings a later line replaced"
            last_setting[setting] = index
    kept_uuids = {values[i].get("uuid") for i in kept}
    for index, value in enumerate(values):
        if isinstance(value, dict) and line_type(value) == "summary" and string_or_none(value.get("leafUuid")) not in kept_uuids:
            dropped[index] = "titles of branches not kept"
    # The members of the lines kept, each line read whole one at a time (not the whole log at once),
    # and only where its bytes may hold what a line read in part does not show.
    held: dict[frozenset, frozenset] = {}
    order = sorted(kept)
    copied = frozenset().union(*(_Members.of(whole_value(i, records[i], transcript.name), held).copies_read
                                 for i in order if _may_hold(records[i], _CRON)))
    answering = tuple(orjson.dumps(id) for id in copied)
    shown = {i: _Members.of(whole_value(i, records[i], transcript.name), held) if _may_name(records[i], answering)
             else _Members.in_part(values[i]) for i in order}
    slug_at = next((i for i in order if _may_hold(records[i], _SLUG)
                    and "slug" in whole_value(i, records[i], transcript.name)), None)
    # A dropped line may be a copy of a kept one (its uuid): it is not passed over.
    skip = {values[i].get("uuid"): values[i].get("parentUuid") for i in dropped
            if isinstance(values[i], dict) and line_type(values[i]) in TRANSCRIPT_TYPES and values[i].get("uuid") not in kept_uuids}
    leaf = _leaf_once_slimmed(records, dropped, skip, transcript.name)
    return Slimming(dropped, _edits(values, shown, copied, slug_at, skip, source.leaf if leaf is None else leaf), FIELDS)


def _leaf_once_slimmed(records: list[Record], dropped: dict[int, str], skip: dict[Any, Any], name: str) -> int | None:
    """The leaf `claude --resume` picks in the slimmed log (`find_chain` of the lines kept, each
    linked past the dropped ones): a branch dropped can leave a line of the same turn newer than
    the leaf without a child, which is then the leaf. What `_edits` keeps on the leaf goes there,
    so that slimming the log again changes nothing."""
    remaining: list[Record] = []
    for index, (line, value) in enumerate(records):
        if index in dropped or not isinstance(value, dict):
            remaining.append((line, None))
            continue
        parent = value.get("parentUuid")
        relinked = surviving_parent(parent, skip)
        remaining.append((line, value if relinked == parent else {**value, "parentUuid": relinked}))
    return find_chain(remaining, name)[2]


class _Members(NamedTuple):
    """What slim looks at of a kept line's members: the keys of those it may take out, whether its
    `toolUseResult` copy names a task, the calls its tool results answer and those it makes whose
    result's copy Claude Code reads."""

    keys: frozenset[str]
    sidechain_false: bool
    names_a_task: bool
    answers: frozenset[str]
    copies_read: frozenset[str]

    @classmethod
    def in_part(cls, value: dict) -> _Members:
        """A line read in part whose bytes name no task and no call whose copy is read: any member
        slim may take out (one the line does not hold is no cut)."""
        return _IN_PART[value.get("isSidechain") is False]

    @classmethod
    def of(cls, value: dict, held: dict[frozenset, frozenset]) -> _Members:
        """`held`: the sets made so far, each held once (most lines have the same keys, and no call)."""
        message = value.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        answers = frozenset(b["tool_use_id"] for b in blocks if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str))
        copies_read = frozenset(b["id"] for b in blocks if b.get("type") == "tool_use" and string_or_none(b.get("name")) in KEPT_COPIES
                                and isinstance(b.get("id"), str))
        keys = TAKEN.intersection(value)
        return cls(held.setdefault(keys, keys), value.get("isSidechain") is False, _names_a_task(value.get("toolUseResult")),
                   held.setdefault(answers, answers), held.setdefault(copies_read, copies_read))


# The members of a line read in part, by whether it says `isSidechain: false`: two, held once.
_IN_PART = {sidechain_false: _Members(TAKEN, sidechain_false, False, frozenset(), frozenset()) for sidechain_false in (False, True)}


def _lost_with(index: int, kind: str, source: LogSource) -> str:
    if kind == "progress":
        return "progress lines (tools' live output)"
    if source.root is not None and index < source.root:
        return "the history before the last compaction (scroll-back)"
    return "branches not resumed (rewinds, sidechains)"


def _may_name(record: Record, answering: tuple[bytes, ...]) -> bool:
    """Whether a line may name a task (in its result's copy, which its bytes hold from the first
    `"toolUseResult":` on) or answer a call whose copy is read."""
    if type(record[1]) is not PartialLine:
        return True
    line = line_bytes(record)  # searched where it is; copied only to look for a call's id
    copy = _COPY.search(line)
    if copy is not None and _NAMES_A_TASK.search(line, copy.end()) is not None:
        return True
    if not answering:
        return False
    text = bytes(line)
    return any(id in text for id in answering)


def _may_hold(record: Record, marker: re.Pattern[bytes]) -> bool:
    """Whether a line may hold what `marker` finds: a line read whole does; one read in part where
    its bytes do (searched where they are, not copied)."""
    return type(record[1]) is not PartialLine or marker.search(line_bytes(record)) is not None


def _edits(values: list[Any], shown: dict[int, _Members], copied: frozenset[str], slug_at: int | None,
           skip: dict[Any, Any], leaf: int) -> dict[int, dict[str, bytes | None]]:
    kept = list(shown)
    first, last = kept[0], kept[-1]
    special = {first, last, leaf, slug_at}  # the lines that keep some of what every line repeats
    edits: dict[int, dict[str, bytes | None]] = {}
    same: dict[tuple, dict[str, bytes | None]] = {}  # most lines take out the same members: one edit, held once
    usual: dict[_Members, dict[str, bytes | None]] = {}  # the edit of a line in none of those places, by its members
    for index, members in shown.items():
        parent = values[index].get("parentUuid")
        relinked = (new := surviving_parent(parent, skip)) != parent
        if not relinked and index not in special and (edit := usual.get(members)) is not None:
            if edit:
                edits[index] = edit
            continue
        edit = {}
        if relinked:
            edit["parentUuid"] = dumps(new, indent=False)
        if "toolUseResult" in members.keys and members.answers.isdisjoint(copied) and not members.names_a_task:
            edit["toolUseResult"] = None
        for key in ENVELOPE:
            if key in members.keys and not (index == first and key in AT_THE_HEAD or index in (last, leaf) and key in AT_THE_TAIL
                                            or index == slug_at and key == "slug"):
                edit[key] = None
        if members.sidechain_false:
            edit["isSidechain"] = None
        if not relinked:  # (a relinked line's is its own)
            edit = same.setdefault(tuple(edit.items()), edit)
            if index not in special:
                usual[members] = edit
        if edit:
            edits[index] = edit
    return edits


def _below(leaf: int, values: list[Any]) -> set[int]:
    """The lines that hang below the leaf and are no user, assistant or progress line, and those
    below them: Claude Code 2.1.332 resumes them with the chain."""
    children: dict[str, list[int]] = {}  # of the lines that may be found: few, not every line's
    for index, value in enumerate(values):
        if isinstance(value, dict) and line_type(value) in BELOW and isinstance(value.get("parentUuid"), str):
            children.setdefault(value["parentUuid"], []).append(index)
    found: set[int] = set()
    waiting = [values[leaf].get("uuid")]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in found:
                found.add(child)
                waiting.append(values[child].get("uuid"))
    return found


def _names_a_task(copy: Any) -> bool:
    """Whether a result's copy names a task it started: a background shell, a task with a timeout,
    an agent launched in the background, forked or resumed, a workflow."""
    return isinstance(copy, dict) and (not TASK_FIELDS.isdisjoint(copy) or "taskId" in copy and "timeoutMs" in copy
                                       or copy.get("status") == "async_launched"
                                       or bool(copy.get("forked") and copy.get("background")))
