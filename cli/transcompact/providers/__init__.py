"""The model services behind the commands that need one, behind one small protocol.

A provider turns (system prompt, user prompt) into text. It retries what is worth retrying
(429, 500, 529, timeouts) and raises `ProviderError` for the rest, or `PromptTooLong` when the
service says the prompt does not fit, so that the caller can send less. Each provider imports
its client only when it is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .. import settings
from ..errors import ProviderError, UsageError

PROVIDERS = ("anthropic", "openai")
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})


class PromptTooLong(ProviderError):
    """The service refused the prompt as too long for the model."""


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class Provider(Protocol):
    name: str
    model: str

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion: ...

    def close(self) -> None: ...


def is_too_long(message: str) -> bool:
    """What the services say when a prompt does not fit (Anthropic, OpenAI, vLLM, llama.cpp)."""
    text = message.lower()
    return any(phrase in text for phrase in (
        "prompt is too long", "context_length_exceeded", "maximum context length", "context length",
        "too many tokens", "exceeds the context"))


def provider(name: str, model: str | None = None, *, base_url: str | None = None,
             timeout: float = settings.TIMEOUT, retries: int = settings.RETRIES) -> Provider:
    if name == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider(model or settings.MODELS[name], base_url=base_url, timeout=timeout, retries=retries)
    if name == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider(model or settings.MODELS[name], base_url=base_url, timeout=timeout, retries=retries)
    raise UsageError(f"unknown provider {name!r} (choose from {', '.join(PROVIDERS)})")
