"""`prune --archive` and `expand`: the originals come back exactly, only into their own transcript,
and the archive survives interruptions, full disks and hand edits."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson
import pytest

from transcompact.core.errors import InputError
from transcompact.formats import adapter as adapter_of
from transcompact.formats import dumps, loads, rewrites_lines
from transcompact.formats.claude_code import reader as claude_code
from transcompact.formats.claude_code import rewrites as claude_code_rewrites
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.pruning import archive
from transcompact.ops.pruning.expand import expand
from transcompact.ops.pruning.prune import PruneOptions, prune

from .builders import claude_log, prune_and_expand, run_cli, session
from .conftest import FIXTURES, supported_corpus_files

ALL_OPTIONS = PruneOptions(archive=True, clear_tool_inputs=True, clear_thinking=True)


@pytest.fixture(autouse=True)
def _in_tmp(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)








# --- expand(prune(x)) == x ---------------------------------------------------------------------


def test_archive_and_expand_give_the_input_back():
    Path("session.json").write_bytes(session())
    result = run_cli("prune", "--archive", "originals.jsonl", "--clear-tool-inputs", "session.json")
    assert result.exit_code == 0, result.stderr
    assert "[Tool output cleared — content was processed in earlier turns; archived as toolu_00]" in result.stdout
    assert "of 6000 chars; archived as toolu_04) ---" in result.stdout
    records = [json.loads(line) for line in Path("originals.jsonl").read_text().splitlines()]
    # One record per message prune changed: 8 results, 4 cleared inputs; each names the calls it holds.
    assert len(records) == 12 and {r["kind"] for r in records} == {"message"}
    assert sorted(id for r in records for id in r["tool_call_ids"]) == sorted(
        [f"toolu_{i:02d}" for i in range(8)] + [f"toolu_{i:02d}" for i in range(4)])
    assert set(records[0]) == {"kind", "file", "pruned_sha256", "pruned_bytes", "original_sha256", "path", "message",
                               "tool_call_ids", "original"}
    Path("pruned.json").write_bytes(result.stdout_bytes)
    expanded = run_cli("expand", "--archive", "originals.jsonl", "pruned.json")
    assert expanded.exit_code == 0, expanded.stderr
    assert expanded.stderr == "pruned.json: restored 12 originals from originals.jsonl\n"
    assert json.loads(expanded.stdout) == json.loads(session())


def test_ui_copies_and_thinking_come_back_byte_for_byte():
    Path("session.jsonl").write_bytes(claude_log())
    original, pruned, expanded = prune_and_expand("--prune-ui-copy", "--clear-thinking", "--clear-tool-inputs",
                                                  source="session.jsonl")
    assert b'"thinking"' not in pruned.split(b"msg_7")[0]  # the old thinking lines are gone
    assert pruned.count(b'"stdout"') < original.count(b'"stdout"')  # and old UI copies replaced
    assert expanded == original


def test_a_transcript_pruned_twice_comes_back_whole():
    Path("session.jsonl").write_bytes(claude_log())
    original = Path("session.jsonl").read_bytes()
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "--soft-trim-chars", "1000", "session.jsonl").exit_code == 0
    once = Path("session.jsonl").read_bytes()
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "--hard-clear-after", "1", "--keep-last", "0",
               "--clear-thinking", "session.jsonl").exit_code == 0
    assert Path("session.jsonl").read_bytes() != once
    result = run_cli("expand", "-i", "--archive", "originals.jsonl", "session.jsonl")
    assert result.exit_code == 0, result.stderr
    assert Path("session.jsonl").read_bytes() == original


def in_another_layout(data: bytes) -> bytes:
    """A request body as Python's json writes it (", " and ": ", non-ASCII escaped): no layout a rewrite keeps."""
    value = json.loads(data)
    value["messages"][0]["content"] = "Prüfe die Größe"
    return json.dumps(value).encode()


@pytest.mark.parametrize("second", [["prune", "--keep-last", "0", "--hard-clear-after", "0"],
                                    ["compact", "--emergency", "--force", "--keep-recent-tokens", "500"]])
