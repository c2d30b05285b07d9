"""The Gemini CLI chat format: the agent's records read as the view it sends, written back as read."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from transcompact import check, dumps, formats, loads
from transcompact.cli.main import cli
from transcompact.core.jsondata import BOM, array_item_spans
from transcompact.core.model import Message, Text, ToolCall, ToolResult, result_text
from transcompact.core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX
from transcompact.counting.calibrate import recorded_usage
from transcompact.counting.counter import PER_MESSAGE, Options
from transcompact.formats import adapter, rewrites_lines
from transcompact.formats.gemini import reader as gemini_reader
from transcompact.formats.gemini import rewrites as gemini_rewrites
from transcompact.formats.gemini import writer as gemini_writer
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.compaction.summary_message import is_summary_message
from transcompact.ops.convert import convert
from transcompact.ops.estimate import estimate
from transcompact.ops.pruning import archive
from transcompact.ops.pruning.expand import expand
from transcompact.ops.pruning.prune import prune
from transcompact.ops.pruning.slim import slim
from transcompact.ops.validity.check import errors
from transcompact.ops.validity.repair import repair

from .conftest import FIXTURES

GEMINI = FIXTURES / "gemini"
UPSERTS = GEMINI / "session-2026-01-15T20-51-f7633853.jsonl"  # upserts, $rewindTo, info, ignored input
CHECKPOINT = GEMINI / "session-2026-01-16T09-00-3b1c2d4e.jsonl"  # the agent's own $set.messages, content parts
LEGACY = GEMINI / "session-2025-12-16T23-47-b4f17607.json"  # the whole-file JSON
FILES = (UPSERTS, CHECKPOINT, LEGACY)


def read(path):
    return loads(path.read_bytes(), path.name)


def texts(message) -> list[str]:
    return [b.text for b in message.blocks if isinstance(b, Text)]


# --- the agent's own loader (chatRecordingService.ts loadConversationRecord, parseLegacyRecordFallback;
# sessionUtils.ts convertSessionToClientHistory), written from the upstream source ----------------


def agent_records(data: bytes) -> list[dict]:
    held: dict[str, dict] = {}  # a JS Map: a re-set key keeps its place
    metadata: dict = {}
    for line in data.decode().split("\n"):
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line of a pretty-printed legacy file
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("$rewindTo"), str):
            ids = list(held)
            if record["$rewindTo"] in ids:
                for removed in ids[ids.index(record["$rewindTo"]):]:
                    del held[removed]
            else:
                held.clear()
        elif isinstance(record.get("id"), str):
            held[record["id"]] = record
        elif isinstance(record.get("$set"), dict):
            if isinstance(record["$set"].get("messages"), list):
                held.clear()
                held.update((m["id"], m) for m in record["$set"]["messages"] if isinstance(m.get("id"), str))
            metadata.update(record["$set"])
        elif isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str):
            metadata.update(record)
            held.update((m["id"], m) for m in record.get("messages", []) if isinstance(m.get("id"), str))
    if not metadata.get("sessionId"):
        return json.loads(data)["messages"]  # the legacy fallback: the messages as they are
    return list(held.values())


def part_list(content) -> list:
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content]
    return [{"text": content}] if isinstance(content, str) else [content]


def part_string(content) -> str:
    return "".join(p.get("text", "") if "functionCall" not in p and "functionResponse" not in p else "[call]"
                   for p in part_list(content))


def client_history(records: list[dict]) -> list[dict]:
    history = []
    for msg in records:
        if msg["type"] == "user":
            text = part_string(msg["content"]).strip()
            if not text or text.startswith(("/", "?", "<session_context>", "<hook_context>")):
                continue
            history.append({"role": "user", "parts": part_list(msg["content"])})
        elif msg["type"] == "gemini":
            content = part_list(msg["content"]) if msg.get("content") else []
            if any("functionCall" in p or p.get("thought") for p in content):
                parts = content
            else:
                parts = [{"text": t["description"], "thought": True} for t in msg.get("thoughts") or []] + content
                parts += [{"functionCall": {"id": c["id"], "name": c["name"], "args": c["args"]}} for c in msg.get("toolCalls") or []]
            if not parts:
                continue
            history.append({"role": "model", "parts": parts})
            responses = []
            for call in msg.get("toolCalls") or []:
                if isinstance(call.get("result"), list):
                    responses += part_list(call["result"])
                elif isinstance(call.get("result"), str) and call["result"]:
                    responses.append({"functionResponse": {"id": call["id"], "name": call["name"], "response": {"output": call["result"]}}})
            if responses:
                history.append({"role": "user", "parts": responses})
    return history


def assert_every_call_answered(history: list[dict]) -> None:
    for turn, after in zip(history, history[1:] + [None]):
        calls = [p["functionCall"]["id"] for p in turn["parts"] if "functionCall" in p]
        if calls:
            answered = [p["functionResponse"]["id"] for p in (after or {"parts": []})["parts"] if "functionResponse" in p]
            assert after is not None and after["role"] == "user" and answered == calls


# --- detection and round trip -------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_fixture_is_detected_and_written_back_byte_for_byte(path):
    data = path.read_bytes()
    transcript = loads(data, path.name)
    assert transcript.format == "gemini" and transcript.dialect == "anthropic"
    assert dumps(transcript) == data
    assert errors(check(transcript)) == []


def test_other_formats_are_not_taken_for_gemini():
    for path in (FIXTURES / "claude-code/broken-session.jsonl", FIXTURES / "anthropic/tool-loop.json", FIXTURES / "jsonl/chat.jsonl"):
        assert read(path).format != "gemini"
    body = {"sessionId": "s", "projectHash": "p", "history": [{"role": "user", "content": "hi"}]}
    assert loads(json.dumps(body).encode(), "x.json", messages_path="history").format != "gemini"


# --- the active view ----------------------------------------------------------------------------


def test_upserts_rewinds_and_what_the_agent_leaves_out():
    t = read(UPSERTS)
    assert [m.role for m in t.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    # The last copy of the upserted response, in the place of its first: its call answered by its result.
    call, result = t.messages[1].tool_calls[0], t.messages[2].tool_results[0]
    assert call.id == result.tool_call_id == "run_shell_command-1768510312836-c85bc7ab6bf4a8"
    assert "blue.md\ncolor.md\nred.md" in result.content
    assert t.messages[1].raw["tokens"]["input"] == 12207
    # info, the /stats command and the rewound "Delete red.md" turn are not sent.
    said = [text for m in t.messages for text in texts(m)]
    assert "Delete red.md" not in said and "/stats" not in said and "Which one is the newest?" in said
    assert not any("fallback model" in text for text in said)


def test_the_agents_own_set_replaces_every_message_before_it():
    t = read(CHECKPOINT)
    assert texts(t.messages[0])[0].startswith("<state_snapshot>")
    assert texts(t.messages[1]) == ["Got it. Thanks for the additional context!"]
    assert texts(t.messages[2]) == ["README.md says the project compacts LLM transcripts."]
    assert "Read README.md and summarise it." not in [x for m in t.messages for x in texts(m)]
    # A newer record's content holds its thought and call parts; the result still lives in toolCalls.
    turn = t.messages[4]
    assert [type(b).__name__ for b in turn.blocks] == ["Opaque", "Text", "ToolCall"]
    assert t.messages[5].tool_results[0].tool_call_id == turn.tool_calls[0].id


def test_the_view_is_the_agents_own():
    for path in FILES:
        history = client_history(agent_records(path.read_bytes()))
        t = read(path)
        assert [turn["role"] for turn in history] == ["model" if m.role == "assistant" else "user" for m in t.messages]
        assert_every_call_answered(history)


def test_recorded_usage_is_the_prompt_of_the_last_response():
    recorded = recorded_usage(read(UPSERTS).messages)
    assert (recorded.tokens, recorded.output, recorded.message, recorded.responses) == (12480, 30, 5, 3)


# --- writing changes ----------------------------------------------------------------------------


def cleared(t, text="[cleared]"):
    """The transcript with its first tool result replaced by `text`."""
    messages = list(t.messages)
    index = next(i for i, m in enumerate(messages) if m.tool_results)
    messages[index] = messages[index].with_blocks(tuple(replace(b, content=text) for b in messages[index].blocks))
    return t.with_messages(messages)


def test_a_changed_result_goes_back_into_its_call_on_its_line():
    data = UPSERTS.read_bytes()
    out = dumps(cleared(read(UPSERTS)))
    before, after = data.split(b"\n"), out.split(b"\n")
    assert len(before) == len(after) and before[:5] == after[:5]  # nothing is appended, nothing before it changes
    record = orjson.loads(after[5])
    assert record["toolCalls"][0]["result"][0]["functionResponse"]["response"] == {"output": "[cleared]"}
    assert record["tokens"]["input"] == 12207  # its own usage counted the prompt before it, which did not change
    again = loads(out, UPSERTS.name)
    assert again.messages[2].tool_results[0].content == "[cleared]"
    # Later usage counted the old result: its prompt restated, less what the result held at the
    # estimator's 4 characters a token (a transcript no run counted says no other).
    taken = round((len(result_text(read(UPSERTS).messages[2].tool_results[0])) - len("[cleared]")) / 4)
    later = [(orjson.loads(a), orjson.loads(b)) for a, b in zip(before[6:], after[6:]) if a != b]
    assert later and all(new["tokens"] == {**old["tokens"], "input": old["tokens"]["input"] - taken,
                                           "total": old["tokens"]["total"] - taken} for old, new in later)
    assert recorded_usage(again.messages).message == 5 and taken > 0
    assert errors(check(again)) == []


def test_a_changed_result_in_the_legacy_document_is_written_where_it_was():
    data = LEGACY.read_bytes()
    out = dumps(cleared(read(LEGACY), "[gone]"))
    document = json.loads(out)
    assert document["messages"][1]["toolCalls"][0]["result"][0]["functionResponse"]["response"] == {"output": "[gone]"}
    assert {k: v for k, v in document.items() if k != "messages"} == {k: v for k, v in json.loads(data).items() if k != "messages"}
    # The messages before it keep their bytes; the changed ones take one line each: never more lines.
    start = data.rindex(b"{", 0, data.index(b'"id": "d2"'))
    assert out[:start] == data[:start] and out.count(b"\n") < data.count(b"\n")
    # Counted the old result: its prompt restated, less what the result held (4 characters a token).
    taken = round((len(result_text(read(LEGACY).messages[2].tool_results[0])) - len("[gone]")) / 4)
    was = json.loads(data)["messages"][3]["tokens"]
    assert document["messages"][3]["tokens"] == {**was, "input": was["input"] - taken, "total": was["total"] - taken}
    # Its tokens alone restated: its own bytes, laid out as the agent wrote them, but the two figures.
    (start, end), (new_start, new_end) = gemini_reader.message_spans(data)[3], gemini_reader.message_spans(out)[3]
    figures = {b'"input": %d' % was["input"]: b'"input": %d' % (was["input"] - taken),
               b'"total": %d' % was["total"]: b'"total": %d' % (was["total"] - taken)}
    assert all(data[start:end].count(figure) == 1 for figure in figures)
    expected = data[start:end]
    for figure, restated in figures.items():
        expected = expected.replace(figure, restated)
    assert out[new_start:new_end] == expected


def test_a_legacy_chat_read_as_views_is_pruned_as_the_whole_reading_prunes_it_reading_only_what_changed(monkeypatch):
    """prune reads a legacy chat by its views: the records whose results it clears are read whole
    from their bytes, each once; the others keep their bytes unread, and a record whose view kept
    only its usage, when its restated figures cannot be written in its own bytes (a call's
    arguments hold a key `tokens`), is read whole and written anew with every field it had."""
    document = json.loads(LEGACY.read_bytes())
    call = document["messages"][1]["toolCalls"][0]
    document["messages"][3]["toolCalls"] = [{**call, "id": "count-1", "args": {"tokens": 3}, "result": "3 tokens"}]
    data = json.dumps(document, indent=2).encode()
    lazily = loads(data, "t.json", lazily="logs")
    assert lazily.source.viewed is not None and not any(m.is_read for m in lazily.messages)
    read_whole, whole_record = [], gemini_writer._whole_record
    monkeypatch.setattr(gemini_writer, "_whole_record", lambda source, entry: read_whole.append(entry.position) or whole_record(source, entry))
    pruned = cleared(lazily, "[gone]")
    unread = [m for m in pruned.messages if not m.is_read]
    out = dumps(pruned)
    assert unread and not any(m.is_read for m in unread)  # written as their bytes
    assert out == dumps(cleared(loads(data, "t.json"), "[gone]"))
    assert read_whole == [1, 3]  # the record of the cleared result, and the one restated that could not keep its bytes
    written = json.loads(out)["messages"]
    assert written[3] == {**document["messages"][3], "tokens": written[3]["tokens"]} and written[3]["tokens"] != document["messages"][3]["tokens"]


def test_a_json_lines_log_read_as_views_is_pruned_as_the_whole_reading_prunes_it_reading_only_what_changed(monkeypatch):
    """prune reads the JSON Lines log by its line views (text parts of input too): the line of the
    record whose result it clears is read whole, once; a later record whose usage is restated keeps
    its line's bytes, laid out as written, but the two figures; the rest keep theirs unread. The
    post-condition reads the output back by its views, and it is the log the whole reading gives."""
    spaced = b'"tokens": {"input": 12480, "output": 30, "cached": 11790, "thoughts": 0, "tool": 0, "total": 12510}'
    data = UPSERTS.read_bytes().replace(spaced.replace(b": ", b":").replace(b", ", b","), spaced)
    lazily = loads(data, UPSERTS.name, lazily="logs")
    assert lazily.source.viewed is not None and not any(m.is_read for m in lazily.messages)
    assert all(type(entry.record) is not dict for entry in lazily.source.active)  # text parts of input viewed too
    read_whole, whole_record = [], gemini_writer._whole_record
    monkeypatch.setattr(gemini_writer, "_whole_record", lambda source, entry: read_whole.append(entry.line) or whole_record(source, entry))
    pruned = cleared(lazily)
    out = dumps(pruned)
    assert read_whole == [5]  # the cleared result's line
    assert out == dumps(cleared(loads(data, UPSERTS.name)))
    before, after = data.split(b"\n"), out.split(b"\n")
    changed = [number for number, (a, b) in enumerate(zip(before, after)) if a != b]
    assert len(before) == len(after) and changed == [5, 8, 15]  # the result cleared, two usages restated
    taken = round((len(result_text(read(UPSERTS).messages[2].tool_results[0])) - len("[cleared]")) / 4)
    assert after[15] == before[15].replace(b'"input": 12480', b'"input": %d' % (12480 - taken)) \
        .replace(b'"total": 12510', b'"total": %d' % (12510 - taken))
    back = formats.reload(formats.written(pruned), pruned)
    whole = loads(out, UPSERTS.name)
    assert not any(m.is_read for m in back.messages)  # the line written anew by its view too
    assert [(m.role, m.blocks) for m in back.messages] == [(m.role, m.blocks) for m in whole.messages]
    assert recorded_usage(back.messages) == recorded_usage(whole.messages) and errors(check(back)) == []


def test_a_pruned_log_read_back_is_slimmed_as_its_bytes_are():
    """`compact --slim` slims what its prune wrote, read back: lines cut from the input's
    (`CutLine`) go where slim places them as they are, the first line's byte-order mark aside."""
    data = BOM + UPSERTS.read_bytes()
    pruned = cleared(loads(data, UPSERTS.name, lazily="logs"))
    written = formats.written(pruned)
    back = formats.reload(written, pruned)
    out, report = slim(back, bytes(written))
    assert report.dropped and bytes(out).startswith(BOM) and bytes(out).count(BOM) == 1
    assert bytes(out) == bytes(slim(loads(bytes(written), UPSERTS.name), bytes(written))[0])


