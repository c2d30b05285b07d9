"""The quick reading of a request body: what it reads is what the whole reading reads,
it counts the same without building the messages, and it writes back the bytes it did not change."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transcompact.core.errors import TranscompactError
from transcompact.core.jsondata import BOM, CutLine, PartialLine, line_bytes, parse
from transcompact.counting.counter import TokenCounter
from transcompact.dialects.views import _chars
from transcompact.formats import BY_NAME, adapter, detect, dumps, loads, trim, written
from transcompact.formats._document import read_quickly
from transcompact.formats.claude_code.reader import MESSAGE_LINE_FIELDS
from transcompact.formats.pi.parsing import ViewedEntry
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.cut import find_cut_point
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.estimate import estimate
from transcompact.ops.pruning.prune import PruneOptions, prune
from transcompact.ops.validity.check import check
from transcompact.ops.validity.postcondition import comparable, verified
from transcompact.ops.validity.repair import repair

from .builders import claude_code_logs, claude_log, gemini_documents, pi_logs
from .conftest import CORPUS, FIXTURES
from .strategies import (
    anthropic_messages,
    claude_code_log,
    conversations,
    corpus_seeds,
    encode_document,
    encode_json,
    fixture_seeds,
    hostile_transcripts,
    mutated_files,
    openai_messages,
    transcripts,
)

BODY = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [
    {"role": "user", "content": "Fix the tests."},
    {"role": "assistant", "content": [{"type": "thinking", "thinking": "Read first.", "signature": "c2ln"},
                                      {"type": "text", "text": "Reading."},
                                      {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py", "size": 1e5}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "x = 1"}],
                                  "cache_control": {"type": "ephemeral"}}]},
    {"role": "assistant", "content": "Done."},
]}


def same_messages(one, other) -> bool:
    """Equal messages, a number kept as written (an orjson.Fragment, equal only to itself) by its
    text; a log's message read from lines kept in part has the fields of its first line they kept."""
    def record(message, like) -> bytes:
        raw = message.raw
        if type(like.raw) is PartialLine and type(raw) is not PartialLine:
            raw = {**{key: raw[key] for key in MESSAGE_LINE_FIELDS if key in raw},
                   "message": {key: raw["message"][key] for key in ("id", "usage") if key in raw["message"]}}
        return orjson.dumps(raw)

    return [(m.role, comparable(m.blocks), record(m, o)) for m, o in zip(one, other)] == [
        (m.role, comparable(m.blocks), record(m, o)) for m, o in zip(other, one)] and len(one) == len(other)


def slowly(data: bytes):
    """The whole reading, as every format but a request body is read."""
    parsed = parse(data, "t.json", trim=trim())
    return BY_NAME[detect(parsed)].read(parsed)


def test_a_request_body_is_read_without_building_its_messages():
    transcript = loads(orjson.dumps(BODY), "t.json", lazily=True)
    assert [m.is_read for m in transcript.messages] == [False] * 4
    report = estimate(transcript)
    assert [m.is_read for m in transcript.messages] == [False] * 4  # counted from what the reader saw
    assert report == estimate(slowly(orjson.dumps(BODY)))
    assert report.top_results[0].tool == "read"


def test_what_is_unread_is_read_when_asked_for_and_equals_the_whole_reading():
    data = orjson.dumps(BODY, option=orjson.OPT_INDENT_2).replace(b"100000.0", b"1e5")
    quick, whole = loads(data, "t.json", lazily=True), slowly(data)
    assert same_messages(quick.messages, whole.messages)
    assert orjson.dumps((quick.request, comparable(quick.system), quick.tools)) == orjson.dumps((whole.request, comparable(whole.system), whole.tools))
    assert orjson.dumps(quick.messages[1].raw["content"][2]["input"]) == b'{"path":"a.py","size":1e5}'  # as written


