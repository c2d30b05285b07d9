"""The pi format on its own: which sessions it takes, the messages pi would send (the path to the
leaf, after its newest compaction; versions 1 and 2 migrated), a write that keeps every line it
did not change byte for byte, recorded usage, and a compaction appended as pi appends its own,
which pi's own way of building the context (rebuilt below from upstream `session-manager.ts` and
`messages.ts`) resumes: our summary, then the kept window, every call answered."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from transcompact import check, compact, dumps, loads, repair
from transcompact.calibrate import recorded_usage, usage_tokens
from transcompact.check import errors
from transcompact.compact import CompactOptions
from transcompact.estimate import Options as EstimateOptions
from transcompact.formats import detect, pi
from transcompact.jsondata import parse
from transcompact.model import Text, ToolCall, ToolResult
from transcompact.summarize import SummaryOptions
from transcompact.summary_message import SUMMARY_PREFIX, is_summary_message

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


def test_a_changed_result_rewrites_its_line_only():
    data = TOOLS.read_bytes()
    transcript = loads(data, TOOLS.name)
    index = next(i for i, m in enumerate(transcript.messages) if m.is_tool_result_message)
    message = transcript.messages[index]
    shorter = message.with_blocks((ToolResult("toolu_01ReadCalc", "[cleared]", False),))
    out = dumps(transcript.with_messages([*transcript.messages[:index], shorter, *transcript.messages[index + 1:]]))
    before, after = data.split(b"\n"), out.split(b"\n")
    changed = [k for k, (a, b) in enumerate(zip(before, after)) if a != b]
    assert len(before) == len(after) and changed == [message.line - 1]
    entry = json.loads(after[changed[0]])
    assert entry["message"]["content"] == [{"type": "text", "text": "[cleared]"}]
    assert {k: v for k, v in entry["message"].items() if k != "content"} == \
        {k: v for k, v in json.loads(before[changed[0]])["message"].items() if k != "content"}


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
def test_drop_history_keeps_the_header_the_settings_and_what_pi_reads_after_the_compaction(version):
    lines = [json.loads(line) for line in session(12, version).splitlines()]
    setting = {"type": "thinking_level_change", "id": "7e1c0000", "parentId": None, "timestamp": "2026-02-01T08:00:00.500Z",
               "thinkingLevel": "high"}
    if version == 1:
        setting = {k: v for k, v in setting.items() if k not in ("id", "parentId")}
    else:
        lines[1]["parentId"] = setting["id"]
    data = b"".join(json.dumps(e).encode() + b"\n" for e in [lines[0], setting, *lines[1:]])
    whole, _ = compacted(data)
    result, report = compact(loads(data, "s.jsonl"), replace(OPTIONS, drop_history=True))
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
        return b"".join(json.dumps(e).encode() + b"\n" for e in [*lines[:at], compaction, *after])

    return {"P1": compacted_after(result, result["id"]), "P2": compacted_after(call, call["id"]),
            "unanswered": compacted_after(call, call["id"], rest=False),
            "P3": data.replace(b'"parentId":null', b'"parentId":"gone0000"')}


def test_check_finds_a_compaction_that_keeps_a_tool_result_or_splits_a_call():
    broken = broken_sessions()
    for rule in ("P1", "P2", "P3"):
        assert rule in {v.rule for v in errors(check(loads(broken[rule], "s.jsonl")))}


@pytest.mark.parametrize("case", ["P1", "P2", "unanswered", "P3"])
def test_repair_mends_the_tree_and_the_compaction_as_pi_reads_them(case):
    data = broken_sessions()[case]
    repaired, report = repair(loads(data, "s.jsonl"))
    out = dumps(repaired)
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


# --- pi resumes what we write ------------------------------------------------------------------

COMPACTION_SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"


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
    by_id = {e["id"]: e for e in entries[1:]}
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
            found = found or entry["id"] == compaction["firstKeptEntryId"]
            if found:
                append(entry)
        for entry in path[at + 1:]:
            append(entry)
    else:
        for entry in path:
            append(entry)
    sent = []
    for m in messages:
        if m["role"] == "compactionSummary":
            sent.append({"role": "user", "content": [{"type": "text", "text": COMPACTION_SUMMARY_PREFIX + m["summary"] + "\n</summary>"}]})
        elif m["role"] == "assistant" and m.get("stopReason") in ("error", "aborted"):
            continue
        elif m["role"] in ("user", "assistant", "toolResult"):
            sent.append(m)
    return sent


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("times", [1, 2])
def test_pi_resumes_our_compaction_summary_first_then_the_window(version, times):
    data = b""
    for _ in range(times):
        data, report = compacted(session(14, version, after=data))
    ours = loads(data, "s.jsonl")
    sent = pi_context(data)
    summary = json.loads(data.splitlines()[-1])["summary"]
    assert sent[0]["content"][0]["text"] == COMPACTION_SUMMARY_PREFIX + summary + "\n</summary>"
    assert SUMMARY_PREFIX + pi.as_summary_message(summary) == texts(ours)[0]
    # The kept window is what we read after our summary, message for message.
    window = ours.messages[1:]
    assert len(sent) - 1 == len(window) == report.window_messages
    for message, kept in zip(sent[1:], window):
        assert {k: v for k, v in message.items() if k != "usage"} == {k: v for k, v in kept.raw.items() if k != "usage"}
    # Every call is answered by the results that follow it, and no result is alone.
    pending: set[str] = set()
    for message in sent[1:]:
        if message["role"] == "toolResult":
            assert message["toolCallId"] in pending
            pending.discard(message["toolCallId"])
        else:
            assert not pending
            pending = {b["id"] for b in message["content"] if b["type"] == "toolCall"} if message["role"] == "assistant" else set()
    assert not pending
