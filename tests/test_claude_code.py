"""Claude Code logs as `claude --resume` reads them: microcompacted tool results, and what our
compaction appends, checked against a model of Claude Code's own loader."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime

import pytest

from transcompact import dumps, loads
from transcompact.core.model import ToolResult
from transcompact.counting.counter import Options
from transcompact.formats.claude_code.reader import MICROCOMPACT_PLACEHOLDER
from transcompact.formats.claude_code.rewrites import append_compaction
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.cut import find_cut_point
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.estimate import estimate

from .builders import claude_code_logs
from .conftest import CORPUS

SESSION = "5b0e8a1c-2f4d-4c6e-9a7b-3d1f0e2c4b6a"
OUTPUT = "line of output\n" * 400  # 6,000 characters
CONTENT = Options(count="content")


def line(uuid: str, parent: str | None, kind: str, second: int, **fields) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ada/shop",
            "sessionId": SESSION, "version": "2.1.20", "type": kind, "uuid": uuid,
            "timestamp": f"2026-11-02T09:00:{second:02d}.000Z", **fields}


def assistant(uuid, parent, second, message_id, content, output_tokens=10):
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 20_000,
             "output_tokens": output_tokens}
    return line(uuid, parent, "assistant", second, message={"id": message_id, "type": "message", "role": "assistant",
                                                             "model": "claude-sonnet-4-5", "content": content, "usage": usage})


def user(uuid, parent, second, content, **fields):
    return line(uuid, parent, "user", second, message={"role": "user", "content": content}, **fields)


def microcompacted_log(boundary: bool = True) -> bytes:
    """Two parallel Bash results in one user line; a microcompact boundary clears the first."""
    lines = [
        user("u0", None, 0, "Which test suites are there?"),
        assistant("a0", "u0", 0, "msg_0", [{"type": "text", "text": "Two: a and b."}]),
        user("u1", "a0", 0, "Run both test suites."),
        assistant("a1", "u1", 1, "msg_A", [{"type": "tool_use", "id": "toolu_one", "name": "Bash", "input": {"command": "make test-a"}},
                                           {"type": "tool_use", "id": "toolu_two", "name": "Bash", "input": {"command": "make test-b"}}]),
        user("u2", "a1", 2, [{"type": "tool_result", "tool_use_id": "toolu_one", "content": OUTPUT},
                             {"type": "tool_result", "tool_use_id": "toolu_two", "content": [{"type": "text", "text": "b: " + OUTPUT}]}],
             toolUseResult={"stdout": OUTPUT}),
        assistant("a2", "u2", 3, "msg_B", [{"type": "text", "text": "Both ran; suite a has 2 failures."}]),
    ]
    parent = "a2"
    if boundary:
        lines.append(line("mc", "a2", "system", 4, subtype="microcompact_boundary", content="Context microcompacted",
                          isMeta=False, level="info",
                          microcompactMetadata={"trigger": "auto", "preTokens": 60_000, "tokensSaved": 2_000,
                                                "compactedToolIds": ["toolu_one"], "clearedAttachmentUUIDs": []}))
        parent = "mc"
    lines += [user("u3", parent, 5, "Fix the failures in suite a."),
              assistant("a3", "u3", 6, "msg_C", [{"type": "text", "text": "Looking at suite a. " + "It fails because … " * 200}])]
    return b"".join(json.dumps(v, separators=(",", ":")).encode() + b"\n" for v in lines)


def results(transcript) -> dict[str, ToolResult]:
    return {b.tool_call_id: b for m in transcript.messages for b in m.tool_results}


# --- microcompact_boundary -------------------------------------------------------------------


def test_a_microcompacted_result_is_read_as_the_placeholder_claude_code_sent():
    transcript = loads(microcompacted_log(), "log.jsonl")
    plain = loads(microcompacted_log(boundary=False), "log.jsonl")
    assert results(transcript)["toolu_one"].content == "[Old tool result content cleared]" == MICROCOMPACT_PLACEHOLDER
    assert results(transcript)["toolu_two"] == results(plain)["toolu_two"]  # not listed: as it was
    saved = estimate(plain, CONTENT).tokens - estimate(transcript, CONTENT).tokens
    assert saved == pytest.approx((len(OUTPUT) - len(MICROCOMPACT_PLACEHOLDER)) * 0.25, abs=1)


def test_the_file_keeps_the_original_result():
    data = microcompacted_log()
    transcript = loads(data, "log.jsonl")
    assert dumps(transcript) == data
    # A change elsewhere in that line rewrites it, but the cleared result keeps its original JSON.
    message = next(m for m in transcript.messages if m.tool_results)
    blocks = tuple(b if b.tool_call_id == "toolu_one" else ToolResult(b.tool_call_id, "b: cleared by prune", raw=b.raw, line=b.line)
                   for b in message.blocks)
    changed = transcript.with_messages([message.with_blocks(blocks) if m is message else m for m in transcript.messages])
    written = [json.loads(v) for v in dumps(changed).splitlines()]
    one, two = written[4]["message"]["content"]
    assert one == {"type": "tool_result", "tool_use_id": "toolu_one", "content": OUTPUT}
    assert two["content"] == "b: cleared by prune"
    assert results(loads(dumps(changed), "log.jsonl"))["toolu_one"].content == MICROCOMPACT_PLACEHOLDER


def test_a_corpus_boundary_clears_its_results_once_it_is_on_the_chain():
    """The corpus logs' microcompact boundaries all come before a later compact_boundary, off the chain."""
    log = CORPUS / "claude-code/entire-cli-session-70d782f7-long-2x-microcompact-2x-compact.jsonl"
    if not log.exists():
        pytest.skip("the shared corpus is not here")
    lines = log.read_bytes().split(b"\n")
    transcript = loads(log.read_bytes(), str(log))
    assert not any(b.content == MICROCOMPACT_PLACEHOLDER for b in results(transcript).values())
    # Cut the file just after its second microcompact boundary and continue from it: now it is on the chain.
    boundary = json.loads(lines[799])
    assert boundary["subtype"] == "microcompact_boundary"
    follow = {**user("d9c1b1e0-0000-4000-8000-000000000001", boundary["uuid"], 0, "Carry on."),
              "sessionId": boundary["sessionId"], "timestamp": "2026-01-29T03:19:20.000Z"}
    data = b"\n".join(lines[:800] + [json.dumps(follow).encode(), b""])
    continued = loads(data, "cut.jsonl")
    cleared = [r for r in results(continued).values() if r.content == MICROCOMPACT_PLACEHOLDER]
    listed = set(boundary["microcompactMetadata"]["compactedToolIds"])
    assert len(cleared) > 10 and {r.tool_call_id for r in cleared} <= listed
    assert dumps(continued) == data
    saved = estimate(loads(b"\n".join(lines[:800] + [b""]), "x"), CONTENT).tokens - estimate(continued, CONTENT).tokens
    assert saved == pytest.approx(boundary["microcompactMetadata"]["tokensSaved"], rel=0.05)  # what Claude Code says it saved