def test_records_a_resumed_log_holds_in_one_line_are_pruned_in_it_at_once():
    """A `$set` of the messages (a resume's) holds several records on one line: each changed
    record goes back in its place, and the line is written once."""
    records = [{"id": f"r{k}", "type": "gemini", "content": "", "toolCalls": [
        {"id": f"c{k}", "name": "read_file", "args": {"n": k}, "status": "success",
         "result": [{"functionResponse": {"id": f"c{k}", "name": "read_file", "response": {"output": "x" * 500}}}]}]}
        for k in range(3)]
    head = {"sessionId": "s", "projectHash": "p", "startTime": "t"}
    data = b"\n".join(orjson.dumps(v) for v in (head, {"$set": {"messages": records}}, {"id": "u", "type": "user", "content": "go"})) + b"\n"
    transcript = loads(data, "t.jsonl", lazily="logs")
    messages = [m.with_blocks(tuple(replace(b, content="[gone]") for b in m.blocks)) if m.tool_results else m
                for m in transcript.messages]
    out = dumps(transcript.with_messages(messages))
    lines = out.split(b"\n")
    assert len(lines) == 4 and lines[0] == data.split(b"\n")[0]
    written = orjson.loads(lines[1])["$set"]["messages"]
    assert [c["result"][0]["functionResponse"]["response"]["output"] for r in written for c in r["toolCalls"]] == ["[gone]"] * 3
    assert written == [{**r, "toolCalls": [{**r["toolCalls"][0], "result": written[k]["toolCalls"][0]["result"]}]}
                       for k, r in enumerate(records)]


