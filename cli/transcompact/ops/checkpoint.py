"""The checkpoint of the emergency mode: what the dropped part held, found without a model.

It has the sections of the model's checkpoint where it has facts: the Goal (the task as the
user first put it), Progress (what was compacted, where the work stands: the agent's task list,
its commits, the next step, and the assistant's last words before the cut), and Critical
Context: the environment the agent stated (an agent's own context message, such as Codex's
`<environment_context>`, which is not the user's goal), the open problem, the last run of each
test and build command, errors, commands, files modified and files only read, newest first,
and the tools used; everything within one token budget (`--checkpoint-tokens`), with a count
of what did not fit.

Errors come only from what reports one (`output_errors`); commands are kept whole. An earlier
summary is merged, not quoted: its facts join the new ones (older, so trimmed first), the newer
state replaces the older (the task list, each command's last run, the open problem), its goal
stays the goal, and what a model wrote is kept within the budget, its start and its end.

Trajectories whose actions are fenced commands in the assistant's text and whose observations
are user messages (SWE-agent, mini-swe-agent) are read as such: the first user message is the
task, the others are what the commands printed.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..core.model import ASSISTANT, USER, Message, ToolCall, ToolResult, named_paths
from ..core.summary_text import quoted, text_of
from .output_errors import clipped, command_of, error_lines, exit_failed, result_error_lines
from .summary_message import is_summary_message
from .work_state import CANCELLED, DONE, IN_PROGRESS, PENDING, Commit, Problem, Run, Task, WorkState, WorkStateFinder, check_key, is_git_commit, trajectory_runs

COMMAND_CHARS = 4000  # a command is kept whole up to this
HEREDOC_LINES = 3  # a here-document's body is kept up to this many lines, else counted
SHORT_FACT = 300  # facts up to this long go into the checkpoint before longer ones
DONE_TASK_CHARS = 100  # a task done is kept short: the work it names is behind us
EARLIER_SHARE = 0.4  # of the room left, what an earlier summary a model wrote may take (its start and end)

_FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.S)
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([A-Za-z_][\w.-]*)\2")
_DONE = re.compile(r"^- \[x\] (\d+) earlier messages were compacted without a model")
_NOT_KEPT = re.compile(r"(\d+) (errors?|commands?|files?|tasks?|commits?|runs?)\b")
_TOOL_COUNT = re.compile(r"^- (.+) × (\d+)$")
_SETTING = re.compile(r"^- ([^:\n]+): (.*)$")
_TASK = re.compile(r"^- \[([ x-])\] (?:\((in progress|cancelled)\) )?(.*)$", re.S)
_COMMIT = re.compile(r"^- (?:`([0-9a-f]{7,40})` )?(.*)$", re.S)
_RUN = re.compile(r"^- `([^`\n]+)`(?: \((failed)\))?: (.*)$", re.S)
_PROBLEM = re.compile(r"^- `([^`\n]+)` failed: (.*)$", re.S)

GOAL, PROGRESS, CONTEXT = "Goal", "Progress", "Critical Context"
DONE_HEADING, LAST_STATE = "Done", "Last state (the assistant's last words before this checkpoint)"
TASKS, COMMITS, NEXT_STEP = "Tasks (the agent's last list)", "Commits", "Next step"
PROBLEM, RUNS = "Open problem (nothing since succeeded at it)", "Last test and build runs (newest first)"
ERRORS, COMMANDS = "Errors seen (newest first)", "Commands run (newest first)"
MODIFIED, READ = "Files modified (newest first)", "Files read (newest first)"
TOOLS, NOT_KEPT, ENVIRONMENT = "Tools used", "Not kept", "Environment"
FACT_KINDS = {ERRORS: "errors", COMMANDS: "commands", MODIFIED: "files modified", READ: "files read"}
OLD_FILES = "Files touched (newest first)"  # an earlier checkpoint's name for both lists of files
EARLIER = "Earlier summary"
NO_GOAL = "(no request of the user's in the compacted part)"
OPENING_IS_GOAL = "The request this session began with, quoted whole at the end of this summary."
# The kinds of fact the report counts, held and kept (compact's `facts`).
COUNTED = ("tasks", "commits", "files modified", "files read", "runs", "errors", "commands")


@dataclass(frozen=True)
class Facts:
    """What the dropped part held, each list in the order it happened."""

    goal: str | None
    last_state: str | None
    errors: tuple[tuple[int, str], ...]  # (message index, the line)
    commands: tuple[tuple[int, str], ...]
    files: tuple[tuple[int, str], ...]  # every path a call named
    tools: Counter
    messages: int
    environment: tuple[tuple[str, str], ...] = ()  # (name, value) the agent's own context stated, newest value
    work: WorkState = field(default_factory=WorkState)
    user_texts: tuple[tuple[int, str], ...] = ()  # (message index, what the user wrote), as `user_texts` finds them


# --- finding the facts -----------------------------------------------------------------------


def head_and_tail(text: str, limit: int) -> str:
    """`text` whole, or its start and end around a marker, cut at words."""
    if len(text) <= limit:
        return text
    half = max(1, (limit - 40) // 2)
    head = text[:half]
    head = head[: head.rfind(" ")] if " " in head[half // 2:] else head
    tail = text[-half:]
    tail = tail[tail.find(" ") + 1:] if " " in tail[: half // 2] else tail
    return f"{head} […{len(text) - len(head) - len(tail)} characters…] {tail}"


def head_and_tail_lines(lines: list[str], limit: int) -> list[str]:
    """Whole lines from the start and the end of `lines` within `limit` characters, a count between."""
    if sum(len(line) + 1 for line in lines) <= limit:
        return lines
    head: list[str] = []
    tail: list[str] = []
    room = limit - 60
    front, back = 0, len(lines) - 1
    while front <= back:
        line = lines[front] if len(head) <= len(tail) else lines[back]
        if len(line) + 1 > room:
            break
        room -= len(line) + 1
        if len(head) <= len(tail):
            head.append(line)
            front += 1
        else:
            tail.insert(0, line)
            back -= 1
    left = back - front + 1
    return [*head, f"[… {left} lines of the earlier summary not kept …]", *tail] if left else [*head, *tail]


def without_heredoc_bodies(command: str) -> str:
    """The command with each long here-document's body replaced by its line count: the body is
    the content of a file the command writes (which is on disk), not what was run."""
    lines = command.split("\n")
    kept: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        kept.append(line)
        at += 1
        for match in _HEREDOC.finditer(line):
            strip_tabs, delimiter = match.group(1) == "-", match.group(3)
            end = next((i for i in range(at, len(lines))
                        if (lines[i].lstrip("\t") if strip_tabs else lines[i]) == delimiter), None)
            if end is None:  # `<<` that opens no here-document (a shift in a script)
                break
            body = lines[at:end]
            if len(body) > HEREDOC_LINES:  # a commit message's subject is its first line: keep it
                subject = [body[0]] if is_git_commit(lines[0]) else []
                kept += [*subject, f"[… {len(body) - len(subject)} lines of here-document …]"]
            else:
                kept += body
            kept.append(lines[end])
            at = end + 1
    return "\n".join(kept)


def clipped_command(command: str) -> str:
    return clipped(without_heredoc_bodies(command), COMMAND_CHARS)


def trajectory_command(message: Message) -> str | None:
    """The command an assistant message of a trajectory ran: SWE-agent's `action`, or its last fenced block."""
    if isinstance(message.raw, dict) and isinstance(message.raw.get("action"), str) and message.raw["action"].strip():
        return message.raw["action"].strip()
    blocks = _FENCE.findall(text_of(message))
    return blocks[-1].strip() or None if blocks else None


