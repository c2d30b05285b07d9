"""Hostile input, fuzzed: every command, run on generated transcripts with fields of the wrong type
and on mutated corpus files, ends with a documented exit status and one line of error (never a
traceback, never an internal error); a rewrite of a valid transcript is valid; and what a rewrite
writes reads back as the format and dialect it was written in.

The examples are derandomized (the same for the same code and the same run of the suite), so
that CI is red for a change of code, not for a lucky draw. To explore further:
`FUZZ_EXAMPLES=5000 pytest tests/test_fuzz.py`, which draws new examples on every run.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from transcompact import check, dialects, dumps, loads, repair
from transcompact.cli.main import cli
from transcompact.core.errors import ExitCode, InputError
from transcompact.core.jsondata import is_blank
from transcompact.formats import adapter, reload, rewrites_lines
from transcompact.ops.check import errors

from .conftest import CORPUS, FIXTURES
from .strategies import anthropic_messages, claude_code_lines, conversations, openai_messages, texts

EXPLORE = os.environ.get("FUZZ_EXAMPLES")
SETTINGS = settings(
    max_examples=int(EXPLORE) if EXPLORE else 800,  # about 40 s for this file on 2 cores
    deadline=None,
    derandomize=not EXPLORE,
    database=settings.default.database if EXPLORE else None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
DOCUMENTED_EXIT = {0, 1, 2, 3, 4, 5, 130}
BOM = b"\xef\xbb\xbf"
CORPUS_LIMIT = 120_000  # bytes: larger corpus files cost more time per example than they add


# --- what a rewrite writes reads back as it was written --------------------------------------------

# Its only Anthropic block an orphan result: repaired, it is a plain conversation ending in an empty
# assistant message, which only Anthropic's rules accept (it once read back as OpenAI and failed O3).
ORPHAN_ONLY = (b'[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"r"}]},'
               b'{"role":"user","content":"hi"},{"role":"assistant","content":[]}]')


def request_body(**request) -> bytes:
    """A request whose tool loop compact drops, leaving a plain conversation (the summary pair and a question)."""
    return orjson.dumps({**request, "messages": [
        {"role": "user", "content": "Read app.py"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "app.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "print('hi')\n" * 300}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It prints hi."}]},
        {"role": "user", "content": "And twice?"},
    ]})


def test_repair_output_passes_check_as_read_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("in.json").write_bytes(ORPHAN_ONLY)
    repaired = run("repair", "-o", "out.json", "in.json")
    assert repaired.exit_code == 0, repaired.stderr
    assert Path("out.json").read_bytes() == b'[{"role":"user","content":"hi"},{"role":"assistant","content":[]}]'
    assert run("check", "out.json").exit_code == 0
    assert loads(Path("out.json").read_bytes()).dialect == "anthropic"


@pytest.mark.parametrize("request_fields", [
    {"model": "claude-sonnet-4-5", "thinking": {"type": "disabled"}},
    {"model": "claude-sonnet-4-5", "tools": [{"name": "read_file", "input_schema": {"type": "object"}}]},
    {"model": "claude-sonnet-4-5", "system": "Be brief."},
], ids=["thinking", "tool-schema", "system"])
def test_a_compacted_request_reads_back_in_the_dialect_its_parameters_name(request_fields, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("in.json").write_bytes(request_body(**request_fields))
    compacted = run("compact", "-q", "--emergency", "--force", "--keep-recent-tokens", "5", "-o", "out.json", "in.json")
    assert compacted.exit_code == 0, compacted.stderr
    out = loads(Path("out.json").read_bytes())
    assert (out.format, out.dialect) == ("anthropic", "anthropic")
    assert [m.role for m in out.messages] == ["user", "assistant", "user"] and not out.messages[0].tool_results
    assert run("check", "out.json").exit_code == 0


@pytest.mark.parametrize("document, dialect", [
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": []}], "anthropic"),
    ([{"role": "user", "content": [{"type": "search_result", "source": "s", "title": "t", "content": []}]}], "anthropic"),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}], "openai"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "openai"),
    ({"response_format": {"type": "json_object"}, "messages": [{"role": "user", "content": "hi"}]}, "openai"),
    ({"tools": [{"type": "function", "function": {"name": "f"}}], "messages": [{"role": "user", "content": "hi"}]}, "openai"),
    ({"mcp_servers": [], "messages": [{"role": "user", "content": "hi"}]}, "anthropic"),
], ids=["empty-last-assistant", "search-result", "system-first", "text-only", "response-format", "function-tool", "mcp-servers"])
def test_a_plain_conversation_is_read_in_the_dialect_that_accepts_it(document, dialect):
    """What neither dialect's own blocks decide: the request's parameters, else the rules that accept it."""
    data = orjson.dumps(document)
    transcript = loads(data)
    assert transcript.dialect == dialect
    other = loads(data, format="openai" if dialect == "anthropic" else "anthropic")
    assert len(errors(check(transcript))) <= len(errors(check(other)))


def test_the_post_condition_judges_the_bytes_written():
    from transcompact.core.errors import PostConditionError
    from transcompact.ops.postcondition import verified

    before = loads(request_body(model="m", system="s"))
    broken = before.with_messages(before.messages[:1] + before.messages[2:])  # a result loses its call
    with pytest.raises(PostConditionError, match="prune would add A1 at message 1"):
        verified(before, broken, dumps(broken), operation="prune")
    with pytest.raises(PostConditionError, match="prune would write output that reads back as other messages"):
        verified(before, before, dumps(broken), operation="prune")
    with pytest.raises(PostConditionError, match="prune would write output that does not read back as anthropic"):
        verified(before, before, b'{"messages": [1]}', operation="prune")
    assert verified(before, before, dumps(before), operation="prune").messages == before.messages


# --- hostile values ------------------------------------------------------------------------------

NASTY_STRINGS = st.sampled_from([
    "", " ", "\n", "NaN", "Infinity", "-Infinity", "-0", "1e999", "null", "true", "[]", "{}", "\ufeff",
    "\u0000", "\u202e\u2066", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "e\u0301", "\ud800", "toolu_01", "<function_call>",
    "[Tool output cleared — content was processed in earlier turns]", "x" * 5000,
])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10),
    st.integers(2**63, 2**70) | st.integers(-(2**70), -(2**63)),  # beyond what orjson reads as an integer
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([float("nan"), float("inf")]),  # written by json.dumps as NaN / Infinity: not JSON
    NASTY_STRINGS,
    texts,
)


def nested(depth: int, leaf=None):
    """`depth` levels of alternating lists and objects around `leaf`."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.sampled_from(["type", "text", "role", "content", "id", "x"]), SCALARS, max_size=3),
    st.integers(200, 300).map(nested),  # around the deepest nesting transcompact can write back (254)
)


