"""A rewritten log reads back as its command reported it: `estimate` of the output of `prune`,
`compact` and `compact --slim` agrees with the `tokens_after` that command printed, within 2 %,
for every format transcompact writes: the sessions the agents recorded (tests/recorded/, and
those they compacted themselves), the shipped fixtures and, when it is here, every log of the
shared corpus in an agent's format. `repair` prints no count: what it changes of a log that
recorded usage (a line or two) leaves it counting within 2 % of its input.

The count of a log is one model fitted on its recorded usage (docs/counting.md): a rewrite is
counted with its input's model, and writes the usage it keeps restated by it (the prompt less
what the rewrite took out before it, at the model's tokens a character; a compaction's kept
responses, the prompt the model counts before them in the output), so that the output's
usage lies on that model and `estimate` of it fits the same one. The cases marked xfail are
those where the output keeps nothing the model can be read from; each says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .builders import run_cli as run
from .conftest import CORPUS, FIXTURES

RECORDED = Path(__file__).parent / "recorded"
TOLERANCE = 0.02
LARGE = 1_000_000  # bytes: a corpus log above this runs with the slow tests

PRUNE = ("prune", "--hard-clear-after", "1", "--keep-last", "1")
REPAIR = ("repair",)


def compact(*flags: str) -> tuple[str, ...]:
    return ("compact", "--emergency", "--force", *flags)


COMMANDS = {"prune": PRUNE, "compact": compact(), "compact --slim": compact("--slim"), "repair": REPAIR}

# What the output keeps nothing of the model in (the cases are xfail, strict: each holds until it is closed).
GAPS = {
    # pi reads a kept reply's usage as no usage of the compacted session: the session is counted
    # with the model of what comes before the compaction entry, which --slim leaves the window
    # alone: a window of one reply is one sample, an anchor on it, not the model (2.2 % below).
    ("pi-recorded-compacted.jsonl", "compact --slim"):
        "--slim leaves pi's compaction one reply before it: one sample, not the model",
    # Nothing to compact (Codex compacted it itself, no response since): slim drops the history
    # before that compaction, which the count was carried from; slim writes no usage of its own.
    ("codex-cli-rollout-small.jsonl", "compact --slim"):
        "slim drops the history before Codex's own compaction, which the count is carried from",
}


def logs() -> list[tuple[str, Path]]:
    """(format, log) of every log of a format transcompact writes that the tests hold."""
    found = [(path.parent.name, path) for path in sorted(RECORDED.glob("*/*.json*"))]
    found += [(path.parent.name, path) for path in sorted(RECORDED.glob("compacted/*/*.json*"))]
    for name in ("claude-code", "codex", "gemini", "pi", "anthropic", "openai", "jsonl", "responses", "openhands"):
        found += [(name, path) for path in sorted((FIXTURES / name).iterdir())]
    if CORPUS.is_dir():
        found += [("claude-code", path) for path in sorted((CORPUS / "claude-code").glob("*.jsonl"))]
        found += [("codex", path) for path in sorted((CORPUS / "other").glob("codex-*.jsonl"))]
        found += [("gemini", path) for path in sorted((CORPUS / "other").glob("*gemini*.json"))]
        found += [("pi", path) for path in sorted((CORPUS / "trajectories").glob("pi-*.jsonl"))]
    return found


def cases() -> list:
    out = []
    for agent, path in logs():
        for command in COMMANDS:
            marks = [pytest.mark.xfail(reason=GAPS[(path.name, command)], strict=True)] if (path.name, command) in GAPS else []
            if path.is_file() and path.stat().st_size > LARGE:
                marks.append(pytest.mark.slow)
            out.append(pytest.param(path, command, marks=marks, id=f"{agent}/{path.name}-{command}"))
    return out


def counted(path: Path) -> tuple[int, bool]:
    """`estimate`'s count of a log, and whether it recorded usage."""
    done = run("estimate", "--json", str(path))
    assert done.exit_code == 0, done.stderr
    found = json.loads(done.stdout)["files"][0]
    return found["tokens"], found["recorded"] is not None


