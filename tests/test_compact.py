"""`compact`: the pipeline, the fallback, the emergency mode, Claude Code logs, and its properties."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings

from transcompact.core.model import RedactedThinking, Text, Thinking, ToolResult
from transcompact.core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX, USER_WORDS_HEADING, text_of
from transcompact.formats import dumps, loads
from transcompact.formats.claude_code.rewrites import COMPACT_PREAMBLE
from transcompact.ops.compaction.checkpoint import own_words
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.output_errors import is_placeholder
from transcompact.ops.compaction.summarize import UPDATE_SYSTEM_PROMPT, SummaryOptions
from transcompact.ops.compaction.summary_message import find_previous, is_summary_message
from transcompact.ops.estimate import estimate
from transcompact.ops.pruning.prune import prune
from transcompact.ops.validity.check import check, errors

from .builders import loads_checked, results, run_cli, session
from .builders import text_of as result_text
from .conftest import CORPUS, FIXTURES, supported_corpus_files
from .loopback import Loopback
from .strategies import transcripts

LONG = FIXTURES / "anthropic/long-session.json"


def run(*args, **given):
    return run_cli("compact", *args, **given)


def messages_of(stdout: bytes) -> list:
    return orjson.loads(stdout)["messages"]


def test_under_the_threshold_goes_out_unchanged():
    result = run(str(LONG))
    assert result.exit_code == 0
    assert result.stdout_bytes == LONG.read_bytes()
    assert result.stderr == f"{LONG}: not compacted (8,957 tokens, 33 messages): under the threshold of 100,000 tokens; --force compacts anyway\n"


def test_the_default_threshold_scales_with_the_window():
    small = run("--window", "20000", "--max-output", "0", str(LONG))  # 100,000 of 184,000 is 10,869 of 20,000
    assert "under the threshold of 10,869 tokens" in small.stderr
    given = run("--window", "20000", "--max-output", "0", "--threshold", "9000", str(LONG))  # as given: absolute
    assert "under the threshold of 9,000 tokens" in given.stderr


def test_the_summary_path_rebuilds_around_the_recent_window(api, tmp_path):
    result = run("--force", "--keep-recent-tokens", "1000", "--report", str(tmp_path / "report.json"), str(LONG))
    assert result.exit_code == 0, result.stderr
    (request,) = api.requests
    report = orjson.loads((tmp_path / "report.json").read_bytes())
    out = orjson.loads(result.stdout_bytes)
    original = json.loads(LONG.read_bytes())
    assert out["system"] == original["system"] and out["model"] == original["model"]  # what the format keeps first
    first = out["messages"][0]["content"][0]["text"]
    assert first.startswith(SUMMARY_PREFIX + "## Goal\nSummarized by CHECKPOINT")
    words = first[first.index(USER_WORDS_HEADING):]
    assert "\n\n> (user note 12)\n\n" in words and words.index("> (user note 12)") < words.index("> Fix the failing build.")
    cut = report["cut"]
    kept = out["messages"][-(len(original["messages"]) - cut):]
    assert kept == original["messages"][cut:]  # the recent window, verbatim
    assert report["strategy"] == "summary" and report["tokens_after"] < report["tokens_before"]
    assert set(report) == {"version", "command", "file", "status", "exit", "output", "written", "error", "strategy", "tokens_before",
                           "tokens_after", "messages_before", "messages_after", "cut",
                           "split_turn", "pruned", "summary_chars", "fallback_reason", "notes", "counted_by",
                           "window_messages", "facts"}
    assert report["window_messages"] == len(kept)
    # The model's summary, then the facts it does not hold itself: nothing of the artifact trail is lost.
    assert "## Artifact trail" in first and "- `pytest tests/test_step_11.py -x`" in first
    assert report["facts"] and all(f["kept"] == f["held"] for f in report["facts"].values()), report["facts"]
    assert "[Tool output cleared" not in request.prompt  # the summarizer reads the old part as it was


def test_a_split_turn_carries_the_opening_request(api):
    result = run("--force", "--keep-recent-tokens", "3000", str(LONG))
    assert result.exit_code == 0, result.stderr
    out = messages_of(result.stdout_bytes)
    text = out[0]["content"][0]["text"]
    assert text.endswith("## The request this turn began with (verbatim)\n\nGood. Keep the public API of checkout() "
                         "unchanged, and do not touch the payment module.")
    assert out[1]["role"] == "assistant" and out[1]["content"] != SUMMARY_ACK  # the window follows directly


def test_chained_compaction_keeps_one_summary_pair(api, tmp_path):
    first = run("--force", "--keep-recent-tokens", "1000", str(LONG))
    (tmp_path / "once.json").write_bytes(first.stdout_bytes)
    second = run("--force", "--keep-recent-tokens", "500", str(tmp_path / "once.json"))
    assert second.exit_code == 0, second.stderr
    assert api.requests[-1].body["system"] == UPDATE_SYSTEM_PROMPT
    out = messages_of(second.stdout_bytes)
    summaries = [m for m in out if m["role"] == "user" and str(m["content"]).find("[Previous conversation summary]") >= 0]
    assert len(summaries) == 1
    assert not errors(check(loads(second.stdout_bytes, "twice.json")))


def test_a_second_compaction_by_a_model_keeps_the_first_one_s_artifact_trail(api, tmp_path):
    """The model's update of the earlier summary need not repeat what its trail held (the failing
    command, its error): the new trail takes in each of its items the new summary does not say,
    as the emergency checkpoint does (found using compact as a user: the first trail's TypeError
    was gone after the second compaction)."""
    first = run("--force", "--keep-recent-tokens", "3000", str(LONG))
    (tmp_path / "once.json").write_bytes(first.stdout_bytes)
    trail = messages_of(first.stdout_bytes)[0]["content"][0]["text"].split("## Artifact trail", 1)[1]
    items = [line for line in trail.splitlines() if line.startswith("- ")]
    assert any("TypeError" in item for item in items)
    second = run("--force", "--keep-recent-tokens", "1000", str(tmp_path / "once.json"))
    assert second.exit_code == 0, second.stderr
    again = messages_of(second.stdout_bytes)[0]["content"][0]["text"]
    assert [item for item in items if item not in again] == []


def test_no_key_falls_back_to_the_emergency_mode(monkeypatch):
    result = run("--force", "--keep-recent-tokens", "1000", str(LONG))
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == f"{LONG}: the summary failed, so the emergency mode was used: no Anthropic API key"
    assert "compacted (emergency)" in result.stderr
    refused = run("--force", "--no-fallback", "--keep-recent-tokens", "1000", str(LONG))
    assert refused.exit_code == 4 and refused.stdout == ""


def test_a_provider_failure_falls_back(api):
    api.answer = Loopback.error(529, "Overloaded")
    result = run("--force", "--retries", "0", "--keep-recent-tokens", "1000", str(LONG))
    assert result.exit_code == 0
    assert "HTTP 529: Overloaded" in result.stderr.splitlines()[0]
    assert "## Progress\n### Done\n- [x] 28 earlier messages were compacted without a model" in messages_of(result.stdout_bytes)[0]["content"][0]["text"]


def test_the_emergency_checkpoint(api):
    result = run("--emergency", "--force", "--keep-recent-tokens", "1000", str(LONG))
    assert result.exit_code == 0, result.stderr
    assert api.requests == []  # no model call at all
    text = messages_of(result.stdout_bytes)[0]["content"][0]["text"]
    for expected in ("## Goal\nFix the failing build.\n", "### Last state (the assistant's last words before this checkpoint)\n"
                     "> Running step 12.", "### Files read (newest first)\n- `src/shop/module_12.py`",
                     "### Last test and build runs (newest first)\n- `pytest tests/test_step_11.py -x`: ok",
                     "### Errors seen (newest first)\n- TypeError: unsupported operand type(s) for +: 'int' and 'str'\n",
                     "### Open problem (nothing since succeeded at it)\n- `pytest tests/test_step_1.py -x` failed: TypeError",
                     "### Tools used\n- bash × 8\n- read × 5", USER_WORDS_HEADING + "\n\n> (user note 12)"):
        assert expected in text
    assert text.count("Fix the failing build.") == 1  # the goal is not quoted again among the user's words
    assert run("--emergency", "--force", "--keep-recent-tokens", "1000", str(LONG)).stdout_bytes == result.stdout_bytes


def test_near_the_window_takes_the_emergency_mode_directly(api, tmp_path):
    result = run("--window", "4400", "--max-output", "0", "--keep-recent-tokens", "1000", "--report", "-",
                 "-o", str(tmp_path / "out.json"), str(LONG))
    assert result.exit_code == 0, result.stderr
    assert api.requests == []
    report = json.loads(result.stdout)
    assert report["fallback_reason"] == "the estimate is at least 95% of the input budget"


def test_pruning_alone_when_it_fits(tmp_path):
    result = run("--window", "9000", "--max-output", "0", "--report", "-", "-o", str(tmp_path / "out.json"), str(LONG))
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["strategy"] == "prune" and report["cut"] is None and report["tokens_after"] < 0.95 * 9000


def test_thinking_in_the_kept_messages(api):
    data = json.loads(LONG.read_bytes())
    for m in data["messages"][25:]:
        if m["role"] == "assistant" and isinstance(m["content"], list):
            m["content"].insert(0, {"type": "thinking", "thinking": "let me see", "signature": "sig"})
    body = json.dumps(data).encode()
    def thinking(result):
        return [b for m in messages_of(result.stdout_bytes) if isinstance(m["content"], list)
                for b in m["content"] if b["type"] == "thinking"]

    assert thinking(run("--force", "--keep-recent-tokens", "1000", input=body)) == []
    assert thinking(run("--force", "--keep-thinking", "--keep-recent-tokens", "1000", input=body))


def test_emergency_means_no_model_call_not_force():
    """Under --threshold the transcript goes out unchanged, --emergency or not (the README's CI recipe)."""
    result = run("--emergency", str(LONG))
    assert result.exit_code == 0 and result.stdout_bytes == LONG.read_bytes()
    assert "under the threshold of 100,000 tokens" in result.stderr
    assert run("--emergency", "--threshold", "1000", str(LONG)).stdout_bytes != LONG.read_bytes()


def test_compact_never_grows_a_transcript():
    small = FIXTURES / "anthropic/tool-loop.json"
    result = run("--emergency", "--force", str(small))
    assert result.exit_code == 0 and result.stdout_bytes == small.read_bytes()
    assert "nothing to compact" in result.stderr


# --- Claude Code logs ----------------------------------------------------------------------


def corpus_log(name: str):
    path = CORPUS / "claude-code" / name
    if not path.exists():
        pytest.skip("the shared corpus is not here")
    return path


def test_claude_code_logs_get_claude_codes_own_pattern():
    path = corpus_log("spotter-session-8463c716-compacted-1593lines.jsonl")
    data = path.read_bytes()
    result = run("--emergency", "--force", "--keep-recent-tokens", "8000", str(path))
    assert result.exit_code == 0, result.stderr
    out = result.stdout_bytes
    assert out.startswith(data.rstrip(b"\n"))  # the original lines stay, in place
    new = [json.loads(line) for line in out[len(data.rstrip(b"\n")):].splitlines() if line.strip()]
    boundary, summary, *window = new
    old_lines = [json.loads(line) for line in data.splitlines() if line.strip()]
    leaf = loads(data, str(path)).source.leaf
    assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary" and boundary["parentUuid"] is None
    assert boundary["logicalParentUuid"] == old_lines[leaf]["uuid"]
    assert boundary["compactMetadata"]["trigger"] == "manual" and boundary["compactMetadata"]["preTokens"] == estimate(loads(data, str(path))).tokens
    assert summary["isCompactSummary"] is True and summary["parentUuid"] == boundary["uuid"]
    assert summary["message"]["content"].startswith("This session is being continued from a previous conversation")
    # the log's own compact summary is merged in once, without Claude Code's preamble a second time
    earlier = find_previous(loads(data, str(path)).messages).summary.body
    content = summary["message"]["content"]
    assert content.startswith(COMPACT_PREAMBLE + "## Progress\n")  # Claude Code's summary states no goal
    request = earlier[earlier.index("1. Primary Request and Intent:"):][:300]  # what it keeps first, whole
    assert content.count(COMPACT_PREAMBLE) == 1 and content.count(request) == 1
    uuids = {line["uuid"] for line in old_lines if "uuid" in line}
    parent = summary["uuid"]
    last_old = max(line["timestamp"] for line in old_lines if "timestamp" in line)
    for line in window:
        assert line["uuid"] not in uuids and line["parentUuid"] == parent and line["timestamp"] > last_old
        assert line["sessionId"] == boundary["sessionId"]
        parent = line["uuid"]
    compacted = loads(out, str(path))
    assert compacted.source.root is not None  # the chain resumes from the new boundary
    assert not errors(check(compacted))
    dropped = run("--emergency", "--force", "--keep-recent-tokens", "8000", "--slim", str(path))
    assert dropped.stdout_bytes.count(b"\n") == len(new)


def test_a_compacted_claude_code_log_compacts_again(api, tmp_path):
    path = corpus_log("entire-cli-session-062a8bdd-user-pasted-image.jsonl")
    once = run("--force", "--keep-recent-tokens", "4000", str(path))
    assert once.exit_code == 0, once.stderr
    (tmp_path / "once.jsonl").write_bytes(once.stdout_bytes)
    twice = run("--force", "--keep-recent-tokens", "1000", str(tmp_path / "once.jsonl"))
    assert twice.exit_code == 0, twice.stderr
    assert api.requests[-1].body["system"] == UPDATE_SYSTEM_PROMPT
    compacted = loads(twice.stdout_bytes, "twice.jsonl")
    assert not errors(check(compacted))
    assert sum(1 for m in compacted.messages if isinstance(m.raw, dict) and m.raw.get("isCompactSummary")) == 1


# --- properties ----------------------------------------------------------------------------

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TINY = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=8), keep_user_tokens=20)


