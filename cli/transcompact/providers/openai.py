"""Any OpenAI-compatible Chat Completions endpoint (`POST {base_url}/chat/completions`): OpenAI, or
a local model server (vLLM, llama.cpp, Ollama), through the official `openai` SDK."""

from __future__ import annotations

import json
import re

from ..core import settings
from ..core.errors import ProviderError
from . import Completion, Resolved, described, endpoint, sdk_error, tokens

# The SDK refuses to start without a key, and a local server needs none (and ignores this one).
NO_KEY = "no-key"


# OpenAI's reasoning models (GPT-5 on, the o-series) refuse `max_tokens` (`unsupported_parameter`):
# they take `max_completion_tokens`, which a local server may not know, so the others keep `max_tokens`.
_COMPLETION_TOKENS = re.compile(r"^(?:openai/)?(?:gpt-[5-9]|o\d)")


def params(model: str, system: str, prompt: str, max_tokens: int) -> dict:
    """The Chat Completions request of one summary (the batch API sends the same one)."""
    limit = "max_completion_tokens" if _COMPLETION_TOKENS.match(model) else "max_tokens"
    return {"model": model, limit: max_tokens,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]}


class OpenAIProvider:
    """Summaries through the Chat Completions API; the SDK retries connection errors, timeouts,
    408, 409, 429 and 5xx with backoff."""

    name = "openai"

    def __init__(self, resolved: Resolved, *, timeout: float = settings.TIMEOUT, retries: int = settings.RETRIES):
        import openai

        self.model = resolved.model
        self.timeout = timeout
        self.retries = retries
        self.url = endpoint(resolved.base_url, "/chat/completions")
        # The base URL is always passed, so that the SDK does not look up OPENAI_BASE_URL itself.
        self.api = openai.OpenAI(api_key=resolved.key or NO_KEY, base_url=resolved.base_url, timeout=timeout,
                                 max_retries=retries)

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion:
        import openai

        try:
            response = self.api.chat.completions.create(**params(self.model, system, prompt, max_tokens))
        except openai.APIError as error:
            raise sdk_error(openai, error, service=self.url, address=self.url, timeout=self.timeout,
                            retries=self.retries) from None
        except json.JSONDecodeError:  # said to be JSON, and not
            raise ProviderError(f"{self.url} did not answer with a chat completion but with a body that is not JSON") from None
        # The SDK does not check what came: a page (as text), or JSON of another shape (with what it has).
        try:  # a server that is not quite compatible may leave out what OpenAI always sends
            text = response.choices[0].message.content
            cut = getattr(response.choices[0], "finish_reason", None) == "length"
        except (AttributeError, IndexError, KeyError, TypeError):
            raise ProviderError(f"{self.url} did not answer with a chat completion but with "
                                f"{described(response, 'choices')}") from None
        if text is not None and not isinstance(text, str):
            raise ProviderError(f"{self.url} answered with a chat completion whose content is not text")
        usage = getattr(response, "usage", None)
        return Completion(text or "", tokens(usage, "prompt_tokens"), tokens(usage, "completion_tokens"), cut=cut)

    def close(self) -> None:
        self.api.close()
