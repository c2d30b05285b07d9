"""The write-back the agent logs share (formats/_log.py): a rewrite changes only what it changes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from transcompact.formats._log import written_back

lines = st.lists(st.integers(), max_size=12)


@given(lines)
def test_a_rewrite_that_changes_nothing_writes_every_line_in_its_place(log):
    assert written_back(log) == [(line, index) for index, line in enumerate(log)]


@given(lines, st.data())
def test_each_line_is_kept_changed_or_dropped_and_new_lines_follow_their_anchor(log, data):
    places = st.integers(0, max(len(log) - 1, 0))
    dropped = data.draw(st.sets(places)) if log else set()
    changed = {i: -line - 1 for i, line in enumerate(log) if data.draw(st.booleans())}
    inserted = data.draw(st.dictionaries(st.integers(-1, len(log) - 1), st.lists(st.text(max_size=2), max_size=2)))
    out = written_back(log, dropped=dropped, changed=changed, inserted=inserted)
    # Each line read in its place (changed or not, unless dropped), the new ones right after their anchor's place.
    expected = [(new, None) for new in inserted.get(-1, ())]
    for index, line in enumerate(log):
        expected += [] if index in dropped else [(changed.get(index, line), index)]
        expected += [(new, None) for new in inserted.get(index, ())]
    assert out == expected