def properties(transcript, data: bytes, options: CompactOptions) -> None:
    compacted, report = compact(transcript, options)  # never refuses: what gains nothing is strategy none
    if report.strategy == "none":
        assert compacted is transcript and report.tokens_after == report.tokens_before
        return
    out = dumps(compacted)
    again = loads(out, transcript.name)
    assert estimate(again).tokens < estimate(transcript).tokens
    broken = {v.rule for v in errors(check(transcript))}
    assert {v.rule for v in errors(check(again))} <= broken
    if transcript.format != "claude-code" and report.cut is not None:
        # The recent window is verbatim (thinking aside), its tool results too, unless the report says it could not be.
        verbatim = not any("not verbatim" in note for note in report.notes)
        recent = transcript.messages[report.cut:]
        kept = again.messages[len(again.messages) - len(recent):]
        for before, after in zip(recent, kept):
            assert before.role == after.role
            if before.role == "assistant":
                assert [b for b in before.blocks if not isinstance(b, (Thinking, RedactedThinking))] == list(after.blocks)
            elif verbatim:
                assert before.blocks == after.blocks
            assert [b for b in before.blocks if isinstance(b, Text)] == [b for b in after.blocks if isinstance(b, Text)]
    if report.strategy == "emergency":  # no model: byte-reproducible
        second, _ = compact(transcript, options)
        assert dumps(second) == out
    chained, _ = compact(again, options)  # chained: compact(compact(x)) is valid and holds one summary
    if chained is not again:
        final = loads(dumps(chained), transcript.name)
        assert {v.rule for v in errors(check(final))} <= broken
        summaries = [m for m in final.messages if m.role == "user" and (
            text_of(m).startswith(SUMMARY_PREFIX) or (isinstance(m.raw, dict) and m.raw.get("isCompactSummary")))]
        assert len(summaries) <= 1


