"""The Claude Code format on its own: which logs it takes, the messages `claude --resume` would send
(the chain to the newest leaf, the lines of one response and their parallel results gathered), and
a write that keeps every line it did not change byte for byte, drops emptied lines re-linking their
children, and threads added messages into the chain."""

from __future__ import annotations

import json

import pytest

from transcompact.core.errors import ShapeError, UnknownFormat
from transcompact.core.jsondata import parse
from transcompact.core.model import Message, Text, Thinking, ToolCall, ToolResult
from transcompact.formats import dumps, loads
from transcompact.formats.claude_code import reader as claude_code
from transcompact.ops.estimate import estimate
from transcompact.ops.pruning.prune import PLACEHOLDER, PruneOptions, prune

from .builders import corpus_logs, prompt
from .conftest import FIXTURES

SESSION = "0c6f5a52-8d1e-4c57-9b7e-0f7f7f2b9a10"


def line(uuid: str, parent: str | None, kind: str, second: int, **fields) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ada/shop",
            "sessionId": SESSION, "version": "2.1.20", "gitBranch": "main", "type": kind, "uuid": uuid,
            "timestamp": f"2026-11-02T09:00:{second:02d}.000Z", **fields}


def user(uuid, parent, second, content, **fields) -> dict:
    return line(uuid, parent, "user", second, message={"role": "user", "content": content}, **fields)


def assistant(uuid, parent, second, message_id, content) -> dict:
    return line(uuid, parent, "assistant", second, requestId=f"req_{message_id}",
                message={"id": message_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                         "content": content, "usage": {"input_tokens": 3, "output_tokens": 9}})


