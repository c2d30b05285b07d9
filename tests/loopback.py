"""A loopback HTTP server that speaks the parts of the Anthropic Messages API we call.

The real `anthropic` SDK talks to it over a real socket on 127.0.0.1 (never the network, never a
mock of the SDK). It records every request and answers as `answer` says.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any


def count_tokens_of(body: dict) -> int:
    """A deterministic stand-in for the API's count: 1 per 4 characters of the request's JSON."""
    sent = {k: body[k] for k in ("system", "messages", "tools") if k in body}
    return len(json.dumps(sent, separators=(",", ":"))) // 4


@dataclass
class Loopback:
    """State shared with the handler: the requests seen and how to answer the next one."""

    requests: list[Request] = field(default_factory=list)
    # (request) -> (status, JSON body); the default answers count_tokens
    answer: Callable[[Request], tuple[int, Any]] = field(default=None)  # type: ignore[assignment]
    url: str = ""

    def __post_init__(self):
        if self.answer is None:
            self.answer = self.ok

    @staticmethod
    def ok(request: Request) -> tuple[int, Any]:
        if request.path.startswith("/v1/messages/count_tokens"):
            return 200, {"input_tokens": count_tokens_of(request.body)}
        return 404, {"type": "error", "error": {"type": "not_found_error", "message": request.path}}

    @staticmethod
    def error(status: int, message: str) -> Callable[[Request], tuple[int, Any]]:
        kind = {400: "invalid_request_error", 401: "authentication_error", 500: "api_error", 529: "overloaded_error"}
        return lambda request: (status, {"type": "error", "error": {"type": kind.get(status, "api_error"), "message": message}})


def serve() -> tuple[Loopback, Callable[[], None]]:
    """Start a server on a free port; returns its state and a function that stops it."""
    state = Loopback()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            state.requests.append(request)
            status, answer = state.answer(request)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # keep pytest's output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()

    return state, stop