@SETTINGS
@given(transcripts(damaged=False))
def test_compact_properties_on_generated_transcripts(generated):
    _, data = generated
    transcript = loads_checked(data)
    assume(transcript is not None)
    properties(transcript, data, TINY)
    compose_k_times(transcript, (64, 32, 16), keep_user_tokens=20, checkpoint_tokens=40)


@pytest.mark.parametrize("path", supported_corpus_files())
def test_emergency_compaction_on_the_corpus(path):
    data = path.read_bytes()
    transcript = loads(data, str(path))
    properties(transcript, data, CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=2000)))


@pytest.mark.parametrize("answer,reason", [
    (Loopback.error(500, "boom"), "HTTP 500: boom (after 0 retries)"),
    (Loopback.slow(3), "did not answer within 0.5 s"),
    (Loopback.text(""), "failed validation twice: too short"),
    (Loopback.text("All good. " * 40), "failed validation twice: 0 of the 3 key sections"),
])
def test_every_summary_failure_falls_back(api, answer, reason):
    api.answer = answer
    result = run("--force", "--retries", "0", "--timeout", "0.5", "--keep-recent-tokens", "1000", str(LONG))
    assert result.exit_code == 0, result.stderr
    assert reason in result.stderr.splitlines()[0] and "compacted (emergency)" in result.stderr
    refused = run("--force", "--no-fallback", "--retries", "0", "--timeout", "0.5", "--keep-recent-tokens", "1000", str(LONG))
    assert refused.exit_code == 4 and refused.stdout == "" and reason in refused.stderr


