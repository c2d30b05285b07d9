"""The error messages in what a tool printed: what the checkpoint keeps, the summary prompt
points at, and where the work stands reads as a run's failure.

An error is an error message: an exception line after a traceback (or at the start of a line),
a failed test or assertion, a compiler's or a tool's `error:` line, git's `fatal:`; and when a
command failed (an error result, a non-zero exit) without any of these, the last line that
says why. Never a progress line ("Checking 1 source file ...", "Getting extensions ..."), an
exit status alone, or a placeholder a compaction left (of one, only the key lines prune kept
under its notice are read: `kept_output`); never a line of a file the agent read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple, TypeVar

from ...core.model import ToolResult, result_text
from .line_scan import LineScan, line_at, lines_from_the_end, newline_text

T = TypeVar("T")

COMMAND_KEYS = ("command", "cmd", "script")
# Tools that show what a file or a search holds: their lines are source, not errors.
READ_TOOLS = frozenset({
    "read", "read_file", "readfile", "view", "view_file", "open", "open_file", "cat", "notebookread", "file_read",
    "get_file_contents", "grep", "glob", "ls", "search", "find", "webfetch", "fetch", "web_fetch",
})
LINE_CHARS = 500  # an error line is kept whole up to this, then cut at a word
ERRORS_PER_OUTPUT = 3  # one failed build's forty compiler errors say what its first two and last one say

_TRACEBACK = "Traceback (most recent call last):"
_ERROR_LINE = re.compile(
    r"^(?:FAILED |ERROR:? |FAIL: |--- FAIL: |npm ERR! |fatal: |panic: |E {3}\S|\S+::\S+.* (?:FAILED|ERROR)\b"  # tests, git, go, npm
    r"|error(?:\[\w+\])?: |\S+:\d+(?::\d+)?: (?:fatal )?error: |\S+\(\d+,\d+\): error "  # compilers
    r"|AssertionError\b|assert .* failed|Assertion with .* failed"  # assertions (Python, ExUnit)
    r"|\*\* \(\w[\w.]*\) |(?:✘ )?\[ERROR\] |(?:Error|ERROR|Fatal|FATAL)\b"  # Elixir, esbuild, a line that says so
    r"|(?!\d+:)[\w.-]+: .*\b(?:[Nn]ot [Ff]ound|[Ee]rror|[Ff]ailed|[Dd]enied|[Rr]efused|[Ii]nvalid|[Cc]annot|[Uu]nable)\b"  # `gh: Not Found`
    r"|- [EF]\d{3} \S"  # SWE-agent's lint of an edit it refused (`- E999 SyntaxError: …`)
    r"|.*\b(?:failed|FAILED)[:.!]?$"  # a line that ends saying what failed
    r"|[A-Za-z_][\w.]*(?:Error|Exception)(?:: |$))"  # an exception at the start of a line
)
# Where a line may be one `_ERROR_LINE` matches (stripped), in a few scans over an output (line_scan.py):
# each of its ways to begin, past the line's indent (taken whole: never tried again from within it);
# and the words the others hold anywhere in the line, each scan beginning with a literal, which is
# found fastest: `FAILED`; `ERROR`, and an `Error` or `Exception` before `: ` or the line's end; a
# compiler's `: error: `; a line that ends saying it failed.
_ERROR_SCAN = LineScan(
    r"(?=([^\S\n]*))\1(?:FAIL: |--- FAIL: |npm ERR! |fatal: |panic: |E {3}\S|error(?:\[\w+\])?: "
    r"|AssertionError\b|assert .* failed|Assertion with .* failed|\*\* \(\w[\w.]*\) |(?:Error|Fatal|FATAL)\b"
    r"|(?!\d+:)[\w.-]+: .*\b(?:[Nn]ot [Ff]ound|[Ee]rror|[Ff]ailed|[Dd]enied|[Rr]efused|[Ii]nvalid|[Cc]annot|[Uu]nable)\b"
    r"|- [EF]\d{3} \S)",
    ("FAILED", r"E(?:RROR|rror(?:: |[^\S\n]*$)|xception(?:: |[^\S\n]*$))", r": (?:(?<=\): )error |(?:fatal )?error: )",
     r"failed[:.!]?[^\S\n]*$"), re.M)
_EXIT = re.compile(r"^(?:Exit code|exit code:?|Command exited with code|Process exited with code) (-?\d+)"
                   r"|<returncode>(-?\d+)</returncode>")
# The exit status said after the output, on a line of its own: Gemini CLI's shell tool (before
# the process group), OpenHands' (`[The command completed with exit code 1.]`), Go's `exit status 1`,
# a runner's last line (`Process exited with code 1`).
_EXIT_AFTER = re.compile(r"^(?:Exit Code: |(?:Process|Command) exited with code |exit status "
                         r"|\[The command completed with exit code |\[Command finished with exit code )(-?\d+)(?:\.?\])?$", re.M)
# What Gemini CLI's shell tool writes around an output (its status lines, the wrapper it marks
# the output with): never an error, nor why a command failed.
_SHELL_FRAME = re.compile(r"(?:Exit Code|Signal|Background PIDs|Process Group PGID): |Error: \(none\)$|Output: \(empty\)$"
                          r"|</?untrusted_context>$|\[(?:Current working directory|Python interpreter): .*\]$")
# The tags an agent wraps an output in (mini-swe-agent's `<output>`, `<returncode>`), on lines of their own.
_WRAPPER = re.compile(r"</?(?:output|error|returncode|untrusted_context)>$|```$")
# Lines that say what a command is doing, not what went wrong.
_PROGRESS = re.compile(r"(?:\.\.\.|…)\s*$|^(?:Checking|Running|Compiling|Downloading|Getting|Building|Installing|"
                       r"Collecting|Resolving|Fetching|Loading|Starting|Waiting|Updating|Preparing|Analyzing|Linting)\b"
                       r"|^(?:<output>|</output>|<error>|</error>|```)$|^[-=_*#~]{3,}$|^\$ ")
_FAILURE_WORDS = re.compile(r"(?i)\b(?:error|failed|failure|cannot|can't|unable|invalid|denied|refused|not found|no such|"
                            r"unknown|missing|unexpected|timed? ?out)\b")
# What a compaction leaves in place of an output (ours, Claude Code's microcompact, an archive's):
# a notice line, which prune may follow with the output's key lines, one a line (ops/pruning/key_lines.py).
# White space around it aside (matched, not stripped: an output is not copied to be asked).
_PLACEHOLDER = re.compile(r"\s*\[(?:Old tool result content cleared|Tool output cleared\b[^\]\n]*)\](?:\n|\s*\Z)")


def is_placeholder(text: str) -> bool:
    return bool(_PLACEHOLDER.match(text))


def kept_output(text: str) -> str:
    """What stands for the output: of a placeholder, the key lines kept under its notice ("" when
    none), else the text itself."""
    return text.strip().partition("\n")[2] if is_placeholder(text) else text


def clipped(text: str, limit: int) -> str:
    """`text` up to `limit` characters, cut after a whole word."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …"


