"""Deterministic Anthropic transcripts of the shapes `make bench` measures, at any size.

Each generator takes the size it is asked for (bytes or a count) and returns the file's bytes,
the same bytes for the same arguments, so that two sizes of one shape differ only in size.
"""

from __future__ import annotations

import random

import orjson

_WORDS = ["def", "return", "self", "import", "value", "error", "path", "config", "result", "index", "data",
          "request", "session", "token", "window", "message", "assert", "None", "True", "for", "in", "if",
          "else", "class", "yield", "lambda", "0", "1", "42", "==", "+=", "(", ")", ":", "[", "]", "{", "}"]
# The mean size of one tool call and its result in `tool_session`: 4,000 pairs make 50 MiB.
_PAIR_BYTES = 50 * 1024 * 1024 // 4000
_TOOLS = [{"name": "read_file", "description": "Read a file.",
           "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def _code_like_text(rng: random.Random, lines: int = 40_000) -> str:
    """About 2 MB of lines of code-like words, which tool outputs are cut from."""
    return "".join(
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 14))) + ("\n" if rng.random() < 0.9 else "\n\n")
        for _ in range(lines)
    )


def _request(messages: list[dict]) -> bytes:
    return orjson.dumps({"model": "claude-sonnet-4-5", "system": "You are a coding agent.", "tools": _TOOLS,
                         "messages": messages})


def tool_session(size_bytes: int) -> bytes:
    """An agent session of about `size_bytes`: a request, then rounds of one tool call and its
    result (results of 6 to 19 KB), then a closing exchange."""
    rng = random.Random(20261122)
    pool = _code_like_text(rng)
    pairs = max(1, size_bytes // _PAIR_BYTES)
    mean_output = _PAIR_BYTES * 24 // 25  # what the call, the envelope and the step text leave
    messages = [{"role": "user", "content": "Find and fix the failing tests in the repository."}]
    for i in range(pairs):
        start = rng.randrange(0, len(pool) - 2 * mean_output)
        output = pool[start: start + rng.randint(mean_output // 2, mean_output * 3 // 2)]
        call_id = f"toolu_{i:06d}"
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {i}: reading the next file."},
            {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": f"src/module_{i % 97}.py"}},
        ]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}]})
    messages.append({"role": "assistant", "content": "All tests pass now."})
    messages.append({"role": "user", "content": "Thanks."})
    return _request(messages)


def tiny_messages(count: int) -> bytes:
    """`count` short text messages, user and assistant in turn, ending on the user."""
    roles = ("user", "assistant") if count % 2 else ("assistant", "user")
    return _request([{"role": roles[i % 2], "content": f"Step {i}: noted."} for i in range(count)])