@pytest.mark.parametrize("path", supported_corpus_files())
def test_the_summary_path_on_the_corpus(api, path):
    data = path.read_bytes()
    transcript = loads(data, str(path))
    result = run("--force", "--no-fallback", "--keep-recent-tokens", "500", str(path))
    assert result.exit_code == 0, result.stderr  # what compacting cannot make smaller goes out as it was
    out = loads(result.stdout_bytes, str(path))
    assert {v.rule for v in errors(check(out))} <= {v.rule for v in errors(check(transcript))}
    assert estimate(out).tokens <= estimate(transcript).tokens


# --- compaction that composes ----------------------------------------------------------------

SHRINKING = (4000, 2000, 1000, 500, 250)


def summaries_in(transcript) -> int:
    return sum(1 for m in transcript.messages if is_summary_message(m))


def compose_k_times(transcript, keeps, **extra) -> list:
    """compact applied once per window size; each output re-read; the properties of every step."""
    from transcompact.counting.counter import TokenCounter
    from transcompact.ops.pruning.prune import prune

    broken = {v.rule for v in errors(check(transcript))}
    steps, current, previous_tokens = [], transcript, None
    for keep in keeps:
        options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep), **extra)
        compacted, report = compact(current, options)
        counter = TokenCounter(current, options.counting)
        if report.strategy == "none":
            steps.append(report)
            continue
        out = dumps(compacted)
        again = loads(out, transcript.name)
        assert {v.rule for v in errors(check(again))} <= broken
        assert summaries_in(again) == (1 if report.cut is not None or summaries_in(current) else 0)
        tokens = estimate(again).tokens
        assert previous_tokens is None or tokens <= previous_tokens
        # never more than pruning alone leaves
        assert report.tokens_after <= counter.tokens(prune(current, options.pruning)[0])
        if report.cut is not None:
            # A Claude Code log reads the summary line and a window that starts with the user as one turn.
            window = compacted.with_messages([m for m in compacted.messages[-report.window_messages:]
                                              if not is_summary_message(m)])
            recent = sum(counter.per_message(window))
            # Over the window asked for only when it is one turn, the least a cut leaves (after
            # the summary, the window starts where the user speaks), or one call and its result.
            one_turn = not any(m.role == "user" and not m.is_tool_result_message for m in window.messages[1:])
            assert recent <= 1.25 * keep or report.window_messages <= 2 or one_turn, (keep, recent)
        steps.append(report)
        current, previous_tokens = again, tokens
    return steps


