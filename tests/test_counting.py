"""The count a user sees: the model fitted on (or anchored on) the usage a transcript recorded, reused for its rewrites,
and what an Anthropic server-side compaction leaves the API to read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from transcompact import dumps
from transcompact.cli.main import cli
from transcompact.counting.calibrate import recorded_usage
from transcompact.counting.counter import Options, TokenCounter
from transcompact.formats import loads
from transcompact.ops.estimate import estimate

from .builders import corpus_logs, formula, usage_log
from .builders import run_cli as run
from .conftest import FIXTURES

CONTENT = Options(count="content")




def usage_transcript(overhead: int = 12_000, ratio: float = 0.31, shape: str = "anthropic"):
    """A conversation whose responses recorded usage, and one user message after the last of them."""
    data = usage_log(overhead, ratio, shape=shape) + json.dumps({"role": "user", "content": "And now the tests, please."}).encode() + b"\n"
    return loads(data, "log.jsonl")


# --- the model fitted on recorded usage, and the anchor ----------------------------------------


def chars_of(transcript) -> int:
    return sum(len(b.text) for m in transcript.messages for b in m.blocks)


def model_count(transcript, fit) -> int:
    """The model's count: the fitted overhead + ratio × the content before the newest response
    that recorded usage, that response's recorded output, and the estimate of what follows it."""
    recorded = recorded_usage(transcript.messages)
    before = transcript.with_messages(transcript.messages[:recorded.message])
    after = transcript.with_messages(transcript.messages[recorded.message + 1:])
    return round(fit.overhead + fit.ratio * chars_of(before)) + recorded.output + formula(after)


@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_the_default_count_is_the_model_fitted_on_the_recorded_usage(shape):
    transcript = usage_transcript(shape=shape)
    report, content = estimate(transcript), estimate(transcript, CONTENT)
    fit = TokenCounter(transcript).basis.calibration
    assert fit.overhead == pytest.approx(12_000, abs=2) and fit.ratio == pytest.approx(0.31, abs=1e-4)
    assert report.tokens == model_count(transcript, fit) == TokenCounter(transcript).tokens(transcript)
    # Through the newest response: the log counts the context it recorded and the estimate of what follows.
    assert report.tokens == report.recorded.context + report.per_message[-1].tokens
    assert report.method == "fitted on 12 recorded responses: 12,000 + chars × 0.3100"
    # The fixed overhead is reported as overhead, one figure by role and by kind; the rest is the
    # content × the ratio (what follows the newest response, the estimator's).
    assert report.by_kind["overhead"] == report.by_role["overhead"] == pytest.approx(12_000, rel=0.05)
    assert sum(report.by_kind.values()) == sum(report.by_role.values()) == report.tokens == report.per_message[-1].running
    assert report.calibration is None and estimate(transcript, Options(calibrate=True)).calibration == fit
    assert estimate(transcript, Options(calibrate=True)).tokens == report.tokens
    assert content.tokens == formula(transcript) and content.method == "chars × 0.25 + 4 per message"


def test_every_tokenizer_adds_the_same_fixed_overhead():
    transcript = usage_transcript()
    chars = TokenCounter(transcript).basis.calibration
    o200k = TokenCounter(transcript, Options(tokenizer="o200k")).basis.calibration
    assert o200k.overhead == chars.overhead and 0.5 < o200k.ratio < 2
    report = estimate(transcript, Options(tokenizer="o200k"))
    assert report.method.startswith("fitted on 12 recorded responses: 12,000 + o200k tokens × ")
    assert report.by_kind["overhead"] == report.by_role["overhead"] == pytest.approx(12_000, rel=0.05)
    assert report.tokens == pytest.approx(estimate(transcript).tokens, rel=0.05)


def test_with_one_response_the_count_is_anchored_on_it():
    transcript = loads(usage_log(5_000, 0.3, turns=1) + json.dumps({"role": "user", "content": "Go on."}).encode() + b"\n", "one.jsonl")
    for tokenizer in ("chars", "o200k"):
        report = estimate(transcript, Options(tokenizer=tokenizer))
        content = estimate(transcript, Options(tokenizer=tokenizer, count="content"))
        assert report.tokens == report.recorded.context + content.per_message[-1].tokens
        assert report.method.startswith("recorded usage at message 1 + ")
        assert report.by_kind["overhead"] == report.by_role["overhead"]


def test_a_transcript_without_usage_is_counted_by_its_content():
    transcript = loads((FIXTURES / "anthropic/tool-loop.json").read_bytes())
    assert estimate(transcript) == estimate(transcript, CONTENT)
    assert TokenCounter(transcript).basis.overhead == 0 and TokenCounter(transcript).basis.anchor is None


