"""Shared builders of the tests: transcripts and logs made to measure, what a test checks of a
rewrite, the ways a command is run and timed. A test asks for these (or for a fixture of
conftest.py), never for another test module's helpers."""

from __future__ import annotations

import base64
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from transcompact.cli.main import cli
from transcompact.core.media import image_tokens, pdf_tokens
from transcompact.core.model import Opaque, Text, ToolResult, Transcript
from transcompact.dialects import anthropic as anthropic_wire
from transcompact.dialects import openai as openai_wire
from transcompact.formats import adapter, dumps, loads
from transcompact.ops.pruning.prune import PruneOptions, prune
from transcompact.ops.validity.check import check, errors

from .conftest import CORPUS, FIXTURES, ROOT


def session(rounds: int = 10, size: int = 6000, dialect: str = "anthropic") -> bytes:
    """An agent session: one request, then `rounds` tool calls with results of `size` characters."""
    messages = [{"role": "user", "content": "Fix the failing build."}]
    for i in range(rounds):
        output = "".join(f"line {i}.{n} of the output\n" for n in range(size // 20))[:size]
        if dialect == "anthropic":
            messages.append({"role": "assistant", "content": [
                {"type": "text", "text": f"Running step {i}."},
                {"type": "tool_use", "id": f"toolu_{i:02d}", "name": "bash" if i % 3 else "read", "input": {"n": i}}]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{i:02d}", "content": output, "is_error": i == 1},
                {"type": "text", "text": f"(user note {i})"}]})
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{i}a", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"n": i})}},
                {"id": f"call_{i}b", "type": "function", "function": {"name": "read", "arguments": "{}"}}]})
            messages.append({"role": "tool", "tool_call_id": f"call_{i}a", "content": output})
            messages.append({"role": "tool", "tool_call_id": f"call_{i}b", "content": output[:100] * 50})
    messages.append({"role": "assistant", "content": "Done." if dialect == "anthropic" else "Done."})
    messages.append({"role": "user", "content": "Thanks."})
    return json.dumps({"model": "m", "messages": messages}, indent=2).encode()


def results(transcript) -> list[ToolResult]:
    return [r for m in transcript.messages for r in m.tool_results]


def text_of(result: ToolResult) -> str:
    return result.content if isinstance(result.content, str) else "".join(b.text for b in result.content)


def untouched(before, after, options):
    """User text and assistant blocks are identical; protected results are identical."""
    for m_before, m_after in zip(before.messages, after.messages):
        if m_before.role == "assistant":
            assert m_before.blocks == m_after.blocks
        assert [b for b in m_before.blocks if isinstance(b, Text)] == [b for b in m_after.blocks if isinstance(b, Text)]
    from transcompact.ops.pruning.prune import tool_result_groups

    groups = tool_result_groups(before)
    for indices in groups[len(groups) - options.keep_last:] if options.keep_last else []:
        for i in indices:
            assert before.messages[i] == after.messages[i]


def properties(data: bytes, name: str, options: PruneOptions) -> None:
    transcript = loads(data, name)
    pruned, _ = prune(transcript, options)
    out = dumps(pruned)
    again = loads(out, name)
    twice, _ = prune(again, options)
    assert dumps(twice) == out  # pruning twice is pruning once
    if not errors(check(transcript)):
        assert not errors(check(again))
    untouched(transcript, again, options)
    never = PruneOptions(soft_trim_chars=10**9, hard_clear_after=10**9)
    assert dumps(prune(transcript, never)[0]) == data


def loads_checked(data: bytes):
    try:
        return loads(data, "generated")
    except Exception as error:  # an empty conversation is not a transcript: that is an input error
        assert type(error).__name__ in ("UnknownFormat", "ParseError"), error
        return None