@contextmanager
def remembered() -> Iterator[None]:
    """Within it, what is read of an output (its error lines, its result line) is not read again
    (`compact` reads each old output several times: prune's key lines, the checkpoint's facts,
    its work state; `remembered_of`). An output is known by its length and its hash, not held."""
    token = _REMEMBERED.set({})
    try:
        yield
    finally:
        _REMEMBERED.reset(token)


_REMEMBERED: ContextVar[dict[tuple[int, int, Hashable], Any] | None] = ContextVar("remembered_readings", default=None)
_UNKNOWN = object()


def remembered_of(text: str, reading: Hashable, read: Callable[[], T]) -> T:
    """`read()` of the output `text`, made once within `remembered` (`reading` tells one reading
    of an output from another), else each time."""
    known = _REMEMBERED.get()
    if known is None:
        return read()
    key = (len(text), hash(text), reading)
    if (found := known.get(key, _UNKNOWN)) is _UNKNOWN:
        found = known[key] = read()
    return found


def error_lines(text: str, failed: bool) -> list[str]:
    """The lines of an output that report an error: exception lines after a traceback, test
    failures, compiler errors; when the command failed and none of these is there, the last
    line that says why.

    A part that came as a JSON string, its line breaks written `\\n`, is split at them too: a
    tool's heading and the finding under it are two lines, shown as they were."""
    return list(remembered_of(text, failed, lambda: tuple(_error_lines(text, failed))))


def _error_lines(text: str, failed: bool) -> list[str]:
    text = newline_text(kept_output(text), escaped=True)
    found = _stated_errors(text)
    if failed and not found and (why := _why_it_failed(text)) is not None:
        found.append(why)
    found = list(dict.fromkeys(found))
    if len(found) > ERRORS_PER_OUTPUT:
        found = [*found[:ERRORS_PER_OUTPUT - 1], f"… {len(found) - ERRORS_PER_OUTPUT} more error lines in that output …",
                 found[-1]]
    return [clipped(line, LINE_CHARS) for line in found]


class _Traceback(NamedTuple):
    start: int  # where its first line starts (`Traceback (most recent call last):`)
    end: int  # where the line that says what was raised ends (the text's end when none does)
    raised: str | None  # that line, stripped
    raised_at: int  # where it starts