@pytest.mark.parametrize("path", supported_corpus_files())
def test_compacting_again_and_again_keeps_one_summary(path):
    data = path.read_bytes()
    steps = compose_k_times(loads(data, str(path)), SHRINKING)
    assert steps and all(report.strategy in ("none", "prune", "emergency") for report in steps)



def test_a_second_compaction_merges_into_the_first():
    once = run("--emergency", "--force", "--keep-recent-tokens", "3000", str(LONG))
    twice = run("--emergency", "--force", "--keep-recent-tokens", "1000", "-", input=once.stdout_bytes)
    assert twice.exit_code == 0, twice.stderr
    text = messages_of(twice.stdout_bytes)[0]["content"][0]["text"]
    assert text.count(SUMMARY_PREFIX) == 1 and text.count("## Goal") == 1
    assert "## Goal\nFix the failing build.\n" in text and text.count("Fix the failing build.") == 1
    assert text.count("> Good. Keep the public API of checkout() unchanged") + text.count(
        "began with (verbatim)\n\nGood. Keep the public API") == 1
    first_done = messages_of(once.stdout_bytes)[0]["content"][0]["text"]
    assert "- [x] 22 earlier messages" in first_done
    assert "earlier messages were compacted without a model" in text and text.count("- [x] ") == 1


def test_the_last_state_and_real_errors_only():
    from transcompact.ops.compaction.checkpoint import error_lines

    source = "def f():\n    raise ValueError('bad')\nclass NotAnError(Exception):\n    pass\n"
    assert error_lines(source, failed=False) == []
    output = "collected 3 items\nFAILED tests/test_a.py::test_x - AssertionError: 1 != 2\n"
    assert error_lines(output, failed=False) == ["FAILED tests/test_a.py::test_x - AssertionError: 1 != 2"]
    traceback = "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nKeyError: 'x'\n"
    assert error_lines(traceback, failed=False) == ["KeyError: 'x'"]
    assert error_lines("Exit code 2\nmake: *** [all] Error 2\n", failed=True)[0] == "make: *** [all] Error 2"
    # Gemini CLI's shell tool: the status after the output, in a wrapper; `Error: (none)` is none.
    from transcompact.ops.compaction.output_errors import exit_failed

    gemini = "<untrusted_context>\nOutput: building\nlink step\nError: (none)\nExit Code: {}\nProcess Group PGID: 7\n</untrusted_context>"
    assert exit_failed(gemini.format(2)) and not exit_failed(gemini.format(0))
    assert error_lines(gemini.format(2), failed=True) == ["link step"]
    assert error_lines(gemini.format(0), failed=False) == []
    build = "".join(f"src/a.ts({i},1): error TS2554: Expected 1 argument.\n" for i in range(40))
    assert error_lines(build, failed=False) == ["src/a.ts(0,1): error TS2554: Expected 1 argument.",
                                                "src/a.ts(1,1): error TS2554: Expected 1 argument.",
                                                "… 37 more error lines in that output …",
                                                "src/a.ts(39,1): error TS2554: Expected 1 argument."]


def test_a_here_document_is_kept_as_the_command_that_wrote_it():
    from transcompact.ops.compaction.checkpoint import without_heredoc_bodies

    body = "\n".join(f"line {i}" for i in range(40))
    written = f"cd /testbed && cat > test_fix.py << 'EOF'\n{body}\nEOF\npython test_fix.py"
    assert without_heredoc_bodies(written) == (
        "cd /testbed && cat > test_fix.py << 'EOF'\n[… 40 lines of here-document …]\nEOF\npython test_fix.py")
    tabs = "cat <<-END > a.txt\n\tone\n\ttwo\n\tthree\n\tfour\n\tEND\n"
    assert without_heredoc_bodies(tabs) == "cat <<-END > a.txt\n[… 4 lines of here-document …]\n\tEND\n"
    short = "cat > b.txt <<EOF\nshort\nEOF"
    assert without_heredoc_bodies(short) == short
    # A shift, a here-string or an unterminated `<<` opens no here-document.
    for kept in ("python -c \"x = 1 << shift\nprint(x)\n\"", "grep a <<< \"$text\"\nls\nls\nls\nls"):
        assert without_heredoc_bodies(kept) == kept