def claude_log(rounds: int = 8, size: int = 6000) -> bytes:
    """A Claude Code session: each response a thinking line and a tool_use line, each result with
    the `toolUseResult` copy the UI shows."""
    stamp = iter(f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z" for i in range(1000))
    envelope = {"isSidechain": False, "userType": "external", "cwd": "/work", "sessionId": "s-1", "version": "1.0.0"}
    lines, parent = [], None

    def add(kind: str, message: dict, **extra) -> None:
        nonlocal parent
        uuid = f"line-{len(lines)}"
        lines.append({"parentUuid": parent, **envelope, "type": kind, "message": message, "uuid": uuid,
                      "timestamp": next(stamp), **extra})
        parent = uuid

    add("user", {"role": "user", "content": "Fix the failing build."})
    for i in range(rounds):
        output = "".join(f"line {i}.{n} of the output\n" for n in range(size // 20))[:size]
        response = {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5"}
        add("assistant", {**response, "content": [{"type": "thinking", "thinking": f"Step {i} needs a look.", "signature": "c2ln"}]})
        add("assistant", {**response, "content": [{"type": "tool_use", "id": f"toolu_{i:02d}", "name": "Bash",
                                                   "input": {"command": f"make step{i}"}}]})
        add("user", {"role": "user", "content": [{"tool_use_id": f"toolu_{i:02d}", "type": "tool_result", "content": output}]},
            toolUseResult={"stdout": output, "stderr": "", "interrupted": False})
    add("assistant", {"id": "msg_end", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Done."}]})
    add("user", {"role": "user", "content": "Thanks."})
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def prune_and_expand(*flags: str, source: str) -> tuple[bytes, bytes, bytes]:
    """(original, pruned, expanded) of a file through the command line."""
    original = Path(source).read_bytes()
    pruned = run_cli("prune", "-q", "--archive", "originals.jsonl", *flags, source)
    assert pruned.exit_code == 0, pruned.stderr
    Path("pruned").write_bytes(pruned.stdout_bytes)
    expanded = run_cli("expand", "-q", "--archive", "originals.jsonl", "pruned")
    assert expanded.exit_code == 0, expanded.stderr
    return original, pruned.stdout_bytes, expanded.stdout_bytes


LINEAR = 6  # the most a 4× larger input may take, in times the smaller one's (linear: about 4; quadratic: 16)


def growth(work, small, large, tries: int = 3) -> float:
    """How much longer `work(large)` takes than `work(small)` (4× the size): the lowest of a few
    measurements, since a busy machine only ever makes one slower. The first within `LINEAR`
    is that lowest as far as the test can tell, so the others are not taken."""
    ratios = []
    while len(ratios) < tries and (not ratios or ratios[-1] > LINEAR):
        ratios.append(best_time(lambda: work(large)) / best_time(lambda: work(small)))
    return min(ratios)


def usage_log(overhead: int, ratio: float, turns: int = 12, shape: str = "anthropic") -> bytes:
    """A JSON Lines conversation whose responses record usage = overhead + ratio × chars before them."""
    lines, chars = [], 0
    for turn in range(turns):
        question = f"Question {turn}: " + "why does the build fail? " * (turn + 1)
        lines.append({"role": "user", "content": question})
        chars += len(question)
        answer = f"Answer {turn}: " + "the linker cannot find libfoo. " * (3 * turn + 2)
        tokens = round(overhead + ratio * chars)
        usage = ({"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": tokens - 103,
                  "output_tokens": 9}
                 if shape == "anthropic" else {"prompt_tokens": tokens, "completion_tokens": 9})
        lines.append({"role": "assistant", "content": answer, "usage": usage})
        chars += len(answer)
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def compact_json(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def formula(transcript, ratio: float = 0.25, count=None) -> int:
    """max(1, int(chars × ratio)) + 4 per message, system and each tool schema once, from the last
    compaction block on; with `count` (a tokenizer), the sum of its counts of the same texts + 4 per message.
    This is what the transcript holds, as its agent sends it (`Format.blocks_as_sent`): `--count content`."""

    def cost(texts: list[str]) -> int:
        if count is not None:
            return sum(count(t) for t in texts)
        return max(1, int(sum(map(len, texts)) * ratio))

    last_compaction = (-1, 0)
    if transcript.dialect == "anthropic":
        for index, m in enumerate(transcript.messages):
            for position, block in enumerate(anthropic_wire.write_content(m.blocks, False)):
                if block.get("type") == "compaction":
                    last_compaction = (index, position)
    else:  # a compaction item (Codex, Responses) is a message of its own
        for index, m in enumerate(transcript.messages):
            if any(type(b) is Opaque and b.type == "compaction" for b in m.blocks):
                last_compaction = (index, 0)

    total = 0
    sent = adapter(transcript).blocks_as_sent(transcript)
    for index, m in enumerate(transcript.messages):
        if transcript.dialect == "anthropic":
            wire = anthropic_wire.write_content(sent.get(index, m.blocks), False)
            if index < last_compaction[0]:
                continue  # the API ignores everything before the last compaction block
            if index == last_compaction[0]:
                wire = wire[last_compaction[1]:]
            parts = [anthropic_block(b) for b in wire]
            texts, fixed = [t for ts, _ in parts for t in ts], sum(f for _, f in parts)
        else:
            if index < last_compaction[0]:
                continue
            texts, fixed = openai_message(openai_wire.write_message(m))
        total += cost(texts) + fixed + 4
    system = [b.text for b in transcript.system]
    if "".join(system):
        total += cost(system)
    schemas = []
    for tool in transcript.tools:
        spec = tool.get("function", tool)
        schema = spec.get("input_schema", spec.get("parameters"))
        schemas.append(spec["name"] + (spec.get("description") or "") + compact_json(schema) if schema is not None else compact_json(tool))
    if "".join(schemas):
        total += cost(schemas) if count is not None else max(1, int(sum(map(len, schemas)) * ratio))
    return total


def corpus_logs() -> list:
    return [pytest.param(p, id=p.name) for p in sorted(CORPUS.glob("claude-code/*.jsonl"))] if CORPUS.is_dir() else []


def prompt(usage: dict) -> int:
    """The prompt a response's usage counts (a part it does not record counts 0)."""
    return sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


class TextSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "txt"


def relative(path) -> str:
    return str(path.relative_to(ROOT))


def run_with_importtime(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCOMPACT_")}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "transcompact", *args],
        capture_output=True, text=True, env=env, timeout=60,
    )
    modules = imported_modules(done.stderr)
    assert "transcompact.cli.main" in modules  # the parse saw the import log
    return done, modules


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in HEAVY)


ORPHAN = {
    "system": "s",
    "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_gone", "content": "o"}, {"type": "text", "text": "go"}]},
    ],
}


def env_name(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env.update(extra)
    return env


def claude_code_logs() -> list:
    paths = sorted(FIXTURES.glob("claude-code/*.jsonl")) + (sorted(CORPUS.glob("claude-code/*.jsonl")) if CORPUS.is_dir() else [])
    return [pytest.param(p, id=p.name) for p in paths]


def pi_logs() -> list:
    """pi sessions: the fixtures, those recorded from pi itself, and the corpus's (when it is there)."""
    recorded = sorted((ROOT / "tests" / "recorded").glob("**/pi/*.jsonl"))
    paths = sorted(FIXTURES.glob("pi/*.jsonl")) + recorded + (sorted(CORPUS.glob("*/pi-*.jsonl")) if CORPUS.is_dir() else [])
    return [pytest.param(p, id=p.name) for p in paths]


def gemini_documents() -> list:
    """Gemini CLI's legacy chats (one JSON document): the fixtures' and the corpus's (when it is there)."""
    paths = sorted(FIXTURES.glob("gemini/*.json")) + (sorted(CORPUS.glob("*/*gemini*.json")) if CORPUS.is_dir() else [])
    return [pytest.param(p, id=p.name) for p in paths]


SESSION = "3f0c6a52-8d1e-4c57-9b7e-0f7f7f2b9a10"


def anthropic(*messages, **request) -> Transcript:
    return loads(json.dumps({**request, "messages": list(messages)}).encode(), "request.json", format="anthropic")


def openai(*messages) -> Transcript:
    return loads(json.dumps(list(messages)).encode(), "chat.json", format="openai")


def claude_code(*entries: dict) -> Transcript:
    """A Claude Code log: each entry a line, chained to the one before unless it names its parent."""
    lines, parent = [], None
    for n, entry in enumerate(entries, 1):
        line = {
            "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/work",
            "sessionId": SESSION, "version": "2.1.20", "uuid": f"00000000-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-11-01T10:00:{n:02d}.000Z", **entry,
        }
        lines.append({k: v for k, v in line.items() if v is not ...})  # `...` leaves a field out
        parent = line["uuid"]
    data = b"".join(json.dumps(v, separators=(",", ":")).encode() + b"\n" for v in lines)
    return loads(data, f"{SESSION}.jsonl", format="claude-code")


def user(content) -> dict:
    return {"role": "user", "content": content}


def assistant(content) -> dict:
    return {"role": "assistant", "content": content}


def tool_use(call_id: str, **extra) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "bash", "input": {"command": "ls"}, **extra}


def tool_result(call_id: str) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "README.md"}


def text(value: str, **extra) -> dict:
    return {"type": "text", "text": value, **extra}


def thinking(value: str = "Let me look.", signature: str | None = "sig") -> dict:
    return {"type": "thinking", "thinking": value, **({"signature": signature} if signature is not None else {})}


def server_call(call_id: str) -> dict:
    return {"type": "server_tool_use", "id": call_id, "name": "web_search", "input": {"query": "rfc 9110"}}


def server_result(call_id: str) -> dict:
    return {"type": "web_search_tool_result", "tool_use_id": call_id, "content": []}


def openai_call(call_id: str, name: str = "ls") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def log_user(content, **extra) -> dict:
    return {"type": "user", "message": user(content), **extra}


def log_assistant(content, message_id: str = "msg_1", **extra) -> dict:
    return {"type": "assistant", "message": {"id": message_id, **assistant(content)}, **extra}


THINKING_ON = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024}}