def test_an_unchanged_message_is_written_back_as_its_own_bytes():
    data = orjson.dumps(BODY, option=orjson.OPT_INDENT_2).replace(b'"Fix the tests."', b'"Fix the \\u0074ests."').replace(b"100000.0", b"1e5")
    transcript = loads(data, "t.json", lazily=True)
    assert dumps(transcript) == data
    shorter = transcript.with_messages(transcript.messages[:-1])
    out = dumps(shorter)
    assert b'"Fix the \\u0074ests."' in out and b'"size": 1e5' in out  # kept as written, not read and written again
    assert orjson.loads(out)["messages"] == orjson.loads(data)["messages"][:-1]
    assert not any(m.is_read for m in shorter.messages[1:])


@pytest.mark.parametrize("data", [
    b'{"messages":[{"role":"user","content":"caf\xe9"}]}',  # not UTF-8
    b'{"messages":[{"role":"user","content":"\\x"}]}',  # an escape JSON has not
    b'{"messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":' + b"[" * 300 + b"]" * 300 + b"}]}]}",
    b'{"messages":[{"role":"user","content":"a"}]',  # cut short
], ids=["not-utf8", "bad-escape", "too-deep", "truncated"])
def test_a_broken_body_is_left_to_the_whole_reading_which_says_where(data):
    assert read_quickly(data, "t.json", None) is None
    with pytest.raises(TranscompactError) as quick:
        loads(data, "t.json", lazily=True)
    with pytest.raises(TranscompactError) as whole:
        slowly(data)
    assert str(quick.value) == str(whole.value)


def test_a_message_with_a_field_no_view_names_is_read_at_once():
    body = {"messages": [{"role": "user", "content": "a", "name": "me"},
                         {"role": "assistant", "content": [{"type": "text", "text": "b", "id": "x"}]},
                         {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]}
    transcript = loads(orjson.dumps(body), "t.json", lazily=True)
    assert [m.is_read for m in transcript.messages] == [True, True, True]
    assert same_messages(transcript.messages, slowly(orjson.dumps(body)).messages)


def written_or_refused(transcript) -> Any:
    """What a write of `transcript` gives: the values of its output, or the error that refused it."""
    try:
        return values(dumps(transcript))
    except TranscompactError as error:
        return str(error)


def same_reading(data: bytes) -> None:
    """What `loads(lazily=True)` reads (a request body read quickly, a Claude Code log's lines kept
    in part) is what the whole reading reads, counts the same unread, and rewrites the same."""
    try:
        whole = slowly(data)
    except TranscompactError as error:
        with pytest.raises(TranscompactError) as lazily:
            loads(data, "t.json", lazily=True)
        assert str(lazily.value) == str(error)
        return
    quick = loads(data, "t.json", lazily=True)
    assert (quick.format, quick.dialect) == (whole.format, whole.dialect)
    assert same_messages(quick.messages, whole.messages)
    assert orjson.dumps((quick.request, comparable(quick.system), quick.tools)) == orjson.dumps((whole.request, comparable(whole.system), whole.tools))
    quick = loads(data, "t.json", lazily=True)  # counted unread
    unread = [m for m in quick.messages if not m.is_read]
    assert estimate(quick) == estimate(whole)
    assert TokenCounter(quick).counted(quick) == TokenCounter(whole).counted(whole)
    assert check(quick, path="t.jsonl") == check(whole, path="t.jsonl")  # from the views, for what is unread
    assert not any(m.is_read for m in unread)  # counting and checking read nothing
    assert find_cut_point(quick, 50) == find_cut_point(whole, 50)  # (it reads the messages around the cut)
    assert bytes(dumps(quick)) == bytes(dumps(whole)) == data
    if not unread:
        return  # read whole: nothing more to compare
    assert written_or_refused(quick.with_messages(quick.messages[1:])) == written_or_refused(whole.with_messages(whole.messages[1:]))
    # A rewrite of what was read lazily: the same output, and it passes the post-condition every command runs.
    # (Pruning reads only the messages whose results it may change: the defaults keep the most unread.)
    options = PruneOptions(keep_last=0, hard_clear_after=1, soft_trim_chars=10, head=2, tail=2)
    still_unread = [m for m in quick.messages if not m.is_read]
    for pruning in (options, PruneOptions(), PruneOptions(keep_last=1, hard_clear_after=2, archive=True)):
        (quick_pruned, quick_report), (whole_pruned, whole_report) = prune(quick, pruning), prune(whole, pruning)
        assert quick_report == whole_report and values(dumps(quick_pruned)) == values(dumps(whole_pruned))
        if quick.format in ("claude-code", "pi", "gemini"):  # a log's lines, a legacy chat's records: byte for byte
            assert bytes(written(quick_pruned)) == bytes(written(whole_pruned))
        verified(quick, quick_pruned, written(quick_pruned), operation="prune")
    # What pruning changed it read apart: the input is not held read (a large log's memory).
    assert not any(m.is_read for m in still_unread)
    if quick.format in ("claude-code", "pi", "gemini"):  # its own rewrites read what was kept in part again from its bytes
        for rewrite in (lambda t: adapter(t).replace_ui_copies(prune(t, options)[0]), lambda t: repair(t)[0],
                        lambda t: compact(t, EMERGENCY)[0]):
            assert values(dumps(rewrite(loads(data, "t.json", lazily=True)))) == values(dumps(rewrite(whole)))
        # The emergency summary reads the old part apart too: what it dropped is not held read.
        lazy = loads(data, "t.json", lazily="logs")
        unread = [i for i, m in enumerate(lazy.messages) if not m.is_read]
        report = compact(lazy, EMERGENCY)[1]
        if report.strategy == "emergency" and report.cut is not None:
            assert not any(lazy.messages[i].is_read for i in unread if i < report.cut)


EMERGENCY = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=50))


