"""Where the work stands, from the agent's own signals in a stretch of messages (newest wins).

- The task list: the last list a planning tool wrote (Claude Code `TodoWrite`, Codex
  `update_plan`, Gemini `write_todos`, OpenHands `task_tracker`), or the tasks Claude Code's
  newer tools made and updated (`TaskCreate`, `TaskUpdate`), each with its status.
- Commits: `git commit` runs that git answered with `[branch hash] subject`.
- Files modified (edit, write and patch targets, a shell's `>`, `>>`, `tee` and `sed -i`), apart
  from the files only read; a call that failed changed no file, and a file a later `rm` deleted is
  in neither list (`deleted`).
- The last run of each test, build or lint command, with its result line ("12 passed, 1 failed").
- The open problem: the last failing command and its error, when nothing later succeeded at it.
- The next step: the first task not done (one in progress before one pending).

An output's error lines are `output_errors`', as the checkpoint reads them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ...core.model import Message, ToolCall, ToolResult, named_paths, result_text
from .line_scan import LineScan, line_at, lines_from_the_end, newline_text
from .output_errors import command_of, error_lines, exit_failed, exit_status, is_placeholder, kept_output, remembered_of

DONE, IN_PROGRESS, PENDING, CANCELLED = "done", "in progress", "pending", "cancelled"
_STATUSES = {"completed": DONE, "complete": DONE, "done": DONE, "finished": DONE, "in_progress": IN_PROGRESS,
             "in-progress": IN_PROGRESS, "active": IN_PROGRESS, "pending": PENDING, "todo": PENDING,
             "not_started": PENDING, "cancelled": CANCELLED, "canceled": CANCELLED}
# Tools that change the file they name; an editor tool's `command` says whether it views or changes.
EDIT_TOOLS = frozenset({"edit", "multiedit", "write", "notebookedit", "write_file", "replace", "edit_file", "create",
                        "create_file", "str_replace", "insert", "apply_patch", "patch", "write_to_file", "search_replace"})
EDITOR_WRITES = frozenset({"create", "str_replace", "insert", "undo_edit", "write", "edit"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.M)  # a move: its new name too
_COMMIT_COMMAND = re.compile(r"\bgit\b(?:\s+-[Cc]\s+\S+)*[^|;&\n]*?\bcommit\b")
# git's answer to a commit, at the start of a line (Gemini CLI's shell output puts `Output: ` before it).
_COMMIT_LINE = re.compile(r"^(?:Output: )?\[([^\]\s]+)(?: \([^)]*\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_COMMIT_MESSAGE = re.compile(r"""-(?:[a-z]*m|-message)[ =](?:"((?:[^"\\]|\\.)+)"|'([^']+)')""")
HEREDOC_LINES = 3  # a here-document's body is kept up to this many lines, else counted
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)[ \t]*(['\"]?)([A-Za-z_][\w.-]*)\2")
_HEREDOC_FIRST = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?\)?\"?\s*\n\s*(.+)")
# Commands whose last run says where the work stands: tests, builds, type checks, linters.
_CHECK_COMMAND = re.compile(
    r"(?:^|[\s;&|(/])(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|rspec|ctest|tsc|mypy|pyright|ruff|eslint|"
    r"flake8|pylint|golangci-lint|phpunit|"
    r"go (?:test|build|vet)|cargo (?:test|build|check|clippy|nextest)|(?:npm|pnpm|yarn|bun) (?:test|run \S+|build)|"
    r"npx \S+|make(?: [\w.-]+)?|mise run \S+|just \S+|mvn \S+|gradle \S+|\./gradlew \S+|mix (?:test|compile)|"
    r"dotnet (?:test|build)|swift (?:test|build)|bazel (?:test|build)|cmake\s--build|python3? -m (?:pytest|unittest|mypy))"
    r"(?=$|[\s;&|)])")
