"""The pi format on its own: which sessions it takes, the messages pi would send (the path to the
leaf, after its newest compaction; versions 1 and 2 migrated), a write that keeps every line it
did not change byte for byte, recorded usage, and a compaction appended as pi appends its own,
which pi's own way of building the context (rebuilt below from upstream `session-manager.ts` and
`messages.ts`) resumes: our summary, then the kept window, every call answered."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transcompact import PruneOptions, check, compact, convert, dumps, estimate, loads, prune, repair
from transcompact.cli.main import cli
from transcompact.core.errors import PostConditionError, ShapeError
from transcompact.core.jsondata import parse
from transcompact.core.model import RedactedThinking, Text, ToolCall, ToolResult, result_text
from transcompact.core.summary_text import SUMMARY_PREFIX
from transcompact.counting.calibrate import recorded_usage, usage_tokens
from transcompact.counting.counter import Options as EstimateOptions
from transcompact.formats import detect
from transcompact.formats.pi import reader as pi
from transcompact.formats.pi import writer as pi_writer
from transcompact.ops.compaction.compact import CompactOptions
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.compaction.summary_message import is_summary_message
from transcompact.ops.validity.check import errors
from transcompact.ops.validity.postcondition import verified

from .conftest import CORPUS, FIXTURES

TOOLS = FIXTURES / "pi" / "2026-01-10T09-00-00-000Z_4f1c2a9e-6b1d-4c0e-9a51-0c3f5e2b7d11.jsonl"
COMPACTED = FIXTURES / "pi" / "2026-01-11T10-00-00-000Z_7a0e4c2b-3d5f-4e8a-b1c9-2f6d8e0a4b13.jsonl"
VERSION_2 = FIXTURES / "pi" / "2025-12-20T08-00-00-000Z_5b8d1f3a-9c2e-4a6b-8d0f-1e3a5c7b9d24.jsonl"
VERSION_1 = FIXTURES / "pi" / "2025-11-20T23-00-00-000Z_2c4e6a8b-1d3f-4b5c-9e7a-0f2d4b6c8e35.jsonl"
FIXTURE_FILES = sorted((FIXTURES / "pi").glob("*.jsonl"))
LARGE = CORPUS / "trajectories" / "pi-coding-agent-large-session.jsonl"


def read(path):
    return loads(path.read_bytes(), str(path))


def texts(transcript) -> list[str]:
    return ["".join(b.text for b in m.blocks if isinstance(b, Text)) for m in transcript.messages]


# --- detection and round trip ------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name[:24])
def test_every_fixture_is_read_as_pi_and_written_back_byte_for_byte(path):
    data = path.read_bytes()
    assert detect(parse(data, path.name)) == "pi"
    transcript = loads(data, path.name)
    assert transcript.format == "pi" and transcript.dialect == "anthropic"
    assert dumps(transcript) == data
    assert errors(check(transcript)) == []


def test_other_formats_files_are_not_taken():
    others = [p for p in sorted(FIXTURES.glob("*/*")) if p.parent.name != "pi" and p.is_file()]
    assert others and not any(pi.detect(parse(p.read_bytes(), p.name)) for p in others)
    # A header alone is not enough: entries must be typed objects.
    assert not pi.detect(parse(b'{"type":"session","id":"s"}\n{"role":"user","content":"hi"}\n', "x"))
    assert not pi.detect(parse(b'{"type":"session","version":3}\n', "x"))  # pi wants a string id


@pytest.mark.skipif(not LARGE.is_file(), reason="the shared corpus is not present")
def test_the_corpus_session_version_1_is_read_linear():
    data = LARGE.read_bytes()
    transcript = loads(data, LARGE.name)
    assert transcript.format == "pi" and transcript.source.version == 1
    assert dumps(transcript) == data
    # pi does not send an assistant message that ended in error or was aborted (pi-ai transformMessages).
    stops = [json.loads(line)["message"].get("stopReason") for line in data.splitlines() if b'"role":"assistant"' in line]
    assert sum(m.role == "assistant" for m in transcript.messages) == sum(s not in ("error", "aborted") for s in stops)


# --- the active view ---------------------------------------------------------------------------


def test_the_view_follows_the_path_to_the_leaf_with_the_branch_summary():
    transcript = read(TOOLS)
    said = texts(transcript)
    assert said[0] == "The test for add() fails in calc.py. Fix it."
    # The `!` command is sent as user text; the abandoned branch (ops.py) is not sent, its summary is.
    assert said[6].startswith("Ran `python -m pytest -q`\n```\n1 passed in 0.01s\n```")
    assert said[7].startswith(pi.BRANCH_SUMMARY_PREFIX + "Wrote subtract() into a new ops.py")
    assert not any("toolu_01WriteOps" in str(m.blocks) for m in transcript.messages)
    # An extension's custom_message is sent as user text; custom, label and session_info entries are not.
    assert said[9] == "Keep functions in calc.py sorted by name."
    assert [m.role for m in transcript.messages] == ["user", "assistant", "user", "assistant", "user", "assistant",
                                                     "user", "user", "user", "user", "assistant", "user", "assistant"]
    calls = [b for m in transcript.messages for b in m.blocks if isinstance(b, ToolCall)]
    assert [c.input["path"] for c in calls] == ["calc.py"] * 3


def test_after_a_compaction_the_summary_then_the_kept_entries_then_the_rest():
    transcript = read(COMPACTED)
    said = texts(transcript)
    assert said[0] == SUMMARY_PREFIX + "## Goal\nMake the tests of calc.py pass.\n\n## Progress\n- Listed the files: calc.py, test_calc.py."
    assert is_summary_message(transcript.messages[0])
    assert said[1] == "Run the tests."  # firstKeptEntryId; `ls` and its answer are summarized
    assert said[-1] == "Fixed."
    assert [m.line for m in transcript.messages] == [10, 6, 7, 8, 9, 11, 12, 13, 14]


def test_version_1_compaction_keeps_from_its_index_and_aborted_replies_are_not_sent():
    transcript = read(VERSION_1)
    assert texts(transcript) == [SUMMARY_PREFIX + "The user asked to see calc.py; add() subtracted.",
                                 "Fix it.", "", "", "Fixed add()."]
    assert transcript.messages[3].blocks[0].tool_call_id == "toolu_01V1Edit"


def test_version_2_hook_messages_are_sent_as_user_text():
    transcript = read(VERSION_2)
    assert [m.role for m in transcript.messages] == ["user", "user", "assistant", "user", "assistant"]
    assert texts(transcript)[1] == "calc.py is modified."


# --- writing -----------------------------------------------------------------------------------


def test_a_changed_result_rewrites_its_line_and_the_context_size_of_the_replies_after_it():
    data = TOOLS.read_bytes()
    transcript = loads(data, TOOLS.name)
    index = next(i for i, m in enumerate(transcript.messages) if m.is_tool_result_message)
    message = transcript.messages[index]
    shorter = message.with_blocks((ToolResult("toolu_01ReadCalc", "[cleared]", False),))
    out = dumps(transcript.with_messages([*transcript.messages[:index], shorter, *transcript.messages[index + 1:]]))
    before, after = data.split(b"\n"), out.split(b"\n")
    changed = [k for k, (a, b) in enumerate(zip(before, after)) if a != b]
    assert len(before) == len(after) and changed[0] == message.line - 1
    entry = json.loads(after[changed[0]])
    assert entry["message"]["content"] == [{"type": "text", "text": "[cleared]"}]
    assert {k: v for k, v in entry["message"].items() if k != "content"} == \
        {k: v for k, v in json.loads(before[changed[0]])["message"].items() if k != "content"}
    # Each reply sent after it on the path counted the 23 characters cleared: its totalTokens, by
    # which pi judges its context, is 6 tokens less; the billed parts stay.
    replies = [m.line - 1 for m in transcript.messages[index + 1:] if m.role == "assistant"]
    assert changed[1:] == replies
    for k in replies:
        old, new = json.loads(before[k])["message"]["usage"], json.loads(after[k])["message"]["usage"]
        assert new == {**old, "totalTokens": old["totalTokens"] - 6}


@pytest.mark.parametrize("lazily", ["logs", False], ids=["viewed", "read whole"])
def test_a_restated_reply_keeps_every_byte_of_its_line_but_the_figure(lazily):
    """Read as prune reads it (each message entry's line viewed, not parsed) or whole: a reply
    whose context the change shrank keeps its line as pi wrote it (an escaped slash, a cost as
    JavaScript writes it) but for its usage's `totalTokens`; a reply of an older pi, which wrote
    none, has it added last to its usage."""
    lines = TOOLS.read_bytes().split(b"\n")
    replies = [k for k, line in enumerate(lines) if b'"role":"assistant"' in line]
    spelled, without = replies[1], replies[2]
    lines[spelled] = lines[spelled].replace(b'"cacheRead":0,"cacheWrite":0,"total":0}', b'"cacheRead":0.000009,"cacheWrite":0,"total":0.000009}')
    lines[spelled] = lines[spelled].replace(b'"text":"', b'"text":"a\\/b ', 1)
    lines[without] = lines[without].replace(b'"totalTokens":2300,', b"")
    data = b"\n".join(lines)
    transcript = loads(data, TOOLS.name, lazily=lazily)
    assert next(m for m in transcript.messages if m.line == spelled + 1).is_read is not bool(lazily)  # its line viewed
    index = next(i for i, m in enumerate(transcript.messages) if m.is_tool_result_message)
    shorter = transcript.messages[index].with_blocks((ToolResult("toolu_01ReadCalc", "[cleared]", False),))
    after = dumps(transcript.with_messages([*transcript.messages[:index], shorter, *transcript.messages[index + 1:]])).split(b"\n")
    assert after[spelled] == lines[spelled].replace(b'"totalTokens":2220', b'"totalTokens":2214')
    assert after[without] == lines[without].replace(b'"total":0}}', b'"total":0},"totalTokens":2294}')



@pytest.mark.parametrize("lazily", ["logs", False], ids=["viewed", "read whole"])
def test_a_changed_entry_whose_parent_is_dropped_is_relinked_with_its_change(lazily):
    """An entry that both changed and lost its parent is written with its new content and its
    new `parentId`, every other field as pi wrote it (a cost as JavaScript spells it): the write
    makes it from its line as first written, not from the entry held whole."""
    lines = TOOLS.read_bytes().split(b"\n")
    reply = next(k for k, line in enumerate(lines) if b'"role":"assistant"' in line)
    lines[reply] = lines[reply].replace(b'"cacheRead":0,"cacheWrite":0,"total":0}', b'"cacheRead":0.000009,"cacheWrite":0,"total":0.000009}')
    data = b"\n".join(lines)
    transcript = loads(data, TOOLS.name, lazily=lazily)
    first, answer = transcript.messages[:2]  # the user's request (its entry the reply's parent), the reply
    assert first.line == reply and answer.line == reply + 1
    changed = answer.with_blocks(tuple(Text("Reading calc.py.") if isinstance(b, Text) else b for b in answer.blocks))
    out = dumps(transcript.with_messages([changed, *transcript.messages[2:]])).split(b"\n")
    assert lines[reply - 1] not in out  # the request's entry is gone
    written = next(line for line in out if b'"id":"d4e5f6a7"' in line)
    # (and its context, by which pi judges it, less the request dropped before it: 44 characters, 11 tokens)
    assert written == lines[reply].replace(b'"parentId":"c3d4e5f6"', b'"parentId":"b2c3d4e5"').replace(
        b'"text":"Let me read calc.py."', b'"text":"Reading calc.py."').replace(b'"totalTokens":2160', b'"totalTokens":2149')



@pytest.mark.parametrize("lazily", ["logs", False], ids=["viewed", "read whole"])
def test_a_cleared_result_keeps_its_details_in_the_file_and_not_in_memory(lazily):
    """A result's `details` (the tool's own record of the call: a diff, a truncation) stays in its
    entry as pi wrote it when the result is cleared, read again from its line by the write; the
    cleared message holds neither the content nor the details it was read with (a large prune's
    thousands are not held until the file is written)."""
    lines = TOOLS.read_bytes().split(b"\n")
    at = next(k for k, line in enumerate(lines) if b'"role":"toolResult"' in line)
    details = b'"details":{"diff":"-    return a - b\\n+    return a + b\\n","lines":[1,2.50]},'
    lines[at] = lines[at].replace(b'"isError":false,', b'"isError":false,' + details)
    transcript = loads(b"\n".join(lines), TOOLS.name, lazily=lazily)
    index = next(i for i, m in enumerate(transcript.messages) if m.line == at + 1)
    cleared = transcript.messages[index].with_blocks((ToolResult("toolu_01ReadCalc", "[cleared]", False),))
    assert "details" not in cleared.raw and cleared.raw["content"] is None
    out = dumps(transcript.with_messages([*transcript.messages[:index], cleared, *transcript.messages[index + 1:]])).split(b"\n")
    assert out[at] == lines[at].replace(b'[{"type":"text","text":"def add(a, b):\\n    return a - b\\n"}]',
                                        b'[{"type":"text","text":"[cleared]"}]')


def test_an_added_result_is_threaded_into_the_tree():
    lines = TOOLS.read_bytes().splitlines()
    # The last call's result and the answer after it are gone: the session ends on the call.
    without = b"\n".join(line for line in lines if b'"id":"f8a9b0c1"' not in line and b'"id":"c1d2e3f4"' not in line) + b"\n"
    without = without.replace(b'"parentId":"f8a9b0c1"', b'"parentId":"e7f8a9b0"')
    transcript = loads(without, "s.jsonl")
    assert errors(check(transcript))
    repaired, report = repair(transcript)
    again = loads(dumps(repaired), "s.jsonl")
    assert errors(check(again)) == [] and report.fixes
    added = [json.loads(line) for line in dumps(repaired).splitlines() if b"toolu_01EditSub" in line][-1]
    assert added["message"]["role"] == "toolResult" and added["parentId"] == "e7f8a9b0"
    child = next(json.loads(line) for line in dumps(repaired).splitlines() if b'"id":"a9b0c1d2"' in line)
    assert child["parentId"] == added["id"]


# --- recorded usage ----------------------------------------------------------------------------


def test_usage_is_the_prompt_of_the_last_response():
    transcript = read(TOOLS)
    recorded = recorded_usage(transcript.messages)
    assert (recorded.tokens, recorded.output, recorded.message) == (20 + 2500, 30, 12)
    assert recorded.responses == 5


def test_usage_kept_from_before_a_compaction_is_not_the_context_now():
    transcript = read(COMPACTED)
    assert [usage_tokens(m) for m in transcript.messages if m.role == "assistant"] == [None, None, 700, 760]


def with_usage(data: bytes, overhead: int = 3000) -> bytes:
    """The session with the usage pi records on each reply: a cached prompt of `overhead` (the system
    prompt and tools) and a quarter of the characters sent before it, `totalTokens` their sum."""
    lines, sent = [], 0
    for line in data.splitlines():
        entry = json.loads(line)
        message = entry.get("message", {})
        if message.get("role") == "assistant":
            prompt = overhead + sent // 4
            message["usage"] = {"input": 12, "output": 30, "cacheRead": prompt - 12, "cacheWrite": 0, "totalTokens": prompt + 30,
                                "cost": {"input": 0.0001, "output": 0.0004, "cacheRead": 0.001, "cacheWrite": 0, "total": 0.0015}}
        sent += pi_writer.entry_chars(entry)
        lines.append(json.dumps(entry, separators=(",", ":")).encode())
    return b"\n".join(lines) + b"\n"


def test_a_prune_restates_the_context_size_pi_judges_and_estimate_says_what_prune_said():
    """pi judges the size of its context by the last reply's `usage.totalTokens` (before it sends, it
    compacts a context over its window less the reserve): each reply after a cleared result counts it
    less, by pi's 4 characters a token, and the billed parts (which pi adds up as the session's
    totals) stay. `estimate` of the output is what prune reported."""
    data = with_usage(session(12))
    transcript = loads(data, "s.jsonl")
    pruned, report = prune(transcript, PruneOptions())
    out = dumps(pruned)
    assert report.cleared > 0 and report.tokens_after < report.tokens_before * 0.7
    counted = estimate(loads(out, "s.jsonl")).tokens
    assert abs(counted - report.tokens_after) <= report.tokens_after * 0.01
    old = [json.loads(line) for line in data.splitlines()]
    new = [json.loads(line) for line in out.splitlines()]
    first = next(k for k, (a, b) in enumerate(zip(old, new)) if a != b)
    for a, b in zip(old[first + 1:], new[first + 1:]):
        if a.get("message", {}).get("role") == "assistant":
            usage = a["message"]["usage"]
            assert b["message"]["usage"] == {**usage, "totalTokens": b["message"]["usage"]["totalTokens"]}
            assert b["message"]["usage"]["totalTokens"] < usage["totalTokens"]
    # Read back, the prompt is that of totalTokens; pi's own sessions are read as before.
    assert recorded_usage(loads(out, "s.jsonl").messages).tokens == new[-1]["message"]["usage"]["totalTokens"] - 30
    assert recorded_usage(transcript.messages).tokens == old[-1]["message"]["usage"]["totalTokens"] - 30


# --- compaction --------------------------------------------------------------------------------


def session(turns: int, version: int = 3, after: bytes = b"") -> bytes:
    """A pi session of `turns` rounds (a request, a read call and its long result, an edit and its
    result, an answer), or those rounds appended to the session `after` (children of its last entry)."""
    lines: list[dict] = []
    if not after:
        lines.append({"type": "session", "version": version, "id": "3e5a7c9b-0d2f-4a6c-8e1b-5d7f9a1c3e46",
                      "timestamp": "2026-02-01T08:00:00.000Z", "cwd": "/srv/app"})
        if version == 1:
            lines[0].pop("version")
    start = len(after.splitlines())
    parent = json.loads(after.splitlines()[-1]).get("id") if after else None
    first_turn = start // 6

    def add(message):
        nonlocal parent
        number = start + len(lines)
        entry_id = f"{number:08x}"
        entry = {"type": "message", "id": entry_id, "parentId": parent,
                 "timestamp": f"2026-02-01T{8 + number // 3600:02d}:{number // 60 % 60:02d}:{number % 60:02d}.000Z",
                 "message": message}
        lines.append(entry if version > 1 else {k: v for k, v in entry.items() if k not in ("id", "parentId")})
        parent = entry_id

    for turn in range(first_turn, first_turn + turns):
        add({"role": "user", "content": [{"type": "text", "text": f"Step {turn}: tidy module{turn}.py."}], "timestamp": turn})
        add({"role": "assistant", "content": [{"type": "toolCall", "id": f"toolu_read{turn}", "name": "read",
                                               "arguments": {"path": f"module{turn}.py"}}],
             "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse"})
        add({"role": "toolResult", "toolCallId": f"toolu_read{turn}", "toolName": "read",
             "content": [{"type": "text", "text": f"line of module{turn}\n" * 60}], "isError": False})
        add({"role": "assistant", "content": [{"type": "toolCall", "id": f"toolu_edit{turn}", "name": "edit",
                                               "arguments": {"path": f"module{turn}.py", "oldText": "a", "newText": "b"}}],
             "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse"})
        add({"role": "toolResult", "toolCallId": f"toolu_edit{turn}", "toolName": "edit",
             "content": [{"type": "text", "text": f"Successfully replaced text in module{turn}.py."}], "isError": False})
        add({"role": "assistant", "content": [{"type": "text", "text": f"module{turn}.py is tidy."}],
             "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop"})
    return after + b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)


OPTIONS = CompactOptions(force=True, emergency=True, counting=EstimateOptions(count="content"),
                         summary=SummaryOptions(keep_recent_tokens=400))


def compacted(data: bytes, name: str = "s.jsonl"):
    result, report = compact(loads(data, name), OPTIONS)
    assert report.strategy == "emergency" and report.cut is not None
    return dumps(result), report


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_compaction_is_one_entry_appended(version):
    data = session(12, version)
    out, _ = compacted(data)
    assert out.startswith(data)
    new = out[len(data):].splitlines()
    assert len(new) == 1 and out.endswith(b"\n")
    entry = json.loads(new[0])
    assert entry["type"] == "compaction" and entry["tokensBefore"] > 0 and entry["summary"].startswith("## Goal")
    if version == 1:
        assert "id" not in entry and isinstance(entry["firstKeptEntryIndex"], int)
        kept = json.loads(data.splitlines()[entry["firstKeptEntryIndex"]])
    else:
        assert entry["parentId"] == json.loads(data.splitlines()[-1])["id"]
        kept = next(json.loads(line) for line in data.splitlines() if json.loads(line).get("id") == entry["firstKeptEntryId"])
    assert kept["message"]["role"] != "toolResult"
    read_only, modified = entry["details"]["readFiles"], entry["details"]["modifiedFiles"]
    assert "module0.py" in modified and not set(read_only) & set(modified) and modified == sorted(modified)
    again = loads(out, "s.jsonl")
    assert sum(is_summary_message(m) for m in again.messages) == 1
    assert again.source.compaction == len(out.splitlines()) - 1
    assert errors(check(again)) == []


def test_compacting_twice_keeps_one_summary_and_one_active_compaction():
    once, _ = compacted(session(12))
    twice, _ = compacted(session(8, after=once))
    again = loads(twice, "s.jsonl")
    assert sum(is_summary_message(m) for m in again.messages) == 1
    assert texts(again)[0].count(SUMMARY_PREFIX) == 1
    assert errors(check(again)) == []
    compactions = [json.loads(line) for line in twice.splitlines() if b'"type":"compaction"' in line]
    assert len(compactions) == 2 and again.source.compaction == len(twice.splitlines()) - 1
    # The file lists carry over from the first compaction.
    assert set(compactions[0]["details"]["modifiedFiles"]) <= set(compactions[1]["details"]["modifiedFiles"])


@pytest.mark.parametrize("version", [1, 3])
def test_slim_keeps_the_header_the_settings_and_what_pi_reads_after_the_compaction(version):
    lines = [json.loads(line) for line in session(12, version).splitlines()]
    setting = {"type": "thinking_level_change", "id": "7e1c0000", "parentId": None, "timestamp": "2026-02-01T08:00:00.500Z",
               "thinkingLevel": "high"}
    if version == 1:
        setting = {k: v for k, v in setting.items() if k not in ("id", "parentId")}
    else:
        lines[1]["parentId"] = setting["id"]
    data = b"".join(json.dumps(e).encode() + b"\n" for e in [lines[0], setting, *lines[1:]])
    whole, _ = compacted(data)
    result, report = compact(loads(data, "s.jsonl"), replace(OPTIONS, slim=True))
    out = dumps(result)
    entries = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in entries[:2]] == ["session", "thinking_level_change"] and entries[-1]["type"] == "compaction"
    assert len(entries) == 2 + report.window_messages + 1 < len(whole.splitlines())
    assert pi_context(out) == pi_context(whole)  # pi sends what it sends after the whole file's compaction
    if version > 1:  # each entry hangs from the one before it
        assert [e["parentId"] for e in entries[1:]] == [None, *(e["id"] for e in entries[1:-1])]
    assert errors(check(loads(out, "s.jsonl"))) == []


def test_the_summary_is_worded_as_pis_own_and_reads_back_as_ours():
    out, report = compacted(session(12))
    assert report.split_turn
    entry = json.loads(out.splitlines()[-1])
    summary, details = entry["summary"], entry["details"]
    # pi's wording: no prefix of ours, the split turn's part after a rule, then the file lists.
    assert summary.startswith("## Goal\nStep 0: tidy module0.py.") and "[Previous conversation summary]" not in summary
    history, turn = summary.split("\n\n---\n\n**Turn Context (split turn):**\n\n")
    assert turn.startswith("## The request this turn began with (verbatim)\n\nStep 10: tidy module10.py.")
    assert turn.endswith("\n\n<read-files>\n" + "\n".join(details["readFiles"]) + "\n</read-files>"
                         "\n\n<modified-files>\n" + "\n".join(details["modifiedFiles"]) + "\n</modified-files>")
    # Read back, it is our summary message again, so that the next compaction merges it.
    again = loads(out, "s.jsonl")
    message = texts(again)[0]
    assert message.startswith(SUMMARY_PREFIX + history) and "<read-files>" not in message and "---" not in message
    assert message.endswith("\n\n## The request this turn began with (verbatim)\n\nStep 10: tidy module10.py.")
    twice, _ = compacted(session(8, after=out))
    assert json.loads(twice.splitlines()[-1])["summary"].count("## Goal") == 1


def test_pis_own_split_turn_summary_reads_as_the_opening_and_its_file_lists_are_left_out():
    own = ("## Goal\nTidy the modules.\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nTidy module3.py."
           "\n\n<read-files>\nREADME.md\n</read-files>\n\n<modified-files>\nmodule3.py\n</modified-files>")
    assert pi.as_summary_message(own) == (
        "## Goal\nTidy the modules.\n\n## The request this turn began with (verbatim)\n\n## Original Request\nTidy module3.py.")
    assert pi.as_summary_message("## Goal\nTidy.\n\n<modified-files>\na.py\n</modified-files>") == "## Goal\nTidy."


def broken_sessions() -> dict[str, bytes]:
    """A session whose compaction keeps a tool result (P1), one whose compaction comes between a
    call and its result (P2), one whose call has no result at all, and one whose root names a
    parent that is not there (P3)."""
    data = session(3)
    lines = [json.loads(line) for line in data.splitlines()]
    result = next(e for e in lines[1:] if e["message"]["role"] == "toolResult")
    call = next(e for e in lines[1:] if e["id"] == result["parentId"])

    def compacted_after(entry: dict, first_kept: str, rest: bool = True) -> bytes:
        """The session with a compaction after `entry` (keeping from `first_kept`), then the rest."""
        at = lines.index(entry) + 1
        compaction = {"type": "compaction", "id": "c0ffee00", "parentId": entry["id"], "timestamp": "2026-02-01T09:00:00.000Z",
                      "summary": "s", "firstKeptEntryId": first_kept, "tokensBefore": 10}
        after = [{**lines[at], "parentId": "c0ffee00"}, *lines[at + 1:]] if rest else []
        return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in [*lines[:at], compaction, *after])

    return {"P1": compacted_after(result, result["id"]), "P2": compacted_after(call, call["id"]),
            "unanswered": compacted_after(call, call["id"], rest=False),
            "P3": data.replace(b'"parentId":null', b'"parentId":"gone0000"')}


@pytest.mark.parametrize("lazily", [False, True], ids=["read whole", "read lazily"])
def test_check_finds_a_compaction_that_keeps_a_tool_result_or_splits_a_call(lazily):
    broken = broken_sessions()
    for rule in ("P1", "P2", "P3"):
        transcript = loads(broken[rule], "s.jsonl", lazily=lazily)
        assert rule in {v.rule for v in errors(check(transcript))}
        assert lazily is any(not m.is_read for m in transcript.messages)  # lazily: its entries' views


@pytest.mark.parametrize("lazily", [False, True], ids=["read whole", "read lazily"])
@pytest.mark.parametrize("case", ["P1", "P2", "unanswered", "P3"])
def test_repair_mends_the_tree_and_the_compaction_as_pi_reads_them(case, lazily):
    data = broken_sessions()[case]
    repaired, report = repair(loads(data, "s.jsonl", lazily=lazily))
    out = dumps(repaired)
    assert out == dumps(repair(loads(data, "s.jsonl"))[0])
    assert errors(check(loads(out, "s.jsonl"))) == []
    assert {fix.rule for fix in report.fixes} == {"A2" if case == "unanswered" else case}
    entries = [json.loads(line) for line in out.splitlines()]
    by_id = {e["id"]: e for e in entries}
    compaction = next((e for e in entries if e["type"] == "compaction"), None)
    sent = pi_context(out)
    if case == "P1":  # the window starts at the call the kept result answers
        assert by_id[compaction["firstKeptEntryId"]]["message"]["content"][0]["type"] == "toolCall"
        assert [m["role"] for m in sent[:3]] == ["user", "assistant", "toolResult"]
        assert sent[1]["content"][0]["id"] == sent[2]["toolCallId"]
    if case == "P2":  # the compaction follows the result, and pi sends the same messages as before
        at = entries.index(compaction)
        assert entries[at - 1]["message"]["role"] == "toolResult" and compaction["parentId"] == entries[at - 1]["id"]
        assert entries[at + 1]["parentId"] == compaction["id"] and sent == pi_context(data)
    if case == "unanswered":  # the added result sits before the compaction
        assert by_id[compaction["parentId"]]["message"]["role"] == "toolResult"
    if case == "P3":
        assert entries[1]["parentId"] is None and sent == pi_context(session(3))


def unthreaded(data: bytes, fields: tuple[str, ...] = ("id", "parentId"), keep: int | None = None) -> bytes:
    """The session's header and first `keep` entries, `fields` taken off every entry: a version 1
    list under a later header, which pi does not migrate."""
    lines = [json.loads(line) for line in data.splitlines() if line.strip()]
    entries = [{k: v for k, v in e.items() if k not in fields} for e in lines[1:][:keep]]
    return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in [lines[0], *entries])


@pytest.mark.parametrize("fields", [("id", "parentId"), ("id",), ("parentId",)])
def test_entries_without_ids_in_version_3_are_p4_and_repair_threads_them_as_pis_migration(fields):
    data = unthreaded(TOOLS.read_bytes(), fields, keep=5)
    transcript = loads(data, "s.jsonl")
    # pi sends the path from the last entry alone (a toolResult, whose call it cannot reach): as we read it.
    sent = pi_context(data)
    assert [m["role"] for m in sent] == ["toolResult"] and [m.role for m in transcript.messages] == ["user"]
    found = errors(check(transcript))
    assert "P4" in {v.rule for v in found} and next(v.line for v in found if v.rule == "P4") == 2
    repaired, report = repair(transcript)
    assert [fix.rule for fix in report.fixes] == ["P4"]
    out = dumps(repaired)
    assert errors(check(loads(out, "s.jsonl"))) == []
    entries = [json.loads(line) for line in out.splitlines()]
    assert [e["parentId"] for e in entries[2:]] == [e["id"] for e in entries[1:-1]] and entries[1]["parentId"] is None
    if fields == ("parentId",):  # the ids the entries had stay
        assert [e["id"] for e in entries[1:]] == [json.loads(line)["id"] for line in TOOLS.read_bytes().splitlines()[1:6]]
    # pi now sends every entry, in file order, as it would have migrated a version 1 file.
    sent = assert_pi_sends_what_we_read(out)
    assert [m["role"] for m in sent] == ["user", "assistant", "toolResult"]
    assert sent == pi_context(session_of(TOOLS, 5))
    # The command writes it (its post-condition reads the output back): exit 0, as the fix said.
    result = CliRunner().invoke(cli, ["repair", "-q", "-"], input=data, prog_name="transcompact")
    assert result.exit_code == 0 and result.stdout_bytes == out


def session_of(path, keep: int) -> bytes:
    """The header and the first `keep` entries of a session file, as they are."""
    return b"".join(line + b"\n" for line in path.read_bytes().splitlines()[:keep + 1])


def test_a_version_1_compaction_under_a_later_header_is_threaded_with_its_first_kept_entry():
    data = unthreaded(session(4), keep=None)
    lines = data.splitlines()
    compaction = {"type": "compaction", "timestamp": "2026-02-01T09:00:00.000Z", "summary": "Tidied modules 0 and 1.",
                  "firstKeptEntryIndex": 13, "tokensBefore": 100}  # the line of turn 2's request
    data = b"\n".join([*lines[:19], json.dumps(compaction, separators=(",", ":")).encode(), *lines[19:]]) + b"\n"
    assert "P4" in {v.rule for v in errors(check(loads(data, "s.jsonl")))}
    repaired, report = repair(loads(data, "s.jsonl"))
    out = dumps(repaired)
    assert [fix.rule for fix in report.fixes] == ["P4"] and errors(check(loads(out, "s.jsonl"))) == []
    entry = next(json.loads(line) for line in out.splitlines() if b'"compaction"' in line)
    assert "firstKeptEntryIndex" not in entry and entry["firstKeptEntryId"] == json.loads(out.splitlines()[13])["id"]
    sent = assert_pi_sends_what_we_read(out)
    assert sent[1]["content"][0]["text"] == "Step 2: tidy module2.py."
    # The same lines as a version 1 file: pi's own migration gives the same messages.
    version_1 = json.dumps({k: v for k, v in json.loads(lines[0]).items() if k != "version"}).encode()
    assert sent == pi_context(b"\n".join([version_1, *data.splitlines()[1:]]) + b"\n")


def test_entries_that_threaded_break_what_repair_cannot_fix_are_refused():
    """The compacted session with the id of the compaction's first kept entry gone, and the last
    entry's id and parent: threaded, the compaction keeps an entry no longer on the path (P1)."""
    lines = [json.loads(line) for line in COMPACTED.read_bytes().splitlines()]
    kept = next(e for e in lines if e.get("id") == lines[9]["firstKeptEntryId"])
    del kept["id"], lines[-1]["id"], lines[-1]["parentId"]
    data = b"".join(json.dumps(e).encode() + b"\n" for e in lines)
    assert {v.rule for v in errors(check(loads(data, "s.jsonl")))} == {"A7", "P4"}
    with pytest.raises(ShapeError, match=r"\(P4\).* breaks P1, which repair cannot fix"):
        repair(loads(data, "s.jsonl"))


