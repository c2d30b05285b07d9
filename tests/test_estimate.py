"""`estimate` as a library: the documented formula, recomputed here from the wire JSON."""

from __future__ import annotations

import base64
import math
import struct
import typing
import zlib
from dataclasses import replace

import pytest

from transcompact.core.errors import UsageError
from transcompact.core.media import image_size, image_tokens, pdf_tokens
from transcompact.counting.counter import KINDS, Options
from transcompact.counting.models import MODELS, model_family, model_limits
from transcompact.formats import loads
from transcompact.ops.estimate import estimate

from .builders import formula
from .conftest import FIXTURES, fixture_files, supported_corpus_files

# --- the README's table, written again from the wire JSON ----------------------------------








CONTENT = Options(count="content")


@pytest.mark.parametrize("path", fixture_files())
def test_fixture_estimate_is_the_documented_formula(path):
    transcript = loads(path.read_bytes(), str(path))
    assert estimate(transcript, CONTENT).tokens == formula(transcript)
    assert estimate(transcript, Options(ratio=0.5, count="content")).tokens == formula(transcript, 0.5)


@pytest.mark.parametrize("path", supported_corpus_files(read_only=True))
def test_corpus_estimate_is_the_documented_formula(path):
    transcript = loads(path.read_bytes(), str(path))
    report = estimate(transcript, CONTENT)
    assert report.tokens == formula(transcript)
    assert sum(report.by_kind.values()) == report.tokens
    assert report.per_message[-1].running == report.tokens if report.per_message else report.tokens == 0


def test_every_block_fixture_by_hand():
    """The numbers the README's first example shows, worked out by hand."""
    report = estimate(loads((FIXTURES / "anthropic/every-block.json").read_bytes()))
    # 320×200 → ⌈64000/750⌉ = 86; 2400×1600 → scaled to the 1568 px edge, still above 1600 → 1600.
    assert report.by_kind["images"] == 86 + 1600
    # a 2-page PDF at 3000 per page, plus a 41-character text document at 0.25 (10).
    assert report.by_kind["documents"] == 6000 + 10
    assert report.tokens == 7931
    assert [r.tool for r in report.top_results] == ["screenshot", "read_file"]
    assert report.top_results[0].tokens == int(len("Screenshot taken at 1280x800.") * 0.25) + 1600


def test_breakdown_sums_to_the_total_and_roles_to_the_messages():
    transcript = loads((FIXTURES / "openai/tool-calls.json").read_bytes())
    report = estimate(transcript)
    assert sum(report.by_kind.values()) == report.tokens
    assert sum(report.by_role.values()) == report.tokens
    # What no message holds, by role as by kind: the system prompt and tools, the overhead (the 4 per message).
    assert report.by_role["system_and_tools"] == report.by_kind["system"] + report.by_kind["tool_schemas"]
    assert report.by_role["overhead"] == report.by_kind["overhead"] == 4 * len(transcript.messages)
    # each message by the spec's estimator: chars × 0.25, at least 1, + 4
    assert [m.tokens for m in report.per_message] == [formula(replace(transcript, system=(), tools=(), messages=(m,))) for m in transcript.messages]
    assert set(report.by_kind) == set(KINDS)


def test_status_against_threshold_and_budget():
    transcript = loads((FIXTURES / "anthropic/tool-loop.json").read_bytes())
    tokens = estimate(transcript).tokens
    assert estimate(transcript).status == "under"
    assert estimate(transcript, Options(threshold=tokens - 1)).status == "over"
    assert estimate(transcript, Options(threshold=tokens)).status == "warning"  # compacts only above it
    budget = math.floor(tokens / 0.95)  # the largest budget of which the estimate is still 95 %
    assert estimate(transcript, Options(window=budget + 10, max_output=10)).status == "emergency"
    assert estimate(transcript, Options(window=budget + 11, max_output=10)).status != "emergency"
    fraction = estimate(transcript, Options(threshold=0.5))
    assert fraction.threshold == 92_000  # half of 200,000 − 16,000


