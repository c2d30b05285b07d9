"""The model services behind the commands that need one, behind one small protocol: `anthropic`
and `openai` (any OpenAI-compatible endpoint), each built from what this module resolves.

A provider turns (system prompt, user prompt) into text. Each is an official SDK, which retries
what is worth retrying (connection errors, timeouts, 408, 409, 429, 5xx) with backoff; what still
fails is raised as `ProviderError`, or `PromptTooLong` when the service says the prompt does not
fit, so that the caller can send less. An answer that is not the API's (an HTML page, JSON of
another shape, with any status) is a `ProviderError` too. Each error is one line, however much
the service said: its own message, or the title of the page that came instead, never a body.
Each provider imports its SDK only when it is built.

A provider is built from plain values (`Resolved`); `resolve` is where they come from.
"""

from __future__ import annotations

import html
import http
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from ..core import settings
from ..core.errors import PromptTooLong, ProviderError, UsageError, keep_secret, option

PROVIDERS = ("anthropic", "openai")
KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
TOKEN_VARIABLE = "ANTHROPIC_AUTH_TOKEN"  # a bearer token instead of a key, as gateways in front of Anthropic take
BASE_URL_VARIABLES = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cut: bool = False  # it stopped at the output limit (`max_tokens`, `length`): its end is missing


@dataclass(frozen=True)
class Resolved:
    """Who to ask and how, as values: what a provider and `count_tokens` are built with."""

    provider: str
    model: str
    base_url: str
    key: str | None = None
    auth_token: str | None = None  # Anthropic only, sent instead of a key


@runtime_checkable
class Provider(Protocol):
    name: str
    model: str

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion: ...

    def close(self) -> None: ...


def resolve(name: str, *, key: str | None = None, base_url: str | None = None, model: str | None = None,
            transcript_model: str | None = None, environ: Mapping[str, str] = os.environ) -> Resolved:
    """The key, base URL and model for provider `name`: for each, the first that is set of

    - key: `key` → the provider's variable (ANTHROPIC_API_KEY, else ANTHROPIC_AUTH_TOKEN as a bearer
      token; OPENAI_API_KEY) → none (a local OpenAI-compatible server needs none; the Anthropic
      provider refuses to start without one);
    - base URL: `base_url` → ANTHROPIC_BASE_URL / OPENAI_BASE_URL → the provider's public API
      (`settings.BASE_URLS`);
    - model: `model` → `transcript_model`, the model the transcript itself names (`count_tokens`
      gives it: a transcript is counted for the model it was written for) → `settings.MODELS[name]`.

    A variable set to the empty string counts as unset. The command line calls this with
    `os.environ` and its flags; `--model` arrives here already filled from TRANSCOMPACT_MODEL by
    click, the one place that variable is read. Providers are handed the result and never read the
    environment themselves.
    """
    if name not in PROVIDERS:
        raise UsageError(f"unknown provider {name!r} (choose from {', '.join(PROVIDERS)})")
    key = key or environ.get(KEY_VARIABLES[name]) or None
    token = None
    if name == "anthropic" and not key:
        token = environ.get(TOKEN_VARIABLE) or None
    base_url = base_url or environ.get(BASE_URL_VARIABLES[name]) or settings.BASE_URLS[name]
    keep_secret(key, token, urlsplit(base_url).password)  # (a service's answer may quote them)
    return Resolved(provider=name, model=model or transcript_model or settings.MODELS[name], base_url=base_url,
                    key=key, auth_token=token)


def endpoint(base_url: str, path: str) -> str:
    """Where a request to `path` under `base_url` goes, as a message names it: the path before the
    base URL's query, if it has one (`http://host/v1?k=…` → `http://host/v1/chat/completions?k=…`)."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))


def provider(resolved: Resolved, *, timeout: float = settings.TIMEOUT, retries: int = settings.RETRIES) -> Provider:
    """The provider `resolved` names, each answer awaited `timeout` seconds and retried `retries` times."""
    if resolved.provider == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider(resolved, timeout=timeout, retries=retries)
    if resolved.provider == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider(resolved, timeout=timeout, retries=retries)
    raise UsageError(f"unknown provider {resolved.provider!r} (choose from {', '.join(PROVIDERS)})")


def is_too_long(message: str) -> bool:
    """What the services say when a prompt does not fit (Anthropic, OpenAI, vLLM, llama.cpp)."""
    text = message.lower()
    return any(phrase in text for phrase in (
        "prompt is too long", "context_length_exceeded", "maximum context length", "context length",
        "too many tokens", "exceeds the context"))


def retried(status: int) -> bool:
    """Whether the SDKs retry an answer with this status (both retry 408, 409, 429 and 5xx)."""
    return status in (408, 409, 429) or status >= 500


def one_line(text: str, limit: int = 300) -> str:
    """`text` as one line of at most `limit` characters: what a service said goes into an error's
    one line, and a service may say it over many."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def page_title(text: str) -> str | None:
    """The <title> of an HTML page (what a proxy answers with: a 502 from nginx, a login page), as one
    line; None when `text` has none."""
    found = re.search(r"<title[^>]*>(.*?)</title\s*>", text[:65536], re.IGNORECASE | re.DOTALL)
    if found is None:
        return None
    return one_line(html.unescape(found[1]), 120) or None