def test_compaction_copies_the_placeholder_the_api_saw():
    data = microcompacted_log()
    transcript = loads(data, "log.jsonl")
    compacted = append_compaction(transcript, "The user asked which suites exist.", transcript.messages[2:], 2_540)
    out = dumps(compacted)
    assert out.startswith(data)  # the original lines stay as they were
    copied = [json.loads(v) for v in out[len(data):].splitlines()]
    assert copied[2]["message"]["content"] == "Run both test suites."  # the window, after boundary and summary
    result_line = copied[4]
    assert result_line["message"]["content"][0]["content"] == MICROCOMPACT_PLACEHOLDER
    assert result_line["message"]["content"][1]["content"] == [{"type": "text", "text": "b: " + OUTPUT}]
    assert "toolUseResult" not in result_line
    assert results(compacted)["toolu_one"].content == MICROCOMPACT_PLACEHOLDER


# --- what our compaction appends, as Claude Code's loader reads it ---------------------------


def _time(entry: dict) -> float:
    return datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).timestamp()


def claude_code_resume(data: bytes) -> list[tuple[str, list[dict]]]:
    """The API messages `claude --resume` sends, as (role, the log lines they came from), rebuilt the
    way Claude Code's loader does (docs/design.md §6.2): a Map by uuid, the leaf with the newest
    timestamp, the parentUuid walk up to null, then every assistant line of the file sharing a
    `message.id` with one on the chain, and their tool_result lines, put back after it
    (recoverOrphanedParallelToolResults); from the last compact_boundary on, system lines
    dropped, lines of one message.id and consecutive user lines merged."""
    entries = [json.loads(v) for v in data.splitlines() if v.strip()]
    by_uuid = {e["uuid"]: e for e in entries if e.get("type") in ("user", "assistant", "system", "attachment", "progress")}
    pointed = {e.get("parentUuid") for e in by_uuid.values()}
    leaves = []
    for entry in (e for uid, e in by_uuid.items() if uid not in pointed):
        while entry is not None and entry["type"] not in ("user", "assistant"):
            entry = by_uuid.get(entry.get("parentUuid"))
        if entry is not None:
            leaves.append(entry)
    chain, node = [], max(leaves, key=_time)
    while node is not None:
        chain.append(node)
        node = by_uuid.get(node.get("parentUuid"))
    chain.reverse()

    on_chain = {e["uuid"] for e in chain}
    same_id, answers = defaultdict(list), defaultdict(list)
    for entry in by_uuid.values():  # the whole file, not only the chain
        if entry["type"] == "assistant" and entry["message"].get("id"):
            same_id[entry["message"]["id"]].append(entry)
        elif entry["type"] == "user" and isinstance(entry["message"].get("content"), list) and any(
                b.get("type") == "tool_result" for b in entry["message"]["content"]):
            answers[entry.get("parentUuid")].append(entry)
    last_of = {e["message"]["id"]: e["uuid"] for e in chain if e["type"] == "assistant" and e["message"].get("id")}
    recovered = {}
    for message_id, anchor in last_of.items():
        group = same_id[message_id]
        found = sorted([e for e in group if e["uuid"] not in on_chain], key=_time) + sorted(
            [r for e in group for r in answers[e["uuid"]] if r["uuid"] not in on_chain], key=_time)
        on_chain.update(e["uuid"] for e in found)
        recovered[anchor] = found
    full = [x for e in chain for x in (e, *recovered.get(e["uuid"], ()))]

    start = max((i for i, e in enumerate(full) if e.get("subtype") == "compact_boundary"), default=-1) + 1
    api: list[tuple[str, list[dict]]] = []
    for entry in full[start:]:
        if entry["type"] not in ("user", "assistant"):
            continue
        previous = api[-1] if api else None
        if previous and previous[0] == entry["type"] and (
                entry["type"] == "user" or previous[1][-1]["message"].get("id") == entry["message"].get("id")):
            previous[1].append(entry)
        else:
            api.append((entry["type"], [entry]))
    return api