def values(data: bytes) -> list:
    """The JSON values of a document or of JSON Lines, a number kept as written by its text."""
    lines = data.removeprefix(BOM).split(b"\n")
    try:
        return [orjson.loads(data.removeprefix(BOM))]
    except orjson.JSONDecodeError:
        return [orjson.loads(line) for line in lines if line.strip()]


QUICK = settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@QUICK
@given(transcripts())
def test_the_quick_reading_is_the_whole_reading_of_generated_transcripts(transcript):
    same_reading(transcript[1])


@QUICK
@given(conversations(), st.sampled_from([anthropic_messages, openai_messages]))
def test_the_quick_reading_is_the_whole_reading_of_request_bodies(turns, dialect):
    data = encode_document(dialect(turns), "request")
    assert read_quickly(data, "t.json", None) is not None
    same_reading(data)


@QUICK
@given(claude_code_log(), st.booleans())
def test_the_lazy_reading_is_the_whole_reading_of_claude_code_logs(lines, ascii_only):
    data = b"".join(encode_json(line, indent=False, ascii_only=ascii_only) + b"\n" for line in lines)
    same_reading(data)


def test_a_response_with_a_line_of_no_block_is_read_whole_and_the_same():
    """A view's lines are the lines of its blocks: a response one of whose lines holds none is
    read at once, and reads, counts and rewrites as the whole reading does."""
    def line(uuid, parent, kind, content, message_id=None):
        message = {"role": kind, "content": content, **({"id": message_id} if message_id else {})}
        return {"parentUuid": parent, "isSidechain": False, "sessionId": "s", "type": kind, "message": message,
                "uuid": uuid, "timestamp": "2026-11-01T10:00:00.000Z"}

    lines = [line("u1", None, "user", "Run the tests."),
             line("a1", "u1", "assistant", [], "msg_1"),
             line("a2", "a1", "assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
                  "msg_1"),
             line("u2", "a2", "user", [{"type": "tool_result", "tool_use_id": "t1", "content": "x " * 3000}])]
    data = b"".join(json.dumps(value).encode() + b"\n" for value in lines)
    lazily = loads(data, "t.jsonl", lazily=True)
    assert [m.is_read for m in lazily.messages] == [False, True, False]
    same_reading(data)


