"""`transcompact estimate` as a user sees it: reports, JSON, calibration, flags and variables."""

from __future__ import annotations

import json
import re

import pytest

from transcompact.counting.counter import Options
from transcompact.formats import loads
from transcompact.ops.estimate import estimate

from .builders import TextSnapshot, heavy_in, on_a_terminal, relative, run_with_importtime, usage_log
from .builders import run_cli as run
from .conftest import CORPUS, FIXTURES, ROOT, fixture_files


@pytest.mark.parametrize("path", fixture_files())
def test_plain_report(path, in_root, snapshot):
    result = run("estimate", relative(path))
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout == snapshot(extension_class=TextSnapshot)


def test_json_report(in_root, snapshot):
    result = run("estimate", "--json", "--per-message", "fixtures/claude-code/broken-session.jsonl")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == snapshot


def test_several_files_give_a_row_each_and_a_total(in_root):
    paths = ["fixtures/anthropic/tool-loop.json", "fixtures/openai/tool-calls.json"]
    result = run("estimate", *paths)
    rows = result.stdout.splitlines()
    singles = [json.loads(run("estimate", "--json", p).stdout)["files"][0]["tokens"] for p in paths]
    assert rows[0] == "2 files"
    assert [r.split()[0] for r in rows[2:]] == paths + ["total"]
    assert rows[-1].split()[-1] == str(sum(singles))
    report = json.loads(run("estimate", "--json", *paths).stdout)
    assert report["total"] == {"files": 2, "messages": 11, "tokens": sum(singles)}


def test_fail_over_is_a_ci_gate(in_root):
    path = "fixtures/anthropic/every-block.json"
    assert run("estimate", "--fail-over", "8000", path).exit_code == 0
    over = run("estimate", "--fail-over", "7000", "-q", path)
    assert over.exit_code == 1
    assert over.stdout == ""
    assert over.stderr == ""
    loud = run("estimate", "--fail-over", "7000", path, "fixtures/anthropic/tool-loop.json")
    assert loud.exit_code == 1
    assert loud.stderr == "fixtures/anthropic/every-block.json: 7,931 tokens is over --fail-over 7,000\n"


def test_fail_over_takes_a_fraction_of_the_budget(in_root):
    path = "fixtures/anthropic/every-block.json"  # 7,931 tokens of a 184,000 budget
    assert run("estimate", "-q", "--fail-over", "0.05", path).exit_code == 0
    over = run("estimate", "--fail-over", "0.04", path)
    assert over.exit_code == 1
    assert over.stderr == f"{path}: 7,931 tokens is over --fail-over 0.04 of the budget (7,360)\n"
    assert run("estimate", "-q", "--window", "100000", "--fail-over", "0.05", path).exit_code == 1  # of 84,000


def test_warning_status_and_its_fraction_in_the_report(in_root):
    path = "fixtures/anthropic/every-block.json"
    report = json.loads(run("estimate", "--json", "--threshold", "10000", "--warn-at", "0.75", path).stdout)
    assert (report["files"][0]["warning"], report["files"][0]["status"]) == (7500, "warning")
    plain = run("estimate", "--threshold", "20000", path, env={"TRANSCOMPACT_WARN_AT": "0.9"}).stdout
    assert "status        under (warning from 18,000, compaction threshold 20,000" in plain


def test_window_precedence_flag_then_model_then_variable(in_root):
    path = "fixtures/openai/tool-calls.json"

    def window(*args, **env):
        report = json.loads(run("estimate", "--json", *args, path, env=env).stdout)["files"][0]
        return report["window"], report["max_output"]

    assert window() == (200_000, 16_000)
    assert window(TRANSCOMPACT_WINDOW="100000", TRANSCOMPACT_MAX_OUTPUT="8000") == (100_000, 8_000)
    assert window("--model", "gpt-4o", TRANSCOMPACT_WINDOW="100000") == (128_000, 16_384)
    assert window("--model", "gpt-4o", "--window", "50000") == (50_000, 16_384)
    assert window("--model", "some-local-model", "--window", "32000", "--max-output", "4000") == (32_000, 4_000)
    unknown = run("estimate", "--model", "some-local-model", path)
    assert unknown.exit_code == 2 and "give --window (and --max-output)" in unknown.stderr
    assert window("--model", "some-local-model", "--window", "32000") == (32_000, 16_000)  # a model after the table
    assert window("--model", "some-local-model", TRANSCOMPACT_WINDOW="32000") == (32_000, 16_000)


