"""A path the run writes that names an input, or another path it writes, is refused before
anything is written: exit 2, one line naming both, and every file as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .conftest import FIXTURES


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A directory with a transcript (r.jsonl, a Claude Code log) and a directory of two (logs/)."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "claude-code/broken-session.jsonl", "r.jsonl")
    Path("logs").mkdir()
    shutil.copy(FIXTURES / "anthropic/long-session.json", "logs/a.json")
    shutil.copy(FIXTURES / "claude-code/broken-session.jsonl", "logs/b.jsonl")
    return tmp_path


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


# Each run would lose data without the check (the first three are what a new user hit).
CLASHES = {
    "report-names-the-input": (["compact", "--emergency", "--force", "--report", "r.jsonl", "-o", "out.jsonl", "r.jsonl"],
                               "--report r.jsonl is also an input (r.jsonl)"),
    "report-names-the-input-in-place": (["repair", "-i", "--report", "r.jsonl", "r.jsonl"], "--report r.jsonl is also an input"),
    "report-names-the-input-dry-run": (["compact", "-i", "--dry-run", "--report", "r.jsonl", "r.jsonl"],
                                       "--report r.jsonl is also an input"),
    "archive-names-the-input": (["prune", "--archive", "r.jsonl", "r.jsonl"], "--archive r.jsonl is also an input"),
    "archive-is-a-hard-link-to-the-input": (["prune", "--archive", "hard.jsonl", "r.jsonl"], "--archive hard.jsonl is also an input (r.jsonl)"),
    "archive-is-a-link-to-the-input": (["compact", "--emergency", "--archive", "soft.jsonl", "r.jsonl"], "--archive soft.jsonl is also an input"),
    "events-names-the-input": (["compact", "--emergency", "--events", "r.jsonl", "r.jsonl"], "--events r.jsonl is also an input"),
    "resume-names-the-input": (["compact", "--batch-api", "--resume", "r.jsonl", "r.jsonl"], "--resume r.jsonl is also an input"),
    "report-and-archive": (["prune", "--archive", "x.jsonl", "--report", "x.jsonl", "-o", "y.jsonl", "r.jsonl"],
                           "--report x.jsonl and --archive x.jsonl are the same file"),
    "output-and-archive": (["prune", "--archive", "x.jsonl", "-o", "x.jsonl", "r.jsonl"], "--archive x.jsonl and -o x.jsonl are the same file"),
    "output-and-report": (["repair", "--report", "x.jsonl", "-o", "x.jsonl", "r.jsonl"], "--report x.jsonl and -o x.jsonl are the same file"),
    "output-onto-the-archive-expand-reads": (["expand", "--archive", "r.jsonl", "-o", "r.jsonl", "logs/b.jsonl"],
                                             "-o r.jsonl and --archive r.jsonl are the same file"),
    "in-place-onto-the-archive-expand-reads": (["expand", "--archive", "r.jsonl", "-i", "r.jsonl"],
                                               "-i would rewrite --archive r.jsonl, which the run reads"),
    "report-inside-a-walked-directory": (["compact", "--emergency", "--force", "-i", "--report", "logs/b.jsonl", "logs"],
                                         "--report logs/b.jsonl would replace a file in logs"),
    "events-inside-a-walked-directory": (["compact", "--emergency", "--force", "-i", "--events", "logs/a.json", "logs"],
                                         "--events logs/a.json would replace a file in logs"),
    # Found using the tool as a user: a walked file that is no JSON (notes) became the report.
    "report-onto-notes-inside-a-walked-directory": (["prune", "-i", "--report", "logs/notes.jsonl", "logs"],
                                                    "--report logs/notes.jsonl would replace a file in logs"),
    # A flag that takes a path took the first input as its own: the transcript is not the run's to replace.
    "events-swallowed-the-first-input": (["compact", "--emergency", "--events", "logs/a.json", "r.jsonl"],
                                         "--events logs/a.json would replace a transcript transcompact did not write"),
    "report-swallowed-the-first-input": (["prune", "--report", "logs/b.jsonl", "r.jsonl"],
                                         "--report logs/b.jsonl would replace a transcript transcompact did not write"),
    "output-dir-onto-another-input": (["prune", "--output-dir", "logs", "deep", "logs/sub/c.json"],
                                      "the output of deep/sub/c.json would replace the input logs/sub/c.json before it is read"),
    "output-dir-onto-the-report": (["prune", "--output-dir", "out", "--report", "out/a.json", "logs/a.json"],
                                   "the output of logs/a.json would be --report out/a.json"),
}


@pytest.mark.parametrize("args, named", CLASHES.values(), ids=CLASHES.keys())
def test_a_clash_is_refused_and_nothing_is_touched(workdir, transcompact, args, named):
    os.link("r.jsonl", "hard.jsonl")
    os.symlink("r.jsonl", "soft.jsonl")
    Path("deep/sub").mkdir(parents=True)
    Path("logs/sub").mkdir()
    shutil.copy(FIXTURES / "anthropic/long-session.json", "deep/sub/c.json")
    shutil.copy(FIXTURES / "anthropic/orphans.json", "logs/sub/c.json")
    Path("out").mkdir()
    Path("out/a.json").write_bytes(b"")
    Path("logs/notes.jsonl").write_bytes(b"hello notes\n")
    before = snapshot(workdir)

    result = transcompact(*args)

    assert result.exit_code == 2, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("transcompact: error: ") and named in first and first.endswith("nothing written")
    assert result.stdout == ""
    assert snapshot(workdir) == before


def test_an_output_may_name_its_own_input(workdir, transcompact):
    """-o onto the one input is -i: read first, then replaced atomically."""
    expected = transcompact("repair", "r.jsonl").stdout_bytes
    assert transcompact("repair", "-q", "-o", "r.jsonl", "r.jsonl").exit_code == 0
    assert Path("r.jsonl").read_bytes() == expected


def test_a_report_the_run_wrote_before_inside_the_walk_is_taken_back(workdir, transcompact):
    """The CI recipe run twice: its own report, inside the directory it walks, is no transcript."""
    for _ in range(2):
        result = transcompact("compact", "--emergency", "--force", "-i", "--report", "logs/report.jsonl", "logs")
        assert result.exit_code == 0, result.stderr
        assert [line.split(b'"file":')[1].split(b",")[0] for line in Path("logs/report.jsonl").read_bytes().splitlines()] \
            == [b'"logs/a.json"', b'"logs/b.jsonl"']


def test_the_files_a_run_wrote_before_are_taken_back(workdir, transcompact):
    """Run twice: its own report, events and archive, outside any walk, are no transcript to keep."""
    own = ["--report", "report.jsonl", "--events", "events.jsonl", "--archive", "archive.jsonl"]
    for _ in range(2):
        result = transcompact("compact", "--emergency", "--force", "--keep-recent-tokens", "500", *own, "-o", "out.json", "logs/a.json")
        assert result.exit_code == 0, result.stderr
    assert Path("events.jsonl").read_bytes().startswith(b'{"type":"compact_start"')
