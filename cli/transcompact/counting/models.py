"""The models' context windows and maximum outputs, and the thresholds taken of their input budget."""

from __future__ import annotations

import re

from ..core import settings
from ..core.errors import UsageError, option

# Context window and maximum output per model, as the providers' model pages gave them on
# 2026-11-22 (each entry names where it was read; a third-party page only where the provider's
# own was not to be found). A dated snapshot (claude-sonnet-4-5-20250929, gpt-4.1-2025-04-14)
# finds its family; no other prefix does, since a variant's limits can differ from its base
# model's (gpt-5-chat-latest is not gpt-5). Anthropic first, then OpenAI, each in name order.
MODELS: dict[str, tuple[int, int]] = {
    "claude-fable-5": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/fable-5/overview
    "claude-fable-5-1": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/fable-5-1/overview
    "claude-fable-5-2": (1_000_000, 128_000),  # https://vercel.com/ai-gateway/models/claude-fable-5.2
    "claude-haiku-4-5": (200_000, 64_000),  # https://platform.claude.com/docs/en/models/overview
    "claude-haiku-5-5": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/haiku-5-5/overview
    "claude-mythos-5": (1_000_000, 128_000),  # shares Fable 5's: https://platform.claude.com/docs/en/models/fable-5/overview
    "claude-mythos-5-1": (1_000_000, 128_000),  # https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-mythos-5-1.html
    "claude-mythos-5-2": (1_000_000, 128_000),  # https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-mythos-5-2.html
    "claude-mythos-preview": (1_000_000, 128_000),  # https://docs.litellm.ai/docs/providers/bedrock_mantle
    "claude-opus-4": (200_000, 32_000),  # https://github.com/labring/fastgpt-plugin/pull/242
    "claude-opus-4-1": (200_000, 32_000),  # https://github.com/labring/fastgpt-plugin/pull/242
    "claude-opus-4-5": (200_000, 64_000),  # https://platform.claude.com/docs/en/models/opus-4-5/overview
    "claude-opus-4-6": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/opus-4-6/overview
    "claude-opus-4-7": (1_000_000, 128_000),  # https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-opus-4-7.html
    "claude-opus-4-8": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/opus-4-8/overview
    "claude-opus-5": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/opus-5/overview
    "claude-opus-5-5": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/opus-5-5/overview
    "claude-sonnet-4": (200_000, 64_000),  # https://github.com/labring/fastgpt-plugin/pull/242
    "claude-sonnet-4-5": (200_000, 64_000),  # https://platform.claude.com/docs/en/models/sonnet-4-5/overview
    "claude-sonnet-4-6": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/sonnet-4-6/overview
    "claude-sonnet-5": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/sonnet-5/overview
    "claude-sonnet-5-5": (1_000_000, 128_000),  # https://platform.claude.com/docs/en/models/sonnet-5-5/overview
    "chatgpt-4o-latest": (128_000, 16_384),  # https://rageagainstthepixel.github.io/OpenAI-DotNet/api/OpenAI.Models.Model.html
    "codex-mini-latest": (200_000, 100_000),  # https://rageagainstthepixel.github.io/OpenAI-DotNet/api/OpenAI.Models.Model.html
    "gpt-4-turbo": (128_000, 4_096),  # https://wavespeed.ai/zh-CN/llm/openai/gpt-4-turbo
    "gpt-4.1": (1_047_576, 32_768),  # https://vercel.com/ai-gateway/models/gpt-4.1-fast
    "gpt-4.1-mini": (1_047_576, 32_768),  # https://vercel.com/ai-gateway/models/gpt-4.1-mini-fast
    "gpt-4.1-nano": (1_047_576, 32_768),  # https://vercel.com/ai-gateway/models/gpt-4.1-nano-fast
    "gpt-4o": (128_000, 16_384),  # https://github.com/MicrosoftDocs/azure-ai-docs/pull/544/files
    "gpt-4o-audio-preview": (128_000, 16_384),  # https://developers.openai.com/api/docs/models/gpt-4o-audio-preview
    "gpt-4o-mini": (128_000, 16_384),  # https://vercel.com/ai-gateway/models/gpt-4o-mini-fast
    "gpt-4o-mini-audio-preview": (128_000, 16_384),  # https://developers.openai.com/api/docs/models/gpt-4o-mini-audio-preview
    "gpt-4o-mini-search-preview": (128_000, 16_384),  # https://wavespeed.ai/tr/llm/openai/gpt-4o-mini-search-preview
    # the window from https://openrouter.ai/openai/gpt-4o-search-preview/api, the output from
    # https://developer.puter.com/ai/openai/gpt-4o-search-preview
    "gpt-4o-search-preview": (128_000, 16_384),
    "gpt-5": (400_000, 128_000),  # https://vercel.com/ai-gateway/models/gpt-5-fast
    "gpt-5-mini": (400_000, 128_000),  # https://vercel.com/ai-gateway/models/gpt-5-mini-fast
    "gpt-5-nano": (400_000, 128_000),  # https://vercel.com/ai-gateway/models/gpt-5-nano
    "gpt-5.1": (400_000, 128_000),  # https://github.com/continuedev/openai-continue-hub/pull/2
    "gpt-5.2": (400_000, 128_000),  # https://docs.oxen.ai/inference-api/reference/models/gpt-5-2-2025-12-11
    "gpt-5.2-chat-latest": (128_000, 16_384),  # https://docs.oxen.ai/inference-api/reference/models/gpt-5-2-chat-latest
    "gpt-5.3-chat-latest": (128_000, 16_384),  # https://developers.openai.com/api/docs/models/gpt-5.3-chat-latest
    "gpt-5.4": (1_050_000, 128_000),  # https://docs.oxen.ai/inference-api/reference/models/gpt-5-4-2026-03-05
    "gpt-5.4-mini": (400_000, 128_000),  # https://docs.oxen.ai/inference-api/reference/models/gpt-5-4-mini
    "gpt-5.4-nano": (400_000, 128_000),  # https://wavespeed.ai/zh-CN/llm/openai/gpt-5.4-nano
    "gpt-5.5": (1_050_000, 128_000),  # https://docs.oxen.ai/inference-api/reference/models/gpt-5-5-2026-04-23
    "gpt-5.6-luna": (1_050_000, 128_000),  # https://runware.ai/docs/models/openai-gpt-5-6-luna
    "gpt-5.6-sol": (1_050_000, 128_000),  # https://docs.oxen.ai/inference-api/reference/models/gpt-5-6-sol
    "gpt-5.6-terra": (1_050_000, 128_000),  # https://developers.openai.com/api/docs/models/gpt-5.6-terra
    "gpt-6-astra": (1_050_000, 128_000),  # https://vercel.com/ai-gateway/models/gpt-6-astra
    "gpt-6-luna": (1_050_000, 128_000),  # https://docs.oxen.ai/inference-api/reference/models/gpt-6-luna
    "gpt-6-sol": (1_050_000, 128_000),  # https://docs.oxen.ai/inference-api/reference/models/gpt-6-sol
    "gpt-6.1-sol": (1_050_000, 128_000),  # https://vercel.com/ai-gateway/models/gpt-6.1-sol
    "gpt-6.1-terra": (1_050_000, 128_000),  # https://documentation.s3ns.fr/gemini-enterprise-agent-platform/models/partner-models/openai/gpt-6-1-terra
    "gpt-6.2-astra": (1_050_000, 128_000),  # https://vercel.com/ai-gateway/models/gpt-6.2-astra
    "gpt-6.2-sol": (1_050_000, 128_000),  # https://vercel.com/ai-gateway/models/gpt-6.2-sol
    "o1": (200_000, 100_000),  # https://vercel.com/ai-gateway/models/o1
    "o3": (200_000, 100_000),  # https://github.com/RooCodeInc/Roo-Code/pull/2691 (from platform.openai.com/docs/models/o3)
    "o3-mini": (200_000, 100_000),  # https://pub.dev/documentation/agentic/latest/chat_connector_model/ChatModel/openaiO3Mini-constant.html
    "o4-mini": (200_000, 100_000),  # https://github.com/RooCodeInc/Roo-Code/pull/2691 (from platform.openai.com/docs/models/o4-mini)
}


