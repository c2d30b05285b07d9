"""The model services behind the commands that need one, behind one small protocol.

A provider turns (system prompt, user prompt) into text. Each is an official SDK, which retries
what is worth retrying (connection errors, timeouts, 408, 409, 429, 5xx) with backoff; what still
fails is raised as `ProviderError`, or `PromptTooLong` when the service says the prompt does not
fit, so that the caller can send less. Each provider imports its SDK only when it is built.

A provider is built from plain values (`Resolved`); `resolve` is where they come from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from ..core import settings
from ..core.errors import ProviderError, UsageError, option

PROVIDERS = ("anthropic", "openai")
KEY_VARIABLES = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
TOKEN_VARIABLE = "ANTHROPIC_AUTH_TOKEN"  # a bearer token instead of a key, as gateways in front of Anthropic take
BASE_URL_VARIABLES = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}


class PromptTooLong(ProviderError):
    """The service refused the prompt as too long for the model."""


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Resolved:
    """Who to ask and how, as values: what a provider and `count_tokens` are built with."""

    provider: str
    model: str
    base_url: str
    key: str | None = None
    auth_token: str | None = None  # Anthropic only, sent instead of a key


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
    return Resolved(provider=name, model=model or transcript_model or settings.MODELS[name],
                    base_url=base_url or environ.get(BASE_URL_VARIABLES[name]) or settings.BASE_URLS[name],
                    key=key, auth_token=token)


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


def error_message(error) -> str:
    """The service's own words from an SDK's status error (Anthropic nests them once more than OpenAI)."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(error.message)


def sdk_error(sdk, error: Exception, *, service: str, address: str, timeout: float, retries: int) -> ProviderError:
    """An error of the `anthropic` or `openai` SDK (`sdk`; both have the same error classes) as ours,
    after the SDK's own retries. `service` names the service in a sentence, `address` where it was sought."""
    if isinstance(error, sdk.APIStatusError):
        message = error_message(error)
        if error.status_code in (400, 413) and is_too_long(message):
            return PromptTooLong(f"{service} says the prompt is too long: {message}")
        return ProviderError(f"{service} answered HTTP {error.status_code}: {message}"
                             + (f" (after {retries} retries)" if retried(error.status_code) else ""))
    if isinstance(error, sdk.APITimeoutError):
        return ProviderError(f"{service} did not answer within {timeout:g} s (after {retries} retries)", hint=f"raise {option('timeout')}")
    if isinstance(error, sdk.APIConnectionError):
        # The SDK says only "Connection error."; the cause says which (refused, no such host, ...).
        return ProviderError(f"cannot reach {address}: {error.__cause__ or error} (after {retries} retries)")
    return ProviderError(f"{service}: {error}")