def test_a_placeholder_for_the_roots_message_hangs_from_no_entry():
    """A session cut before a result (its parent gone): made the root (P3), the result answers no
    call and goes, and the placeholder that keeps the first message a user's takes its place."""
    lines = TOOLS.read_bytes().splitlines(keepends=True)
    data = lines[0] + b"".join(lines[5:])
    repaired, report = repair(loads(data, "s.jsonl"))
    out = dumps(repaired)
    assert [fix.rule for fix in report.fixes] == ["P3", "A1", "A5"] and errors(check(loads(out, "s.jsonl"))) == []
    placeholder = json.loads(out.splitlines()[1])
    assert placeholder["parentId"] is None and placeholder["message"]["content"] == [{"type": "text", "text": "(no content)"}]
    assert pi_context(out)[0] == placeholder["message"] and texts(loads(out, "s.jsonl"))[0] == "(no content)"


def test_in_version_3_a_compaction_keeps_from_its_first_kept_entry_id_alone():
    data = session(3)
    leaf = json.loads(data.splitlines()[-1])["id"]
    compaction = {"type": "compaction", "id": "c0ffee00", "parentId": leaf, "timestamp": "2026-02-01T09:00:00.000Z",
                  "summary": "s", "firstKeptEntryIndex": 7, "tokensBefore": 10}
    data += json.dumps(compaction, separators=(",", ":")).encode() + b"\n"
    assert len(assert_pi_sends_what_we_read(data)) == 1  # the summary alone: pi does not read the index in version 3
    assert "P1" in {v.rule for v in errors(check(loads(data, "s.jsonl")))}


