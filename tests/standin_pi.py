"""A scripted model behind the Anthropic Messages API, for an agent that streams its requests (pi).

Each request to `/v1/messages` gets the next response of a script, as the server-sent events of a
streamed answer: text, signed thinking, redacted thinking and tool calls, several in one response,
each block in the deltas the API sends (`thinking_delta` then `signature_delta`, `input_json_delta`).
The agent runs the calls for real and records what it ran. tests/loopback.py serves it: a `Script`
is an `Answer` whose body is the event stream itself (its own `sse_events` streams text only).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from .loopback import Request, count_tokens_of


def thinking(text: str, signature: str) -> dict:
    return {"type": "thinking", "thinking": text, "signature": signature}


def redacted_thinking(data: str) -> dict:
    return {"type": "redacted_thinking", "data": data}


def text(words: str) -> dict:
    return {"type": "text", "text": words}


def tool_use(call_id: str, name: str, **arguments) -> dict:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _deltas(block: dict) -> tuple[dict, list[dict]]:
    """The `content_block_start` block of `block`, and the deltas that fill it."""
    kind = block["type"]
    if kind == "text":
        return {"type": "text", "text": ""}, [{"type": "text_delta", "text": block["text"]}]
    if kind == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}, [
            {"type": "thinking_delta", "thinking": block["thinking"]}, {"type": "signature_delta", "signature": block["signature"]}]
    if kind == "tool_use":
        return {**block, "input": {}}, [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    return block, []  # redacted_thinking comes whole


def events(message: dict) -> bytes:
    """An Anthropic message as the server-sent events of a streamed answer."""
    usage = message["usage"]
    out = [("message_start", {"type": "message_start", "message": {
        **message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 0}}})]
    for index, block in enumerate(message["content"]):
        start, deltas = _deltas(block)
        out.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        out += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(("message_delta", {"type": "message_delta", "usage": {"output_tokens": usage["output_tokens"]},
                                  "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None}}))
    out.append(("message_stop", {"type": "message_stop"}))
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in out)


@dataclass
class Script:
    """Answers the requests in turn with `responses` (each a list of blocks); past its end, `closing` text."""

    responses: list[list[dict]]
    closing: str = "Done."
    answered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: Request) -> tuple:
        if not request.route.endswith("/messages"):
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": request.path}}
        with self.lock:
            number, self.answered = self.answered, self.answered + 1
        blocks = self.responses[number] if number < len(self.responses) else [text(self.closing)]
        calls = any(b["type"] == "tool_use" for b in blocks)
        prompt = count_tokens_of(request.body)  # the whole request: system prompt, tools, messages
        message = {"id": f"msg_standin_{number:03d}", "type": "message", "role": "assistant", "model": request.body.get("model"),
                   "content": blocks, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                   "usage": {"input_tokens": prompt, "output_tokens": len(json.dumps(blocks)) // 4,
                             "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}
        return 200, events(message)  # bytes: served as they are (pi's SDK reads the stream whatever its type)
