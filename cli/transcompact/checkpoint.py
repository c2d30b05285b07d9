"""The checkpoint of the emergency mode: what the dropped part held, found without a model.

It has the sections of the model's checkpoint where it has facts: the Goal (the task as the
user first put it), Progress (what was compacted, and the assistant's last words before the
cut), and Critical Context: the environment the agent stated (an agent's own context message,
such as Codex's `<environment_context>`, which is not the user's goal), errors, commands and
files, newest first, within a token budget (`--checkpoint-tokens`), with a count of what did
not fit, and the tools used.

Errors come only from what reports one: an error result, a non-zero exit, a traceback, a failed
test, a compiler's `error:` line; never from the lines of a file the agent read. Commands are
kept whole. An earlier summary is merged, not quoted: its facts join the new ones (older, so
trimmed first), its goal stays the goal, and the sections a model wrote stay as they are.

Trajectories whose actions are fenced commands in the assistant's text and whose observations
are user messages (SWE-agent, mini-swe-agent) are read as such: the first user message is the
task, the others are what the commands printed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from .model import ASSISTANT, USER, Message, ToolCall, ToolResult, result_text
from .summary_message import is_summary_message, quoted, text_of

PATH_KEYS = ("path", "file_path", "filename", "file", "notebook_path", "target_file", "absolute_path")
COMMAND_KEYS = ("command", "cmd", "script")
# Tools that show what a file or a search holds: their lines are source, not errors.
READ_TOOLS = frozenset({
    "read", "read_file", "readfile", "view", "view_file", "open", "open_file", "cat", "notebookread", "file_read",
    "get_file_contents", "grep", "glob", "ls", "search", "find", "webfetch", "fetch", "web_fetch",
})
LINE_CHARS = 500  # an error line is kept whole up to this, then cut at a word
ERRORS_PER_OUTPUT = 3  # one failed build's forty compiler errors say what its first two and last one say
COMMAND_CHARS = 4000  # a command is kept whole up to this
HEREDOC_LINES = 3  # a here-document's body is kept up to this many lines, else counted
SHORT_FACT = 300  # facts up to this long go into the checkpoint before longer ones

_TRACEBACK = "Traceback (most recent call last):"
_ERROR_LINE = re.compile(
    r"^(?:FAILED |ERROR |FAIL: |--- FAIL: |npm ERR! |fatal: |panic: |E {3}\S|\S+::\S+.* (?:FAILED|ERROR)\b"  # tests, git, go, npm
    r"|error(?:\[\w+\])?: |\S+:\d+(?::\d+)?: (?:fatal )?error: |\S+\(\d+,\d+\): error "  # compilers
    r"|[A-Za-z_][\w.]*(?:Error|Exception)(?:: |$))"  # an exception at the start of a line
)
_EXIT = re.compile(r"^(?:Exit code|exit code:?|Command exited with code) (-?\d+)|<returncode>(-?\d+)</returncode>")
_FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.S)
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([A-Za-z_][\w.-]*)\2")
_DONE = re.compile(r"^- \[x\] (\d+) earlier messages were compacted without a model")
_NOT_KEPT = re.compile(r"(\d+) (errors?|commands?|files?)\b")
_TOOL_COUNT = re.compile(r"^- (.+) × (\d+)$")
_SETTING = re.compile(r"^- ([^:\n]+): (.*)$")

GOAL, PROGRESS, CONTEXT = "Goal", "Progress", "Critical Context"
DONE, LAST_STATE = "Done", "Last state (the assistant's last words before this checkpoint)"
ERRORS, COMMANDS, FILES = "Errors seen (newest first)", "Commands run (newest first)", "Files touched (newest first)"
TOOLS, NOT_KEPT, ENVIRONMENT = "Tools used", "Not kept", "Environment"
FACT_KINDS = {ERRORS: "errors", COMMANDS: "commands", FILES: "files"}
EARLIER = "Earlier summary"
NO_GOAL = "(no request of the user's in the compacted part)"


@dataclass(frozen=True)
class Facts:
    """What the dropped part held, each list in the order it happened."""

    goal: str | None
    last_state: str | None
    errors: tuple[tuple[int, str], ...]  # (message index, the line)
    commands: tuple[tuple[int, str], ...]
    files: tuple[tuple[int, str], ...]
    tools: Counter
    messages: int
    environment: tuple[tuple[str, str], ...] = ()  # (name, value) the agent's own context stated, newest value


# --- finding the facts -----------------------------------------------------------------------


def clipped(text: str, limit: int) -> str:
    """`text` up to `limit` characters, cut after a whole word."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …"


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