def paths(value, prefix=()):
    """Every place in a JSON value (the value itself first)."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def get(value, path):
    for key in path:
        value = value[key]
    return value


REMOVE = object()


def replaced(value, path, new):
    """A copy of `value` with the node at `path` replaced by `new` (or removed when `new` is REMOVE)."""
    if not path:
        return new
    key, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    if rest:
        copy[key] = replaced(value[key], rest, new)
    elif new is REMOVE:
        del copy[key]
    else:
        copy[key] = new
    return copy


def swapped_type(value):
    """The same content as another JSON type: what a careless producer writes."""
    if isinstance(value, str):
        return [value] if value else None
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)} if value else ""
    return list(value.values()) or 0


@st.composite
def mutated(draw, value, most: int = 3):
    """`value` with up to `most` nodes replaced by a hostile value, removed, wrapped, or of another type."""
    for _ in range(draw(st.integers(0, most))):
        places = list(paths(value))
        path = draw(st.sampled_from(places))
        old = get(value, path)
        operation = draw(st.sampled_from(["hostile", "remove", "wrap", "swap", "deep"]))
        if operation == "remove" and path:
            new = REMOVE
        elif operation == "wrap":
            new = [old]
        elif operation == "swap":
            new = swapped_type(old)
        elif operation == "deep":
            new = nested(draw(st.integers(240, 300)), old)
        else:
            new = draw(VALUES)
        value = replaced(value, path, new)
    return value


# --- generated transcripts with every kind of block ----------------------------------------------

SIGNED_THINKING = {"type": "thinking", "thinking": "Let me look.", "signature": "c2ln"}
ANTHROPIC_EXTRAS = {
    "assistant": [
        [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
         {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}],
        [{"type": "redacted_thinking", "data": "ZW5j"}],
        [{"type": "compaction", "content": "earlier turns"}],
    ],
    "user": [
        [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}],
        [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}],
        [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}}],
        [{"type": "text", "text": "cached", "cache_control": {"type": "ephemeral"}}],
        [{"type": "search_result", "source": "s", "title": "t", "content": [{"type": "text", "text": "r"}]}],
    ],
}
OPENAI_EXTRAS = {
    "assistant": [{"refusal": None}, {"name": "helper"}, {"content": [{"type": "refusal", "refusal": "no"}]}],
    "user": [
        {"content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]},
        {"content": [{"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}]},
        {"content": [{"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0="}}]},
        {"content": None},
        {"name": "ada"},
    ],
}


@st.composite
def anthropic_conversation(draw) -> list:
    messages = anthropic_messages(draw(conversations(damaged=True)))
    for message in messages:
        if draw(st.integers(0, 3)):  # one message in four
            continue
        content = message["content"]
        content = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        extra = draw(st.sampled_from(ANTHROPIC_EXTRAS[message["role"]]))
        message["content"] = (extra + content) if message["role"] == "user" else content + extra
        if message["role"] == "assistant" and draw(st.booleans()):
            message["content"] = [SIGNED_THINKING, *message["content"]]
    if draw(st.integers(0, 4)) == 0:
        messages.append({"role": "assistant", "content": draw(st.sampled_from([[], "", None, [SIGNED_THINKING]]))})
    return messages


@st.composite
def openai_conversation(draw) -> list:
    messages = openai_messages(draw(conversations(damaged=True)))
    for message in messages:
        if message["role"] in OPENAI_EXTRAS and draw(st.integers(0, 3)) == 0:
            message.update(draw(st.sampled_from(OPENAI_EXTRAS[message["role"]])))
    if draw(st.booleans()):
        messages.insert(0, {"role": draw(st.sampled_from(["system", "developer"])), "content": draw(texts)})
    if draw(st.integers(0, 4)) == 0:  # the legacy function call
        messages += [{"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{\"d\": 1}"}},
                     {"role": "function", "name": "ls", "content": "a b"}]
    return messages


def log_extras(lines: list) -> list:
    """Lines a real log has besides messages (kept verbatim), threaded into the chain."""
    session, last = "00000000-0000-4000-8000-000000000000", lines[-1].get("uuid") if len(lines) > 1 else None
    return [
        {"type": "progress", "parentUuid": last, "uuid": "00000000-0000-4000-8000-900000000001", "sessionId": session,
         "timestamp": "2026-11-01T11:00:00.000Z", "data": {"type": "bash_progress"}},
        {"type": "system", "subtype": "local_command", "parentUuid": "00000000-0000-4000-8000-900000000001",
         "uuid": "00000000-0000-4000-8000-900000000002", "sessionId": session, "timestamp": "2026-11-01T11:00:01.000Z",
         "content": "<local-command-stdout></local-command-stdout>", "isMeta": False},
        {"type": "summary", "summary": "a session", "leafUuid": last},
    ]


@st.composite
def claude_code_log(draw) -> list:
    lines = claude_code_lines(draw(conversations(damaged=True)))
    for line in lines:
        message = line.get("message")
        if isinstance(message, dict) and message["role"] == "assistant" and draw(st.integers(0, 3)) == 0:
            message["content"] = [SIGNED_THINKING, *message["content"]]
    if draw(st.booleans()):
        lines += log_extras(lines)
    return lines


def encode_json(value, *, indent: bool, ascii_only: bool) -> bytes:
    # surrogatepass: a lone surrogate becomes bytes that are not UTF-8, one more hostile input
    return json.dumps(value, indent=2 if indent else None, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def hostile_transcripts(draw) -> bytes:
    """Bytes of a transcript in any format, with every kind of block, then fields of the wrong type."""
    kind = draw(st.sampled_from(["anthropic", "openai", "jsonl-anthropic", "jsonl-openai", "claude-code"]))
    ascii_only = draw(st.booleans())
    if kind == "claude-code" or kind.startswith("jsonl"):
        if kind == "claude-code":
            values = draw(claude_code_log())
        else:
            values = draw(anthropic_conversation() if kind.endswith("anthropic") else openai_conversation())
        values = [draw(mutated(v, most=1)) if draw(st.integers(0, 2)) == 0 else v for v in values]
        data = b"".join(encode_json(v, indent=False, ascii_only=ascii_only) + b"\n" for v in values)
    else:
        messages = draw(anthropic_conversation() if kind == "anthropic" else openai_conversation())
        envelope = draw(st.sampled_from(["bare", "history", "request"]))
        if envelope == "bare":
            document = messages
        elif envelope == "history":
            document = {"history": messages, "info": {"exit_status": "submitted"}}
        else:
            document = {"model": "m", "max_tokens": 10, "messages": messages}
            if kind == "anthropic" and draw(st.booleans()):
                document["system"] = draw(st.sampled_from(["Be brief.", [{"type": "text", "text": "Be brief."}]]))
            if draw(st.booleans()):
                document["tools"] = [{"name": "bash", "input_schema": {"type": "object"}} if kind == "anthropic" else
                                     {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
        document = draw(mutated(document))
        data = encode_json(document, indent=draw(st.booleans()), ascii_only=ascii_only)
    if draw(st.integers(0, 5)) == 0:
        data = BOM + data
    return data


# --- mutated corpus files ------------------------------------------------------------------------


def small_corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.glob("*/*") if p.suffix in (".json", ".jsonl") and p.stat().st_size <= CORPUS_LIMIT)


def seed_files() -> list[Path]:
    """What mutations start from: a shipped fixture of every format (Codex, Gemini, pi, Copilot, …,
    which the corpus has few of), and the corpus's small files when it is here."""
    return sorted(p for p in FIXTURES.glob("*/*") if p.is_file()) + small_corpus_files()


