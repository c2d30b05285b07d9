"""What the API really counted, read from the `usage` a transcript's responses recorded, and a
fit of `tokens ≈ overhead + ratio × content + frame × blocks` over it: the model every count of a
log with enough usage is made with (docs/counting.md).

A response's usage counts the prompt that produced it: every message before it, plus what the
log never shows (the system prompt, the tool schemas). So response i gives one sample: the
characters and blocks of messages 0..i-1 against `input_tokens + cache_creation_input_tokens +
cache_read_input_tokens` (Anthropic) or `prompt_tokens` (OpenAI). A compact boundary starts the
prompt afresh; a Claude Code transcript already begins at the last one, so the samples are the
responses after it.

Each block is sent in a frame (its type, a call id, the JSON around it) that costs about the same
whatever it holds: counted a character at a time, a log of short blocks (what a compaction keeps)
would cost less than it is sent at. The overhead (the system prompt and tools, which do not change
with the content) and the frame are fitted on characters, whatever the tokenizer, so that every
tokenizer adds the same ones; a tokenizer's ratio (tokens per unit of its own count) is then the
one through the newest response with those held. The fit goes through the newest response, so
that the model says of the prompt that response recorded what it recorded; an overhead below 0
(the content grew dearer per character as the log went on) is held at 0: a fixed part of a prompt
is never negative.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.model import Message

# A block's frame is fitted apart from its characters with FRAME_SAMPLES samples or more (a plane
# through the newest and two more) whose blocks do not grow in step with their characters (the
# square of their correlation at most IN_STEP); else the samples cannot tell the two apart, and the
# ratio counts the frames with the characters. (A rewrite restates the usage it keeps on the plane
# it counted with: a few kept responses must give it back.)
FRAME_SAMPLES = 3
IN_STEP = 0.99

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
    frame: float  # tokens a block costs beyond its content (its type, call id, the JSON around it), the same for every tokenizer
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


def recorded_prompts(messages: Sequence[Message]) -> list[int | None]:
    """`usage_tokens` of each message, read once for `recorded_usage` and `samples` alike."""
    return [usage_tokens(m) for m in messages]


def recorded_usage(messages: Sequence[Message], prompts: Sequence[int | None] | None = None) -> Recorded | None:
    """The last response's usage; `prompts`: `recorded_prompts(messages)`, when it is read already."""
    prompts = recorded_prompts(messages) if prompts is None else prompts
    found = [(i, tokens) for i, tokens in enumerate(prompts) if tokens]
    if not found:
        return None
    index, tokens = found[-1]
    return Recorded(tokens, output_tokens(messages[index]), index, len(found))


# A sample: (units of content before the response, its blocks, the figures before it (images,
# documents), the tokens it recorded).
Point = tuple[int, int, int, int]


def samples(prompts: Sequence[int | None], units: Sequence[int], blocks: Sequence[int], fixed: Sequence[int],
            head_units: int = 0, head_fixed: int = 0) -> list[Point]:
    """One `Point` for each response that recorded usage (`prompts`: `recorded_prompts`)."""
    out = []
    before_units, before_blocks, before_fixed = head_units, 0, head_fixed
    for tokens, u, b, f in zip(prompts, units, blocks, fixed):
        if tokens:
            out.append((before_units, before_blocks, before_fixed, tokens))
        before_units += u
        before_blocks += b
        before_fixed += f
    return out


def fit(points: Sequence[Point]) -> tuple[float, float, float] | None:
    """(ratio, frame, overhead) of tokens − figures ≈ overhead + ratio × chars + frame × blocks: the
    plane through the newest sample (the count is about now, and the newest prompt measures the
    system prompt and tools as they are now) whose ratio and frame are the least squares ones over
    the others, where the samples tell the frame apart (`FRAME_SAMPLES`) and the ratio, frame and
    overhead are positive; else the line (no frame: the ratio counts it with the characters), whose
    overhead, where it would fall below 0, is held at 0 (the line through the origin and the newest
    sample). None with fewer than 2 distinct sizes or a ratio that is not positive."""
    if len(points) < 2:
        return None
    last_chars, last_blocks, last_fixed, last_tokens = points[-1]
    last = last_tokens - last_fixed
    deltas = [(c - last_chars, b - last_blocks, t - f - last) for c, b, f, t in points]
    cc = sum(c * c for c, _, _ in deltas)
    if not cc:  # every sample the same size
        return None
    if len(points) >= FRAME_SAMPLES:
        bb, cb = sum(b * b for _, b, _ in deltas), sum(c * b for c, b, _ in deltas)
        ct, bt = sum(c * t for c, _, t in deltas), sum(b * t for _, b, t in deltas)
        determinant = cc * bb - cb * cb
        if determinant > 0:
            ratio, frame = (ct * bb - bt * cb) / determinant, (cc * bt - cb * ct) / determinant
            overhead = last - ratio * last_chars - frame * last_blocks
            told_apart = determinant > (1 - IN_STEP) * cc * bb or (
                len(points) > FRAME_SAMPLES and all(abs(t - ratio * c - frame * b) <= 1 for c, b, t in deltas))
            if told_apart and ratio > 0 and frame >= 0 and overhead >= 0:
                return ratio, frame, overhead
    ratio = sum(c * t for c, _, t in deltas) / cc
    overhead = last - ratio * last_chars
    if overhead < 0:
        overhead, ratio = 0.0, last / last_chars if last_chars else 0.0
    return (ratio, 0.0, overhead) if ratio > 0 else None


