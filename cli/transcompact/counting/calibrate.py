"""What the API really counted, read from the `usage` a transcript's responses recorded, and a
fit of `tokens ≈ overhead + ratio × content` over it: the model every count of a log with enough
usage is made with (docs/counting.md).

A response's usage counts the prompt that produced it: every message before it, plus what the
log never shows (the system prompt, the tool schemas). So response i gives one sample: the
characters of messages 0..i-1 against `input_tokens + cache_creation_input_tokens +
cache_read_input_tokens` (Anthropic) or `prompt_tokens` (OpenAI). A compact boundary starts the
prompt afresh; a Claude Code transcript already begins at the last one, so the samples are the
responses after it.

The overhead (the system prompt and tools, which do not change with the content) is fitted on
characters, whatever the tokenizer, so that every tokenizer adds the same one; a tokenizer's
ratio (tokens per unit of its own count) is then the one through the newest response with that
overhead held. The line goes through the newest response, so that the model says of the prompt
that response recorded what it recorded; an overhead below 0 (the content grew dearer per
character as the log went on) is held at 0: a fixed part of a prompt is never negative.
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
    ratio: float  # tokens per unit of the tokenizer's count (a character for the chars estimator)
    overhead: float  # tokens the transcript does not show (system prompt, tool schemas), the same for every tokenizer
    samples: int
    error: float | None  # median |estimate − real| / real on the later half, fitted on the earlier half
    error_samples: int  # how many responses that error was measured on
    chars_ratio: float | None = None  # with another tokenizer's units: the ratio fitted on characters (what a rewrite restates usage by)

    @property
    def per_char(self) -> float:
        """What a character costs: `chars_ratio`, or the ratio where the count is of characters."""
        return self.ratio if self.chars_ratio is None else self.chars_ratio


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
    """(ratio, overhead) of tokens − figures ≈ overhead + ratio × chars: the line through the newest
    sample (the count is about now, and the newest prompt measures the system prompt and tools as
    they are now) whose ratio is the least squares one over the others. An overhead that would fall
    below 0 is held at 0 (the line through the origin and the newest sample). None with fewer than
    2 distinct sizes or a ratio that is not positive."""
    if len(points) < 2:
        return None
    last_chars, last_fixed, last_tokens = points[-1]
    last = last_tokens - last_fixed
    squares = sum((c - last_chars) ** 2 for c, _, _ in points)
    if not squares:  # every sample the same size
        return None
    ratio = sum((c - last_chars) * (t - f - last) for c, f, t in points) / squares
    overhead = last - ratio * last_chars
    if overhead < 0:
        overhead, ratio = 0.0, last / last_chars if last_chars else 0.0
    return (ratio, overhead) if ratio > 0 else None


def ratio_with(points: Sequence[tuple[int, int, int]], overhead: float) -> float | None:
    """The ratio of tokens − figures − overhead = ratio × units through the newest sample (the overhead held)."""
    units, fixed, tokens = points[-1]
    return (tokens - fixed - overhead) / units if units else None


def model(points: Sequence[tuple[int, int, int]],
          unit_points: Sequence[tuple[int, int, int]] | None) -> tuple[float, float, float | None] | None:
    """(ratio, overhead, ratio on characters): the overhead fitted on characters; with another
    tokenizer's units, its ratio through the newest sample with that overhead held (the ratio on
    characters then third; None where the units are characters)."""
    fitted = fit(points)
    if fitted is None or unit_points is None:
        return None if fitted is None else (*fitted, None)
    ratio = ratio_with(unit_points, fitted[1])
    return (ratio, fitted[1], fitted[0]) if ratio is not None and ratio > 0 else None


def holdout_error(points: Sequence[tuple[int, int, int]],
                  unit_points: Sequence[tuple[int, int, int]] | None = None) -> tuple[float | None, int]:
    """Fit on the earlier half, measure the median relative error on the later half."""
    from statistics import median

    half = len(points) // 2
    fitted = model(points[:half], unit_points[:half] if unit_points is not None else None)
    later = (unit_points if unit_points is not None else points)[half:]
    if fitted is None or not later:
        return None, 0
    ratio, overhead, _ = fitted
    return median(abs(overhead + ratio * u + f - t) / t for u, f, t in later), len(later)


def calibrate(messages: Sequence[Message], chars: Sequence[int], fixed: Sequence[int],
              head_chars: int = 0, head_fixed: int = 0, units: Sequence[int] | None = None,
              head_units: int = 0) -> Calibration | None:
    """The fit over every response with usage, and its honest error; None when it cannot be fitted.
    `units`: each message's count by a tokenizer other than the chars estimator, whose ratio is fitted."""
    points = samples(messages, chars, fixed, head_chars, head_fixed)
    unit_points = samples(messages, units, fixed, head_units, head_fixed) if units is not None else None
    fitted = model(points, unit_points)
    if fitted is None:
        return None
    error, measured = holdout_error(points, unit_points)
    return Calibration(fitted[0], fitted[1], len(points), error, measured, fitted[2])