def test_a_compacted_transcript_that_fits_the_window_is_left_alone():
    once = run("--emergency", "--force", "--keep-recent-tokens", "1000", str(LONG))
    again = run("--emergency", "--force", "-", input=once.stdout_bytes)  # the default window holds all of it
    assert again.exit_code == 0 and again.stdout_bytes == once.stdout_bytes
    assert "not compacted" in again.stderr


def big_turn(**turn) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": "Go."}, *turn["messages"]]}).encode()


@pytest.mark.parametrize("body", [
    pytest.param(big_turn(messages=[{"role": "assistant", "content": "word " * 150_000},
                                    {"role": "user", "content": "Thanks, now summarize it."}]), id="one-huge-reply"),
    pytest.param(big_turn(messages=[
        {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i:05d}", "name": "read",
                                           "input": {"path": f"src/file_{i}.py"}} for i in range(10_000)]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:05d}", "content": "x" * 60}
                                     for i in range(10_000)]}]), id="ten-thousand-parallel-calls"),
    pytest.param(big_turn(messages=[{"role": "assistant", "content": "word " * 150_000}]), id="one-huge-last-reply"),
])
def test_a_transcript_over_the_budget_always_fits(body, tmp_path):
    assert estimate(loads(body, "big.json")).fraction > 1
    result = run("-o", str(tmp_path / "out.json"), "-", input=body)
    assert result.exit_code == 0, result.stderr
    assert "the emergency mode was used: the estimate is at least 95% of the input budget" in result.stderr
    assert "summary failed" not in result.stderr
    out = loads((tmp_path / "out.json").read_bytes(), "out.json")
    assert estimate(out).fraction < 0.95 and not errors(check(out))


@pytest.mark.parametrize("keep_messages", [4, 12, 20])
def test_keep_recent_messages_keeps_that_many_messages_verbatim(keep_messages):
    transcript = loads((FIXTURES / "anthropic/long-session.json").read_bytes())
    options = CompactOptions(force=True, emergency=True, window=200_000,
                             summary=SummaryOptions(keep_recent_tokens=500, keep_recent_messages=keep_messages))
    compacted, report = compact(transcript, options)
    assert report.strategy == "emergency"
    window = [m for m in compacted.messages if not is_summary_message(m)]
    assert len(window) >= keep_messages  # those messages, pruned as compact prunes any window
    assert [(m.role, [b.tool_call_id for b in m.tool_results]) for m in window[-keep_messages:]] == \
        [(m.role, [b.tool_call_id for b in m.tool_results]) for m in transcript.messages[-keep_messages:]]
    assert not errors(check(compacted))
    fewer, _ = compact(transcript, CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=500)))
    assert len(fewer.messages) < len(compacted.messages)


def test_a_session_that_is_one_long_turn_keeps_its_goal():
    """The cut splits the only turn: its opening request is the goal, quoted once, at the end."""
    messages = [{"role": "user", "content": "Port the parser to Rust, keeping every test green."}]
    for n in range(30):
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "Bash",
                                                        "input": {"command": f"cargo test step{n}"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}",
                                                   "content": "x" * 2000 + f"\ntest result: ok. {n} passed"}]}]
    source = json.dumps({"model": "claude-sonnet-4-5", "messages": [*messages, {"role": "assistant", "content": "Done."}]})
    result = run("--emergency", "--force", "--keep-recent-tokens", "2000", input=source)
    assert result.exit_code == 0, result.stderr
    text = messages_of(result.stdout_bytes)[0]["content"][0]["text"]
    assert "## Goal\nThe request this session began with, quoted whole at the end of this summary." in text
    assert text.count("Port the parser to Rust") == 1 and text.endswith("Port the parser to Rust, keeping every test green.")


def test_a_turn_whose_opening_follows_the_agents_own_context_keeps_it_as_the_goal():
    """A Codex rollout begins with the agent's environment, not a request of the user's: a cut in
    the first turn makes its opening the goal (found using compact as a user: "no request")."""
    rollout = next((FIXTURES / "codex").glob("*0199c3a1*.jsonl"))
    result = run_cli("compact", "--emergency", "--force", "--keep-recent-tokens", "60", "--count", "content",
                     "--to", "anthropic", str(rollout))
    assert result.exit_code == 0, result.stderr
    text = "\n".join(block["text"] for m in messages_of(result.stdout_bytes) if isinstance(m["content"], list)
                     for block in m["content"] if block.get("type") == "text")
    assert "## Goal\nThe request this session began with, quoted whole at the end of this summary." in text
    assert "The checkout test fails with a KeyError. Find out why and fix it." in text