def _is_html(text: str) -> bool:
    start = text.lstrip()[:512].lower()
    return start.startswith("<") and ("<html" in start or "<!doctype html" in start or "<head" in start
                                      or "<body" in start or "<title" in start)


def _json_message(body: object) -> str | None:
    """The message of a JSON error: `{"error": {"message"}}` (OpenAI; Anthropic's inside
    `{"type": "error"}`), `{"error": "..."}` (Ollama), `{"message"}` (vLLM), `{"detail": "..."}`."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    for said in (inner.get("message") if isinstance(inner, dict) else inner, body.get("message"), body.get("detail")):
        if isinstance(said, str) and said.strip():
            return said
    return None


def error_message(error) -> str:
    """What an SDK's status error says, in one line, never its body: the service's own words (the
    message of its JSON error), else the title of the HTML page that came instead (a proxy's), else
    the status's name."""
    body = error.body
    if not isinstance(body, dict):  # the OpenAI SDK keeps only what is under "error", a string for Ollama
        try:
            body = json.loads(error.response.text)
        except Exception:  # not JSON, or not read
            body = error.body
    said = _json_message(body)
    if said is not None:
        return one_line(said)
    body = error.body if isinstance(error.body, str) else ""
    if _is_html(body):
        return described(body)
    try:
        return http.HTTPStatus(error.status_code).phrase
    except ValueError:  # a status of its own (Cloudflare's 520-530)
        return one_line(getattr(error.response, "reason_phrase", "") or "") or "no message"


def described(answer: object, wanted: str | None = None) -> str:
    """An answer that is not what the API answers, in a few words, never its content: an HTML page
    by its title, JSON by its kind (an object by the fields it has, when `wanted`, the field that
    should have been there, is missing)."""
    if isinstance(answer, bytes):
        answer = answer.decode("utf-8", "replace")
    if isinstance(answer, str):
        if _is_html(answer):
            title = page_title(answer)
            return f"an HTML page titled {title!r}" if title else "an HTML page"
        return "an empty body" if not answer.strip() else "a body that is not a JSON object"
    if answer is None or isinstance(answer, (list, int, float, bool)):
        return "JSON that is not an object"
    fields = sorted(set(getattr(answer, "model_fields_set", ()) or ()) | set(getattr(answer, "model_extra", None) or {}))
    if not fields:
        return "an empty JSON object"
    shown = one_line(", ".join(fields[:8]) + (", …" if len(fields) > 8 else ""), 120)
    if wanted is None:
        return f"a JSON object (its fields: {shown})"
    if wanted in fields:
        return f"a JSON object whose {wanted!r} has another shape"
    return f"a JSON object without {wanted!r} (its fields: {shown})"


def tokens(usage: object, name: str) -> int:
    """A count in a response's usage; 0 when the service left it out (a compatible server may)."""
    found = getattr(usage, name, None)
    return found if isinstance(found, int) and not isinstance(found, bool) and found >= 0 else 0


def _retries(count: int) -> str:
    return "1 retry" if count == 1 else f"{count:,} retries"


def sdk_error(sdk, error: Exception, *, service: str, address: str, timeout: float, retries: int) -> ProviderError:
    """An error of the `anthropic` or `openai` SDK (`sdk`; both have the same error classes) as ours,
    after the SDK's own retries. `service` names the service in a sentence, `address` where it was sought."""
    if isinstance(error, sdk.APIStatusError):
        message = error_message(error)
        if error.status_code in (400, 413) and is_too_long(message):
            return PromptTooLong(f"{service} says the prompt is too long: {message}")
        return ProviderError(f"{service} answered HTTP {error.status_code}: {message}"
                             + (f" (after {_retries(retries)})" if retried(error.status_code) else ""))
    if isinstance(error, sdk.APITimeoutError):
        return ProviderError(f"{service} did not answer within {timeout:g} s (after {_retries(retries)})", hint=f"raise {option('timeout')}")
    if isinstance(error, sdk.APIConnectionError):
        # The SDK says only "Connection error."; the cause says which (refused, no such host, ...).
        return ProviderError(f"cannot reach {address}: {one_line(str(error.__cause__ or error))} (after {_retries(retries)})")
    return ProviderError(f"{service}: {one_line(str(error))}")