def test_the_ui_copy_of_a_result_left_as_it_was_stays_beside_one_pruned_in_the_same_record():
    """A pruned results turn lets go of the results it was read with (`_Origin.rewritten`): the UI
    copy of each result it changed is replaced, that of a result it left is not."""
    document = json.loads(LEGACY.read_bytes())
    call = document["messages"][1]["toolCalls"][0]
    other = {**call, "id": "read_file-2", "resultDisplay": "the second copy",
             "result": [{"functionResponse": {**call["result"][0]["functionResponse"], "id": "read_file-2"}}]}
    document["messages"][1]["toolCalls"] = [{**call, "resultDisplay": "the first copy"}, other]
    data = json.dumps(document, indent=2).encode()
    for transcript in (loads(data, "t.json", lazily="logs"), loads(data, "t.json")):
        messages = list(transcript.messages)
        index = next(i for i, m in enumerate(messages) if m.tool_results)
        first, second = messages[index].blocks
        messages[index] = messages[index].with_blocks((replace(first, content="[gone]"), second))
        pruned = transcript.with_messages(messages)
        assert messages[index].origin.blocks == ()  # let go of
        calls = json.loads(dumps(adapter(pruned).replace_ui_copies(pruned)))["messages"][1]["toolCalls"]
        assert [c["resultDisplay"] for c in calls] == ["[gone]", "the second copy"]