# A line that sums up a test, build or lint run.
# (A count, not the end of a version: npm's `> pkg@0.7.29 test` banner is no summary.)
_RESULT_LINE = re.compile(
    r"(?<![\w.])\d+ (?:passed|failed|errors?|error\(s\)|tests?|passing|failing|pending|skipped|problems?|warnings?|examples?|"
    r"failures?|issues?)\b|^(?:ok|FAIL|PASS|FAILED|PASSED)\b|test result:|^Tests?:|BUILD (?:SUCCESS|FAILED)|"
    r"Build succeeded|Build FAILED|Success: no issues|All checks passed|no issues found|Finished `?\w+`? ", re.I)
# Where a line may be one `_RESULT_LINE` finds a summary in, in a few scans (line_scan.py) over the
# output's UTF-8 bytes folded as `_FOLDED` says: what a line begins with past its rules (`===`), the
# digits before a count, each phrase. A case-insensitive pattern has no literal to look for first:
# the folded bytes do.
_SUMMARY_SCAN = LineScan(
    rb"(?=([\t\x1f 0]*=*[\t\x1f 0]*))\1(?:ok|fail|pass|test)",
    (rb"0 (?:pass|fail|error|test|pending|skipped|problem|warning|example|issue)",
     rb":(?:(?<=test result:)|(?<=success:) no issues)", rb"build (?:succe|fail)", rb"all checks passed",
     rb"no issues found", rb"finished "))
# ASCII letters made lower case, every digit "0", and every byte of a character past ASCII "0" too:
# it may be a digit or a space (`\d`, `\s` of `_RESULT_LINE` are Unicode's).
_FOLDED = bytes(ord("0") if byte >= 0x80 or chr(byte).isdigit() else ord(chr(byte).lower()) for byte in range(256))
# The letters besides the ASCII ones that a case-insensitive ASCII letter matches (İ, ı and ſ, the
# Kelvin sign): in an output that holds one, every line is read.
_OTHER_CASES = ("\u0130", "\u0131", "\u017f", "\u212a")
_EVERY_LINE = LineScan(b"")
SUMMARY_TAIL = 2000  # characters at the end of an output scanned first: a run prints its summary last
# What starts a check's own program: the same check, however it is started.
_RUNNER = re.compile(r"^(?:(?:uv|poetry|pipenv|pdm|hatch) run |python3? -m (?=pytest|unittest|mypy|ruff|tox|nox))")
_IN_DIRECTORY = re.compile(r"^cd \S+ && ")
_REDIRECTS = re.compile(r"\s+\d?>&\d|\s+2>/dev/null")


@dataclass(frozen=True)
class Task:
    text: str
    status: str  # DONE, IN_PROGRESS, PENDING, CANCELLED, or what the tool said


@dataclass(frozen=True)
class Commit:
    subject: str
    hash: str | None  # as git printed it; None when the output did not show it


@dataclass(frozen=True)
class Run:
    """The last run of a test, build or lint command."""

    command: str  # as it was run, when it is one line; else the line that ran the check
    result: str  # its result line, or the error that ended it
    failed: bool

    @property
    def key(self) -> str:
        """What makes two runs runs of the same check."""
        return run_key(self.command)


@dataclass(frozen=True)
class Problem:
    command: str
    error: str


@dataclass(frozen=True)
class WorkState:
    tasks: tuple[Task, ...] | None = None  # None: no task list in these messages
    commits: tuple[Commit, ...] = ()  # oldest first
    modified: tuple[str, ...] = ()  # newest first
    read: tuple[str, ...] = ()  # files only read, newest first
    runs: tuple[Run, ...] = ()  # newest first
    problem: Problem | None = None
    committed_since_tasks: bool = False  # a commit came after the task list was last written
    deleted: tuple[str, ...] = ()  # files a shell's `rm` deleted and nothing wrote since, as the calls named them

    @property
    def next_step(self) -> str | None:
        """The first task not done: one in progress, else the first pending. A step in progress
        when a later commit came, which the agent did not mark since, is taken as closed by it."""
        for wanted in ((PENDING,) if self.committed_since_tasks else (IN_PROGRESS, PENDING)):
            task = next((t for t in self.tasks or () if t.status == wanted), None)
            if task is not None:
                return task.text
        return None


def status_of(value: Any) -> str:
    text = str(value).strip().lower() if value is not None else ""
    return _STATUSES.get(text, text or PENDING)


