"""Hypothesis strategies: transcripts in every format we read, valid or with typical damage;
hostile values and transcripts with every kind of block and fields of the wrong type; the
shipped fixtures (and the corpus's small files) mutated."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from hypothesis import strategies as st

from .conftest import CORPUS, FIXTURES

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
nonblank = texts.filter(lambda s: s.strip() != "")
ids = st.from_regex(r"[a-zA-Z0-9_]{4,10}", fullmatch=True)


@st.composite
def conversations(draw, damaged: bool = True):
    """A list of abstract turns: ("user", text) | ("calls", [(id, name, input, result|None)], text|None)."""
    turns = []
    used: set[str] = set()
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            turns.append(("user", draw(nonblank if not damaged else texts)))
        else:
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                call_id = draw(ids.filter(lambda i: i not in used))
                used.add(call_id)
                answered = draw(st.booleans()) if damaged else True
                calls.append((call_id, draw(st.sampled_from(["bash", "read", "grep"])), {"arg": draw(texts)}, draw(texts) if answered else None))
            turns.append(("calls", calls, draw(st.one_of(st.none(), nonblank))))
    if damaged and draw(st.booleans()):
        turns.append(("orphan", draw(ids.filter(lambda i: i not in used)), draw(texts)))
    return turns


def anthropic_messages(turns) -> list[dict]:
    out: list[dict] = []
    for turn in turns:
        if turn[0] == "user":
            out.append({"role": "user", "content": turn[1]})
        elif turn[0] == "orphan":
            out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": turn[1], "content": turn[2]}]})
        else:
            _, calls, text = turn
            blocks = ([{"type": "text", "text": text}] if text else []) + [
                {"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a, _ in calls
            ]
            out.append({"role": "assistant", "content": blocks})
            results = [{"type": "tool_result", "tool_use_id": i, "content": r} for i, _, _, r in calls if r is not None]
            if results:
                out.append({"role": "user", "content": results})
    return out


def openai_messages(turns) -> list[dict]:
    out: list[dict] = []
    for turn in turns:
        if turn[0] == "user":
            out.append({"role": "user", "content": turn[1]})
        elif turn[0] == "orphan":
            out.append({"role": "tool", "tool_call_id": turn[1], "content": turn[2]})
        else:
            _, calls, text = turn
            out.append({
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for i, n, a, _ in calls
                ],
            })
            out += [{"role": "tool", "tool_call_id": i, "content": r} for i, _, _, r in calls if r is not None]
    return out


def claude_code_lines(turns) -> list[dict]:
    """A Claude Code log: one line per assistant block (shared message.id), one per tool result."""
    lines: list[dict] = []
    parent = None
    clock = 0

    def add(kind: str, message: dict, **extra) -> dict:
        nonlocal parent, clock
        clock += 1
        line = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work",
            "sessionId": "00000000-0000-4000-8000-000000000000",
            "version": "2.1.20",
            "type": kind,
            "message": message,
            "uuid": f"00000000-0000-4000-8000-{clock:012d}",
            "timestamp": f"2026-11-01T10:{clock // 60:02d}:{clock % 60:02d}.000Z",
            **extra,
        }
        lines.append(line)
        parent = line["uuid"]
        return line

    lines.append({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}, "isSnapshotUpdate": False})
    for n, turn in enumerate(turns):
        if turn[0] == "user":
            add("user", {"role": "user", "content": turn[1]})
        elif turn[0] == "orphan":
            add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": turn[1], "content": turn[2]}]})
        else:
            _, calls, text = turn
            mid = f"msg_{n:04d}"
            if text:
                add("assistant", {"id": mid, "role": "assistant", "content": [{"type": "text", "text": text}]})
            call_lines = [
                add("assistant", {"id": mid, "role": "assistant", "content": [{"type": "tool_use", "id": i, "name": nm, "input": a}]})
                for i, nm, a, _ in calls
            ]
            for (i, _, _, r), call_line in zip(calls, call_lines):
                if r is not None:
                    parent = call_line["uuid"]  # parallel results hang from the line of their call
                    add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": r}]},
                        sourceToolAssistantUUID=call_line["uuid"])
    return lines


def responses_items(turns) -> list[dict]:
    """OpenAI Responses `input` items: a user message as the short form (no `type`), each call a
    `function_call` item (JSON string arguments) answered by a `function_call_output`."""
    out: list[dict] = []
    for turn in turns:
        if turn[0] == "user":
            out.append({"role": "user", "content": turn[1]})
        elif turn[0] == "orphan":
            out.append({"type": "function_call_output", "call_id": turn[1], "output": turn[2]})
        else:
            _, calls, text = turn
            if text:
                out.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
            out += [{"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)} for i, n, a, _ in calls]
            out += [{"type": "function_call_output", "call_id": i, "output": r} for i, _, _, r in calls if r is not None]
    return out


def encode_document(messages, envelope: str) -> bytes:
    if envelope == "bare":
        document = messages
    elif envelope == "history":
        document = {"history": messages, "info": {"exit_status": "submitted"}}
    else:
        document = {"model": "m", "messages": messages, "max_tokens": 10}
    return json.dumps(document, indent=2, ensure_ascii=False).encode() + b"\n"


def encode_lines(values) -> bytes:
    return b"".join(json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for v in values)


@st.composite
def transcripts(draw, damaged: bool = True):
    """(format name, bytes) of a generated transcript."""
    turns = draw(conversations(damaged=damaged))
    kind = draw(st.sampled_from(["anthropic", "openai", "jsonl-anthropic", "jsonl-openai", "claude-code", "responses"]))
    if kind == "responses":
        items = responses_items(turns)
        request = draw(st.booleans())
        return kind, json.dumps({"model": "m", "input": items} if request else items, indent=2, ensure_ascii=False).encode() + b"\n"
    if kind == "claude-code":
        return "claude-code", encode_lines(claude_code_lines(turns))
    if kind.startswith("jsonl"):
        messages = anthropic_messages(turns) if kind.endswith("anthropic") else openai_messages(turns)
        return "jsonl", encode_lines(messages)
    messages = anthropic_messages(turns) if kind == "anthropic" else openai_messages(turns)
    return kind, encode_document(messages, draw(st.sampled_from(["bare", "history", "request"])))


BOM = b"\xef\xbb\xbf"
CORPUS_LIMIT = 120_000  # bytes: larger corpus files cost more time per example than they add


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


# --- mutated files -------------------------------------------------------------------------------


def fixture_seeds() -> list[Path]:
    """A shipped fixture of every format (Codex, Gemini, pi, Copilot, …, which the corpus has few of)."""
    return sorted(p for p in FIXTURES.glob("*/*") if p.is_file())


def corpus_seeds() -> list[Path]:
    """The corpus's small files (none when it is not here)."""
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.glob("*/*") if p.suffix in (".json", ".jsonl") and p.stat().st_size <= CORPUS_LIMIT)


@cache
def seed_bytes(path: Path) -> bytes:
    return path.read_bytes()


@st.composite
def mutated_files(draw, seeds: list[Path]) -> bytes:
    """One of `seeds`, its bytes flipped or cut, a line dropped or
    doubled, or a field of another type."""
    data = seed_bytes(draw(st.sampled_from(seeds)))
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