def test_a_legacy_document_a_rewrite_spliced_reads_back_without_parsing_what_it_kept(monkeypatch):
    """The post-condition reads a spliced legacy document back from the messages it changed: the
    rest is the input's values, and it is the transcript the whole reading gives."""
    pruned = cleared(read(LEGACY), "[gone]")
    out = dumps(pruned)
    whole = loads(out, LEGACY.name)
    kept = pruned.source.document["messages"]
    monkeypatch.setattr(formats, "parse", lambda *args, **kwargs: pytest.fail("parsed whole"))
    back = formats.reload(out, pruned)
    assert [(m.role, m.blocks) for m in back.messages] == [(m.role, m.blocks) for m in whole.messages]
    assert back.source.document == whole.source.document
    same = [a is b for a, b in zip(back.source.document["messages"], kept)]
    assert any(same) and not all(same)  # those it kept are the input's own values
    # Of one it changed, what it kept (its thoughts, a call's arguments) is the input's own too.
    changed = next(k for k, a in enumerate(same) if not a and kept[k].get("toolCalls"))
    back_call, kept_call = back.source.document["messages"][changed]["toolCalls"][0], kept[changed]["toolCalls"][0]
    assert back_call is not kept_call and back_call["args"] is kept_call["args"]


def test_the_ui_copy_of_a_pruned_result_is_pruned_too():
    pruned = cleared(read(UPSERTS))
    out = dumps(adapter(pruned).replace_ui_copies(pruned))
    call = orjson.loads(out.split(b"\n")[5])["toolCalls"][0]
    assert call["resultDisplay"] == "[cleared]" and call["result"][0]["functionResponse"]["response"]["output"] == "[cleared]"


@pytest.mark.parametrize(("path", "kinds"), ((UPSERTS, {"line"}), (LEGACY, {"message"})), ids=("jsonl", "legacy"))
def test_prune_archives_each_layout_by_its_unit_and_expand_gives_it_back(path, kinds):
    """The log by its lines; the legacy document by its messages, whose changed ones shrink to one
    line each (its lines no longer pair with those read)."""
    data = path.read_bytes()
    transcript = read(path)
    out = dumps(cleared(transcript))
    assert rewrites_lines(transcript) == (kinds == {"line"})
    records = archive.records(data, out, transcript)
    assert {r.kind for r in records} == kinds
    # One record per record the prune changed: the cleared result's, and those whose usage it made stale.
    assert len(records) == sum(a != b for a, b in zip(agent_records(data), agent_records(out)))
    assert records[0].tool_call_ids == (transcript.messages[1].tool_calls[0].id,)
    assert expand(out, records, path.name).data == data  # the agent's own layout comes back byte for byte


def test_a_removed_message_is_recorded_as_the_agent_rewrites_history():
    t = read(UPSERTS)
    out = dumps(t.with_messages(t.messages[:3] + t.messages[4:]))
    data = UPSERTS.read_bytes()
    assert out.startswith(data) and out.count(b"\n") == data.count(b"\n") + 1
    last = orjson.loads(out.rstrip(b"\n").rsplit(b"\n", 1)[1])
    assert [m["type"] for m in last["$set"]["messages"]] == ["user", "gemini", "info", "user", "user", "gemini"]
    assert len(loads(out, "x.jsonl").messages) == 5


# --- compaction ---------------------------------------------------------------------------------


def long_chat(turns: int = 12) -> bytes:
    """A Gemini CLI log of `turns` tool loops with large outputs."""
    lines = [{"sessionId": "0c0c0c0c-1111-4222-8333-444455556666", "projectHash": "ab" * 32,
              "startTime": "2026-01-20T10:00:00.000Z", "lastUpdated": "2026-01-20T10:00:00.000Z"}]
    for n in range(turns):
        call_id = f"run_shell_command-{1768900000000 + n}-{n:012x}"
        lines.append({"id": f"u{n}", "timestamp": f"2026-01-20T10:{n:02d}:00.000Z", "type": "user", "content": [{"text": f"Step {n}: list /src/{n}"}]})
        lines.append({"id": f"g{n}", "timestamp": f"2026-01-20T10:{n:02d}:01.000Z", "type": "gemini", "content": f"Listing /src/{n}.",
                      "thoughts": [], "tokens": None, "model": "gemini-2.5-pro",
                      "toolCalls": [{"id": call_id, "name": "run_shell_command", "args": {"command": f"ls /src/{n}"}, "status": "success",
                                     "timestamp": f"2026-01-20T10:{n:02d}:02.000Z",
                                     "result": [{"functionResponse": {"id": call_id, "name": "run_shell_command",
                                                                      "response": {"output": f"file-{n}.py\n" * 600}}}]}]})
        lines.append({"id": f"r{n}", "timestamp": f"2026-01-20T10:{n:02d}:03.000Z", "type": "gemini",
                      "content": f"/src/{n} holds 600 files.", "thoughts": [], "model": "gemini-2.5-pro",
                      "tokens": {"input": 1000 + 2000 * n, "output": 9, "cached": 0, "thoughts": 0, "tool": 0, "total": 1009 + 2000 * n}})
    return b"\n".join(orjson.dumps(line) for line in lines) + b"\n"