def is_trajectory(messages: Sequence[Message]) -> bool:
    """No tool calls, and most assistant messages run a command whose output comes back as a user message."""
    if any(m.call_ids or m.is_tool_result_message for m in messages):  # an unread message's view says
        return False
    assistants = [m for m in messages if m.role == ASSISTANT]
    running = sum(1 for m in assistants if trajectory_command(m.read_apart()))
    return running >= 2 and running * 2 >= len(assistants)


# Text an agent puts in the user's turn of its own: reminders, notifications of its background
# tasks, the wrappers of a slash command and what it printed, the caveat before them.
_INJECTED = re.compile(
    r"<(system-reminder|task-notification|command-name|command-message|command-args|local-command-stdout|"
    r"local-command-stderr|local-command-caveat|bash-notification|user-prompt-submit-hook)>.*?</\1>\s*"
    r"|^Caveat: The messages below were generated by the user while running local commands\..*?$\s*", re.S | re.M)


def own_words(text: str) -> str:
    """The user's text without what the agent injected into it."""
    return _INJECTED.sub("", text).strip() if "<" in text or "Caveat:" in text else text.strip()


def is_user_text(message: Message) -> bool:
    raw = message.raw if isinstance(message.raw, dict) else {}
    return (message.role == USER and not is_summary_message(message) and not raw.get("isMeta") and not raw.get("is_demo")
            and raw.get("message_type") != "observation")


