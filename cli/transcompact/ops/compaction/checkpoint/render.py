"""The checkpoint written: each section takes its share of the room by its rank (the goal, which
is counted apart, takes none), what a model wrote in an earlier summary takes its share (its
start and its end), the fact lists are chosen together in what is left, what did not fit is
counted; then the sections are written in the layout's order.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ..output_errors import clipped
from .earlier import merged, sections
from .facts import FIXED, Facts
from .layout import (
    CONTEXT,
    COUNTED,
    COUNTING,
    EARLIER,
    ERRORS,
    FACT_LISTS,
    GOAL,
    LAYOUT,
    NO_GOAL,
    PROGRESS,
    RUNS,
    SECTIONS,
    FactList,
    Merged,
    ModelText,
    Section,
    Written,
)
from .room import Room, head_and_tail

SHORT_FACT = 300  # facts up to this long go into the checkpoint before longer ones
EARLIER_SHARE = 0.4  # of the room left, what an earlier summary a model wrote may take (section by section)

# The order of the budget: the ranked sections, then (after what a model wrote and the fact lists) the others.
RANKED = sorted((section for section in SECTIONS if section.rank is not None), key=lambda section: section.rank or 0)
LAST = [section for section in SECTIONS if section.rank is None and not isinstance(section, FactList)]


def checkpoint(facts: Facts, budget_tokens: int, ratio: float, previous: str | None = None, goal_chars: int = 8000,
               counts: Counter | None = None) -> str:
    """The checkpoint's text: the facts within `budget_tokens`, merged into `previous` (a summary's
    body); the goal, which is the user's text, is cut to `goal_chars` when longer (and counted
    apart, with the user's words). `counts`, when given, gets per kind of fact how many the
    dropped part held (`held …`) and how many the checkpoint keeps (`kept …`)."""
    chars = int(budget_tokens / ratio) if ratio > 0 else 0
    state = merged(facts, sections(previous) if previous else [])
    room = Room(chars - 200, budget_tokens, chars)  # the headings
    kept: dict[Section[Any], list[str]] = {}
    for section in RANKED:
        if section.keep is not None:
            kept[section] = section.keep(section, state, room)
    written = _fit_written(state.written, int(room.left * EARLIER_SHARE), room, facts.closed_a_step)
    shown = shown_commands(state, kept[RUNS])
    kept.update(chosen_facts(facts, state, room, shown))
    for section in LAST:
        if section.keep is not None:
            kept[section] = section.keep(section, state, room)

    lines = _goal(state.goal if previous else facts.goal, previous is not None, goal_chars)
    part = None
    for entry in LAYOUT:
        if isinstance(entry, ModelText):
            lines += _written_lines(written, entry.part)
            continue
        if entry.part != part:
            lines += [*([""] if part else []), f"## {entry.part}"]
            part = entry.part
        lines += section_lines(entry, kept[entry])
    lines += _no_tool_calls(facts, state)
    if counts is not None:
        count_facts(counts, facts, {kind: len(kept[section]) for kind, section in COUNTING.items()}, shown)
    return "\n".join(lines) + "\n"


def section_lines(section: Section[Any], items: list[str]) -> list[str]:
    return [f"### {section.heading}", *items] if items else []


def shown_commands(state: Merged, runs: list[str]) -> set[str]:
    """The commands a check's last run shows whole (`runs`: the items kept): not listed again."""
    return {run.command for run in state.work.runs if RUNS.item(run) in runs}


def _goal(goal: str | None, after_summary: bool, goal_chars: int) -> list[str]:
    """The user's first request, cut to `goal_chars`; none said after a summary (its goal stays
    the goal, and the request is one among the user's words)."""
    if goal:
        return [f"## {GOAL}", head_and_tail(goal, goal_chars), ""]
    return [] if after_summary else [f"## {GOAL}", NO_GOAL, ""]


def _no_tool_calls(facts: Facts, state: Merged) -> list[str]:
    if facts.errors or facts.commands or facts.files or facts.tools or any(state.pools.values()):
        return []
    return ["- No tool calls in the compacted part."]