def summaries(t) -> int:
    return sum(1 for m in t.messages if is_summary_message(m))


def test_compaction_appends_one_set_and_reads_back_with_one_summary():
    data = long_chat()
    t = loads(data, "session.jsonl")
    recent = t.messages[-4:]
    compacted = adapter(t).append_compaction(t, "What happened before.", recent, 30000)
    out = dumps(compacted)
    assert out.startswith(data) and out.count(b"\n") == data.count(b"\n") + 1  # appended, nothing rewritten
    marker = orjson.loads(out.rstrip(b"\n").rsplit(b"\n", 1)[1])
    assert list(marker) == ["$set"] and [m["type"] for m in marker["$set"]["messages"]] == ["user", "gemini", "user", "gemini", "gemini"]
    again = loads(out, "session.jsonl")
    assert again == compacted and summaries(again) == 1
    assert texts(again.messages[0]) == [SUMMARY_PREFIX + "What happened before."] and texts(again.messages[1]) == [SUMMARY_ACK]
    assert again.messages[2:] == recent
    assert errors(check(again)) == []
    assert recorded_usage(again.messages) is None  # the kept responses counted a context that is gone


def test_a_compaction_that_splits_a_turn_has_the_model_s_part_follow_the_summary():
    """A window that begins with the model's part of a turn: no acknowledgement between (two model
    turns in a row), as every other format writes a split turn (found using compact as a user)."""
    t = loads(long_chat(), "session.jsonl")
    recent = t.messages[-3:]
    assert recent[0].role == "assistant"
    out = dumps(adapter(t).append_compaction(t, "What happened before.", recent, 30000))
    marker = orjson.loads(out.rstrip(b"\n").rsplit(b"\n", 1)[1])
    assert [m["type"] for m in marker["$set"]["messages"]] == ["user", "gemini", "gemini"]  # (a model turn holds its results)
    again = loads(out, "session.jsonl")
    assert texts(again.messages[0]) == [SUMMARY_PREFIX + "What happened before."] and again.messages[1:] == recent
    assert errors(check(again)) == []


def test_compacting_twice_keeps_one_summary_and_the_agent_resumes_it():
    t = loads(long_chat(), "session.jsonl")
    options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=2000))
    first, report = compact(t, options)
    assert report.strategy == "emergency" and report.cut is not None
    once = loads(dumps(first), "session.jsonl")
    twice_compacted, _ = compact(loads(dumps(once) + long_chat(3).split(b"\n", 1)[1], "session.jsonl"), options)
    out = dumps(twice_compacted)
    twice = loads(out, "session.jsonl")
    assert summaries(once) == summaries(twice) == 1 and errors(check(twice)) == []
    # As the agent loads it: the summary, then the kept window (the model's part of the turn the cut
    # split: no acknowledgement between), every call answered.
    history = client_history(agent_records(out))
    assert history[0]["role"] == "user" and history[0]["parts"][0]["text"].startswith(SUMMARY_PREFIX)
    assert history[1]["role"] == "model" and history[1]["parts"] != [{"text": SUMMARY_ACK}]
    assert len(history) == len(twice.messages) and history[-1]["parts"] == [{"text": "/src/2 holds 600 files."}]
    assert_every_call_answered(history)
    assert any("functionCall" in p for turn in history for p in turn["parts"])


def test_compact_reads_a_log_by_its_views_and_reads_whole_only_the_records_it_carries_over(monkeypatch):
    """compact (`lazily="rereads"`) reads the JSON Lines log by its line views: the new `$set`
    holds the recent window's records read whole from their lines, and the output is the one the
    whole reading gives."""
    data = long_chat()
    options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=2000))
    lazily = loads(data, "session.jsonl", lazily="rereads")
    assert lazily.source.viewed is not None and any(not m.is_read for m in lazily.messages)
    read_whole, whole_record = [], gemini_writer._whole_record
    monkeypatch.setattr(gemini_rewrites, "_whole_record", lambda source, entry: read_whole.append(entry.line) or whole_record(source, entry))
    compacted, report = compact(lazily, options)
    out = dumps(compacted)
    assert report.strategy == "emergency" and out == dumps(compact(loads(data, "session.jsonl"), options)[0])
    new_list = orjson.loads(out.rstrip(b"\n").rsplit(b"\n", 1)[1])["$set"]["messages"]
    carried = [record["id"] for record in new_list[1:] if record["content"] != [{"text": SUMMARY_ACK}]]  # (the summary, an acknowledgement)
    lines = {orjson.loads(line)["id"]: number for number, line in enumerate(data.split(b"\n")) if line.startswith(b'{"id"')}
    assert sorted(set(read_whole)) == sorted(lines[record] for record in carried) and 0 < len(carried) < len(lines) / 4


def test_the_legacy_document_gets_its_messages_array_rewritten():
    t = read(LEGACY)
    compacted = adapter(t).append_compaction(t, "Notes were read.", t.messages[-2:], 5000)
    document = json.loads(dumps(compacted))
    assert [m["type"] for m in document["messages"]] == ["user", "gemini", "user"]  # (the window begins with the model)
    assert {k: v for k, v in document.items() if k != "messages"} == {k: v for k, v in t.source.document.items() if k != "messages"}
    history = client_history(agent_records(dumps(compacted)))
    assert history[0]["parts"][0]["text"] == SUMMARY_PREFIX + "Notes were read." and len(history) == 3


def test_a_call_added_by_an_operation_gets_an_entry_holding_its_result():
    t = read(LEGACY)
    call = ToolCall("read_file-1", "read_file", {"file_path": "/tmp/x"})
    answer = ToolResult("read_file-1", "x")
    last = t.messages[-2]
    messages = list(t.messages)
    messages[-2] = last.with_blocks(last.blocks + (call,))
    messages.insert(-1, Message(messages[-1].role, (answer,), line=messages[-1].line))
    again = loads(dumps(t.with_messages(messages)), "x.json")
    assert again.messages[-3].tool_calls[-1].id == "read_file-1" and again.messages[-2].tool_results == (answer,)


