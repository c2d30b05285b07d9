"""What the API really counted, read from the `usage` a transcript's responses recorded, and a
fit of `tokens ≈ overhead + ratio × chars` over it.

A response's usage counts the prompt that produced it: every message before it, plus what the
log never shows (the system prompt, the tool schemas). So response i gives one sample: the
characters of messages 0..i-1 against `input_tokens + cache_creation_input_tokens +
cache_read_input_tokens` (Anthropic) or `prompt_tokens` (OpenAI). A compact boundary starts the
prompt afresh; a Claude Code transcript already begins at the last one, so the samples are the
responses after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.model import Message

_ANTHROPIC_INPUT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


@dataclass(frozen=True)
class Recorded:
    """The real context size at the last response that recorded usage."""

    tokens: int  # the prompt that produced it
    output: int  # the response itself
    message: int  # index of that response
    responses: int  # how many responses recorded usage

    @property
    def context(self) -> int:
        """Everything up to and including that response: its prompt and its own output."""
        return self.tokens + self.output


@dataclass(frozen=True)
class Calibration:
    ratio: float  # tokens per character
    overhead: float  # tokens the transcript does not show (system prompt, tool schemas)
    samples: int
    error: float | None  # median |estimate − real| / real on the later half, fitted on the earlier half
    error_samples: int  # how many responses that error was measured on


def _usage(message: Message) -> dict | None:
    raw = message.record
    if not isinstance(raw, dict):
        return None  # no record to find it in (an unread message of a request body has none)
    usage = raw.get("usage")
    if not isinstance(usage, dict) and isinstance(raw.get("message"), dict):
        usage = raw["message"].get("usage")  # a Claude Code log line
    tokens = raw.get("tokens")
    if not isinstance(usage, dict) and isinstance(tokens, dict) and isinstance(tokens.get("input"), int):
        # A Gemini CLI record: `input` (promptTokenCount) is the whole prompt, cached tokens included.
        usage = {"prompt_tokens": tokens["input"], "completion_tokens": tokens.get("output")}
    if isinstance(usage, dict) and "cacheRead" in usage:
        # A pi assistant message: `input` + `cacheRead` + `cacheWrite` is the prompt, `output` the response.
        usage = {"input_tokens": usage.get("input"), "cache_read_input_tokens": usage.get("cacheRead"),
                 "cache_creation_input_tokens": usage.get("cacheWrite"), "output_tokens": usage.get("output")}
    return usage if isinstance(usage, dict) else None


def usage_tokens(message: Message) -> int | None:
    """The prompt size a response recorded, or None when it recorded none (or zero)."""
    usage = _usage(message)
    if usage is None:
        return None
    if isinstance(usage.get("prompt_tokens"), int):
        return usage["prompt_tokens"] or None
    total = sum(usage[key] for key in _ANTHROPIC_INPUT if isinstance(usage.get(key), int))
    return total or None


def output_tokens(message: Message) -> int:
    """The size of the response itself (`output_tokens`, OpenAI `completion_tokens`), 0 when not recorded.

    A Claude Code response split over several lines is read from its first line, whose count
    may be partial (the stream had not ended when it was written).
    """
    usage = _usage(message) or {}
    value = usage.get("output_tokens", usage.get("completion_tokens"))
    return value if isinstance(value, int) else 0


def recorded_usage(messages: Sequence[Message]) -> Recorded | None:
    found = [(i, tokens) for i, m in enumerate(messages) if (tokens := usage_tokens(m))]
    if not found:
        return None
    index, tokens = found[-1]
    return Recorded(tokens, output_tokens(messages[index]), index, len(found))


def samples(messages: Sequence[Message], chars: Sequence[int], fixed: Sequence[int],
            head_chars: int = 0, head_fixed: int = 0) -> list[tuple[int, int, int]]:
    """(chars before the response, figures before it (images, documents), tokens it recorded)."""
    out = []
    before_chars, before_fixed = head_chars, head_fixed
    for message, c, f in zip(messages, chars, fixed):
        tokens = usage_tokens(message)
        if tokens:
            out.append((before_chars, before_fixed, tokens))
        before_chars += c
        before_fixed += f
    return out


def fit(points: Sequence[tuple[int, int, int]]) -> tuple[float, float] | None:
    """Least squares (ratio, overhead) of tokens − figures ≈ overhead + ratio × chars; None with
    fewer than 2 distinct sizes or a ratio that is not positive."""
    from statistics import StatisticsError, linear_regression  # with --calibrate only: not at start-up

    if len(points) < 2:
        return None
    try:
        ratio, overhead = linear_regression([c for c, _, _ in points], [t - f for _, f, t in points])
    except StatisticsError:  # every sample the same size
        return None
    return (ratio, overhead) if ratio > 0 else None


def holdout_error(points: Sequence[tuple[int, int, int]]) -> tuple[float | None, int]:
    """Fit on the earlier half, measure the median relative error on the later half."""
    from statistics import median

    half = len(points) // 2
    earlier, later = points[:half], points[half:]
    fitted = fit(earlier)
    if fitted is None or not later:
        return None, 0
    ratio, overhead = fitted
    return median(abs(overhead + ratio * c + f - t) / t for c, f, t in later), len(later)


def calibrate(messages: Sequence[Message], chars: Sequence[int], fixed: Sequence[int],
              head_chars: int = 0, head_fixed: int = 0) -> Calibration | None:
    """The fit over every response with usage, and its honest error; None when it cannot be fitted."""
    points = samples(messages, chars, fixed, head_chars, head_fixed)
    fitted = fit(points)
    if fitted is None:
        return None
    error, measured = holdout_error(points)
    return Calibration(fitted[0], fitted[1], len(points), error, measured)