def ratio_with(points: Sequence[Point], overhead: float, frame: float) -> float | None:
    """The ratio of tokens − figures − overhead − frames = ratio × units through the newest sample
    (the overhead and the frame held)."""
    units, blocks, fixed, tokens = points[-1]
    return (tokens - fixed - overhead - frame * blocks) / units if units else None


def model(points: Sequence[Point], unit_points: Sequence[Point] | None) -> tuple[float, float, float, float | None] | None:
    """(ratio, overhead, frame, ratio on characters): the overhead and the frame fitted on
    characters; with another tokenizer's units, its ratio through the newest sample with those held
    (the ratio on characters then last; None where the units are characters)."""
    fitted = fit(points)
    if fitted is None:
        return None
    ratio, frame, overhead = fitted
    return _in_units(unit_points, ratio, overhead, frame)


def through(points: Sequence[Point], unit_points: Sequence[Point] | None,
            shape: Calibration) -> tuple[float, float, float, float | None] | None:
    """`model`'s (ratio, overhead, frame, ratio on characters) with the ratio and frame of `shape`
    (a fit on more responses: the log before a compaction) and the overhead through the newest
    sample; None where that overhead would fall below 0."""
    units, blocks, fixed, tokens = points[-1]
    overhead = tokens - fixed - shape.per_char * units - shape.frame * blocks
    return _in_units(unit_points, shape.per_char, overhead, shape.frame) if overhead >= 0 else None


def _in_units(unit_points: Sequence[Point] | None, per_char: float, overhead: float,
              frame: float) -> tuple[float, float, float, float | None] | None:
    """(ratio, overhead, frame, ratio on characters) of a model made on characters: with another
    tokenizer's units, its ratio through the newest of `unit_points` with the overhead and the
    frame held; None where that ratio is not positive."""
    if unit_points is None:
        return per_char, overhead, frame, None
    ratio = ratio_with(unit_points, overhead, frame)
    return (ratio, overhead, frame, per_char) if ratio is not None and ratio > 0 else None


def holdout_error(points: Sequence[Point], unit_points: Sequence[Point] | None = None) -> tuple[float | None, int]:
    """Fit on the earlier half, measure the median relative error on the later half."""
    from statistics import median

    half = len(points) // 2
    fitted = model(points[:half], unit_points[:half] if unit_points is not None else None)
    later = (unit_points if unit_points is not None else points)[half:]
    if fitted is None or not later:
        return None, 0
    ratio, overhead, frame, _ = fitted
    return median(abs(overhead + ratio * u + frame * b + f - t) / t for u, b, f, t in later), len(later)


def calibrate(prompts: Sequence[int | None], chars: Sequence[int], blocks: Sequence[int], fixed: Sequence[int],
              head_chars: int = 0, head_fixed: int = 0, units: Sequence[int] | None = None,
              head_units: int = 0, shape: Calibration | None = None) -> Calibration | None:
    """The fit over every response with usage (`prompts`: `recorded_prompts` of the messages), and
    its honest error; None when it cannot be fitted. `units`: each message's count by a tokenizer other than the chars estimator, whose ratio is fitted.
    `shape`: a fit whose ratio and frame are kept (`through`), its error with them."""
    points = samples(prompts, chars, blocks, fixed, head_chars, head_fixed)
    if not points:
        return None
    unit_points = samples(prompts, units, blocks, fixed, head_units, head_fixed) if units is not None else None
    fitted = model(points, unit_points) if shape is None else through(points, unit_points, shape)
    if fitted is None:
        return None
    error, measured = holdout_error(points, unit_points) if shape is None else (shape.error, shape.error_samples)
    ratio, overhead, frame, chars_ratio = fitted
    return Calibration(ratio, overhead, frame, len(points), error, measured, chars_ratio)