@pytest.mark.parametrize("first", [["prune", "--soft-trim-chars", "1000"],
                                   ["compact", "--emergency", "--force", "--keep-recent-tokens", "2000"]])
def test_a_document_rewritten_twice_comes_back_whole(first, second):
    """A document's undone run gives back equal JSON, not its bytes: the run before is undone on it all the same."""
    original = in_another_layout(session())
    Path("session.json").write_bytes(original)
    for args in (first, second):
        result = run_cli(*args, "-q", "-i", "--archive", "originals.jsonl", "session.json")
        assert result.exit_code == 0, result.stderr
    result = run_cli("expand", "--archive", "originals.jsonl", "session.json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == json.loads(original)


def test_a_session_that_went_on_after_prune_still_gets_its_originals():
    Path("session.jsonl").write_bytes(claude_log())
    original = Path("session.jsonl").read_bytes()
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "session.jsonl").exit_code == 0
    more = b'{"type":"summary","summary":"later work","leafUuid":"line-30"}\n'
    with open("session.jsonl", "ab") as log:  # Claude Code appends to the log it resumed
        log.write(more)
    result = run_cli("expand", "-q", "--archive", "originals.jsonl", "session.jsonl")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == original + more


def test_two_sessions_sharing_an_archive_each_get_only_their_own_originals():
    # The same call ids, the same placeholders: only the archive's record of which bytes it wrote tells them apart.
    Path("a.jsonl").write_bytes(claude_log())
    Path("b.jsonl").write_bytes(claude_log().replace(b"of the output", b"of the OTHER output"))
    originals = {name: Path(name).read_bytes() for name in ("a.jsonl", "b.jsonl")}
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "a.jsonl", "b.jsonl").exit_code == 0
    for name in ("b.jsonl", "a.jsonl"):
        result = run_cli("expand", "--archive", "originals.jsonl", name)
        assert result.exit_code == 0, result.stderr
        assert result.stdout_bytes == originals[name]


def test_expand_leaves_a_transcript_the_archive_has_nothing_for_and_says_so():
    Path("a.jsonl").write_bytes(claude_log())
    Path("c.jsonl").write_bytes(claude_log(rounds=9))
    assert run_cli("prune", "-q", "--archive", "originals.jsonl", "a.jsonl").exit_code == 0
    result = run_cli("expand", "--archive", "originals.jsonl", "c.jsonl")
    assert result.exit_code == 0
    assert result.stdout_bytes == Path("c.jsonl").read_bytes()
    assert result.stderr.splitlines()[-1].startswith("c.jsonl: note: none of the 6 records is for this transcript")


@pytest.mark.parametrize(("content", "error"), [
    (b'{"messages": [{"role": "user", "content": "cut', "broken.json:1:47: malformed JSON: unexpected end of data"),
    (b'\x86\x01 not text', "broken.json:1:1: not valid UTF-8: byte 0x86 at byte offset 0"),
])
def test_expand_refuses_a_file_that_is_no_transcript_and_leaves_it_as_it_was(content, error):
    """As every command refuses it (exit 3): expand, which works on the bytes prune wrote, passed
    such a file through as one the archive had nothing for, exit 0, and a batch `-i` said it was fine."""
    Path("a.jsonl").write_bytes(claude_log())
    assert run_cli("prune", "-q", "--archive", "originals.jsonl", "a.jsonl").exit_code == 0
    Path("broken.json").write_bytes(content)
    for flags in ((), ("-i",), ("--diff",)):
        result = run_cli("expand", "--archive", "originals.jsonl", *flags, "broken.json")
        assert result.exit_code == 3
        assert result.stderr.splitlines()[0] == f"transcompact: error: {error}"
        assert Path("broken.json").read_bytes() == content


