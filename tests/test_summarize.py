"""`summarize` through the real anthropic and openai SDKs, against a loopback server."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from transcompact.cli.main import cli
from transcompact.core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX
from transcompact.formats import loads
from transcompact.ops.compaction.summarize import (
    CHECKPOINT_SYSTEM_PROMPT,
    NARRATIVE_SYSTEM_PROMPT,
    NARRATIVE_UPDATE_PROMPT,
    UPDATE_SYSTEM_PROMPT,
    chunked,
    coverage,
    problems,
    serialize,
)
from transcompact.providers.openai import NO_KEY

from .builders import run_cli, session
from .conftest import CORPUS, FIXTURES, supported_corpus_files
from .loopback import Loopback, reply, summary_for


def run(*args, input=None):
    return run_cli("summarize", *args, input=input)


def write(tmp_path, data: bytes, name="session.json"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_the_request_is_the_checkpoint_prompt_over_what_the_summarizer_sees(api, tmp_path):
    result = run("--all", "--model", "claude-opus-4-8", str(FIXTURES / "anthropic/every-block.json"))
    assert result.exit_code == 0, result.stderr
    (request,) = api.requests
    assert request.path == "/v1/messages"
    assert request.body["model"] == "claude-opus-4-8"
    assert request.body["system"] == CHECKPOINT_SYSTEM_PROMPT
    prompt = request.prompt
    assert prompt.startswith("**User:** Here is the design mock")
    assert "**User:** [image image/png]" in prompt and "[document 'spec.pdf' application/pdf]" in prompt
    assert '**Assistant → tool call** `read_file` {"path":"src/header.css"}' in prompt
    assert "**Tool result** `read_file`: .header { display: flex;" in prompt
    assert "flex row without wrapping" not in prompt  # thinking is left out
    assert result.stdout == summary_for(request).strip() + "\n"


def test_long_results_are_cut_to_head_and_tail(api, tmp_path):
    path = write(tmp_path, session(rounds=3, size=6000))
    assert run("--all", "--result-chars", "100", path).exit_code == 0
    prompt = api.requests[0].prompt
    assert "[… 5900 characters omitted …]" in prompt
    assert "line 0.0 of the output" in prompt and "line 0.299 of the" not in prompt


def pair_then_more() -> bytes:
    messages = [
        {"role": "user", "content": SUMMARY_PREFIX + "## Goal\nShip the parser.\n## Progress\n- [x] tokenizer"},
        {"role": "assistant", "content": SUMMARY_ACK},
    ] + json.loads(session(rounds=4, size=3000))["messages"]
    return json.dumps({"messages": messages}).encode()


def test_an_existing_summary_pair_is_updated_and_not_sent_again(api, tmp_path):
    result = run("--all", "--json", write(tmp_path, pair_then_more()))
    assert result.exit_code == 0, result.stderr
    (request,) = api.requests
    assert request.body["system"] == UPDATE_SYSTEM_PROMPT
    assert request.prompt.startswith("## Existing Summary\n\n## Goal\nShip the parser.")
    assert request.prompt.count("Ship the parser") == 1 and SUMMARY_ACK not in request.prompt
    report = json.loads(result.stdout)["files"][0]
    assert report["previous_summary_used"] is True and report["messages"] == 11


def test_a_claude_code_compact_summary_is_updated(api):
    log = CORPUS / "claude-code/spotter-session-8463c716-compacted-1593lines.jsonl"
    if not log.exists():
        pytest.skip("the shared corpus is not here")
    result = run("--json", str(log))
    assert result.exit_code == 0, result.stderr
    assert api.requests[0].body["system"] == UPDATE_SYSTEM_PROMPT
    prompt = api.requests[0].prompt
    assert prompt.startswith("## Existing Summary\n\nAnalysis:")  # Claude Code's summary, without its preamble
    assert "This session is being continued from a previous conversation" not in prompt
    assert json.loads(result.stdout)["files"][0]["previous_summary_used"] is True


def test_previous_summary_file_and_instructions(api, tmp_path):
    previous = tmp_path / "summary.md"
    previous.write_text("## Goal\nMigrate the billing service.\n")
    result = run("--all", "--previous-summary", str(previous), "--instructions", "the database schema",
                 str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == 0, result.stderr
    request = api.requests[0]
    assert request.body["system"] == UPDATE_SYSTEM_PROMPT + "\n\nAdditional focus for this summary: the database schema"
    assert "Migrate the billing service" in request.prompt


def test_a_history_too_long_for_one_call_goes_in_chunks(api, tmp_path):
    path = write(tmp_path, session(rounds=20, size=6000))
    result = run("--all", "--json", "--summary-input-tokens", "5000", path)
    assert result.exit_code == 0, result.stderr
    systems = [r.body["system"] for r in api.requests]
    assert len(systems) >= 3 and systems[0] == CHECKPOINT_SYSTEM_PROMPT and set(systems[1:]) == {UPDATE_SYSTEM_PROMPT}
    assert all(len(r.prompt) <= 5000 * 4 for r in api.requests)
    assert all(r.prompt.startswith("## Existing Summary\n\n## Goal\nSummarized by") for r in api.requests[1:])
    assert json.loads(result.stdout)["files"][0]["chunks"] == len(api.requests)


def test_prompt_is_too_long_halves_the_chunk(api, tmp_path):
    api.answer = Loopback.too_long_above(8000)
    result = run("--all", "--json", write(tmp_path, session(rounds=6, size=6000)))
    assert result.exit_code == 0, result.stderr
    refused = [r for r in api.requests if len(r.prompt) > 8000]
    accepted = [r for r in api.requests if len(r.prompt) <= 8000]
    assert refused and len(accepted) >= 2
    report = json.loads(result.stdout)["files"][0]
    assert report["chunks"] == len(accepted) and report["usage"]["requests"] == len(api.requests)


def test_a_server_error_is_retried(api, tmp_path):
    api.answer = api.failing(500, times=1)
    result = run("--all", str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == 0, result.stderr
    assert len(api.requests) == 2


@pytest.mark.parametrize("answer,retries,message", [
    (Loopback.error(529, "Overloaded"), "2", "the Anthropic API answered HTTP 529: Overloaded (after 2 retries)"),
    (Loopback.error(400, "messages: bad request"), "2", "the Anthropic API answered HTTP 400: messages: bad request"),
    (Loopback.slow(3), "0", "the Anthropic API did not answer within 0.5 s (after 0 retries)"),
    (Loopback.text(""), "2", "failed validation twice: too short (0 characters, at least 200)"),
    (Loopback.text("All good. " * 40), "2", "failed validation twice: 0 of the 3 key sections"),
])
def test_failures_end_with_one_line_and_exit_4(api, answer, retries, message):
    api.answer = answer
    result = run("--all", "--retries", retries, "--timeout", "0.5", str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == 4
    assert result.stderr.startswith("transcompact: error: ") and message in result.stderr
    assert result.stdout == ""
    expected = {"529": 3, "400": 1, "slow": 1, "validation": 2}
    key = "529" if "529" in message else "400" if "400" in message else "slow" if "within" in message else "validation"
    assert len(api.requests) == expected[key]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_summary_cut_at_the_output_limit_is_not_taken(api, monkeypatch, provider):
    """An answer that stopped at max_tokens (finish_reason length) may lack its last sections: it
    fails validation, is asked for again, and then ends as any failed summary does (found using
    summarize as a user: it was taken without a word)."""
    def cut(request):
        status, body = Loopback.ok(request)
        if request.is_openai:
            body["choices"][0]["finish_reason"] = "length"
        else:
            body["stop_reason"] = "max_tokens"
        return status, body

    api.answer = cut
    flags = ("--provider", "openai", "--base-url", f"{api.url}/v1") if provider == "openai" else ()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    result = run("--all", *flags, str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == 4 and len(api.requests) == 2
    assert "failed validation twice: cut off at the output limit (4,096 tokens)" in result.stderr


def test_a_summary_that_fails_validation_once_is_asked_for_again(api):
    first = iter([True])
    api.answer = lambda request: Loopback.text("short")(request) if next(first, False) else Loopback.ok(request)
    result = run("--all", "--json", str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == 0, result.stderr
    assert len(api.requests) == 2 and json.loads(result.stdout)["files"][0]["usage"]["requests"] == 2


def narrative_for(request) -> str:
    """A prose account that names the paths it was shown, as a narrative must."""
    paths = sorted(set(re.findall(r"(?:[\w.-]+/)+[\w.-]+\.[a-z]{1,4}\b", request.prompt)))
    return ("The user asked for the failing tests to be fixed. The assistant read the code and ran the tests; "
            f"along the way it looked at {', '.join(paths) or 'nothing on disk'}. What is left is to run the "
            "whole suite once more and report back to the user, who prefers short answers.")


def test_narrative_style_asks_for_prose_and_takes_it_without_sections(api, tmp_path):
    api.answer = lambda request: reply(request, narrative_for(request))
    path = write(tmp_path, session(rounds=40, size=3000))
    result = run("--all", "--style", "narrative", "--summary-input-tokens", "20000", path)
    assert result.exit_code == 0, result.stderr
    assert [r.system for r in api.requests] == [NARRATIVE_SYSTEM_PROMPT] + [NARRATIVE_UPDATE_PROMPT] * (len(api.requests) - 1)
    assert len(api.requests) > 1  # in chunks, each folded into the account
    assert result.stdout.startswith("The user asked for the failing tests")


def test_a_narrative_that_names_no_path_of_its_part_is_refused(api, tmp_path):
    api.answer = lambda request: reply(request, "A long and pleasant conversation took place. " * 10)
    result = CliRunner().invoke(cli, ["compact", "--force", "--style", "narrative", "--keep-recent-tokens", "500",
                                      str(FIXTURES / "anthropic/long-session.json")], prog_name="transcompact")
    assert result.exit_code == 0, result.stderr
    assert len(api.requests) == 2, result.stderr  # asked once more, then the emergency mode took over
    assert "names none of the" in result.stderr and "compacted (emergency)" in result.stderr


def test_narrative_validation():
    account = "We fixed src/app.py after the import error; next is the release. " * 4
    assert problems(account, "narrative", "**User:** look at src/app.py") == []
    assert problems(account, "narrative", "no paths here") == []
    assert problems(account, "narrative", "see lib/util.py") == ["names none of the 1 file paths of what it summarizes"]
    assert problems("", "narrative") == ["too short (0 characters, at least 200)"]


def test_no_key_is_a_provider_error(monkeypatch):
    result = run("--all", str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == 4 and "no Anthropic API key" in result.stderr


def test_nothing_old_to_summarize(api):
    result = run(str(FIXTURES / "anthropic/tool-loop.json"))
    assert result.exit_code == 0 and result.stdout == "" and "nothing old to summarize" in result.stderr
    assert api.requests == []


def test_the_openai_provider(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-loopback")
    result = run("--all", "--provider", "openai", "--base-url", api.url + "/v1", "--model", "qwen3",
                 str(FIXTURES / "claude-code/broken-session.jsonl"))
    assert result.exit_code == 0, result.stderr
    (request,) = api.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-openai-loopback"
    assert request.body["model"] == "qwen3"
    assert request.body["messages"][0] == {"role": "system", "content": CHECKPOINT_SYSTEM_PROMPT}
    assert result.stdout == summary_for(request).strip() + "\n"


def test_the_openai_provider_retries_and_fails_clearly(api):
    api.answer = api.failing(429, times=1)
    ok = run("--all", "--provider", "openai", "--base-url", api.url + "/v1", str(FIXTURES / "openai/tool-calls.json"))
    assert ok.exit_code == 0, ok.stderr
    assert len(api.requests) == 2
    # A local server needs no key: the SDK, which will not start without one, is given a placeholder.
    assert api.requests[0].headers["authorization"] == f"Bearer {NO_KEY}"
    api.answer = Loopback.error(500, "model crashed")
    failed = run("--all", "--provider", "openai", "--base-url", api.url + "/v1", "--retries", "1",
                 str(FIXTURES / "openai/tool-calls.json"))
    assert failed.exit_code == 4
    assert f"{api.url}/v1/chat/completions answered HTTP 500: model crashed (after 1 retry)" in failed.stderr
    unreachable = run("--all", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--retries", "0",
                      str(FIXTURES / "openai/tool-calls.json"))
    assert unreachable.exit_code == 4
    assert "cannot reach http://127.0.0.1:9/v1/chat/completions: " in unreachable.stderr
    assert "(after 0 retries)" in unreachable.stderr


def test_the_openai_provider_halves_on_context_length(api, tmp_path):
    api.answer = Loopback.too_long_above(8000)
    result = run("--all", "--provider", "openai", "--base-url", api.url + "/v1",
                 write(tmp_path, session(rounds=6, size=6000)))
    assert result.exit_code == 0, result.stderr
    assert any(len(r.prompt) > 8000 for r in api.requests)


def test_json_report(api, tmp_path):
    result = run("--all", "--json", str(FIXTURES / "anthropic/every-block.json"))
    report = json.loads(result.stdout)["files"][0]
    assert set(report) == {"file", "summary", "provider", "model", "chunks", "usage", "previous_summary_used", "coverage",
                           "cut", "messages", "warnings"}
    assert report["provider"] == "anthropic" and report["model"] == "claude-haiku-4-5" and report["cut"] is None
    assert report["coverage"]["paths"] == 1 and report["coverage"]["paths_named"] == 1  # src/header.css


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("path", supported_corpus_files())
def test_every_corpus_transcript(api, path, provider):
    result = run("--keep-recent-tokens", "500", "--summary-input-tokens", "20000", "--provider", provider,
                 "--base-url", api.url + ("/v1" if provider == "openai" else ""), str(path))
    assert result.exit_code == 0, result.stderr
    if api.requests:
        assert result.stdout.startswith("## Goal")
        assert all(len(r.prompt) <= 20000 * 4 for r in api.requests)


# --- the parts -----------------------------------------------------------------------------


def test_validation_follows_the_spec():
    good = "## Goal\nx\n## Progress\ny\n" + "z" * 200
    assert problems(good) == []
    assert problems("## goals\n## critical context\n" + "z" * 200) == []
    assert problems("## Goal\n" + "z" * 300) == ["1 of the 3 key sections (Goal, Progress, Critical Context), at least 2"]
    assert problems("## Goal\n## Progress") == ["too short (19 characters, at least 200)"]


def test_chunks_keep_order_and_cut_what_is_too_big():
    assert chunked(["a" * 40, "b" * 40, "c" * 40], 100) == [["a" * 40, "b" * 40], ["c" * 40]]
    assert chunked(["x" * 250], 100) == [["x" * 100], ["x" * 100], ["x" * 50]]
    assert "".join(p for c in chunked(["ab" * 333, "cd"], 97) for p in c) == "ab" * 333 + "cd"


def test_coverage_counts_paths_and_error_lines():
    transcript = loads(json.dumps({"messages": [
        {"role": "user", "content": "Fix src/app/main.py please"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "run", "input": {"cmd": "pytest tests/test_main.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                      "content": "tests/test_main.py::test_x FAILED\nTypeError: bad operand"}]},
    ]}).encode(), "c.json")
    found = coverage(transcript.messages, "Fixed src/app/main.py; TypeError: bad operand")
    assert found.paths == ("src/app/main.py", "tests/test_main.py")
    assert found.errors == ("tests/test_main.py::test_x FAILED", "TypeError: bad operand")
    assert (found.paths_named, found.errors_named, found.share) == (1, 1, 0.5)


def test_a_claude_code_log_too_large_for_one_call_is_chunked_over_its_summary(api):
    log = CORPUS / "claude-code/spotter-session-8463c716-compacted-1593lines.jsonl"
    if not log.exists():
        pytest.skip("the shared corpus is not here")
    result = run("--json", "--summary-input-tokens", "5000", str(log))
    assert result.exit_code == 0, result.stderr
    assert len(api.requests) > 3
    assert {r.body["system"] for r in api.requests} == {UPDATE_SYSTEM_PROMPT}  # the compact summary, then each chunk
    opening = api.requests[0].prompt[:200]  # the compact summary is the existing summary of the first chunk only
    assert all(opening not in r.prompt for r in api.requests[1:])


def test_progress_counts_the_chunks(api, monkeypatch):
    from transcompact.ops.compaction.summarize import SummaryOptions, summarize
    from transcompact.providers import provider, resolve

    seen = []
    transcript = loads(session(rounds=20, size=6000), "s.json")
    summarizer = provider(resolve("anthropic", key="sk-test-loopback", base_url=api.url, environ={}))
    try:
        result = summarize(transcript, summarizer, SummaryOptions(everything=True, input_tokens=5000),
                           progress=lambda k, n: seen.append((k, n)))
    finally:
        summarizer.close()
    assert [k for k, _ in seen] == list(range(1, result.chunks + 1))
    assert seen[-1] == (result.chunks, result.chunks)


# --- a proxy's page, an answer that is not the API's: one line, exit 4, or compact's fallback ---


def provider_flags(api, provider: str) -> list[str]:
    return ["--provider", provider, "--base-url", api.url + ("/v1" if provider == "openai" else "")]


NOT_THE_API = {
    "a proxy's 502 page": (Loopback.page(502), "answered HTTP 502: an HTML page titled '502 Bad Gateway' (after 0 retries)"),
    "a 200 that is no answer": (Loopback.raw(200, b'{"hello": 1}'), "did not answer with a"),
    "a 200 page": (Loopback.page(200, "<html><head><title>Sign in</title></head><body>\n\n</body></html>"),
                   "but with an HTML page titled 'Sign in'"),
}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("answer, said", list(NOT_THE_API.values()), ids=list(NOT_THE_API))
def test_summarize_says_what_is_not_the_apis_answer_in_one_line_and_exits_4(api, provider, answer, said):
    api.answer = answer
    result = run("--all", "--retries", "0", *provider_flags(api, provider), str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == 4, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("transcompact: error: ") and said in line and "<" not in line
    assert result.stdout == ""


def compact(*args):
    return CliRunner().invoke(cli, ["compact", "--force", "--retries", "0", "--keep-recent-tokens", "500", *args],
                              prog_name="transcompact")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("answer, said", list(NOT_THE_API.values()), ids=list(NOT_THE_API))
def test_compact_falls_back_in_one_line_per_file_or_exits_4(api, tmp_path, provider, answer, said):
    api.answer = answer
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_bytes((FIXTURES / "anthropic/long-session.json").read_bytes())
    result = compact(*provider_flags(api, provider), "--output-dir", str(tmp_path / "out"), str(tmp_path / "a.json"),
                     str(tmp_path / "b.json"))
    assert result.exit_code == 0, result.stderr
    fell_back = [line for line in result.stderr.splitlines() if "the summary failed, so the emergency mode was used: " in line]
    assert [line.split(":")[0] for line in fell_back] == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    assert all(said in line for line in fell_back)
    assert "<" not in result.stderr and len(result.stderr.splitlines()) == 5  # per file: the fallback, the result; the summary
    refused = compact(*provider_flags(api, provider), "--no-fallback", str(tmp_path / "a.json"))
    assert refused.exit_code == 4 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert line.startswith("transcompact: error: ") and said in line


def test_nothing_to_summarize_needs_no_key(transcompact):
    """The provider (and its key) is made only once there is something to summarize."""
    result = transcompact("summarize", str(FIXTURES / "anthropic/orphans.json"))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.startswith(f"{FIXTURES / 'anthropic/orphans.json'}: nothing old to summarize: ")
    assert result.stdout == ""


def test_what_the_summarizer_reads_of_citations_search_results_and_audio():
    """A reply with citations is one turn (it was a turn per text block, some a `- ` alone); a web
    search's results show their titles and URLs, not the encrypted content that filled their room;
    audio is mentioned as an image is (found reading what the stand-in was sent, as a user)."""
    from transcompact.core.model import ASSISTANT, USER, Message, Opaque, ServerToolResult, Text

    reply_with_citations = Message(ASSISTANT, (Text("It is "), Text("66°F", raw={"type": "text", "citations": [{}]}),
                                               Text(" and clear.\n- "), Text("Winds W.")))
    assert serialize(reply_with_citations, {}) == "**Assistant:** It is 66°F and clear.\n- Winds W."
    found = [{"type": "web_search_result", "title": f"Forecast {i}", "url": f"https://example.com/{i}",
              "encrypted_content": "E" * 3000} for i in range(5)]
    search = Message(USER, (ServerToolResult("web_search_tool_result", "srvtoolu_1",
                                             raw={"type": "web_search_tool_result", "content": found}),))
    shown = serialize(search, {})
    assert all(f"https://example.com/{i}" in shown for i in range(5)) and "EEE" not in shown
    audio = Message(USER, (Text("This is file 2d36ae:"), Opaque("input_audio", raw={"type": "input_audio"})))
    assert serialize(audio, {}) == "**User:** This is file 2d36ae:\n**User:** [input_audio]"
