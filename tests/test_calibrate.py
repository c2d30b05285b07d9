"""The recorded usage, the fit of `tokens ≈ overhead + ratio × chars + frame × blocks` over it, and how close it comes."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import pytest

from transcompact.core.model import Message, Text
from transcompact.counting.calibrate import (
    FRAME_SAMPLES,
    Calibration,
    calibrate,
    fit,
    holdout_error,
    model,
    output_tokens,
    ratio_with,
    recorded_prompts,
    recorded_usage,
    samples,
    through,
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
    assert samples(recorded_prompts(messages), [40, 10, 300, 5], [1, 1, 2, 1], [0, 0, 50, 0], head_units=7) == [(47, 1, 0, 100), (357, 4, 50, 180)]


def at(chars: int, tokens: int, blocks: int = 0, figures: int = 0) -> tuple[int, int, int, int]:
    return chars, blocks, figures, tokens


def test_the_fit_recovers_a_line_and_refuses_what_is_not_one():
    points = [at(chars, int(5000 + 0.3 * chars)) for chars in (1000, 4000, 9000, 20000)]
    ratio, frame, overhead = fit(points)
    assert ratio == pytest.approx(0.3, abs=1e-3) and overhead == pytest.approx(5000, abs=2) and frame == 0
    assert fit(points[:1]) is None
    assert fit([at(100, 50), at(100, 60)]) is None  # no spread in size
    assert fit([at(100, 500), at(200, 400)]) is None  # tokens falling as text grows


def test_with_enough_samples_the_frame_of_a_block_is_fitted_apart_from_its_characters():
    """Short blocks and long ones: the tokens a block costs beyond its characters are told apart
    from what a character costs, so a window of short blocks counts the frames it is sent in."""
    sizes = [(1000, 4), (1300, 10), (5000, 12), (5200, 20), (9000, 24), (9100, 34), (20000, 40)]
    ratio, frame, overhead = fit([at(c, round(1400 + 0.26 * c + 19.5 * b), b) for c, b in sizes])
    assert (ratio, frame, overhead) == (pytest.approx(0.26, abs=1e-3), pytest.approx(19.5, abs=0.1), pytest.approx(1400, abs=3))
    assert fit([at(c, round(1400 + 0.26 * c + 19.5 * b), b) for c, b in sizes[:FRAME_SAMPLES - 1]])[1] == 0  # too few
    in_step = [(c, c // 250) for c, _ in sizes]  # a block every 250 characters: nothing tells them apart
    assert fit([at(c, round(1400 + 0.3 * c), b) for c, b in in_step])[1] == 0


def test_the_line_goes_through_the_newest_response_and_its_overhead_is_never_negative():
    points = [at(1000, 5400), at(4000, 6100), at(9000, 7800), at(20000, 11_000)]
    ratio, frame, overhead = fit(points)
    assert overhead + ratio * 20000 == pytest.approx(11_000)  # the count is what the newest response recorded
    dearer = [at(1000, 100), at(4000, 1100), at(9000, 3300)]  # more tokens per character as the log grows
    ratio, frame, overhead = fit(dearer)
    assert overhead == 0 and ratio == pytest.approx(3300 / 9000)


def test_another_tokenizer_fits_its_ratio_with_the_overhead_and_the_frame_held():
    chars = [at(1000, 5300, 2), at(4000, 6200, 3), at(9000, 7700, 5)]
    units = [at(250, 5300, 2), at(1100, 6200, 3), at(2300, 7700, 5)]  # the same prompts in a tokenizer's count
    (per_char, by_chars, frame, none), (ratio, by_units, held, on_chars) = model(chars, None), model(chars, units)
    assert by_units == by_chars and held == frame and none is None and on_chars == per_char
    # Through the newest response, as the ratio on characters is: the model says what it recorded.
    assert ratio == pytest.approx(ratio_with(units, by_chars, frame)) and by_units + ratio * 2300 + frame * 5 == pytest.approx(7700)


def test_the_error_is_measured_on_responses_the_fit_did_not_see():
    points = [at(chars, 1000 + chars // 4) for chars in range(1000, 9000, 1000)]
    error, measured = holdout_error(points)
    assert error == pytest.approx(0, abs=0.01) and measured == 4
    bent = points[:4] + [at(c, t * 2) for c, _, _, t in points[4:]]
    assert holdout_error(bent)[0] == pytest.approx(0.5, abs=0.01)


def test_calibrate_needs_two_responses():
    messages = [Message("user", (Text("x"),)), response({"input_tokens": 100})]
    assert calibrate(recorded_prompts(messages), [10, 2], [1, 1], [0, 0]) is None


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


def test_few_responses_after_a_compaction_keep_the_ratio_and_frame_of_the_log_before_it():
    """Two responses restated on a plane give back no frame: fitted with those of the log before
    (`shape`), the line goes through the newest response and counts a block as that log did."""
    before = Calibration(0.26, 1400.0, 20.0, samples=12, error=0.01, error_samples=6)
    points = [at(900, round(1400 + 0.26 * 900 + 20 * 5), 5), at(1500, round(1400 + 0.26 * 1500 + 20 * 9), 9)]
    assert fit(points)[1] == 0  # alone, they give no frame
    ratio, overhead, frame, none = through(points, None, before)
    assert (ratio, frame, none) == (0.26, 20.0, None) and overhead == pytest.approx(1400, abs=1)
    assert through([at(100, 30, 1)], None, before) is None  # an overhead below 0