@QUICK
@given(hostile_transcripts(), st.booleans())
def test_the_quick_reading_is_the_whole_reading_of_hostile_transcripts(data, bom):
    same_reading(BOM + data if bom and not data.startswith(BOM) else data)


@QUICK
@given(mutated_files(fixture_seeds()))
def test_the_quick_reading_is_the_whole_reading_of_mutated_fixtures(data):
    same_reading(data)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")
@QUICK
@given(st.deferred(lambda: mutated_files(corpus_seeds())))
def test_the_quick_reading_is_the_whole_reading_of_mutated_corpus_files(data):
    same_reading(data)


@given(st.text(), st.sampled_from(["orjson", "ascii", "slashes"]))
def test_a_string_left_as_its_bytes_counts_the_characters_it_decodes_to(text, spelling):
    written = {"orjson": orjson.dumps(text), "ascii": json.dumps(text).encode(),
               "slashes": json.dumps(text, ensure_ascii=False).replace("/", "\\/").encode()}[spelling]
    assert _chars(msgspec.Raw(written)) == len(text)


@pytest.mark.parametrize("path", claude_code_logs())
def test_the_lazy_reading_is_the_whole_reading_of_real_claude_code_logs(path):
    data = path.read_bytes()
    same_reading(data)
    transcript = loads(data, "t.json", lazily=True)
    assert any(not m.is_read for m in transcript.messages)  # most of a real log is counted unread


def test_a_pruned_claude_code_log_is_its_input_lines_but_what_changed():
    """Read as prune reads a log (lines kept in part): a cleared result's line holds its new
    message and, as the input's own bytes, the rest (the UI's copy of the output, not made again
    for a large log's every cleared result); each line of a response after it holds its restated
    usage and the rest as its bytes, the restated fields held once for the response. Byte for
    byte the output of the whole reading."""
    lines = [orjson.loads(line) for line in claude_log(rounds=6, size=3000).splitlines()]
    for line in lines:
        if line["type"] == "assistant":
            line["message"]["usage"] = {"input_tokens": 10, "cache_read_input_tokens": 9000, "output_tokens": 20}
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    options = PruneOptions(keep_last=1, hard_clear_after=1)
    out = written(prune(loads(data, "s.jsonl", lazily="logs"), options)[0])
    assert bytes(out) == bytes(written(prune(loads(data, "s.jsonl"), options)[0]))
    changed = [k for k, (line, _) in enumerate(out.records) if bytes(line_bytes(out.records[k])) != data.split(b"\n")[k]]
    cleared = [k for k in changed if lines[k]["type"] == "user"]
    assert len(cleared) == 5 and all(type(out.records[k][0]) is CutLine for k in changed)
    assert all(json.loads(line_bytes(out.records[k]))["toolUseResult"] == lines[k]["toolUseResult"] for k in cleared)
    thinking, call = next((k, k + 1) for k in changed if lines[k]["type"] == "assistant" and k + 1 in changed)
    assert out.records[thinking][1]["message"] is out.records[call][1]["message"]


@pytest.mark.parametrize("path", pi_logs())
def test_the_lazy_reading_is_the_whole_reading_of_real_pi_logs(path):
    """A pi session read for counting: each message entry its typed view can count is left unread
    (its line not parsed), and everything reads, counts, checks and rewrites as the whole reading."""
    data = path.read_bytes()
    same_reading(data)
    transcript = loads(data, "t.json", lazily=True)
    records = transcript.source.records
    assert any(not m.is_read for m in transcript.messages)
    assert all(type(records[m.line - 1][1]) is ViewedEntry for m in transcript.messages if not m.is_read)


PI_SESSION = FIXTURES / "pi" / "2026-01-10T09-00-00-000Z_4f1c2a9e-6b1d-4c0e-9a51-0c3f5e2b7d11.jsonl"


