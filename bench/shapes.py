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
