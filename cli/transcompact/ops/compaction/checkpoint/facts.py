"""The facts of the dropped part, found without a model: the user's goal and words, the
assistant's last words, errors, commands, files and tools, where the work stands
(`work_state`), in one pass over the messages.

Errors come only from what reports one (`output_errors`); commands are kept whole (a long
here-document's body counted). Trajectories whose actions are fenced commands in the
assistant's text and whose observations are user messages (SWE-agent, mini-swe-agent) are read
as such: the first user message is the task, the others are what the commands printed.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ....core.model import ASSISTANT, USER, Message, ToolCall, ToolResult, named_paths, result_text
from ....core.summary_text import text_of
from ..output_errors import clipped, command_of, error_lines, exit_failed, result_error_lines
from ..summary_message import is_summary_message
from ..work_state import (
    DONE,
    WorkState,
    WorkStateFinder,
    check_key,
    failed_run,
    find_work_state,
    is_git_commit,
    modified_paths,
    run_key,
    task_list,
    trajectory_runs,
)

COMMAND_CHARS = 4000  # a command is kept whole up to this
HEREDOC_LINES = 3  # a here-document's body is kept up to this many lines, else counted
REQUEST_WORDS = 4  # a user message shorter than this ("yes", "go on") is no request of its own
FIXED = "(fixed since) "  # before an error a later passing run of the same command, or an edit then a passing check, fixed

_FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.S)
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([A-Za-z_][\w.-]*)\2")


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
    since_last_state: tuple[str, ...] = ()  # what happened after the assistant's last words (runs, commits)

    @property
    def closed_a_step(self) -> bool:
        """Whether the work moved on in these messages: a commit, or a task done."""
        return bool(self.work.commits) or any(task.status == DONE for task in self.work.tasks or ())


def without_heredoc_bodies(command: str) -> str:
    """The command with each long here-document's body replaced by its line count: the body is
    the content of a file the command writes (which is on disk), not what was run."""
    if "<<" not in command:
        return command
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
    """A user message that may hold the user's words: not a summary, a trajectory's demonstration
    or observation (what the agent wrote in the user's turn is the format's: `injected`)."""
    raw = message.raw if isinstance(message.raw, dict) else {}
    return (message.role == USER and not is_summary_message(message) and not raw.get("is_demo")
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

    `names` maps a call id to its tool's name (from the whole transcript), `inputs` to its input
    where the call is not among `messages` (each call among them gives its result's input as it
    comes: a result answers a call before it). Each message is read once, apart
    (`Message.read_apart`): the dropped part of a large log read lazily is not held read, only
    what is found in it.
    """
    inputs = dict(inputs)
    trajectory = is_trajectory(messages)
    errors: list[tuple[int, str]] = []
    commands: list[tuple[int, str]] = []
    files: list[tuple[int, str]] = []
    tools: Counter = Counter()
    fixes = _Fixes()
    calls: list[int] = []  # the message of each call: the work after a request
    planned: list[int] = []  # the message of each call that wrote a task list
    if trajectory:
        runs: list[tuple[str, str]] = []
        command = None
        for index, message in enumerate(messages):
            message = message.read_apart()
            if message.role == ASSISTANT and (command := trajectory_command(message)):
                commands.append((index, clipped_command(command)))
                tools["bash"] += 1
                calls.append(index)
            elif message.role == USER and command is not None and index:
                text = text_of(message)
                found = error_lines(text, exit_failed(text))
                errors += [(index, line) for line in found]
                fixes.ran(index, command, failed_run(command, text, False), len(found))
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
                    inputs[block.id] = block.input
                    tools[block.name] += 1
                    calls.append(index)
                    named = named_paths(block.input)
                    changed = modified_paths(block.name, block.input)
                    files += [(index, path) for path in (*named, *(p for p in changed if p not in named))]
                    if changed:
                        fixes.edited(index)
                    if isinstance(block.input, dict) and (task_list(block.input) is not None or block.name == "TaskCreate"):
                        planned.append(index)
                    if (ran := command_of(block.input)) is not None:
                        commands.append((index, clipped_command(ran)))
                elif isinstance(block, ToolResult):
                    found = result_error_lines(block, names.get(block.tool_call_id), inputs.get(block.tool_call_id))
                    errors += [(index, line) for line in found]
                    ran = command_of(inputs.get(block.tool_call_id))
                    failed = bool(block.is_error) or bool(found) and failed_run(ran or "", result_text(block), False)
                    fixes.ran(index, ran, failed, len(found))
            finder.add(message)
            if text := user_text(message, injected):
                texts.append((index, text))
        work = finder.state()
    said = next(((index, text) for index in range(len(messages) - 1, -1, -1) if messages[index].role == ASSISTANT
                 and (text := text_of(messages[index].read_apart()).strip())), None)
    # The calls of the message that holds the last words come after them.
    since = moved_on(find_work_state(messages[said[0]:])) if said and not trajectory else ()
    fixed = fixes.fixed(errors)
    errors = [(at, FIXED + line if number in fixed else line) for number, (at, line) in enumerate(errors)]
    return Facts(main_request(texts, calls, planned), said[1] if said else None, tuple(errors), tuple(commands),
                 tuple(files), tools, len(messages), work=work, user_texts=tuple(texts), since_last_state=since)