def test_the_post_condition_reads_back_an_output_left_with_no_message():
    """What repair wrote before P4 of the session above: the orphan result pi's path is made of
    removed, its line with it, which brings back the entry before it as the leaf, with errors the
    input did not have. The post-condition reads back an output with no message too."""
    data = unthreaded(TOOLS.read_bytes(), keep=5)
    transcript = loads(data, "s.jsonl")
    without_the_leaf = b"".join(line + b"\n" for line in data.splitlines()[:-1])
    with pytest.raises(PostConditionError, match="reads back as other messages"):
        verified(transcript, transcript.with_messages([]), without_the_leaf, operation="repair", same_messages=False)


def test_a_rewrite_that_drops_the_leaf_onto_another_path_is_refused():
    """A result whose call is not there, hanging from no entry, as the last line: repair removes it,
    and the line before it would be pi's leaf, the whole session behind it that pi did not send."""
    orphan = {"type": "message", "id": "0a0b0c0d", "parentId": "gone0000", "timestamp": "2026-01-10T09:01:00.000Z",
              "message": {"role": "toolResult", "toolCallId": "toolu_gone", "toolName": "read",
                          "content": [{"type": "text", "text": "x"}], "isError": False}}
    data = TOOLS.read_bytes() + json.dumps(orphan).encode() + b"\n"
    assert len(pi_context(data)) == 1
    repaired, _ = repair(loads(data, "s.jsonl"))
    with pytest.raises(ShapeError, match="pi's leaf, would be dropped"):
        dumps(repaired)
    # The same result hanging from the entry before it: what replaces it is on the path.
    data = TOOLS.read_bytes() + json.dumps({**orphan, "parentId": json.loads(TOOLS.read_bytes().splitlines()[-1])["id"]}).encode() + b"\n"
    repaired, report = repair(loads(data, "s.jsonl"))
    out = dumps(repaired)
    assert [fix.rule for fix in report.fixes] == ["A1", "A5"] and out.startswith(TOOLS.read_bytes())
    assert errors(check(loads(out, "s.jsonl"))) == []


