"""Shared test fixtures: the shipped fixtures, the shared corpus (when present), a clean environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
CORPUS = Path(os.environ.get("TRANSCOMPACT_CORPUS", ROOT.parent / "shared" / "corpus"))

# Formats we do not read yet; each must end with exit 3 and one clear line.
UNSUPPORTED = {
    "other/codex-cli-rollout-small.jsonl": "Codex CLI rollout",
    "other/entire-cli-gemini-cli-session-f7633853.json": "Gemini CLI chat",
    "other/gemini-cli-chat-large.json": "Gemini CLI chat",
    "trajectories/openhands-multi-swe-bench-output-3runs.jsonl": "OpenHands event stream",
    "trajectories/openhands-runtime-traj-basic-gui-mode.json": "OpenHands event stream",
    "trajectories/pi-coding-agent-large-session.jsonl": "pi coding-agent session",
    "trajectories/tau-bench-gpt-4o-airline-200-trajectories.json": "--messages-path 0.traj",
}
LARGE = 1_000_000  # corpus files above this many bytes are marked slow


def pytest_configure(config) -> None:
    """In CI the corpus is there: without it, most conformance tests would skip without a word."""
    if os.environ.get("CI") == "true" and not CORPUS.is_dir():
        raise pytest.UsageError(f"CI=true but the shared corpus is not at {CORPUS}: the conformance tests cannot run "
                                "(set TRANSCOMPACT_CORPUS to where it is)")


def corpus_files() -> list:
    if not CORPUS.is_dir():
        return []
    files = sorted(p for p in CORPUS.glob("*/*") if p.suffix in (".json", ".jsonl"))
    return [
        pytest.param(p, id=str(p.relative_to(CORPUS)), marks=[pytest.mark.slow] if p.stat().st_size > LARGE else [])
        for p in files
    ]


def supported_corpus_files() -> list:
    return [p for p in corpus_files() if str(p.values[0].relative_to(CORPUS)) not in UNSUPPORTED]


def fixture_files() -> list:
    return [pytest.param(p, id=str(p.relative_to(FIXTURES))) for p in sorted(FIXTURES.glob("*/*")) if p.is_file()]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """No key, no setting from the developer's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith("TRANSCOMPACT_") or name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def api(monkeypatch):
    """A loopback server that speaks the Anthropic and OpenAI APIs, with the SDK pointed at it."""
    from .loopback import serve

    state, stop = serve()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", state.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-loopback")
    yield state
    stop()


@pytest.fixture
def in_root(monkeypatch):
    """Run from the project root, so that paths in output read `fixtures/...`."""
    monkeypatch.chdir(ROOT)