def test_an_estimator_that_counts_more_than_was_recorded_never_gives_a_negative_total():
    one = usage_log(0, 0.1, turns=1)  # one response (an anchor): the API counted less than chars × 0.25
    transcript = loads(one + json.dumps({"role": "user", "content": "And now the tests, please."}).encode() + b"\n", "log.jsonl")
    report = estimate(transcript)
    assert report.by_kind["overhead"] < estimate(transcript, CONTENT).by_kind["overhead"]
    assert report.tokens == report.recorded.context + report.per_message[-1].tokens
    counter = TokenCounter(transcript)
    # A rewrite counts at least the smaller of its content and what the API read of the input: the
    # negative overhead is not taken off its content again (which left 0 of the last message).
    tail = transcript.with_messages(transcript.messages[-1:])
    counted = estimate(tail, counter=counter)
    assert counted.tokens == counter.tokens(tail) == estimate(tail, CONTENT).tokens == 10
    assert sum(counted.by_kind.values()) == 10 and all(m.running >= 0 for m in counted.per_message)
    # Less its first message, it still holds more than the API read: it counts what was read.
    most = transcript.with_messages(transcript.messages[1:])
    assert estimate(most, CONTENT).tokens > report.tokens == counter.tokens(most)


def test_a_log_pruned_of_what_its_agent_had_cleared_counts_its_content_not_zero(tmp_path):
    """Claude Code clears old tool results before it sends them and its log keeps them, so the log
    holds more than its recorded usage says the API read. Pruned of those results, the log counts
    what it now holds; compacted, what the compaction left (it counted 0 tokens for both)."""
    from .builders import claude_log

    lines = [json.loads(line) for line in claude_log(rounds=6).splitlines()]
    last = max(i for i, line in enumerate(lines) if line["type"] == "assistant")
    lines[last]["message"]["usage"] = {"input_tokens": 3000, "output_tokens": 20}  # the content is about 9,000
    log = tmp_path / "session.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    before = json.loads(run("estimate", "--json", str(log)).stdout)["files"][0]["tokens"]
    for command in (["prune", "--hard-clear-after", "1", "--keep-last", "1"], ["compact", "--emergency", "--force",
                                                                               "--keep-recent-tokens", "500"]):
        out = tmp_path / "out.jsonl"
        done = run(*command, "--report", str(tmp_path / "report.json"), "-o", str(out), str(log))
        assert done.exit_code == 0, done.stderr
        report = json.loads((tmp_path / "report.json").read_text())
        content = json.loads(run("estimate", "--json", "--count", "content", str(out)).stdout)["files"][0]["tokens"]
        assert report["tokens_before"] == before and 0 < report["tokens_after"] == content < before
    # Read back, the compacted log counts what compact reported (the negative overhead is not carried).
    assert json.loads(run("estimate", "--json", str(out)).stdout)["files"][0]["tokens"] == report["tokens_after"]


def test_a_log_compacted_twice_says_how_many_compactions_back_its_model_was_fitted():
    """Compacted twice with no response since, pi's session is counted with the model fitted on the
    log before both compactions, and the method says so once ("before the compaction" was written
    once per compaction passed: ", before the compaction, before the compaction")."""
    log = next((Path(__file__).parent / "recorded" / "pi").glob("*.jsonl")).read_bytes()
    methods = []
    for keep in ("600", "300"):  # each compacts: the summary is no larger than what it replaced
        done = CliRunner().invoke(cli, ["compact", "--emergency", "--force", "-q", "--keep-recent-tokens", keep], input=log)
        assert done.exit_code == 0, done.stderr
        log = done.stdout_bytes
        methods.append(estimate(loads(log, "session.jsonl")).method)
    assert methods[0].startswith("fitted on ") and methods[0].endswith(", before the compaction")
    assert methods[1] == methods[0].removesuffix(", before the compaction") + ", before 2 compactions"


# --- one basis for a transcript and its rewrites --------------------------------------------


def test_a_rewrite_is_counted_on_its_inputs_scale():
    transcript = usage_transcript()
    counter = TokenCounter(transcript)
    fit = counter.basis.calibration
    rewritten = transcript.with_messages(transcript.messages[-5:])
    # Only the fixed overhead stays with the rewrite; the content is counted at the input's ratio.
    assert counter.tokens(rewritten) == estimate(rewritten, counter=counter).tokens == model_count(rewritten, fit)
    # What went (all before the newest response) goes at the ratio: nothing of the overhead.
    taken = fit.ratio * chars_of(transcript.with_messages(transcript.messages[:-5]))
    assert counter.tokens(rewritten) == pytest.approx(counter.tokens(transcript) - taken, abs=1)