# --- pi resumes what we write ------------------------------------------------------------------

COMPACTION_SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
NO_RESULT = [{"type": "text", "text": "No result provided"}]  # pi-ai transformMessages, for a call with no result


def pi_context(data: bytes) -> list[dict]:
    """The messages pi sends for a session file: `loadEntriesFromFile`, `migrateToCurrentVersion`,
    `buildSessionContext` from the last entry, then `convertToLlm` and `transformMessages`'s skip
    of errored and aborted replies (pi-mono packages/coding-agent/src/core/session-manager.ts, messages.ts)."""
    entries = [json.loads(line) for line in data.decode().strip().split("\n") if line.strip()]
    assert entries[0]["type"] == "session" and isinstance(entries[0]["id"], str)
    if entries[0].get("version", 1) < 2:  # migrateV1ToV2
        previous = None
        for number, entry in enumerate(entries[1:], start=1):
            entry["id"], entry["parentId"], previous = f"v1-{number}", previous, f"v1-{number}"
            if entry["type"] == "compaction" and isinstance(entry.get("firstKeptEntryIndex"), int):
                target = entries[entry.pop("firstKeptEntryIndex")]
                if target["type"] != "session":
                    entry["firstKeptEntryId"] = target["id"]
    for entry in entries[1:]:  # migrateV2ToV3
        if entry["type"] == "message" and entry["message"].get("role") == "hookMessage":
            entry["message"]["role"] = "custom"
    by_id = {e.get("id"): e for e in entries[1:]}  # version 2 and 3 are not migrated: an entry may have no id
    path, current = [], entries[-1]
    while current:
        path.insert(0, current)
        current = by_id.get(current["parentId"]) if current.get("parentId") else None
    compaction = next((e for e in reversed(path) if e["type"] == "compaction"), None)
    messages = []

    def append(entry):
        if entry["type"] == "message":
            messages.append(entry["message"])
        elif entry["type"] == "custom_message":
            messages.append({"role": "custom", "content": entry["content"]})
        elif entry["type"] == "branch_summary" and entry.get("summary"):
            messages.append({"role": "branchSummary", "summary": entry["summary"]})

    if compaction:
        messages.append({"role": "compactionSummary", "summary": compaction["summary"]})
        at = path.index(compaction)
        found = False
        for entry in path[:at]:
            found = found or entry.get("id") == compaction.get("firstKeptEntryId")
            if found:
                append(entry)
        for entry in path[at + 1:]:
            append(entry)
    else:
        for entry in path:
            append(entry)
    sent, pending, answered = [], [], set()

    def answer_pending():  # transformMessages: an error result for each call left without one
        sent.extend({"role": "toolResult", "toolCallId": c["id"], "toolName": c["name"], "content": NO_RESULT, "isError": True}
                    for c in pending if c["id"] not in answered)
        pending.clear()
        answered.clear()

    for m in messages:
        if m["role"] == "compactionSummary":
            m = {"role": "user", "content": [{"type": "text", "text": COMPACTION_SUMMARY_PREFIX + m["summary"] + "\n</summary>"}]}
        if m["role"] in ("user", "assistant"):
            answer_pending()
        if m["role"] == "assistant" and m.get("stopReason") in ("error", "aborted"):
            continue
        if m["role"] == "assistant":
            pending.extend(b for b in m["content"] if b["type"] == "toolCall")
        if m["role"] == "toolResult":
            answered.add(m["toolCallId"])
        if m["role"] in ("user", "assistant", "toolResult"):
            sent.append(m)
    answer_pending()
    return sent


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name[:30])
def test_a_count_counts_what_pi_sends_where_the_reading_differs(path):
    """Our reading words pi's compaction summary as ours and holds no result for a call left open;
    pi sends the summary in its wrapper with the file lists, and "No result provided" for each open
    call. The count counts what pi sends (`blocks_as_sent`), for the session and for it stopped
    while its last calls ran."""
    from transcompact.counting.counter import TokenCounter
    from transcompact.formats import adapter

    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    last_call = max((k for k, line in enumerate(lines) if b'"type":"toolCall"' in line), default=None)
    for session in (data, b"".join(lines[:last_call + 1]) if last_call is not None else data):
        transcript, sent = loads(session, "s.jsonl"), pi_context(session)
        as_sent = adapter(transcript).blocks_as_sent(transcript)
        if b'"type":"compaction"' in session:
            assert as_sent[0] == (Text(sent[0]["content"][0]["text"]),)
        made = {b.tool_call_id for blocks in as_sent.values() for b in blocks
                if isinstance(b, ToolResult) and b.content == pi.NO_RESULT and b.is_error}
        assert made == {m["toolCallId"] for m in sent if m["role"] == "toolResult" and m["content"] == NO_RESULT
                        and "timestamp" not in m}
        counter = TokenCounter(transcript, EstimateOptions(count="content"))
        counted = sum(dict(t.units).get("tool_results", 0) for t in counter.tallies(transcript)[2] if t is not None)
        in_file = sum(len(result_text(r)) for m in transcript.messages for r in m.tool_results)
        assert counted == in_file + len(pi.NO_RESULT) * len(made)