@cache
def corpus_bytes(path: Path) -> bytes:
    return path.read_bytes()


@st.composite
def mutated_files(draw) -> bytes:
    data = corpus_bytes(draw(st.sampled_from(seed_files())))
    lines = data.split(b"\n")
    # Most flips and cuts make malformed JSON, which is refused at once: the others reach further.
    operation = draw(st.sampled_from(["flip", "truncate", "delete-line", "duplicate-line", "swap-field", "swap-field"]))
    if operation == "flip":
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(data) - 1))
            data = data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1:]
        return data
    if operation == "truncate":
        return data[:draw(st.integers(0, len(data) - 1))]
    if operation in ("delete-line", "duplicate-line"):
        at = draw(st.integers(0, len(lines) - 1))
        copies = [] if operation == "delete-line" else [lines[at], lines[at]]
        return b"\n".join(lines[:at] + copies + lines[at + 1:])
    # swap-field: one field of the parsed JSON (of one line, for JSON Lines) as another type, written again
    try:
        document = json.loads(data)
    except ValueError:
        at = draw(st.sampled_from([i for i, line in enumerate(lines) if line.strip()]))
        line = json.loads(lines[at])
        path = draw(st.sampled_from(list(paths(line))))
        line = replaced(line, path, swapped_type(get(line, path)))
        return b"\n".join(lines[:at] + [encode_json(line, indent=False, ascii_only=False)] + lines[at + 1:])
    path = draw(st.sampled_from(list(paths(document))))
    return encode_json(replaced(document, path, swapped_type(get(document, path))), indent=b'\n  "' in data[:200],
                       ascii_only=False)


