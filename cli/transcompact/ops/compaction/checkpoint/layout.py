"""The checkpoint's sections, one record each (`Section`), in the order the checkpoint shows them
(`LAYOUT`): how a value is written as an item and read back, how an earlier checkpoint's values
are taken in, what the section keeps within the room and when it takes it (`rank`), the kind of
fact it counts, and whether it follows a model's summary too (the artifact trail). The readers
of an earlier checkpoint, the order of the budget, the counts of the report and the artifact
trail are derived from these records.

The state the sections show (`Merged`) is the new part's facts with an earlier checkpoint's
taken in: the newer state replaces the older (the task list, each command's last run, the open
problem), lists join (commits, facts, tools), and the earlier facts are trimmed first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from ....core.summary_text import quoted
from ..output_errors import clipped
from ..work_state import CANCELLED, DONE, IN_PROGRESS, PENDING, Commit, Problem, Run, Task, WorkState, run_key, same_file
from .facts import Facts, clipped_command
from .room import Room, head_and_tail

GOAL, PROGRESS, CONTEXT = "Goal", "Progress", "Critical Context"
TRAIL = "Artifact trail (from the compacted part)"  # what follows a model's summary (`trail`)
EARLIER = "Earlier summary"  # the heading of what a model wrote, when it is kept by its start and end
NO_GOAL = "(no request of the user's in the compacted part)"
OPENING_IS_GOAL = "The request this session began with, quoted whole at the end of this summary."
DONE_TASK_CHARS = 100  # a task done is kept short: the work it names is behind us
SINCE = "- Since these words: "  # after the last words, what later runs and commits did
# The kinds of fact, in the order the report and `Not kept` name them.
KINDS = ("tasks", "commits", "files modified", "files read", "runs", "errors", "commands", "settings", "tools")

V = TypeVar("V")
Written = list[tuple[str, str | None, list[str]]]  # (## heading, ### heading, items) of what a model wrote


@dataclass
class Merged:
    """What the sections show: the new part's facts (`new`), an earlier checkpoint's taken in."""

    new: Facts
    goal: str | None  # an earlier summary's goal, which stays the goal
    compacted: int
    tools: Counter
    omitted: Counter
    environment: dict[str, str]
    work: WorkState
    last_state: str | None
    pools: dict[str, list[str]]  # per fact list, the earlier checkpoint's items (older than the new)
    written: Written  # sections a model wrote, kept within the budget

    @classmethod
    def of(cls, facts: Facts) -> Merged:
        """The new part's facts alone."""
        return cls(facts, None, facts.messages, Counter(facts.tools), Counter(), dict(facts.environment), facts.work,
                   facts.last_state, {fact_list.kind: [] for fact_list in FACT_LISTS}, [])


Keep = Callable[["Section[Any]", Merged, Room], list[str]]


@dataclass(frozen=True, eq=False, kw_only=True)
class Section(Generic[V]):
    """One section of the checkpoint, a `### ` heading and its items."""

    heading: str
    part: str  # the `## ` part it is in: PROGRESS or CONTEXT
    item: Callable[[V], str]  # a value as the checkpoint writes it
    parse: Callable[[str], V | None] | None  # an item read back, None when not one of ours; None: not read back
    merge: Callable[[Merged, list[V]], None] | None  # an earlier checkpoint's values taken into the state
    keep: Keep | None  # its items within the room; None: a fact list, chosen with the others
    rank: int | None  # the order in which it takes its room, before what a model wrote; None: after the fact lists
    kind: str | None = None  # what `Not kept` counts it as (one of KINDS)
    held: Callable[[Facts], int] | None = None  # how many the dropped part held, for the report; None: not counted
    in_trail: bool = False  # after a model's summary too, where the summary does not say it
    latest_only: bool = False  # when an earlier summary repeats it, its last is read (a state), else all are
    keeps_foreign: bool = False  # an item under its heading that is not one of ours is kept as written
    aliases: tuple[str, ...] = ()  # the headings earlier versions gave it


def as_written(item: str) -> str:
    return item