def _stated_errors(text: str) -> list[str]:
    """The error lines of `text` (a `newline_text`) in order: the line that ends each traceback,
    and outside the tracebacks those `_ERROR_LINE` matches."""
    tracebacks = _tracebacks(text)
    found = [(traceback.raised_at, traceback.raised) for traceback in tracebacks if traceback.raised is not None]
    ahead = 0  # the first traceback that does not end before the line
    for start in _ERROR_SCAN.line_starts(text):
        while ahead < len(tracebacks) and tracebacks[ahead].end <= start:
            ahead += 1
        if ahead < len(tracebacks) and tracebacks[ahead].start <= start:
            continue  # a traceback's line: its frames are source, its last line is already found
        if _ERROR_LINE.match(stripped := line_at(text, start).strip()) and not _SHELL_FRAME.match(stripped):
            found.append((start, _said_whole(text, start, stripped)))
    return [line for _, line in sorted(found)]


def _said_whole(text: str, start: int, line: str) -> str:
    """An error line as it is kept: a label alone (OpenHands' editor's `ERROR:`) with the line
    after it, which says what went wrong; SWE-agent's lint item without its list's `- `."""
    if line.endswith(":") and line[:-1].isalpha():
        after = text.find("\n", start)
        reason = next((said for said in (part.strip() for part in text[after + 1:after + 2001].split("\n")) if said), "") \
            if after >= 0 else ""
        return f"{line} {reason}".strip()
    return line[2:] if line.startswith("- ") else line


def _tracebacks(text: str) -> list[_Traceback]:
    """Each traceback of `text` (a `newline_text`): from a line that begins with `_TRACEBACK` past
    the indented frames (and blank lines, and a chained traceback's first line) to the first line
    that is none of these, what was raised."""
    found: list[_Traceback] = []
    at = text.find(_TRACEBACK)
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        if (not found or start >= found[-1].end) and (start == at or text[start:at].isspace()):
            found.append(_traceback_from(text, start))
        at = text.find(_TRACEBACK, at + len(_TRACEBACK))
    return found


def _traceback_from(text: str, start: int) -> _Traceback:
    line_end = text.find("\n", start)
    while line_end >= 0:
        line_start, line_end = line_end + 1, text.find("\n", line_end + 1)
        line = text[line_start:] if line_end < 0 else text[line_start:line_end]
        stripped = line.strip()
        if stripped and not stripped.startswith(_TRACEBACK) and line[:1] not in (" ", "\t"):
            # A tag an agent wraps the output in (`</output>`): the output ended before what was raised.
            raised = None if _WRAPPER.match(stripped) else stripped
            return _Traceback(start, len(text) if line_end < 0 else line_end, raised, line_start)
    return _Traceback(start, len(text), None, len(text))


def _why_it_failed(text: str) -> str | None:
    """Of a command that failed without an error line, the last line (of `text`, a `newline_text`)
    that says it failed, else the last line: why it failed. Read from the end, where it is."""
    last = None
    for line in lines_from_the_end(text):
        said = line.strip()
        if (said and not _EXIT.match(said) and not _EXIT_AFTER.match(said) and not _SHELL_FRAME.match(said)
                and not said.startswith(_TRACEBACK) and not _PROGRESS.search(said)):
            if _FAILURE_WORDS.search(said):
                return said
            if last is None:
                last = said
    return last


def exit_failed(text: str) -> bool:
    """Whether an output says its command exited with a status other than 0."""
    return exit_status(text) not in ("0", None)


def exit_status(text: str) -> str | None:
    """The exit status an output says its command exited with, as written: at its start, as most
    agents' tools say it, or on one of its last lines (Gemini CLI's, OpenHands', Go's); None when it says none."""
    match = _EXIT.search(text[:200])
    if match is not None:
        return match.group(1) or match.group(2)
    said_after = _EXIT_AFTER.findall(text[-200:])
    return said_after[-1] if said_after else None


def result_error_lines(result: ToolResult, tool: str | None, arguments: Any) -> list[str]:
    """The error lines of a tool result: none from a read or a search that did not fail."""
    text = kept_output(result_text(result))
    failed = bool(result.is_error) or exit_failed(text)
    if not failed and ((tool or "").lower() in READ_TOOLS or _reads_a_file(arguments)):
        return []
    return error_lines(text, failed)


def _reads_a_file(arguments: Any) -> bool:
    """An editor tool asked to view a file (`str_replace_editor view`, `text_editor` view)."""
    return isinstance(arguments, dict) and arguments.get("command") == "view"


def command_of(arguments: Any) -> str | None:
    """The shell command a call ran, whole: its `command` (a string, or an argv whose `bash -c` script is the last)."""
    if not isinstance(arguments, dict):
        return None
    for key in COMMAND_KEYS:
        value = arguments.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            value = value[-1] if value[0] in ("bash", "sh", "zsh") and len(value) > 1 else " ".join(value)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