# --- running every command -----------------------------------------------------------------------

PRUNE = ["prune", "-q", "--keep-last", "0", "--hard-clear-after", "1", "--soft-trim-chars", "10", "--head", "2", "--tail", "2"]
REWRITES = {
    "prune": PRUNE,
    "compact": ["compact", "-q", "--emergency", "--force", "--keep-recent-tokens", "30"],
    "repair": ["repair", "-q"],
}

# Known bugs, not fixed here (formats/claude_code.py, compact.py; reported): a rewrite of a Claude
# Code log that a post-condition refuses (exit 5), so that nothing is written.
#
# 1. A rewrite that leaves the line `claude --resume` starts from (the newest leaf) with no content
#    drops it, and the log written back resumes from another leaf (here another branch).
DROPPED_LEAF = b"""\
{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-11-01T10:00:01Z","message":{"role":"user","content":"go"}}
{"type":"assistant","uuid":"a2","parentUuid":"u1","sessionId":"s","timestamp":"2026-11-01T10:00:02Z","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"ok"}]}}
{"type":"user","uuid":"u3","parentUuid":"a2","sessionId":"s","timestamp":"2026-11-01T10:00:03Z","message":{"role":"user","content":"more"}}
{"type":"assistant","uuid":"b4","parentUuid":"u1","sessionId":"s","timestamp":"2026-11-01T10:00:04Z","message":{"id":"m4","role":"assistant","content":[{"type":"text","text":"another branch"}]}}
{"type":"user","uuid":"u5","parentUuid":"u3","sessionId":"s","timestamp":"2026-11-01T10:00:05Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"gone","content":"x"}]}}
"""
# Fixed, kept as a regression: two lines of one response with the same uuid (a line written
# twice); compact copied both under one new uuid, a line its own parent, and refused (A7, exit 5).
REPEATED_LINE = b"""\
{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{"role":"user","content":"go"}}
{"type":"assistant","uuid":"a2","parentUuid":"u1","sessionId":"s","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"bash","input":{}}]}}
{"type":"user","uuid":"u3","parentUuid":"a2","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a hundred characters of output, long enough to be trimmed by prune: padding padding padding padding"}]}}
{"type":"assistant","uuid":"a4","parentUuid":"u3","sessionId":"s","message":{"id":"m4","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"bash","input":{}}]}}
{"type":"assistant","uuid":"a4","parentUuid":"u3","sessionId":"s","message":{"id":"m4","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"bash","input":{}}]}}
{"type":"user","uuid":"u5","parentUuid":"a4","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"b"}]}}
"""


