"""The Anthropic Messages API through the official SDK (`ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .. import settings
from ..errors import ProviderError, UsageError
from ..model import Text, Transcript
from . import RETRY_STATUSES, Completion, PromptTooLong, is_too_long

MODEL_ENV = "TRANSCOMPACT_MODEL"
_PROBE = [{"role": "user", "content": "."}]


@dataclass(frozen=True)
class ExactCount:
    tokens: int
    model: str
    notes: tuple[str, ...] = ()


def transcript_model(transcript: Transcript) -> str | None:
    """The model a transcript names: the request's `model`, else the last response's (Claude Code)."""
    if isinstance(transcript.request.get("model"), str):
        return transcript.request["model"]
    for message in reversed(transcript.messages):
        raw = message.raw if isinstance(message.raw, dict) else {}
        inner = raw.get("message") if isinstance(raw.get("message"), dict) else raw
        model = inner.get("model")
        if isinstance(model, str) and not model.startswith("<"):  # "<synthetic>" lines
            return model
    return None


def client(timeout: float = settings.TIMEOUT, retries: int = settings.RETRIES, base_url: str | None = None):
    """The SDK's client; it retries 408, 409, 429, 5xx (529 included) and timeouts with backoff."""
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        raise ProviderError("no Anthropic API key", hint="set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a proxy)")
    import anthropic

    return anthropic.Anthropic(timeout=timeout, max_retries=retries, base_url=base_url)


class AnthropicProvider:
    """Summaries through the Messages API (`POST /v1/messages`)."""

    name = "anthropic"

    def __init__(self, model: str, *, base_url: str | None = None, timeout: float = settings.TIMEOUT,
                 retries: int = settings.RETRIES):
        self.model = model
        self.timeout = timeout
        self.retries = retries
        self.api = client(timeout, retries, base_url)

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion:
        import anthropic

        try:
            response = self.api.messages.create(model=self.model, max_tokens=max_tokens, system=system,
                                                messages=[{"role": "user", "content": prompt}])
        except anthropic.APIStatusError as error:
            message = _message(error)
            if error.status_code in (400, 413) and is_too_long(message):
                raise PromptTooLong(f"the Anthropic API says the prompt is too long: {message}") from None
            raise ProviderError(f"the Anthropic API answered HTTP {error.status_code}: {message}"
                                + (f" (after {self.retries} retries)" if error.status_code in RETRY_STATUSES else "")) from None
        except anthropic.APITimeoutError:
            raise ProviderError(f"the Anthropic API did not answer within {self.timeout:g} s "
                                f"(after {self.retries} retries)", hint="raise --timeout") from None
        except anthropic.APIConnectionError as error:
            raise ProviderError(f"cannot reach the Anthropic API at {self.api.base_url}: {error}") from None
        text = "".join(block.text for block in response.content if getattr(block, "type", None) == "text")
        usage = response.usage
        return Completion(text, usage.input_tokens or 0, usage.output_tokens or 0)

    def close(self) -> None:
        self.api.close()


def _message(error) -> str:
    body = error.body if isinstance(error.body, dict) else {}
    inner = body.get("error") if isinstance(body.get("error"), dict) else body
    return str(inner.get("message") or error.message)


def _call(api, **request) -> int:
    import anthropic

    try:
        return api.messages.count_tokens(**request).input_tokens
    except anthropic.APIStatusError as error:
        raise ProviderError(f"count_tokens failed: HTTP {error.status_code}: {_message(error)}") from None
    except anthropic.APIConnectionError as error:
        raise ProviderError(f"count_tokens failed: cannot reach {api.base_url}: {error}") from None


def count_tokens(transcript: Transcript, model: str | None = None) -> ExactCount:
    """The input tokens of the transcript as the Messages API counts them (`/v1/messages/count_tokens`).

    A log with tool calls but no tool definitions (a Claude Code log) is sent with a stub
    definition per tool name, as the API requires; what the stubs cost is measured with a
    second pair of calls and taken off.
    """
    from ..dialects.anthropic import write_block, write_content

    if transcript.dialect != "anthropic":
        raise UsageError(f"--tokenizer anthropic counts Anthropic-dialect transcripts; this one is {transcript.dialect}",
                         hint="use --tokenizer o200k for OpenAI transcripts")
    model = model or transcript_model(transcript) or os.environ.get(MODEL_ENV) or settings.MODELS["anthropic"]
    if not transcript.messages:
        return ExactCount(0, model, ("no messages: nothing was sent",))
    request: dict = {
        "model": model,
        "messages": [{"role": m.role, "content": write_content(m.blocks, False)} for m in transcript.messages],
    }
    if transcript.system:
        request["system"] = [{"type": "text", "text": b.text} if isinstance(b, Text) else write_block(b)
                             for b in transcript.system]
    with client() as api:
        return _count(api, transcript, request, model)


def _count(api, transcript: Transcript, request: dict, model: str) -> ExactCount:
    if transcript.tools:
        return ExactCount(_call(api, tools=list(transcript.tools), **request), model)
    names = sorted({call.name for m in transcript.messages for call in m.tool_calls})
    if not names:
        return ExactCount(_call(api, **request), model)
    stubs = [{"name": name, "input_schema": {"type": "object"}} for name in names]
    with_stubs = _call(api, tools=stubs, **request)
    stub_cost = _call(api, model=model, messages=_PROBE, tools=stubs) - _call(api, model=model, messages=_PROBE)
    return ExactCount(with_stubs - stub_cost, model,
                      (f"sent with stub definitions of {len(names)} tools; their {stub_cost} tokens are taken off",))