def user_texts(messages: Sequence[Message], trajectory: bool,
               injected: Callable[[Message], str] | None = None) -> list[tuple[int, str]]:
    """(index, text) of what the user wrote, wherever it is (beside tool results too); in a
    trajectory only the task, the first user message. `injected` gives a message's text without
    what the agent wrote in it (a format's own lines), None to read it whole."""
    found = []
    for index, message in enumerate(messages):
        if text := user_text(message.read_apart(), injected):
            found.append((index, text))
            if trajectory:
                break
    return found


def user_text(message: Message, injected: Callable[[Message], str] | None = None) -> str:
    """What the user wrote in `message` ("" for nothing), as `user_texts` finds it."""
    if not is_user_text(message):
        return ""
    return own_words(injected(message) if injected is not None else text_of(message))


def find_facts(messages: Sequence[Message], names: dict[str, str], inputs: dict[str, object],
               injected: Callable[[Message], str] | None = None) -> Facts:
    """The facts of `messages` (the dropped part, an earlier summary's messages left out).

    `names` and `inputs` map a call id to its tool's name and input (from the whole transcript).
    Each message is read once, apart (`Message.read_apart`): the dropped part of a large log read
    lazily is not held read, only what is found in it.
    """
    trajectory = is_trajectory(messages)
    errors: list[tuple[int, str]] = []
    commands: list[tuple[int, str]] = []
    files: list[tuple[int, str]] = []
    tools: Counter = Counter()
    if trajectory:
        runs: list[tuple[str, str]] = []
        command = None
        for index, message in enumerate(messages):
            message = message.read_apart()
            if message.role == ASSISTANT and (command := trajectory_command(message)):
                commands.append((index, clipped_command(command)))
                tools["bash"] += 1
            elif message.role == USER and command is not None and index:
                text = text_of(message)
                errors += [(index, line) for line in error_lines(text, exit_failed(text))]
                runs.append((command, text))
                command = None
        work = trajectory_runs(runs)
        texts = user_texts(messages, trajectory, injected)
    else:
        finder = WorkStateFinder()
        texts = []
        for index, message in enumerate(messages):
            message = message.read_apart()
            for block in message.blocks:
                if isinstance(block, ToolCall):
                    tools[block.name] += 1
                    files += [(index, path) for path in named_paths(block.input)]
                    if (ran := command_of(block.input)) is not None:
                        commands.append((index, clipped_command(ran)))
                elif isinstance(block, ToolResult):
                    found = result_error_lines(block, names.get(block.tool_call_id), inputs.get(block.tool_call_id))
                    errors += [(index, line) for line in found]
            finder.add(message)
            if text := user_text(message, injected):
                texts.append((index, text))
        work = finder.state()
    last_state = next((text for m in reversed(messages)
                       if m.role == ASSISTANT and (text := text_of(m.read_apart()).strip())), None)
    return Facts(texts[0][1] if texts else None, last_state, tuple(errors), tuple(commands), tuple(files), tools,
                 len(messages), work=work, user_texts=tuple(texts))


# --- the sections of a summary, to merge into ---------------------------------------------------


def sections(body: str) -> list[tuple[str, str | None, list[str]]]:
    """(## heading, ### heading or None, items) of a Markdown summary; an item is a bullet with
    its indented lines, or the text before the first bullet."""
    groups: list[tuple[str, str | None, list[str]]] = []
    h2: str = ""
    h3: str | None = None
    items: list[str] = []

    def flush() -> None:
        cleaned = [item for item in items if item.strip()]
        if cleaned:
            cleaned[-1] = cleaned[-1].rstrip("\n")
        if cleaned or h3 is not None:
            groups.append((h2, h3, cleaned))

    for line in body.split("\n"):
        if line.startswith("## "):
            flush()
            h2, h3, items = line[3:].strip(), None, []
        elif line.startswith("### "):
            flush()
            h3, items = line[4:].strip(), []
        elif not items or re.match(r"^(?:[-*] |\d+\. )", line):
            items.append(line)
        else:
            items[-1] += "\n" + line
    flush()
    return groups


# --- the checkpoint --------------------------------------------------------------------------