def refused_for_a_known_bug(transcript, result) -> bool:
    """Whether `result` is a post-condition's refusal (exit 5) on a log of the shape above, or a
    pi session whose last entry has no id, which pi itself cannot append to (exit 3: repair fixes it)."""
    if transcript.format == "pi" and result.exit_code == 3:
        return "the last entry's `id` is not a string" in result.stderr and transcript.name in result.stderr
    if transcript.format != "claude-code" or result.exit_code != 5:
        return False
    return "reads back as other messages" in result.stderr and _leaf_holds_nothing_kept(transcript)


def _leaf_holds_nothing_kept(transcript) -> bool:
    message = transcript.source.records[transcript.source.leaf][1].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str) or not content:
        return not (content or "").strip()
    return all(isinstance(b, dict) and (b.get("type") == "tool_result" or b.get("type") == "text" and not str(b.get("text")).strip())
               for b in content)


def run(*args: str, stdin: bytes | None = None):
    result = CliRunner().invoke(cli, list(args), input=stdin, prog_name="transcompact")
    assert result.exit_code in DOCUMENTED_EXIT, (args, result.exit_code, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, (args, result.stderr)
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, repr(result.exception))
    return result


def read(data: bytes):
    """The transcript, or None when transcompact refuses the bytes (an input error)."""
    try:
        return loads(data, "t")
    except InputError:
        return None


def valid(transcript) -> bool:
    return not errors(check(transcript))


def same_reading(output: bytes, transcript, command: str) -> None:
    """The output reads back as the format and dialect it was written in, or, when it shows no
    shape of either dialect, in one that writes it back as it is and finds it valid if it is.

    An output with no message (repair removed every one) is exempt: JSON Lines with no message,
    or a Claude Code log with none, is no transcript, and an empty list is one in either dialect.
    """
    if command == "repair" and not repair(transcript)[0].messages:
        return
    again = read(output)
    assert again is not None, (command, output[:500])
    if again.dialect == transcript.dialect:
        assert again.format == transcript.format, (command, output[:500])
        return
    assert again.format == (again.dialect if transcript.format in dialects.DIALECTS else transcript.format)  # a document's format is its dialect
    raw = [m.raw for m in again.messages]
    assert not dialects.anthropic.signals(raw) and not dialects.openai.signals(raw), (command, output[:500])
    if valid(reload(output, transcript)):  # an invalid one may read back valid: the bytes cannot say which it was
        assert valid(again), (command, output[:500])
    assert dumps(again) == output