@pytest.mark.parametrize(("line", "old", "new"), [
    (6, b'"isError":false', b'"isError":false,"note":"a field pi does not write"'),
    (6, b'[{"type":"text",', b'[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},{"type":"text",'),
    (6, b'"isError":false', b'"isError":false,"details":' + b"[" * 300 + b"]" * 300),  # too deep to write
    (6, b'"toolCallId":"toolu_01ReadCalc"', b'"toolCallId":5'),  # the reader refuses it, and says where
    (5, b'"thinkingSignature":"EqQBCkYIBxgCKkB0c2lnbmF0dXJl"', b'"thinkingSignature":"EqQB","redacted":true'),
    (5, b'"arguments":{"path":"calc.py"}', b'"arguments":{"path":"calc.py","size":-0,"ratio":0.000009}'),  # as written
    (5, b'"totalTokens":2160', b'"totalTokens":"2160"'),  # a figure of another type
    (5, b'"arguments":{"path":"calc.py"}', '"arguments":{"path":"café/计算.py"}'.encode()),  # counted in characters
], ids=["another field", "an image", "too deep", "a call id not a string", "a redacted thinking", "numbers as written",
        "a figure not a number", "non-ASCII arguments"])
def test_a_pi_entry_no_view_can_count_is_read_as_the_whole_reading_reads_it(line, old, new):
    """An entry whose line holds what a view does not name, or names otherwise, is parsed whole (its
    message read at once); the session reads, counts, checks and rewrites as the whole reading."""
    lines = PI_SESSION.read_bytes().split(b"\n")
    assert old in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    data = b"\n".join(lines)
    same_reading(data)
    with contextlib.suppress(TranscompactError):  # (the call id: refused as the whole reading refuses it)
        transcript = loads(data, "t.jsonl", lazily=True)
        viewed = type(transcript.source.records[line - 1][1]) is ViewedEntry
        assert viewed is (new.startswith(b'"arguments"'))  # only a call's numbers are read as written by the view


@pytest.mark.parametrize("path", gemini_documents())
def test_the_quick_reading_is_the_whole_reading_of_real_gemini_chats(path):
    """A legacy Gemini CLI chat read for counting: each record of the agent's shape gives messages
    left unread (the record's bytes not parsed), and everything reads, counts, checks and rewrites
    as the whole reading."""
    data = path.read_bytes()
    same_reading(data)
    transcript = loads(data, "t.json", lazily=True)
    # Read quickly when it begins as the agent writes one (some writers put `kind` first: read whole).
    quickly = data.lstrip().startswith(b'{\n  "sessionId"')
    assert (transcript.source.viewed is not None) is quickly
    assert any(not m.is_read for m in transcript.messages) is quickly


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("gemini/*.jsonl")), ids=lambda p: p.name)
def test_the_quick_reading_is_the_whole_reading_of_gemini_logs(path):
    """Gemini CLI's JSON Lines log read for counting: each message record's line a view reads
    (one that begins with its `id`, its content a string) gives messages left unread; it counts,
    checks and rewrites as the whole reading, and the log as the agent writes it (the records of
    a run, and the legacy chat recorded so) is mostly left unread."""
    same_reading(path.read_bytes())
    document = json.loads(GEMINI_CHAT.read_bytes())
    lines = [json.dumps({k: v for k, v in document.items() if k != "messages"}, separators=(",", ":"))]
    lines += [json.dumps(record, separators=(",", ":")) for record in document["messages"]]
    data = ("\n".join(lines) + "\n").encode()
    same_reading(data)
    transcript = loads(data, "t.jsonl", lazily=True)
    assert transcript.source.viewed is not None and not any(m.is_read for m in transcript.messages)
    assert estimate(transcript).tokens == estimate(loads(data, "t.jsonl")).tokens
    assert not any(m.is_read for m in transcript.messages)