def goal_of(body: str) -> str | None:
    """The text of a summary's Goal section."""
    return next(("\n".join(items) for h2, h3, items in sections(body) if h2 == GOAL and h3 is None and items), None)


@dataclass
class Merged:
    """The facts and the state of the new part, the earlier checkpoint's taken in."""

    goal: str | None
    compacted: int
    tools: Counter
    omitted: Counter
    environment: dict[str, str]
    work: WorkState
    last_state: str | None
    pools: dict[str, list[str]]  # per kind of fact, the earlier checkpoint's items (older than the new)
    written: list[tuple[str, str | None, list[str]]]  # sections a model wrote, kept within the budget


def _task_item(task: Task) -> str:
    mark = {DONE: "x", CANCELLED: "-"}.get(task.status, " ")
    note = f"({task.status}) " if task.status in (IN_PROGRESS, CANCELLED) else ""
    text = clipped(task.text, DONE_TASK_CHARS) if task.status in (DONE, CANCELLED) else task.text
    return f"- [{mark}] {note}{text}"


def _read_task(item: str) -> Task | None:
    match = _TASK.match(item)
    if match is None:
        return None
    mark, note, text = match.groups()
    status = note or {"x": DONE, "-": CANCELLED}.get(mark, PENDING)
    return Task(text.strip(), status)


def _commit_item(commit: Commit) -> str:
    return f"- `{commit.hash}` {commit.subject}" if commit.hash else f"- {commit.subject}"


def _run_item(run: Run) -> str:
    return f"- `{run.command}`{' (failed)' if run.failed else ''}: {run.result}"


def _problem_item(problem: Problem) -> str:
    command = " ".join(clipped_command(problem.command).split("\n")[0].split()).replace("`", "'")
    return f"- `{clipped(command, 300)}` failed: {' '.join(problem.error.split())}"


def merged(facts: Facts, earlier: list[tuple[str, str | None, list[str]]]) -> Merged:
    """The new facts with an earlier checkpoint's (or a model's summary's sections) taken in: lists
    joined, the newer state replacing the older."""
    state = Merged(None, facts.messages, Counter(facts.tools), Counter(), {}, facts.work, facts.last_state,
                   {kind: [] for kind in FACT_KINDS.values()}, [])
    found = _Earlier()
    for h2, h3, items in earlier:
        read = _READERS.get((h2, h3))
        if read is not None:
            read(state, found, items)
        elif h2 != GOAL:  # free text before any heading is a summary written some other way
            state.written.append((h2 or EARLIER, h3, items))
    if facts.last_state is None and found.last_state:
        state.written.insert(0, (PROGRESS, LAST_STATE, [found.last_state]))
    state.environment.update(facts.environment)  # the newer value of a setting replaces the earlier one
    state.work = _merged_work(facts.work, found)
    return state


@dataclass
class _Earlier:
    """The state an earlier checkpoint held, which the new state joins or replaces."""

    tasks: list[Task] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    problem: Problem | None = None
    last_state: str | None = None


def _merged_work(work: WorkState, earlier: _Earlier) -> WorkState:
    """The new work state with the earlier one's commits and runs of other commands; its task
    list and open problem when the new part has none."""
    new_runs = {run.key for run in work.runs}
    runs = (*work.runs, *(run for run in earlier.runs if run.key not in new_runs))
    problem = work.problem
    if problem is None and earlier.problem is not None and (check_key(earlier.problem.command) or earlier.problem.command) not in new_runs:
        problem = earlier.problem  # unless the same command ran again since
    return WorkState(work.tasks if work.tasks is not None else (tuple(earlier.tasks) or None),
                     tuple(dict.fromkeys((*earlier.commits, *work.commits))), work.modified, work.read, runs, problem)


# --- reading each section of an earlier checkpoint --------------------------------------------


