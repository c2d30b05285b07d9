"""The providers: where their key, base URL and model come from (`resolve`), and how the SDKs'
retries and errors reach us, through the real anthropic and openai SDKs against a loopback server."""

from __future__ import annotations

import json
import re

import pytest

from transcompact.core import settings
from transcompact.core.errors import ProviderError, UsageError
from transcompact.providers import PromptTooLong, Resolved, provider, resolve
from transcompact.providers.openai import NO_KEY

from .builders import run_cli
from .conftest import FIXTURES
from .loopback import Loopback

# --- resolve: explicit value → the provider's variable → the default -----------------------

EVERYTHING_SET = {"ANTHROPIC_API_KEY": "sk-ant-env", "ANTHROPIC_AUTH_TOKEN": "token-env",
                  "ANTHROPIC_BASE_URL": "http://anthropic.env", "OPENAI_API_KEY": "sk-openai-env",
                  "OPENAI_BASE_URL": "http://openai.env/v1", "TRANSCOMPACT_MODEL": "model-env"}


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_an_explicit_value_beats_the_environment(name):
    resolved = resolve(name, key="sk-explicit", base_url="http://explicit/v1", model="explicit-model",
                       transcript_model="transcript-model", environ=EVERYTHING_SET)
    assert resolved == Resolved(name, "explicit-model", "http://explicit/v1", key="sk-explicit")


def test_the_providers_variables_beat_the_defaults():
    assert resolve("anthropic", environ=EVERYTHING_SET) == Resolved(
        "anthropic", settings.MODELS["anthropic"], "http://anthropic.env", key="sk-ant-env")
    assert resolve("openai", environ=EVERYTHING_SET) == Resolved(
        "openai", settings.MODELS["openai"], "http://openai.env/v1", key="sk-openai-env")


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_the_defaults_come_last(name):
    assert resolve(name, environ={}) == Resolved(name, settings.MODELS[name], settings.BASE_URLS[name])