GEMINI_CHAT = FIXTURES / "gemini" / "session-2025-12-16T23-47-b4f17607.json"


@pytest.mark.parametrize(("old", "new"), [
    (b'"displayName"', b'"note": "a field the agent does not write", "displayName"'),
    (b'"content": "', b'"content": [{"text": "a part "}], "displayContent": "'),
    (b'"output": "', b'"error": "it failed", "output2": "'),
    (b'"args": {', b'"args": {"deep": ' + b"[" * 300 + b"]" * 300 + b', '),  # too deep to write
    (b'"args": {', b'"args": {"size": -0, "ratio": 0.000009, '),  # numbers as written
    (b'"id": "', b'"id": 5, "id2": "'),  # an id not a string: refused, and where
    (b'"projectHash"', b'"projectHash2"'),  # not the agent's own document: detected by the whole reading
    (b'"sessionId"', b'"meta": {"x": 1}, "sessionId"'),  # another first key
    (b'"output": "', b'"output": 7, "x": "'),  # a response the whole reading writes as JSON
], ids=["another field", "content as parts", "an error response", "too deep", "numbers as written", "an id not a string",
        "no project hash", "another first key", "an output not a string"])
def test_a_gemini_record_no_view_can_count_is_read_as_the_whole_reading_reads_it(old, new):
    """A record that holds what a view does not name, or names otherwise, is read whole, and a
    document of another shape is left to the whole reading: the chat reads, counts, checks and
    rewrites as the whole reading."""
    data = GEMINI_CHAT.read_bytes()
    assert old in data
    same_reading(data.replace(old, new, 1))


def test_a_gemini_chat_with_every_shape_a_view_counts_is_read_unread_and_the_same():
    """A string result, a call without arguments, an error response, a response naming another
    call, a user's ignored input, an empty model turn: all counted unread, the same as whole."""
    def call(call_id, result, **more):
        return {"id": call_id, "name": "run_shell_command", "status": "success", "timestamp": "2026-01-01T00:00:00Z",
                "result": result, **more}
    records = [
        {"id": "u1", "type": "user", "timestamp": "2026-01-01T00:00:00Z", "content": "Fix the t\u00e9sts."},
        {"id": "u2", "type": "user", "content": "/help"},
        {"id": "g1", "type": "gemini", "content": "", "model": "gemini-2.5-pro", "thoughts": [{"subject": "s", "description": "d"}],
         "tokens": {"input": 900, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 920},
         "toolCalls": [call("c1", "ok", args={"command": "ls", "n": 1.50}), call("c2", "plain text"),
                       call("c3", [{"functionResponse": {"id": "c3", "name": "run", "response": {"error": "E  boom"}}}]),
                       call("c4", [{"functionResponse": {"id": "c5", "name": "run", "response": {"output": "other's"}}}],
                            resultDisplay=None, renderOutputAsMarkdown=True)]},
        {"id": "g2", "type": "gemini", "content": ""},
        {"id": "i1", "type": "info", "content": "Request cancelled."},
        {"id": "g3", "type": "gemini", "content": "Done.", "tokens": {"input": 1200, "output": 5}},
    ]
    data = json.dumps({"sessionId": "s1", "projectHash": "p" * 64, "startTime": "2026-01-01T00:00:00Z",
                       "messages": records}, indent=2).encode() + b"\n"
    transcript = loads(data, "t.json", lazily=True)
    assert [m.role for m in transcript.messages] == ["user", "assistant", "user", "assistant"]
    assert not any(m.is_read for m in transcript.messages)
    same_reading(data)


# The same messages as a bare list and as JSON Lines, spelled as other writers spell them: escapes,
# a slash escaped, a float as written, non-ASCII text as is and as \u escapes.
SPELLED = [b'{"role": "user", "content": "Fix the \\u0074ests \\u2014 caf\xc3\xa9 \\/ 1e5."}',
           b'{"role":"assistant","content":[{"type":"text","text":"Reading."},'
           b'{"type":"tool_use","id":"t1","name":"read","input":{"path":"a.py","size":1e5}}]}',
           b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"' + b"E  boom\\n" * 400 + b'",'
           b'"is_error":true}]}',
           b'{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"read","input":{"path":"b.py"}}]}',
           b'{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok \\u00e9"}]}',
           b'{"role": "assistant", "content": "Done \\u00e9."}']


