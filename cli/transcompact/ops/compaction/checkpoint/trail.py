"""The artifact trail: what follows a model's summary, the checkpoint's sections marked for it
(`Section.in_trail`: the task list, commits, the open problem, the last runs, the fact lists),
within the checkpoint's budget: every file modified, command and error as exact strings, the
other items only where the summary does not say them already.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Any

from .earlier import merged, sections
from .facts import Facts
from .layout import COUNTING, LAYOUT, RUNS, TRAIL, FactList, Section, distinct
from .render import chosen_facts, count_facts, section_lines, shown_commands
from .room import Room

IN_TRAIL = [entry for entry in LAYOUT if isinstance(entry, Section) and entry.in_trail]


def artifact_trail(facts: Facts, budget_tokens: int, ratio: float, summary: str, counts: Counter | None = None,
                   previous: str | None = None) -> str:
    """The trail's text, within `budget_tokens`; "" when the summary has it all. `previous`: the
    summary the compaction before left, whose trail's items are taken in where the new summary
    does not say them (a model's update of it may not). `counts`, when given, gets per kind of
    fact how many the dropped part held and how many the summary and the trail keep together."""
    said = " ".join(summary.split())
    chars = int(budget_tokens / ratio) if ratio > 0 else 0
    room = _Unsaid(said, Room(chars - 120 if ratio > 0 else 0, budget_tokens, chars))
    state = merged(facts, [group for group in sections(previous) if group[0] == TRAIL] if previous else [])
    kept: dict[Section[Any], list[str]] = {}
    for section in IN_TRAIL:
        if section.keep is not None:
            kept[section] = section.keep(section, state, room)
    shown = shown_commands(state, kept[RUNS])
    # Every file modified, command and error, as it is exact, whatever the summary's prose says
    # of it; a file only read, where the summary does not name it.
    modified = set(facts.work.modified)
    unsaid = replace(facts, files=tuple(file for file in facts.files
                                        if file[1] in modified or file in _unsaid((file,), said)))
    kept.update(chosen_facts(unsaid, state, room, shown))
    if counts is not None:  # what the summary holds itself is kept too
        kept_counts = {}
        for kind, section in COUNTING.items():
            said_already = (distinct(section.found(facts)) - distinct(section.found(unsaid)) if isinstance(section, FactList)
                            else room.already[kind])
            kept_counts[kind] = len(kept[section]) + said_already
        count_facts(counts, facts, kept_counts, shown)
    lines = [line for section in IN_TRAIL for line in section_lines(section, kept[section])]
    return "\n".join([f"## {TRAIL}", *lines]) + "\n" if lines else ""


class _Unsaid(Room):
    """The trail's room: an item the summary says already is left out (and counted as said)."""

    def __init__(self, said: str, budget: Room) -> None:
        super().__init__(budget.left, budget.tokens, budget.chars)
        self.said = said
        self.already: Counter = Counter()  # per kind, the items the summary holds itself

    def fit(self, items: list[str], kind: str | None) -> list[str]:
        fresh = [item for item in items if _key_of(item) not in self.said]
        self.already[kind] += len(items) - len(fresh)
        return super().fit(fresh, kind)


def _unsaid(found: tuple[tuple[int, str], ...], said: str) -> tuple[tuple[int, str], ...]:
    return tuple((at, text) for at, text in found if " ".join(text.split())[:200] not in said)


def _key_of(item: str) -> str:
    """What the summary must hold for an item to be there already: a commit's hash, a path, a command, a task's text."""
    text = item[2:] if item.startswith("- ") else item
    if match := re.match(r"^\[[ x-]\] (?:\((?:in progress|cancelled)\) )?(.*)$", text, re.S):
        text = match.group(1)
    if match := re.match(r"^`([^`]+)`", text):
        text = match.group(1)
    return " ".join(text.strip("`").split())[:200]