def test_prune_creates_the_archive_even_when_nothing_is_pruned():
    Path("short.jsonl").write_bytes(claude_log(rounds=1))
    result = run_cli("prune", "-q", "--archive", "originals.jsonl", "short.jsonl")
    assert result.exit_code == 0
    assert Path("originals.jsonl").read_bytes() == b""
    assert run_cli("expand", "-q", "--archive", "originals.jsonl", "short.jsonl").stdout_bytes == Path("short.jsonl").read_bytes()


def test_an_archive_already_there_is_left_as_it_is_when_nothing_is_pruned():
    Path("a.jsonl").write_bytes(claude_log())
    assert run_cli("prune", "-q", "-o", "a.pruned", "--archive", "originals.jsonl", "a.jsonl").exit_code == 0
    archived = Path("originals.jsonl").read_bytes()
    Path("short.jsonl").write_bytes(claude_log(rounds=1))
    assert run_cli("prune", "-q", "-o", "short.pruned", "--archive", "originals.jsonl", "short.jsonl").exit_code == 0
    assert Path("originals.jsonl").read_bytes() == archived
    assert run_cli("expand", "-q", "--archive", "originals.jsonl", "a.pruned").stdout_bytes == claude_log()


def test_an_archive_that_cannot_be_created_exits_5_naming_it():
    Path("short.jsonl").write_bytes(claude_log(rounds=1))
    result = run_cli("prune", "-q", "--archive", "missing/originals.jsonl", "short.jsonl")
    assert result.exit_code == 5
    assert result.stderr == ("transcompact: error: missing/originals.jsonl: cannot write the archive: "
                             "No such file or directory\n")
    assert result.stdout == ""


def test_without_a_lock_the_archive_is_created_all_the_same(monkeypatch):
    monkeypatch.setitem(sys.modules, "fcntl", None)  # as on Windows: no flock
    assert archive.add("originals.jsonl", []) is None
    assert Path("originals.jsonl").read_bytes() == b""


def test_the_library_prunes_into_an_archive_and_expands_from_it(tmp_path):
    data = claude_log()
    transcript = loads(data, "session.jsonl")
    pruned, _ = prune(transcript, ALL_OPTIONS)
    out = dumps(claude_code_rewrites.replace_ui_copies(pruned))
    archive.add(str(tmp_path / "originals.jsonl"), archive.records(data, out, transcript))
    assert expand(out, archive.read(str(tmp_path / "originals.jsonl")).records, "session.jsonl").data == data


@pytest.mark.parametrize("path", supported_corpus_files())
def test_expand_undoes_prune_on_the_corpus(path):
    data = path.read_bytes()
    transcript = loads(data, str(path))
    pruned, _ = prune(transcript, ALL_OPTIONS)
    if pruned.format == claude_code.NAME:
        pruned = claude_code_rewrites.replace_ui_copies(pruned)
    out = dumps(pruned)
    records = archive.parse(b"".join(orjson.dumps(r.as_json()) + b"\n" for r in archive.records(data, out, transcript)),
                            "originals.jsonl").records
    back = expand(out, records, str(path))
    assert back.restored == len(records)
    if rewrites_lines(transcript):  # a line format comes back byte for byte
        assert back.data == data
    else:
        assert orjson.loads(back.data) == orjson.loads(data)


# --- the archive file ------------------------------------------------------------------------


def test_a_full_disk_leaves_the_archive_and_the_transcript_as_they_were(monkeypatch):
    Path("a.jsonl").write_bytes(claude_log())
    Path("b.jsonl").write_bytes(claude_log(rounds=9))
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "a.jsonl").exit_code == 0
    archived, before = Path("originals.jsonl").read_bytes(), Path("b.jsonl").read_bytes()

    def full(fd):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr("os.fsync", full)  # where a full disk shows at the latest, for every file written
        result = run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "b.jsonl")
    assert result.exit_code == 5  # the new file is written first, then its original archived: it fails first
    assert result.stderr.startswith("transcompact: error: b.jsonl: cannot write: No space left on device")
    assert Path("originals.jsonl").read_bytes() == archived
    assert Path("b.jsonl").read_bytes() == before
    assert sorted(p.name for p in Path(".").iterdir()) == ["a.jsonl", "b.jsonl", "originals.jsonl"]