def blocks_of(entries: list[dict]) -> list[dict]:
    return [b for e in entries if isinstance(e["message"]["content"], list) for b in e["message"]["content"]]


def test_the_loader_model_pulls_back_the_lines_of_a_reused_message_id():
    """What went wrong before: a window copied after a boundary with its message.id kept."""
    lines = [json.loads(v) for v in microcompacted_log(boundary=False).splitlines()]
    original = {v["uuid"]: v for v in lines}
    boundary = line("cb", None, "system", 10, subtype="compact_boundary", content="Conversation compacted")
    summary = user("s", "cb", 11, "summary", isCompactSummary=True)
    copy = assistant("a1-copy", "s", 12, "msg_A", original["a1"]["message"]["content"])
    answer = user("u2-copy", "a1-copy", 13, original["u2"]["message"]["content"])
    data = b"".join(json.dumps(v).encode() + b"\n" for v in [*lines, boundary, summary, copy, answer])
    calls = [b["id"] for role, entries in claude_code_resume(data) if role == "assistant" for b in blocks_of(entries)
             if b["type"] == "tool_use"]
    assert calls == ["toolu_one", "toolu_two", "toolu_one", "toolu_two"]  # duplicate tool_use ids: an API 400




@pytest.mark.parametrize("path", claude_code_logs())
def test_claude_code_resumes_our_compaction_as_written(path):
    data = path.read_bytes()
    transcript = loads(data, str(path))
    compacted, report = compact(transcript, CompactOptions(
        force=True, emergency=True, counting=CONTENT, summary=SummaryOptions(keep_recent_tokens=2_000, counting=CONTENT)))
    if report.cut is not None:
        recent = transcript.messages[report.cut:]
    else:  # too small for compact to make it smaller: what it would append, with the last turn kept
        recent = transcript.messages[find_cut_point(transcript, 1, CONTENT).index:]
        compacted = append_compaction(transcript, "A summary.", recent, 0)
    out = dumps(compacted)
    appended = [json.loads(v) for v in out.splitlines()[len(data.rstrip(b"\n").split(b"\n")):]]
    boundary, summary, *window = appended
    api = claude_code_resume(out)

    # The summary first, then the kept window, nothing from before the boundary.
    assert api[0][0] == "user" and api[0][1][0]["uuid"] == summary["uuid"] and summary["isCompactSummary"] is True
    assert [e["uuid"] for _, entries in api for e in entries] == [summary["uuid"]] + [v["uuid"] for v in window]
    calls = [b["id"] for role, entries in api if role == "assistant" for b in blocks_of(entries) if b["type"] == "tool_use"]
    assert len(calls) == len(set(calls))
    for (role, entries), following in zip(api, api[1:] + [("user", [])]):
        asked = {b["id"] for b in blocks_of(entries) if b["type"] == "tool_use"}
        if role == "assistant" and asked and following[1]:
            assert asked <= {b["tool_use_id"] for b in blocks_of(following[1]) if b["type"] == "tool_result"}

    # Each copied response has a new message.id of its own, shared by its lines, and no usage.
    old_ids = {json.loads(v).get("message", {}).get("id") for v in data.splitlines() if v.strip()} - {None}
    copied = [v for v in window if v["type"] == "assistant"]
    assert all(v["message"]["id"].startswith("msg_") and v["message"]["id"] not in old_ids for v in copied)
    originals = {m.raw["message"].get("id") for m in recent if m.role == "assistant"} - {None}
    assert len({v["message"]["id"] for v in copied}) == len(originals)
    assert all(v["message"]["usage"][k] == 0 for v in copied if "usage" in v["message"]
               for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    # So the stale pre-compaction usage no longer anchors the count of the compacted log.
    assert estimate(loads(out, str(path))).recorded is None


def test_a_line_whose_type_is_not_a_string_is_read_past():
    data = (b'{"sessionId":"s","uuid":"u","type":{}}\n'
            b'{"sessionId":"s","uuid":"v","parentUuid":null,"type":"user","timestamp":"2025-01-01T00:00:00Z",'
            b'"message":{"role":"user","content":"hi"}}\n')
    transcript = loads(data, "odd.jsonl")
    assert [m.role for m in transcript.messages] == ["user"] and dumps(transcript) == data
