"""`compact --batch-api`: the summaries through Anthropic's Message Batches and OpenAI's Batch
API, against the loopback server (never the network): the same requests as one at a time, split
at the limits, a partial failure falling back to the emergency mode per file, a resume after an
interrupt, and a resubmission that submits nothing twice."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from transcompact.core.errors import ExitCode
from transcompact.ops.compaction.summarize import CHECKPOINT_SYSTEM_PROMPT, UPDATE_SYSTEM_PROMPT
from transcompact.run.batch_api import AnthropicBatches, OpenAIBatches, custom_id, split

from .builders import run_cli as run
from .builders import session

COMPACT = ["compact", "--force", "--keep-recent-tokens", "1000", "--jobs", "1"]
BULK = [*COMPACT, "--batch-api"]
PROJECTS = ("alpha", "beta", "gamma", "delta")
CREATE = {"anthropic": "/v1/messages/batches", "openai": "/v1/batches"}


def transcript(project: str, dialect: str = "anthropic") -> bytes:
    """A session whose summary request names `project` (the loopback decides each request's fate by it)."""
    return session(rounds=6, size=3000, dialect=dialect).replace(b"Fix the failing build.", f"Fix the build of {project}.".encode())


def project_of(request: dict) -> str:
    return next(p for p in PROJECTS if f"Fix the build of {p}." in json.dumps(request))


@pytest.fixture(params=["anthropic", "openai"])
def provider(request, api, monkeypatch) -> str:
    """Each provider, its SDK pointed at the loopback server, and polls that take no time."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{api.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    monkeypatch.setenv("TRANSCOMPACT_POLL_INTERVAL", "0.01")
    monkeypatch.setenv("TRANSCOMPACT_PROVIDER", request.param)
    return request.param


def logs(directory: Path, dialect: str = "anthropic", projects=PROJECTS) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for project in projects:
        (directory / f"{project}.json").write_bytes(transcript(project, dialect))
    return directory


def dialect_of(provider: str) -> str:
    return "openai" if provider == "openai" else "anthropic"




def reports(path: Path) -> dict[str, dict]:
    return {Path(line["file"]).stem: line for line in map(json.loads, path.read_text().splitlines())}


def prompt_of(request: dict) -> str:
    return request["messages"][-1]["content"]


def sent(api) -> list[dict]:
    """Every request the batches held, as their synchronous call would send it."""
    return [body for batch in api.batches.values() for body in batch.requests.values()]


# --- end to end ------------------------------------------------------------------------------


def test_the_batch_sends_what_compact_sends_one_at_a_time_and_writes_the_same_files(provider, api, tmp_path):
    dialect = dialect_of(provider)
    one_at_a_time, in_bulk = logs(tmp_path / "sync", dialect), logs(tmp_path / "bulk", dialect)
    assert run(*COMPACT, "-i", str(one_at_a_time)).exit_code == 0
    synchronous = [r.body for r in api.requests]
    api.requests.clear()

    result = run(*BULK, "-i", "--jobs", "2", "--report", str(tmp_path / "report.jsonl"), str(in_bulk))  # the workers read the results
    assert result.exit_code == 0, result.stderr
    assert len(api.created(CREATE[provider])) == 1  # one batch for the four files
    canonical = functools.partial(json.dumps, sort_keys=True)
    assert sorted(map(canonical, sent(api))) == sorted(map(canonical, synchronous))  # the same requests
    for project in PROJECTS:  # and so the same summaries, the same files
        assert (in_bulk / f"{project}.json").read_bytes() == (one_at_a_time / f"{project}.json").read_bytes()
    assert {r["strategy"] for r in reports(tmp_path / "report.jsonl").values()} == {"summary"}
    assert f"submitted batch {next(iter(api.batches))}: 4 requests" in result.stderr
    assert "ended: 4 succeeded" in result.stderr
    assert result.stdout == ""


def test_each_request_is_the_summarize_prompt_and_its_custom_id_is_its_hash(provider, api, tmp_path):
    assert run(*BULK, "-i", str(logs(tmp_path / "logs", dialect_of(provider)))).exit_code == 0
    (batch,) = api.batches.values()
    for key, body in batch.requests.items():
        assert key == custom_id(provider, body) and len(key) == 64
        system = body["system"] if provider == "anthropic" else body["messages"][0]["content"]
        assert system == CHECKPOINT_SYSTEM_PROMPT
    if provider == "openai":  # the JSONL file uploaded: one Chat Completions request per line
        (upload,) = [r for r in api.requests if r.route == "/v1/files"]
        lines = [json.loads(line) for line in upload.body["file"].splitlines()]
        assert {line["method"] for line in lines} == {"POST"} and {line["url"] for line in lines} == {"/v1/chat/completions"}
        assert upload.body["purpose"] == b"batch"


def test_a_history_in_chunks_takes_a_round_per_chunk_and_ends_as_one_at_a_time(provider, api, tmp_path):
    dialect = dialect_of(provider)
    one_at_a_time = logs(tmp_path / "sync", dialect, ["alpha"])
    in_bulk = logs(tmp_path / "bulk", dialect, ["alpha"])
    chunked = ["--summary-input-tokens", "4000", "-i"]
    assert run(*COMPACT, *chunked, str(one_at_a_time / "alpha.json")).exit_code == 0
    rounds = len(api.requests)
    assert rounds >= 2
    api.requests.clear()

    result = run(*BULK, *chunked, str(in_bulk / "alpha.json"))
    assert result.exit_code == 0, result.stderr
    assert len(api.created(CREATE[provider])) == rounds  # the next chunk is asked for once the summary so far is in
    systems = [(b["system"] if provider == "anthropic" else b["messages"][0]["content"]) for b in sent(api)]
    assert systems == [CHECKPOINT_SYSTEM_PROMPT] + [UPDATE_SYSTEM_PROMPT] * (rounds - 1)
    assert (in_bulk / "alpha.json").read_bytes() == (one_at_a_time / "alpha.json").read_bytes()


def test_a_prompt_the_model_finds_too_long_is_halved_into_the_next_round(provider, api, tmp_path):
    api.batch_outcome = lambda key, request: "prompt too long" if len(json.dumps(request)) > 7000 else "succeeded"
    directory = logs(tmp_path / "logs", dialect_of(provider), ["alpha"])
    result = run(*BULK, "-i", "--report", str(tmp_path / "report.jsonl"), str(directory))
    assert result.exit_code == 0, result.stderr
    prompts = [prompt_of(r) for batch in api.batches.values() for r in batch.requests.values()]
    assert len(prompts) == len(api.batches) >= 3  # a round each: the whole, refused; its halves, one after the other
    assert len(prompts[1]) < len(prompts[0]) / 2 + 100 and prompts[0].startswith(prompts[1][:1000])
    assert reports(tmp_path / "report.jsonl")["alpha"]["strategy"] == "summary"


# --- partial failure -------------------------------------------------------------------------


def test_a_result_that_errored_expired_or_fails_validation_falls_back_per_file(provider, api, tmp_path):
    fates = {"alpha": "succeeded", "beta": "errored", "gamma": "expired", "delta": "not a summary"}
    api.batch_outcome = lambda key, request: fates[project_of(request)]
    directory = logs(tmp_path / "logs", dialect_of(provider))
    result = run(*BULK, "-i", "--report", str(tmp_path / "report.jsonl"), str(directory))
    assert result.exit_code == 0, result.stderr  # a fallback is not an error
    report = reports(tmp_path / "report.jsonl")
    assert report["alpha"]["strategy"] == "summary"
    assert {report[p]["strategy"] for p in ("beta", "gamma", "delta")} == {"emergency"}
    assert report["beta"]["fallback_reason"].startswith("the batch request ")
    assert "Internal server error" in report["beta"]["fallback_reason"]
    assert report["gamma"]["fallback_reason"] == "the batch request expired"
    # summarize's own validation, asked once: a batch gives the same answer again (it said "twice")
    assert "failed validation: too short" in report["delta"]["fallback_reason"]
    assert f"{directory / 'gamma.json'}: the summary failed, so the emergency mode was used: the batch request expired" in result.stderr
    ended = next(line for line in result.stderr.splitlines() if " ended: " in line)
    assert sorted(ended.split(": ", 2)[2].split(", ")) == ["1 errored", "1 expired", "2 succeeded"]  # as the API counts them
    for project in PROJECTS:  # every file rewritten, and valid
        assert run("check", str(directory / f"{project}.json")).exit_code == 0


def test_no_fallback_makes_a_failed_result_exit_4(provider, api, tmp_path):
    api.batch_outcome = lambda key, request: "expired" if project_of(request) == "beta" else "succeeded"
    directory = logs(tmp_path / "logs", dialect_of(provider))
    result = run(*BULK, "-i", "--no-fallback", str(directory))
    assert result.exit_code == ExitCode.PROVIDER
    assert (directory / "beta.json").read_bytes() == transcript("beta", dialect_of(provider))  # untouched
    assert (directory / "alpha.json").read_bytes() != transcript("alpha", dialect_of(provider))


def test_without_a_key_every_file_falls_back_with_the_reason(api, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    result = run(*BULK, "-i", str(logs(tmp_path / "logs")))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("the emergency mode was used: the batch API failed: no Anthropic API key") == 4
    assert api.requests == []
    closing = result.stderr.splitlines()[-1]
    assert closing.startswith("4 files: 4 compacted, 0 unchanged, 0 failed; 4 fell back to the emergency mode "
                              "(the batch API failed: no Anthropic API key); ")


# --- limits ----------------------------------------------------------------------------------


def test_requests_are_split_at_the_batch_limits(provider, api, tmp_path, monkeypatch):
    service = AnthropicBatches if provider == "anthropic" else OpenAIBatches
    monkeypatch.setattr(service, "max_requests", 3)
    result = run(*BULK, "-i", str(logs(tmp_path / "logs", dialect_of(provider))))
    assert result.exit_code == 0, result.stderr
    assert [len(b.requests) for b in api.batches.values()] == [3, 1]


def test_split_keeps_each_group_under_both_limits():
    entries = [{"custom_id": str(i), "body": "x" * size} for i, size in enumerate([10, 10, 50, 10, 10, 10])]
    sizes = [len(json.dumps(e)) + 1 for e in entries]
    groups = split(entries, max_requests=3, max_bytes=sizes[0] + sizes[1] + 5)
    assert [[e["custom_id"] for e in g] for g in groups] == [["0", "1"], ["2"], ["3", "4"], ["5"]]
    assert [len(g) for g in split(entries, max_requests=4, max_bytes=10**6)] == [4, 2]


def test_a_request_over_the_byte_limit_is_not_sent_and_its_file_falls_back(provider, api, tmp_path, monkeypatch):
    service = AnthropicBatches if provider == "anthropic" else OpenAIBatches
    monkeypatch.setattr(service, "max_bytes", 2000)  # below any of these requests
    result = run(*BULK, "-i", "--report", str(tmp_path / "report.jsonl"), str(logs(tmp_path / "logs", dialect_of(provider))))
    assert result.exit_code == 0, result.stderr
    assert api.batches == {}
    reasons = {r["fallback_reason"] for r in reports(tmp_path / "report.jsonl").values()}
    assert reasons == {"the batch request was not sent: it is over the 2,000 bytes a batch may hold"}


# --- idempotence and resume ------------------------------------------------------------------


def test_a_resubmission_submits_nothing_twice(provider, api, tmp_path):
    dialect = dialect_of(provider)
    state = tmp_path / "state.json"
    first = logs(tmp_path / "first", dialect)
    assert run(*BULK, "--resume", str(state), "-i", str(first)).exit_code == 0
    assert len(api.created(CREATE[provider])) == 1
    submitted = json.loads(state.read_text())
    assert set(submitted["results"]) == set(next(iter(submitted["batches"].values())))

    again = logs(tmp_path / "again", dialect)  # the same requests again: their results are in
    result = run(*BULK, "--resume", str(state), "-i", str(again))
    assert result.exit_code == 0, result.stderr
    assert len(api.created(CREATE[provider])) == 1  # no second batch
    assert "resuming: 1 batch submitted before, 4 results in" in result.stderr
    for project in PROJECTS:
        assert (again / f"{project}.json").read_bytes() == (first / f"{project}.json").read_bytes()


def test_a_service_failing_while_a_batch_is_under_way_leaves_the_files_for_the_resume(provider, api, tmp_path):
    dialect = dialect_of(provider)
    directory, state = logs(tmp_path / "logs", dialect), tmp_path / "state.json"
    answering = api.batch_api
    api.batch_api = lambda request: (404, {"error": {"message": "no such batch", "type": "not_found_error"}}) \
        if request.method == "GET" else answering(request)
    result = run(*BULK, "--resume", str(state), "-i", str(directory))
    assert result.exit_code == ExitCode.PROVIDER
    assert "HTTP 404: no such batch" in result.stderr and f"run again with --resume {state}" in result.stderr
    assert all((directory / f"{p}.json").read_bytes() == transcript(p, dialect) for p in PROJECTS)

    api.batch_api = answering
    result = run(*BULK, "--resume", str(state), "-i", "--report", str(tmp_path / "report.jsonl"), str(directory))
    assert result.exit_code == 0, result.stderr
    assert len(api.created(CREATE[provider])) == 1
    assert {r["strategy"] for r in reports(tmp_path / "report.jsonl").values()} == {"summary"}


def test_the_custom_ids_are_the_same_in_every_run_and_a_request_is_sent_once(provider, api, tmp_path):
    dialect = dialect_of(provider)
    twice = logs(tmp_path / "twice", dialect, ["alpha"])
    (twice / "alpha-copy.json").write_bytes(transcript("alpha", dialect))  # the same request as alpha's
    assert run(*BULK, "-i", str(twice)).exit_code == 0
    assert run(*BULK, "-i", str(logs(tmp_path / "other", dialect, ["alpha"]))).exit_code == 0
    first, second = (set(batch.requests) for batch in api.batches.values())
    assert len(first) == 1 and first == second


def wait_for(condition, seconds: float = 120) -> None:
    """Until `condition` holds: what the test waits for is an event, its deadline only the bound of a machine stuck."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.fixture
def started(spawned):
    """The command in a process of its own (with the provider the test is for), to be killed;
    ended with the test whatever happens."""
    def start(args: list[str]) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCOMPACT_")}
        env.update(TRANSCOMPACT_POLL_INTERVAL="0.01", TRANSCOMPACT_PROVIDER=os.environ["TRANSCOMPACT_PROVIDER"])
        return spawned(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)

    return start


def test_a_run_killed_after_it_submitted_is_resumed_and_applies_the_results(provider, api, tmp_path, started):
    dialect = dialect_of(provider)
    directory, state = logs(tmp_path / "logs", dialect), tmp_path / "state.json"
    api.batch_held = True  # the batch runs on and on
    command = started([*BULK, "--resume", str(state), "-i", str(directory)])
    wait_for(lambda: api.batches and state.exists() and any(r.method == "GET" for r in api.requests))
    command.send_signal(signal.SIGTERM)
    _, stderr = command.communicate(timeout=120)
    assert command.returncode == ExitCode.INTERRUPTED, stderr.decode()
    assert f"run again with --resume {state} to apply their results".encode() in stderr
    assert not [r for r in api.requests if r.route.endswith("/cancel")]  # left running, for the resume
    for project in PROJECTS:  # nothing written
        assert (directory / f"{project}.json").read_bytes() == transcript(project, dialect)

    api.batch_held = False  # meanwhile, the batch ended
    result = run(*BULK, "--resume", str(state), "-i", "--report", str(tmp_path / "report.jsonl"), str(directory))
    assert result.exit_code == 0, result.stderr
    assert len(api.created(CREATE[provider])) == 1  # nothing submitted again
    assert {r["strategy"] for r in reports(tmp_path / "report.jsonl").values()} == {"summary"}
    assert json.loads(state.read_text())["collected"] == list(api.batches)


def test_an_interrupt_without_a_state_file_cancels_the_batch(provider, api, tmp_path, started):
    api.batch_held = True
    command = started([*BULK, "-i", str(logs(tmp_path / "logs", dialect_of(provider)))])
    wait_for(lambda: api.batches and any(r.method == "GET" for r in api.requests))
    command.send_signal(signal.SIGTERM)
    _, stderr = command.communicate(timeout=120)
    assert command.returncode == ExitCode.INTERRUPTED, stderr.decode()
    (batch,) = api.batches.values()
    assert batch.canceled and f"canceled batch {batch.id}".encode() in stderr


# --- the library and the command line ------------------------------------------------------


def test_the_library_gathers_the_answers_and_compact_applies_them(api, tmp_path):
    from transcompact import CompactOptions, SummaryOptions, compact, loads
    from transcompact.providers import resolve
    from transcompact.run.batch_api import summarize_in_bulk

    files = {project: loads(transcript(project), f"{project}.json") for project in ("alpha", "beta")}
    options = CompactOptions(force=True, summary=SummaryOptions(keep_recent_tokens=1000))
    answers = summarize_in_bulk(files, files.__getitem__, options, resolve("anthropic", environ=os.environ),
                                str(tmp_path / "state.json"), poll_interval=0.01)
    assert len(api.batches) == 1
    for loaded in files.values():
        compacted, report = compact(loaded, options, answers.summarizer)
        assert report.strategy == "summary" and "Summarized by CHECKPOINT" in compacted.messages[0].blocks[0].text


def test_the_poll_is_one_plain_line_now_and_then_when_stderr_is_not_a_terminal(provider, api, tmp_path):
    api.batch_polls = 5
    result = run(*BULK, "-i", str(logs(tmp_path / "logs", dialect_of(provider), ["alpha"])))
    assert result.exit_code == 0, result.stderr
    polled = [line for line in result.stderr.splitlines() if line.startswith("compact: batch API: ")]
    assert len(polled) == 1 and polled[0].startswith("compact: batch API: 0 of 1 requests done, 0 of 1 batches ended, ")



def test_the_closing_line_counts_the_time_spent_waiting_for_the_batches(provider, api, tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSCOMPACT_POLL_INTERVAL", "0.3")
    api.batch_polls = 3
    started = time.monotonic()
    result = run(*BULK, "-i", str(logs(tmp_path / "logs", dialect_of(provider), ["alpha", "beta"])))
    took = time.monotonic() - started
    assert result.exit_code == 0, result.stderr
    said = float(result.stderr.splitlines()[-1].rsplit("; ", 1)[1].removesuffix(" s"))
    assert took >= 0.6 and said >= took - 0.5  # the waits (three polls 0.3 s apart) are in it


def test_a_dry_run_says_what_it_would_submit_and_submits_nothing(provider, api, tmp_path):
    directory = logs(tmp_path / "logs", dialect_of(provider))
    result = run(*BULK, "--dry-run", "-i", str(directory))
    assert result.exit_code == 0, result.stderr
    assert api.requests == []
    assert f"{directory / 'alpha.json'}: dry run: would submit 1 summary request" in result.stderr
    assert f"would submit 4 requests to the {provider} batch API" in result.stderr
    assert all((directory / f"{p}.json").read_bytes() == transcript(p, dialect_of(provider)) for p in PROJECTS)


def test_a_dry_run_names_the_files_it_cannot_read_and_exits_as_the_run_would(api, tmp_path):
    """A malformed file and one that is no transcript: named with their errors, exit 3, as the run
    without --dry-run says them (found using the docs as a user: passed over in silence, exit 0)."""
    directory = logs(tmp_path / "logs", projects=["alpha"])
    (directory / "bad.json").write_bytes(b'{"messages": [\n')
    (directory / "notes.json").write_bytes(b'{"x": 1}\n')
    result = run(*BULK, "--dry-run", "-i", str(directory))
    assert result.exit_code == ExitCode.INPUT
    assert api.requests == []
    assert f"transcompact: error: {directory / 'bad.json'}:2:1: malformed JSON: unexpected end of data" in result.stderr
    assert f"transcompact: error: {directory / 'notes.json'}: not a transcript" in result.stderr
    assert "would submit 1 request to the anthropic batch API" in result.stderr


def test_a_state_file_that_cannot_be_written_is_refused_before_a_batch_is_sent(api, tmp_path):
    """--resume in a directory that is not there: the batch was sent, then the state could not be
    saved, so nothing could ever collect it (found using --batch-api as a user)."""
    directory = logs(tmp_path / "logs", projects=["alpha"])
    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    result = run(*BULK, "--resume", str(tmp_path / "nodir/state.json"), "-i", str(directory))
    assert result.exit_code == ExitCode.OUTPUT, result.stderr
    assert "nodir/state.json: cannot write" in result.stderr and api.requests == []
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before


def test_stdin_and_resume_without_batch_api_are_usage_errors(api, tmp_path):
    assert run(*COMPACT, "--batch-api").exit_code == ExitCode.USAGE
    result = run(*COMPACT, "--resume", str(tmp_path / "state.json"), str(logs(tmp_path / "logs", projects=["alpha"]) / "alpha.json"))
    assert result.exit_code == ExitCode.USAGE and "--resume has no effect without --batch-api" in result.stderr


def test_a_state_file_of_another_provider_is_refused(api, tmp_path):
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"version": 1, "provider": "openai", "batches": {}, "collected": [], "results": {}}))
    result = run(*BULK, "--resume", str(state), "-i", str(logs(tmp_path / "logs", projects=["alpha"])))
    assert result.exit_code == ExitCode.USAGE
    assert "its batches are openai's, and --provider is anthropic" in result.stderr


@pytest.mark.parametrize("answer", [b'{"hello": 1}', b"<html><head><title>Sign in</title></head></html>"], ids=["json", "page"])
def test_a_batch_api_that_answers_what_is_not_its_own_falls_back_per_file(provider, api, tmp_path, answer):
    api.batch_api = lambda request: (200, answer, {"content-type": "application/json"})
    directory = logs(tmp_path / "logs", dialect_of(provider), ["alpha", "beta"])
    result = run(*BULK, "-i", str(directory))
    assert result.exit_code == 0, result.stderr  # a fallback is not an error
    fell_back = [line for line in result.stderr.splitlines() if "the emergency mode was used: the batch API failed: " in line]
    assert len(fell_back) == 2 and all("<" not in line for line in fell_back)
    assert all(run("check", str(directory / f"{project}.json")).exit_code == 0 for project in ("alpha", "beta"))
