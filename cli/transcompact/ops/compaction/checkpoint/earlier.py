"""An earlier summary read back: its Markdown sections (`sections`), its goal (`goal_of`), and
the state the new checkpoint shows (`merged`): the new part's facts with the earlier ones taken
in, each section of ours read by its record (`layout`), what a model wrote kept as it wrote it.
"""

from __future__ import annotations

import re
from typing import Any

from .facts import Facts
from .layout import EARLIER, GOAL, NO_GOAL, SECTIONS, TRAIL, Merged, Section, Written

# Each section of ours by its (## heading, ### heading), under the names earlier versions gave it too.
# A section of the trail after a model's summary is read as the checkpoint's own.
READERS: dict[tuple[str, str | None], Section[Any]] = {
    (part, heading): section for section in SECTIONS for heading in (section.heading, *section.aliases)
    for part in (section.part, *([TRAIL] if section.in_trail else []))}


def sections(body: str) -> Written:
    """(## heading, ### heading or None, items) of a Markdown summary; an item is a bullet with
    its indented lines, or the text before the first bullet."""
    groups: Written = []
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


def goal_of(body: str) -> str | None:
    """The text of a summary's Goal section."""
    return next(("\n".join(items) for h2, h3, items in sections(body) if h2 == GOAL and h3 is None and items), None)


def merged(facts: Facts, earlier: Written) -> Merged:
    """The new facts with an earlier checkpoint's (or a model's summary's sections) taken in."""
    state = Merged.of(facts)
    read: dict[Section[Any], list[Any]] = {}
    for h2, h3, items in earlier:
        section = READERS.get((h2, h3))
        if section is None:
            if h2 != GOAL:  # free text before any heading is a summary written some other way
                state.written.append((h2 or EARLIER, h3, items))
            elif h3 is None and items and items[0] != NO_GOAL:
                state.goal = "\n".join(items)
            continue
        if section.parse is None:
            continue
        values = []
        for item in items:
            if (value := section.parse(item)) is not None:
                values.append(value)
            elif section.keeps_foreign:
                state.written.append((section.part, section.heading, [item]))
        read[section] = values if section.latest_only else [*read.get(section, ()), *values]
    for section in SECTIONS:
        if section.merge is not None:
            section.merge(state, read.get(section, []))
    return state