@dataclass(frozen=True, eq=False, kw_only=True)
class FactList(Section[str]):
    """A list of facts found in the messages (errors, commands, files), chosen together within the
    room after our other sections and what a model wrote. Its values are its items as written: an
    earlier checkpoint's are kept so, not read apart."""

    found: Callable[[Facts], tuple[tuple[int, str], ...]]  # (message index, text) in the new part
    fact_item: Callable[[str], str]  # a found fact as its item
    kind: str
    item: Callable[[str], str] = as_written
    parse: Callable[[str], str | None] | None = as_written
    keep: Keep | None = None
    rank: int | None = None
    in_trail: bool = True


# --- what a section keeps within the room ------------------------------------------------------


def fitted(values: Callable[[Merged], Iterable[V]]) -> Keep:
    """The items of `values` that fit, in that order; the others are counted as not kept."""
    def keep(section: Section[Any], state: Merged, room: Room) -> list[str]:
        return room.fit([section.item(value) for value in values(state)], section.kind)
    return keep


def newest_kept_first(values: Callable[[Merged], Sequence[V]]) -> Keep:
    """As `fitted`, `values` oldest first: the newest are the ones kept."""
    def keep(section: Section[Any], state: Merged, room: Room) -> list[str]:
        return room.fit([section.item(value) for value in reversed(values(state))], section.kind)[::-1]
    return keep


def kept_whole(values: Callable[[Merged], Iterable[V]]) -> Keep:
    """Every item of `values`, each taking what room it finds."""
    def keep(section: Section[Any], state: Merged, room: Room) -> list[str]:
        items = [section.item(value) for value in values(state)]
        for item in items:
            room.take(item)
        return items
    return keep