SNAPSHOT_DATE = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2})$")  # Anthropic's -20250929, OpenAI's -2025-04-14


def of_budget(value: float, budget: int) -> int:
    """A number of tokens given as itself, or as a fraction of the input budget (a value <= 1)."""
    return int(value * budget) if value <= 1 else int(value)


def threshold_tokens(threshold: float | None, budget: int) -> int:
    """The compaction threshold in tokens: as given (of_budget), or, when none was given, the
    default's share of the default budget taken of this one, so that a model with a larger
    window does not compact at the default window's figure unless asked."""
    if threshold is None:
        return settings.THRESHOLD * budget // (settings.WINDOW - settings.MAX_OUTPUT)
    return of_budget(threshold, budget)


def model_family(name: str) -> str:
    """The name under which MODELS holds a model: its own, or for a dated snapshot its family's."""
    return name if name in MODELS else SNAPSHOT_DATE.sub("", name)


def model_limits(name: str) -> tuple[int, int]:
    """(window, max output) of a model in MODELS, or of the family a dated snapshot belongs to."""
    family = model_family(name)
    if family not in MODELS:
        raise UsageError(
            f"unknown model {name!r}: not in the table of docs/counting.md#models",
            hint=f"give {option('window')} (and {option('max_output')}) for a model not in the table",
        )
    return MODELS[family]
