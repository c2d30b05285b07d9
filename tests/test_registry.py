"""One list of formats: each format's registration (core/format_names.py) is what --format takes,
what the registry imports, what the tests' lists of fixtures and the documentation's tables are
made from; its adapter agrees with it, or the registry stops as it imports it."""

from __future__ import annotations

import pytest

from transcompact.core.format_names import FORMAT_NAMES, FORMATS, REGISTERED
from transcompact.formats import BY_NAME, MODULES, NAMES, OWN_SUMMARIES, TRIMMED, _agrees, earlier_summary
from transcompact.formats.adapter import ReadOnlyFormat

from .conftest import FIXTURES, READ_ONLY_FORMATS


def test_the_lists_are_made_from_the_registrations():
    assert NAMES == FORMAT_NAMES == tuple(r.name for r in FORMATS) == tuple(REGISTERED) == tuple(MODULES)
    assert TRIMMED == tuple(r.name for r in FORMATS if r.trims)
    assert OWN_SUMMARIES == tuple(r.name for r in FORMATS if r.own_summaries)
    assert READ_ONLY_FORMATS == {r.name for r in FORMATS if not r.writes}


@pytest.mark.parametrize("registration", FORMATS, ids=lambda r: r.name)
def test_each_adapter_agrees_with_its_registration(registration):
    fmt = BY_NAME[registration.name]  # the registry checks it as it imports it (`_agrees`)
    assert fmt.name == registration.name
    assert fmt.writes is registration.writes
    assert isinstance(fmt, ReadOnlyFormat) is not registration.writes  # a format only read writes as read
    assert (fmt.trim is not None or fmt.lazy_trim is not None or fmt.line_view is not None) is registration.trims
    assert all(isinstance(rule, str) and rule and isinstance(text, str) and text for rule, text in fmt.rule_texts.items())
    # What the documentation says of it: a compaction for a format transcompact writes, none for one it only reads.
    assert registration.what and registration.detected_by and registration.reads
    assert bool(registration.compaction) is registration.writes


@pytest.mark.parametrize("registration", FORMATS, ids=lambda r: r.name)
def test_each_format_has_its_fixtures(registration):
    """fixture_files and the snapshots read fixtures/<name>/: every format ships some."""
    assert any(p.is_file() or p.is_dir() for p in (FIXTURES / registration.name).iterdir())


def test_every_folder_of_fixtures_is_a_format():
    assert {p.name for p in FIXTURES.iterdir() if p.is_dir()} == set(FORMAT_NAMES)


@pytest.mark.parametrize("change", [dict(trims=False), dict(writes=False), dict(own_summaries=False), dict(name="claude")],
                         ids=lambda c: next(iter(c)))
def test_an_adapter_its_registration_misdescribes_stops_the_import(change):
    registration = REGISTERED["claude-code"]
    _agrees(BY_NAME["claude-code"], registration)
    with pytest.raises(ImportError):
        _agrees(BY_NAME["claude-code"], registration._replace(**change))
    with pytest.raises(ImportError):
        _agrees(BY_NAME["codex"], REGISTERED["codex"]._replace(trims=True, own_summaries=True, writes=False))


def test_an_earlier_summary_is_found_by_the_format_whose_agent_writes_one():
    assert earlier_summary({"type": "user", "isCompactSummary": True}) is BY_NAME["claude-code"]
    assert earlier_summary({"type": "user", "isCompactSummary": "yes"}) is None
    assert earlier_summary({"role": "user", "content": "hi"}) is None and earlier_summary(None) is None
    preamble_and_body = BY_NAME["claude-code"].earlier_summary_body(
        "This session is being continued from a previous conversation that ran out of context. "
        "The summary below covers the earlier portion of the conversation.\n\n## Goal\nship it")
    assert preamble_and_body == "## Goal\nship it"


def test_a_line_s_id_is_its_format_s():
    line = {"type": "user", "uuid": "00000000-0000-4000-8000-000000000001"}
    assert BY_NAME["claude-code"].line_id(line) == "00000000-0000-4000-8000-000000000001"
    assert all(BY_NAME[name].line_id(line) is None for name in NAMES if name != "claude-code")
