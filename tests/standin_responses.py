"""A loopback stand-in for the OpenAI Responses API as Codex CLI calls it: `POST /v1/responses`
with `"stream": true`, answered as server-sent events that end with `response.completed`.

Each request is recorded (path, headers, body) and answered by `answer(request)`: a `Response`
whose output items the stream carries one by one (`response.output_item.added`, the text deltas of
a message, `response.output_item.done`), then `response.completed` with the whole response and its
usage. A `Script` plays a recorded session: several function calls in one response (Codex runs them
in parallel), reasoning items, then a text reply, and a summary when Codex compacts the session
itself; `Responses.text` answers every request with one message (a resumed session's new prompt).
Anything else is recorded and answered 404.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import RESPONSES_KEYS, Request, answered, count_tokens_of, started

ROUTE = "/v1/responses"
ID_PREFIXES = {"message": "msg", "function_call": "fc", "reasoning": "rs"}  # as the API's item ids begin


@dataclass(frozen=True)
class Response:
    """One model response: its output items, in order."""

    output: tuple[dict, ...]


Answer = Callable[[Request], Response]
# How Codex's own compaction asks for a summary (core templates/compact/prompt.md): its last input item.
COMPACTION_PROMPT = "You are performing a CONTEXT CHECKPOINT COMPACTION"


def message(text: str) -> dict:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call(call_id: str, name: str, arguments: dict) -> dict:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": json.dumps(arguments)}


def reasoning(summary: str) -> dict:
    """A reasoning item as the API streams one: a readable summary, and content Codex sends back as it is."""
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": "gAAAAAB" + summary.encode().hex()}


def text_of(item: dict) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content or () if isinstance(p, dict) and isinstance(p.get("text"), str))


@dataclass
class Script:
    """A recorded session's answers: the next response for each request, in turn; Codex's own
    compaction (a request ending with its summarization prompt) gets `summary`, as a model's."""

    responses: list[Response]
    summary: str = "The session so far: nothing of note."

    def __call__(self, request: Request) -> Response:
        last = request.body["input"][-1] if request.body.get("input") else {}
        if isinstance(last, dict) and text_of(last).startswith(COMPACTION_PROMPT):
            return Response((message(self.summary),))
        return self.responses.pop(0)


def usage_of(body: Any, output: tuple[dict, ...]) -> dict:
    """A deterministic usage: 1 token per 4 characters of what the request sends (its instructions,
    tools and input: tests/loopback.py `count_tokens_of`), and of the output."""
    sent = count_tokens_of(body, RESPONSES_KEYS)
    made = len(json.dumps(output, separators=(",", ":"))) // 4
    return {"input_tokens": sent, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": made,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": sent + made}


@dataclass
class Responses:
    """State shared with the handler: the requests seen and how to answer the next one."""

    requests: list[Request] = field(default_factory=list)
    answer: Answer = field(default=lambda request: Response((message("ok"),)))
    url: str = ""
    ids: Any = field(default_factory=itertools.count)

    @staticmethod
    def text(text: str) -> Answer:
        return lambda request: Response((message(text),))

    def events(self, request: Request, response: Response) -> bytes:
        number = next(self.ids)
        response_id = f"resp_standin_{number:04d}"
        output = [{"id": f"{ID_PREFIXES.get(item['type'], 'item')}_standin_{number:04d}_{k}", **item,
                   **({} if item["type"] == "reasoning" else {"status": "completed"})}
                  for k, item in enumerate(response.output)]
        head = {"id": response_id, "object": "response", "created_at": 1_760_000_000 + number, "status": "in_progress",
                "model": request.body.get("model"), "output": []}
        events: list[dict] = [{"type": "response.created", "response": head}]
        for index, item in enumerate(output):
            events.append({"type": "response.output_item.added", "output_index": index, "item": item})
            if item["type"] == "message":
                for part in item["content"]:
                    events.append({"type": "response.output_text.delta", "item_id": item["id"], "output_index": index,
                                   "content_index": 0, "delta": part["text"]})
            events.append({"type": "response.output_item.done", "output_index": index, "item": item})
        usage = usage_of(request.body, response.output)
        events.append({"type": "response.completed", "response": {**head, "status": "completed", "output": output,
                                                                    "usage": usage}})
        return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def serve() -> tuple[Responses, Callable[[], None]]:
    """Start a server on a free port; returns its state and a function that stops it."""
    state = Responses()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            data = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(data or b"null")
            except ValueError:
                body = data
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            state.requests.append(request)
            if request.route != ROUTE or not isinstance(body, dict):
                return self.respond(404, "application/json", b'{"error":{"message":"not found"}}')
            self.respond(200, "text/event-stream", state.events(request, state.answer(request)))

        def do_GET(self):
            state.requests.append(Request(self.path, {k.lower(): v for k, v in self.headers.items()}, None, "GET"))
            self.respond(404, "application/json", b'{"error":{"message":"not found"}}')

        def respond(self, status: int, content_type: str, data: bytes) -> None:
            answered(self, status, content_type, data)

        def log_message(self, *args):
            pass

    return state, started(Handler, state)
