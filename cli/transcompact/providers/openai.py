"""Any OpenAI-compatible Chat Completions endpoint (`POST {base}/chat/completions`): OpenAI, or a
local model server. Spoken with httpx2, the HTTP client the anthropic SDK already brings."""

from __future__ import annotations

import os
import random
import time

from .. import settings
from ..errors import ProviderError
from . import RETRY_STATUSES, Completion, PromptTooLong, is_too_long

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIProvider:
    name = "openai"

    def __init__(self, model: str, *, base_url: str | None = None, timeout: float = settings.TIMEOUT,
                 retries: int = settings.RETRIES):
        import httpx2

        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/") + "/chat/completions"
        headers = {"content-type": "application/json"}
        if os.environ.get("OPENAI_API_KEY"):  # a local server needs none
            headers["authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
        self.http = httpx2.Client(timeout=timeout, headers=headers)

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion:
        import httpx2

        body = {"model": self.model, "max_tokens": max_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]}
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self.http.post(self.url, json=body)
            except httpx2.TimeoutException:
                if last:
                    raise ProviderError(f"{self.url} did not answer within {self.timeout:g} s (after {self.retries} retries)",
                                        hint="raise --timeout") from None
                _wait(attempt, None)
                continue
            except httpx2.TransportError as error:
                raise ProviderError(f"cannot reach {self.url}: {error}") from None
            if response.status_code in RETRY_STATUSES and not last:
                _wait(attempt, response.headers)
                continue
            if response.status_code >= 400:
                message = _message(response)
                if response.status_code in (400, 413) and is_too_long(message):
                    raise PromptTooLong(f"{self.url} says the prompt is too long: {message}")
                raise ProviderError(f"{self.url} answered HTTP {response.status_code}: {message}"
                                    + (f" (after {self.retries} retries)" if response.status_code in RETRY_STATUSES else ""))
            return _completion(response, self.url)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.http.close()


def _wait(attempt: int, headers) -> None:
    """Exponential backoff with jitter (0.5 s, 1 s, 2 s … up to 8 s), or what the server asks for."""
    asked = None
    if headers is not None:
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                asked = float(headers[name]) * scale
                break
            except (KeyError, ValueError):
                continue
    delay = asked if asked is not None and 0 <= asked <= 60 else min(8.0, 0.5 * 2**attempt) * (0.75 + random.random() / 4)
    time.sleep(delay)


def _message(response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or error)
    return str(error or body)[:300]


def _completion(response, url: str) -> Completion:
    try:
        body = response.json()
        message = body["choices"][0]["message"]
        usage = body.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError):
        raise ProviderError(f"{url} answered with something that is not a chat completion: {response.text[:200]}") from None
    return Completion(message.get("content") or "", usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0)
