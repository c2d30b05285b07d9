"""Cut a large tool result by what it holds (an earlier design's smart tool-result truncation: docs/design.md §7).

A result over its cap is cut the way its kind of output reads best, and ends with a notice of
what was omitted (`[... 42 lines / 18340 bytes omitted ...]`):

- `head-tail` (shells, terminals): the first 60 and the last 40 lines, so that both the command's
  preamble and its final result stay;
- `matches` (grep, search): the leading matches, since later ones are less relevant;
- `file` (reads): a balanced head and tail, the imports and declarations and the end of the file;
- `generic` (anything else): the start, cut at a line boundary.

Lines are kept whole; only a first line that alone is over the budget is cut inside. The cut
result, notice included, fits the cap, and one that ends with a notice (or with the notice and
the key lines prune keeps under it: key_lines.py) is never cut again, so cutting twice is
cutting once; a cut that would not be shorter than the result is not made.
Which kind a tool's output is comes from `kind_of`: the default map (settings.TOOL_KINDS), by
tool name in any case, extended or overridden by the caller's entries.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ...core import settings

KINDS = ("head-tail", "matches", "file", "generic")
HEAD_LINES = 60  # head-tail: the lines kept at the start …
TAIL_LINES = 40  # … and at the end
CHARS_PER_TOKEN = 4  # the cap is in tokens by the chars ÷ 4 estimate, as that design's `tool_result_token_cap` is

GAP = "[...]\n"  # where the kept head and tail meet, so that they do not read as one text
_NOTICE = "[... {lines} lines / {bytes} bytes omitted ...]"
_ARCHIVED_NOTICE = "[... {lines} lines / {bytes} bytes omitted; archived as {id} ...]"
# A line ends at "\n" only: str.splitlines also breaks at "\r", "\x0b", "\u2028" …, after which the
# cut would add a "\n" the output never had, and its byte count would be off.
_LINE = re.compile(r"[^\n]*\n|[^\n]+")
# The notice ends a cut, or stands over the key lines prune kept of what it omitted (key_lines.py), one a line.
_ENDS_WITH_NOTICE = re.compile(r"\[\.\.\. \d+ lines / \d+ bytes omitted(; archived as [^\]]*)? \.\.\.\](?:\n[^\n]+)*\Z")


def kind_of(tool: str | None, extra: Iterable[tuple[str, str]] = ()) -> str:
    """The kind of a tool's output: `extra` (tool, kind) entries first, then the default map, by
    name in any case; `generic` for a tool neither names (or a result whose call is unknown)."""
    kinds = {**settings.TOOL_KINDS, **{name.lower(): kind for name, kind in extra}}
    return kinds.get((tool or "").lower(), "generic")


def is_truncated(text: str) -> bool:
    return _ENDS_WITH_NOTICE.search(text) is not None


def truncate(text: str, kind: str, cap_tokens: int = settings.RESULT_TOKEN_CAP, archived_as: str | None = None) -> str:
    """`text` cut by its `kind` to at most `cap_tokens` (chars ÷ 4), ending with the notice (which
    names `archived_as`, the tool call id, when the original goes to an archive); `text` itself
    when it fits, was cut already, or the cut would not make it shorter."""
    cap = cap_tokens * CHARS_PER_TOKEN
    if len(text) <= cap or is_truncated(text):
        return text
    lines = _LINE.findall(text)
    template = _ARCHIVED_NOTICE if archived_as is not None else _NOTICE
    largest = str(len(text.encode()))  # no count in the notice has more digits than the byte count
    # Room for the notice, the gap and the two newlines that may have to end a cut line before them.
    room = cap - len(template.format(lines=largest, bytes=largest, id=archived_as)) - len(GAP) - 2
    head, tail = CUTS[kind](lines, max(0, room))
    kept = _ended("".join(head)) + GAP + "".join(tail) if tail else "".join(head)
    omitted_lines = len(lines) - len(head) - len(tail)
    kept_bytes = len("".join(head + tail).encode())
    cut = _ended(kept) + template.format(lines=omitted_lines, bytes=len(text.encode()) - kept_bytes, id=archived_as)
    return cut if len(cut) < len(text) else text


# --- the kinds: each keeps (head lines, tail lines) of the result's lines within `room` characters


def head_tail(lines: list[str], room: int) -> tuple[list[str], list[str]]:
    """The first HEAD_LINES and the last TAIL_LINES lines, the room shared in that proportion."""
    head = _leading(lines[:HEAD_LINES], room * HEAD_LINES // (HEAD_LINES + TAIL_LINES))
    tail = _trailing(lines[len(head):][-TAIL_LINES:], room - _size(head))
    return (head, tail) if tail else (_leading(lines[:HEAD_LINES], room), [])  # what the tail cannot use goes to the head


def matches(lines: list[str], room: int) -> tuple[list[str], list[str]]:
    """The leading matches, ending on a match: not on grep's `--` between groups, nor a blank line."""
    head = _leading(lines, room)
    while len(head) > 1 and head[-1].strip() in ("", "--"):
        head.pop()
    return head, []


def file(lines: list[str], room: int) -> tuple[list[str], list[str]]:
    """A balanced head and tail: half the room each (what the head leaves goes to the tail)."""
    head = _leading(lines, room // 2)
    tail = _trailing(lines[len(head):], room - _size(head))
    return (head, tail) if tail else (_leading(lines, room), [])  # what the tail cannot use goes to the head


def generic(lines: list[str], room: int) -> tuple[list[str], list[str]]:
    """The start, cut at the last line boundary that fits."""
    return _leading(lines, room), []


CUTS: dict[str, Callable[[list[str], int], tuple[list[str], list[str]]]] = {
    "head-tail": head_tail, "matches": matches, "file": file, "generic": generic}


def _leading(lines: list[str], room: int) -> list[str]:
    """The first lines that fit in `room` whole; a first line longer than the room is cut to it,
    so that a result of one huge line (minified JSON, a base64 blob) still shows its start."""
    kept, used = [], 0
    for line in lines:
        if used + len(line) > room:
            break
        kept.append(line)
        used += len(line)
    if not kept and lines and room > 0:
        kept.append(lines[0][:room])
    return kept


def _trailing(lines: list[str], room: int) -> list[str]:
    """The last lines that fit in `room` whole."""
    kept, used = [], 0
    for line in reversed(lines):
        if used + len(line) > room:
            break
        kept.append(line)
        used += len(line)
    return kept[::-1]


def _ended(text: str) -> str:
    """`text` ending with a newline (unless empty), so that what follows starts a line."""
    return text if not text or text.endswith("\n") else text + "\n"


def _size(lines: list[str]) -> int:
    return sum(map(len, lines))
