"""The recorded usage, the fit of `tokens ≈ overhead + ratio × chars` over it, and how close it comes."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import pytest

from transcompact.core.model import Message, Text
from transcompact.counting.calibrate import (
    calibrate,
    fit,
    holdout_error,
    model,
    output_tokens,
    ratio_with,
    recorded_usage,
    samples,
    usage_tokens,
)
from transcompact.counting.counter import Options
from transcompact.formats import loads
from transcompact.ops.estimate import Estimate, estimate

from .conftest import CORPUS, ROOT


def response(usage: dict | None, *, claude_code: bool = False) -> Message:
    body = {"role": "assistant", "content": "ok", **({"usage": usage} if usage is not None else {})}
    raw = {"type": "assistant", "message": body} if claude_code else body
    return Message("assistant", (Text("ok"),), raw=raw)


def test_usage_is_read_from_a_message_or_a_claude_code_line():
    anthropic = {"input_tokens": 10, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 3000, "output_tokens": 7}
    assert usage_tokens(response(anthropic)) == 3210
    assert usage_tokens(response(anthropic, claude_code=True)) == 3210
    assert usage_tokens(response({"prompt_tokens": 55, "completion_tokens": 5})) == 55
    assert usage_tokens(response({"input_tokens": 0})) is None and usage_tokens(response(None)) is None


def test_the_last_recorded_usage_is_the_context_with_its_output():
    messages = [Message("user", (Text("hi"),)), response({"input_tokens": 100, "output_tokens": 9}),
                Message("user", (Text("more"),)), response({"input_tokens": 150, "output_tokens": 20}),
                Message("user", (Text("and"),))]
    recorded = recorded_usage(messages)
    assert (recorded.tokens, recorded.output, recorded.context, recorded.message, recorded.responses) == (150, 20, 170, 3, 2)
    assert recorded_usage(messages[:1]) is None


def test_each_response_samples_the_characters_before_it():
    messages = [Message("user", (Text("x"),)), response({"input_tokens": 100}), Message("user", (Text("y"),)),
                response({"input_tokens": 180})]
    assert samples(messages, [40, 10, 300, 5], [0, 0, 50, 0], head_chars=7) == [(47, 0, 100), (357, 50, 180)]


def test_the_fit_recovers_a_line_and_refuses_what_is_not_one():
    points = [(chars, 0, int(5000 + 0.3 * chars)) for chars in (1000, 4000, 9000, 20000)]
    ratio, overhead = fit(points)
    assert ratio == pytest.approx(0.3, abs=1e-3) and overhead == pytest.approx(5000, abs=2)
    assert fit(points[:1]) is None
    assert fit([(100, 0, 50), (100, 0, 60)]) is None  # no spread in size
    assert fit([(100, 0, 500), (200, 0, 400)]) is None  # tokens falling as text grows


def test_the_line_goes_through_the_newest_response_and_its_overhead_is_never_negative():
    points = [(1000, 0, 5400), (4000, 0, 6100), (9000, 0, 7800), (20000, 0, 11_000)]
    ratio, overhead = fit(points)
    assert overhead + ratio * 20000 == pytest.approx(11_000)  # the count is what the newest response recorded
    dearer = [(1000, 0, 100), (4000, 0, 1100), (9000, 0, 3300)]  # more tokens per character as the log grows
    ratio, overhead = fit(dearer)
    assert overhead == 0 and ratio == pytest.approx(3300 / 9000)


def test_another_tokenizer_fits_its_ratio_with_the_overhead_held():
    chars = [(1000, 0, 5300), (4000, 0, 6200), (9000, 0, 7700)]
    units = [(250, 0, 5300), (1100, 0, 6200), (2300, 0, 7700)]  # the same prompts in a tokenizer's count
    (per_char, by_chars, none), (ratio, by_units, on_chars) = model(chars, None), model(chars, units)
    assert by_units == by_chars and none is None and on_chars == per_char
    # Through the newest response, as the ratio on characters is: the model says what it recorded.
    assert ratio == pytest.approx(ratio_with(units, by_chars)) and by_units + ratio * 2300 == pytest.approx(7700)


def test_the_error_is_measured_on_responses_the_fit_did_not_see():
    points = [(chars, 0, 1000 + chars // 4) for chars in range(1000, 9000, 1000)]
    error, measured = holdout_error(points)
    assert error == pytest.approx(0, abs=0.01) and measured == 4
    bent = points[:4] + [(c, 0, t * 2) for c, _, t in points[4:]]
    assert holdout_error(bent)[0] == pytest.approx(0.5, abs=0.01)


def test_calibrate_needs_two_responses():
    messages = [Message("user", (Text("x"),)), response({"input_tokens": 100})]
    assert calibrate(messages, [10, 2], [0, 0]) is None


def test_the_output_of_a_response_is_read_in_either_dialect_and_zero_when_not_recorded():
    assert output_tokens(response({"input_tokens": 5, "output_tokens": 42})) == 42
    assert output_tokens(response({"prompt_tokens": 5, "completion_tokens": 17}, claude_code=True)) == 17
    assert output_tokens(response({"output_tokens": "many"})) == 0 and output_tokens(response(None)) == 0


# --- the targets, on every log with recorded usage ------------------------------------------

def logs_with_usage() -> list[Path]:
    """The sessions the agents recorded, and the shared corpus's agent logs when it is here."""
    here = sorted((ROOT / "tests/recorded").glob("*/*.json*"))
    corpus = [*sorted(CORPUS.glob("claude-code/*.jsonl")), *sorted(CORPUS.glob("other/*.json*")),
              *sorted(CORPUS.glob("trajectories/pi-*.jsonl"))] if CORPUS.is_dir() else []
    return [*here, *corpus]


def fitted(path: Path) -> tuple[Estimate, Estimate] | None:
    """(the default count, --calibrate) of a log the fit can be made on; None for another."""
    transcript = loads(path.read_bytes(), str(path))
    default, shown = estimate(transcript), estimate(transcript, Options(calibrate=True))
    return (default, shown) if shown.calibration is not None else None


def test_the_fit_is_the_default_and_holds_on_the_responses_it_was_not_fitted_on():
    """Default and --calibrate are one count; the fit made on the earlier half of a log's responses
    is within 10 % of what the later half recorded on every log, within 5 % at the median."""
    errors = []
    for path in logs_with_usage():
        counts = fitted(path)
        if counts is None:
            continue
        default, shown = counts
        assert default.tokens == shown.tokens and default.method == shown.method, path.name
        if shown.calibration.error is not None:
            assert shown.calibration.error <= 0.10, path.name
            errors.append(shown.calibration.error)
    assert len(errors) >= 4 and median(errors) <= 0.05