# --- the legacy document without a project hash -------------------------------------------------


def test_a_legacy_document_without_a_project_hash_is_read_as_the_agent_falls_back_to_it():
    """Gemini resumes a `.json` that names its session but no project (`parseLegacyRecordFallback`)."""
    document = json.loads(LEGACY.read_bytes())
    del document["projectHash"]
    data = json.dumps(document, indent=2).encode()
    t = loads(data, LEGACY.name)
    assert t.format == "gemini" and t.messages == read(LEGACY).messages
    assert dumps(t) == data and errors(check(t)) == []
    history = client_history(agent_records(data))
    assert [turn["role"] for turn in history] == ["model" if m.role == "assistant" else "user" for m in t.messages]
    compacted = json.loads(dumps(adapter(t).append_compaction(t, "Notes were read.", t.messages[-2:], 5000)))
    assert "projectHash" not in compacted and compacted["messages"][0]["content"][0]["text"] == SUMMARY_PREFIX + "Notes were read."


def test_a_document_that_names_a_session_is_no_chat_without_the_agents_records():
    for messages in ([{"role": "user", "content": "hi"}], [], [{"id": "m1", "role": "user", "content": "hi"}]):
        body = json.dumps({"sessionId": "s", "messages": messages}).encode()
        assert loads(body, "x.json").format != "gemini"


# --- results recorded twice (Gemini CLI 0.61) ---------------------------------------------------


def recorded_twice(rounds: int = 4, *, resumed: bool = False) -> bytes:
    """A chat as Gemini CLI 0.61 records one (tests/test_gemini_resume.py records real ones): each
    response's record written again once its calls ran, with `toolCalls[].result`, then a user
    record holding the same `functionResponse` parts; ids prefixed with the tool's name. Resumed,
    Gemini appends its own `$set` of the history it converted: the calls then live in the model
    record's content, and the results in a `<id>_response` user record beside the first copy."""
    def stamp(n: int, second: int) -> str:
        return f"2026-11-20T10:{n:02d}:{second:02d}.000Z"

    lines: list[dict] = [{"sessionId": "5a5a5a5a-1111-4222-8333-444455556666", "projectHash": "cd" * 32,
                          "startTime": stamp(0, 0), "lastUpdated": stamp(0, 0), "kind": "main"},
                         {"$set": {"messages": [{"id": "env", "timestamp": stamp(0, 0), "type": "user",
                                                 "content": [{"text": "<session_context>\nlinux\n</session_context>"}]}]}}]
    history: list[dict] = [lines[1]["$set"]["messages"][0]]
    for n in range(rounds):
        ask = {"id": f"u{n}", "timestamp": stamp(n, 1), "type": "user", "content": [{"text": f"Round {n}: read a{n}.py and b{n}.py."}]}
        ids = [f"read_file__read_file_17957{n:08d}_{k}" for k in range(2)]
        responses = [{"functionResponse": {"id": i, "name": "read_file", "response": {"output": f"{i}: " + "x = 1\n" * 400}}} for i in ids]
        model = {"id": f"g{n}", "timestamp": stamp(n, 2), "type": "gemini", "content": f"Reading both files of round {n}.",
                 "thoughts": [{"subject": "", "description": f"Round {n} needs both.", "timestamp": stamp(n, 2)}],
                 "tokens": {"input": 12000 + 5000 * n, "output": 10, "cached": 0, "thoughts": 0, "tool": 0, "total": 12010 + 5000 * n},
                 "model": "gemini-3.8-flash"}
        calls = [{"id": i, "name": "read_file", "args": {"file_path": f"{'ab'[k]}{n}.py"}, "result": [responses[k]], "status": "success",
                  "timestamp": stamp(n, 3), "resultDisplay": "", "description": f"{'ab'[k]}{n}.py", "displayName": "ReadFile",
                  "renderOutputAsMarkdown": True} for k, i in enumerate(ids)]
        answer = {"id": f"r{n}", "timestamp": stamp(n, 3), "type": "user", "content": responses}
        done = {"id": f"d{n}", "timestamp": stamp(n, 4), "type": "gemini", "content": f"Round {n} is read.", "thoughts": [],
                "tokens": {"input": 14000 + 5000 * n, "output": 10, "cached": 0, "thoughts": 0, "tool": 0, "total": 14010 + 5000 * n},
                "model": "gemini-3.8-flash"}
        lines += [ask, model, {**model, "toolCalls": calls}, answer, done]
        history += [ask, {"id": model["id"], "timestamp": stamp(n, 2), "type": "gemini",
                          "content": [{"text": f"Round {n} needs both.", "thought": True}, {"text": model["content"]},
                                      *({"functionCall": {"id": i, "name": "read_file", "args": c["args"]}} for i, c in zip(ids, calls))]},
                    {"id": f"g{n}_response", "timestamp": stamp(n, 2), "type": "user", "content": responses},
                    answer, {"id": done["id"], "timestamp": stamp(n, 4), "type": "gemini", "content": [{"text": done["content"]}]}]
    if resumed:
        lines += [{**lines[0], "startTime": stamp(59, 0)}, lines[1], {"$set": {"sessionId": lines[0]["sessionId"]}},
                  {"$set": {"messages": history, "lastUpdated": stamp(59, 1)}},
                  {"id": "u-last", "timestamp": stamp(59, 2), "type": "user", "content": [{"text": "Carry on."}]},
                  {"id": "d-last", "timestamp": stamp(59, 3), "type": "gemini", "content": "Carrying on.", "thoughts": [], "tokens": None}]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def coalesced(history: list[dict]) -> list[dict]:
    """The turns Gemini sends: consecutive turns of one role are one (`coalesceConsecutiveRoles`)."""
    out: list[dict] = []
    for turn in history:
        if out and out[-1]["role"] == turn["role"]:
            out[-1] = {"role": turn["role"], "parts": out[-1]["parts"] + turn["parts"]}
        else:
            out.append(turn)
    return out


