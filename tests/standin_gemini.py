"""A loopback stand-in for the Gemini API, as the Gemini CLI calls it (test_gemini_resume.py).

The real Gemini CLI talks to it over a real socket on 127.0.0.1 (`GOOGLE_GEMINI_BASE_URL`). It
records every request and answers:
- `POST /v1beta/models/<model>:generateContent`: the CLI's side requests. The model router asks
  for a JSON object with `complexity_reasoning` and `complexity_score`; that object is the answer
  to every side request (its text is JSON, as the router's schema asks).
- `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`: a turn. The answer is the next
  scripted response, else `reply` as text: server-sent events of `GenerateContentResponse` chunks,
  the thoughts in a chunk of their own, then the text and the function calls (several calls in
  one response are parallel calls), the last chunk with `finishReason` and `usageMetadata`.
Anything else is recorded and answered 404.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import GEMINI_KEYS, Request, answered, count_tokens_of, started


def is_turn(request: Request) -> bool:
    """The request of a turn (the other is the routing side request)."""
    return request.route.endswith(":streamGenerateContent")


@dataclass(frozen=True)
class Response:
    """One scripted model response: thoughts, text and function calls (name, args)."""

    text: str = ""
    calls: tuple[tuple[str, dict], ...] = ()
    thoughts: tuple[str, ...] = ()

    def parts(self) -> list[list[dict]]:
        """The parts of each streamed chunk."""
        chunks = [[{"text": t, "thought": True} for t in self.thoughts]] if self.thoughts else []
        answer = [{"text": self.text}] if self.text else []
        answer += [{"functionCall": {"name": name, "args": args}} for name, args in self.calls]
        return chunks + [answer]


ROUTE = {"complexity_reasoning": "A simple request.", "complexity_score": 1}


def prompt_tokens(body: dict) -> int:
    """A request's tokens as the stand-in counts them: what it sends the model (its system
    instruction, tools and contents: tests/loopback.py `count_tokens_of`), 4 characters each."""
    return count_tokens_of(body, GEMINI_KEYS)


def usage(request: Request) -> dict:
    prompt = prompt_tokens(request.body)
    return {"promptTokenCount": prompt, "candidatesTokenCount": 10, "totalTokenCount": prompt + 10}


def sse(response: Response, request: Request, model: str) -> bytes:
    """The response as the server-sent events of a streamed turn."""
    chunks = response.parts()
    events = []
    for index, parts in enumerate(chunks):
        chunk: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "modelVersion": model}
        if index == len(chunks) - 1:
            chunk["candidates"][0]["finishReason"] = "STOP"
            chunk["usageMetadata"] = usage(request)
        events.append(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
    return b"".join(events)


@dataclass
class Standin:
    """State shared with the handler: the requests seen and how to answer the next turns."""

    requests: list[Request] = field(default_factory=list)
    script: deque = field(default_factory=deque)  # the next turns' responses
    reply: str = "ok"  # the answer once the script is done
    url: str = ""

    def answer(self, request: Request) -> tuple[int, str, bytes]:
        model = request.route.rsplit("/", 1)[-1].split(":", 1)[0]
        if is_turn(request):
            response = self.script.popleft() if self.script else Response(self.reply)
            return 200, "text/event-stream", sse(response, request, model)
        if request.route.endswith(":generateContent"):
            body = {"candidates": [{"content": {"role": "model", "parts": [{"text": json.dumps(ROUTE)}]}, "finishReason": "STOP",
                                    "index": 0}], "usageMetadata": usage(request), "modelVersion": model}
            return 200, "application/json", json.dumps(body).encode()
        return 404, "application/json", json.dumps({"error": {"code": 404, "message": request.path, "status": "NOT_FOUND"}}).encode()


def serve() -> tuple[Standin, Callable[[], None]]:
    """Start a stand-in on a free port; returns its state and a function that stops it."""
    state = Standin()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            data = self.rfile.read(int(self.headers.get("content-length") or 0))
            self.respond(Request(self.path, dict(self.headers), json.loads(data or b"null")))

        def do_GET(self):
            self.respond(Request(self.path, dict(self.headers), None, "GET"))

        def respond(self, request: Request):
            state.requests.append(request)
            status, kind, data = state.answer(request)
            answered(self, status, kind, data)

        def log_message(self, *args):  # keep pytest's output clean
            pass

    return state, started(Handler, state)