def test_warning_status_from_a_fraction_of_the_threshold():
    transcript = loads((FIXTURES / "anthropic/tool-loop.json").read_bytes())
    tokens = estimate(transcript).tokens
    assert estimate(transcript, Options(threshold=2 * tokens)).status == "warning"  # exactly half: the default
    assert estimate(transcript, Options(threshold=2 * tokens + 2)).status == "under"
    assert estimate(transcript, Options(threshold=tokens + 1, warn_at=0.99)).status == "warning"
    assert estimate(transcript, Options(threshold=4 * tokens, warn_at=0.2)).warning == int(0.8 * tokens)
    with pytest.raises(UsageError, match="a fraction of the threshold"):
        estimate(transcript, Options(warn_at=1.5))


def test_model_table_matches_dated_names_and_refuses_unknown_ones():
    assert model_limits("claude-sonnet-4-5-20250929") == (200_000, 64_000)
    assert model_limits("claude-opus-4-1") == (200_000, 32_000)
    assert model_limits("gpt-4o-mini") == (128_000, 16_384)
    assert model_limits("gpt-4.1-2025-04-14") == MODELS["gpt-4.1"]
    assert model_limits("claude-opus-5-5") == (1_000_000, 128_000)
    for name in ("claude-sonnet", "gpt-5-chat-latest", "o1-mini"):  # variants, not dated snapshots, of gpt-5 and o1
        with pytest.raises(UsageError, match="unknown model"):
            model_limits(name)


def provider(name: str) -> str:
    return "anthropic" if name.startswith("claude-") else "openai"


def test_model_table_is_sorted_by_provider_then_name():
    assert list(MODELS) == sorted(MODELS, key=lambda name: (provider(name), name))
    assert all(0 < max_output < window for window, max_output in MODELS.values())


# The SDKs' model ids whose limits no source was found for (2026-11-22): left out of MODELS rather
# than guessed, so that --model refuses them and asks for --window and --max-output.
LEGACY = "a GPT-3.5, GPT-4 or GPT-4 Turbo preview snapshot: windows in third-party tables, no max output found"
UNSOURCED = {
    "gpt-5.2-pro": "a max output (128,000) was found, no context window",
    "gpt-5.1-codex": "no page with its limits found",
    "gpt-5.1-mini": "no page with its limits found",
    "gpt-5.1-chat-latest": "only a third-party 16,000 max output, against the 16,384 of the other chat-latest models",
    "gpt-5-chat-latest": "only a third-party 16,000 max output, against the 16,384 of the other chat-latest models",
    "gpt-audio-mini": "no page with its limits found",
    "o1-mini": "only a third-party 128,000 window, no max output",
    "o1-preview": "no page with its limits found",
    **dict.fromkeys(("gpt-4", "gpt-4-0314", "gpt-4-0613", "gpt-4-32k", "gpt-4-32k-0314", "gpt-4-32k-0613",
                     "gpt-4-turbo-preview", "gpt-4-0125-preview", "gpt-4-1106-preview", "gpt-4-vision-preview",
                     "gpt-3.5-turbo", "gpt-3.5-turbo-16k", "gpt-3.5-turbo-0301", "gpt-3.5-turbo-0613",
                     "gpt-3.5-turbo-1106", "gpt-3.5-turbo-0125", "gpt-3.5-turbo-16k-0613"), LEGACY),
}


def literal_strings(annotation) -> set[str]:
    """The strings of a Literal type, through the Unions an SDK wraps it in (Model is Literal[...] | str)."""
    if typing.get_origin(annotation) is typing.Literal:
        return {value for value in typing.get_args(annotation) if isinstance(value, str)}
    return set().union(*(literal_strings(arg) for arg in typing.get_args(annotation)))


