"""A loopback HTTP server that speaks the parts of the model APIs we call.

The real `anthropic` and `openai` SDKs talk to it over a real socket on 127.0.0.1: never the
network, never a mock of an SDK. It records every request and answers as `answer` says: ok, an
error status (once or always), too slow, empty text, a summary without sections, "prompt is too
long" above a size, a proxy's HTML page or a body that is no API's answer (`page`, `raw`), or no
answer at all (the connection closed: a connection error). A request with `"stream": true` gets
the message as server-sent events (the real Claude Code CLI streams, see test_claude_resume.py);
any other GET is recorded and answered 404.

It speaks both batch APIs too (test_batch_api.py): Anthropic's Message Batches (create,
retrieve, results as JSONL, cancel) and OpenAI's Batch API (a JSONL file uploaded, create,
retrieve, cancel, the output and error files). A batch ends after `batch_polls` looks at it
(never while `batch_held`), and each request's fate is `batch_outcome(custom_id, request)`: one
of BATCH_OUTCOMES.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[["Request"], "tuple | None"]  # → (status, JSON body), (status, JSON body, headers), or None: hang up
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}
# What may become of a request in a batch: a summary, a reply that is not one, an error, a prompt
# the model cannot take, expiry, cancellation.
BATCH_OUTCOMES = ("succeeded", "not a summary", "errored", "prompt too long", "expired", "canceled")
TOO_LONG = "prompt is too long: 250000 tokens > 200000 maximum"
# What a proxy in front of the API answers when it cannot reach it: a page of 16 lines, no JSON.
PROXY_PAGE = """<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>{status} Bad Gateway</title>
<style>
body {{ font-family: sans-serif; }}
</style>
</head>
<body>
<center><h1>{status} Bad Gateway</h1></center>
<hr>
<center>nginx/1.25.3</center>
<p>The upstream server did not answer in time.</p>
</body>
</html>
"""


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: Any
    method: str = "POST"

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


# What a request sends the model, by API: its instructions, its tools, its conversation (not its
# settings: model, max_tokens, stream, generationConfig, …).
ANTHROPIC_KEYS = ("system", "messages", "tools")  # Messages (and its count_tokens)
RESPONSES_KEYS = ("instructions", "tools", "input")  # OpenAI Responses (Codex)
GEMINI_KEYS = ("systemInstruction", "tools", "contents")  # Gemini generateContent


def count_tokens_of(body: Any, keys: tuple[str, ...] = ANTHROPIC_KEYS) -> int:
    """A deterministic stand-in for the API's count: 1 per 4 characters of the JSON of what the
    request sends the model (`keys`: the system prompt or instructions, the tools, the messages).
    Every stand-in reports this as a response's input usage, so that a log the real agents record
    holds the count of the whole request each sent, system prompt and tools included."""
    sent = {k: body[k] for k in keys if k in body} if isinstance(body, dict) else {}
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
class Batch:
    """A batch the server holds: its requests (custom_id → the request as a synchronous call would send it)."""

    id: str
    provider: str  # "anthropic" or "openai"
    requests: dict[str, dict]
    input_file_id: str | None = None
    polls: int = 0
    canceled: bool = False
    files: tuple[str | None, str | None] | None = None  # OpenAI's output and error files, once it has ended


@dataclass
class Loopback:
    """State shared with the handler: the requests seen and how to answer the next one."""

    requests: list[Request] = field(default_factory=list)
    answer: Answer = field(default=None)  # type: ignore[assignment]
    url: str = ""
    batches: dict[str, Batch] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)  # OpenAI's uploaded and output files
    batch_polls: int = 1  # how many looks at a batch find it in progress before it has ended
    batch_held: bool = False  # every batch stays in progress (until a test lets it go)
    batch_outcome: Callable[[str, dict], str] = lambda custom_id, request: "succeeded"
    ids: Any = field(default_factory=itertools.count)  # numbers the batches and files

    def __post_init__(self):
        if self.answer is None:
            self.answer = self.ok

    # --- answers ---

    @staticmethod
    def ok(request: Request) -> tuple:
        if request.is_openai and "max_tokens" in request.body and re.match(r"gpt-[5-9]|o\d", str(request.body.get("model"))):
            return failure(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                "Use 'max_completion_tokens' instead.", request)  # as OpenAI's API answers
        if request.route.startswith("/v1/messages/count_tokens"):
            counted = {"input_tokens": count_tokens_of(request.body)}
            if "context_management" in request.body:  # accepted as the API does; its edits are not made here
                counted["context_management"] = {"original_input_tokens": counted["input_tokens"]}
            return 200, counted
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
    def page(status: int, html: str = "") -> Answer:
        """An HTML page with `status`, as a proxy in front of the API answers (nginx's 502), never the API's JSON."""
        data = (html or PROXY_PAGE.format(status=status)).encode()
        return lambda request: (status, data, {"content-type": "text/html", "retry-after-ms": "1"})

    @staticmethod
    def raw(status: int, data: bytes, content_type: str = "application/json") -> Answer:
        """`data` as it is, with `status`: JSON that is not an API's answer, a body that is not JSON."""
        return lambda request: (status, data, {"content-type": content_type, "retry-after-ms": "1"})

    @staticmethod
    def text(text: str) -> Answer:
        return lambda request: reply(request, text)

    @staticmethod
    def call_then_text(name: str, tool_input: dict, text: str) -> Answer:
        """The first answer calls tool `name` (id `toolu_loopback`), every later one is `text`."""
        asked: list[Request] = []

        def answer(request):
            asked.append(request)
            if len(asked) > 1:
                return reply(request, text)
            return 200, {"id": "msg_loopback_call", "type": "message", "role": "assistant", "model": request.body.get("model"),
                         "content": [{"type": "tool_use", "id": "toolu_loopback", "name": name, "input": tool_input}],
                         "stop_reason": "tool_use", "stop_sequence": None,
                         "usage": {"input_tokens": len(request.prompt) // 4, "output_tokens": 10}}
        return answer

    @staticmethod
    def too_long_above(characters: int) -> Answer:
        """"prompt is too long" when the prompt is over `characters`, else ok."""
        def answer(request):
            if len(request.prompt) > characters:
                return failure(400, f"prompt is too long: {len(request.prompt) // 4} tokens > {characters // 4} maximum", request)
            return Loopback.ok(request)
        return answer

    # --- the batch APIs ---

    def created(self, path: str) -> list[Request]:
        """The requests that created something at `path` (a batch: /v1/messages/batches, /v1/batches)."""
        return [r for r in self.requests if r.method == "POST" and r.route == path]

    def batch_api(self, request: Request) -> tuple:
        route, post = request.route, request.method == "POST"
        if route == "/v1/messages/batches" and post:
            return 200, self.anthropic_batch(self.new_batch("anthropic", {r["custom_id"]: r["params"] for r in request.body["requests"]}))
        if route == "/v1/files" and post:
            file_id = f"file-{next(self.ids)}"
            self.files[file_id] = request.body["file"]
            return 200, {"id": file_id, "object": "file", "bytes": len(request.body["file"]), "created_at": 0,
                         "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}
        if route == "/v1/batches" and post:
            lines = [json.loads(line) for line in self.files[request.body["input_file_id"]].splitlines() if line.strip()]
            batch = self.new_batch("openai", {line["custom_id"]: line["body"] for line in lines})
            batch.input_file_id = request.body["input_file_id"]
            return 200, self.openai_batch(batch)
        found = re.fullmatch(r"/v1/files/([^/]+)/content", route)
        if found and found[1] in self.files:
            return 200, self.files[found[1]]
        found = re.fullmatch(r"/v1/(messages/batches|batches)/([^/]+)(/results|/cancel)?", route)
        if not found or found[2] not in self.batches:
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": request.path}}
        batch = self.batches[found[2]]
        if found[3] == "/cancel":
            batch.canceled = True
        elif found[3] == "/results":
            return 200, b"".join(json.dumps(line).encode() + b"\n" for line in self.anthropic_results(batch))
        else:
            batch.polls += 1
        return 200, self.anthropic_batch(batch) if batch.provider == "anthropic" else self.openai_batch(batch)

    def new_batch(self, provider: str, requests: dict[str, dict]) -> Batch:
        batch = Batch(f"{'msgbatch' if provider == 'anthropic' else 'batch'}_{next(self.ids):04}", provider, requests)
        self.batches[batch.id] = batch
        return batch

    def ended(self, batch: Batch) -> bool:
        return batch.canceled or (not self.batch_held and batch.polls > self.batch_polls)

    def outcomes(self, batch: Batch) -> dict[str, str]:
        return {key: "canceled" if batch.canceled else self.batch_outcome(key, body) for key, body in batch.requests.items()}

    def anthropic_batch(self, batch: Batch) -> dict:
        ended = self.ended(batch)
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        for outcome in self.outcomes(batch).values() if ended else ():
            counts[{"not a summary": "succeeded", "prompt too long": "errored"}.get(outcome, outcome)] += 1
        counts["processing"] = 0 if ended else len(batch.requests)
        return {"id": batch.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": counts, "created_at": "2026-11-22T00:00:00Z", "expires_at": "2026-11-23T00:00:00Z",
                "ended_at": "2026-11-22T00:10:00Z" if ended else None, "archived_at": None,
                "cancel_initiated_at": "2026-11-22T00:05:00Z" if batch.canceled else None,
                "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None}

    def anthropic_results(self, batch: Batch) -> list[dict]:
        lines = []
        for key, outcome in self.outcomes(batch).items():
            if outcome in ("succeeded", "not a summary"):
                request = Request("/v1/messages", {}, batch.requests[key])
                result = {"type": "succeeded", "message": reply(request, summary_for(request) if outcome == "succeeded" else outcome)[1]}
            elif outcome in ("errored", "prompt too long"):
                error = {"type": "api_error", "message": "Internal server error"} if outcome == "errored" else \
                    {"type": "invalid_request_error", "message": TOO_LONG}
                result = {"type": "errored", "error": {"type": "error", "error": error}}
            else:
                result = {"type": outcome}
            lines.append({"custom_id": key, "result": result})
        return lines

    def openai_batch(self, batch: Batch) -> dict:
        ended = self.ended(batch)
        outcomes = self.outcomes(batch) if ended else {}
        if ended and batch.files is None:
            batch.files = self.openai_files(batch, outcomes)
        completed = sum(1 for o in outcomes.values() if o in ("succeeded", "not a summary"))
        status = "in_progress"
        if ended:
            status = "cancelled" if batch.canceled else "expired" if "expired" in outcomes.values() else "completed"
        output_file, error_file = batch.files or (None, None)
        return {"id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": batch.input_file_id,
                "completion_window": "24h", "status": status, "created_at": 0, "output_file_id": output_file,
                "error_file_id": error_file, "errors": None,
                "request_counts": {"total": len(batch.requests), "completed": completed, "failed": len(outcomes) - completed}}

    def openai_files(self, batch: Batch, outcomes: dict[str, str]) -> tuple[str | None, str | None]:
        """The output file (the answers) and the error file (the rest), as OpenAI writes them."""
        output, errors = [], []
        for key, outcome in outcomes.items():
            request = Request("/v1/chat/completions", {}, batch.requests[key])
            line = {"id": f"batch_req_{next(self.ids)}", "custom_id": key, "response": None, "error": None}
            if outcome in ("succeeded", "not a summary"):
                body = reply(request, summary_for(request) if outcome == "succeeded" else outcome)[1]
                output.append({**line, "response": {"status_code": 200, "request_id": "req_loopback", "body": body}})
            elif outcome in ("errored", "prompt too long"):
                status, message = (500, "Internal server error") if outcome == "errored" else (400, TOO_LONG)
                errors.append({**line, "response": {"status_code": status, "request_id": "req_loopback",
                                                     "body": {"error": {"message": message, "type": ERROR_TYPES[status]}}}})
            else:
                code = "batch_expired" if outcome == "expired" else "batch_cancelled"
                errors.append({**line, "error": {"code": code, "message": f"This request was not executed: {code}."}})
        ids = []
        for lines in (output, errors):
            file_id = None
            if lines:
                file_id = f"file-{next(self.ids)}"
                self.files[file_id] = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
            ids.append(file_id)
        return ids[0], ids[1]


def multipart(content_type: str, data: bytes) -> dict[str, bytes]:
    """A multipart/form-data body (a file upload) as its fields."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + data)
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True) for part in message.iter_parts()}


def is_batch_api(request: Request) -> bool:
    return request.route.startswith(("/v1/messages/batches", "/v1/batches", "/v1/files"))


def sse_events(message: dict) -> bytes:
    """An Anthropic message as the server-sent events of a streamed answer."""
    start = {**message, "content": [], "stop_reason": None, "usage": {**message.get("usage", {}), "output_tokens": 0}}
    events = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message.get("content", [])):
        if block.get("type") == "tool_use":  # its input streamed as JSON, as the API streams a call
            start_block, delta = {**block, "input": {}}, {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start_block, delta = {**block, "text": ""}, {"type": "text_delta", "text": block.get("text", "")}
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start_block}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
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
            data = self.rfile.read(length)
            content_type = self.headers.get("content-type") or ""
            body = multipart(content_type, data) if content_type.startswith("multipart/") else json.loads(data or b"null")
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            state.requests.append(request)
            self.respond(request, state.batch_api(request) if is_batch_api(request) else state.answer(request))

        def do_GET(self):  # only the batch APIs serve something; anything else is recorded and answered 404
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, None, method="GET")
            state.requests.append(request)
            self.respond(request, state.batch_api(request) if is_batch_api(request) else
                         (404, {"type": "error", "error": {"type": "not_found_error", "message": request.path}}))

        def respond(self, request: Request, answered: tuple | None):
            if answered is None:
                self.close_connection = True
                return
            status, answer, *extra = answered
            streamed = (status == 200 and isinstance(request.body, dict) and request.body.get("stream") is True
                        and isinstance(answer, dict) and answer.get("type") == "message")
            raw = isinstance(answer, bytes)  # a file's content, or JSON Lines
            data = answer if raw else sse_events(answer) if streamed else json.dumps(answer).encode()
            headers = {"content-type": "application/octet-stream" if raw else
                       "text/event-stream" if streamed else "application/json",
                       **{name.lower(): value for name, value in (extra[0] if extra else {}).items()}}  # may set its own type
            try:
                self.send_response(status)
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        def log_message(self, *args):  # keep pytest's output clean
            pass

    return state, started(Handler, state)


def started(handler: type[BaseHTTPRequestHandler], state: Any) -> Callable[[], None]:
    """Serve `handler` on a free port of 127.0.0.1 in a thread (the stand-ins of each agent's API
    too), `state.url` its address; the function that stops it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()

    def stop():
        server.shutdown()
        server.server_close()

    return stop


def answered(handler: BaseHTTPRequestHandler, status: int, content_type: str, data: bytes) -> None:
    """Send one whole answer, unless the client gave up waiting."""
    try:
        handler.send_response(status)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
