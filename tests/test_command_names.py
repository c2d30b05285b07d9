"""`transcompact` alone says a command is missing (not the whole help); a mistyped command gets the nearest one."""

from __future__ import annotations


def test_no_command_names_what_is_missing(transcompact):
    result = transcompact()
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "transcompact: error: a command is missing: check, compact, cut-point, estimate, expand, prune, repair, sessions, slim, summarize",
        "hint: see 'transcompact --help'"]


def test_a_mistyped_command_gets_the_nearest_one(transcompact):
    result = transcompact("compat", "x.json")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["transcompact: error: no such command: 'compat'", "hint: did you mean 'compact'?"]


def test_a_command_far_from_every_one_gets_the_list(transcompact):
    result = transcompact("frobnicate")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[1] == ("hint: the commands are check, compact, cut-point, estimate, expand, prune, "
                                             "repair, sessions, slim, summarize")