def log_lines() -> list[dict]:
    """A prompt; one response over three lines (thinking, two parallel Read calls) with each result
    parented to its call; a progress line; an abandoned edit of the next prompt; an answer; a system
    note; two user lines in a row; a summary line."""
    return [
        {"type": "file-history-snapshot", "messageId": "u0", "snapshot": {}, "isSnapshotUpdate": False},
        user("u0", None, 0, "Read a.py and b.py."),
        assistant("a0", "u0", 1, "msg_1", [{"type": "thinking", "thinking": "Two reads.", "signature": "c2ln"}]),
        assistant("a1", "a0", 2, "msg_1", [{"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"path": "a.py"}}]),
        assistant("a2", "a1", 3, "msg_1", [{"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"path": "b.py"}}]),
        user("r1", "a1", 4, [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "A" * 40}],
             toolUseResult={"file": {"content": "A" * 40}}, sourceToolAssistantUUID="a1"),
        user("r2", "a2", 5, [{"type": "tool_result", "tool_use_id": "toolu_b", "content": "B"}], sourceToolAssistantUUID="a2"),
        line("p1", "r2", "progress", 6, data={"type": "hook_progress"}),
        user("b1", "r2", 7, "An edit of the prompt that was abandoned."),
        assistant("a3", "r2", 8, "msg_2", [{"type": "text", "text": "Both files print."}]),
        line("s1", "a3", "system", 9, subtype="informational", content="Hook ran", level="info"),
        user("u1", "s1", 10, "Thanks."),
        user("u2", "u1", 11, [{"type": "text", "text": "One more thing."}]),
        {"type": "summary", "summary": "Reading two files", "leafUuid": "u2"},
    ]


def encode(lines: list[dict]) -> bytes:
    return b"".join(json.dumps(v).encode() + b"\n" for v in lines)  # spaced: orjson would write it otherwise


LOG = encode(log_lines())


def written(data: bytes) -> list[dict | None]:
    return [json.loads(text) if text.strip() else None for text in data.split(b"\n")]


def changed_lines(before: bytes, after: bytes) -> list[int]:
    old = set(before.split(b"\n"))
    return [i for i, text in enumerate(after.split(b"\n")) if text not in old]


# --- detection ----------------------------------------------------------------------------------


def test_a_log_is_detected_by_its_session_lines():
    assert claude_code.detect(parse(LOG, "s.jsonl"))
    assert loads((FIXTURES / "claude-code" / "broken-session.jsonl").read_bytes(), "b.jsonl").format == "claude-code"


@pytest.mark.parametrize("data", [
    b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"yo"}\n',
    encode([{k: v for k, v in value.items() if k != "sessionId"} for value in log_lines()]),
    encode([*log_lines(), ["not", "an", "object"]]),
], ids=["message-lines", "no-session-id", "a-line-that-is-not-an-object"])
def test_lines_without_a_session_line_or_with_a_non_object_are_not_a_log(data):
    assert not claude_code.detect(parse(data, "s.jsonl"))


def test_messages_path_is_not_for_logs():
    assert not claude_code.detect(parse(LOG, "s.jsonl"), "messages")
    with pytest.raises(UnknownFormat):
        loads(LOG, "s.jsonl", messages_path="messages")


# --- read: what `claude --resume` would send -------------------------------------------------------


def test_the_messages_are_the_chain_to_the_newest_leaf_gathered_per_response_and_turn():
    transcript = loads(LOG, "s.jsonl")
    assert (transcript.format, transcript.dialect) == ("claude-code", "anthropic")
    assert [(m.role, m.line) for m in transcript.messages] == [("user", 2), ("assistant", 3), ("user", 6),
                                                               ("assistant", 10), ("user", 12)]
    assert transcript.messages[1].blocks == (Thinking("Two reads.", "c2ln"), ToolCall("toolu_a", "Read", {"path": "a.py"}),
                                             ToolCall("toolu_b", "Read", {"path": "b.py"}))
    assert transcript.messages[2].blocks == (ToolResult("toolu_a", "A" * 40), ToolResult("toolu_b", "B"))
    assert transcript.messages[4].blocks == (Text("Thanks."), Text("One more thing."))
    assert not any("abandoned" in b.text for m in transcript.messages for b in m.blocks if isinstance(b, Text))


def test_a_newer_sidechain_leaf_is_not_resumed():
    lines = [*log_lines(), {**user("side", "a3", 30, "A subagent's prompt."), "isSidechain": True}]
    assert loads(encode(lines), "s.jsonl").messages[-1].raw["uuid"] == "u1"


def test_a_compact_boundary_starts_the_conversation_and_the_role_is_the_line_type():
    lines = [*log_lines()[:12],
             line("cb", None, "system", 20, subtype="compact_boundary", content="Conversation compacted",
                  logicalParentUuid="u1", compactMetadata={"trigger": "manual", "preTokens": 900}),
             user("sum", "cb", 21, "This session is being continued… (the summary)", isCompactSummary=True),
             {**assistant("z", "sum", 22, "msg_9", "Continuing."), "message": {"role": "user", "content": "Continuing."}}]
    transcript = loads(encode(lines), "s.jsonl")
    assert [(m.role, m.raw["uuid"]) for m in transcript.messages] == [("user", "sum"), ("assistant", "z")]
    assert dumps(transcript) == encode(lines)  # history before the boundary kept in the file


def test_a_line_on_the_chain_without_a_message_names_the_file_and_line():
    lines = log_lines()
    del lines[9]["message"]  # a3, line 10
    with pytest.raises(ShapeError) as raised:
        loads(encode(lines), "s.jsonl")
    assert str(raised.value) == "s.jsonl:10: message 3: `message` is missing"


# --- write ----------------------------------------------------------------------------------------


def test_an_unchanged_log_is_written_back_byte_for_byte():
    assert dumps(loads(LOG, "s.jsonl")) == LOG
    broken = (FIXTURES / "claude-code" / "broken-session.jsonl").read_bytes()
    assert dumps(loads(broken, "b.jsonl")) == broken


def test_a_changed_result_rewrites_its_line_only_and_keeps_the_line_s_other_fields():
    transcript = loads(LOG, "s.jsonl")
    results = transcript.messages[2]
    first = results.blocks[0]
    cleared = results.with_blocks((ToolResult(first.tool_call_id, "[cleared]", raw=first.raw, line=first.line), results.blocks[1]))
    out = dumps(transcript.with_messages([*transcript.messages[:2], cleared, *transcript.messages[3:]]))
    # 9: the next response, its prompt restated 8 tokens less (10 of the result, 2 of "[cleared]"):
    # all 3 it recorded, none below 0.
    assert changed_lines(LOG, out) == [5, 9]
    assert written(out)[9] == {**log_lines()[9], "message": {**log_lines()[9]["message"], "usage": {
        "input_tokens": 0, "output_tokens": 9}}}
    after = written(out)[5]
    assert after == {**log_lines()[5], "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "[cleared]"}]}}
    assert after["toolUseResult"] == {"file": {"content": "A" * 40}}  # the UI copy is replace_ui_copies' job


def test_a_line_left_with_no_content_is_dropped_and_its_child_re_linked():
    transcript = loads(LOG, "s.jsonl")
    response = transcript.messages[1]
    out = dumps(transcript.with_messages([transcript.messages[0], response.with_blocks(response.blocks[1:]),
                                         *transcript.messages[2:]]))
    lines = [value for value in written(out) if value is not None]
    assert [value.get("uuid") for value in lines] == [None, "u0", "a1", "a2", "r1", "r2", "p1", "b1", "a3", "s1", "u1", "u2", None]
    assert lines[2]["parentUuid"] == "u0"  # a1 hung from the thinking line a0
    assert changed_lines(LOG, out) == [2, 8]  # 8: the next response, its prompt restated without the thinking
    assert lines[8]["message"] == {**log_lines()[9]["message"], "usage": lines[8]["message"]["usage"]}
    assert [m.blocks for m in loads(out, "s.jsonl").messages] == [
        transcript.messages[0].blocks, response.blocks[1:], *[m.blocks for m in transcript.messages[2:]]]


def test_a_string_content_line_stays_a_string_when_changed():
    transcript = loads(LOG, "s.jsonl")
    last = transcript.messages[-1]
    out = dumps(transcript.with_messages([*transcript.messages[:-1], last.with_blocks((Text("Thank you."), last.blocks[1]))]))
    assert written(out)[11]["message"]["content"] == "Thank you."
    assert changed_lines(LOG, out) == [11]


def test_removed_messages_leave_the_other_lines_as_they_were():
    transcript = loads(LOG, "s.jsonl")
    out = dumps(transcript.with_messages(transcript.messages[:-1]))
    assert out == encode(log_lines()[:11] + log_lines()[13:])
    assert loads(out, "s.jsonl").messages[-1].raw["uuid"] == "a3"


def test_an_added_message_is_threaded_into_the_chain_in_the_envelope_of_the_line_before():
    transcript = loads(LOG, "s.jsonl")
    added = Message("user", (Text("Go on."),))
    out = dumps(transcript.with_messages([*transcript.messages[:4], added, transcript.messages[4]]))
    assert out == dumps(transcript.with_messages([*transcript.messages[:4], added, transcript.messages[4]]))  # same uuid each time
    lines = written(out)
    new = lines[10]
    assert new["parentUuid"] == "a3" and new["type"] == "user" and new["message"] == {
        "role": "user", "content": [{"type": "text", "text": "Go on."}]}
    assert {k: new[k] for k in ("sessionId", "cwd", "version", "gitBranch", "isSidechain", "userType")} == {
        k: log_lines()[9][k] for k in ("sessionId", "cwd", "version", "gitBranch", "isSidechain", "userType")}
    assert lines[11]["uuid"] == "s1" and lines[11]["parentUuid"] == new["uuid"]  # the chain goes through the new line
    assert changed_lines(LOG, out) == [10, 11]
    reread = loads(out, "s.jsonl")
    assert reread.messages[-1].blocks == (Text("Go on."), Text("Thanks."), Text("One more thing."))  # one user turn


def test_a_message_cannot_be_added_to_a_log_with_no_conversation():
    empty = encode([line("s0", None, "system", 0, subtype="informational", content="Hook ran")])
    transcript = loads(empty, "s.jsonl")
    assert transcript.messages == ()
    with pytest.raises(ShapeError, match="holds no conversation"):
        dumps(transcript.with_messages([Message("user", (Text("hi"),))]))


def test_a_progress_line_is_held_by_its_linking_fields_and_written_whole_when_re_linked():
    """A long session's progress lines and file snapshots are not held whole in memory; a line
    re-linked because its parent went is read again from its bytes, nothing of it lost."""
    transcript = loads(LOG, "s.jsonl")
    values = [value for _, value in transcript.source.records]
    placing = ("type", "uuid", "parentUuid", "timestamp", "sessionId")
    assert values[7] == {k: v for k, v in log_lines()[7].items() if k in placing}
    assert values[0] == {"type": "file-history-snapshot"}
    results = transcript.messages[2]
    out = dumps(transcript.with_messages([*transcript.messages[:2], results.with_blocks(results.blocks[:1]),
                                         *transcript.messages[3:]]))  # r2, the parent of p1, goes
    lines = [value for value in written(out) if value is not None]
    assert lines[0] == log_lines()[0]
    assert [v for v in lines if v.get("uuid") == "p1"] == [{**log_lines()[7], "parentUuid": "a2"}]
    assert [v.get("uuid") for v in lines if v.get("parentUuid") == "a2"] == ["p1", "b1", "a3"]


# --- the usage Claude Code judges its context by --------------------------------------------------


def with_usage(data: bytes, overhead: int = 15_000) -> bytes:
    """The log with each response's usage: a system prompt and tools of `overhead` tokens and the
    conversation before it at 4 characters a token, mostly read from the cache, as a real log's."""
    lines, sent = [], 0
    for line in (json.loads(text) for text in data.splitlines()):
        message = line.get("message")
        if line.get("type") == "assistant":
            message["usage"] = {"input_tokens": 3, "cache_creation_input_tokens": 200,
                                "cache_read_input_tokens": overhead + sent // 4 - 203, "output_tokens": 40}
        if isinstance(message, dict):
            sent += len(json.dumps(message.get("content")))
        lines.append(line)
    return encode(lines)




def test_a_prune_restates_the_prompt_claude_code_judges_and_estimate_says_what_prune_said():
    """Claude Code judges the size of its context by the last response's usage plus its own estimate
    of what follows (`tokenCountWithEstimation`: it refuses to send at its blocking limit and
    compacts above its threshold): each response after a cleared result records a prompt smaller
    by what the cleared results before it held, at the tokens a character the run's model gives
    (`TokenCounter.tokens_per_char`, the ratio fitted on the log's usage), taken from the cached
    part; its output and its other fields stay, and so does every response before the first
    change. The output's usage then lies on the model the input was counted with: `estimate` of
    the output is what prune said, and fits that model again."""
    from transcompact.counting.counter import TokenCounter

    from .builders import claude_log

    data = with_usage(claude_log(rounds=8))
    transcript = loads(data, "s.jsonl")
    counter = TokenCounter(transcript)
    pruned, report = prune(transcript, PruneOptions(keep_last=1, hard_clear_after=1), counter)
    out = dumps(pruned)
    assert report.cleared == 7 and report.tokens_after < report.tokens_before * 0.7
    read_back = TokenCounter(loads(out, "s.jsonl"))
    assert estimate(loads(out, "s.jsonl")).tokens == report.tokens_after
    fitted = counter.basis.calibration
    assert fitted is not None and read_back.basis.calibration is not None
    assert read_back.basis.calibration.ratio == pytest.approx(fitted.ratio, rel=0.01)
    assert read_back.basis.calibration.overhead == pytest.approx(fitted.overhead, rel=0.01)
    old, new = written(data)[:-1], written(out)[:-1]
    changed = [k for k, (a, b) in enumerate(zip(old, new)) if a != b]
    cleared = [k for k in changed if old[k]["message"]["content"] != new[k]["message"]["content"]]
    assert len(cleared) == 7
    responses = [k for k, a in enumerate(old) if a["type"] == "assistant" and k > cleared[0]]
    assert changed == sorted({*cleared, *responses})
    for k in responses:
        taken = round(sum(len(old[c]["message"]["content"][0]["content"]) - len(PLACEHOLDER)
                          for c in cleared if c < k) * counter.tokens_per_char)
        usage, restated = old[k]["message"]["usage"], new[k]["message"]["usage"]
        assert new[k] == {**old[k], "message": {**old[k]["message"], "usage": restated}}
        assert restated == {**usage, "cache_read_input_tokens": usage["cache_read_input_tokens"] - taken}
        assert prompt(restated) == prompt(usage) - taken
    assert taken > 1000


@pytest.mark.parametrize("path", corpus_logs())
def test_estimate_of_a_pruned_claude_code_log_is_what_prune_said(path):
    transcript = loads(path.read_bytes(), str(path))
    pruned, report = prune(transcript, PruneOptions(keep_last=1, hard_clear_after=1))
    counted = estimate(loads(dumps(pruned), str(path))).tokens
    assert abs(counted - report.tokens_after) <= max(20, report.tokens_after * 0.01)
    assert counted == report.tokens_after or report.cleared  # a log with nothing to prune counts the same


def test_a_synthetic_last_line_leaves_the_last_real_response_to_be_restated():
    """Claude Code ends a session cut short with a line of its own (model `<synthetic>`, usage all
    zeros: an API error, "No response requested."), which it does not judge its context by: the
    response before it is the one restated."""
    from .builders import claude_log

    lines = [json.loads(text) for text in with_usage(claude_log(rounds=6)).splitlines()]
    lines.append({**lines[-2], "uuid": "synthetic-1", "parentUuid": lines[-1]["uuid"], "message": {
        "id": "msg_synthetic", "model": "<synthetic>", "role": "assistant", "type": "message",
        "content": [{"type": "text", "text": "No response requested."}],
        "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
    data = encode(lines)
    pruned, report = prune(loads(data, "s.jsonl"), PruneOptions(keep_last=1, hard_clear_after=1))
    out = written(dumps(pruned))[:-1]
    real = max(k for k, line in enumerate(lines[:-1]) if line["type"] == "assistant")
    assert out[-1] == lines[-1]
    assert prompt(out[real]["message"]["usage"]) < prompt(lines[real]["message"]["usage"])