def assert_sent_paired(data: bytes) -> None:
    """As Gemini sends the chat: every call answered in the next turn, every answer to a call of the turn before."""
    turns = coalesced(client_history(agent_records(data)))
    for turn, after in zip(turns, turns[1:] + [None]):
        calls = {p["functionCall"]["id"] for p in turn["parts"] if "functionCall" in p}
        if calls:
            assert after is not None and calls <= {p["functionResponse"]["id"] for p in after["parts"] if "functionResponse" in p}
        if after is not None and after["role"] == "user":
            assert {p["functionResponse"]["id"] for p in after["parts"] if "functionResponse" in p} <= calls


def results_of(t) -> Counter:
    return Counter((b.tool_call_id, b.content) for m in t.messages for b in m.tool_results)


@pytest.mark.parametrize("resumed", [False, True], ids=["recorded", "resumed"])
def test_results_recorded_twice_are_read_as_the_agent_sends_them(resumed):
    data = recorded_twice(resumed=resumed)
    t = loads(data, "session.jsonl")
    sent_results = Counter((p["functionResponse"]["id"], p["functionResponse"]["response"]["output"])
                           for turn in client_history(agent_records(data)) for p in turn["parts"] if "functionResponse" in p)
    assert results_of(t) == sent_results and set(sent_results.values()) == {2}  # each result twice, as it is sent
    assert [m.role for m in t.messages[:5]] == ["user", "assistant", "user", "user", "assistant"]
    assert errors(check(t)) == [] and dumps(t) == data


def test_results_recorded_twice_are_counted_as_sent():
    """The estimate counts what the agent sends on resume: each result twice. The copy in the call
    was in no prompt whose usage a record holds (the agent sent the user record's copy): the
    estimate anchored on that usage counts it on top."""
    data = recorded_twice()
    once = b"".join(line + b"\n" for line in data.splitlines() if not line.startswith(b'{"id":"r'))  # no user record copies
    twice, single = loads(data, "session.jsonl"), loads(once, "session.jsonl")
    copies = estimate(single, Options(count="content")).by_kind["tool_results"]
    assert estimate(twice, Options(count="content")).by_kind["tool_results"] == pytest.approx(2 * copies, abs=4)
    in_calls = {i for i, m in enumerate(twice.messages) if isinstance(m.raw, list)}  # read from `toolCalls[].result`
    assert adapter(twice).unrecorded_messages(twice) == in_calls and len(in_calls) == 4
    assert estimate(twice).tokens - estimate(single).tokens == pytest.approx(copies + PER_MESSAGE * len(in_calls), abs=4)
    resumed = loads(recorded_twice(resumed=True), "session.jsonl")
    assert adapter(resumed).unrecorded_messages(resumed) == frozenset()  # both copies are user records, both sent