@pytest.mark.parametrize("interrupted", [True, False])
def test_a_request_typed_while_interrupting_a_turn_is_the_one_the_turn_goes_on_for(interrupted):
    """Claude Code writes the user's new words beside the results of the calls they interrupted:
    those are the request the kept window goes on with, not the turn's first (found using compact
    as a user). Words beside results the user did not interrupt are a note: the turn's request stays."""
    def call(n, command):
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": command}}]}

    messages = [{"role": "user", "content": "start phoenix in background"}, call(1, "mix phx.server"),
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Interrupted by user",
                                              "is_error": True},
                                             *([{"type": "text", "text": "[Request interrupted by user]"}] if interrupted else []),
                                             {"type": "text", "text": "scrolling back in xterm.js still does not work: search "
                                                                      "how xterm.js and tmux interact"}]}]
    for n in range(2, 12):
        messages += [call(n, f"curl -s https://example.com/search?q=xterm+{n}"),
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "x" * 2000}]}]
    source = json.dumps({"model": "claude-sonnet-4-5", "messages": [*messages, {"role": "assistant", "content": "Found it."}]})
    result = run("--emergency", "--force", "--keep-recent-tokens", "1500", input=source)
    assert result.exit_code == 0, result.stderr
    text = messages_of(result.stdout_bytes)[0]["content"][0]["text"]
    if not interrupted:
        assert text.endswith("## The request this turn began with (verbatim)\n\nstart phoenix in background")
        return
    assert text.endswith("## The request this turn began with (verbatim)\n\nscrolling back in xterm.js still does not work: "
                         "search how xterm.js and tmux interact")
    assert "[Request interrupted by user]" not in text and "> start phoenix in background" in text


def test_a_slash_commands_words_are_the_users_own():
    typed = ("<command-message>orchestrator is running…</command-message>\n<command-name>/orchestrator</command-name>\n"
             "<command-args>create TODO app by Next.js</command-args>")
    assert own_words(typed) == "/orchestrator create TODO app by Next.js"
    assert own_words("<command-name>/clear</command-name>\n<command-args></command-args>") == ""
    assert own_words("[Request interrupted by user for tool use]\nno, use the other port") == "no, use the other port"


@pytest.mark.parametrize("name", ["spotter-session-4d5611e5-compacted-1512lines.jsonl",
                                  "entire-cli-session-70d782f7-long-2x-microcompact-2x-compact.jsonl"])
def test_a_compaction_after_claudes_own_stays_within_its_budget(name):
    """Claude's own summary (15,000 characters and more) is merged into ours by its start and its
    end, and compacting again stays within the same budget (it once grew to 3,091 tokens of 2,405)."""
    path = CORPUS / "claude-code" / name
    if not path.is_file():
        pytest.skip("the shared corpus is not here")
    transcript = loads(path.read_bytes(), name)
    for keep in (5000, 2000, 1000):
        options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep))
        compacted, report = compact(transcript, options)
        assert report.summary_chars * options.counting.ratio <= options.checkpoint_tokens + options.keep_user_tokens
        transcript = loads(bytes(dumps(compacted)), name)
    summary = text_of(next(m for m in transcript.messages if is_summary_message(m)))
    assert summary.count("[… ") >= 1 and "Earlier summary" in summary  # Claude's summary, by its start and end


def test_a_later_pi_compaction_stays_within_its_budget_as_pi_words_it():
    """pi words a split turn's request after a rule of its own, which the room left for the
    checkpoint must count as well (it was 26,014 characters of 26,000)."""
    path = CORPUS / "trajectories" / "pi-coding-agent-large-session.jsonl"
    if not path.is_file():
        pytest.skip("the shared corpus is not here")
    transcript = loads(path.read_bytes(), path.name)
    for keep in (5000, 2000):
        options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep))
        compacted, report = compact(transcript, options)
        assert report.summary_chars * options.counting.ratio <= options.checkpoint_tokens + options.keep_user_tokens
        transcript = loads(bytes(dumps(compacted)), path.name)


@pytest.mark.parametrize("name", ["entire-cli-session-839b35f7-microcompact-and-compact.jsonl",
                                  "spotter-subagent-session.jsonl"])
def test_a_compacted_log_counts_read_back_what_compact_reported(name):
    """The overhead the usage recorded before the compaction showed (system prompt, tools) still
    holds after it: `estimate --fail-over` after compacting sees what the agent will send (issue
    26: 106,061 → 67,192 reported, 5,864 read back). The responses the window keeps have their
    usage restated on the model compact counted with, so the output read back is counted with
    that model (its overhead and ratio) and says what compact reported."""
    from transcompact.counting.counter import TokenCounter
    from transcompact.ops.estimate import estimate

    path = CORPUS / "claude-code" / name
    if not path.is_file():
        pytest.skip("the shared corpus is not here")
    transcript = loads(path.read_bytes(), name)
    compacted, report = compact(transcript, CompactOptions(
        force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=2000)))
    assert report.strategy == "emergency"
    read_back = estimate(loads(bytes(dumps(compacted)), name))
    assert read_back.tokens == pytest.approx(report.tokens_after, rel=0.02), (read_back.tokens, report.tokens_after)
    fitted, read = TokenCounter(transcript).basis.calibration, TokenCounter(loads(bytes(dumps(compacted)), name)).basis.calibration
    assert fitted is not None and read is not None
    assert read.overhead == pytest.approx(fitted.overhead, rel=0.01) and read.ratio == pytest.approx(fitted.ratio, rel=0.01)


