"""Batches (docs/input-output.md#batches): directories walked, a bad file reported and the batch
going on, the worst exit status, the closing summary, --output-dir mirroring the tree and refusing
a clash, --dry-run, --jobs, and an interrupt that leaves every file old or new."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from transcompact.core.errors import ExitCode
from transcompact.run.batch import worst

from .builders import run_cli as run
from .conftest import FIXTURES

COMPACT = ["compact", "--emergency", "--force", "--keep-recent-tokens", "1000"]
# In the tree: what compact --emergency makes of each file.
COMPACTED = ["a/every-block.json", "a/long-session.json"]
UNCHANGED = ["b/chat.jsonl", "b/session.jsonl", "tool-loop.json"]
BAD = {"bad.json": "malformed JSON", "c/not-a-transcript.json": "not a transcript"}
IGNORED = ["notes.txt", ".hidden/long-session.json", ".git/long-session.json", "b/.long-session.json"]




@pytest.fixture
def tree(tmp_path) -> Path:
    """A directory of corpus-like files, bad ones and files no command must read."""
    logs = tmp_path / "logs"
    sources = {"a/every-block.json": "anthropic/every-block.json", "a/long-session.json": "anthropic/long-session.json",
               "b/chat.jsonl": "jsonl/chat.jsonl", "b/session.jsonl": "claude-code/broken-session.jsonl",
               "tool-loop.json": "anthropic/tool-loop.json"}
    for name, fixture in sources.items():
        (logs / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / fixture, logs / name)
    (logs / "bad.json").write_bytes(b'{"messages": [')
    (logs / "c").mkdir()
    (logs / "c/not-a-transcript.json").write_bytes(b'{"name": "a package.json", "version": "1.0.0"}')
    for name in IGNORED:
        (logs / name).parent.mkdir(parents=True, exist_ok=True)
        (logs / name).write_bytes(b"{")  # would fail if it were read
    return logs


def contents(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `directory`: its bytes and modification time."""
    return {p.relative_to(directory).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*")) if p.is_file()}


def summary_line(stderr: str) -> re.Match:
    found = re.fullmatch(r"(\d+) files?: (\d+) (?:would be )?\w+, (\d+) unchanged, (\d+) failed(?:; ([\d,]+) → ([\d,]+) tokens)?; "
                         r"\d+\.\d s", stderr.splitlines()[-1])
    assert found, stderr
    return found


# --- compact -i over a tree ------------------------------------------------------------------


def test_compact_in_place_over_a_tree_goes_on_past_bad_files(tree, tmp_path):
    before = contents(tree)
    report = tmp_path / "report.jsonl"
    result = run(*COMPACT, "-i", "--jobs", "2", "--report", str(report), str(tree), str(tmp_path / "missing.json"))
    assert result.exit_code == ExitCode.INPUT  # the worst: a file that could not be used
    assert result.stdout == ""  # never a transcript with several inputs
    after = contents(tree)
    for name in COMPACTED:
        assert after[name][0] != before[name][0]
    for name in UNCHANGED + list(BAD) + IGNORED:
        assert after[name] == before[name], name  # not even rewritten as it was
    assert run("check", *(str(tree / name) for name in COMPACTED + UNCHANGED)).exit_code in (0, 1)
    assert run("check", *(str(tree / name) for name in COMPACTED)).exit_code == 0  # what compact wrote is valid
    errors = [line for line in result.stderr.splitlines() if line.startswith("transcompact: error:")]
    assert len(errors) == len(BAD) + 1
    for name, why in BAD.items():
        assert any(line.startswith(f"transcompact: error: {tree / name}") and why in line for line in errors), (name, errors)
    assert f"transcompact: error: {tmp_path / 'missing.json'}: no such file" in errors
    lines = [json.loads(line) for line in report.read_bytes().splitlines()]
    expected_order = sorted(COMPACTED + UNCHANGED + list(BAD))  # sorted, whatever finished first
    assert [line["file"] for line in lines] == [str(tree / name) for name in expected_order] + [str(tmp_path / "missing.json")]
    found = summary_line(result.stderr)
    good = [line for line in lines if line["status"] != "failed"]
    assert [int(n) for n in found.groups()[:4]] == [len(lines), len(COMPACTED), len(UNCHANGED), len(BAD) + 1]
    assert int(found[5].replace(",", "")) == sum(line["tokens_before"] for line in good)
    assert int(found[6].replace(",", "")) == sum(line["tokens_after"] for line in good)


def test_an_error_that_names_no_file_gets_the_files_name_in_a_batch(tree, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    result = run("compact", "-q", "--force", "--no-fallback", "--keep-recent-tokens", "1000", "--output-dir",
                 str(tmp_path / "out"), str(tree / "a/long-session.json"), str(tree / "bad.json"))
    assert result.exit_code == ExitCode.PROVIDER  # worse than the malformed file's 3
    lines = result.stderr.splitlines()
    assert lines[:2] == [f"transcompact: error: {tree / 'a/long-session.json'}: no Anthropic API key",
                         "hint: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a proxy)"]
    assert lines[2].startswith(f"transcompact: error: {tree / 'bad.json'}:1:")  # named by its own location already


def test_the_worst_status_is_the_most_severe_not_the_last():
    assert worst([0, 1, 5, 3, 1]) == ExitCode.OUTPUT
    assert worst([1, 0]) == ExitCode.VIOLATIONS and worst([]) == ExitCode.OK
    assert worst([ExitCode.OUTPUT, ExitCode.INTERRUPTED, ExitCode.INPUT]) == ExitCode.INTERRUPTED


def test_compact_i_on_files_prints_nothing_and_leaves_the_unchanged_alone(tree):
    """The issue's first bug: `compact -i a b` printed every input it did not compact."""
    unchanged = tree / "tool-loop.json"
    mtime = unchanged.stat().st_mtime_ns
    result = run(*COMPACT, "-i", str(tree / "a/long-session.json"), str(unchanged))
    assert result.exit_code == 0 and result.stdout == ""
    assert unchanged.stat().st_mtime_ns == mtime


def test_fail_fast_stops_at_the_first_bad_file(tree):
    later = tree / "tool-loop.json"
    compacted = tree / "a/long-session.json"
    before = compacted.read_bytes()
    result = run(*COMPACT, "-i", "--fail-fast", "--jobs", "1", str(tree / "bad.json"), str(compacted), str(later))
    assert result.exit_code == ExitCode.INPUT
    assert compacted.read_bytes() == before  # never reached
    assert summary_line(result.stderr).groups()[:4] == ("1", "0", "0", "1")


def test_fail_fast_in_a_pool_starts_no_file_after_the_failure(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "0-bad.json").write_bytes(b"{")
    original = (FIXTURES / "anthropic/long-session.json").read_bytes()
    for i in range(40):
        (logs / f"s{i:02}.json").write_bytes(original)
    result = run(*COMPACT, "-i", "--fail-fast", "--jobs", "2", str(logs))
    assert result.exit_code == ExitCode.INPUT
    done = [p for p in logs.glob("s*.json") if p.read_bytes() != original]
    # At most one a worker is under way when the first fails: the other worker's (it had done 5 of 6).
    assert len(done) <= 1
    assert summary_line(result.stderr).groups()[:4] == (str(len(done) + 1), str(len(done)), "0", "1")


def test_several_inputs_or_a_directory_need_i_or_output_dir(tree):
    before = contents(tree)
    result = run(*COMPACT, str(tree))
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.splitlines() == ["transcompact: error: several inputs need -i or --output-dir",
                                          "hint: a directory counts as several"]
    assert contents(tree) == before and result.stdout == ""


def test_a_dry_run_over_a_directory_needs_no_output_flag(tree):
    before = contents(tree)
    result = run(*COMPACT, "--dry-run", str(tree))
    assert result.exit_code == ExitCode.INPUT, result.stderr  # the tree holds a broken file
    assert contents(tree) == before and result.stdout == "" and "would" in result.stderr


def test_a_dry_run_into_an_output_dir_names_every_file_it_would_write(tmp_path):
    """An unchanged file is copied to --output-dir as well: the dry run says so, not only of those it changes."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a.json", "b.json"):
        shutil.copy(FIXTURES / "anthropic/orphans.json", logs / name)
    result = run("compact", "--emergency", "--dry-run", "--output-dir", str(tmp_path / "out"), str(logs))
    assert result.exit_code == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if "dry run" in line] == [
        f"{logs / name}: dry run: would write {tmp_path / 'out' / name}" for name in ("a.json", "b.json")]
    assert not (tmp_path / "out").exists()


def test_the_report_and_the_transcript_never_share_stdout(tree, tmp_path):
    source = str(FIXTURES / "anthropic/long-session.json")
    refused = run(*COMPACT, "--report", "-", source)
    assert refused.exit_code == ExitCode.USAGE and refused.stdout == ""
    assert refused.stderr.splitlines()[0] == "transcompact: error: --report - and the transcript would both go to stdout"
    written = run(*COMPACT, "--report", "-", "-o", str(tmp_path / "out.json"), source)
    assert written.exit_code == 0 and json.loads(written.stdout)["output"] == str(tmp_path / "out.json")


@pytest.mark.parametrize("command", ["prune", "compact", "repair", "expand"])
def test_the_report_and_the_changes_a_diff_shows_never_share_stdout(command, tmp_path):
    """`--diff --json` is one JSON object on stdout: with the report's lines before it, it was not
    (found using it as a user)."""
    archive = tmp_path / "originals.jsonl"
    archive.write_bytes(b"")
    flags = ("--archive", str(archive)) if command == "expand" else ("--emergency", "--force") if command == "compact" else ()
    refused = run(command, *flags, "--diff", "--json", "--report", "-", str(FIXTURES / "anthropic/long-session.json"))
    assert refused.exit_code == ExitCode.USAGE and refused.stdout == ""
    assert refused.stderr.splitlines()[0] == "transcompact: error: --report - and the changes --diff shows would both go to stdout"


def test_a_file_named_twice_is_one_input(tmp_path):
    source = str(FIXTURES / "anthropic/long-session.json")
    result = run(*COMPACT, "-q", "-o", str(tmp_path / "out.json"), source, source)
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "out.json").read_bytes() == run(*COMPACT, "-q", source).stdout_bytes


def test_a_batch_names_its_unchanged_files_only_with_v(tree, tmp_path):
    """Three thousand small logs are "3000 unchanged" in the closing summary, not 3000 lines."""
    quiet = run("compact", "--emergency", "--output-dir", str(tmp_path / "out"), str(tree))
    assert "not compacted" not in quiet.stderr and "unchanged" in quiet.stderr.splitlines()[-1]
    loud = run("compact", "--emergency", "-v", "--output-dir", str(tmp_path / "out2"), str(tree))
    assert loud.stderr.count("not compacted") == 5  # every file under the threshold that is a transcript
    forced = run(*COMPACT, "-v", "--output-dir", str(tmp_path / "out3"), str(tree / "a/long-session.json"))
    assert "long-session.json: the summary kept files read 5 of 5, runs 8 of 8, errors 1 of 1, commands 8 of 8" in forced.stderr


def test_an_empty_log_has_nothing_to_compact(tmp_path):
    """As jq with empty input: no error, the batch goes on (check still says the input is empty)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "empty.jsonl").write_bytes(b"")
    (logs / "blank.jsonl").write_bytes(b"\n  \n")
    shutil.copy(FIXTURES / "anthropic/long-session.json", logs)
    result = run(*COMPACT, "-i", "-v", "--report", str(tmp_path / "report.jsonl"), str(logs))
    assert result.exit_code == 0, result.stderr
    assert f"{logs / 'empty.jsonl'}: the input is empty: nothing to do" in result.stderr
    assert summary_line(result.stderr)[0].startswith("3 files: 1 compacted, 2 unchanged, 0 failed")
    assert (logs / "empty.jsonl").read_bytes() == b"" and (logs / "blank.jsonl").read_bytes() == b"\n  \n"
    lines = [json.loads(line) for line in (tmp_path / "report.jsonl").read_bytes().splitlines()]
    assert [(line["status"], line.get("empty")) for line in lines] == [("unchanged", True), ("unchanged", True), ("changed", None)]
    assert run("check", str(logs / "empty.jsonl")).exit_code == ExitCode.INPUT


def test_an_empty_input_has_no_changes_to_show(tmp_path):
    """--diff --json of an empty input: an entry with no changes (it was an internal error)."""
    (tmp_path / "empty.jsonl").write_bytes(b"")
    result = run("prune", "--diff", "--json", str(tmp_path / "empty.jsonl"))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["files"] == [{"file": str(tmp_path / "empty.jsonl"), "changes": []}]


def test_a_walk_leaves_a_link_out_of_its_tree(tmp_path):
    """`compact -i logs/` where logs/link.json points at ../elsewhere/x.json: named and left, as find,
    tar and rsync leave it; the same link named as an argument is the user's choice, and followed."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "logs").mkdir()
    outside = tmp_path / "elsewhere/x.json"
    shutil.copy(FIXTURES / "anthropic/long-session.json", outside)
    shutil.copy(FIXTURES / "anthropic/long-session.json", tmp_path / "logs/a.json")
    (tmp_path / "logs/link.json").symlink_to("../elsewhere/x.json")
    before = outside.read_bytes()
    result = run(*COMPACT, "-i", "--report", str(tmp_path / "report.jsonl"), str(tmp_path / "logs"))
    assert result.exit_code == 0, result.stderr
    assert outside.read_bytes() == before
    assert f"{tmp_path / 'logs/link.json'}: a link to {outside}, outside the directory: left as it is" in result.stderr
    assert (tmp_path / "logs/a.json").read_bytes() != before
    followed = run(*COMPACT, "-i", str(tmp_path / "logs/link.json"))
    assert followed.exit_code == 0 and outside.read_bytes() != before


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bug_met_on_one_file_ends_only_that_file(tmp_path, monkeypatch, jobs):
    """Every input gets its outcome and its report line, whatever another file does (
    with --jobs 1 the report had 4 lines for 8 inputs, with --jobs 2 none)."""
    module = importlib.import_module("transcompact.ops.pruning.prune")  # the package's `prune` is the function
    real = module.prune

    def prune(transcript, *args, **kwargs):
        if "boom" in transcript.name:
            raise RuntimeError("a bug")
        return real(transcript, *args, **kwargs)

    monkeypatch.setattr(module, "prune", prune)  # before the pool forks its workers
    logs = tmp_path / "logs"
    logs.mkdir()
    for index in range(8):
        shutil.copy(FIXTURES / "anthropic/long-session.json", logs / f"{index}{'-boom' * (index == 3)}.json")
    result = run("prune", "--jobs", jobs, "--output-dir", str(tmp_path / "out"), "--report", str(tmp_path / "r.jsonl"),
                 str(logs), bug_planted=True)
    assert result.exit_code == ExitCode.INTERNAL
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_bytes().splitlines()]
    assert [line["status"] for line in lines] == ["changed"] * 3 + ["failed"] + ["changed"] * 4
    assert lines[3]["exit"] == 70 and lines[3]["error"].endswith("internal error: RuntimeError: a bug")
    assert "hint: run again with --traceback and report it" in result.stderr
    assert len(list((tmp_path / "out").iterdir())) == 7


def test_jobs_give_the_same_files_as_one_process(tree, tmp_path):
    one = run(*COMPACT, "-q", "--jobs", "1", "--output-dir", str(tmp_path / "one"), str(tree))
    two = run(*COMPACT, "-q", "--jobs", "2", "--output-dir", str(tmp_path / "two"), str(tree))
    assert one.exit_code == two.exit_code == ExitCode.INPUT
    assert {k: v[0] for k, v in contents(tmp_path / "one").items()} == {k: v[0] for k, v in contents(tmp_path / "two").items()}


# --- --output-dir ----------------------------------------------------------------------------


def test_output_dir_mirrors_the_tree_and_leaves_the_inputs(tree, tmp_path):
    before = contents(tree)
    out = tmp_path / "out"
    result = run(*COMPACT, "-q", "--jobs", "2", "--output-dir", str(out), str(tree), str(FIXTURES / "openai/tool-calls.json"))
    assert result.exit_code == ExitCode.INPUT and result.stdout == ""
    assert contents(tree) == before
    written = contents(out)
    assert sorted(written) == sorted(COMPACTED + UNCHANGED + ["tool-calls.json"])  # a file argument: its name
    for name in UNCHANGED:
        assert written[name][0] == before[name][0]  # the whole tree is there, the unchanged as they were
    assert run("check", *(str(out / name) for name in COMPACTED)).exit_code == 0


def test_output_dir_refuses_a_clash_before_writing_anything(tmp_path):
    for directory in ("d1", "d2"):
        (tmp_path / directory).mkdir()
        shutil.copy(FIXTURES / "anthropic/long-session.json", tmp_path / directory / "s.json")
    out = tmp_path / "out"
    result = run(*COMPACT, "--output-dir", str(out), str(tmp_path / "d1/s.json"), str(tmp_path / "d2/s.json"))
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.splitlines()[0] == (f"transcompact: error: {tmp_path / 'd1/s.json'} and {tmp_path / 'd2/s.json'} "
                                             f"would both be written to {out / 's.json'}; nothing written")
    assert not out.exists()
    assert run(*COMPACT, "-q", "--output-dir", str(out), str(tmp_path)).exit_code == 0  # their directory: d1/s.json, d2/s.json
    assert sorted(contents(out)) == ["d1/s.json", "d2/s.json"]


# --- --dry-run -------------------------------------------------------------------------------


def test_dry_run_changes_no_byte_and_says_what_would_happen(tree, tmp_path):
    before = contents(tree)
    result = run(*COMPACT, "-i", "--dry-run", "--jobs", "2", "--report", str(tmp_path / "report.jsonl"), str(tree))
    assert result.exit_code == ExitCode.INPUT and result.stdout == ""
    assert contents(tree) == before
    assert f"{tree / 'a/long-session.json'}: dry run: would write {tree / 'a/long-session.json'}" in result.stderr
    assert "tool-loop.json" not in result.stderr  # unchanged: counted in the closing summary (-v names it)
    assert summary_line(result.stderr)[0].startswith(f"{len(before) - len(IGNORED)} files: 2 would be compacted, 3 unchanged")
    lines = [json.loads(line) for line in (tmp_path / "report.jsonl").read_bytes().splitlines()]
    assert not any(line["written"] for line in lines)
    assert run(*COMPACT, "--dry-run", str(tree / "a/long-session.json")).stdout == ""  # not even to stdout


# --- reporting commands ----------------------------------------------------------------------


def test_estimate_json_reports_the_good_files_and_names_the_bad(tree):
    good, bad, other = tree / "a/long-session.json", tree / "bad.json", tree / "tool-loop.json"
    result = run("estimate", "--json", str(good), str(bad), str(other))
    assert result.exit_code == ExitCode.INPUT
    report = json.loads(result.stdout)
    assert [entry["file"] for entry in report["files"]] == [str(good), str(other)]
    assert report["total"]["files"] == 2
    assert result.stderr.startswith(f"transcompact: error: {bad}:")


def test_check_goes_on_past_a_bad_file(tree):
    orphans, bad, good = FIXTURES / "anthropic/orphans.json", tree / "bad.json", tree / "tool-loop.json"
    result = run("check", "--jobs", "2", str(orphans), str(bad), str(good))
    assert result.exit_code == ExitCode.INPUT  # worse than the violations (1)
    assert result.stdout.startswith(f"{orphans}: message 0: A1 ")
    assert len(result.stderr.splitlines()) == 1 and str(bad) in result.stderr
    assert run("check", str(orphans), str(good)).exit_code == ExitCode.VIOLATIONS


def test_a_directory_is_walked_once_in_sorted_order(tree):
    result = run("cut-point", str(tree / "b"), str(tree / "a"), str(tree / "a/long-session.json"))
    assert result.exit_code == 0
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [
        str(tree / "b/chat.jsonl"), str(tree / "b/session.jsonl"), str(tree / "a/every-block.json"), str(tree / "a/long-session.json")]


def test_a_file_reached_through_a_link_or_a_linked_directory_is_read_once(tree, tmp_path):
    """Files are told apart by their real paths, made by joining names under the real path of
    the directory walked: a link to a file of the tree, or the tree named through a link to it,
    is the same file."""
    (tree / "b/again.json").symlink_to(tree / "a/long-session.json")
    (tmp_path / "linked").symlink_to(tree / "a")
    result = run("cut-point", str(tree / "a"), str(tree / "b"), str(tmp_path / "linked"),
                 str(tmp_path / "linked/every-block.json"))
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [
        str(tree / "a/every-block.json"), str(tree / "a/long-session.json"), str(tree / "b/chat.jsonl"),
        str(tree / "b/session.jsonl")]


def test_two_hard_links_of_one_file_are_read_once(tree, tmp_path):
    """Found using the tool as a user: both names were pruned, their tokens counted twice, each
    original archived twice."""
    os.link(tree / "a/long-session.json", tree / "b/hard.json")
    walked = run("cut-point", str(tree / "a"), str(tree / "b"))
    assert [line.split("\t")[0] for line in walked.stdout.splitlines()] == [
        str(tree / "a/every-block.json"), str(tree / "a/long-session.json"), str(tree / "b/chat.jsonl"),
        str(tree / "b/session.jsonl")]
    named = run("cut-point", str(tree / "b/hard.json"), str(tree / "a/long-session.json"))
    assert [line.split("\t")[0] for line in named.stdout.splitlines()] == [str(tree / "b/hard.json")]


def test_glob_picks_the_files_of_a_directory(tree):
    result = run("cut-point", "--glob", "*.jsonl", str(tree))
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [str(tree / "b/chat.jsonl"), str(tree / "b/session.jsonl")]
    result = run("cut-point", "--glob", "a/*.json", str(tree))
    assert len(result.stdout.splitlines()) == 2


def test_progress_is_a_plain_line_when_stderr_is_not_a_terminal(tree, monkeypatch):
    monkeypatch.setattr("transcompact.run.batch._Progress.PLAIN_EVERY", 0)
    result = run("estimate", "--jobs", "1", str(tree / "a"), str(tree / "b"))
    lines = result.stderr.splitlines()
    assert lines[0] == "estimate: 1 file done, 0 s"  # how many there are is known once they are all found
    assert lines[-1] == "estimate: 4 of 4 files done, 0 s"
    assert "files done" not in run("estimate", "-q", "--jobs", "1", str(tree / "a"), str(tree / "b")).stderr


# --- interrupts ------------------------------------------------------------------------------


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("how", ["SIGTERM to the command", "Ctrl-C to its process group"])
def test_an_interrupt_leaves_every_file_old_or_new_and_exits_130(tmp_path, how, jobs, spawned):
    original = (FIXTURES / "anthropic/long-session.json").read_bytes()
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(400):
        (logs / f"s{i:03}.json").write_bytes(original)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCOMPACT_")}
    report = tmp_path / "report.jsonl"
    command = spawned(*COMPACT, "-i", "--jobs", jobs, "--report", report, logs,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.monotonic() + 120  # an event awaited; the deadline only bounds a machine stuck
    while command.stderr.readline().find(b"compacted (emergency)") < 0:  # files are being written now
        assert time.monotonic() < deadline and command.poll() is None
    if how.startswith("SIGTERM"):
        command.send_signal(signal.SIGTERM)
    else:
        os.killpg(command.pid, signal.SIGINT)  # what a terminal sends: the workers get it too
    stdout, stderr = command.communicate(timeout=120)
    assert command.returncode == ExitCode.INTERRUPTED, stderr[-2000:]
    assert stderr.endswith(b"transcompact: interrupted\n") and stdout == b""
    assert sorted(p.name for p in logs.iterdir()) == [f"s{i:03}.json" for i in range(400)]  # no temporary file left
    compacted = {p.read_bytes() for p in logs.iterdir()} - {original}
    assert len(compacted) == 1  # every file is the old one or the one new version
    assert run("check", str(next(p for p in logs.iterdir() if p.read_bytes() != original))).exit_code == 0
    assert original in {p.read_bytes() for p in logs.iterdir()}  # it stopped before the end
    # Every file it rewrote has its report line, those a worker finished as the interrupt came too.
    reported = {json.loads(line)["file"] for line in report.read_text().splitlines()}
    assert {str(p) for p in logs.iterdir() if p.read_bytes() != original} <= reported


def test_small_files_go_to_a_worker_together_and_a_large_one_alone(tmp_path):
    from transcompact.io.inputs import Source
    from transcompact.run.batch import HAND_OUT, SMALL, _hand_outs
    from transcompact.run.tasks import Task

    sizes = [10] * (HAND_OUT + 3) + [SMALL + 1] + [SMALL // 2] * 3
    tasks = []
    for i, size in enumerate(sizes):
        (tmp_path / f"{i:02}.json").write_bytes(b"x" * size)
        tasks.append(Task(Source(str(tmp_path / f"{i:02}.json"), f"{i:02}.json"), work=len, settings=None))
    hand_outs = list(_hand_outs(iter(tasks)))
    assert [len(h) for h in hand_outs] == [HAND_OUT, 3, 1, 2, 1]  # HAND_OUT files, or SMALL bytes, at most
    assert [t for h in hand_outs for t in h] == tasks  # in their order


def _slow_work(name: str, data: bytes, settings) -> object:
    from transcompact.run.tasks import Result

    time.sleep(0.05)
    return Result(output=None)


def test_an_interrupt_while_the_pool_works_is_raised_between_its_waits_and_the_pool_shuts_down(tmp_path):
    """Raised inside the pool's own code, just after it took a lock, an interrupt would leave the
    lock taken and the pool's shutdown waiting for ever (it did, one run in ten)."""
    from transcompact.io.inputs import Source
    from transcompact.run.batch import SMALL, _in_pool
    from transcompact.run.tasks import Task

    tasks = []
    for i in range(40):
        (tmp_path / f"{i:02}.json").write_bytes(b"x" * (SMALL + 1))  # one a hand-out: many trips through the pool
        tasks.append(Task(Source(str(tmp_path / f"{i:02}.json"), f"{i:02}.json"), work=_slow_work, settings=None))
    before = signal.getsignal(signal.SIGINT)
    outcomes = _in_pool(iter(tasks), 2, fail_fast=False)
    next(outcomes)
    os.kill(os.getpid(), signal.SIGINT)  # while the main thread waits on the pool
    with pytest.raises(KeyboardInterrupt) as raised:
        for _ in outcomes:
            pass
    assert raised.traceback[-1].path.name == "batch.py"  # not threading.py, where the wait was
    assert signal.getsignal(signal.SIGINT) is before