THINKING_OFF = {"model": "claude-sonnet-4-5", "max_tokens": 4096}


def best_time(work, repeat: int = 5) -> float:
    """The best of `repeat` runs, with the garbage collector off (its passes over a large heap are
    what varies from run to run, not the work measured)."""
    import gc

    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()  # this process's CPU time: other processes' load does not count
            work()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best


def run_cli(*args: str, input: bytes | str | None = None, env: dict[str, str | None] | None = None,
            bug_planted: bool = False):
    """The command line, run in this process (with `env` over the environment): click's Result
    (exit_code, stdout, stderr). A traceback or an internal error (exit 70) fails the test:
    nothing a user types may end that way (unless the test planted the bug itself)."""
    result = CliRunner().invoke(cli, [str(arg) for arg in args], input=input, env=env, prog_name="transcompact")
    assert "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert bug_planted or result.exit_code != 70, result.stderr
    return result


def anthropic_block(block: dict) -> tuple[list[str], int]:
    """(texts counted, figure tokens) of one Anthropic content block, as the README defines them."""
    kind = block.get("type")
    if kind == "text":
        return [block["text"]], 0
    if kind == "thinking":
        return [block["thinking"]], 0
    if kind == "redacted_thinking":
        return [block["data"]], 0
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return [block["name"] + compact_json(block["input"])], 0
    if kind == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return [content], 0
        parts = [anthropic_block(b) for b in content]
        return [t for texts, _ in parts for t in texts], sum(f for _, f in parts)
    if kind == "image":
        return [], image_tokens(block["source"].get("data"))
    if kind == "document":
        source = block["source"]
        if isinstance(source.get("content"), list):
            return [p["text"] for p in source["content"] if "text" in p], 0
        if source.get("type") == "text" or str(source.get("media_type", "")).startswith("text/"):
            return [source["data"]], 0
        return [], pdf_tokens(source.get("data"))
    if str(kind).endswith("_tool_result"):
        return [compact_json(block.get("content", ""))], 0
    if kind == "compaction":
        return [block["content"] or ""], 0
    return [compact_json(block)], 0


