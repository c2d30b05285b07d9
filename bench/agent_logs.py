"""Agent logs of any size built from real sessions' shapes: the corpus's logs of an agent (the
shipped fixtures without the corpus) copied one after another until the size is reached, each
copy's ids made its own and its first entry hung off the last entry of the copy before, so that
the result reads as one long session of that agent.

`replicated(agent, size_bytes, corpus)` gives the file's bytes, the same for the same arguments;
`AGENTS` names the agents and the suffix of their files. `as_gemini_lines` gives a legacy Gemini
CLI chat as the JSON Lines log Gemini CLI 0.61 records (the corpus holds legacy chats only).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
AGENTS = {"claude-code": ".jsonl", "codex": ".jsonl", "gemini": ".json", "pi": ".jsonl"}

_UUID = re.compile(rb"\b([0-9a-f]{8})(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")
# The fields that hold the id of a message, an entry or a tool call in the four agents' logs, or
# name one (a reference is made the same way as the id it names).
_ID_FIELD = re.compile(rb'"(id|parentId|call_id|tool_use_id|toolUseID|parentToolUseID|tool_call_id|toolCallId|callId)":"([^"]+)"')


def own_ids(data: bytes, copy: int) -> bytes:
    """`data` with each id its copy's own: a UUID's first eight digits shifted, and every id field
    suffixed; the same id the same way throughout a copy. Copy 0 is `data` itself."""
    if not copy:
        return data
    data = _UUID.sub(lambda m: b"%08x" % ((int(m[1], 16) + copy * 0x9E3779B1) & 0xFFFFFFFF) + m[2], data)
    return _ID_FIELD.sub(lambda m: b'"%s":"%sc%d"' % (m[1], m[2], copy), data)


def _sources(agent: str, corpus: Path | None) -> list[Path]:
    """The real sessions of `agent`: in the corpus, each whole session of one chain (no subagent's
    sidechain, no compaction boundary, no parent missing from the file: each would cut the chain the
    copies make); else the fixtures."""
    if corpus is not None:
        if agent == "claude-code":
            found = [p for p in sorted((corpus / "claude-code").glob("*.jsonl"))
                     if b"compact_boundary" not in (data := p.read_bytes()) and b'"isSidechain":true' not in data
                     and set(re.findall(rb'"parentUuid":"([^"]+)"', data)) <= set(re.findall(rb'"uuid":"([^"]+)"', data))]
        else:
            found = sorted((corpus / {"codex": "other", "gemini": "other", "pi": "trajectories"}[agent]).glob(
                {"codex": "codex-*.jsonl", "gemini": "*gemini*.json", "pi": "pi-*.jsonl"}[agent]))
        if found:
            return found
    folder = ROOT / "fixtures" / agent
    return sorted(folder.glob(f"*{AGENTS[agent]}")) if agent == "gemini" else sorted(
        p for p in folder.glob("*.jsonl") if b"broken" not in p.name.encode())


def _lines(data: bytes) -> list[bytes]:
    return [line for line in data.split(b"\n") if line.strip()]


_CODEX_LEFT_OUT = (b'"type":"session_meta"', b'"type":"compacted"', b'"type":"compaction"')


def _chained(sources: list[bytes], size_bytes: int, header: Callable[[bytes], bool], root: bytes,
             last_id: Callable[[list[bytes]], bytes | None], first: Callable[[bytes], bool] = lambda line: False) -> bytes:
    """Copies of the sources' lines until `size_bytes`: the `header` lines of the first copy only
    (`first`: none of them, in any), the first line holding `root` (a null parent) in each later copy
    hung off `last_id` of the copy before."""
    out: list[bytes] = []
    written, copy = 0, 0
    while written < size_bytes:
        for source in sources:
            lines = [line for line in _lines(own_ids(source, copy)) if not first(line)]
            if copy:
                lines = [line for line in lines if not header(line)]
                previous = last_id(out)
                for i, line in enumerate(lines):
                    if root in line and previous is not None:
                        lines[i] = line.replace(root, root.replace(b"null", b'"%s"' % previous), 1)
                        break
            out += lines
            written += sum(len(line) + 1 for line in lines)
            copy += 1
            if written >= size_bytes:
                break
    return b"\n".join(out) + b"\n"


def _last(field: bytes, kinds: tuple[bytes, ...]) -> Callable[[list[bytes]], bytes | None]:
    """The value of `field` on the last line holding one of `kinds`."""
    pattern = re.compile(rb'"%s":"([^"]+)"' % field)

    def last_id(lines: list[bytes]) -> bytes | None:
        for line in reversed(lines):
            if any(kind in line for kind in kinds) and (found := pattern.search(line)):
                return found[1]
        return None
    return last_id


def replicated(agent: str, size_bytes: int, corpus: Path | None) -> bytes:
    """A log of `agent` of at least `size_bytes`, built from its real sessions."""
    sources = [p.read_bytes() for p in _sources(agent, corpus)]
    if agent == "claude-code":
        return _chained(sources, size_bytes, lambda line: False, b'"parentUuid":null',
                        _last(b"uuid", (b'"type":"user"', b'"type":"assistant"')))
    if agent == "pi":
        return _chained(sources, size_bytes, lambda line: line.startswith(b'{"type":"session"'), b'"parentId":null',
                        _last(b"id", (b'"type":"message"',)))
    if agent == "codex":
        # Its compactions left out too: the API would be sent only what follows the last one.
        return _chained(sources, size_bytes, lambda line: any(kind in line for kind in _CODEX_LEFT_OUT), b"\0",
                        lambda lines: None, first=lambda line: any(kind in line for kind in _CODEX_LEFT_OUT[1:]))
    # Gemini CLI: one document; its messages copied, the first document's fields kept.
    documents = [orjson.loads(source) for source in sources]
    messages: list = []
    written, copy = 0, 0
    while written < size_bytes:
        for document in documents:
            copied = orjson.loads(own_ids(orjson.dumps(document["messages"]), copy))
            messages += copied
            written += len(orjson.dumps(copied))
            copy += 1
    return orjson.dumps({**documents[0], "messages": messages}, option=orjson.OPT_INDENT_2)


def as_gemini_lines(document: bytes) -> bytes:
    """A legacy Gemini CLI chat as the JSON Lines log Gemini CLI 0.61 records the same turns in
    (chatRecordingService): its fields on the first line, then each record on a line of its own as
    it is upserted (a model turn that calls tools first with its calls pending, then with their
    results), and after each user or model turn `{"$set": {"lastUpdated": …}}`."""
    chat = orjson.loads(document)
    lines = [orjson.dumps({key: value for key, value in chat.items() if key != "messages"})]
    for record in chat["messages"]:
        calls = record.get("toolCalls") if isinstance(record, dict) else None
        if isinstance(calls, list) and calls:
            pending = [{key: value for key, value in call.items() if key not in ("result", "resultDisplay")} | {"status": "executing"}
                       if isinstance(call, dict) else call for call in calls]
            lines.append(orjson.dumps({**record, "toolCalls": pending}))
        lines.append(orjson.dumps(record))
        if isinstance(record, dict) and record.get("type") in ("user", "gemini") and isinstance(record.get("timestamp"), str):
            lines.append(orjson.dumps({"$set": {"lastUpdated": record["timestamp"]}}))
    return b"\n".join(lines) + b"\n"
