"""`cut-point`: the spec's walk, split turns, and the split-safety properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from transcompact.core.model import ToolCall, ToolResult
from transcompact.counting.counter import Options
from transcompact.formats import loads
from transcompact.ops.compaction.cut import after_complete_round, find_cut_point, starts_turn
from transcompact.ops.estimate import estimate

from .builders import loads_checked, session
from .builders import run_cli as run
from .conftest import CORPUS, FIXTURES, supported_corpus_files
from .strategies import transcripts


def assert_safe(transcript, cut, keep, keep_messages=0):
    """No tool call on one side with its result on the other; the recent part is at least `keep`
    tokens and `keep_messages` messages."""
    old, recent = transcript.messages[: cut.index], transcript.messages[cut.index:]
    calls_old = {b.id for m in old for b in m.blocks if isinstance(b, ToolCall)}
    results_recent = {b.tool_call_id for m in recent for b in m.blocks if isinstance(b, ToolResult)}
    calls_recent = {b.id for m in recent for b in m.blocks if isinstance(b, ToolCall)}
    results_old = {b.tool_call_id for m in old for b in m.blocks if isinstance(b, ToolResult)}
    assert not (calls_old & results_recent - calls_recent)
    assert not (results_old & calls_recent - calls_old)
    tokens = [m.tokens for m in estimate(transcript).per_message]
    assert cut.recent_tokens == sum(tokens[cut.index:]) and cut.old_tokens == sum(tokens[: cut.index])
    if cut.index:
        assert cut.recent_tokens >= keep and cut.recent_messages >= keep_messages
        message = transcript.messages[cut.index]
        assert starts_turn(message) or (cut.split_turn and after_complete_round(transcript.messages, cut.index))


def test_everything_fits_gives_0(in_root=None):
    result = run("cut-point", str(FIXTURES / "anthropic/tool-loop.json"))
    assert result.exit_code == 0 and result.stdout == "0\n"


def test_the_cut_is_a_user_turn_with_at_least_the_window_after_it():
    messages = []
    for i in range(10):  # 10 turns of 2 × 104 tokens
        messages += [{"role": "user", "content": f"question {i} " + "x" * 390}, {"role": "assistant", "content": "y" * 400}]
    transcript = loads(json.dumps({"messages": messages}).encode(), "t.json")
    cut = find_cut_point(transcript, 500)
    # 500 tokens are reached inside turn 7 (messages 14–15, going back from 19); its start is the cut.
    assert cut.index == 14 and not cut.split_turn and cut.turn_start == 14
    assert cut.recent_tokens == 6 * 104
    assert_safe(transcript, cut, 500)


def test_one_long_loop_is_split_before_an_assistant_message():
    transcript = loads(session(rounds=12, size=2000), "s.json")
    cut = find_cut_point(transcript, 3000)
    assert cut.split_turn and cut.turn_start == 0
    assert transcript.messages[cut.index].role == "assistant"
    assert 3000 <= cut.recent_tokens < 3000 + 600  # near the budget, not the whole turn
    assert_safe(transcript, cut, 3000)


def test_json_output_and_the_uuid_of_a_claude_code_log():
    log = CORPUS / "claude-code/spotter-session-8463c716-compacted-1593lines.jsonl"
    if not log.exists():
        pytest.skip("the shared corpus is not here")
    result = run("cut-point", "--json", str(log))
    report = json.loads(result.stdout)["files"][0]
    assert set(report) == {"file", "index", "messages", "old_messages", "recent_messages", "old_tokens", "recent_tokens",
                           "split_turn", "turn_start", "uuid"}
    transcript = loads(log.read_bytes(), str(log))
    assert report["uuid"] == transcript.messages[report["index"]].raw["uuid"]
    assert report["old_messages"] + report["recent_messages"] == report["messages"] == len(transcript.messages)
    assert run("cut-point", str(log)).stdout == f"{report['index']}\n"


def test_several_files_print_a_name_and_an_index_each():
    paths = [str(FIXTURES / "anthropic/tool-loop.json"), str(FIXTURES / "openai/tool-calls.json")]
    assert run("cut-point", *paths).stdout == "".join(f"{p}\t0\n" for p in paths)


def test_any_tokenizer_counts():
    transcript = loads(session(rounds=12, size=2000), "s.json")
    chars = find_cut_point(transcript, 3000)
    o200k = find_cut_point(transcript, 3000, Options(tokenizer="o200k"))
    assert o200k.index != chars.index  # the numbers tiktoken gives are not the chars estimate


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(transcripts(damaged=False), st.integers(1, 60), st.integers(0, 12))
def test_cut_properties_on_generated_transcripts(generated, keep, keep_messages):
    transcript = loads_checked(generated[1])
    assume(transcript is not None)
    assert_safe(transcript, find_cut_point(transcript, keep, keep_recent_messages=keep_messages), keep, keep_messages)


def test_keep_recent_messages_holds_at_least_that_many_messages_and_tokens():
    messages = []
    for i in range(10):  # 10 turns of 2 × 104 tokens
        messages += [{"role": "user", "content": f"question {i} " + "x" * 390}, {"role": "assistant", "content": "y" * 400}]
    transcript = loads(json.dumps({"messages": messages}).encode(), "t.json")
    assert find_cut_point(transcript, 0, keep_recent_messages=5).index == 14  # 5 messages reach into turn 7
    assert find_cut_point(transcript, 500, keep_recent_messages=2).index == 14  # the tokens ask for more
    assert find_cut_point(transcript, 100, keep_recent_messages=9).index == 10
    assert find_cut_point(transcript, 0, keep_recent_messages=20).index == 0  # everything is recent
    result = run("cut-point", "--keep-recent-tokens", "0", "--keep-recent-messages", "6",
                 str(FIXTURES / "anthropic/long-session.json"))
    assert result.exit_code == 0 and int(result.stdout) <= 33 - 6


@pytest.mark.parametrize("path", supported_corpus_files(read_only=True))
@pytest.mark.parametrize("keep", [500, 20_000])
def test_cut_properties_on_the_corpus(path, keep):
    transcript = loads(path.read_bytes(), str(path))
    assert_safe(transcript, find_cut_point(transcript, keep), keep)
