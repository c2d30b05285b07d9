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
from typing import Any

from ...core.model import ToolResult, result_text

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
    r"|[\w.-]+: .*\b(?:[Nn]ot [Ff]ound|[Ee]rror|[Ff]ailed|[Dd]enied|[Rr]efused|[Ii]nvalid|[Cc]annot|[Uu]nable)\b"  # `gh: Not Found`
    r"|.*\b(?:failed|FAILED)[:.!]?$"  # a line that ends saying what failed
    r"|[A-Za-z_][\w.]*(?:Error|Exception)(?:: |$))"  # an exception at the start of a line
)
_EXIT = re.compile(r"^(?:Exit code|exit code:?|Command exited with code|Process exited with code) (-?\d+)"
                   r"|<returncode>(-?\d+)</returncode>")
# Lines that say what a command is doing, not what went wrong.
_PROGRESS = re.compile(r"(?:\.\.\.|…)\s*$|^(?:Checking|Running|Compiling|Downloading|Getting|Building|Installing|"
                       r"Collecting|Resolving|Fetching|Loading|Starting|Waiting|Updating|Preparing|Analyzing|Linting)\b"
                       r"|^(?:<output>|</output>|<error>|</error>|```)$|^[-=_*#~]{3,}$|^\$ ")
_FAILURE_WORDS = re.compile(r"(?i)\b(?:error|failed|failure|cannot|can't|unable|invalid|denied|refused|not found|no such|"
                            r"unknown|missing|unexpected|timed? ?out)\b")
# What a compaction leaves in place of an output (ours, Claude Code's microcompact, an archive's):
# a notice line, which prune may follow with the output's key lines, one a line (ops/pruning/key_lines.py).
_PLACEHOLDER = re.compile(r"\[(?:Old tool result content cleared|Tool output cleared\b[^\]\n]*)\](?:\n|\Z)")


def is_placeholder(text: str) -> bool:
    return bool(_PLACEHOLDER.match(text.strip()))


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


def output_lines(text: str) -> list[str]:
    """The lines of an output; a part that came as a JSON string, its line breaks written `\\n`,
    split at them too (a tool's heading and the finding under it are two lines, shown as they were)."""
    lines = text.splitlines()
    return [part for line in lines for part in line.split("\\n")] if "\\n" in text else lines


def error_lines(text: str, failed: bool) -> list[str]:
    """The lines of an output that report an error: exception lines after a traceback, test
    failures, compiler errors; when the command failed and none of these is there, the last
    line that says why."""
    text = kept_output(text)
    found: list[str] = []
    lines = output_lines(text)
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
        if _ERROR_LINE.match(stripped):
            found.append(stripped)
    if failed and not found:  # the last line that says it failed, else the last line: why it failed
        said = [s for line in lines if (s := line.strip()) and not _EXIT.match(s) and not s.startswith(_TRACEBACK)
                and not _PROGRESS.search(s)]
        why = next((s for s in reversed(said) if _FAILURE_WORDS.search(s)), said[-1] if said else None)
        if why is not None:
            found.append(why)
    found = list(dict.fromkeys(found))
    if len(found) > ERRORS_PER_OUTPUT:
        found = [*found[:ERRORS_PER_OUTPUT - 1], f"… {len(found) - ERRORS_PER_OUTPUT} more error lines in that output …",
                 found[-1]]
    return [clipped(line, LINE_CHARS) for line in found]


def exit_failed(text: str) -> bool:
    match = _EXIT.search(text[:200])
    return match is not None and (match.group(1) or match.group(2)) not in ("0", None)


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