def main_request(texts: Sequence[tuple[int, str]], calls: Sequence[int], planned: Sequence[int]) -> str | None:
    """The request the work was done for, among the user's messages (`texts`, by index): the last
    before the first task list the agent wrote from it, else the one with the most tool calls
    after it (up to the next request) where that is at least twice the first's; else the first. A short reply ("yes", "go
    on") is no request: the work after it is the request's before it."""
    requests = [(at, text) for at, text in texts if len(text.split()) >= REQUEST_WORDS] or list(texts[:1])
    if not requests:
        return None
    if planned and (before := [text for at, text in requests if at < planned[0]]):
        return before[-1]
    starts = [at for at, _ in requests]
    work = Counter(bisect.bisect_right(starts, at) - 1 for at in calls)
    most = max(range(len(requests)), key=lambda k: (work[k], -k))
    return requests[0 if work[0] * 2 >= work[most] else most][1]  # the first, unless another led to twice its work


def moved_on(later: WorkState) -> tuple[str, ...]:
    """What a stretch of work after the assistant's last words did, as the checkpoint says it:
    each check's last run and each commit."""
    runs = [f"`{run.command}`{' failed' if run.failed else ''}: {run.result}" for run in later.runs]
    commits = [f"committed `{commit.hash}` {commit.subject}" if commit.hash else f"committed {commit.subject}"
               for commit in later.commits]
    return (*runs, *commits)


class _Fixes:
    """Which errors later work fixed: a passing run of the command that failed, or, of a check (a
    test, a build) that failed, an edit after it and a passing check after that edit."""

    def __init__(self) -> None:
        self.keys: list[tuple[str | None, bool]] = []  # per error line, in order: the command that gave it (None:
        # no command) and whether it is a check
        self.edits: list[int] = []  # the message of each edit, in order
        self.passed: dict[str, int] = {}  # command → the message of its last passing run
        self.last_check = -1  # the message of the last passing check

    def edited(self, index: int) -> None:
        self.edits.append(index)

    def ran(self, index: int, command: str | None, failed: bool, errors: int) -> None:
        """A result at message `index`: of `command` (None: a tool's, no command), which gave `errors` error lines."""
        check = check_key(command) if command is not None else None
        key = run_key(command) if command is not None else None
        self.keys += [(key, check is not None)] * errors
        if failed or key is None:
            return
        self.passed[key] = index
        if check is not None:
            self.last_check = index

    def fixed(self, errors: Sequence[tuple[int, str]]) -> set[int]:
        """The positions in `errors` (message, line) that later work fixed; the same error printed
        before the run that fixed it, by another command, is fixed with it."""
        fixed_by: dict[str, int] = {}  # an error's line → the message of the latest run that fixed it
        for (at, line), (key, check) in zip(errors, self.keys):
            edit = bisect.bisect_right(self.edits, at)
            if key is not None and self.passed.get(key, -1) > at:
                fixed_by[line] = max(fixed_by.get(line, -1), self.passed[key])
            elif check and edit < len(self.edits) and self.last_check > self.edits[edit]:
                fixed_by[line] = max(fixed_by.get(line, -1), self.last_check)
        return {position for position, (at, line) in enumerate(errors) if at < fixed_by.get(line, -1)}