def test_a_torn_last_record_from_an_interrupted_write_is_left_out_with_a_warning():
    Path("a.jsonl").write_bytes(claude_log())
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "a.jsonl").exit_code == 0
    good = Path("originals.jsonl").read_bytes()
    Path("originals.jsonl").write_bytes(good + b'{"kind": "line", "file": "b.jsonl", "pruned_sha')  # an older writer, a full disk
    lines = good.count(b"\n") + 1
    result = run_cli("expand", "--archive", "originals.jsonl", "a.jsonl")
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == (f"originals.jsonl:{lines}: warning: left out a last line that was cut short "
                                             "(an earlier write did not finish)")
    assert result.stdout_bytes == claude_log()
    # The next prune drops the torn line: the archive is whole again.
    Path("b.jsonl").write_bytes(claude_log(rounds=9))
    assert run_cli("prune", "-q", "--archive", "originals.jsonl", "b.jsonl").exit_code == 0
    assert Path("originals.jsonl").read_bytes().startswith(good)
    assert archive.read("originals.jsonl").torn_line is None


LONG_SESSION = FIXTURES / "anthropic" / "long-session.json"


def pruned_long_session() -> tuple[bytes, list[bytes]]:
    """The long session with every result cleared (one record each, toolu_00 to toolu_13), and its archive's lines."""
    result = run_cli("prune", "-q", "--archive", "originals.jsonl", "--hard-clear-after", "0", "--keep-last", "0",
                 "-o", "pruned.json", str(LONG_SESSION))
    assert result.exit_code == 0, result.stderr
    lines = Path("originals.jsonl").read_bytes().splitlines(keepends=True)
    assert [json.loads(line)["tool_call_ids"] for line in lines] == [[f"toolu_{i:02d}"] for i in range(14)]
    return Path("pruned.json").read_bytes(), lines