def assert_pi_sends_what_we_read(data: bytes) -> list[dict]:
    """pi's context for `data` is our reading of it: the active compaction's summary (ours worded
    as pi's), then the messages we read, each pi's own JSON, every call answered by the results
    after it (by pi's "No result provided" only where we read a call with no result); returns pi's context."""
    ours = loads(data, "s.jsonl")
    sent = pi_context(data)
    compactions = [json.loads(line) for line in data.splitlines() if b'"type":"compaction"' in line]
    summaries = [m for m in ours.messages if is_summary_message(m)]
    assert len(summaries) == (1 if compactions else 0)
    if compactions:
        summary = compactions[-1]["summary"]
        assert sent[0]["content"][0]["text"] == COMPACTION_SUMMARY_PREFIX + summary + "\n</summary>"
        assert is_summary_message(ours.messages[0]) and texts(ours)[0] == SUMMARY_PREFIX + pi.as_summary_message(summary)
    unanswered = {c.id for m in ours.messages for c in m.tool_calls} - {r.tool_call_id for m in ours.messages for r in m.tool_results}
    stand_ins = [m for m in sent if m["role"] == "toolResult" and m["content"] == NO_RESULT and "timestamp" not in m]
    assert {m["toolCallId"] for m in stand_ins} == unanswered
    window = sent[1:] if compactions else sent
    window = [m for m in window if not any(m is stand_in for stand_in in stand_ins)]
    assert len(window) == len(ours.messages) - len(summaries)
    for message, read in zip(window, ours.messages[len(summaries):]):
        assert {k: v for k, v in message.items() if k != "usage"} == {k: v for k, v in read.raw.items() if k != "usage"}
    # Every call is answered by the results that follow it, and no result is alone.
    pending: set[str] = set()
    for message in sent:
        if message["role"] == "toolResult":
            assert message["toolCallId"] in pending
            pending.discard(message["toolCallId"])
        else:
            assert not pending
            pending = {b["id"] for b in message["content"] if b["type"] == "toolCall"} if message["role"] == "assistant" else set()
    assert not pending
    return sent


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("times", [1, 2])
def test_pi_resumes_our_compaction_summary_first_then_the_window(version, times):
    data = b""
    for _ in range(times):
        data, report = compacted(session(14, version, after=data))
    sent = assert_pi_sends_what_we_read(data)
    assert len(sent) - 1 == report.window_messages


