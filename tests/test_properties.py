"""Invariants over generated transcripts in every format: lossless round trip, repair yields valid output."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transcompact import check, dumps, loads, repair
from transcompact.core.model import ToolResult
from transcompact.ops.validity.check import errors

from .builders import loads_checked
from .strategies import transcripts

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(transcripts())
def test_round_trip_is_lossless(generated):
    _, data = generated
    transcript = loads_checked(data)
    if transcript is None:
        return
    assert dumps(transcript) == data
    rewritten = dumps(transcript)
    if transcript.format in ("anthropic", "openai"):
        assert orjson.loads(rewritten) == orjson.loads(data)
    else:
        assert rewritten == data


@SETTINGS
@given(transcripts())
def test_repair_output_passes_check(generated):
    _, data = generated
    transcript = loads_checked(data)
    if transcript is None:
        return
    repaired, report = repair(transcript)
    written = dumps(repaired)
    if not repaired.messages and transcript.format != "anthropic" and transcript.format != "openai":
        return  # nothing but orphans: an empty JSON Lines file is not a transcript to read again
    again = loads(written, "repaired")
    remaining = [v for v in errors(check(again)) if v.rule != "A7"]  # a transcript may start with an assistant turn
    assert remaining == []
    if not errors(check(transcript)):
        assert report.fixes == () and written == data


@SETTINGS
@given(transcripts(damaged=False), st.data())
def test_an_edited_tool_result_is_written_back_and_nothing_else_changes(generated, data):
    """The write path of every format: change one result, read the output, find exactly that change."""
    _, raw = generated
    transcript = loads_checked(raw)
    if transcript is None:
        return
    places = [(i, j) for i, m in enumerate(transcript.messages) for j, b in enumerate(m.blocks) if isinstance(b, ToolResult)]
    if not places:
        return
    i, j = data.draw(st.sampled_from(places))
    message = transcript.messages[i]
    edited = message.blocks[j].__class__(message.blocks[j].tool_call_id, "[edited]", message.blocks[j].is_error,
                                         raw=message.blocks[j].raw, line=message.blocks[j].line)
    blocks = message.blocks[:j] + (edited,) + message.blocks[j + 1:]
    changed = transcript.with_messages(transcript.messages[:i] + (message.with_blocks(blocks),) + transcript.messages[i + 1:])
    reread = loads(dumps(changed), "edited")
    assert [m.blocks for m in reread.messages] == [m.blocks for m in changed.messages]
    assert errors(check(reread)) == errors(check(transcript))
