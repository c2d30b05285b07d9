"""A loopback HTTP server that speaks the parts of the model APIs we call.

The real `anthropic` and `openai` SDKs talk to it over a real socket on 127.0.0.1: never the
network, never a mock of an SDK. It records every request and answers as `answer` says: ok, an
error status (once or always), too slow, empty text, a summary without sections, "prompt is too
long" above a size, or no answer at all (the connection closed: a connection error). A request
with `"stream": true` gets the message as server-sent events (the real Claude Code CLI streams,
see test_claude_resume.py); a GET is recorded and answered 404.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Answer = Callable[["Request"], "tuple | None"]  # → (status, JSON body), (status, JSON body, headers), or None: hang up
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def route(self) -> str:
        """The path without its query string (Claude Code asks for `/v1/messages?beta=true`)."""
        return self.path.split("?", 1)[0]

    @property
    def is_openai(self) -> bool:
        return self.route.endswith("/chat/completions")

    @property
    def system(self) -> str:
        if self.is_openai:
            return self.body["messages"][0]["content"]
        return self.body.get("system", "")

    @property
    def prompt(self) -> str:
        return self.body["messages"][-1]["content"]


def count_tokens_of(body: dict) -> int:
    """A deterministic stand-in for the API's count: 1 per 4 characters of the request's JSON."""
    sent = {k: body[k] for k in ("system", "messages", "tools") if k in body}
    return len(json.dumps(sent, separators=(",", ":"))) // 4


def summary_for(request: Request) -> str:
    """A well-formed summary that shows what it was asked: the prompt kind, its size, the paths in it."""
    kind = "UPDATE" if request.system.startswith("You are updating") else "CHECKPOINT"
    paths = sorted(set(re.findall(r"(?:[\w.-]+/)+[\w.-]+\.[a-z]{1,4}\b", request.prompt)))[:20]
    return (f"## Goal\nSummarized by {kind} from {len(request.prompt)} characters of conversation.\n\n"
            "## Progress\n### Done\n- [x] Read the conversation carefully and kept what matters.\n"
            "### In Progress\n- [ ] Continue the work where it stopped.\n\n"
            f"## Critical Context\n" + "".join(f"- {p}\n" for p in paths) + "- Nothing else of note.\n")


def reply(request: Request, text: str) -> tuple[int, Any]:
    if request.is_openai:
        return 200, {"id": "chatcmpl-loopback", "object": "chat.completion", "model": request.body.get("model"),
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": len(request.prompt) // 4, "completion_tokens": len(text) // 4}}
    return 200, {"id": "msg_loopback", "type": "message", "role": "assistant", "model": request.body.get("model"),
                 "content": [{"type": "text", "text": text}] if text else [], "stop_reason": "end_turn",
                 "stop_sequence": None, "usage": {"input_tokens": len(request.prompt) // 4, "output_tokens": len(text) // 4}}


def failure(status: int, message: str, request: Request) -> tuple[int, Any, dict]:
    fast_retry = {"retry-after-ms": "1"}  # the SDK and our client honour it: tests stay fast
    if request.is_openai:
        return status, {"error": {"message": message, "type": ERROR_TYPES.get(status, "api_error")}}, fast_retry
    return status, {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}, fast_retry


@dataclass
class Loopback:
    """State shared with the handler: the requests seen and how to answer the next one."""

    requests: list[Request] = field(default_factory=list)
    answer: Answer = field(default=None)  # type: ignore[assignment]
    url: str = ""

    def __post_init__(self):
        if self.answer is None:
            self.answer = self.ok

    # --- answers ---

    @staticmethod
    def ok(request: Request) -> tuple:
        if request.route.startswith("/v1/messages/count_tokens"):
            return 200, {"input_tokens": count_tokens_of(request.body)}
        if request.route.endswith("/messages") or request.is_openai:
            return reply(request, summary_for(request))
        return 404, {"type": "error", "error": {"type": "not_found_error", "message": request.path}}

    @staticmethod
    def error(status: int, message: str) -> Answer:
        return lambda request: failure(status, message, request)

    def failing(self, status: int, times: int) -> Answer:
        """`status` for the first `times` requests, then ok."""
        def answer(request):
            failed = sum(1 for r in self.requests if r is not request)
            return failure(status, "try again", request) if failed < times else self.ok(request)
        return answer

    def hanging_up(self, times: int) -> Answer:
        """The connection closed without an answer for the first `times` requests, then ok."""
        def answer(request):
            earlier = sum(1 for r in self.requests if r is not request)
            return None if earlier < times else self.ok(request)
        return answer

    @staticmethod
    def slow(seconds: float) -> Answer:
        def answer(request):
            time.sleep(seconds)
            return Loopback.ok(request)
        return answer

    @staticmethod
    def text(text: str) -> Answer:
        return lambda request: reply(request, text)

    @staticmethod
    def too_long_above(characters: int) -> Answer:
        """"prompt is too long" when the prompt is over `characters`, else ok."""
        def answer(request):
            if len(request.prompt) > characters:
                return failure(400, f"prompt is too long: {len(request.prompt) // 4} tokens > {characters // 4} maximum", request)
            return Loopback.ok(request)
        return answer


def sse_events(message: dict) -> bytes:
    """An Anthropic message as the server-sent events of a streamed answer."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**message.get("usage", {}), "output_tokens": 0}}
    events = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message.get("content", [])):
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {**block, "text": ""}}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "text_delta", "text": block.get("text", "")}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "usage": {"output_tokens": message.get("usage", {}).get("output_tokens", 0)},
                                     "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": None}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def serve() -> tuple[Loopback, Callable[[], None]]:
    """Start a server on a free port; returns its state and a function that stops it."""
    state = Loopback()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            state.requests.append(request)
            self.respond(request, state.answer(request))

        def do_GET(self):  # nothing is served: recorded, so that a test sees it was asked for
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, None)
            state.requests.append(request)
            self.respond(request, (404, {"type": "error", "error": {"type": "not_found_error", "message": request.path}}))

        def respond(self, request: Request, answered: tuple | None):
            if answered is None:
                self.close_connection = True
                return
            status, answer, *extra = answered
            streamed = (status == 200 and isinstance(request.body, dict) and request.body.get("stream") is True
                        and isinstance(answer, dict) and answer.get("type") == "message")
            data = sse_events(answer) if streamed else json.dumps(answer).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "text/event-stream" if streamed else "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        def log_message(self, *args):  # keep pytest's output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()

    return state, stop