def test_the_default_threshold_scales_with_the_models_budget(in_root):
    path = "fixtures/openai/tool-calls.json"

    def threshold(*args, **env):
        return json.loads(run("estimate", "--json", *args, path, env=env).stdout)["files"][0]["threshold"]

    assert threshold() == 100_000  # of the default 184,000 budget
    share = 100_000 / 184_000  # about 0.543
    assert threshold("--model", "claude-opus-5-5") == pytest.approx(share * (1_000_000 - 128_000), abs=1)
    assert threshold("--window", "20000", "--max-output", "0") == 10_869
    assert threshold("--model", "some-local-model", "--window", "1000000", "--max-output", "128000") == 473_913
    assert threshold("--model", "claude-opus-5-5", "--threshold", "100000") == 100_000  # as given: absolute
    assert threshold("--model", "claude-opus-5-5", "--threshold", "0.5") == 436_000  # as given: a fraction
    assert threshold("--model", "claude-opus-5-5", TRANSCOMPACT_THRESHOLD="100000") == 100_000


def test_ratio_variable_and_bad_values(in_root):
    path = "fixtures/anthropic/tool-loop.json"

    def tokens(*a, **env):
        return json.loads(run("estimate", "--json", *a, path, env=env).stdout)["files"][0]["tokens"]
    assert tokens(TRANSCOMPACT_RATIO="0.5") == tokens("--ratio", "0.5") > tokens()
    bad = run("estimate", "--ratio", "0", path)
    assert bad.exit_code == 2 and bad.stderr.startswith("transcompact: error: Invalid value for '--ratio'")
    assert run("estimate", "--tokenizer", "bpe", path).exit_code == 2


# --- calibration ---------------------------------------------------------------------------




@pytest.mark.parametrize("shape", ["anthropic", "openai"])
def test_calibration_recovers_a_known_fit(shape):
    transcript = loads(usage_log(12_000, 0.31, shape=shape), "log.jsonl")
    report = estimate(transcript, Options(calibrate=True))
    fit = report.calibration
    assert fit.samples == 12 and fit.error_samples == 6
    assert fit.ratio == pytest.approx(0.31, abs=1e-3)
    assert fit.overhead == pytest.approx(12_000, abs=5)
    assert fit.error < 0.001
    # The line goes through the newest response: the log, which ends with it, counts the context it recorded.
    before = sum(len(b.text) for m in transcript.messages[:-1] for b in m.blocks)
    assert report.tokens == round(fit.overhead + fit.ratio * before) + report.recorded.output == report.recorded.context
    assert sum(report.by_kind.values()) == report.tokens
    assert report.per_message[-1].running == report.tokens
    assert report.recorded.responses == 12 and report.recorded.message == 23


def test_calibration_error_is_measured_on_the_later_half():
    """A log whose later half drifts: the fit over all of it is close, the honest error is not zero."""
    data = usage_log(12_000, 0.31).splitlines()
    drifted = []
    for i, line in enumerate(data):
        value = json.loads(line)
        if "usage" in value and i >= len(data) // 2:
            value["usage"]["cache_read_input_tokens"] = int(value["usage"]["cache_read_input_tokens"] * 1.1)
        drifted.append(json.dumps(value).encode())
    fit = estimate(loads(b"\n".join(drifted) + b"\n", "log.jsonl"), Options(calibrate=True)).calibration
    assert fit.error == pytest.approx(0.09, abs=0.03)


def test_calibration_without_usage_falls_back_and_says_so(in_root):
    result = run("estimate", "--json", "--calibrate", "fixtures/anthropic/tool-loop.json")
    report = json.loads(result.stdout)["files"][0]
    assert report["calibration"] is None and report["ratio"] == 0.25
    assert "0 found" in report["notes"][0]


def test_calibration_with_a_tokenizer_fits_its_ratio_and_the_same_overhead(in_root):
    def report(*args):
        return json.loads(run("estimate", "--json", "--calibrate", *args, "fixtures/gemini/session-2026-01-15T20-51-f7633853.jsonl").stdout)["files"][0]

    chars, o200k = report(), report("--tokenizer", "o200k")
    assert chars["calibration"]["overhead"] == o200k["calibration"]["overhead"] > 0
    assert o200k["method"].startswith("fitted on 3 recorded responses") and "o200k tokens ×" in o200k["method"]


def test_recorded_usage_of_a_claude_code_log(in_root):
    report = json.loads(run("estimate", "--json", "fixtures/claude-code/broken-session.jsonl").stdout)["files"][0]
    assert report["recorded"] == {"tokens": 16_393, "output": 40, "message": 3, "responses": 2}