def _written_lines(written: Written, part: str | None) -> list[str]:
    """The lines of the sections a model wrote (as kept by `_fit_written`) under `part`, or (None)
    those under headings of their own, each heading once per run."""
    def lines(h3: str | None, items: list[str]) -> list[str]:
        return ([f"### {h3}"] if h3 else []) + items

    if part is not None:
        return [line for h2, h3, items in written if h2 == part for line in lines(h3, items)]
    others: list[str] = []
    current_h2 = PROGRESS
    for h2, h3, items in written:
        if h2 in (PROGRESS, CONTEXT):
            continue
        if h2 != current_h2:
            others += ["", f"## {h2}"]
            current_h2 = h2
        others += lines(h3, items)
    return others


def _fit_written(written: Written, share: int, room: Room, step_closed: bool) -> Written:
    """The sections a model wrote, within `share` characters, each whole or left out, in their
    order: the most needed first (`_rank`: its request and the user's messages, then where the
    work stands, then the rest, its analysis last), a request too long for what is left by its
    start and end lines; with what was left out named. Its next step, its pending tasks and its
    current work go when later work closed a step (`step_closed`: a commit, a task done): they
    said where the work stood then, which the new facts say now."""
    units = _units(written)
    if step_closed:
        units = [(rank if rank not in (NEXT, CURRENT) else None, lines) for rank, lines in units]
    else:
        units = [(rank if rank not in (NEXT, CURRENT) else WORK, lines) for rank, lines in units]
    if not units:
        return []
    total = sum(len(line) + 1 for _, lines in units for line in lines)
    if total <= share and all(rank is not None for rank, _ in units):
        room.left -= total
        return written
    left = share - 100  # the line that names what was left out
    kept: dict[int, list[str]] = {}
    for index in sorted((i for i, (rank, _) in enumerate(units) if rank is not None), key=lambda i: (units[i][0], i)):
        rank, lines = units[index]
        size = sum(len(line) + 1 for line in lines)
        if size <= left:
            kept[index], left = lines, left - size
        elif rank == REQUEST and left >= 200:
            kept[index] = _head_and_tail_lines(lines, left)
            left -= sum(len(line) + 1 for line in kept[index])
    lines = [line for index in sorted(kept) for line in kept[index]]
    gone = [_title(lines) for index, (_, lines) in enumerate(units) if index not in kept]
    if gone:
        lines.append(f"[… of the earlier summary, not kept: {'; '.join(gone)} …]")
    room.left -= sum(len(line) + 1 for line in lines)
    return [(written[0][0] if written[0][0] in (PROGRESS, CONTEXT) else EARLIER, None, lines)]


# What a section of a model's summary is for, by its title: the ranks in which they take the room.
REQUEST, WORK, PROBLEMS, DETAILS, ANALYSIS, NEXT, CURRENT = 0, 1, 2, 3, 4, 5, 6
_RANKS = ((re.compile(r"(?i)next step"), NEXT), (re.compile(r"(?i)pending|current work|remaining|in progress"), CURRENT),
          (re.compile(r"(?i)request|intent|goal|user'?s?\b.*\bmessages?|^summary:?$"), REQUEST),
          (re.compile(r"(?i)task|progress|state"), WORK),
          (re.compile(r"(?i)error|fix|problem"), PROBLEMS),
          (re.compile(r"(?i)^analysis"), ANALYSIS))
# A title: a Markdown heading, a numbered line that ends with a colon (Claude Code's "1. Primary
# Request and Intent:"), or a word or two and a colon alone on its line ("Analysis:", "Summary:").
_TITLE = re.compile(r"^(?:#{2,4} .+|\d{1,2}\. [^\n]{2,80}:|[A-Z][A-Za-z' ]{1,40}:)\s*$")


def _units(written: Written) -> list[tuple[int | None, list[str]]]:
    """The sections of what a model wrote, as (rank, lines): each `###` section, and in a text of
    its own titles (Claude Code's summary) each titled part; an analysis is one part, its numbered
    points in it."""
    units: list[tuple[int | None, list[str]]] = []
    for _, h3, items in written:
        lines = ([f"### {h3}"] if h3 else []) + [part for item in items for part in item.split("\n")]
        rank, current = _rank(h3 or ""), list[str]()
        for line in lines:
            title = line.strip()
            if _TITLE.match(line) and not (rank == ANALYSIS and title[:1].isdigit()) and not line.startswith("### "):
                if current:
                    units.append((rank, current))
                    current = []
                rank = _rank(title)
            current.append(line)
        if current:
            units.append((rank, current))
    return units