def test_an_older_compaction_in_the_kept_range_is_no_message():
    """pi sends only the active compaction's summary: one kept from before it sends nothing."""
    lines = COMPACTED.read_bytes().splitlines()
    newer = {"type": "compaction", "id": "eef4b5c6", "parentId": "dda4b5c6", "timestamp": "2026-01-10T09:00:30.000Z",
             "summary": "## Goal\nMake the tests of calc.py pass.\n\n## Progress\n- Fixed add().",
             "firstKeptEntryId": "66f7a8b9", "tokensBefore": 900}  # kept from before the older compaction
    data = b"\n".join([*lines, json.dumps(newer, separators=(",", ":")).encode()]) + b"\n"
    transcript = loads(data, "s.jsonl")
    assert sum(is_summary_message(m) for m in transcript.messages) == 1
    assert texts(transcript)[0] == SUMMARY_PREFIX + newer["summary"]
    assert [m.line for m in transcript.messages] == [15, 7, 8, 9, 11, 12, 13, 14]
    assert_pi_sends_what_we_read(data)


def with_unanswered_call(data: bytes, version: int) -> bytes:
    """`data` and an assistant message whose call never got its result (pi stopped while it ran)."""
    last = json.loads(data.splitlines()[-1])
    entry = {"type": "message", "id": "0fff0001", "parentId": last.get("id"), "timestamp": "2026-02-01T12:00:00.000Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "Running the tests."},
                                                          {"type": "toolCall", "id": "toolu_open", "name": "bash",
                                                           "arguments": {"command": "pytest -q"}}],
                         "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse"}}
    if version == 1:
        entry = {k: v for k, v in entry.items() if k not in ("id", "parentId")}
    return data + json.dumps(entry, separators=(",", ":")).encode() + b"\n"


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("keep", [100, 400, 1000])
def test_a_session_ending_on_an_unanswered_call_is_compacted_and_pi_answers_the_call(version, keep):
    """The call stays as pi sends it, with pi's own error result: the compaction before no result is no P2."""
    data = with_unanswered_call(session(12, version), version)
    result, report = compact(loads(data, "s.jsonl"), replace(OPTIONS, summary=replace(OPTIONS.summary, keep_recent_tokens=keep)))
    assert report.strategy == "emergency"
    out = dumps(result)
    assert [v.rule for v in errors(check(loads(out, "s.jsonl")))] == ["A2"] == [v.rule for v in errors(check(loads(data, "s.jsonl")))]
    sent = assert_pi_sends_what_we_read(out)
    assert sent[-2]["content"][-1]["id"] == "toolu_open" and sent[-1] == {
        "role": "toolResult", "toolCallId": "toolu_open", "toolName": "bash", "content": NO_RESULT, "isError": True}