def exercise(data: bytes) -> None:
    """Every command on `data`: documented exits only, and what a rewrite writes is sound."""
    with tempfile.TemporaryDirectory() as directory:
        source, archive, pruned = (os.path.join(directory, name) for name in ("t.json", "archive.jsonl", "pruned.json"))
        Path(source).write_bytes(data)
        transcript = read(data)
        checked = run("check", "-q", source)
        assert (checked.exit_code == 3) == (transcript is None), checked.stderr
        for command in (["estimate"], ["estimate", "--json", "--per-message"], ["cut-point", "--keep-recent-tokens", "50"]):
            result = run(*command, source)
            assert result.exit_code == (3 if transcript is None else 0), (command, result.stderr)
        if transcript is not None and not adapter(transcript).writes:
            # A format transcompact only reads: every rewrite is refused before it writes anything.
            assert all(run(*command, source).exit_code == ExitCode.USAGE for command in REWRITES.values())
            return
        for name, command in REWRITES.items():
            result = run(*command, source)
            if transcript is None:
                # An empty input has nothing to rewrite: as jq, no error, and it goes out as it came.
                empty = is_blank(data)
                assert result.exit_code == (0 if empty else 3), (name, result.stderr)
                assert not empty or result.stdout_bytes == data
                continue
            if refused_for_a_known_bug(transcript, result):
                continue
            # No disk is full and no file is read-only here: 5 can only be a post-condition that failed.
            assert result.exit_code in ((0, 1) if name == "repair" else (0,)), (name, result.stderr)
            same_reading(result.stdout_bytes, transcript, name)
            if checked.exit_code == 0:
                output_checked = run("check", "-", stdin=result.stdout_bytes)
                assert output_checked.exit_code == 0, (name, output_checked.stdout)
        if transcript is None:
            return
        result = run(*PRUNE, "--archive", archive, "-o", pruned, source)
        if refused_for_a_known_bug(transcript, result):
            return
        assert result.exit_code == 0, result.stderr
        expanded = run("expand", "-q", "--archive", archive, pruned)
        assert expanded.exit_code == 0, expanded.stderr
        if not rewrites_lines(transcript):  # a document's messages are put back and it is written again whole: equal JSON
            assert orjson.loads(expanded.stdout_bytes.removeprefix(BOM)) == orjson.loads(data.removeprefix(BOM))
        else:
            assert expanded.stdout_bytes == data


@SETTINGS
@example(ORPHAN_ONLY)
# Plain once compacted: it read back as OpenAI before its `thinking` parameter named the dialect.
@example(request_body(model="claude-sonnet-4-5", thinking={"type": "enabled", "budget_tokens": 1024}))
# OpenAI messages, Anthropic tools: read as OpenAI, repaired to a plain list, read back as Anthropic.
@example(b'{"tools": [{"name": "bash", "input_schema": {}}], "messages": [{"role": "system", "content": ""}, '
         b'{"role": "tool", "tool_call_id": "0000", "content": ""}]}')
# A number beyond 64 bits (kept as written) made every rewrite refused: two readings compared unequal.
@example(b'{"model": "m", "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "thinking", '
         b'"thinking": "Hm.", "signature": -9223372036854775809}, {"type": "text", "text": "ok"}]}, {"role": "user", "content": ""}]}')
@example(DROPPED_LEAF)
@example(REPEATED_LINE)
# A message of a role the API refuses, holding a legacy function_call: its answer goes with it.
@example(b'{"model": "m", "max_tokens": 10, "messages": [{"role": "system", "content": ""}, {"role": "user", "content": ""}, '
         b'{"role": "", "content": null, "function_call": {"name": "ls", "arguments": "{}"}}, '
         b'{"role": "function", "name": "ls", "content": "a b"}]}')
# A progress line whose uuid is a list: read once (trimmed) it passed, read back whole it failed.
@example(b'{"parentUuid": null, "isSidechain": false, "sessionId": "s", "type": "user", "message": {"role": "user", '
         b'"content": "0"}, "uuid": "u1", "timestamp": "2026-11-01T10:00:01.000Z"}\n{"type": "progress", "parentUuid": "u1", '
         b'"uuid": ["p1"], "sessionId": "s", "timestamp": "2026-11-01T11:00:00.000Z", "data": {"type": "bash_progress"}}\n')
@given(hostile_transcripts())
def test_every_command_on_hostile_transcripts(data):
    exercise(data)


@SETTINGS
@given(st.deferred(mutated_files))
def test_every_command_on_mutated_files_of_every_format(data):
    exercise(data)