def openai_message(message: dict) -> tuple[list[str], int]:
    texts, fixed = [], 0
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    for part in content if isinstance(content, list) else []:
        if part.get("type") == "text":
            texts.append(part["text"])
        elif part.get("type") == "image_url":
            url = part["image_url"]["url"]
            fixed += image_tokens(url.split(",", 1)[1] if url.startswith("data:") else None)
        elif part.get("type") == "file":
            url = part["file"].get("file_data") or ""
            data = url.split(",", 1)[1] if url.startswith("data:") else None
            if url.startswith("data:text/"):
                texts.append(base64.b64decode(data).decode())
            else:
                fixed += pdf_tokens(data)
        else:
            texts.append(compact_json(part))
    calls = [c["function"] for c in message.get("tool_calls") or []]
    calls += [message["function_call"]] if message.get("function_call") else []
    for call in calls:
        arguments = call.get("arguments", "")
        try:
            arguments = json.loads(arguments)
        except (TypeError, ValueError):
            pass
        texts.append(call["name"] + compact_json(arguments))
    return texts, fixed


HEAVY = ("anthropic", "openai", "tiktoken", "rich", "dask", "distributed", "fsspec", "zstandard")


def imported_modules(importtime_stderr: str) -> set[str]:
    """Module names from `import time: self | cumulative | name` lines (the header line excluded)."""
    names = set()
    for line in importtime_stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line.split("|")
        if len(fields) != 3 or not fields[0].split(":")[1].strip().isdigit():
            continue  # the "import time: self [us] | cumulative | imported package" header
        names.add(fields[2].strip())
    return names