def test_a_compaction_before_a_result_that_comes_later_is_still_p2():
    data = broken_sessions()["P2"]
    assert [v.rule for v in errors(check(loads(data, "s.jsonl")))] == ["P2"]
    assert [v.rule for v in errors(check(loads(broken_sessions()["unanswered"], "s.jsonl")))] == ["A2"]


@pytest.mark.parametrize("path, call_id", [(VERSION_1, "toolu_01V1Edit"), (COMPACTED, "toolu_01Test")], ids=["version-1", "version-3"])
@pytest.mark.parametrize("corrupted", ["toolCallId", "id"])
def test_check_or_repair_mends_a_corrupted_call_id_kept_before_the_compaction(path, call_id, corrupted, tmp_path):
    """The kept call's result names another id (or the call does): repair drops the orphan and answers
    the call right after its message, as pi itself would, not after the reply that follows it (past
    the compaction, P2, or an orphan once pi answers the call before that reply)."""
    session_file = tmp_path / "s.jsonl"
    session_file.write_bytes(path.read_bytes().replace(f'"{corrupted}":"{call_id}"'.encode(), f'"{corrupted}":"{call_id}X"'.encode(), 1))
    invoke = CliRunner().invoke
    assert invoke(cli, ["check", "-q", str(session_file)]).exit_code == 1
    repaired = invoke(cli, ["repair", "-q", "-i", str(session_file)], prog_name="transcompact")
    assert repaired.exit_code == 0, repaired.stderr
    assert invoke(cli, ["check", "-q", str(session_file)]).exit_code == 0
    sent = assert_pi_sends_what_we_read(session_file.read_bytes())
    stand_in = next(k for k, m in enumerate(sent) if m["role"] == "toolResult" and m["content"][0]["text"] == "[No result recorded]")
    assert sent[stand_in - 1]["role"] == "assistant" and sent[stand_in - 1]["content"][-1]["type"] == "toolCall"


REDACTED = {"type": "thinking", "thinking": "[Reasoning redacted]", "thinkingSignature": "EmwKAhgBEgy3va3pzix/LafPsn4a", "redacted": True}


def with_redacted_thinking(version: int = 3) -> bytes:
    """A session whose last answer began with a redacted thinking block, as pi 0.73 stores one."""
    lines = [json.loads(line) for line in session(2, version).splitlines()]
    lines[-1]["message"]["content"].insert(0, REDACTED)
    return b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in lines)


def test_redacted_thinking_reads_as_pi_sends_it_and_is_written_back_unchanged():
    data = with_redacted_thinking()
    transcript = loads(data, "s.jsonl")
    assert transcript.messages[-1].blocks[0] == RedactedThinking(REDACTED["thinkingSignature"])
    assert dumps(transcript) == data and errors(check(transcript)) == []
    # pi-ai sends it as redacted_thinking, its `data` the signature: so does --to anthropic.
    body = json.loads(dumps(convert(transcript, "anthropic")))
    assert body["messages"][-1]["content"][0] == {"type": "redacted_thinking", "data": REDACTED["thinkingSignature"]}
    # A change beside it keeps its JSON; a redacted block an operation writes anew has pi's shape.
    last = transcript.messages[-1]
    changed = last.with_blocks((*last.blocks, Text("And one more thing.")))
    out = dumps(transcript.with_messages([*transcript.messages[:-1], changed]))
    assert json.loads(out.splitlines()[-1])["message"]["content"][0] == REDACTED
    assert pi.write_block(RedactedThinking(REDACTED["thinkingSignature"])) == REDACTED


