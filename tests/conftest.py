"""Shared test fixtures: the shipped fixtures, the shared corpus (when present), a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from transcompact.core.format_names import FORMATS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# The shared corpus of real transcripts; TRANSCOMPACT_CORPUS points elsewhere (read once, at import).
CORPUS = Path(os.environ.get("TRANSCOMPACT_CORPUS") or ROOT.parent / "shared" / "corpus")

# Inputs that hold several conversations, read one at a time with --messages-path; without it each
# must end with exit 3 and one clear line that says how to pick one.
UNSUPPORTED = {
    "trajectories/openhands-multi-swe-bench-output-3runs.jsonl": "--messages-path 0.history",
    "trajectories/tau-bench-gpt-4o-airline-200-trajectories.json": "--messages-path 0.traj",
}
# Corpus files in a format transcompact reads but does not write (legacy OpenHands event lists).
READ_ONLY = {"trajectories/openhands-runtime-traj-basic-gui-mode.json"}
# The formats transcompact reads but does not write, as registered (their fixtures: fixtures/<name>/).
READ_ONLY_FORMATS = frozenset(registration.name for registration in FORMATS if not registration.writes)
LARGE = 1_000_000  # corpus files above this many bytes are marked slow


def in_ci() -> bool:
    """Whether this run is CI's (`CI=true`, as .ci/run and every common CI service set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


# What `make test-fast` leaves out (`-m "not slow"`): the fuzz and equivalence tests, which draw
# hundreds of examples; the growth tests, which time work at several sizes; the real agents'
# resume tests (every `test_*_resume` module); and the corpus's largest files (marked where they
# are listed, `corpus_files`).
SLOW_MODULES = {"test_fuzz", "test_read_quickly", "test_properties"}
SLOW_NAMES = ("linear", "growth")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        module = item.module.__name__.rpartition(".")[2]
        if module in SLOW_MODULES or module.endswith("_resume") or any(word in item.name for word in SLOW_NAMES):
            item.add_marker(pytest.mark.slow)


def pytest_configure(config) -> None:
    """In CI the corpus is there: without it, most conformance tests would skip without a word."""
    if in_ci() and not CORPUS.is_dir():
        raise pytest.UsageError(
            f"CI={os.environ['CI']} but the shared corpus is not at {CORPUS}: the conformance tests over real transcripts "
            "cannot run, and a run that skips them must not pass (set TRANSCOMPACT_CORPUS to where the corpus is)")


def _is_corpus_skip(report) -> bool:
    """A skip caused by the absent corpus: its reason names the corpus, or a parameter list came out
    empty (lists built from the corpus are the suite's only ones that can be empty)."""
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3 else ""
    return "corpus" in reason or "got empty parameter set" in reason


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Say once, where it is seen, how many tests the absent corpus skipped (locally that is allowed)."""
    if CORPUS.is_dir():
        return
    skipped = sum(1 for report in terminalreporter.stats.get("skipped", ()) if _is_corpus_skip(report))
    if skipped:
        terminalreporter.write_sep(
            "=", f"{skipped} test{'s' if skipped != 1 else ''} skipped: the shared corpus is not at {CORPUS} "
                 "(set TRANSCOMPACT_CORPUS; under CI=true this fails the run)", yellow=True, bold=True)


def corpus_files() -> list:
    """One parameter per corpus file; none when the corpus is absent (pytest skips the test, and the
    summary counts it)."""
    if not CORPUS.is_dir():
        return []
    files = sorted(p for p in CORPUS.glob("*/*") if p.suffix in (".json", ".jsonl"))
    return [
        pytest.param(p, id=str(p.relative_to(CORPUS)), marks=[pytest.mark.slow] if p.stat().st_size > LARGE else [])
        for p in files
    ]


def supported_corpus_files(*, read_only: bool = False) -> list:
    """The corpus files transcompact reads as they are and writes; with `read_only`, also those it
    only reads (for a test that writes nothing)."""
    return [p for p in corpus_files() if (name := str(p.values[0].relative_to(CORPUS))) not in UNSUPPORTED
            and (read_only or name not in READ_ONLY)]


def fixture_files(*, written: bool = False) -> list:
    """One parameter per shipped fixture (fixtures/<format>/); with `written`, only those of formats
    transcompact writes (`READ_ONLY_FORMATS`: Copilot CLI sessions, legacy OpenHands event lists)."""
    return [pytest.param(p, id=str(p.relative_to(FIXTURES))) for p in sorted(FIXTURES.glob("*/*"))
            if p.is_file() and not (written and p.parent.name in READ_ONLY_FORMATS)]


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


@pytest.fixture
def transcompact():
    """The command line, run in this process (`builders.run_cli`): `transcompact("prune", "-q",
    path)` gives click's Result; a traceback or an internal error fails the test."""
    from .builders import run_cli

    return run_cli


@pytest.fixture
def spawned():
    """`spawn(*args, **popen)`: `python -m transcompact ARGS` in a process of its own, to signal
    or to wait for. Whatever ends the test (a failed assertion, a deadline missed on a loaded
    machine), every process it started is ended with it: none is left running."""
    started: list[subprocess.Popen] = []

    def spawn(*args, **popen) -> subprocess.Popen:
        process = subprocess.Popen([sys.executable, "-m", "transcompact", *map(str, args)], **popen)
        started.append(process)
        return process

    yield spawn
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()
