"""Conformance on real transcripts written by other people (skipped when the corpus is absent)."""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from transcompact import check, dumps, loads, repair
from transcompact.cli.main import cli
from transcompact.formats import NAMES
from transcompact.ops.validity.check import errors

from .conftest import CORPUS, UNSUPPORTED, corpus_files, supported_corpus_files

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not present")


def _relative(path) -> str:
    return str(path.relative_to(CORPUS))


@pytest.mark.parametrize("path", supported_corpus_files(read_only=True))
def test_round_trip_is_byte_identical(path):
    data = path.read_bytes()
    transcript = loads(data, path.name)
    assert dumps(transcript) == data


@pytest.mark.parametrize("path", supported_corpus_files(read_only=True))
def test_rewriting_every_message_keeps_the_json(path):
    """Without the original bytes the adapter re-serialises: JSON documents come out equal."""
    data = path.read_bytes()
    transcript = loads(data, path.name)
    out = dumps(transcript)
    if transcript.format in ("anthropic", "openai"):
        assert orjson.loads(out) == orjson.loads(data)
    else:
        assert out == data


@pytest.mark.parametrize("path", supported_corpus_files(read_only=True))
def test_check_verdict(path, snapshot):
    transcript = loads(path.read_bytes(), path.name)
    verdict = [f"{v.rule} {v.severity} message={v.index} line={v.line}: {v.text}" for v in check(transcript, path=path.name)]
    assert {"format": transcript.format, "messages": len(transcript.messages), "violations": verdict} == snapshot


@pytest.mark.parametrize("path", supported_corpus_files(read_only=True))
def test_repair_output_passes_check(path):
    data = path.read_bytes()
    transcript = loads(data, path.name)
    repaired, report = repair(transcript)
    written = dumps(repaired)
    assert errors(check(loads(written, path.name))) == []
    if not errors(check(transcript)):
        assert report.fixes == () and written == data


@pytest.mark.parametrize("relative", sorted(UNSUPPORTED))
def test_unsupported_formats_end_with_exit_3_and_one_clear_line(relative):
    path = CORPUS / relative
    result = CliRunner().invoke(cli, ["check", str(path)], prog_name="transcompact")
    assert result.exit_code == 3
    lines = result.stderr.splitlines()
    assert lines[0] == (
        f"transcompact: error: {path}: not a transcript in a format transcompact reads (tried {', '.join(NAMES)})"
    )
    assert lines[1].startswith("hint: ") and UNSUPPORTED[relative] in lines[1]
    assert "Traceback" not in result.output


def test_tau_bench_reads_through_messages_path():
    path = CORPUS / "trajectories/tau-bench-gpt-4o-airline-200-trajectories.json"
    data = path.read_bytes()
    transcript = loads(data, path.name, messages_path="3.traj")
    assert transcript.dialect == "openai" and transcript.messages[0].role == "system"
    assert dumps(transcript) == data
    assert orjson.loads(dumps(transcript)) == orjson.loads(data)


def test_every_corpus_file_is_either_read_or_named_unsupported():
    names = {p.id for p in corpus_files()}
    assert set(UNSUPPORTED) <= names
    assert len(names) >= 50