@pytest.mark.parametrize("data", [b"[\n" + b",\n".join(SPELLED) + b"\n]\n", b"\n".join(SPELLED) + b"\n",
                                  BOM + b"\r\n".join(SPELLED) + b"\r\n"], ids=["bare list", "JSON Lines", "JSON Lines, BOM, CRLF"])
def test_a_bare_list_and_json_lines_are_read_without_building_their_messages(data):
    transcript = loads(data, "t.json", lazily=True)
    assert not any(m.is_read for m in transcript.messages)
    assert estimate(transcript) == estimate(slowly(data))
    assert not any(m.is_read for m in transcript.messages)  # counted from what the reader saw
    assert bytes(written(transcript)) == data
    same_reading(data)


# The same in OpenAI's shape, whose calls and results no view names: they are read at once.
SPELLED_OPENAI = [b'{"role": "user", "content": "Fix the \\u0074ests \\u2014 caf\xc3\xa9 \\/ 1e5."}',
                  b'{"role":"assistant","content":"Reading \\u2713","tool_calls":[{"id":"c1","type":"function",'
                  b'"function":{"name":"read","arguments":"{\\"path\\": \\"a.py\\"}"}}]}',
                  b'{"role":"tool","tool_call_id":"c1","content":"' + b"E  boom\\n" * 400 + b'"}',
                  b'{"role":"assistant","content":null,"tool_calls":[{"id":"c2","type":"function",'
                  b'"function":{"name":"read","arguments":"{}"}}]}',
                  b'{"role":"tool","tool_call_id":"c2","content":"ok \\u00e9"}',
                  b'{"role": "assistant", "content": "Done \\u00e9."}']


@pytest.mark.parametrize(("spelled", "data"), [
    (SPELLED, b"[" + b",".join(SPELLED) + b"]"), (SPELLED, b"\n".join(SPELLED) + b"\n"),
    # Its calls and results a prune left as they were were written again from their values, escapes
    # undone (found using prune as a user).
    (SPELLED_OPENAI, b"[\n" + b",\n".join(SPELLED_OPENAI) + b"\n]\n"),
    (SPELLED_OPENAI, b'{"model": "m", "messages": [' + b", ".join(SPELLED_OPENAI) + b"]}"),
], ids=["bare list", "JSON Lines", "OpenAI bare list", "OpenAI request body"])
def test_a_prune_of_a_list_or_json_lines_changes_only_what_it_prunes(spelled, data):
    """The messages a prune leaves as they were keep their bytes: escapes and numbers as written."""
    transcript = loads(data, "t.json", lazily="logs")
    pruned, report = prune(transcript, PruneOptions(keep_last=0, hard_clear_after=1))
    assert report.cleared == 1
    out = bytes(written(pruned))
    for kept in (*spelled[:2], *spelled[3:]):
        assert kept in out
    assert spelled[2] not in out
    verified(transcript, pruned, written(pruned), operation="prune")


def test_json_lines_with_a_line_no_view_names_reads_that_line_at_once():
    lines = [b'{"role":"user","content":"a"}', b'{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",'
             b'"function":{"name":"f","arguments":"{}"}}]}', b'{"role":"tool","tool_call_id":"c1","content":"r"}',
             b'{"role":"assistant","content":"b"}']
    data = b"\n".join(lines) + b"\n"
    transcript = loads(data, "t.jsonl", lazily=True)
    assert (transcript.format, transcript.dialect) == ("jsonl", "openai")
    assert [m.is_read for m in transcript.messages] == [False, True, True, False]
    same_reading(data)