def _read_goal(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    if items and items[0] != NO_GOAL:
        state.goal = "\n".join(items)


def _read_done(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    for item in items:
        if match := _DONE.match(item):
            state.compacted += int(match.group(1))
        else:
            state.written.append((PROGRESS, DONE_HEADING, [item]))


def _read_tasks(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    earlier.tasks = [t for item in items if (t := _read_task(item)) is not None]


def _read_commits(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    earlier.commits = [Commit(m.group(2).strip(), m.group(1)) for item in items if (m := _COMMIT.match(item))]


def _read_last_state(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    earlier.last_state = "\n".join(items)


def _read_next_step(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    pass  # worked out again from the merged tasks


def _read_environment(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    state.environment.update((match[1], match[2]) for item in items if (match := _SETTING.match(item)))


def _read_problem(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    earlier.problem = next((Problem(m.group(1), m.group(2)) for item in items if (m := _PROBLEM.match(item))), None)


def _read_runs(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    earlier.runs = [Run(m.group(1), m.group(3), bool(m.group(2))) for item in items if (m := _RUN.match(item))]


def _read_pool(kind: str) -> Callable[[Merged, _Earlier, list[str]], None]:
    """A list of facts (`kind`): older than the new ones, trimmed first."""
    def read(state: Merged, earlier: _Earlier, items: list[str]) -> None:
        state.pools[kind] += items
    return read


def _read_tools(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    for item in items:
        if match := _TOOL_COUNT.match(item):
            state.tools[match.group(1)] += int(match.group(2))


def _read_not_kept(state: Merged, earlier: _Earlier, items: list[str]) -> None:
    for item in items:
        for count, kind in _NOT_KEPT.findall(item):
            state.omitted[_plural(kind)] += int(count)


_READERS: dict[tuple[str, str | None], Callable[[Merged, _Earlier, list[str]], None]] = {
    (GOAL, None): _read_goal,
    (PROGRESS, DONE_HEADING): _read_done,
    (PROGRESS, TASKS): _read_tasks,
    (PROGRESS, COMMITS): _read_commits,
    (PROGRESS, LAST_STATE): _read_last_state,
    (PROGRESS, NEXT_STEP): _read_next_step,
    (CONTEXT, ENVIRONMENT): _read_environment,
    (CONTEXT, PROBLEM): _read_problem,
    (CONTEXT, RUNS): _read_runs,
    **{(CONTEXT, heading): _read_pool(kind) for heading, kind in FACT_KINDS.items()},
    (CONTEXT, OLD_FILES): _read_pool("files read"),  # an earlier checkpoint's one list of files
    (CONTEXT, TOOLS): _read_tools,
    (CONTEXT, NOT_KEPT): _read_not_kept,
}


def _plural(kind: str) -> str:
    return {"file": "files read", "files": "files read", "error": "errors", "command": "commands", "task": "tasks",
            "commit": "commits", "run": "runs"}.get(kind, kind)


def checkpoint(facts: Facts, budget_tokens: int, ratio: float, previous: str | None = None, goal_chars: int = 8000,
               counts: Counter | None = None) -> str:
    """The checkpoint's text: the facts within `budget_tokens`, merged into `previous` (a summary's
    body); the goal, which is the user's text, is cut to `goal_chars` when longer (and counted
    apart, with the user's words). `counts`, when given, gets per kind of fact how many the
    dropped part held (`held …`) and how many the checkpoint keeps (`kept …`).

    Each section takes its share of the room in the order of what matters most (the goal, which
    is counted apart, takes none), and the sections are then written in the checkpoint's order."""
    budget = int(budget_tokens / ratio) if ratio > 0 else 0
    state = merged(facts, sections(previous) if previous else [])
    work = state.work
    room = _Room(budget - 200)  # the headings
    done = _done(state, room)
    tasks = _tasks(work, room)
    commits = _commits(work, room)
    next_step = _next_step(work, room)
    problem = _open_problem(work, room)
    last_state = _last_state(state, budget, room)
    runs = _runs(work, room)
    shown = {run.command for run in work.runs if _run_item(run) in runs}  # a check's last run shows its command whole
    environment = _environment(state, room)
    tools = _tools(state, room)
    written = _fit_written(state.written, int(room.left * EARLIER_SHARE), room)
    chosen = _chosen_facts(facts, state, room, shown)
    progress, others, context = _written_sections(written)

    parts = _goal(state.goal if previous else facts.goal, previous is not None, goal_chars)
    parts += [f"## {PROGRESS}", *_section(DONE_HEADING, done), *_section(TASKS, tasks), *_section(COMMITS, commits)]
    parts += [*progress, *_section(NEXT_STEP, next_step), *_section(LAST_STATE, last_state), *others]
    parts += ["", f"## {CONTEXT}", *_section(ENVIRONMENT, environment), *_section(PROBLEM, problem), *_section(RUNS, runs)]
    parts += [*context, *_facts(chosen), *_section(TOOLS, tools), *_not_kept(state, room, budget_tokens)]
    parts += _no_tool_calls(facts, state)
    if counts is not None:
        _count(counts, facts, {"tasks": len(tasks), "commits": len(commits), "runs": len(runs),
                               **{kind: len(items) for kind, items in chosen.items()}}, shown)
    return "\n".join(parts) + "\n"


# --- the sections of the checkpoint: each takes what it keeps from the room -------------------


def _goal(goal: str | None, after_summary: bool, goal_chars: int) -> list[str]:
    """The user's first request, cut to `goal_chars`; none said after a summary (its goal stays
    the goal, and the request is one among the user's words)."""
    if goal:
        return [f"## {GOAL}", head_and_tail(goal, goal_chars), ""]
    return [] if after_summary else [f"## {GOAL}", NO_GOAL, ""]


def _done(state: Merged, room: _Room) -> list[str]:
    """What was compacted, all compactions without a model together."""
    done = (f"- [x] {state.compacted} earlier messages were compacted without a model (emergency mode); "
            "this checkpoint keeps what they held.")
    room.take(done)
    return [done]


def _tasks(work: WorkState, room: _Room) -> list[str]:
    """The agent's last task list, in its order."""
    return room.fit([_task_item(t) for t in work.tasks or ()], "tasks")


def _commits(work: WorkState, room: _Room) -> list[str]:
    """The commits, oldest first; the newest are the ones kept."""
    return room.fit([_commit_item(c) for c in reversed(work.commits)], "commits")[::-1]


def _next_step(work: WorkState, room: _Room) -> list[str]:
    return room.fit([f"- {clipped(work.next_step, 600)}"] if work.next_step else [], "tasks")


def _open_problem(work: WorkState, room: _Room) -> list[str]:
    return room.fit([_problem_item(work.problem)] if work.problem else [], "errors")


def _last_state(state: Merged, budget: int, room: _Room) -> list[str]:
    """The assistant's last words, quoted, their start and end within an eighth of the budget,
    or less when the room left is smaller (they are kept, shorter, even then)."""
    if state.last_state is None:
        return []
    last_state = quoted(head_and_tail(state.last_state, max(400, budget // 8)))
    if not room.take(last_state):
        last_state = quoted(head_and_tail(state.last_state, max(200, room.left - 10)))
        room.left -= len(last_state)
    return [last_state]


def _runs(work: WorkState, room: _Room) -> list[str]:
    """The last run of each test and build command, newest first."""
    return room.fit([_run_item(r) for r in work.runs], "runs")


def _environment(state: Merged, room: _Room) -> list[str]:
    return room.fit([f"- {name}: {value}" for name, value in state.environment.items()], "settings")


def _tools(state: Merged, room: _Room) -> list[str]:
    """Each tool with how often it was called, the most called first."""
    return room.fit([f"- {name} × {count}" for name, count in sorted(state.tools.items(), key=lambda kv: (-kv[1], kv[0]))],
                    "tools")


def _written_sections(written: list[tuple[str, str | None, list[str]]]) -> tuple[list[str], list[str], list[str]]:
    """The lines of the sections a model wrote (as kept by `_fit_written`): those under Progress,
    those under headings of their own (each heading once per run), those under Critical Context."""
    def lines(h3: str | None, items: list[str]) -> list[str]:
        return ([f"### {h3}"] if h3 else []) + items

    progress = [line for h2, h3, items in written if h2 == PROGRESS for line in lines(h3, items)]
    context = [line for h2, h3, items in written if h2 == CONTEXT for line in lines(h3, items)]
    others: list[str] = []
    current_h2 = PROGRESS
    for h2, h3, items in written:
        if h2 in (PROGRESS, CONTEXT):
            continue
        if h2 != current_h2:
            others += ["", f"## {h2}"]
            current_h2 = h2
        others += lines(h3, items)
    return progress, others, context


def _facts(chosen: dict[str, list[str]]) -> list[str]:
    """Errors, commands, files modified and files read, as `_chosen_facts` kept them."""
    return [line for heading, kind in FACT_KINDS.items() for line in _section(heading, chosen[kind])]


def _not_kept(state: Merged, room: _Room, budget_tokens: int) -> list[str]:
    """How many of each kind did not fit, in this checkpoint and in the earlier ones."""
    for kind in COUNTED:
        room.omitted[kind] += state.omitted[kind]
    omitted = [(room.omitted[kind], kind) for kind in (*COUNTED, "settings", "tools") if room.omitted[kind]]
    if not omitted:
        return []
    said = ", ".join(f"{count} {kind}" for count, kind in omitted)
    return [f"### {NOT_KEPT}", f"- {said} did not fit in the checkpoint's {budget_tokens:,} tokens (--checkpoint-tokens)"]


def _no_tool_calls(facts: Facts, state: Merged) -> list[str]:
    if facts.errors or facts.commands or facts.files or facts.tools or any(state.pools.values()):
        return []
    return ["- No tool calls in the compacted part."]


class _Room:
    """What is left of the budget, in characters, and what did not fit, per kind."""

    def __init__(self, left: int) -> None:
        self.left = left
        self.omitted: Counter = Counter()

    def take(self, item: str) -> bool:
        if len(item) + 1 > self.left:
            return False
        self.left -= len(item) + 1
        return True

    def fit(self, items: list[str], kind: str) -> list[str]:
        kept = [item for item in items if self.take(item)]
        self.omitted[kind] += len(items) - len(kept)
        return kept


def _section(heading: str, items: list[str]) -> list[str]:
    return [f"### {heading}", *items] if items else []


def _fit_written(written: list[tuple[str, str | None, list[str]]], share: int,
                 room: _Room) -> list[tuple[str, str | None, list[str]]]:
    """The sections a model wrote, within `share` characters: their start and end lines."""
    lines = [(index, line) for index, (_, h3, items) in enumerate(written) for line in ([f"### {h3}"] if h3 else []) +
             [part for item in items for part in item.split("\n")]]
    if not lines:
        return []
    total = sum(len(line) + 1 for _, line in lines)
    if total <= share:
        room.left -= total
        return written
    kept = head_and_tail_lines([line for _, line in lines], share)
    room.left -= sum(len(line) + 1 for line in kept)
    return [(written[0][0] if written[0][0] in (PROGRESS, CONTEXT) else EARLIER, None, kept)]


def _chosen_facts(facts: Facts, state: Merged, room: _Room, shown: set[str]) -> dict[str, list[str]]:
    """Errors, commands and files within what is left: the first error of each output first, then
    paths, then the other short facts (most facts for the room), then an output's further errors,
    then long facts; each pass newest first."""
    modified = set(facts.work.modified)
    newest = sorted(((at, kind, text) for kind, found in (
        ("errors", facts.errors), ("commands", facts.commands),
        ("files modified", tuple((at, p) for at, p in facts.files if p in modified)),
        ("files read", tuple((at, p) for at, p in facts.files if p not in modified))) for at, text in found),
        key=lambda fact: -fact[0])  # stable: an output's errors stay in their order
    firsts: dict[int, str] = {}  # an output's first error says most; its further ones wait for the room left
    for at, text in facts.errors:
        firsts.setdefault(at, text)
    candidates = [(kind, render_item(kind, text)) for _, kind, text in newest if not (kind == "commands" and text in shown)]
    depth = max((len(v) for v in state.pools.values()), default=0)
    candidates += [(kind, items[i]) for i in range(depth) for kind, items in state.pools.items() if i < len(items)]
    unique = list(dict.fromkeys(candidates))
    seen_modified = {item for kind, item in unique if kind == "files modified"}
    unique = [(kind, item) for kind, item in unique if not (kind == "files read" and item in seen_modified)]
    first_errors = {render_item("errors", text) for text in firsts.values()} | set(state.pools["errors"])
    taken: set[int] = set()
    passes = (lambda kind, item: kind == "errors" and item in first_errors and len(item) <= SHORT_FACT,
              lambda kind, item: kind == "files modified",
              lambda kind, item: kind == "files read",  # a path is short and names what the next turn opens again
              lambda kind, item: kind != "errors" and len(item) <= SHORT_FACT,
              lambda kind, item: len(item) <= SHORT_FACT, lambda kind, item: True)
    for wanted in passes:
        for position, (kind, item) in enumerate(unique):
            if position not in taken and wanted(kind, item) and room.take(item):
                taken.add(position)
    chosen: dict[str, list[str]] = {kind: [] for kind in FACT_KINDS.values()}
    for position, (kind, item) in enumerate(unique):
        if position in taken:
            chosen[kind].append(item)
        else:
            room.omitted[kind] += 1
    return chosen


def _count(counts: Counter, facts: Facts, kept: dict[str, int], shown: set[str]) -> None:
    """How many facts of each kind the dropped part held, and how many of those (`kept`, per kind)
    the summary keeps; `shown`: the commands shown whole as a check's last run."""
    work = facts.work
    held = {**_held(facts), "tasks": len(work.tasks or ()), "commits": len(work.commits), "runs": len(work.runs),
            "files modified": len(set(work.modified))}  # patch targets too, which name no path key
    kept = {**kept, "commands": kept["commands"] + len(shown & {t for _, t in facts.commands})}
    for kind in COUNTED:
        counts[f"held {kind}"] += held[kind]
        counts[f"kept {kind}"] += min(held[kind], kept[kind])


def render_item(kind: str, text: str) -> str:
    if kind == "errors":
        return "- " + " ".join(text.split("\n"))
    if "\n" not in text and "`" not in text:
        return f"- `{text}`"
    fence = "~~~~" if "```" in text else "```"
    return "- " + fence + "\n" + "\n".join("  " + line for line in text.split("\n")) + "\n  " + fence


TRAIL = "Artifact trail (from the compacted part, where the summary above does not say it)"


def artifact_trail(facts: Facts, budget_tokens: int, ratio: float, summary: str, counts: Counter | None = None) -> str:
    """What follows a model's summary: the sections of the checkpoint that are facts (the task
    list, commits, the open problem, the last runs, errors, commands, files), each item only when
    the summary does not hold it already, within `budget_tokens`; "" when the summary has them all."""
    said = " ".join(summary.split())
    already: Counter = Counter()  # per kind, the items the summary holds itself

    def new(items: list[str], kind: str) -> list[str]:
        fresh = [item for item in items if _key_of(item) not in said]
        already[kind] += len(items) - len(fresh)
        return fresh

    room = _Room(int(budget_tokens / ratio) - 120 if ratio > 0 else 0)
    work = facts.work
    tasks = room.fit(new([_task_item(t) for t in work.tasks or ()], "tasks"), "tasks")
    commits = room.fit(new([_commit_item(c) for c in reversed(work.commits)], "commits"), "commits")[::-1]
    problem = room.fit(new([_problem_item(work.problem)] if work.problem else [], "errors"), "errors")
    runs = room.fit(new([_run_item(r) for r in work.runs], "runs"), "runs")
    shown = {run.command for run in work.runs if _run_item(run) in runs}
    state = Merged(None, facts.messages, Counter(), Counter(), {}, work, None, {kind: [] for kind in FACT_KINDS.values()}, [])
    unsaid = replace(facts, errors=_unsaid(facts.errors, said), commands=_unsaid(facts.commands, said),
                     files=_unsaid(facts.files, said))
    chosen = _chosen_facts(unsaid, state, room, shown)
    if counts is not None:  # what the summary holds itself is kept too
        held, held_unsaid = _held(facts), _held(unsaid)
        _count(counts, facts, {"tasks": len(tasks) + already["tasks"], "commits": len(commits) + already["commits"],
                               "runs": len(runs) + already["runs"],
                               **{kind: len(items) + held[kind] - held_unsaid[kind] for kind, items in chosen.items()}},
               shown)
    parts = (_section(TASKS, tasks) + _section(COMMITS, commits) + _section(PROBLEM, problem) + _section(RUNS, runs)
             + [line for heading, kind in FACT_KINDS.items() for line in _section(heading, chosen[kind])])
    return "\n".join([f"## {TRAIL}", *parts]) + "\n" if parts else ""


def _unsaid(found: tuple[tuple[int, str], ...], said: str) -> tuple[tuple[int, str], ...]:
    return tuple((at, text) for at, text in found if " ".join(text.split())[:200] not in said)


def _held(facts: Facts) -> dict[str, int]:
    """How many errors, commands and files (modified, only read) the calls of `facts` named."""
    paths, modified = {p for _, p in facts.files}, set(facts.work.modified)
    return {"errors": len({t for _, t in facts.errors}), "commands": len({t for _, t in facts.commands}),
            "files modified": len(paths & modified), "files read": len(paths - modified)}


def _key_of(item: str) -> str:
    """What the summary must hold for an item to be there already: a commit's hash, a path, a command, a task's text."""
    text = item[2:] if item.startswith("- ") else item
    if match := re.match(r"^\[[ x-]\] (?:\((?:in progress|cancelled)\) )?(.*)$", text, re.S):
        text = match.group(1)
    if match := re.match(r"^`([^`]+)`", text):
        text = match.group(1)
    return " ".join(text.strip("`").split())[:200]