def error_lines(text: str, failed: bool) -> list[str]:
    """The lines of an output that report an error: exception lines after a traceback, test
    failures, compiler errors; when the command failed and none of these is there, its first line."""
    found: list[str] = []
    lines = text.splitlines()
    in_traceback = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(_TRACEBACK):
            in_traceback = True
            continue
        if in_traceback:
            if line[:1] in (" ", "\t") or not stripped:
                continue
            in_traceback = False
            found.append(stripped)
            continue
        if _ERROR_LINE.match(line):
            found.append(stripped)
    if failed:  # what a failed command printed first says most about why
        first = next((s for line in lines if (s := line.strip()) and not _EXIT.match(s)
                      and not s.startswith(_TRACEBACK) and s not in ("<output>", "</output>")), None)
        if first is not None and first not in found:
            found.insert(0, first)
    if len(found) > ERRORS_PER_OUTPUT:
        found = [*found[:ERRORS_PER_OUTPUT - 1], f"… {len(found) - ERRORS_PER_OUTPUT} more error lines in that output …",
                 found[-1]]
    return [clipped(line, LINE_CHARS) for line in found]


def exit_failed(text: str) -> bool:
    match = _EXIT.search(text[:200])
    return bool(match) and (match.group(1) or match.group(2)) not in ("0", None)


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
            kept += body if len(body) <= HEREDOC_LINES else [f"[… {len(body)} lines of here-document …]"]
            kept.append(lines[end])
            at = end + 1
    return "\n".join(kept)


def _command(value) -> str | None:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        value = value[-1] if value[0] in ("bash", "sh", "zsh") and len(value) > 1 else " ".join(value)
    if isinstance(value, str) and value.strip():
        return clipped(without_heredoc_bodies(value.strip()), COMMAND_CHARS)
    return None


def trajectory_command(message: Message) -> str | None:
    """The command an assistant message of a trajectory ran: SWE-agent's `action`, or its last fenced block."""
    if isinstance(message.raw, dict) and isinstance(message.raw.get("action"), str) and message.raw["action"].strip():
        return _command(message.raw["action"])
    blocks = _FENCE.findall(text_of(message))
    return _command(blocks[-1]) if blocks else None


def is_trajectory(messages: Sequence[Message]) -> bool:
    """No tool calls, and most assistant messages run a command whose output comes back as a user message."""
    if any(isinstance(b, (ToolCall, ToolResult)) for m in messages for b in m.blocks):
        return False
    assistants = [m for m in messages if m.role == ASSISTANT]
    running = sum(1 for m in assistants if trajectory_command(m))
    return running >= 2 and running * 2 >= len(assistants)


def is_user_text(message: Message) -> bool:
    raw = message.raw if isinstance(message.raw, dict) else {}
    return message.role == USER and not is_summary_message(message) and not raw.get("isMeta") and not raw.get("is_demo")


def user_texts(messages: Sequence[Message], trajectory: bool) -> list[tuple[int, str]]:
    """(index, text) of what the user wrote, wherever it is (beside tool results too); in a
    trajectory only the task, the first user message."""
    found = []
    for index, message in enumerate(messages):
        if not is_user_text(message):
            continue
        text = text_of(message).strip()
        if text:
            found.append((index, text))
            if trajectory:
                break
    return found