def _rank(title: str) -> int:
    return next((rank for pattern, rank in _RANKS if pattern.search(title)), DETAILS)


def _title(lines: list[str]) -> str:
    first = next((line.strip().lstrip("#").strip() for line in lines if line.strip()), "")
    return f"{clipped(first.rstrip(':'), 60)} ({len(lines)} lines)"


def _head_and_tail_lines(lines: list[str], limit: int) -> list[str]:
    """Whole lines from the start and the end of `lines` within `limit` characters, a count between."""
    if sum(len(line) + 1 for line in lines) <= limit:
        return lines
    head: list[str] = []
    tail: list[str] = []
    room = limit - 60
    front, back = 0, len(lines) - 1
    while front <= back:
        line = lines[front] if len(head) <= len(tail) else lines[back]
        if len(line) + 1 > room:
            break
        room -= len(line) + 1
        if len(head) <= len(tail):
            head.append(line)
            front += 1
        else:
            tail.insert(0, line)
            back -= 1
    left = back - front + 1
    return [*head, f"[… {left} lines of the earlier summary not kept …]", *tail] if left else [*head, *tail]


def chosen_facts(facts: Facts, state: Merged, room: Room, shown: set[str]) -> dict[Section[Any], list[str]]:
    """The fact lists within what is left: the first error of each output first, then paths, then
    the other short facts (most facts for the room), then an output's further errors, then long
    facts; each pass newest first, the new part's facts before the earlier checkpoint's."""
    newest = sorted(((at, fact_list, text) for fact_list in FACT_LISTS for at, text in fact_list.found(facts)),
                    key=lambda fact: -fact[0])  # stable: an output's errors stay in their order
    firsts: dict[int, str] = {}  # an output's first error says most; its further ones wait for the room left
    for at, text in facts.errors:
        firsts.setdefault(at, text)
    candidates = [(fact_list.kind, fact_list.fact_item(text)) for _, fact_list, text in newest
                  if not (fact_list.kind == "commands" and text in shown)]
    depth = max((len(v) for v in state.pools.values()), default=0)
    candidates += [(kind, items[i]) for i in range(depth) for kind, items in state.pools.items() if i < len(items)]
    unique = list(dict.fromkeys(candidates))
    seen_modified = {item for kind, item in unique if kind == "files modified"}
    unique = [(kind, item) for kind, item in unique if not (kind == "files read" and item in seen_modified)]
    first_errors = {ERRORS.fact_item(text) for text in firsts.values()} | set(state.pools["errors"])
    taken: set[int] = set()
    # An error later work fixed waits for the room the open ones leave.
    first_errors -= {item for item in first_errors if item.startswith(ERRORS.fact_item(FIXED))}
    passes = (lambda kind, item: kind == "errors" and item in first_errors and len(item) <= SHORT_FACT,
              lambda kind, item: kind == "files modified",
              lambda kind, item: kind == "files read",  # a path is short and names what the next turn opens again
              lambda kind, item: kind != "errors" and len(item) <= SHORT_FACT,
              lambda kind, item: len(item) <= SHORT_FACT, lambda kind, item: True)
    for wanted in passes:
        for position, (kind, item) in enumerate(unique):
            if position not in taken and wanted(kind, item) and room.take(item):
                taken.add(position)
    chosen: dict[str, list[str]] = {fact_list.kind: [] for fact_list in FACT_LISTS}
    for position, (kind, item) in enumerate(unique):
        if position in taken:
            chosen[kind].append(item)
        else:
            room.omitted[kind] += 1
    return {fact_list: chosen[fact_list.kind] for fact_list in FACT_LISTS}


def count_facts(counts: Counter, facts: Facts, kept: dict[str, int], shown: set[str]) -> None:
    """How many facts of each kind the dropped part held, and how many of those (`kept`, per kind)
    the summary keeps; `shown`: the commands shown whole as a check's last run."""
    held = {kind: section.held(facts) for kind, section in COUNTING.items() if section.held is not None}
    kept = {**kept, "commands": kept["commands"] + len(shown & {t for _, t in facts.commands})}
    for kind in COUNTED:
        counts[f"held {kind}"] += held[kind]
        counts[f"kept {kind}"] += min(held[kind], kept[kind])