@pytest.mark.parametrize("cut", ["mid-record", "whole records"])
def test_an_archive_cut_short_gives_nothing_back_and_names_the_results_that_stay_pruned(cut):
    """A crash while records were appended: expand restored the records still there, left the rest
    pruned without a word and exited 0. It is exit 3 now, naming each result that would stay
    pruned, and the transcript is left as prune wrote it, so that a whole archive still applies."""
    pruned, lines = pruned_long_session()
    kept = b"".join(lines[:6]) + (lines[6][:len(lines[6]) // 2] if cut == "mid-record" else b"")
    Path("originals.jsonl").write_bytes(kept)
    result = run_cli("expand", "--archive", "originals.jsonl", "--report", "report.jsonl", "-i", "pruned.json")
    assert result.exit_code == 3
    stays = ("8 results would stay pruned: toolu_06 (message 14), toolu_07 (message 18), toolu_08 (message 20), "
             "toolu_09 (message 22), toolu_10 (message 24), toolu_11 (message 26), toolu_12 (message 28), "
             "toolu_13 (message 30)")
    why = " (its last record, cut short, was one)" if cut == "mid-record" else ""
    error = f"pruned.json: the archive cannot give it back whole: records of the run that wrote it are missing{why}; {stays}"
    assert result.stderr.splitlines()[-2:] == [
        f"transcompact: error: {error}",
        "hint: expand it with the whole archive that run wrote: it is left as it is, so that it still can"]
    report = json.loads(Path("report.jsonl").read_text())
    assert (report["status"], report["exit"], report["written"], report["error"]) == ("failed", 3, False, error)
    assert Path("pruned.json").read_bytes() == pruned
    # The whole archive still gives it back.
    Path("originals.jsonl").write_bytes(b"".join(lines))
    assert run_cli("expand", "-q", "--archive", "originals.jsonl", "-i", "pruned.json").exit_code == 0
    assert Path("pruned.json").read_bytes() == LONG_SESSION.read_bytes()


def test_a_log_whose_archive_was_cut_short_is_named_as_such_not_as_changed():
    Path("a.jsonl").write_bytes(claude_log())
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "a.jsonl").exit_code == 0
    lines = Path("originals.jsonl").read_bytes().splitlines(keepends=True)
    last = json.loads(lines[-1])
    assert last["tool_call_ids"] == ["toolu_05"] and last["kind"] == "line"
    Path("originals.jsonl").write_bytes(b"".join(lines[:-1]) + lines[-1][:300])
    result = run_cli("expand", "--archive", "originals.jsonl", "a.jsonl")
    assert result.exit_code == 3 and result.stdout == ""
    assert ("a.jsonl: the archive cannot give it back whole: records of the run that wrote it are missing (its last "
            "record, cut short, was one); 1 result would stay pruned: toolu_05 (message 12)") in result.stderr


def test_a_compaction_whose_record_was_cut_short_is_not_taken_for_another_transcript():
    Path("session.jsonl").write_bytes(claude_log(rounds=12))
    assert run_cli("compact", "-q", "--emergency", "--force", "--keep-recent-tokens", "1000", "-i",
               "--archive", "originals.jsonl", "session.jsonl").exit_code == 0
    record = Path("originals.jsonl").read_bytes()
    assert record.count(b"\n") == 1 and b'"compaction"' in record
    Path("originals.jsonl").write_bytes(record[:400])  # the one record of the run, cut short
    result = run_cli("expand", "--archive", "originals.jsonl", "session.jsonl")
    assert result.exit_code == 3
    assert ("session.jsonl: the archive cannot give it back whole: records of the run that wrote it are missing "
            "(its last record, cut short, was one)\n") in result.stderr
    Path("originals.jsonl").write_bytes(record[:40])  # cut before it says what it applies to: no telling
    assert run_cli("expand", "--archive", "originals.jsonl", "session.jsonl").exit_code == 0


def test_a_pruned_transcript_the_archive_has_no_record_for_is_not_given_back():
    """Its results name the archive they went to; this one has none of them (another archive's, or lost)."""
    pruned, lines = pruned_long_session()
    Path("other.jsonl").write_bytes(claude_log())
    assert run_cli("prune", "-q", "-i", "--archive", "elsewhere.jsonl", "other.jsonl").exit_code == 0
    result = run_cli("expand", "--archive", "elsewhere.jsonl", "pruned.json")
    assert result.exit_code == 3
    assert ("pruned.json: the archive cannot give it back whole: it holds no record of the run that wrote it (they "
            "were lost, or written into another archive, or the transcript was changed since); 14 results would stay "
            "pruned: toolu_00 (message 2), ") in result.stderr and ", and 4 more\n" in result.stderr


def test_a_torn_record_says_what_it_applied_to_when_it_got_that_far():
    _, lines = pruned_long_session()
    whole = archive.parse(b"".join(lines), "originals.jsonl")
    run_of_it = whole.records[0].run
    for size, told in ((60, False), (len(lines[-1]) // 2, True)):
        torn = archive.parse(b"".join(lines[:-1]) + lines[-1][:size], "originals.jsonl")
        assert torn.torn_line == 14 and torn.records == whole.records[:-1]
        assert torn.torn_pruned == ((run_of_it.pruned_sha256, run_of_it.pruned_bytes) if told else None)
    with pytest.raises(InputError, match="records of the run that wrote it are missing .its last record, cut short"):
        expand(Path("pruned.json").read_bytes(), torn.records, "pruned.json", torn=torn.torn_pruned)


@pytest.mark.parametrize("field, value, message", [
    ("original", None, "`original` must be a string, not null"),
    ("original", 7, "`original` must be a string, not a number"),
    ("kind", ["line"], "`kind` must be a string, not an array"),
    ("kind", "result", "`kind` must be one of line, removed-line, message, compaction, slim, not 'result'"),
    ("tool_call_ids", "toolu_01", "`tool_call_ids` must be a list of strings, not a string"),
    ("line", 0, "`line` must be a line number, not a number"),
    ("pruned_sha256", "abc", "`pruned_sha256` must be a SHA-256 in hex, not a string"),
    ("keep", None, "`keep` is missing"),
])
def test_a_changed_archive_record_is_an_input_error_naming_its_line(field, value, message):
    Path("a.jsonl").write_bytes(claude_log())
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "a.jsonl").exit_code == 0
    lines = Path("originals.jsonl").read_bytes().splitlines()
    record = json.loads(lines[1])
    assert record["kind"] == "line"
    if value is None and field == "keep":
        del record[field]
    else:
        record[field] = value
    lines[1] = orjson.dumps(record)
    Path("originals.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    for args in (["expand", "--archive", "originals.jsonl", "a.jsonl"], ["prune", "--archive", "originals.jsonl", "a.jsonl"]):
        result = run_cli(*args)
        assert result.exit_code == 3
        assert result.stderr.splitlines()[0] == f"transcompact: error: originals.jsonl:2: archive record: {message}"


def test_a_malformed_archive_line_names_the_line():
    Path("a.jsonl").write_text('{"kind": "result"}\n')
    Path("originals.jsonl").write_text('[]\n{oops\n')
    result = run_cli("expand", "--archive", "originals.jsonl", "a.jsonl")
    assert result.exit_code == 3
    assert result.stderr.startswith("transcompact: error: originals.jsonl:1: an archive record must be an object, not an array")
    Path("originals.jsonl").write_text('{oops\n{}\n')
    malformed = run_cli("expand", "--archive", "originals.jsonl", "a.jsonl").stderr.splitlines()
    assert malformed[0].startswith("transcompact: error: originals.jsonl:1:2: malformed JSON line: ")
    assert malformed[1] == ("hint: --archive originals.jsonl is read as an archive, the originals prune, compact and slim put "
                            "aside, one JSON object a line: this is none")  # (a transcript given as the archive, say)


def test_records_that_do_not_give_back_what_prune_read_are_refused():
    Path("a.jsonl").write_bytes(claude_log())
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "a.jsonl").exit_code == 0
    text = Path("originals.jsonl").read_text()
    Path("originals.jsonl").write_text(text.replace("line 0.1 of the output", "line 0.1 of the FORGED output", 1))
    result = run_cli("expand", "--archive", "originals.jsonl", "a.jsonl")
    assert result.exit_code == 3
    assert result.stderr.startswith("transcompact: error: a.jsonl: the archive's records for it do not give back what "
                                    "prune read: the archive was changed")


# --- compact --archive ------------------------------------------------------------------------


def test_prune_then_compact_twice_then_expand_gives_the_session_back_and_keeps_what_came_after():
    Path("session.jsonl").write_bytes(claude_log(rounds=12))
    original = Path("session.jsonl").read_bytes()
    assert run_cli("prune", "-q", "-i", "--archive", "originals.jsonl", "session.jsonl").exit_code == 0
    for keep in ("3000", "1000"):
        result = run_cli("compact", "-q", "--emergency", "--force", "--keep-recent-tokens", keep, "-i",
                     "--archive", "originals.jsonl", "session.jsonl")
        assert result.exit_code == 0, result.stderr
    assert len([line for line in Path("originals.jsonl").read_text().splitlines() if '"compaction"' in line]) == 2
    more = b'{"type":"summary","summary":"later work","leafUuid":"line-30"}\n'
    with open("session.jsonl", "ab") as log:  # the session went on after its compaction
        log.write(more)
    result = run_cli("expand", "--archive", "originals.jsonl", "session.jsonl")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == original + more


@pytest.mark.parametrize("log", ["claude-code", "pi"])
def test_a_session_resumed_after_compact_hangs_from_its_restored_leaf_once_expanded(log, tmp_path):
    """An agent resumed the compacted log and went on: its line hangs from the compaction's copy of
    the recent part. Expanded, the original comes back and that line hangs from the original's last
    line, one path with it (found using the tool as a user: it named a line expand took out, C3)."""
    if log == "claude-code":
        original, own, parent = claude_log(rounds=12), "uuid", "parentUuid"
    else:
        original, own, parent = (FIXTURES / "pi/2026-01-10T09-00-00-000Z_4f1c2a9e-6b1d-4c0e-9a51-0c3f5e2b7d11.jsonl").read_bytes(), "id", "parentId"
    Path("session.jsonl").write_bytes(original)
    result = run_cli("compact", "-q", "--emergency", "--force", "--keep-recent-tokens", "300", "-i", "--archive", "a.jsonl", "session.jsonl")
    assert result.exit_code == 0, result.stderr
    compacted = Path("session.jsonl").read_bytes()
    last = orjson.loads(compacted.splitlines()[-1])
    went_on = {"type": "message", "id": "cont0001", "parentId": last["id"], "timestamp": "2030-01-01T00:00:00.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": "Go on."}], "timestamp": 1}} if log == "pi" else \
        {"parentUuid": last["uuid"], "isSidechain": False, "type": "user", "message": {"role": "user", "content": "Go on."},
         "uuid": "line-cont", "timestamp": "2030-01-01T00:00:00.000Z", "sessionId": last["sessionId"]}
    Path("session.jsonl").write_bytes(compacted + orjson.dumps(went_on) + b"\n")
    result = run_cli("expand", "--archive", "a.jsonl", "session.jsonl")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes.startswith(original)
    (added,) = [orjson.loads(line) for line in result.stdout_bytes[len(original):].splitlines()]
    leaf = loads(original, "session.jsonl")
    assert added[parent] == adapter_of(leaf).leaf_of(leaf) and added[own] == went_on[own]
    Path("expanded.jsonl").write_bytes(result.stdout_bytes)
    expanded = loads(result.stdout_bytes, "expanded.jsonl")  # the original's path, then the line added (a user turn of its own or not)
    assert expanded.messages[:len(leaf.messages) - 1] == leaf.messages[:-1] and "Go on." in str(expanded.messages[-1].blocks)
    assert run_cli("check", "-q", "expanded.jsonl").exit_code == run_cli("check", "-q", "session.jsonl").exit_code == 0