def find_facts(messages: Sequence[Message], names: dict[str, str], inputs: dict[str, object]) -> Facts:
    """The facts of `messages` (the dropped part, an earlier summary's messages left out).

    `names` and `inputs` map a call id to its tool's name and input (from the whole transcript).
    """
    trajectory = is_trajectory(messages)
    errors: list[tuple[int, str]] = []
    commands: list[tuple[int, str]] = []
    files: list[tuple[int, str]] = []
    tools: Counter = Counter()
    pending_command = False
    for index, message in enumerate(messages):
        if trajectory:
            if message.role == ASSISTANT and (command := trajectory_command(message)):
                commands.append((index, command))
                tools["bash"] += 1
                pending_command = True
            elif message.role == USER and pending_command:
                text = text_of(message)
                errors += [(index, line) for line in error_lines(text, exit_failed(text))]
                pending_command = False
            continue
        for block in message.blocks:
            if isinstance(block, ToolCall):
                tools[block.name] += 1
                arguments = block.input if isinstance(block.input, dict) else {}
                for key in PATH_KEYS:
                    if isinstance(arguments.get(key), str) and arguments[key].strip():
                        files.append((index, arguments[key].strip()))
                for key in COMMAND_KEYS:
                    if (command := _command(arguments.get(key))) is not None:
                        commands.append((index, command))
            elif isinstance(block, ToolResult):
                found = result_error_lines(block, names.get(block.tool_call_id), inputs.get(block.tool_call_id))
                errors += [(index, line) for line in found]
    texts = user_texts(messages, trajectory)
    last_state = next((text_of(m).strip() for m in reversed(messages)
                       if m.role == ASSISTANT and text_of(m).strip()), None)
    return Facts(texts[0][1] if texts else None, last_state, tuple(errors), tuple(commands), tuple(files), tools,
                 len(messages))


def result_error_lines(result: ToolResult, tool: str | None, arguments) -> list[str]:
    """The error lines of a tool result: none from a read or a search that did not fail."""
    text = result_text(result)
    failed = bool(result.is_error) or exit_failed(text)
    if not failed and ((tool or "").lower() in READ_TOOLS or _reads_a_file(arguments)):
        return []
    return error_lines(text, failed)


def _reads_a_file(arguments) -> bool:
    """An editor tool asked to view a file (`str_replace_editor view`, `text_editor` view)."""
    return isinstance(arguments, dict) and arguments.get("command") == "view"


# --- the sections of a summary, to merge into ---------------------------------------------------


def sections(body: str) -> list[tuple[str, str | None, list[str]]]:
    """(## heading, ### heading or None, items) of a Markdown summary; an item is a bullet with
    its indented lines, or the text before the first bullet."""
    groups: list[tuple[str, str | None, list[str]]] = []
    h2, h3, items = "", None, []

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


def render_item(kind: str, text: str) -> str:
    if kind == "errors":
        return "- " + " ".join(text.split("\n"))
    if "\n" not in text and "`" not in text:
        return f"- `{text}`"
    fence = "~~~~" if "```" in text else "```"
    return "- " + fence + "\n" + "\n".join("  " + line for line in text.split("\n")) + "\n  " + fence


# --- the checkpoint --------------------------------------------------------------------------


def goal_of(body: str) -> str | None:
    """The text of a summary's Goal section."""
    return next(("\n".join(items) for h2, h3, items in sections(body) if h2 == GOAL and h3 is None and items), None)