def test_an_empty_variable_counts_as_unset():
    empty = {"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""}
    assert resolve("openai", environ=empty) == resolve("openai", environ={})


def test_anthropic_takes_a_bearer_token_when_there_is_no_key():
    token_only = {"ANTHROPIC_AUTH_TOKEN": "token-env"}
    assert (resolve("anthropic", environ=token_only).key, resolve("anthropic", environ=token_only).auth_token) == (
        None, "token-env")
    assert resolve("anthropic", key="sk-explicit", environ=token_only).auth_token is None  # the SDK takes one of the two
    assert resolve("openai", environ=token_only).auth_token is None


def test_the_model_is_explicit_then_the_transcripts_then_the_default():
    assert resolve("anthropic", model="claude-opus-4-5", transcript_model="claude-sonnet-4-5", environ={}).model == "claude-opus-4-5"
    assert resolve("anthropic", transcript_model="claude-sonnet-4-5", environ={}).model == "claude-sonnet-4-5"
    # TRANSCOMPACT_MODEL is click's to read (it fills --model), not the resolver's.
    assert resolve("anthropic", environ={"TRANSCOMPACT_MODEL": "model-env"}).model == settings.MODELS["anthropic"]


def test_an_unknown_provider_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown provider 'gemini'"):
        resolve("gemini", environ={})


# --- the library is handed values and reads no environment ---------------------------------


def test_an_explicit_key_works_with_an_environment_that_holds_none(api, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # where the SDK would go if it looked
    summarizer = provider(resolve("anthropic", key="sk-explicit", base_url=api.url, environ={}))
    try:
        assert summarizer.complete("system", "prompt", 100).text.startswith("## Goal")
    finally:
        summarizer.close()
    headers = api.requests[0].headers
    assert "sk-explicit" in headers.get("x-api-key", "") + headers.get("authorization", "")  # where depends on the SDK's version


def test_a_key_in_the_environment_is_not_used_unless_resolved(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    with pytest.raises(ProviderError, match="no Anthropic API key"):
        provider(resolve("anthropic", environ={}))


def test_the_openai_sdk_does_not_look_up_its_variables(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    summarizer = provider(resolve("openai", base_url=api.url + "/v1", environ={}))
    try:
        summarizer.complete("system", "prompt", 100)
    finally:
        summarizer.close()
    (request,) = api.requests
    assert request.path == "/v1/chat/completions" and request.headers["authorization"] == f"Bearer {NO_KEY}"


def run(*args):
    return run_cli("summarize", "--all", *args, str(FIXTURES / "openai/tool-calls.json"))


def test_the_command_line_resolves_from_its_environment(api, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", api.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-env")
    monkeypatch.setenv("TRANSCOMPACT_MODEL", "qwen3")
    result = run("--provider", "openai")
    assert result.exit_code == 0, result.stderr
    (request,) = api.requests
    assert request.headers["authorization"] == "Bearer sk-openai-env" and request.body["model"] == "qwen3"
    assert run("--provider", "openai", "--model", "llama3").exit_code == 0
    assert api.requests[-1].body["model"] == "llama3"  # the flag beats its variable


@pytest.mark.parametrize("model, limit", [("gpt-5-mini", "max_completion_tokens"), (settings.MODELS["openai"], "max_completion_tokens"),
                                          ("o4-mini", "max_completion_tokens"), ("llama3", "max_tokens")])
def test_each_model_family_gets_the_limit_it_takes(api, monkeypatch, model, limit):
    """GPT-5 and the o-series refuse `max_tokens` (the loopback refuses it as OpenAI does); a local
    server may know only `max_tokens`."""
    monkeypatch.setenv("OPENAI_BASE_URL", api.url + "/v1")
    result = run("--provider", "openai", "--model", model)
    assert result.exit_code == 0, result.stderr
    body = api.requests[-1].body
    assert limit in body and ({"max_tokens", "max_completion_tokens"} - {limit}).isdisjoint(body)


def test_the_loopback_refuses_max_tokens_as_openai_does(api):
    import openai

    client = openai.OpenAI(api_key="sk-test", base_url=api.url + "/v1", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="max_completion_tokens"):
        client.chat.completions.create(model="gpt-5-mini", max_tokens=10, messages=[{"role": "user", "content": "hi"}])


# --- what the SDKs retry, and what reaches us ----------------------------------------------


def build(name: str, api: Loopback, **options):
    return provider(resolve(name, key="sk-test", base_url=api.url + ("/v1" if name == "openai" else ""), environ={}),
                    **options)


def ask(name: str, api: Loopback, **options):
    summarizer = build(name, api, **options)
    try:
        return summarizer.complete("system", "prompt", 100)
    finally:
        summarizer.close()


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize("failure", ["connection", 429, 500, 503, 529])
def test_the_sdk_retries(api, name, failure):
    api.answer = api.hanging_up(times=2) if failure == "connection" else api.failing(failure, times=2)
    assert ask(name, api, retries=2).text.startswith("## Goal")
    assert len(api.requests) == 3


@pytest.mark.parametrize("name,service", [("anthropic", "the Anthropic API"), ("openai", "/v1/chat/completions")])
def test_what_is_still_failing_after_the_retries_is_a_provider_error(api, name, service):
    api.answer = Loopback.error(503, "down for maintenance")
    with pytest.raises(ProviderError, match=f"{service} answered HTTP 503: down for maintenance \\(after 1 retry\\)"):
        ask(name, api, retries=1)
    assert len(api.requests) == 2


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_connection_that_keeps_failing_names_the_address(api, name):
    api.answer = api.hanging_up(times=3)
    with pytest.raises(ProviderError, match=f"cannot reach .*{api.url}.*\\(after 1 retry\\)"):
        ask(name, api, retries=1)
    assert len(api.requests) == 2


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_timeout_hints_at_the_setting(api, name):
    api.answer = Loopback.slow(2)
    with pytest.raises(ProviderError, match="did not answer within 0.3 s \\(after 0 retries\\)") as raised:
        ask(name, api, retries=0, timeout=0.3)
    assert raised.value.hint == "raise timeout"  # the library's name; the CLI says --timeout
    assert raised.value.for_command_line()[1] == "raise --timeout"


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_prompt_too_long_is_not_retried(api, name):
    api.answer = Loopback.too_long_above(3)
    with pytest.raises(PromptTooLong, match="says the prompt is too long: prompt is too long"):
        ask(name, api, retries=2)
    assert len(api.requests) == 1


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_client_error_is_not_retried(api, name):
    api.answer = Loopback.error(400, "messages: bad request")
    with pytest.raises(ProviderError, match="answered HTTP 400: messages: bad request$"):
        ask(name, api, retries=2)
    assert len(api.requests) == 1


# --- an answer that is not the API's: one line, never a body --------------------------


SERVICE = {"anthropic": "the Anthropic API", "openai": "/v1/chat/completions"}
EXPECTED = {"anthropic": ("a message", "content"), "openai": ("a chat completion", "choices")}


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_proxys_html_page_is_named_by_its_title_in_one_line(api, name):
    api.answer = Loopback.page(502)
    with pytest.raises(ProviderError) as raised:
        ask(name, api, retries=1)
    message = str(raised.value)
    assert re.fullmatch(f".*{SERVICE[name]} answered HTTP 502: an HTML page titled '502 Bad Gateway' \\(after 1 retry\\)",
                        message)
    assert len(api.requests) == 2  # a 502 is retried, page or not


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize("status, body, content_type, said", [
    # What a proxy says as plain text is a body too: the status's name stands for it.
    (502, b"upstream connect error or disconnect/reset before headers.\nreset reason: connection failure", "text/plain",
     "Bad Gateway"),
    (503, b"<h1>Service Unavailable</h1>\n<p>Back soon.</p>\n", "text/html", "Service Unavailable"),
    (503, b"<html><head></head><body>\n<p>Back soon.</p>\n</body></html>", "text/html", "an HTML page"),
    (520, b"", "text/plain", "no message"),  # a status of a CDN's own, without a name
    # The service's own words, in one line however many it used.
    (500, json.dumps({"error": {"message": "the model\ncrashed\n\n   badly", "type": "api_error"}}).encode(),
     "application/json", "the model crashed badly"),
    (404, json.dumps({"error": "model 'qwen3' not found, try pulling it first"}).encode(), "application/json",
     "model 'qwen3' not found, try pulling it first"),  # Ollama's
    (400, json.dumps({"object": "error", "message": "bad\nrequest", "code": 400}).encode(), "application/json",
     "bad request"),  # vLLM's
    (500, json.dumps({"error": {"message": "x" * 5000}}).encode(), "application/json", "x" * 299 + "…"),
])
def test_a_status_error_says_the_services_words_or_the_status_in_one_line(api, name, status, body, content_type, said):
    api.answer = Loopback.raw(status, body, content_type)
    with pytest.raises(ProviderError) as raised:
        ask(name, api, retries=0)
    assert re.fullmatch(f".*{SERVICE[name]} answered HTTP {status}: {re.escape(said)}( \\(after 0 retries\\))?", str(raised.value))


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize("answer, said", [
    (Loopback.page(200, "<!doctype html>\n<html><head>\n<title>\n  Sign in &amp; continue\n</title></head>\n"
                        "<body><form>...</form></body></html>\n"), "an HTML page titled 'Sign in & continue'"),
    (Loopback.raw(200, b'{"hello": 1}'), "a JSON object without '{field}' (its fields: hello)"),
    (Loopback.raw(200, json.dumps({"content": "text", "choices": "text"}).encode()), "a JSON object whose '{field}' has another shape"),
    (Loopback.raw(200, b"[1, 2]"), "JSON that is not an object"),
    (Loopback.raw(200, b"null"), "JSON that is not an object"),
    (Loopback.raw(200, b"{not json"), "a body that is not JSON"),
    (Loopback.raw(200, b""), "a body that is not JSON"),
    (Loopback.raw(200, b"all fine\nreally", "text/plain"), "a body that is not a JSON object"),
])
def test_an_answer_that_is_not_the_apis_is_a_provider_error_in_one_line(api, name, answer, said):
    """The SDKs hand back whatever came with a 200 (a page as text, JSON of another shape as a
    model with none of its fields): that is the service's failure, not ours (exit 4, and compact's
    fallback), said in one line."""
    api.answer = answer
    thing, field = EXPECTED[name]
    with pytest.raises(ProviderError) as raised:
        ask(name, api, retries=2)
    assert re.fullmatch(f".*{api.url}.* did not answer with {thing} but with {re.escape(said.format(field=field))}",
                        str(raised.value))
    assert len(api.requests) == 1  # a 200 is not retried


def test_count_tokens_that_gets_no_count_is_a_provider_error(api):
    from transcompact.formats import loads
    from transcompact.providers.anthropic import count_tokens

    transcript = loads((FIXTURES / "anthropic/tool-loop.json").read_bytes(), "tool-loop.json")
    resolved = resolve("anthropic", key="sk-test", base_url=api.url, environ={})
    api.answer = Loopback.raw(200, b'{"hello": 1}')
    with pytest.raises(ProviderError, match="^count_tokens failed: .* did not answer with a count but with a JSON object "
                                            "without 'input_tokens' \\(its fields: hello\\)$"):
        count_tokens(transcript, resolved)
    api.answer = Loopback.page(502)
    with pytest.raises(ProviderError, match="^count_tokens failed: HTTP 502: an HTML page titled '502 Bad Gateway'$"):
        count_tokens(transcript, resolved)
