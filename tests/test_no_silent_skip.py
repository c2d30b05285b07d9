"""Tests that cannot skip silently: without the shared corpus a CI run fails naming where it looked,
and a local run says once how many tests the absent corpus skipped.

Each case runs pytest in a subprocess on a tiny suite that uses this project's conftest (copied as
it is), with TRANSCOMPACT_CORPUS pointed at a directory that does or does not exist.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

# The ways the suite's tests depend on the corpus: a parameter list of its files, a skip in the body,
# a skipif mark, and a parameter list built by hand (empty without the corpus).
TINY_SUITE = '''
from pathlib import Path

import pytest

from conftest import CORPUS, supported_corpus_files


@pytest.mark.parametrize("path", supported_corpus_files())
def test_each_corpus_file(path):
    assert path.is_file()


def test_one_named_corpus_file():
    if not CORPUS.is_dir():
        pytest.skip("the shared corpus is not here")
    assert (CORPUS / "anthropic" / "one.json").is_file()


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the corpus is not present")
def test_marked():
    assert CORPUS.is_dir()


@pytest.mark.parametrize("path", sorted(CORPUS.glob("anthropic/*.json")))
def test_by_hand(path):
    assert path.is_file()


def test_without_the_corpus():
    assert 1 + 1 == 2


@pytest.mark.skip(reason="another reason")
def test_skipped_for_another_reason():
    pass
'''


def run_tiny_suite(tmp_path: Path, corpus: Path, ci: str | None) -> subprocess.CompletedProcess:
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(CONFTEST, suite / "conftest.py")
    (suite / "test_tiny.py").write_text(TINY_SUITE)
    (suite / "pytest.ini").write_text("[pytest]\n")  # the root: no ini file above it is read
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "TRANSCOMPACT_CORPUS")}
    environment.update(TRANSCOMPACT_CORPUS=str(corpus), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    if ci is not None:
        environment["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rN", str(suite)],
                          cwd=suite, env=environment, capture_output=True, text=True, timeout=60)


def summary_lines(output: str) -> list[str]:
    return [line.strip("= ") for line in output.splitlines() if "skipped: the shared corpus" in line]


@pytest.mark.parametrize("ci", ["true", "1"])
def test_in_ci_a_missing_corpus_stops_the_run_naming_the_path_and_the_fix(tmp_path, ci):
    missing = tmp_path / "no-corpus-here"
    done = run_tiny_suite(tmp_path, missing, ci)
    output = done.stdout + done.stderr
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert f"the shared corpus is not at {missing}" in output
    assert "set TRANSCOMPACT_CORPUS" in output
    assert "passed" not in output  # stopped before any test ran, not after the skips


@pytest.mark.parametrize("ci", [None, "false"], ids=["unset", "false"])
def test_locally_a_missing_corpus_skips_and_says_how_many_once(tmp_path, ci):
    missing = tmp_path / "no-corpus-here"
    done = run_tiny_suite(tmp_path, missing, ci)
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    # Four tests skip for the corpus; the one skipped for another reason is not counted.
    assert summary_lines(done.stdout) == [
        f"4 tests skipped: the shared corpus is not at {missing} (set TRANSCOMPACT_CORPUS; under CI=true this fails the run)"]
    assert re.search(r"\b1 passed, 5 skipped\b", done.stdout), done.stdout


def test_in_ci_with_the_corpus_every_corpus_test_runs(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "anthropic").mkdir(parents=True)
    (corpus / "anthropic" / "one.json").write_text('[{"role": "user", "content": "hi"}]')
    done = run_tiny_suite(tmp_path, corpus, "true")
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert summary_lines(done.stdout) == []
    assert re.search(r"\b5 passed, 1 skipped\b", done.stdout), done.stdout