def task_list(arguments: dict) -> tuple[Task, ...] | None:
    """The whole list a planning tool wrote, None when the call is not one."""
    for key, text_keys in (("todos", ("content", "description", "task", "title")), ("plan", ("step", "content")),
                           ("task_list", ("title", "description", "content"))):
        items = arguments.get(key)
        if isinstance(items, list) and items and all(isinstance(i, dict) for i in items):
            tasks = []
            for item in items:
                text = next((item[k] for k in text_keys if isinstance(item.get(k), str) and item[k].strip()), None)
                if text is not None:
                    tasks.append(Task(" ".join(text.split()), status_of(item.get("status"))))
            return tuple(tasks)
    return None


def is_git_commit(command: str) -> bool:
    return bool(_COMMIT_COMMAND.search(command))


def commit_line(output: str) -> str | None:
    """The `[branch hash] subject` line git answers a commit with, or None."""
    match = _COMMIT_LINE.search(output)
    return match.group(0) if match else None


def git_commit(command: str, output: str, failed: bool) -> Commit | None:
    if not is_git_commit(command):
        return None
    if match := _COMMIT_LINE.search(output):
        return Commit(match.group(3).strip(), match.group(2))
    if failed or "nothing to commit" in output or "no changes added" in output:
        return None
    if match := _COMMIT_MESSAGE.search(command):
        subject = (match.group(1) or match.group(2)).replace('\\"', '"').strip().split("\n")[0]
        if not subject.startswith("$("):
            return Commit(subject, None)
    if match := _HEREDOC_FIRST.search(command):
        return Commit(match.group(2).strip(), None)
    return None


@lru_cache(maxsize=1024)  # a session runs the same checks again and again, each run read as one several times
def check_key(command: str) -> str | None:
    """The command as a run of a test, build or lint command (its pipes and redirections aside, and
    however the runner is started: `python -m pytest -q` is `pytest -q`), or None."""
    first = _REDIRECTS.sub("", command.split("\n")[0].split(" | ")[0]).strip()
    return _RUNNER.sub("", " ".join(first.split())) if _CHECK_COMMAND.search(first) else None


# SWE-agent's edit of a file's lines (`edit 287:295`, the new lines, `end_of_edit`): one its lint
# refused was not applied, so the next edit (of those lines or others, applied or refused in turn)
# leaves its errors behind: every such edit is one command, `LINES_EDIT`.
_LINES_EDIT = re.compile(r"edit \d+:\d+\n")
LINES_EDIT = "edit"


def run_key(command: str) -> str:
    """What makes two runs runs of the same command: a check as `check_key` says, another command
    without the directory it was run from (`cd DIR && `) and its redirections, white space single."""
    if (key := check_key(command)) is not None:
        return key
    if _LINES_EDIT.match(command):
        return LINES_EDIT
    return " ".join(_REDIRECTS.sub("", _IN_DIRECTORY.sub("", command.strip())).split())


def result_line(output: str, failed: bool) -> str:
    """The line that sums up a run: the last that looks like a summary, else its error, else `ok`
    (read once within `output_errors.remembered`: prune's key lines, the facts and the work state
    of a compaction each ask for it)."""
    return remembered_of(output, (result_line, failed), lambda: _result_line(output, failed))


def _result_line(output: str, failed: bool) -> str:
    text = newline_text(output)
    summary = _last_summary(text, _EVERY_LINE if any(letter in output for letter in _OTHER_CASES) else _SUMMARY_SCAN)
    if summary is not None:
        return summary[:300]
    if failed:
        found = error_lines(output, True)
        if found:
            return found[-1]
        return next((said[:300] for line in lines_from_the_end(text) if (said := _said(line))), "failed, with no output")
    return "ok"


# A check's summary that counts failures (`1 failed`, `2 errors`): the run failed whatever its
# exit status says (piped into `tail`, a shell reports the status of the pipe's last command).
_FAILURES_COUNTED = re.compile(r"\b[1-9]\d*\s+(?:failed|failures?|errors?)\b", re.I)