@pytest.mark.parametrize("resumed", [False, True], ids=["recorded", "resumed"])
def test_results_recorded_twice_stay_paired_after_every_rewrite(resumed):
    """Prune, repair, compact at every cut (once, twice, --slim): what the agent sends
    answers every call in the next turn; a conversion answers each call once (the Messages API
    refuses a second `tool_result` for a `tool_use`)."""
    def window(messages: int) -> CompactOptions:
        return CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=0, keep_recent_messages=messages))

    data = recorded_twice(resumed=resumed)
    t = loads(data, "session.jsonl")
    pruned, report = prune(t)
    assert report.soft_trimmed + report.cleared > 0
    rewritten = {"prune": dumps(pruned), "repair": dumps(repair(t)[0])}
    compacted = {}
    for keep in range(1, len(t.messages)):
        for drop in (False, True):
            once, report = compact(t, replace(window(keep), slim=drop))
            if report.strategy == "emergency":
                compacted[f"{keep}{' drop' * drop}"] = out = dumps(once)
                twice, report = compact(loads(out, "session.jsonl"), window(max(1, keep // 2)))
                if report.strategy == "emergency":
                    compacted[f"{keep}{' drop' * drop} twice"] = dumps(twice)
    assert len(compacted) > 20
    for name, out in {**rewritten, **compacted}.items():
        again = loads(out, "session.jsonl")
        assert errors(check(again)) == [], name
        assert_sent_paired(out)
        assert summaries(again) == (name in compacted), name
    for to in ("anthropic", "openai"):
        converted = convert(t, to)
        answers = Counter(b.tool_call_id for m in converted.messages for b in m.tool_results)
        assert set(answers.values()) == {1} and set(answers) == {c.id for m in t.messages for c in m.tool_calls}, to
        assert errors(check(converted)) == []


def test_a_call_id_that_is_no_string_is_a_clear_error(tmp_path):
    """A `functionCall.id` or a `toolCalls[].id` that is a list or an object: exit 3 naming the line
    (it was an internal error in repair and prune, or a repair that read back otherwise)."""
    path = FIXTURES / "gemini" / "session-2026-01-16T09-00-3b1c2d4e.jsonl"
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"functionCall"' in line)
    lines[at] = lines[at].replace('"functionCall":{"id":"', '"functionCall":{"id":["', 1).replace(
        '","name":"run_shell_command","args"', '"],"name":"run_shell_command","args"', 1)
    broken = tmp_path / path.name
    broken.write_text("\n".join(lines) + "\n")
    for command in ("estimate", "check", "repair", "prune"):
        result = CliRunner().invoke(cli, [command, str(broken)], prog_name="transcompact")
        assert result.exit_code == 3, (command, result.stderr)
        assert f"{broken}:{at + 1}: a tool call's `id` must be a string, not an array" in result.stderr


def test_a_null_among_a_legacy_files_messages_stays_where_it_was(tmp_path):
    """The agent skips it; a rewrite kept every message but it, so prune --archive found another
    number of messages and stopped with an internal error."""
    document = json.loads((FIXTURES / "gemini" / "session-2025-12-16T23-47-b4f17607.json").read_bytes())
    document["messages"][1]["toolCalls"][0]["result"][0]["functionResponse"]["response"]["output"] = "buy milk\n" * 500
    document["messages"].insert(1, None)
    path = tmp_path / "session.json"
    path.write_text(json.dumps(document, indent=2))
    pruned, archived = tmp_path / "pruned.json", tmp_path / "archive.jsonl"
    result = CliRunner().invoke(cli, ["prune", "-q", "--archive", str(archived), "--hard-clear-after", "0", "--keep-last",
                                      "0", "--soft-trim-chars", "10", "--head", "2", "--tail", "2", "-o", str(pruned),
                                      str(path)], prog_name="transcompact")
    assert result.exit_code == 0, result.stderr
    assert json.loads(pruned.read_bytes())["messages"][1] is None and pruned.read_bytes() != path.read_bytes()
    expanded = CliRunner().invoke(cli, ["expand", "-q", "--archive", str(archived), str(pruned)], prog_name="transcompact")
    assert expanded.exit_code == 0 and json.loads(expanded.stdout_bytes) == document


def legacy_with(change) -> bytes:
    """The legacy fixture with `change` made to its `messages`, pretty-printed as the agent writes it."""
    document = json.loads(LEGACY.read_bytes())
    change(document["messages"])
    return json.dumps(document, indent=2).encode()


def call_renamed_last(messages: list) -> None:
    """The chat ends on the record whose call was renamed: its result answers no call."""
    del messages[2:]
    messages[1]["toolCalls"][0]["id"] = "read_file-renamed"


def result_names_another_id(messages: list) -> None:
    messages[1]["toolCalls"][0]["result"][0]["functionResponse"]["id"] = "read_file-other"


def result_names_the_next_calls_id(messages: list) -> None:
    """A second record of one call after the first; the first call's result names the second's id."""
    second = json.loads(json.dumps(messages[1]).replace("read_file-1765928822000-0a1b2c3d", "read_file-second"))
    messages.insert(2, {**second, "id": "d2b"})
    messages[1]["toolCalls"][0]["result"][0]["functionResponse"]["id"] = "read_file-second"


def result_an_empty_string(messages: list) -> None:
    """A string result is sent as the call's output: the stand-in, an error, is written as a response part."""
    messages[1]["toolCalls"][0]["result"] = ""


@pytest.mark.parametrize("change", [call_renamed_last, result_names_another_id, result_names_the_next_calls_id, result_an_empty_string],
                         ids=lambda change: change.__name__)
def test_repair_of_a_legacy_chat_whose_call_and_result_ids_differ_answers_the_call_in_its_record(change):
    """Repair drops the result that answers no call and answers the call with a stand-in in its own
    record, where the agent resumes it from: a placeholder repair leaves after it is a user record of
    its own (it was an internal error), and a stand-in no longer lands in the next record's calls
    (dropped: the output read back otherwise) or the next user record (sent a turn too late)."""
    repaired = CliRunner().invoke(cli, ["repair", "-q", "-"], input=legacy_with(change), prog_name="transcompact")
    assert repaired.exit_code == 0, repaired.stderr
    assert CliRunner().invoke(cli, ["check", "-q", "-"], input=repaired.stdout_bytes).exit_code == 0
    records = agent_records(repaired.stdout_bytes)
    assert_every_call_answered(client_history(records))
    stand_in = records[1]["toolCalls"][0]["result"]
    assert [p["functionResponse"]["response"] for p in stand_in] == [{"error": "[No result recorded]"}]


# --- where each message of a legacy document sits -------------------------------------------

_JSON_TEXT = st.text(alphabet=st.sampled_from('ab "\\\n\t{}[],:é'), max_size=12)
_VALUES = st.recursive(st.none() | st.integers() | _JSON_TEXT,
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_JSON_TEXT, inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(st.dictionaries(_JSON_TEXT, _VALUES, max_size=4) | _VALUES, max_size=5),
       before=st.dictionaries(st.sampled_from(["sessionId", "projectHash", "messages2"]), _VALUES, max_size=2),
       after=st.dictionaries(st.sampled_from(["lastUpdated", "kind"]), _VALUES, max_size=2),
       indent=st.sampled_from([2, 4, "\t", None]))
def test_the_messages_of_a_document_are_found_by_its_layout_as_by_reading_it_whole(messages, before, after, indent):
    """The byte searches of an indented document (reader._indented_spans) find each message where
    reading every string and bracket does, or leave it to that reading."""
    data = json.dumps({**before, "messages": messages, **after}, indent=indent, ensure_ascii=False).encode()
    assert gemini_reader.message_spans(data) == array_item_spans(data, "messages")


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(st.dictionaries(_JSON_TEXT, _VALUES, max_size=4), min_size=1, max_size=5), data=st.data())
def test_the_messages_a_write_spliced_onto_a_line_are_found_as_by_reading_it_whole(messages, data):
    """A legacy document whose changed messages a write put on a line of their own (`_spliced`),
    or laid out any other way around them: its layout finds each message where reading every
    string and bracket does, or leaves it to that reading."""
    document = json.dumps({"sessionId": "s", "messages": messages}, indent=2, ensure_ascii=False).encode()
    spans = array_item_spans(document, "messages")
    spliced = data.draw(st.sets(st.sampled_from(range(len(spans)))))
    odd = data.draw(st.sampled_from(["", "\n        ", "\n    ", " "]))  # a break or a space inside one of them
    out, end = [], 0
    for k, (start, stop) in enumerate(spans):
        if k in spliced:
            one_line = json.dumps(messages[k], ensure_ascii=False).encode()
            if odd and len(one_line) > 2:
                one_line = one_line[:-1] + odd.encode() + one_line[-1:]
            out += [document[end:start], one_line]
            end = stop
    written = b"".join([*out, document[end:]])
    assert gemini_reader.message_spans(written) == array_item_spans(written, "messages")
