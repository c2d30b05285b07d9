"""The key lines of a tool result: what prune keeps of an output it clears, or of the middle it trims.

They are the lines the checkpoint reads as what came of a call (ops/compaction: `output_errors`,
`work_state`), found by the same code, in this order:

- the exit status of a command that exited non-zero (`Exit code 1`), first, so that the kept
  lines still read as a failure;
- git's `[branch hash] subject` line, of a `git commit`;
- the error lines (`output_errors.result_error_lines`: a traceback's exception, a failed test, a
  compiler's `error:`, else the last line of a failed command that says why);
- the summary line of a test, build or lint run (`12 passed, 1 failed`), of a command that is one;
- of a call the user rejected (Claude Code: "The user doesn't want to proceed with this tool
  use…"), that, and the words the user typed with the rejection, instead of all the above.

Each is one line, its runs of whitespace made one space. Those kept fit in KEY_LINES_CHARS
(`within_budget`): a line that does not fit whole is cut at a word to the room left, or left out
when too little is left.

Where they go (docs/prune.md): right under the line of the notice or marker that stands for what
was left out, one a line. A cleared result is its notice, then its key lines:

    [Tool output cleared — content was processed in earlier turns]
    Exit code 1
    FAILED tests/test_cart.py::test_total - AssertionError: assert 3 == 4

a soft-trimmed one has those its head and tail do not show under the trim marker, then a blank
line and its tail; one cut by kind has them after the notice that ends it (truncate.py).
"""

from __future__ import annotations

import re
from typing import Any

from ...core.model import ToolResult, result_text
from ..compaction.output_errors import clipped, command_of, exit_failed, result_error_lines
from ..compaction.work_state import check_key, commit_line, is_git_commit, result_line

# ~100 tokens: the two or three error lines of a failed run (most are under 150 characters), or a
# commit line and a test summary, fit whole, while a cleared result still saves nearly all it held.
KEY_LINES_CHARS = 400
SHORTEST_CUT = 60  # a line cut shorter than this no longer says what happened: it is left out

# Claude Code's answer to a call the user rejected, and the words they typed with it.
_REJECTED = re.compile(r"The user doesn't want to proceed with this tool use\.")
_USER_SAID = re.compile(r"the user said:\n(.+)", re.S)
_LINE = re.compile(r"[^\n]+")


def key_lines(result: ToolResult, tool: str | None, arguments: Any) -> list[str]:
    """The key lines of a result of `tool` called with `arguments`, all of them (`within_budget` keeps those that fit)."""
    return list(dict.fromkeys(" ".join(line.split()) for line in _found(result, result_text(result), tool, arguments)))


def not_shown(lines: list[str], *parts: str) -> list[str]:
    """The lines none of `parts` (what a cut kept of the output) shows, whitespace aside."""
    shown = [" ".join(part.split()) for part in parts]
    return [line for line in lines if not any(line in part for part in shown)]


def _found(result: ToolResult, text: str, tool: str | None, arguments: Any) -> list[str]:
    if rejected := _REJECTED.search(text):
        said = _USER_SAID.search(text, rejected.end())
        if said is None:
            return [rejected.group(0)]
        return [f"{rejected.group(0)} … the user said:", *(line for line in said.group(1).splitlines() if line.strip())]
    found: list[str] = []
    if exit_failed(text):  # then one of its lines says so (one of the first, or Gemini CLI's last ones): the first that does
        exit_status = next((line.group() for line in _LINE.finditer(text) if exit_failed(line.group())), None)
        found += [exit_status] if exit_status is not None else []
    command = command_of(arguments)
    if command is not None and is_git_commit(command) and (commit := commit_line(text)) is not None:
        found.append(commit)
    found += result_error_lines(result, tool, arguments)
    if command is not None and check_key(command) is not None:
        summary = result_line(text, failed=False)  # not failed: its summary line, else "ok"
        if summary != "ok":
            found.append(summary)
    return found


def within_budget(lines: list[str], chars: int = KEY_LINES_CHARS) -> list[str]:
    """The lines, in order, that fit in `chars` (a newline each included); one that does not fit
    whole is cut to the room left, or left out when that is under SHORTEST_CUT."""
    kept, room = [], chars
    for line in lines:
        if len(line) + 1 > room:
            if room - 1 < SHORTEST_CUT:
                continue  # a shorter line after it may still fit
            line = clipped(line, room - 3)  # `clipped` may add " …"
        kept.append(line)
        room -= len(line) + 1
    return kept