def test_a_calibration_fitted_on_the_input_counts_the_rewrite():
    transcript = usage_transcript()
    options = Options(calibrate=True)
    counter = TokenCounter(transcript, options)
    fit = counter.basis
    rewritten = transcript.with_messages(transcript.messages[-5:])
    report = estimate(rewritten, options, counter)
    assert report.calibration == fit.calibration and report.method == fit.method
    assert report.tokens == counter.tokens(rewritten) == model_count(rewritten, fit.calibration)


def test_calibrate_without_enough_usage_says_so_and_keeps_the_anchor():
    one_response = loads(usage_log(5_000, 0.3, turns=1), "one.jsonl")
    report = estimate(one_response, Options(calibrate=True))
    assert report.calibration is None and "1 found" in report.notes[0]
    assert report.tokens == estimate(one_response).tokens == report.recorded.context


# --- the corpus ------------------------------------------------------------------------------

SYNTHETIC_USAGE = {"agentsessions-claude-schema-fixture-small.jsonl"}  # an upstream schema fixture: 10 input tokens




@pytest.mark.parametrize("path", corpus_logs())
def test_a_claude_code_log_is_counted_near_the_usage_it_recorded_last(path):
    transcript = loads(path.read_bytes(), str(path))
    report, content = estimate(transcript), estimate(transcript, CONTENT)
    recorded = report.recorded
    if path.name not in SYNTHETIC_USAGE:
        assert 0.9 * recorded.context <= report.tokens - _after(content, recorded) <= 1.1 * recorded.context
        assert report.tokens > 1.5 * content.tokens  # what the log never shows: system prompt, tool schemas
    assert report.by_kind["overhead"] == report.by_role["overhead"]


def _after(content, recorded) -> int:
    """The content estimate of the messages after the last recorded response."""
    return sum(m.tokens for m in content.per_message[recorded.message + 1:])


# --- the command line ------------------------------------------------------------------------


def test_count_content_on_the_command_line_and_in_the_environment(in_root):
    path = "fixtures/claude-code/broken-session.jsonl"

    def report(*args, **env):
        return json.loads(run("estimate", "--json", *args, path, env=env).stdout)["files"][0]

    anchored = report()
    assert anchored["method"] == "recorded usage at message 3 + chars × 0.25 + 4 per message of 1 message after"
    assert anchored["by_role"]["overhead"] == anchored["by_kind"]["overhead"]
    content = report("--count", "content")
    assert content == report(TRANSCOMPACT_COUNT="content")
    assert content["tokens"] == formula(loads((FIXTURES / "claude-code/broken-session.jsonl").read_bytes())) < anchored["tokens"]
    refused = run("estimate", "--calibrate", "--count", "content", path)
    assert refused.exit_code == 2 and "cannot be combined with --count content" in refused.stderr
    # Refused before any file is read: --json printed an empty report (no file, 0 tokens) for it.
    assert run("estimate", "--json", "--calibrate", "--count", "content", path).stdout == ""


# --- Anthropic server-side compaction --------------------------------------------------------

COMPACTED = FIXTURES / "anthropic/server-compaction.json"


def body() -> dict:
    return json.loads(COMPACTED.read_text())


def test_a_request_is_counted_from_its_last_compaction_block():
    data = COMPACTED.read_bytes()
    transcript = loads(data, str(COMPACTED))
    report = estimate(transcript)
    assert [m.tokens for m in report.per_message[:5]] == [0] * 5 == TokenCounter(transcript).per_message(transcript)[:5]
    assert report.notes == ("counted from the compaction block in message 5: the API ignores everything before the "
                            "last one (5 earlier messages not counted)",)
    # The same as counting what the API reads: the summary as text, then what follows it.
    seen = body()
    seen["messages"] = seen["messages"][5:]
    seen["messages"][0]["content"][0] = {"type": "text", "text": seen["messages"][0]["content"][0]["content"]}
    assert report.tokens == estimate(loads(json.dumps(seen).encode())).tokens
    everything = body()
    everything["messages"][5]["content"][0] = seen["messages"][0]["content"][0]
    assert estimate(loads(json.dumps(everything).encode())).tokens > report.tokens + 500  # the module read before it
    assert dumps(transcript) == data


def test_only_the_last_compaction_block_counts_and_a_failed_one_is_empty():
    later = body()
    later["messages"][7]["content"].insert(0, {"type": "compaction", "content": None})
    transcript = loads(json.dumps(later).encode())
    report = estimate(transcript)
    assert [m.tokens for m in report.per_message] == [0] * 7 + [4 + int(len(later["messages"][7]["content"][1]["text"]) * 0.25), 7]
    assert "message 7" in report.notes[0]