# Programs whose status 1 is an answer, not a failure: nothing matched, the files differ.
_ANSWER_BY_STATUS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack", "diff", "cmp", "test", "["})


def failed_run(command: str, output: str, marked: bool) -> bool:
    """Whether a run failed: `marked` so (its result an error), its output saying its status was
    not 0, or, for a check, its summary line counting failures. A search that found nothing (grep's
    status 1, its last program's) did not fail."""
    if exit_status(output) == "1" and _last_program(command) in _ANSWER_BY_STATUS:
        return False
    if marked or exit_failed(output):
        return True
    return check_key(command) is not None and _FAILURES_COUNTED.search(result_line(output, failed=False)) is not None


def _last_summary(text: str, scan: LineScan[bytes]) -> str | None:
    """The last line of `text` (a `newline_text`) that `_RESULT_LINE` finds a summary in: looked
    for in the lines of its last SUMMARY_TAIL characters first, where a run prints it."""
    tail = text.rfind("\n", 0, max(len(text) - SUMMARY_TAIL, 0))
    for part in (text[tail + 1:], text) if tail >= 0 else (text,):
        data = part.encode("utf-8", "surrogatepass")
        for start in reversed(scan.line_starts(data.translate(_FOLDED))):
            if (said := _said(line_at(data, start).decode("utf-8", "surrogatepass"))) and _RESULT_LINE.search(said):
                return said
    return None


def _said(line: str) -> str:
    """A line without the white space and the rules (`=====`) around it."""
    return line.strip().strip("=").strip()


def without_heredoc_bodies(command: str, body_lines: int = HEREDOC_LINES, *, marked: bool = True) -> str:
    """The command with each here-document's body longer than `body_lines` replaced by its line
    count: the body is the content of a file the command writes (which is on disk), not what was
    run. Not `marked`: each body and the line that ends it left out, the shell's own words alone."""
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
            if marked and len(body) > body_lines:  # a commit message's subject is its first line: keep it
                subject = [body[0]] if is_git_commit(lines[0]) else []
                kept += [*subject, f"[… {len(body) - len(subject)} lines of here-document …]", lines[end]]
            elif marked:
                kept += [*body, lines[end]]
            at = end + 1
    return "\n".join(kept)


# What a shell command does to files besides what its tool's arguments name: the shell's own
# words, read a simple command at a time (`shell_effects`).
_OPERATORS = frozenset({"&&", "||", ";", ";;", "|", "|&", "&", "(", ")", "\n"})
_WRITES_TO = frozenset({">", ">>", "&>", "&>>", ">|"})
_OTHER_REDIRECTIONS = frozenset({"<", "<<", "<<<", "<&", ">&", "<>"})  # each with the word after it: no file written
# The options of a program that take a value (the word after them, no operand).
_VALUED = {"sed": ("-e", "-f", "--expression", "--file"), "touch": ("-d", "-r", "-t")}
_PREFIXES = frozenset({"sudo", "command", "exec", "nohup", "time"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


# What a command that writes or deletes a file holds; most hold none, and are not read word by word.
_MAY_TOUCH = re.compile(r"(?<![\d&])>(?!&)|\b(?:rm|tee|touch|sed)\b")


@lru_cache(maxsize=1024)  # (the facts and the work state each ask it of a command: a session runs the same ones again and again)
def shell_effects(command: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files a shell command writes (`>`, `>>`, `tee`, `sed -i`, `touch`) and those it deletes
    (`rm`), as it names them; a name with a glob or an expansion in it is no file's. A line the
    shell's quoting cannot read (a string left open) says nothing."""
    if not _MAY_TOUCH.search(command):
        return (), ()
    written: list[str] = []
    deleted: list[str] = []
    for words in _simple_commands(command):
        arguments: list[str] = []
        at = 0
        while at < len(words):
            word = words[at]
            if word in _WRITES_TO or word in _OTHER_REDIRECTIONS:
                if word in _WRITES_TO and at + 1 < len(words):
                    written.append(words[at + 1])
                at += 2
                continue
            if not (word.isdigit() and at + 1 < len(words) and (words[at + 1] in _WRITES_TO or words[at + 1] in _OTHER_REDIRECTIONS)):
                arguments.append(word)  # (a digit before a redirection is the descriptor it redirects)
            at += 1
        arguments = _without_prefixes(arguments)
        if not arguments:
            continue
        program, options = arguments[0].rsplit("/", 1)[-1], arguments[1:]
        operands = _operands(options, valued=_VALUED.get(program, ()))
        if program == "rm":
            recursive = any(a == "--recursive" or a.startswith("-") and not a.startswith("--") and "r" in a.lower() for a in options)
            deleted += [operand.rstrip("/") + "/" if recursive else operand for operand in operands]
        elif program in ("tee", "touch"):
            written += operands
        elif program == "sed" and any(a.startswith(("-i", "--in-place")) for a in options):
            scripted = any(a in ("-e", "-f") or a.startswith(("--expression", "--file")) for a in options)
            written += operands if scripted else operands[1:]
    return tuple(p for p in written if _names_a_file(p)), tuple(p for p in deleted if _names_a_file(p))


def _names_a_file(word: str) -> bool:
    return not word.startswith("/dev/") and word not in ("", "/") and not any(c in word for c in "*?[$`&")


def _simple_commands(command: str) -> Iterator[list[str]]:
    """The words of each simple command of a shell command (its here-documents left out), split at
    its operators and line breaks; none when its quoting cannot be read (a string left open)."""
    lexer = shlex.shlex(without_heredoc_bodies(command, 0, marked=False), posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace_split, lexer.whitespace = True, " \t\r"
    try:
        words = list(lexer)
    except ValueError:
        return
    simple: list[str] = []
    for word in words:
        if word in _OPERATORS:
            yield simple
            simple = []
        else:
            simple.append(word)
    yield simple


def _last_program(command: str) -> str | None:
    """The program of a command's last simple command, whose status is the command's."""
    last = _without_prefixes(next((words for words in reversed(list(_simple_commands(command))) if words), []))
    return last[0].rsplit("/", 1)[-1] if last else None


def _without_prefixes(words: list[str]) -> list[str]:
    """A simple command's words from its program on: what runs it (`sudo`, `time`) and the
    variables set for it (`A=1`) left out."""
    at = 0
    while at < len(words) and (words[at] in _PREFIXES or _ASSIGNMENT.match(words[at])):
        at += 1
    return words[at:]


def _first_word(text: str) -> str | None:
    """The first word of a command's arguments, its quotes taken off (`"src/a.py" 12` → `src/a.py`)."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    return words[0] if words else None


def _operands(arguments: list[str], valued: tuple[str, ...]) -> list[str]:
    """A program's arguments that are no option (all of them after `--`), the value of a `valued` option aside."""
    found, options, taking = [], True, False
    for argument in arguments:
        if taking or not argument:
            taking = False
        elif options and argument == "--":
            options = False
        elif options and argument.startswith("-") and argument != "-":
            taking = argument in valued
        else:
            found.append(argument)
    return found


def same_file(one: str, other: str) -> bool:
    """Whether two names are of one file as two calls may name it: the same, or one a path of a
    directory or more at the other's end (`src/a.py` and `/repo/src/a.py`; a bare `a.py` is
    another directory's as well). A name that ends in `/` (`rm -r build/`) is of every file under it."""
    one, other = one.removeprefix("./"), other.removeprefix("./")
    if one.endswith("/") or other.endswith("/"):
        directory, path = (one, other) if one.endswith("/") else (other, one)
        return (path == directory.rstrip("/") or path.startswith(directory)
                or ("/" in directory.rstrip("/") and "/" + directory in path))
    shorter, longer = sorted((one, other), key=len)
    return one == other or "/" in shorter and longer.endswith("/" + shorter)


def modified_paths(name: str, arguments: Any) -> list[str]:
    """The files a call changes: an edit or write tool's path, an editor's write command, a patch's files."""
    patch = next((v for v in (arguments.get("input"), arguments.get("patch")) if isinstance(v, str)), None) \
        if isinstance(arguments, dict) else arguments if isinstance(arguments, str) else None
    if patch is None and isinstance(arguments, dict):
        # Codex runs a patch through the shell too: an argv, or a here-document in `cmd` / `command`.
        shell: list[Any] = []
        for key in ("command", "cmd"):
            value = arguments.get(key)
            shell += value if isinstance(value, list) else [value]
        patch = next((v for v in shell if isinstance(v, str) and "*** Begin Patch" in v), None)
    if patch is not None and "*** " in patch:
        return [m.strip() for m in _PATCH_FILE.findall(patch)]
    if not isinstance(arguments, dict):
        return []
    lower = name.lower()
    changes = lower in EDIT_TOOLS or (isinstance(arguments.get("command"), str) and arguments["command"] in EDITOR_WRITES)
    return named_paths(arguments) if changes else []


@dataclass
class _Tracker:
    """The signals as the messages go by."""

    tasks: tuple[Task, ...] | None = None
    created: dict[str, Task] | None = None  # Claude Code's TaskCreate / TaskUpdate, by task id
    committed_since_tasks: bool = False
    commits: list[Commit] = field(default_factory=list)
    modified: dict[str, None] = field(default_factory=dict)  # ordered sets
    read: dict[str, None] = field(default_factory=dict)
    deleted: dict[str, None] = field(default_factory=dict)
    # The last run of each check, and the last failure nothing fixed since, as (command, output,
    # failed): their result line and error are found once, for what is left at the end (a long
    # session runs the same tests thousands of times).
    runs: dict[str, tuple[str, str, bool]] = field(default_factory=dict)
    failure: tuple[str, str] | None = None
    opened: str | None = None  # the file SWE-agent's editor has open (`open`, `create`): what its `edit` and `insert` change

    def call(self, call: ToolCall) -> None:
        arguments = call.input if isinstance(call.input, dict) else {}
        listed = task_list(arguments)
        if listed is not None:
            self.tasks, self.created, self.committed_since_tasks = listed, None, False

    def touched(self, call: ToolCall) -> None:
        """The files a call that did not fail named: those it changed, and those it read; and
        SWE-agent's editor as tools (`open`, `create` with a path, then `edit`, `insert` without one)."""
        named = named_paths(call.input)
        if call.name in ("open", "create") and named:
            self.opened = named[0]
        elif call.name in ("edit", "insert") and not named and self.opened is not None:
            self.wrote([self.opened])
        self.wrote(modified_paths(call.name, call.input))
        for path in named:
            self.looked_at(path)

    def looked_at(self, path: str) -> None:
        """A file read (the newest last), unless it was modified."""
        if path not in self.modified:
            self.read.pop(path, None)
            self.read[path] = None

    def wrote(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.modified.pop(path, None)
            self.modified[path] = None
            self.deleted = {gone: None for gone in self.deleted if not same_file(gone, path)}

    def removed(self, paths: Iterable[str]) -> None:
        for gone in paths:
            for files in (self.modified, self.read):
                for path in [path for path in files if same_file(path, gone)]:
                    del files[path]
            self.deleted[gone] = None

    def task_tool(self, call: ToolCall, output: str) -> None:
        """Claude Code's `TaskCreate` (the id is in its result) and `TaskUpdate`."""
        arguments = call.input if isinstance(call.input, dict) else {}
        if self.created is None:
            self.created = {}
        if call.name == "TaskCreate" and isinstance(arguments.get("subject"), str):
            match = re.search(r"#(\w+)", output)
            task_id = match.group(1) if match else str(len(self.created) + 1)
            self.created[task_id] = Task(" ".join(arguments["subject"].split()), PENDING)
        elif call.name == "TaskUpdate" and str(arguments.get("taskId")) in self.created:
            task_id = str(arguments["taskId"])
            task = self.created[task_id]
            if arguments.get("status") == "deleted":
                del self.created[task_id]
            else:
                subject = arguments.get("subject")
                self.created[task_id] = Task(" ".join(subject.split()) if isinstance(subject, str) else task.text,
                                             status_of(arguments["status"]) if "status" in arguments else task.status)
        self.tasks, self.committed_since_tasks = tuple(self.created.values()), False

    def ran(self, command: str, output: str, failed: bool) -> None:
        if not failed:
            written, deleted = shell_effects(command)
            self.wrote(written)
            self.removed(deleted)
            self._edited(command)
        if commit := git_commit(command, output, failed):
            self.commits.append(commit)
            self.committed_since_tasks = True
        key = check_key(command)
        if key is not None:
            self.runs.pop(key, None)
            self.runs[key] = (command if "\n" not in command else key, output, failed)
        if failed:
            self.failure = (command, output)
        elif self.failure is not None and run_key(command) == run_key(self.failure[0]):
            self.failure = None  # the same command succeeded since

    def _edited(self, command: str) -> None:
        """SWE-agent's editor, which its agent runs as commands: `open FILE` and `create FILE` name
        the file the next `edit` and `insert` change (a created one is changed: it is new)."""
        program, _, rest = command.partition("\n")[0].strip().partition(" ")
        if program in ("open", "create") and (named := _first_word(rest)):
            self.opened = named
            if program == "create":
                self.wrote([named])
            else:
                self.looked_at(named)
        elif program in ("edit", "insert") and self.opened is not None:
            self.wrote([self.opened])

    def state(self) -> WorkState:
        runs = tuple(Run(command, result_line(output, failed), failed) for command, output, failed in reversed(self.runs.values()))
        return WorkState(self.tasks, tuple(dict.fromkeys(self.commits)), tuple(reversed(self.modified)),
                         tuple(reversed(self.read)), runs, _problem(self.failure),
                         self.committed_since_tasks and self.tasks is not None, tuple(self.deleted))


def _problem(failure: tuple[str, str] | None) -> Problem | None:
    """The problem a failed run left: its last error line, else its result line (none when it printed nothing)."""
    if failure is None:
        return None
    command, output = failure
    found = error_lines(output, True)
    return Problem(command, found[-1] if found else result_line(output, True)) if found or output.strip() else None


def find_work_state(messages: Sequence[Message]) -> WorkState:
    """Where the work stands after `messages` (each read apart, `Message.read_apart`)."""
    finder = WorkStateFinder()
    for message in messages:
        finder.add(message.read_apart())
    return finder.state()


class WorkStateFinder:
    """Where the work stands, a message at a time: for a pass over the messages that finds other
    things in them too (`checkpoint.find_facts`), each message read once."""

    def __init__(self) -> None:
        self._tracker = _Tracker()
        self._known: dict[str, ToolCall] = {}
        self._unanswered: dict[str, ToolCall] = {}  # calls whose files wait for their result: a failed one touched none

    def add(self, message: Message) -> None:
        for block in message.blocks:
            if isinstance(block, ToolCall):
                # Its name and input, for its result: not its raw, which may hold the result too
                # (a Gemini CLI record's call holds its output), until the end of the pass.
                self._known[block.id] = self._unanswered[block.id] = ToolCall(block.id, block.name, block.input)
                self._tracker.call(block)
            elif isinstance(block, ToolResult) and (call := self._known.get(block.tool_call_id)) is not None:
                if self._unanswered.pop(block.tool_call_id, None) is not None and not block.is_error:
                    self._tracker.touched(call)
                _result(self._tracker, call, block)

    def state(self) -> WorkState:
        for call in self._unanswered.values():  # (its result is after these messages)
            self._tracker.touched(call)
        self._unanswered = {}
        return self._tracker.state()


def _result(tracker: _Tracker, call: ToolCall, result: ToolResult) -> None:
    output = result_text(result)
    if is_placeholder(output):
        output = kept_output(output)  # the key lines prune kept of it (an error, a commit, a summary), if any
        if not output:
            return
    if call.name in ("TaskCreate", "TaskUpdate"):
        tracker.task_tool(call, output)
        return
    command = command_of(call.input)
    if command is not None:
        tracker.ran(command, output, failed_run(command, output, bool(result.is_error)))


def trajectory_runs(pairs: Iterable[tuple[str, str]]) -> WorkState:
    """Where the work stands in a trajectory: (command, what it printed) in order."""
    tracker = _Tracker()
    for command, output in pairs:
        tracker.ran(command, output, failed_run(command, output, False))
    return tracker.state()