def test_compact_archive_refuses_to_go_with_to():
    Path("session.jsonl").write_bytes(claude_log())
    result = run_cli("compact", "--emergency", "--archive", "a.jsonl", "--to", "openai", "session.jsonl")
    assert result.exit_code == 2 and "--archive and --to cannot be used together" in result.stderr


@pytest.mark.parametrize("path", supported_corpus_files())
def test_expand_undoes_compact_on_the_corpus(path):
    data = path.read_bytes()
    transcript = loads(data, str(path))
    compacted, report = compact(transcript, CompactOptions(force=True, emergency=True,
                                                           summary=SummaryOptions(keep_recent_tokens=500)))
    out = dumps(compacted)
    records = archive.parse(b"".join(orjson.dumps(r.as_json()) + b"\n" for r in archive.compaction_record(data, out, str(path))),
                            "originals.jsonl").records
    assert len(records) == (out != data)
    assert expand(out, records, str(path)).data == data  # byte for byte, whatever the format


def test_a_message_that_is_a_number_is_archived_as_it_is(tmp_path):
    """A legacy Gemini chat whose messages hold a 0 (a hand edit, a fuzz find): `prune --archive`
    took any value that was no object, list, string or null for a message's bytes (exit 70)."""
    chat = json.loads((FIXTURES / "gemini/session-2025-12-16T23-47-b4f17607.json").read_bytes())
    chat["messages"][1]["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"] = "x" * 9000
    chat["messages"].insert(2, 0)
    source = tmp_path / "chat.json"
    source.write_bytes(json.dumps(chat, indent=2).encode())
    pruned = run_cli("prune", "-q", "--archive", tmp_path / "archive.jsonl", "--keep-last", "0", source)
    assert pruned.exit_code == 0, pruned.stderr
    (tmp_path / "pruned.json").write_bytes(pruned.stdout_bytes)
    expanded = run_cli("expand", "-q", "--archive", tmp_path / "archive.jsonl", tmp_path / "pruned.json")
    assert expanded.exit_code == 0 and expanded.stdout_bytes == source.read_bytes()