# --- the terminal, the README, start-up ----------------------------------------------------


def test_a_terminal_gets_a_rich_table():
    done, shown = on_a_terminal("estimate", str(FIXTURES / "anthropic/tool-loop.json"))
    assert done.returncode == 0, done.stderr
    text = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert "─" in text  # the table rules plain text does not have
    assert "by kind" in text and "tool schemas" in text


def readme_examples():
    """The console examples of the README and docs/ that run a shipped fixture and show stdout alone."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for block in re.findall(r"```console\n(.*?)```", "".join(page.read_text() for page in pages), re.S):
        command, _, expected = block.partition("\n")
        if command.startswith("$ transcompact ") and "fixtures/" in command and "\n$ " not in expected:
            yield pytest.param(command[2:], expected, id=command[15:60])


@pytest.mark.parametrize("command,expected", list(readme_examples()))
def test_readme_examples_are_true(command, expected, in_root):
    result = run(*command.split()[1:])
    assert result.stdout == expected


def test_estimate_imports_no_heavy_module_when_piped():
    done, modules = run_with_importtime("estimate", str(FIXTURES / "claude-code/broken-session.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "transcompact.ops.estimate" in modules
    assert heavy_in(modules) == []


def test_a_log_that_holds_more_than_its_recorded_usage_says_so_and_keeps_shares_of_what_it_holds(tmp_path):
    from .builders import claude_log

    lines = [json.loads(line) for line in claude_log(rounds=6).splitlines()]
    last = max(i for i, line in enumerate(lines) if line["type"] == "assistant")
    lines[last]["message"]["usage"] = {"input_tokens": 500, "output_tokens": 20}  # the agent sent far less than it logged
    log = tmp_path / "session.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run("estimate", str(log))
    assert result.exit_code == 0, result.stderr
    assert "tokens more than its recorded usage says the API read" in result.stdout
    shares = [float(share.rstrip("%")) for share in re.findall(r" (-?[\d.]+)%$", result.stdout, re.M)]
    assert shares and all(share <= 100 for share in shares)


@pytest.mark.parametrize("path", [FIXTURES / "anthropic/long-session.json", FIXTURES / "claude-code/broken-session.jsonl",
                                  CORPUS / "claude-code/spotter-tool-heavy.jsonl"], ids=lambda p: p.name)
def test_the_shares_by_role_add_up(path):
    """What no message holds (system, tools, a log's recorded overhead) has a row of its own."""
    if not path.is_file():
        pytest.skip("the shared corpus is not here")
    text = run("estimate", str(path)).stdout
    rows = text.split("by role\n")[1].split("\n\n")[0].splitlines()[1:]
    shares = [float(row.split()[-1].rstrip("%")) for row in rows]
    assert abs(sum(shares) - 100) <= 0.3, rows


def test_every_tokenizer_adds_the_same_fixed_overhead_to_a_recorded_log(api, monkeypatch):
    """A Claude Code log holds no system prompt and no tools: count_tokens of what it holds is
    exact for the content, and the overhead fitted on its recorded usage is added to it, the same
    figure as with the chars estimator and tiktoken, by role and by kind."""
    from transcompact.providers import anthropic as provider

    from .loopback import count_tokens_of

    monkeypatch.setattr(provider, "_STUB_COSTS", {})  # the stubs' cost measured in this test
    log = str(ROOT / "tests/recorded/claude-code/1110a8f5-8aa1-57b9-a117-2ffadf112ba1.jsonl")

    def report(*args):
        done = run("estimate", "--json", "--calibrate", *args, log)
        assert done.exit_code == 0, done.stderr
        return json.loads(done.stdout)["files"][0]

    chars, o200k, exact = report(), report("--tokenizer", "o200k"), report("--tokenizer", "anthropic")
    overhead = round(chars["calibration"]["overhead"])
    assert overhead > 0 and o200k["calibration"]["overhead"] == chars["calibration"]["overhead"]
    probe_with, probe_without, with_stubs = [r for r in api.requests if r.path == "/v1/messages/count_tokens"]
    content = count_tokens_of(with_stubs.body) - (count_tokens_of(probe_with.body) - count_tokens_of(probe_without.body))
    assert exact["tokens"] == content + overhead
    assert f"+ the overhead fitted on the recorded usage ({overhead:,})" in exact["method"]
    for each in (chars, o200k, exact):
        assert each["by_role"]["overhead"] == each["by_kind"]["overhead"] >= overhead - 50
        assert sum(each["by_role"].values()) == sum(each["by_kind"].values()) == each["tokens"]
