"""The checkpoint's sections as records (ops/compaction/checkpoint/layout.py): each section reads back what it
writes, an item alone and under its heading through the Markdown reader, so that a later
compaction merges an earlier checkpoint whole; and the records agree with one another."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transcompact.core.summary_text import quoted
from transcompact.ops.compaction.checkpoint import Facts, checkpoint
from transcompact.ops.compaction.checkpoint.earlier import READERS, merged, sections
from transcompact.ops.compaction.checkpoint.layout import (
    COMMANDS,
    COMMITS,
    COMPACTED,
    CONTEXT,
    COUNTING,
    ENVIRONMENT,
    ERRORS,
    FILES_MODIFIED,
    FILES_READ,
    KINDS,
    LAST_STATE,
    NOT_KEPT,
    PROBLEM,
    PROGRESS,
    RUNS,
    SECTIONS,
    TASKS,
    TOOLS,
    NotKept,
    Section,
)
from transcompact.ops.compaction.work_state import CANCELLED, DONE, IN_PROGRESS, PENDING, Commit, Problem, Run, Task, WorkState

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text with the marks the items and the Markdown reader look for.
MARKS = ["- ", "`", ": ", " × 1", " (failed)", " failed: ", "[x] ", "(in progress) ", "## ", "### ", "> ", "1. ", "* ", "\t"]
texts = st.lists(st.one_of(st.sampled_from([*MARKS, "\n", "\n- ", "\n  ", "```"]),
                           st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)), max_size=8).map("".join)
one_line = texts.map(lambda text: text.replace("\n", " "))
line = texts.map(lambda text: " ".join(text.split()))  # as the facts hold one: white space between words single


def without(*characters: str) -> st.SearchStrategy[str]:
    return one_line.filter(lambda text: text != "" and not any(c in text for c in characters))


tasks = st.builds(Task, line.filter(lambda text: not text.startswith(("(in progress) ", "(cancelled) "))),
                  st.sampled_from([DONE, IN_PROGRESS, PENDING, CANCELLED]))
commits = st.one_of(
    st.builds(Commit, line, st.text("0123456789abcdef", min_size=7, max_size=40)),
    st.builds(Commit, line.filter(lambda subject: not subject.startswith("`")), st.none()))  # a hash git did not show
problems = st.builds(Problem, line.filter(lambda command: command != "" and "`" not in command), line)
runs = st.builds(Run, without("`"), one_line, st.booleans())
settings_ = st.tuples(without(":"), one_line)
tools = st.tuples(without(), st.integers(min_value=0))

# The values of each section read back, as the checkpoint holds them.
VALUES: dict[Section[Any], st.SearchStrategy[Any]] = {
    COMPACTED: st.integers(min_value=0),
    TASKS: tasks,
    COMMITS: commits,
    LAST_STATE: texts.map(quoted),  # the assistant's last words as quoted, which an earlier checkpoint keeps so
    ENVIRONMENT: settings_,
    PROBLEM: problems,
    RUNS: runs,
    ERRORS: texts.map(ERRORS.fact_item),  # a fact list's value is its item, as the fact was written
    COMMANDS: texts.map(COMMANDS.fact_item),
    FILES_MODIFIED: texts.map(FILES_MODIFIED.fact_item),
    FILES_READ: texts.map(FILES_READ.fact_item),
    TOOLS: tools,
    NOT_KEPT: st.builds(NotKept, st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(KINDS)), max_size=4).map(tuple),
                        st.integers(min_value=0)),
}
ONE_TEXT = {LAST_STATE}  # its items are one text: it holds one value
READ_BACK = [section for section in SECTIONS if section.parse is not None]


def test_every_section_read_back_has_its_values_here():
    assert set(VALUES) == set(READ_BACK)


@pytest.mark.parametrize("section", READ_BACK, ids=lambda section: section.heading)
@SETTINGS
@given(data=st.data())
def test_a_rendered_item_parses_back_to_its_value(section, data):
    value = data.draw(VALUES[section])
    assert section.parse is not None and section.parse(section.item(value)) == value


@pytest.mark.parametrize("section", READ_BACK, ids=lambda section: section.heading)
@SETTINGS
@given(data=st.data())
def test_a_section_read_from_a_summary_gives_its_values_back(section, data):
    values = data.draw(st.lists(VALUES[section], min_size=1 if section in ONE_TEXT else 0,
                                max_size=1 if section in ONE_TEXT else 4))
    body = "\n".join([f"## {section.part}", f"### {section.heading}", *map(section.item, values), "### Next", "- x"])
    found = [items for h2, h3, items in sections(body) if READERS.get((h2, h3)) is section]
    assert section.parse is not None and [section.parse(item) for item in found[0]] == values


def test_the_records_agree():
    assert all(section.part in (PROGRESS, CONTEXT) for section in SECTIONS)
    assert all(section.kind is None or section.kind in KINDS for section in SECTIONS)
    counted = [section.kind for section in SECTIONS if section.held is not None]
    assert len(counted) == len(set(counted)) and set(counted) == set(COUNTING)  # one section counts a kind
    assert all(section.in_trail for section in COUNTING.values())  # the report counts what the summary and the trail keep
    # No two read under one heading; a section of the trail after a model's summary under the trail's too.
    assert len(READERS) == sum((1 + len(section.aliases)) * (2 if section.in_trail else 1) for section in SECTIONS)


facts_lists = st.lists(st.tuples(st.integers(0, 9), without()), max_size=4).map(tuple)


@SETTINGS
@given(st.builds(WorkState, st.one_of(st.none(), st.lists(tasks, max_size=4).map(tuple)),
                 st.lists(commits, max_size=4, unique=True).map(tuple), st.just(()), st.just(()),
                 st.lists(runs, max_size=4).map(tuple), st.one_of(st.none(), problems)),
       st.dictionaries(without(":"), one_line, max_size=3), st.dictionaries(without(), st.integers(1, 9), max_size=3),
       st.integers(0, 99))
def test_a_checkpoint_read_back_holds_what_it_shows(work, environment, tool_counts, messages):
    facts = Facts(None, None, (), (), (), Counter(tool_counts), messages, environment=tuple(environment.items()), work=work)
    earlier = checkpoint(facts, 10**6, 0.25)
    nothing_new = Facts(None, None, (), (), (), Counter(), 0)
    state = merged(nothing_new, sections(earlier))
    assert (state.work.tasks, state.work.commits, state.work.runs, state.work.problem) == (
        work.tasks or None, work.commits, work.runs, work.problem)
    assert (state.environment, dict(state.tools), state.compacted) == (environment, tool_counts, messages)