def test_a_hidden_overhead_over_the_target_keeps_the_window_asked_for_and_summarizes_once(monkeypatch):
    """A log whose recorded usage shows more tokens than the target outside what it holds (a system
    prompt and tool schemas that large): no window is small enough, so the window asked for is kept
    and the reason says so, without summarizing the old part again for each smaller window."""
    import transcompact.ops.compaction.compact as compacting

    from .builders import usage_log

    transcript = loads(usage_log(150_000, 0.25, turns=40), "log.jsonl")
    summaries = []
    summary_text = compacting.summary_text
    monkeypatch.setattr(compacting, "summary_text", lambda *args, **kwargs: summaries.append(1) or summary_text(*args, **kwargs))
    compacted, report = compact(transcript, CompactOptions(force=True, emergency=True))
    assert report.strategy == "emergency" and report.tokens_after > compacting.target(CompactOptions())
    assert report.fallback_reason.endswith("over the target of 100,000 tokens before the window: the window asked for is kept")
    assert len(summaries) <= 3  # the window asked for, pruned harder twice; no smaller window


def test_the_recent_window_keeps_its_older_tool_results_whole():
    """Prune clears all but the newest results; the window compact keeps is verbatim all the same:
    the output of a commit or a `git log` the user asked for in it is still there."""
    transcript = loads(session(rounds=60, size=1200), "s.json")
    options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=2500))
    assert any(is_placeholder(result_text(r)) for r in results(prune(transcript, options.pruning)[0]))  # prune alone clears
    compacted, report = compact(transcript, options)
    assert report.strategy == "emergency" and not report.notes
    recent = transcript.messages[report.cut:]
    assert len([b for m in recent for b in m.blocks if isinstance(b, ToolResult)]) > options.pruning.keep_last
    assert compacted.messages[-len(recent):] == recent


def test_a_window_that_cannot_fit_the_target_says_it_is_not_verbatim():
    transcript = loads(session(rounds=60, size=1200), "s.json")
    options = CompactOptions(force=True, emergency=True, threshold=2000,
                             summary=SummaryOptions(keep_recent_tokens=2500))
    compacted, report = compact(transcript, options)
    assert report.strategy == "emergency"
    assert report.notes and report.notes[0].startswith("the recent window is not verbatim: it did not fit the target of ")


def test_compact_reads_the_errors_of_each_old_output_once(monkeypatch):
    """Prune's key lines and the checkpoint's facts read the same old outputs: within one
    compaction each output's error lines are looked for once, and give what they gave."""
    from transcompact.ops.compaction import output_errors

    data = session(rounds=12, size=3000).replace(b"of the output", b"error: of the output")
    transcript = loads(data, "s.json")
    options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=1500))
    expected = dumps(compact(transcript, options)[0])
    read: list[str] = []
    looked_for = output_errors._error_lines
    monkeypatch.setattr(output_errors, "_error_lines", lambda text, failed: read.append(text) or looked_for(text, failed))
    assert dumps(compact(transcript, options)[0]) == expected
    assert read and len(read) == len(set(read))
    read.clear()
    output_errors.error_lines("error: once\n", False), output_errors.error_lines("error: once\n", False)
    assert len(read) == 2  # outside a compaction nothing is remembered


def test_a_turn_the_agents_harness_began_is_not_quoted_as_the_users_request():
    """Found using compact as a user: mini-swe-agent's note of a call it could not read, a user
    message of its own (`extra.interrupt_type`), was quoted as "the request this turn began with"."""
    def call(n):
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]}

    messages = [{"role": "user", "content": "Fix the data loss when a parent with a non-numeric key is saved after its child."},
                call(0), {"role": "tool", "tool_call_id": "c0", "content": "x" * 3000},
                {"role": "user", "content": "Tool call error:\n\n<error>\nError parsing tool call arguments\n</error>",
                 "extra": {"interrupt_type": "FormatError"}}]
    for n in range(1, 10):
        messages += [call(n), {"role": "tool", "tool_call_id": f"c{n}", "content": "y" * 3000}]
    result = run("--emergency", "--force", "--keep-recent-tokens", "2000",
                 input=json.dumps({"model": "gpt-4o", "messages": [*messages, {"role": "assistant", "content": "Done."}]}))
    assert result.exit_code == 0, result.stderr
    summary = next(m["content"] for m in messages_of(result.stdout_bytes) if "Previous conversation summary" in str(m["content"]))
    assert "Tool call error" not in summary and "Fix the data loss" in summary
