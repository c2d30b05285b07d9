"""Hypothesis strategies: transcripts in every format we read, valid or with typical damage."""

from __future__ import annotations

import json

from hypothesis import strategies as st

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
