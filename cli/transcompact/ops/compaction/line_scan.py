"""The lines of an output that hold what is looked for, found by a few scans over the whole text
rather than a regex per line: an output is read for its errors and its summary line each time a
compaction or a prune meets it, and most of its lines hold neither.

A `LineScan` finds where a line may hold something: by what the line begins with, right after a
line break, or by a word anywhere in it (a pattern that begins with a literal is found fastest).
Only the lines a scan finds are read whole, by the exact test of what is looked for: a scan may
find more, never less. The lines are those `str.splitlines` gives (with `escaped`, split where a
JSON string wrote `\\n` too), each ended by a "\\n" of `newline_text`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import AnyStr, Generic

# The line breaks `str.splitlines` splits at besides "\n" (\r\n is one).
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")
_BREAKS = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_BREAKS_OR_ESCAPED = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]|\\n")


def newline_text(text: str, escaped: bool = False) -> str:
    """`text` with each line break made "\\n" (with `escaped`, each `\\n` written in it too)."""
    if escaped and "\\" in text and "\\n" in text:
        return _BREAKS_OR_ESCAPED.sub("\n", text)
    if any(mark in text for mark in _OTHER_BREAKS):
        return _BREAKS.sub("\n", text)
    return text


class LineScan(Generic[AnyStr]):
    """The scans for the lines that may hold something: `begins`, a pattern a line may begin with
    (matched at the text's start and after each line break), and `anywhere`, patterns a line may
    hold anywhere in it; each compiled with `flags`."""

    def __init__(self, begins: AnyStr, anywhere: Iterable[AnyStr] = (), flags: int = 0) -> None:
        self._first_line: re.Pattern[AnyStr] = re.compile(begins, flags)
        self._other_lines: re.Pattern[AnyStr] = re.compile(_newline(begins) + begins, flags)
        self._anywhere: tuple[re.Pattern[AnyStr], ...] = tuple(re.compile(pattern, flags) for pattern in anywhere)

    def line_starts(self, text: AnyStr) -> list[int]:
        """Where each line of `text` (a `newline_text`, or its bytes) that a scan finds starts, in order."""
        newline = _newline(text)
        starts = {text.rfind(newline, 0, match.start()) + 1 for scan in self._anywhere for match in scan.finditer(text)}
        starts.update(match.start() + 1 for match in self._other_lines.finditer(text))
        if self._first_line.match(text):
            starts.add(0)
        return sorted(starts)


def line_at(text: AnyStr, start: int) -> AnyStr:
    end = text.find(_newline(text), start)
    return text[start:] if end < 0 else text[start:end]


def lines_from_the_end(text: str) -> Iterator[str]:
    """The lines of `text` (a `newline_text`), the last first: for what is looked for from the end."""
    end = len(text)
    while True:
        start = text.rfind("\n", 0, end) + 1
        yield text[start:end]
        if not start:
            return
        end = start - 1


def _newline(text: AnyStr) -> AnyStr:
    return b"\n" if isinstance(text, bytes) else "\n"