def on_a_terminal(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, str]:
    """`python -m transcompact ARGS` with its stdout a terminal (a pseudo-terminal 100 columns
    wide): how it ended, and what the terminal showed, colours and all."""
    primary, secondary = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCOMPACT_")}
    environment |= {"COLUMNS": "100", "TERM": "xterm", **(env or {})}
    try:
        done = subprocess.run([sys.executable, "-m", "transcompact", *args], stdout=secondary, stderr=subprocess.PIPE,
                              env=environment, cwd=ROOT, timeout=60)
    finally:
        os.close(secondary)
    shown = b""
    try:
        while chunk := os.read(primary, 65536):
            shown += chunk
    except OSError:  # the terminal's other end is closed: all is read
        pass
    finally:
        os.close(primary)
    return done, shown.decode()


# The ground truth of a count: what `estimate` says of the file an agent resumed, against
# the stand-in's count of the request the agent then really sent (tests/loopback.py
# `count_tokens_of`: its system prompt, tools and messages), within this share.
AS_SENT = 0.05


def estimates_of(transcript: Transcript) -> dict[str, int]:
    """`estimate`'s count of a transcript, by default and with --calibrate."""
    from transcompact.counting.counter import Options
    from transcompact.ops.estimate import estimate

    return {"default": estimate(transcript, Options()).tokens, "--calibrate": estimate(transcript, Options(calibrate=True)).tokens}


def assert_counted_as_sent(transcript: Transcript, sent: int) -> None:
    """`estimate` of the file the agent resumed is within AS_SENT of the `sent` tokens it sent, by
    default and with --calibrate (the figures are in the message either way)."""
    found = estimates_of(transcript)
    if os.environ.get("AS_SENT_FIGURES"):  # where to write the figures, a line each
        with open(os.environ["AS_SENT_FIGURES"], "a") as out:
            out.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0], "sent": sent, **found}) + "\n")
    figures = ", ".join(f"{how} {tokens:,} ({(tokens - sent) / sent:+.1%})" for how, tokens in found.items())
    assert all(tokens == pytest.approx(sent, rel=AS_SENT) for tokens in found.values()), \
        f"the agent sent {sent:,} tokens; estimate: {figures}"
