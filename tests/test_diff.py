"""`--diff` (docs/input-output.md#diffs): what a rewrite would remove or replace, per message and
block, on stdout as text or JSON, for one input or many; and nothing is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from transcompact import CompactOptions, PruneOptions, SummaryOptions, compact, load, prune
from transcompact.core.errors import ExitCode
from transcompact.core.model import ASSISTANT, USER, Message, Text, ToolCall, ToolResult, Transcript
from transcompact.ops.diff import EXCERPT_CHARS, diff, excerpt

from .builders import run_cli as run
from .conftest import FIXTURES

LONG = "fixtures/anthropic/long-session.json"
EMERGENCY = ["compact", "--emergency", "--force", "--keep-recent-tokens", "3000"]


class TextSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "txt"




def contents(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(directory).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*")) if p.is_file()}


# --- the library ---------------------------------------------------------------------------------


def test_a_transcript_against_itself_has_no_change():
    transcript = load(FIXTURES / "anthropic/every-block.json")
    assert diff(transcript, transcript) == []


def test_prune_changes_the_cleared_results_in_place():
    transcript = load(FIXTURES / "anthropic/long-session.json")
    pruned, report = prune(transcript)
    changes = diff(transcript, pruned)
    assert len(changes) == report.cleared
    for change in changes:
        assert change.action == "changed" and change.index_before == change.index_after
        (block,) = change.blocks
        assert (block.action, block.kind) == ("replaced", "tool_result")
        assert block.excerpt_after.startswith("[Tool output cleared — content was processed in earlier turns]")  # its key lines after
        assert block.tokens_after < block.tokens_before
        assert block.tool_call_id == pruned.messages[change.index_after].blocks[0].tool_call_id


def test_a_rewrite_one_for_one_is_matched_by_position_not_by_the_sequence_matcher(monkeypatch):
    """Found using prune --diff as a user: a long transcript of repeated messages took the square
    of its length in difflib (8,000 messages 11 s, 51,000 more than 10 minutes)."""
    import transcompact.ops.diff as module

    transcript = load(FIXTURES / "anthropic/long-session.json")
    pruned, report = prune(transcript)
    expected = diff(transcript, pruned)
    monkeypatch.setattr(module, "SequenceMatcher", None)  # (called, it would raise)
    assert diff(transcript, pruned) == expected and len(expected) == report.cleared


def test_a_soft_trimmed_result_shows_its_marker_from_where_it_differs():
    transcript = load(FIXTURES / "anthropic/long-session.json")
    trimmed, _ = prune(transcript, PruneOptions(soft_trim_chars=1000, head=200, tail=200, hard_clear_after=100))
    block = diff(transcript, trimmed)[0].blocks[0]
    assert block.excerpt_after.startswith("…") and "--- trimmed (kept 200 head + 200 tail of 2500 chars) ---" in block.excerpt_after
    assert block.excerpt_before.startswith(block.excerpt_after[:12])  # the same context before the difference


def test_a_compaction_removes_the_old_part_and_adds_the_summary():
    transcript = load(FIXTURES / "anthropic/long-session.json")
    compacted, report = compact(transcript, CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=3000)))
    changes = diff(transcript, compacted)
    removed = [c.index_before for c in changes if c.action == "removed"]
    added = [c for c in changes if c.action == "added"]
    assert removed == list(range(report.cut))  # the prefix
    assert [c.index_after for c in added] == [0]
    assert added[0].blocks[0].excerpt_after.startswith("[Previous conversation summary] ## Goal")
    assert not [c for c in changes if c.action == "changed"]  # the recent window is kept verbatim


def test_what_survives_a_rewrite_matches_and_a_renamed_id_is_replaced_in_place():
    call, result = ToolCall("t1", "ls", {"path": "."}), ToolResult("t1", "a\nb")
    before = Transcript("anthropic", "anthropic", (
        Message(USER, (Text("list it"),)),
        Message(ASSISTANT, (Text(""), Text("Listing."), call)),
        Message(USER, (result,)),
        Message(ASSISTANT, (ToolCall("t1", "ls", {}),)),
    ))
    after = before.with_messages([
        before.messages[0],
        Message(ASSISTANT, (Text("Listing."), call)),  # an empty text block removed
        before.messages[2],
        Message(ASSISTANT, (ToolCall("t1_2", "ls", {}),)),  # an id used twice, renamed
    ])
    first, second = diff(before, after)
    assert (first.action, first.index_before, first.index_after) == ("changed", 1, 1)
    assert [(b.action, b.kind, b.block_before) for b in first.blocks] == [("removed", "text", 0)]
    assert (second.action, second.index_before) == ("changed", 3)
    (renamed,) = second.blocks
    # The id it has now, and the one it had (both lines showed the old one: found using repair --diff as a user).
    assert (renamed.action, renamed.tool_call_id, renamed.tool_call_id_before, renamed.excerpt_before, renamed.excerpt_after) == (
        "replaced", "t1_2", "t1", "ls {}", "ls {}")


def test_an_excerpt_is_one_line_from_the_first_difference():
    assert excerpt("a\n\n  b\tc") == "a b c"
    long = "x" * 1000
    assert excerpt(long) == "x" * EXCERPT_CHARS + "…"
    assert excerpt("0123456789", 4) == "…456789"


# --- the command line ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["prune"], EMERGENCY], ids=["prune", "compact --emergency"])
def test_the_text_view(command, in_root, snapshot):
    before = Path(LONG).read_bytes()
    result = run(*command, "--diff", LONG)
    assert result.exit_code == 0, result.stderr
    assert "dry run" not in result.stderr  # the diff on stdout stands in for the transcript
    assert result.stdout == snapshot(extension_class=TextSnapshot)
    assert Path(LONG).read_bytes() == before


def test_the_json_view_is_the_one_report_shape(in_root):
    result = run(*EMERGENCY, "-q", "--diff", "--json", LONG, "fixtures/anthropic/tool-loop.json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report) == ["version", "command", "files"] and report["command"] == "compact"
    assert [(f["file"], list(f)) for f in report["files"]] == [(LONG, ["file", "changes"]),
                                                               ("fixtures/anthropic/tool-loop.json", ["file", "changes"])]
    changes = report["files"][0]["changes"]
    assert report["files"][1]["changes"] == []  # nothing to compact
    assert list(changes[0]) == ["action", "role", "index_before", "index_after", "tokens_before", "tokens_after", "blocks"]
    assert list(changes[0]["blocks"][0]) == ["action", "kind", "block_before", "block_after", "tokens_before",
                                             "tokens_after", "excerpt_before", "excerpt_after", "tool", "tool_call_id", "tool_call_id_before"]
    assert {c["action"] for c in changes} == {"removed", "added"}


def test_several_inputs_get_a_header_each_and_need_no_target(tmp_path):
    logs = tmp_path / "logs"
    for name, fixture in {"a.json": "anthropic/long-session.json", "b.json": "anthropic/tool-loop.json",
                          "c.json": "anthropic/orphans.json"}.items():
        (logs / name).parent.mkdir(exist_ok=True)
        shutil.copy(FIXTURES / fixture, logs / name)
    result = run("repair", "--diff", str(logs))
    assert result.exit_code == 0, result.stderr
    headers = [line for line in result.stdout.splitlines() if line.startswith(("---", "+++"))]
    assert headers == [f"--- {logs / 'c.json'}", f"+++ {logs / 'c.json'}"]  # only what changes, as `diff -r`
    result = run("prune", "--diff", str(logs / "c.json"), str(logs / "a.json"))
    headers = [line[4:] for line in result.stdout.splitlines() if line.startswith("--- ")]
    assert headers == [str(logs / "a.json")]
    assert "1 would be pruned, 1 unchanged, 0 failed" in result.stderr


def test_no_file_changes_not_even_the_archive_but_the_report_is_written(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a.json", "b.json"):
        shutil.copy(FIXTURES / "anthropic/long-session.json", logs / name)
    before = contents(logs)
    archive, report = tmp_path / "archive.jsonl", tmp_path / "report.jsonl"
    result = run("prune", "-i", "--diff", "--archive", str(archive), "--report", str(report), str(logs))
    assert result.exit_code == 0, result.stderr
    assert contents(logs) == before and not archive.exists()
    assert f"{logs / 'a.json'}: dry run: would write {logs / 'a.json'}" in result.stderr  # -i says where it would go
    assert result.stdout.count("\n--- ") + result.stdout.startswith("--- ") == 2
    lines = [json.loads(line) for line in report.read_bytes().splitlines()]
    assert [(line["status"], line["written"]) for line in lines] == [("changed", False)] * 2
    out = tmp_path / "out"
    assert run(*EMERGENCY, "--diff", "--output-dir", str(out), str(logs)).exit_code == 0 and not out.exists()


def test_expand_shows_the_originals_coming_back(tmp_path):
    archive, pruned = tmp_path / "archive.jsonl", tmp_path / "pruned.json"
    assert run("prune", "-q", "--archive", str(archive), "-o", str(pruned), str(FIXTURES / LONG.removeprefix("fixtures/"))).exit_code == 0
    result = run("expand", "-q", "--diff", "--json", "--archive", str(archive), str(pruned))
    assert result.exit_code == 0, result.stderr
    (entry,) = json.loads(result.stdout)["files"]
    assert entry["changes"] and all(b["excerpt_before"].startswith("[Tool output cleared")
                                    for c in entry["changes"] for b in c["blocks"])


def test_json_without_diff_is_a_usage_error():
    result = run("prune", "--json", str(FIXTURES / "anthropic/tool-loop.json"))
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.splitlines()[0] == "transcompact: error: --json shows the changes --diff finds: use it with --diff"
    assert result.stdout == ""


def test_a_log_whose_lines_change_but_no_message_gets_its_header_and_says_so(tmp_path):
    """repair of a line whose parent is missing (made a root): the file changes, no message does;
    --diff printed nothing, as for a file left as it is (found using repair as a user)."""
    lines = (FIXTURES / "claude-code/broken-session.jsonl").read_bytes().splitlines(keepends=True)
    at = max(i for i, line in enumerate(lines) if isinstance(json.loads(line).get("parentUuid"), str))
    parent = json.loads(lines[at])["parentUuid"]
    lines[at] = lines[at].replace(parent.encode(), b"00000000-dead-beef-0000-000000000000")
    log = tmp_path / "s.jsonl"
    log.write_bytes(b"".join(lines))
    assert run("repair", "-q", str(log)).stdout_bytes != log.read_bytes()
    result = run("repair", "-q", "--diff", str(log))
    assert result.stdout.splitlines() == [f"--- {log}", f"+++ {log}",
                                          "@@ no message changes: only how the log's lines hold them (links, ids, order) @@"]