@pytest.mark.parametrize("module, alias", [("anthropic.types", "Model"), ("openai.types", "ChatModel")])
def test_model_table_covers_the_sdks_model_ids(module, alias):
    ids = literal_strings(getattr(pytest.importorskip(module), alias))
    assert ids
    unresolved = sorted(name for name in ids if model_family(name) not in MODELS and model_family(name) not in UNSOURCED)
    assert unresolved == [], "add these to MODELS with a source, or to UNSOURCED with the reason"
    assert not set(UNSOURCED) & set(MODELS)


def test_the_default_threshold_is_the_same_share_of_any_budget():
    transcript = loads((FIXTURES / "anthropic/tool-loop.json").read_bytes())
    assert estimate(transcript).threshold == 100_000  # of 200,000 − 16,000
    assert estimate(transcript, Options(window=1_000_000, max_output=128_000)).threshold == 100_000 * 872_000 // 184_000
    assert estimate(transcript, Options(window=1_000_000, max_output=128_000, threshold=100_000)).threshold == 100_000
    assert estimate(transcript, Options(window=1_000_000, max_output=128_000, threshold=0.5)).threshold == 436_000


def test_window_must_leave_a_budget():
    transcript = loads((FIXTURES / "anthropic/tool-loop.json").read_bytes())
    with pytest.raises(UsageError, match="max_output \\(1,000\\) must be below window \\(1,000\\)"):
        estimate(transcript, Options(window=1000, max_output=1000))


# --- images and documents ------------------------------------------------------------------


def png(width: int, height: int) -> str:
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + header).decode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("data,size", [
    (png(640, 480), (640, 480)),
    (b64(b"GIF89a" + struct.pack("<HH", 31, 17) + b"\x00" * 8), (31, 17)),
    (b64(b"\xff\xd8\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
         + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 600, 800) + b"\x00" * 12), (800, 600)),
    (b64(b"RIFF\x00\x00\x00\x00WEBPVP8X" + b"\x00" * 8 + (1023).to_bytes(3, "little") + (767).to_bytes(3, "little")), (1024, 768)),
    (b64(b"not an image at all"), None),
])
def test_image_size_from_the_header(data, size):
    assert image_size(data) == size


def test_image_tokens_follow_anthropics_rule():
    assert image_tokens(png(750, 1)) == 1
    assert image_tokens(png(1000, 1000)) == 1334  # ⌈1,000,000 / 750⌉
    assert image_tokens(png(1092, 1092)) == 1590  # Anthropic's own table: about 1590
    assert image_tokens(png(4000, 1000)) == math.ceil(1568 * 392 / 750)  # long edge scaled to 1568
    assert image_tokens(png(3000, 3000)) == 1600  # capped
    assert image_tokens(None) == image_tokens(b64(b"garbage")) == 1600


def test_pdf_tokens_count_page_objects():
    pdf = b"%PDF-1.4\n" + b"<< /Type /Pages /Count 3 >>\n" + b"<< /Type /Page >>\n" * 3
    assert pdf_tokens(b64(pdf)) == 9000
    assert pdf_tokens(b64(b"%PDF-1.7 compressed" + b"\x00" * 120_000)) == 3 * 3000  # 120 KB at one page per 50 KB
    assert pdf_tokens(None) == 3000


def test_calibration_on_the_corpus_logs_is_within_5_percent():
    """The target: the honest (later-half) error of --calibrate on the corpus's Claude Code logs."""
    from statistics import median

    from .conftest import CORPUS

    logs = sorted(CORPUS.glob("claude-code/*.jsonl"))
    if not logs:
        pytest.skip("the shared corpus is not here")
    errors = [
        fit.error
        for path in logs
        if (fit := estimate(loads(path.read_bytes(), str(path)), Options(calibrate=True)).calibration) and fit.error is not None
    ]
    assert len(errors) >= 10
    assert median(errors) <= 0.05