# --- compacting again and again ----------------------------------------------------------------


def compact_again_and_again(data: bytes, version: int, windows: list[int], added: list[int], unanswered: bool = False) -> bytes:
    """`data` compacted once per window, each time after adding `added` turns (none before the first);
    after each, pi sends one summary, the active compaction's, then the newest messages as they were
    (only a tool result may be trimmed to fit), exactly as we read the file."""
    for step, keep in enumerate(windows):
        if added[step]:
            data = session(added[step], version, after=data)
        if unanswered and step == len(windows) - 1:
            data = with_unanswered_call(data, version)
        before = loads(data, "s.jsonl")
        result, report = compact(before, replace(OPTIONS, summary=replace(OPTIONS.summary, keep_recent_tokens=keep)))
        assert report.strategy == "emergency", f"compaction {step + 1}: {report.strategy}"
        data = dumps(result)
        sent = assert_pi_sends_what_we_read(data)
        assert sum(m["role"] == "user" and isinstance(m["content"], list) and m["content"][0]["type"] == "text"
                   and m["content"][0]["text"].startswith(COMPACTION_SUMMARY_PREFIX) for m in sent) == 1
        window = loads(data, "s.jsonl").messages[1:]
        assert len(window) == report.window_messages > 0
        for kept, newest in zip(window, before.messages[-len(window):]):
            assert {k: v for k, v in kept.raw.items() if k != "content" or kept.raw["role"] != "toolResult"} == \
                {k: v for k, v in newest.raw.items() if k != "content" or newest.raw["role"] != "toolResult"}
    assert data.count(b'"type":"compaction"') == len(windows)
    return data


@pytest.mark.parametrize("version", [1, 2, 3])
def test_five_compactions_in_a_row_leave_one_summary_and_the_newest_entries(version):
    """Before, the second compaction read two summaries, and from the third on the stale one filled the window."""
    compact_again_and_again(session(14, version), version, [1200, 800, 500, 300, 150], [0] * 5)


@pytest.mark.parametrize("version", [1, 2, 3])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.integers(8, 16), first=st.integers(600, 1000), shrink=st.lists(st.integers(20, 100), min_size=4, max_size=4),
       added=st.lists(st.integers(1, 3), min_size=4, max_size=4), unanswered=st.booleans())
def test_five_compactions_with_turns_between(version, turns, first, shrink, added, unanswered):
    windows = [first - sum(shrink[:k]) for k in range(5)]
    compact_again_and_again(session(turns, version), version, windows, [0, *added], unanswered)


def mutant(data: bytes, old: bytes, new: bytes) -> bytes:
    """A fixture's bytes with the first `old` replaced by `new`."""
    assert old in data
    return data.replace(old, new, 1)


@pytest.mark.parametrize("data", [
    # It was an internal error: restating the usage asked whether a list is a stop reason pi does not send.
    # (Its result made long enough that clearing it gains: a short one is left as it is.)
    mutant(mutant(COMPACTED.read_bytes(), b'"stopReason":"toolUse","timestamp":1768035623000',
                  b'"stopReason":["toolUse"],"timestamp":1768035623000'),
           b'"text":"Successfully replaced text in calc.py."', b'"text":"' + b"Successfully replaced text in calc.py. " * 5 + b'"'),
    # Refused (exit 5): prune made the result one text block, which read back as a string.
    mutant(COMPACTED.read_bytes(), b'{"type":"text","text":"Successfully replaced text in calc.py."}]',
           b'{"type":"text","text":"Successfully replaced text in calc.py."},{"type":"text","text":"Successfully replaced text in calc.py."}]'),
], ids=["stop-reason-a-list", "result-of-two-text-blocks"])
def test_prune_of_an_odd_session_writes_what_pi_reads(data):
    pruned = CliRunner().invoke(cli, ["prune", "-q", "--keep-last", "0", "--hard-clear-after", "1", "--soft-trim-chars", "10",
                                      "--head", "2", "--tail", "2", "-"], input=data)
    assert pruned.exit_code == 0, pruned.stderr
    assert pruned.stdout_bytes != data
    assert CliRunner().invoke(cli, ["check", "-q", "-"], input=pruned.stdout_bytes).exit_code == 0
    assert_pi_sends_what_we_read(pruned.stdout_bytes)


def test_an_entry_pi_no_longer_sends_that_reads_as_no_message_is_no_error_of_estimate():
    """Before the compaction's kept window, pi sends nothing of it: check reads past it, and estimate
    (which reads what came before the compaction for its recorded usage when no reply after it has
    one) refused it."""
    data = mutant(VERSION_1.read_bytes(), b'"content":[{"type":"text","text":"Show calc.py."}]',
                  b'"content":{"type":"text","text":"Show calc.py."}')
    data = mutant(data, b'"role":"assistant","content":[{"type":"text","text":"Fixed add()."}]',
                  b'"role":["assistant"],"content":[{"type":"text","text":"Fixed add()."}]')
    for command in ("check", "estimate"):
        result = CliRunner().invoke(cli, [command, "-q", "-"], input=data)
        assert result.exit_code == 0, (command, result.stderr)


def test_repair_of_an_empty_first_kept_entry_keeps_from_the_next():
    """The compaction's first kept entry is an empty message: repair removes it, and the compaction
    keeps from the entry after it (it named no entry, and pi kept nothing before it: exit 5)."""
    data = mutant(COMPACTED.read_bytes(), b'"content":[{"type":"text","text":"Run the tests."}]', b'"content":[]')
    repaired = CliRunner().invoke(cli, ["repair", "-q", "-"], input=data)
    assert repaired.exit_code == 0, repaired.stderr
    assert CliRunner().invoke(cli, ["check", "-q", "-"], input=repaired.stdout_bytes).exit_code == 0
    compaction = next(json.loads(line) for line in repaired.stdout_bytes.splitlines() if b'"type":"compaction"' in line)
    assert compaction["firstKeptEntryId"] == "66f7a8b9"  # the call after the emptied request
    assert len(assert_pi_sends_what_we_read(repaired.stdout_bytes)) == len(pi_context(data)) - 1


def test_repair_of_a_blank_last_reply_keeps_its_entry_emptied():
    """Repair takes out the reply's whitespace-only text, and the last reply may then be empty: its
    entry went with the text, and the output read back a message short (exit 5)."""
    data = mutant(VERSION_1.read_bytes(), b'"text":"Fixed add()."', b'"text":" "')
    repaired = CliRunner().invoke(cli, ["repair", "-q", "-"], input=data)
    assert repaired.exit_code == 0, repaired.stderr
    assert CliRunner().invoke(cli, ["check", "-q", "-"], input=repaired.stdout_bytes).exit_code == 0
    last = json.loads(repaired.stdout_bytes.splitlines()[-1])["message"]
    assert (last["role"], last["content"], last["stopReason"]) == ("assistant", [], "stop")