def _last_words(section: Section[Any], state: Merged, room: Room) -> list[str]:
    """The assistant's last words, quoted, their start and end within an eighth of the budget,
    or less when the room left is smaller (they are kept, shorter, even then)."""
    if state.last_state is None:
        return []
    last_state = quoted(head_and_tail(state.last_state, max(400, room.chars // 8)))
    if not room.take(last_state):
        last_state = quoted(head_and_tail(state.last_state, max(200, room.left - 10)))
        room.left -= len(last_state)
    # What the work did after these words, so that they are not read as where it stands.
    since = f"{SINCE}{'; '.join(state.new.since_last_state)}" if state.new.since_last_state else None
    return [last_state, *([since] if since and room.take(since) else [])]


def _what_did_not_fit(section: Section[Any], state: Merged, room: Room) -> list[str]:
    """How many of each kind did not fit, in this checkpoint and in the earlier ones."""
    for kind in COUNTED:
        room.omitted[kind] += state.omitted[kind]
    counts = tuple((room.omitted[kind], kind) for kind in KINDS if room.omitted[kind])
    return [section.item(NotKept(counts, room.tokens))] if counts else []


# --- the sections, each after what it needs of its own ---------------------------------------

_DONE = re.compile(r"^- \[x\] (\d+) earlier messages were compacted without a model")


def _merge_done(state: Merged, earlier: list[int]) -> None:
    state.compacted += sum(earlier)  # all compactions without a model together


COMPACTED: Section[int] = Section(
    heading="Done", part=PROGRESS,
    item=lambda compacted: (f"- [x] {compacted} earlier messages were compacted without a model (emergency mode); "
                            "this checkpoint keeps what they held."),
    parse=lambda item: int(match[1]) if (match := _DONE.match(item)) else None, merge=_merge_done,
    keep=kept_whole(lambda state: [state.compacted]), rank=10,
    keeps_foreign=True)  # a model's summary has a Done section too

_TASK = re.compile(r"^- \[([ x-])\] (?:\((in progress|cancelled)\) )?(.*)$", re.S)


def _task_item(task: Task) -> str:
    mark = {DONE: "x", CANCELLED: "-"}.get(task.status, " ")
    note = f"({task.status}) " if task.status in (IN_PROGRESS, CANCELLED) else ""
    text = clipped(task.text, DONE_TASK_CHARS) if task.status in (DONE, CANCELLED) else task.text
    return f"- [{mark}] {note}{text}"


def _parse_task(item: str) -> Task | None:
    match = _TASK.match(item)
    if match is None:
        return None
    mark, note, text = match.groups()
    return Task(text.strip(), note or {"x": DONE, "-": CANCELLED}.get(mark, PENDING))


def _merge_tasks(state: Merged, earlier: list[Task]) -> None:
    """The new part's task list; the earlier one when the new part has none."""
    new = state.new.work
    if new.tasks is not None:
        state.work = replace(state.work, tasks=new.tasks)
    else:  # the earlier list, which a commit of the new part may have overtaken
        state.work = replace(state.work, tasks=tuple(earlier) or None, committed_since_tasks=bool(new.commits))


TASKS: Section[Task] = Section(
    heading="Tasks (the agent's last list)", part=PROGRESS, item=_task_item, parse=_parse_task, merge=_merge_tasks,
    keep=fitted(lambda state: state.work.tasks or ()), rank=20,  # in the agent's order
    kind="tasks", held=lambda facts: len(facts.work.tasks or ()), in_trail=True, latest_only=True)

_COMMIT = re.compile(r"^- (?:`([0-9a-f]{7,40})` )?(.*)$", re.S)


def _merge_commits(state: Merged, earlier: list[Commit]) -> None:
    state.work = replace(state.work, commits=tuple(dict.fromkeys((*earlier, *state.new.work.commits))))


COMMITS: Section[Commit] = Section(
    heading="Commits", part=PROGRESS,
    item=lambda commit: f"- `{commit.hash}` {commit.subject}" if commit.hash else f"- {commit.subject}",
    parse=lambda item: Commit(match[2].strip(), match[1]) if (match := _COMMIT.match(item)) else None,
    merge=_merge_commits, keep=newest_kept_first(lambda state: state.work.commits), rank=30,
    kind="commits", held=lambda facts: len(facts.work.commits), in_trail=True, latest_only=True)

NEXT_STEP: Section[str] = Section(
    heading="Next step", part=PROGRESS, item=lambda step: f"- {clipped(step, 600)}",
    parse=None, merge=None,  # worked out again from the merged tasks
    keep=fitted(lambda state: [state.work.next_step] if state.work.next_step else []), rank=40, kind="tasks")


def _merge_last_state(state: Merged, earlier: list[str]) -> None:
    """The earlier last words, when the new part has none, kept as a model's text (quoted already)."""
    last_state = "\n".join(earlier)
    if state.last_state is None and last_state:
        state.written.insert(0, (PROGRESS, LAST_STATE.heading, [last_state]))


LAST_STATE: Section[str] = Section(
    heading="Last state (the assistant's last words before this checkpoint)", part=PROGRESS,
    item=as_written, parse=as_written, merge=_merge_last_state, keep=_last_words, rank=60, latest_only=True)

_SETTING = re.compile(r"^- ([^:\n]+): (.*)$")


def _merge_environment(state: Merged, earlier: list[tuple[str, str]]) -> None:
    state.environment = {**dict(earlier), **state.environment}  # the newer value of a setting replaces the earlier one


ENVIRONMENT: Section[tuple[str, str]] = Section(
    heading="Environment", part=CONTEXT, item=lambda setting: f"- {setting[0]}: {setting[1]}",
    parse=lambda item: (match[1], match[2]) if (match := _SETTING.match(item)) else None, merge=_merge_environment,
    keep=fitted(lambda state: state.environment.items()), rank=80, kind="settings")

_PROBLEM = re.compile(r"^- `([^`\n]+)` failed: (.*)$", re.S)


def _problem_item(problem: Problem) -> str:
    lines = clipped_command(problem.command).split("\n")
    command = clipped(" ".join(lines[0].split()).replace("`", "'"), 300)
    if len(lines) > 1:  # (its first line: said to be one)
        command += f" … ({len(lines) - 1} more lines)"
    return f"- `{command}` failed: {' '.join(problem.error.split())}"


def _merge_problem(state: Merged, earlier: list[Problem]) -> None:
    """The new part's open problem; the earlier one when the new part has none, unless the same
    command ran again since."""
    new = state.new.work
    problem = new.problem
    if problem is None and earlier and run_key(earlier[0].command) not in {run.key for run in new.runs}:
        problem = earlier[0]
    state.work = replace(state.work, problem=problem)


PROBLEM: Section[Problem] = Section(
    heading="Open problem (nothing since succeeded at it)", part=CONTEXT, item=_problem_item,
    parse=lambda item: Problem(match[1], match[2]) if (match := _PROBLEM.match(item)) else None, merge=_merge_problem,
    keep=fitted(lambda state: [state.work.problem] if state.work.problem else []), rank=50,
    kind="errors", in_trail=True, latest_only=True)

_RUN = re.compile(r"^- `([^`\n]+)`(?: \((failed)\))?: (.*)$", re.S)


def _merge_runs(state: Merged, earlier: list[Run]) -> None:
    """The new part's runs, then the earlier runs of other commands."""
    new_runs = state.new.work.runs
    keys = {run.key for run in new_runs}
    state.work = replace(state.work, runs=(*new_runs, *(run for run in earlier if run.key not in keys)))


RUNS: Section[Run] = Section(
    heading="Last test and build runs (newest first)", part=CONTEXT,
    item=lambda run: f"- `{run.command}`{' (failed)' if run.failed else ''}: {run.result}",
    parse=lambda item: Run(match[1], match[3], bool(match[2])) if (match := _RUN.match(item)) else None,
    merge=_merge_runs, keep=fitted(lambda state: state.work.runs), rank=70,
    kind="runs", held=lambda facts: len(facts.work.runs), in_trail=True, latest_only=True)


def _code_item(text: str) -> str:
    if "\n" not in text and "`" not in text:
        return f"- `{text}`"
    fence = "~~~~" if "```" in text else "```"
    return "- " + fence + "\n" + "\n".join("  " + line for line in text.split("\n")) + "\n  " + fence


def _pooled(kind: str) -> Callable[[Merged, list[str]], None]:
    """An earlier checkpoint's facts of `kind`: older than the new ones, trimmed first."""
    def merge(state: Merged, earlier: list[str]) -> None:
        state.pools[kind] += earlier
    return merge


def _files_modified(facts: Facts) -> tuple[tuple[int, str], ...]:
    modified = set(facts.work.modified)
    return tuple((at, path) for at, path in facts.files if path in modified)


def _files_read(facts: Facts) -> tuple[tuple[int, str], ...]:
    """The files named but not modified, those a later `rm` deleted aside."""
    modified, deleted = set(facts.work.modified), facts.work.deleted
    return tuple((at, path) for at, path in facts.files
                 if path not in modified and not any(same_file(path, gone) for gone in deleted))


def distinct(found: tuple[tuple[int, str], ...]) -> int:
    return len({text for _, text in found})


ERRORS = FactList(
    heading="Errors seen (newest first)", part=CONTEXT, merge=_pooled("errors"), kind="errors",
    held=lambda facts: distinct(facts.errors), found=lambda facts: facts.errors,
    fact_item=lambda text: "- " + " ".join(text.split("\n")))
COMMANDS = FactList(
    heading="Commands run (newest first)", part=CONTEXT, merge=_pooled("commands"), kind="commands",
    held=lambda facts: distinct(facts.commands), found=lambda facts: facts.commands, fact_item=_code_item)
FILES_MODIFIED = FactList(
    heading="Files modified (newest first)", part=CONTEXT, merge=_pooled("files modified"), kind="files modified",
    held=lambda facts: len(set(facts.work.modified)),  # patch targets too, which name no path key
    found=_files_modified, fact_item=_code_item)
FILES_READ = FactList(
    heading="Files read (newest first)", part=CONTEXT, merge=_pooled("files read"), kind="files read",
    held=lambda facts: distinct(_files_read(facts)), found=_files_read, fact_item=_code_item,
    aliases=("Files touched (newest first)",))  # one list of both files modified and read, once

_TOOL_COUNT = re.compile(r"^- (.+) × (\d+)$")


def _merge_tools(state: Merged, earlier: list[tuple[str, int]]) -> None:
    for name, count in earlier:
        state.tools[name] += count


TOOLS: Section[tuple[str, int]] = Section(
    heading="Tools used", part=CONTEXT, item=lambda tool: f"- {tool[0]} × {tool[1]}",
    parse=lambda item: (match[1], int(match[2])) if (match := _TOOL_COUNT.match(item)) else None, merge=_merge_tools,
    keep=fitted(lambda state: sorted(state.tools.items(), key=lambda kv: (-kv[1], kv[0]))), rank=90,  # most called first
    kind="tools")


@dataclass(frozen=True)
class NotKept:
    counts: tuple[tuple[int, str], ...]  # (how many, kind)
    budget_tokens: int


_NOT_KEPT = re.compile(r"(\d+) (files modified|files read|settings|tools|errors?|commands?|files?|tasks?|commits?|runs?)\b")
_NOT_KEPT_BUDGET = re.compile(r"in the checkpoint's ([\d,]+) tokens")
# What an earlier checkpoint's counts of what did not fit are carried over as: its files of either
# list as files read (earlier versions counted one list of "files"), its settings and tools not.
_CARRIED = {"files modified": "files read", "files read": "files read", "files": "files read", "file": "files read",
            "errors": "errors", "error": "errors", "commands": "commands", "command": "commands",
            "tasks": "tasks", "task": "tasks", "commits": "commits", "commit": "commits", "runs": "runs", "run": "runs"}


def _not_kept_item(not_kept: NotKept) -> str:
    said = ", ".join(f"{count} {kind}" for count, kind in not_kept.counts)
    return f"- {said} did not fit in the checkpoint's {not_kept.budget_tokens:,} tokens (--checkpoint-tokens)"


def _parse_not_kept(item: str) -> NotKept:
    budget = _NOT_KEPT_BUDGET.search(item)
    return NotKept(tuple((int(count), kind) for count, kind in _NOT_KEPT.findall(item)),
                   int(budget[1].replace(",", "")) if budget else 0)


def _merge_not_kept(state: Merged, earlier: list[NotKept]) -> None:
    for not_kept in earlier:
        for count, kind in not_kept.counts:
            if kind in _CARRIED:
                state.omitted[_CARRIED[kind]] += count


NOT_KEPT: Section[NotKept] = Section(
    heading="Not kept", part=CONTEXT, item=_not_kept_item, parse=_parse_not_kept, merge=_merge_not_kept,
    keep=_what_did_not_fit, rank=None)


@dataclass(frozen=True, eq=False)
class ModelText:
    """Where the sections a model wrote in an earlier summary go among ours: those under `part`,
    or (None) those under headings of their own. They take their share of the room after our
    ranked sections, before the fact lists."""

    part: str | None


MODEL_PROGRESS, MODEL_ELSEWHERE, MODEL_CONTEXT = ModelText(PROGRESS), ModelText(None), ModelText(CONTEXT)

# The checkpoint's sections in the order it shows them.
LAYOUT: tuple[Section[Any] | ModelText, ...] = (
    COMPACTED, TASKS, COMMITS, MODEL_PROGRESS, NEXT_STEP, LAST_STATE, MODEL_ELSEWHERE,
    ENVIRONMENT, PROBLEM, RUNS, MODEL_CONTEXT, ERRORS, COMMANDS, FILES_MODIFIED, FILES_READ, TOOLS, NOT_KEPT)
SECTIONS: tuple[Section[Any], ...] = tuple(entry for entry in LAYOUT if isinstance(entry, Section))
FACT_LISTS: tuple[FactList, ...] = tuple(section for section in SECTIONS if isinstance(section, FactList))
# The section that counts each kind of fact the report counts, held and kept (compact's `facts`).
COUNTING = {kind: section for kind in KINDS for section in SECTIONS if section.kind == kind and section.held is not None}
COUNTED = tuple(COUNTING)