def checkpoint(facts: Facts, budget_tokens: int, ratio: float, previous: str | None = None, goal_chars: int = 8000) -> str:
    """The checkpoint's text: the facts within `budget_tokens`, merged into `previous` (a summary's
    body); the goal, which is the user's text, is cut to `goal_chars` when longer."""
    budget = int(budget_tokens / ratio) if ratio > 0 else 0
    earlier = sections(previous) if previous else []
    goal = None if previous else facts.goal  # after a summary, the first request is one among the user's words
    kept_groups: list[tuple[str, str | None, list[str]]] = []  # what a model wrote, kept as it is
    pool_earlier: dict[str, list[str]] = {kind: [] for kind in FACT_KINDS.values()}
    compacted = facts.messages
    tools = Counter(facts.tools)
    omitted = Counter()
    last_state = facts.last_state
    earlier_last_state = None
    environment: dict[str, str] = {}
    for h2, h3, items in earlier:
        if h2 == GOAL and h3 is None:
            if items and items[0] != NO_GOAL:
                goal = "\n".join(items)
        elif h2 == PROGRESS and h3 == DONE:
            rest = []
            for item in items:
                match = _DONE.match(item)
                if match:
                    compacted += int(match.group(1))
                else:
                    rest.append(item)
            if rest:
                kept_groups.append((h2, h3, rest))
        elif h2 == PROGRESS and h3 == LAST_STATE:
            earlier_last_state = "\n".join(items)
        elif h2 == CONTEXT and h3 == ENVIRONMENT:
            environment.update(match.groups() for item in items if (match := _SETTING.match(item)))
        elif h2 == CONTEXT and h3 in FACT_KINDS:
            pool_earlier[FACT_KINDS[h3]] += items
        elif h2 == CONTEXT and h3 == TOOLS:
            for item in items:
                if match := _TOOL_COUNT.match(item):
                    tools[match.group(1)] += int(match.group(2))
        elif h2 == CONTEXT and h3 == NOT_KEPT:
            for item in items:
                for count, kind in _NOT_KEPT.findall(item):
                    omitted[kind.rstrip("s") + "s"] += int(count)
        elif h2 != GOAL:  # free text before any heading is a summary written some other way
            kept_groups.append((h2 or EARLIER, h3, items))

    environment.update(facts.environment)  # the newer value of a setting replaces the earlier one
    environment_lines = [f"- {name}: {value}" for name, value in environment.items()]
    done = f"- [x] {compacted} earlier messages were compacted without a model (emergency mode); this checkpoint keeps what they held."
    state = (quoted(head_and_tail(last_state, max(400, budget // 8))) if last_state is not None else earlier_last_state)
    tool_lines = [f"- {name} × {count}" for name, count in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))]
    fixed = (len(done) + len(state or "") + sum(len(t) + 1 for t in tool_lines + environment_lines)
             + 400)  # headings and the count line
    room = budget - fixed

    # Newest first: the new facts by recency, then the earlier summary's (older by definition).
    candidates: list[tuple[str, str]] = []
    newest = sorted(((at, kind, text) for kind, found in (("errors", facts.errors), ("commands", facts.commands),
                                                          ("files", facts.files)) for at, text in found),
                    key=lambda fact: -fact[0])
    candidates += [(kind, render_item(kind, text)) for _, kind, text in newest]
    depth = max((len(v) for v in pool_earlier.values()), default=0)
    candidates += [(kind, items[i]) for i in range(depth) for kind, items in pool_earlier.items() if i < len(items)]
    # Errors first, then paths, then the other short facts (most facts for the room), then long
    # ones while room is left; each pass newest first.
    unique = list(dict.fromkeys(candidates))
    taken: set[int] = set()
    passes = (lambda kind, item: kind == "errors" and len(item) <= SHORT_FACT,
              lambda kind, item: kind == "files",  # a path is short and names what the next turn opens again
              lambda kind, item: len(item) <= SHORT_FACT, lambda kind, item: True)
    for wanted in passes:
        for position, (kind, item) in enumerate(unique):
            if position in taken or not wanted(kind, item):
                continue
            if len(item) + 1 <= room:
                taken.add(position)
                room -= len(item) + 1
    chosen: dict[str, list[str]] = {kind: [] for kind in FACT_KINDS.values()}
    for position, (kind, item) in enumerate(unique):
        if position in taken:
            chosen[kind].append(item)
        else:
            omitted[kind] += 1

    parts = [f"## {GOAL}", head_and_tail(goal, goal_chars), ""] if goal else [] if earlier else [f"## {GOAL}", NO_GOAL, ""]
    parts += [f"## {PROGRESS}", f"### {DONE}", done]
    for h2, h3, items in kept_groups:
        if h2 == PROGRESS:
            parts += [f"### {h3}", *items] if h3 else items
    if state:
        parts += [f"### {LAST_STATE}", state]
    current_h2 = PROGRESS
    for h2, h3, items in kept_groups:
        if h2 in (PROGRESS, CONTEXT):
            continue
        if h2 != current_h2:
            parts += ["", f"## {h2}"]
            current_h2 = h2
        parts += ([f"### {h3}"] if h3 else []) + items
    parts += ["", f"## {CONTEXT}"]
    if environment_lines:
        parts += [f"### {ENVIRONMENT}", *environment_lines]
    for h2, h3, items in kept_groups:
        if h2 == CONTEXT:
            parts += ([f"### {h3}"] if h3 else []) + items
    for heading, kind in FACT_KINDS.items():
        if chosen[kind]:
            parts += [f"### {heading}", *chosen[kind]]
    if tool_lines:
        parts += [f"### {TOOLS}", *tool_lines]
    if omitted:
        said = ", ".join(f"{omitted[kind]} {kind}" for kind in FACT_KINDS.values() if omitted[kind])
        parts += [f"### {NOT_KEPT}", f"- {said} did not fit in the checkpoint's {budget_tokens:,} tokens (--checkpoint-tokens)"]
    if not (facts.errors or facts.commands or facts.files or facts.tools or any(pool_earlier.values())):
        parts.append("- No tool calls in the compacted part.")
    return "\n".join(parts) + "\n"