@pytest.mark.parametrize(("log", "command"), cases())
def test_a_rewritten_log_reads_back_as_its_command_reported(log, command, tmp_path):
    before, recorded = counted(log)
    if command == "repair" and not recorded:
        return  # a request body counts what it holds: what repair changed of it
    keep = ("--keep-recent-tokens", str(max(150, min(3000, before // 10)))) if command.startswith("compact") else ()
    out, report = tmp_path / log.name, tmp_path / "report.json"
    done = run(*COMMANDS[command], *keep, "--report", str(report), "-o", str(out), str(log))
    assert done.exit_code == 0, done.stderr
    printed = json.loads(report.read_text().splitlines()[0])
    if printed["status"] != "changed":
        return  # the log is written as it was: nothing to read back
    reported = before if command == "repair" else printed["tokens_after"]
    assert counted(out)[0] == pytest.approx(reported, rel=TOLERANCE), (before, reported)


@pytest.mark.parametrize("log", [pytest.param(path, id=path.name) for agent, path in logs()
                                 if agent == "claude-code" and path.stat().st_size <= LARGE])
def test_thinking_cleared_reads_back_as_prune_reported(log, tmp_path):
    """A fit's frame (what a block costs besides its characters) goes with each thinking block
    prune clears: the usage it restates is less those frames too, so the output counts what prune
    reported (found using prune as a user: 3.4 % over on a corpus log, the frames of 11 blocks)."""
    out, report = tmp_path / "out.jsonl", tmp_path / "report.json"
    done = run(*PRUNE, "--clear-thinking", "--report", str(report), "-o", str(out), str(log))
    assert done.exit_code == 0, done.stderr
    printed = json.loads(report.read_text().splitlines()[0])
    if printed["status"] == "changed":
        assert counted(out)[0] == pytest.approx(printed["tokens_after"], rel=0.002)


def test_a_log_counted_by_an_anchor_compacted_twice_still_counts_what_it_did_not_show(tmp_path):
    """One response recorded usage: the count is anchored on it (the system prompt and tools it
    showed: a hidden overhead). compact restates the usage of the response it keeps as that anchor
    counts it, so the output (with --slim, nothing before its compaction to carry a count from) is
    anchored again, and compacted once more it still counts the overhead, as compact reported, not
    the content alone."""
    from .builders import claude_log

    lines = [json.loads(line) for line in claude_log(rounds=6, size=2000).splitlines()]
    last = max(i for i, line in enumerate(lines) if line["type"] == "assistant")  # what every window keeps
    lines[last]["message"]["usage"] = {"input_tokens": 20_000, "output_tokens": 20}  # the content is about 3,000
    log = tmp_path / "session.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for step, keep in enumerate(("600", "100")):
        out, report = tmp_path / f"out{step}.jsonl", tmp_path / f"report{step}.json"
        done = run(*compact("--slim", "--keep-recent-tokens", keep), "--report", str(report), "-o", str(out), str(log))
        assert done.exit_code == 0, done.stderr
        printed = json.loads(report.read_text().splitlines()[0])
        assert printed["status"] == "changed" and printed["tokens_after"] > 17_000, printed
        assert counted(out)[0] == pytest.approx(printed["tokens_after"], rel=TOLERANCE)
        log = out


# The fields a usage is recorded under, in each agent's log: a dict under one of these holds figures.
_USAGE_FIELDS = {"usage", "tokens", "total_token_usage", "last_token_usage"}


def _usage_shrunk(value, under: bool = False):
    """`value` with every figure of every recorded usage made small (100, 10 of an output): the
    log holds far more than its usage says the API read, as a log whose agent left old content out
    of what it sent, or whose usage a provider reported low."""
    if isinstance(value, dict):
        return {k: (10 if "output" in k.lower() else 100) if under and type(v) is int and v > 0
                else _usage_shrunk(v, k in _USAGE_FIELDS or (under and isinstance(v, dict))) for k, v in value.items()}
    if isinstance(value, list):
        return [_usage_shrunk(v) for v in value]
    return value


@pytest.mark.parametrize("command", ["prune", "compact", "compact --slim"])
@pytest.mark.parametrize("log", sorted(RECORDED.glob("*/*.json*")), ids=lambda path: path.parent.name)
def test_a_log_holding_more_than_its_usage_counted_reads_back_as_its_command_reported(log, command, tmp_path):
    """Its count rests on an anchor that showed a negative overhead: the old content the usage
    did not count stands for what the agent left out, which a rewrite may take out too. The
    rewrite restates none of that usage (restated by what it took out, a response's usage would
    fall to its output, no longer read as usage, and the output would count from an older anchor
    or its content: millions of tokens where the command reported its usage's few hundred)."""
    source = tmp_path / f"shrunk-{log.name}"
    lines = log.read_text().splitlines()
    source.write_text("".join(json.dumps(_usage_shrunk(json.loads(line))) + "\n" for line in lines if line.strip()))
    before, _ = counted(source)
    content = json.loads(run("estimate", "--json", "--count", "content", str(source)).stdout)["files"][0]["tokens"]
    assert before < content / 2, (before, content)  # the usage counted far less than the log holds
    keep = ("--keep-recent-tokens", "150") if command.startswith("compact") else ()
    out, report = tmp_path / log.name, tmp_path / "report.json"
    done = run(*COMMANDS[command], *keep, "--report", str(report), "-o", str(out), str(source))
    assert done.exit_code == 0, done.stderr
    printed = json.loads(report.read_text().splitlines()[0])
    if command == "prune":
        assert printed["status"] == "changed", printed  # old results cleared: the case this is about
    assert counted(out)[0] == pytest.approx(printed["tokens_after"], rel=TOLERANCE), (before, printed)