def single_block(size_bytes: int) -> bytes:
    """One user message holding one text block of `size_bytes` characters of code, then a reply
    and a closing question."""
    pool = _code_like_text(random.Random(20261122))
    text = (pool * (size_bytes // len(pool) + 1))[:size_bytes]
    return _request([
        {"role": "user", "content": [{"type": "text", "text": text}]},
        {"role": "assistant", "content": "I have read it."},
        {"role": "user", "content": "What does it do?"},
    ])


def parallel_calls(count: int) -> bytes:
    """One assistant message with `count` parallel tool calls, then one user message with their
    `count` results (2 KB each), then a closing exchange."""
    rng = random.Random(20261122)
    pool = _code_like_text(rng, lines=2_000)
    ids = [f"toolu_{i:06d}" for i in range(count)]
    calls = [{"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": f"src/module_{i}.py"}}
             for i, call_id in enumerate(ids)]
    results = []
    for call_id in ids:
        start = rng.randrange(0, len(pool) - 2048)
        results.append({"type": "tool_result", "tool_use_id": call_id, "content": pool[start: start + 2048]})
    return _request([
        {"role": "user", "content": "Read every module."},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading them all at once."}, *calls]},
        {"role": "user", "content": results},
        {"role": "assistant", "content": "I have read them all."},
        {"role": "user", "content": "Summarize them."},
    ])


# Realistic tool outputs: what an agent's tools print, errors and all, with non-ASCII text among
# them; each kind a function of the random source, its size varied by how many lines it repeats.
_MODULES = ["billing/invoice.py", "api/handlers.py", "core/cache.py", "ui/render.ts", "src/main.rs", "db/migrate.go"]
_PROSE = ["Die Änderung übernimmt die Prüfung der Größe vor dem Schreiben.",
          "変更を適用しました。テストはすべて成功しています。", "Ошибка при разборе конфигурации: ключ «timeout» не найден.",
          "El módulo de facturación calcula el IVA después del descuento.", "✅ build ok — 3 warnings, 0 errors 🚀",
          "Le fichier « config.yaml » a été régénéré ; vérifiez les droits d'accès.", "配置文件已更新，请重新启动服务。"]


def _server_log(rng: random.Random, lines: int) -> str:
    levels = ["INFO"] * 12 + ["DEBUG"] * 6 + ["WARNING"] * 2 + ["ERROR"]
    out = []
    for i in range(lines):
        level = rng.choice(levels)
        text = (f"request {rng.randrange(10**6):06d} failed: ConnectionResetError: [Errno 104] Connection reset by peer"
                if level == "ERROR" else f"{rng.choice(_WORDS)} {rng.choice(_WORDS)} took {rng.randrange(1, 900)} ms")
        out.append(f"2026-03-0{1 + i % 9}T12:{i % 60:02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z {level:7s} "
                   f"[{rng.choice(_MODULES)}] {text}")
    return "\n".join(out)


def _pytest_run(rng: random.Random, lines: int) -> str:
    out = ["============================= test session starts ==============================",
           "platform linux -- Python 3.12.3, pytest-8.3.2, pluggy-1.5.0", "rootdir: /home/ada/projects/shop"]
    for i in range(lines // 12 + 1):
        module = rng.choice(_MODULES).replace("/", "_").split(".")[0]
        out.append(f"tests/test_{module}.py::test_case_{i} {'FAILED' if rng.random() < 0.3 else 'PASSED'} [{min(99, i)}%]")
        if rng.random() < 0.4:
            out += ["Traceback (most recent call last):",
                    f'  File "/home/ada/projects/shop/{rng.choice(_MODULES)}", line {rng.randrange(1, 400)}, in compute',
                    f"    total = sum(item.price * item.quantity for item in {rng.choice(_WORDS)}_items)",
                    f'  File "/usr/lib/python3.12/decimal.py", line {rng.randrange(1, 900)}, in __mul__',
                    "    raise InvalidOperation('quantize result has too many digits')",
                    f"decimal.InvalidOperation: [<class 'decimal.{rng.choice(['InvalidOperation', 'DivisionByZero'])}'>]",
                    f"E       AssertionError: assert {rng.randrange(1000)} == {rng.randrange(1000)}"]
        out += [f"    {rng.choice(_WORDS)} = {rng.choice(_WORDS)}({rng.choice(_WORDS)})" for _ in range(rng.randint(0, 5))]
    out.append(f"=========== {rng.randrange(1, 30)} failed, {rng.randrange(100, 900)} passed in 12.34s ===========")
    return "\n".join(out)


def _build_log(rng: random.Random, lines: int) -> str:
    out = []
    for _ in range(lines):
        where = f"{rng.choice(_MODULES)}:{rng.randrange(1, 500)}:{rng.randrange(1, 80)}"
        roll = rng.random()
        if roll < 0.15:
            out.append(f"{where}: error[E0308]: mismatched types: expected `u64`, found `i32`")
        elif roll < 0.45:
            out.append(f"{where}: warning: unused variable `{rng.choice(_WORDS)}` [-Wunused-variable]")
        else:
            out.append(f"   Compiling {rng.choice(_WORDS)}-{rng.choice(_WORDS)} v0.{rng.randrange(30)}.{rng.randrange(9)}")
    return "\n".join(out)


def _diff(rng: random.Random, lines: int) -> str:
    path = rng.choice(_MODULES)
    out = [f"diff --git a/{path} b/{path}", f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644",
           f"--- a/{path}", f"+++ b/{path}"]
    for hunk in range(lines // 10 + 1):
        out.append(f"@@ -{10 * hunk + 1},7 +{10 * hunk + 1},8 @@ def {rng.choice(_WORDS)}():")
        for _ in range(9):
            mark = rng.choice([" ", " ", " ", "-", "+"])
            text = rng.choice(_PROSE) if rng.random() < 0.1 else " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 9)))
            out.append(f"{mark}    {text}")
    return "\n".join(out)


def _json_payload(rng: random.Random, lines: int) -> str:
    items = [{"id": rng.randrange(10**9), "name": rng.choice(_PROSE)[:30], "status": rng.choice(["ok", "error", "pending"]),
              "error": None if rng.random() < 0.7 else {"code": "E_TIMEOUT", "message": "upstream timed out after 30 s"},
              "tags": [rng.choice(_WORDS) for _ in range(3)]} for _ in range(max(1, lines // 8))]
    return orjson.dumps({"data": items, "next": None}, option=orjson.OPT_INDENT_2).decode()


def _notes(rng: random.Random, lines: int) -> str:
    return "\n".join(rng.choice(_PROSE) if rng.random() < 0.5 else " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 14)))
                     for _ in range(lines))


_OUTPUTS = [(_server_log, "tail -n 400 logs/app.log"), (_pytest_run, "pytest -q"), (_build_log, "cargo build"),
            (_diff, "git diff"), (_json_payload, "curl -s localhost:8080/api/items"), (_notes, "cat NOTES.md")]


def agent_messages(size_bytes: int) -> list[dict]:
    """An agent session of about `size_bytes` (written compactly) in the Anthropic dialect: rounds
    of a step's text, a shell call and its output (server logs with warnings and errors, test runs
    with tracebacks, build logs, diffs, JSON payloads, notes in several scripts; 2 to 20 KB), some
    of them errors, then a closing exchange: the messages of every measured shape."""
    rng = random.Random(20261128)
    messages: list[dict] = [{"role": "user", "content": "Die Tests schlagen fehl — find out why and fix them, please."}]
    written = 0
    i = 0
    while written < size_bytes:
        make, command = _OUTPUTS[i % len(_OUTPUTS)]
        output = make(rng, rng.randint(20, 200))
        call_id = f"toolu_{i:06d}"
        failed = make is _pytest_run and "FAILED" in output
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {i}: {rng.choice(_PROSE)}"},
            {"type": "tool_use", "id": call_id, "name": "bash", "input": {"command": command, "timeout": 120}},
        ]})
        result: dict = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        if failed:
            result["is_error"] = True
        messages.append({"role": "user", "content": [result]})
        written += len(output.encode()) + 260
        i += 1
    messages.append({"role": "assistant", "content": "Alle Tests laufen wieder. ✅"})
    messages.append({"role": "user", "content": "Danke!"})
    return messages


def as_request_body(messages: list[dict]) -> bytes:
    return _request(messages)


def as_bare_list(messages: list[dict]) -> bytes:
    return orjson.dumps(messages)


def as_json_lines(messages: list[dict]) -> bytes:
    return b"".join(orjson.dumps(message) + b"\n" for message in messages)
