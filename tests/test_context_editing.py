"""Anthropic's context editing, offline: prune's flags in the names of `clear_tool_uses_20250919` and
`clear_thinking_20251015`, and `prune --explain`, which prints the `context_management` object and,
with `--tokenizer anthropic`, has count_tokens compare (against the loopback server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from transcompact.core.model import Thinking, ToolCall
from transcompact.formats import loads
from transcompact.ops.pruning.context_editing import context_management, differences
from transcompact.ops.pruning.prune import PLACEHOLDER, PruneOptions, prune

from .builders import results, run_cli, session, text_of


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)


def thinking_session(turns: int = 4) -> bytes:
    """`turns` user requests, each answered by a tool call and a reply, every assistant message thinking first."""
    messages = []
    for t in range(turns):
        messages += [
            {"role": "user", "content": f"Request {t}."},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": f"plan {t}", "signature": "sig"},
                                              {"type": "tool_use", "id": f"toolu_{t}", "name": "bash", "input": {"t": t}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{t}", "content": f"output {t}"}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": f"done {t}", "signature": "sig"},
                                              {"type": "text", "text": f"Reply {t}."}]},
        ]
    return json.dumps({"model": "claude-sonnet-4-5", "messages": messages}).encode()


def thinking_kept(transcript) -> list[bool]:
    return [any(isinstance(b, Thinking) for b in m.blocks) for m in transcript.messages if m.role == "assistant"]


# --- the options -----------------------------------------------------------------------------------


def test_keep_tool_uses_counts_tool_uses_and_clears_every_older_result():
    transcript = loads(session(rounds=5, dialect="openai"), "s.json")  # two results per tool-result message
    pruned, report = prune(transcript, PruneOptions(keep_tool_uses=3))
    texts = [text_of(r) for r in results(pruned)]
    assert texts[:7] == [PLACEHOLDER] * 7 and texts[7:] == [text_of(r) for r in results(transcript)][7:]
    assert (report.cleared, report.protected, report.soft_trimmed) == (7, 3, 0)


def test_clear_at_least_holds_back_an_edit_that_saves_too_little():
    transcript = loads(session(), "s.json")
    saved = prune(transcript)[1]
    gain = saved.tokens_before - saved.tokens_after
    held, report = prune(transcript, PruneOptions(clear_at_least=gain + 1))
    assert held == transcript and (report.cleared, report.soft_trimmed) == (0, 0)
    assert prune(transcript, PruneOptions(clear_at_least=gain))[0] == prune(transcript)[0]


def test_clear_tool_inputs_of_named_tools_only():
    transcript = loads(session(), "s.json")
    pruned, report = prune(transcript, PruneOptions(clear_tool_inputs=frozenset({"read"})))
    calls = [b for m in pruned.messages for b in m.blocks if isinstance(b, ToolCall)]
    # The first 4 results are cleared: calls 0 and 3 are `read`, 1 and 2 `bash`.
    assert [c.input == {} for c in calls[:4]] == [True, False, False, True] and report.inputs_cleared == 2


def test_keep_thinking_turns():
    transcript = loads(thinking_session(), "t.json")
    assert thinking_kept(prune(transcript, PruneOptions(clear_thinking=True))[0]) == [False] * 6 + [True] * 2
    pruned, report = prune(transcript, PruneOptions(clear_thinking=True, keep_thinking_turns=3))
    assert thinking_kept(pruned) == [False] * 2 + [True] * 6 and report.thinking_removed == 2
    assert thinking_kept(prune(transcript, PruneOptions(clear_thinking=True, keep_thinking_turns=9))[0]) == [True] * 8


# --- the context_management object ---------------------------------------------------------------


def test_the_object_for_the_defaults_keeps_the_tool_uses_of_the_last_hard_clear_after_messages():
    transcript = loads(session(rounds=10, dialect="openai"), "s.json")
    assert context_management(PruneOptions(), transcript) == {"edits": [
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 12}, "keep": {"type": "tool_uses", "value": 12}}]}
    assert differences(PruneOptions()) == [("results between the last 2 and the last 6 tool-result messages are soft-trimmed "
                                            "over 4000 characters here; the server keeps them whole")]


def test_the_object_speaks_every_option_that_has_an_api_name():
    options = PruneOptions(keep_tool_uses=4, clear_at_least=5000, exclude_tools=frozenset({"Read", "Grep"}),
                           clear_tool_inputs=frozenset({"Bash"}), clear_thinking=True, keep_thinking_turns=2)
    assert context_management(options, loads(session(), "s.json")) == {"edits": [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 4}, "keep": {"type": "tool_uses", "value": 4},
         "clear_at_least": {"type": "input_tokens", "value": 5000}, "exclude_tools": ["Grep", "Read"],
         "clear_tool_inputs": ["Bash"]}]}
    assert differences(options) == []
    assert context_management(PruneOptions(keep_tool_uses=0, clear_tool_inputs=True), loads(session(), "s.json"))["edits"][0] == {
        "type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 1}, "keep": {"type": "tool_uses", "value": 0},
        "clear_tool_inputs": True}


# --- prune --explain -----------------------------------------------------------------------------------


def test_explain_prints_the_object_and_writes_nothing():
    Path("s.json").write_bytes(session())
    result = run_cli("prune", "--explain", "--keep-tool-uses", "3", "--clear-tool-inputs-of", "bash", "--keep-thinking-turns", "2",
                 "--clear-at-least", "100", "--exclude-tool", "read", "s.json")
    assert result.exit_code == 0, result.stderr
    (line,) = result.stdout.splitlines()
    assert json.loads(line) == {"file": "s.json", "differences": [], "context_management": {"edits": [
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
        {"type": "clear_tool_uses_20250919", "trigger": {"type": "tool_uses", "value": 3}, "keep": {"type": "tool_uses", "value": 3},
         "clear_at_least": {"type": "input_tokens", "value": 100}, "exclude_tools": ["read"], "clear_tool_inputs": ["bash"]}]}}
    assert result.stderr == "" and sorted(p.name for p in Path().iterdir()) == ["s.json"]
    refused = run_cli("prune", "--explain", "-o", "out.json", "s.json")
    assert refused.exit_code == 2 and "--explain writes nothing" in refused.stderr


def test_explain_gives_a_line_per_file_in_a_batch():
    Path("logs").mkdir()
    Path("logs/a.json").write_bytes(session(rounds=3))
    Path("logs/b.json").write_bytes(session(rounds=8))
    result = run_cli("prune", "--explain", "logs")
    assert result.exit_code == 0, result.stderr
    keeps = {line["file"]: line["context_management"]["edits"][0]["keep"]["value"] for line in map(json.loads, result.stdout.splitlines())}
    assert keeps == {"logs/a.json": 3, "logs/b.json": 6}


def test_explain_with_the_anthropic_tokenizer_asks_count_tokens_with_the_object(api):
    Path("s.json").write_bytes(session())
    result = run_cli("prune", "--explain", "--tokenizer", "anthropic", "--keep-tool-uses", "2", "s.json")
    assert result.exit_code == 0, result.stderr
    explained = json.loads(result.stdout)
    edited = [r for r in api.requests if "context_management" in r.body]
    assert [r.body["context_management"] for r in edited] == [explained["context_management"]]
    assert "context-management-2025-06-27" in edited[0].headers["anthropic-beta"]
    tokens = explained["tokens"]
    assert tokens["prune"] < tokens["input"] == tokens["server"]  # the loopback server accepts the edits, it does not make them
    assert result.stderr == (f"s.json: {tokens['input']:,} tokens: prune leaves {tokens['prune']:,}, "
                             f"the server's context editing {tokens['server']:,} (count_tokens)\n")


def test_compact_takes_the_api_names_too():
    Path("s.json").write_bytes(session())
    result = run_cli("compact", "--emergency", "--keep-tool-uses", "1", "--clear-at-least", "10", "--keep-thinking-turns", "1",
                 "--clear-tool-inputs-of", "bash", "s.json")
    assert result.exit_code == 0, result.stderr
