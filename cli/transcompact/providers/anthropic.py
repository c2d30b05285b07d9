"""The Anthropic Messages API through the official SDK, given its key and base URL as values (see `resolve`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from ..core import settings
from ..core.errors import ProviderError, UsageError, option
from ..core.model import Text, Transcript
from . import Completion, Resolved, described, error_message, resolve, sdk_error, tokens

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
        inner = raw.get("message")
        model = (inner if isinstance(inner, dict) else raw).get("model")
        if isinstance(model, str) and not model.startswith("<"):  # "<synthetic>" lines
            return model
    return None


def client(resolved: Resolved, timeout: float = settings.TIMEOUT, retries: int = settings.RETRIES):
    """The SDK's client; it retries connection errors, timeouts, 408, 409, 429 and 5xx (529 included)
    with backoff. Every value is passed, so that the SDK looks up none in the environment."""
    if not (resolved.key or resolved.auth_token):
        raise ProviderError("no Anthropic API key", hint="set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a proxy)")
    import anthropic

    return anthropic.Anthropic(api_key=resolved.key, auth_token=resolved.auth_token, base_url=resolved.base_url,
                               timeout=timeout, max_retries=retries)


def params(model: str, system: str, prompt: str, max_tokens: int) -> dict:
    """The Messages API request of one summary (the batch API sends the same one)."""
    return {"model": model, "max_tokens": max_tokens, "system": system, "messages": [{"role": "user", "content": prompt}]}


class AnthropicProvider:
    """Summaries through the Messages API (`POST /v1/messages`)."""

    name = "anthropic"

    def __init__(self, resolved: Resolved, *, timeout: float = settings.TIMEOUT, retries: int = settings.RETRIES):
        self.model = resolved.model
        self.timeout = timeout
        self.retries = retries
        self.api = client(resolved, timeout, retries)

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion:
        import anthropic

        address = f"the Anthropic API at {self.api.base_url}"
        try:
            response = self.api.messages.create(**params(self.model, system, prompt, max_tokens))
        except anthropic.APIError as error:
            raise sdk_error(anthropic, error, service="the Anthropic API", address=address,
                            timeout=self.timeout, retries=self.retries) from None
        except json.JSONDecodeError:  # said to be JSON, and not
            raise ProviderError(f"{address} did not answer with a message but with a body that is not JSON") from None
        # The SDK does not check what came: a page (as text), or JSON of another shape (with what it has).
        content = getattr(response, "content", None)
        if not isinstance(content, list):
            raise ProviderError(f"{address} did not answer with a message but with {described(response, 'content')}")
        text = "".join(block.text for block in content
                       if getattr(block, "type", None) == "text" and isinstance(getattr(block, "text", None), str))
        usage = getattr(response, "usage", None)
        return Completion(text, tokens(usage, "input_tokens"), tokens(usage, "output_tokens"),
                          cut=getattr(response, "stop_reason", None) == "max_tokens")

    def close(self) -> None:
        self.api.close()


CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"  # the header the API's context editing needs

def _call(api, **request) -> int:
    import anthropic

    try:
        if "context_management" in request:  # context editing is a beta: its endpoint and its header
            counted = api.beta.messages.count_tokens(**request, betas=[CONTEXT_MANAGEMENT_BETA])
        else:
            counted = api.messages.count_tokens(**request)
    except anthropic.APIStatusError as error:
        raise ProviderError(f"count_tokens failed: HTTP {error.status_code}: {error_message(error)}") from None
    except anthropic.APIConnectionError as error:
        raise ProviderError(f"count_tokens failed: cannot reach {api.base_url}: {error}") from None
    except json.JSONDecodeError:
        raise ProviderError(f"count_tokens failed: {api.base_url} did not answer with a count but with a body "
                            "that is not JSON") from None
    found = getattr(counted, "input_tokens", None)
    if not isinstance(found, int) or isinstance(found, bool):
        raise ProviderError(f"count_tokens failed: {api.base_url} did not answer with a count but with "
                            f"{described(counted, 'input_tokens')}")
    return found


def count_tokens(transcript: Transcript, api: Resolved | None, model: str | None = None,
                 context_management: dict | None = None) -> ExactCount:
    """The input tokens of the transcript as the Messages API counts them (`/v1/messages/count_tokens`);
    with `context_management`, what is left once the server has made those edits (context_editing.py).

    A log with tool calls but no tool definitions (a Claude Code log) is sent with a stub
    definition per tool name, as the API requires; what the stubs cost is measured with a
    second pair of calls and taken off.

    `api` gives the key and base URL (`resolve("anthropic")`; None: no key); the model is `model`,
    else the one the transcript names, else `api`'s.
    """
    from ..dialects.anthropic import write_block, write_content

    if transcript.dialect != "anthropic":
        raise UsageError(f"{option('tokenizer', 'anthropic')} counts Anthropic-dialect transcripts; this one is "
                         f"{transcript.dialect}", hint=f"use {option('tokenizer', 'o200k')} for OpenAI transcripts")
    resolved = replace(api or resolve("anthropic", environ={}), model=model or transcript_model(transcript)
                       or (api.model if api else settings.MODELS["anthropic"]))
    model = resolved.model
    if not transcript.messages:
        return ExactCount(0, model, ("no messages: nothing was sent",))
    request: dict = {
        "model": model,
        "messages": [{"role": m.role, "content": write_content(m.blocks, False)} for m in transcript.messages],
    }
    if context_management is not None:
        request["context_management"] = context_management
        if any(edit["type"] == "clear_thinking_20251015" for edit in context_management["edits"]):
            request["thinking"] = {"type": "enabled", "budget_tokens": 1024}  # the edit is refused without thinking on
    if transcript.system:
        request["system"] = [{"type": "text", "text": b.text} if isinstance(b, Text) else write_block(b)
                             for b in transcript.system]
    with client(resolved) as api:
        return _count(api, transcript, request, model)


# What a set of stub definitions costs, per API and model: measured once a run (compact counts its
# input and its output, whose tools are among the input's), so a file costs at most four requests.
_STUB_COSTS: dict[tuple[str, str], tuple[frozenset[str], int]] = {}


def _count(api, transcript: Transcript, request: dict, model: str) -> ExactCount:
    if transcript.tools:
        return ExactCount(_call(api, tools=list(transcript.tools), **request), model)
    names = frozenset(call.name for m in transcript.messages for call in m.tool_calls)
    if not names:
        return ExactCount(_call(api, **request), model)
    key = (str(api.base_url), model)
    known, stub_cost = _STUB_COSTS.get(key, (frozenset(), 0))
    if not names <= known:  # stubs of every tool seen so far: a later transcript's are among them
        known = names | known
        stubs = _stubs(known)
        stub_cost = _call(api, model=model, messages=_PROBE, tools=stubs) - _call(api, model=model, messages=_PROBE)
        _STUB_COSTS[key] = (known, stub_cost)
    with_stubs = _call(api, tools=_stubs(known), **request)
    return ExactCount(with_stubs - stub_cost, model,
                      (f"sent with stub definitions of {len(known)} tools; their {stub_cost} tokens are taken off",))


def _stubs(names: frozenset[str]) -> list[dict]:
    return [{"name": name, "input_schema": {"type": "object"}} for name in sorted(names)]
