"""Summaries in bulk through the providers' batch APIs: half the price of asking one at a time,
for results that take up to 24 hours (`compact --batch-api`, docs/compact.md#summaries-in-bulk).

1. Plan: each file is compacted as `compact` does it, by a summarizer that answers from the
   results already in (`AnsweringSummarizer`) and writes down each request it has no result for.
   The requests are thus the very ones `summarize` makes: the same prompts, the same chunks.
2. Submit the requests not submitted yet, split at the provider's limits. A request's
   `custom_id` is a hash of the request itself, so that a request is submitted once, however
   many files ask for it and however often the run is resumed.
3. Poll until every batch has ended, and collect each result.
4. Plan again the files that asked: a history too long for one request goes in chunks, each
   folded into the summary of the ones before, so it takes a round per chunk; a prompt the
   service found too long is halved, as `summarize` does. Until no file asks.
5. Apply: compact each file with the results (`Answers`). A result that errored, expired, was
   canceled or fails `summarize`'s validation makes that file fall back to the emergency mode.

The state (the batches submitted, the results in) is a JSON file, rewritten atomically after
each step: a run interrupted after it submitted resumes from it (`--resume STATE`), submits
nothing again and applies the results that came in meanwhile.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from ..core import settings
from ..core.errors import InputError, Location, ProviderError, TranscompactError, UsageError, option, shown_name
from ..core.model import Transcript
from ..core.words import counted
from ..io.files import write_file
from ..providers import Completion, PromptTooLong, Resolved, is_too_long, one_line, sdk_error

if TYPE_CHECKING:
    from ..io.inputs import Source
    from ..ops.compaction.compact import CompactOptions
    from .tasks import Reading

STATE_VERSION = 1


# --- requests and results ------------------------------------------------------------------


def request_body(provider: str, model: str, system: str, prompt: str, max_tokens: int) -> dict:
    """The request of one summary, as the provider's synchronous API takes it."""
    if provider == "anthropic":
        from ..providers.anthropic import params
    else:
        from ..providers.openai import params
    return params(model, system, prompt, max_tokens)


def custom_id(provider: str, body: dict) -> str:
    """A hash of the request: the same request has the same id in any run (64 characters, what
    Anthropic allows at most)."""
    canonical = json.dumps({"provider": provider, "body": body}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Answer:
    """One request's result: a summary, or why there is none."""

    text: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None  # what happened to the request: "expired", "errored: …"
    too_long: bool = False  # the service found the prompt too long: summarize halves the chunk
    cut: bool = False  # it stopped at the output limit (`Completion.cut`)

    def as_dict(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if v not in (None, 0, False)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


class AnsweringSummarizer:
    """A summarizer (the `Provider` protocol) that answers from a batch's results, and writes down
    each request it has no result for (`unanswered`: custom_id → request).

    `summarize` validates what it answers, as any provider's answer (for the summary's style),
    and, as a batch answers a request once (`answers_once`), does not ask again: one that fails
    makes the file fall back."""

    answers_once = True

    def __init__(self, provider: str, model: str, results: Mapping[str, Answer], missing: str | None = None):
        self.name, self.model, self.results = provider, model, results
        self.missing = missing or "the batch API has no result for this summary request"
        self.unanswered: dict[str, dict] = {}

    def complete(self, system: str, prompt: str, max_tokens: int) -> Completion:
        body = request_body(self.name, self.model, system, prompt, max_tokens)
        key = custom_id(self.name, body)
        answer = self.results.get(key)
        if answer is None:
            self.unanswered[key] = body
            raise ProviderError(self.missing)
        if answer.error is not None:
            raise (PromptTooLong if answer.too_long else ProviderError)(f"the batch request {answer.error}")
        return Completion(answer.text or "", answer.input_tokens, answer.output_tokens, cut=answer.cut)

    def close(self) -> None:
        pass


def requests_of(transcript: Transcript, options: CompactOptions, summarizer: AnsweringSummarizer) -> dict[str, dict]:
    """The summary requests compacting `transcript` with `options` (CompactOptions) makes that
    `summarizer` has no result for; none when its summary is complete or not needed."""
    from ..ops.compaction.compact import compact

    summarizer.unanswered = {}
    try:
        compact(transcript, replace(options, fallback=False), lambda: summarizer)
    except ProviderError:  # a request without a result, or one that failed: the apply step reports it
        pass
    return summarizer.unanswered


# --- the state -----------------------------------------------------------------------------


@dataclass
class State:
    """What was submitted and what came back, kept in a JSON file."""

    provider: str
    path: str
    batches: dict[str, list[str]] = field(default_factory=dict)  # batch id → its requests' custom_ids
    collected: list[str] = field(default_factory=list)  # the batches whose results are in
    results: dict[str, Answer] = field(default_factory=dict)  # custom_id → result

    @classmethod
    def open(cls, path: str, provider: str) -> State:
        """The state in `path` (a new one when the file does not exist yet)."""
        if not os.path.exists(path):
            return cls(provider, path)
        try:
            with open(path, encoding="utf-8") as file:
                data = json.load(file)
        except (OSError, ValueError) as error:
            raise UsageError(f"{path}: not a {option('resume')} state file: {error}") from None
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION or \
                not {"batches", "collected", "results"} <= data.keys():
            raise UsageError(f"{path}: not a {option('resume')} state file of this version of transcompact")
        if data.get("provider") != provider:
            raise UsageError(f"{path}: its batches are {data.get('provider')}'s, and {option('provider')} is {provider}",
                             hint=f"resume with {option('provider', data.get('provider'))}")
        return cls(provider, path, dict(data["batches"]), list(data["collected"]),
                   {key: Answer.from_dict(value) for key, value in data["results"].items()})

    @property
    def submitted(self) -> set[str]:
        return {key for keys in self.batches.values() for key in keys}

    @property
    def waiting(self) -> list[str]:
        """The batches submitted whose results are not in yet."""
        return [batch for batch in self.batches if batch not in self.collected]

    def save(self) -> None:
        data = {"version": STATE_VERSION, "provider": self.provider, "batches": self.batches,
                "collected": self.collected, "results": {key: a.as_dict() for key, a in self.results.items()}}
        write_file(self.path, json.dumps(data, ensure_ascii=False, indent=1).encode() + b"\n")


@functools.lru_cache(maxsize=1)
def _results_in(path: str, modified: int) -> dict[str, Answer]:
    """The results of a state file, read once per process (a worker compacts many files)."""
    with open(path, encoding="utf-8") as file:
        return {key: Answer.from_dict(value) for key, value in json.load(file)["results"].items()}


@dataclass(frozen=True)
class Answers:
    """Where the results are, as plain values: what each file's compaction (in a worker process
    too) makes its summarizer of."""

    provider: str
    model: str
    state: str  # the state file (not there when nothing was submitted)
    missing: str | None = None  # why a request has no result (the batch API could not be used)

    def summarizer(self) -> AnsweringSummarizer:
        results = _results_in(self.state, os.stat(self.state).st_mtime_ns) if os.path.exists(self.state) else {}
        return AnsweringSummarizer(self.provider, self.model, results, self.missing)


# --- the services --------------------------------------------------------------------------


@dataclass(frozen=True)
class Polled:
    """A batch as the service last reported it."""

    done: int  # requests with a result (Anthropic tells only when the whole batch has ended)
    total: int
    ended: bool


class BatchService(Protocol):
    name: str
    max_requests: int
    max_bytes: int

    def entry(self, key: str, body: dict) -> dict: ...  # one request as the batch takes it

    def submit(self, entries: list[dict]) -> str: ...  # the batch's id

    def poll(self, batch: str) -> Polled: ...

    def results(self, batch: str) -> tuple[dict[str, Answer], str]: ...  # and why a request has none

    def cancel(self, batch: str) -> None: ...

    def close(self) -> None: ...


@contextlib.contextmanager
def _answer_read(service: str) -> Iterator[None]:
    """Reading what a batch API answered: an answer that is not its own (a page, JSON of another
    shape, which the SDKs hand over as it came) is the service's error, not ours."""
    try:
        yield
    except (AttributeError, KeyError, TypeError, ValueError, IndexError) as error:
        raise ProviderError(f"{service} did not answer as the batch API does ({one_line(str(error), 120)})") from None


def _given(found: Any, name: str) -> Any:
    """The field `name` of what the batch API answered (the SDKs leave a missing one None)."""
    value = getattr(found, name)
    if value is None:
        raise ValueError(f"no {name!r} in its answer")
    return value


class AnthropicBatches:
    """Message Batches (`/v1/messages/batches`) through the official SDK."""

    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256_000_000

    def __init__(self, resolved: Resolved, *, timeout: float, retries: int):
        from ..providers.anthropic import client

        self.timeout, self.retries = timeout, retries
        self.api = client(resolved, timeout, retries)

    def _calling(self, call: Callable[[], Any]) -> Any:
        import anthropic

        try:
            return call()
        except anthropic.APIError as error:
            raise sdk_error(anthropic, error, service=self.SERVICE,
                            address=f"the Anthropic API at {self.api.base_url}", timeout=self.timeout,
                            retries=self.retries) from None

    def entry(self, key: str, body: dict) -> dict:
        return {"custom_id": key, "params": body}

    SERVICE = "the Anthropic Message Batches API"

    def submit(self, entries: list[dict]) -> str:
        with _answer_read(self.SERVICE):
            return str(_given(self._calling(lambda: self.api.messages.batches.create(requests=entries)), "id"))

    def poll(self, batch: str) -> Polled:
        found = self._calling(lambda: self.api.messages.batches.retrieve(batch))
        with _answer_read(self.SERVICE):
            counts = _given(found, "request_counts")
            total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            return Polled(total - counts.processing, total, _given(found, "processing_status") == "ended")

    def results(self, batch: str) -> tuple[dict[str, Answer], str]:
        with _answer_read(self.SERVICE):
            return self._results(batch)

    def _results(self, batch: str) -> tuple[dict[str, Answer], str]:
        answers = {}
        for item in self._calling(lambda: list(self.api.messages.batches.results(batch))):
            result = item.result
            if result.type == "succeeded":
                text = "".join(b.text for b in result.message.content if getattr(b, "type", None) == "text")
                usage = result.message.usage
                answers[item.custom_id] = Answer(text, usage.input_tokens or 0, usage.output_tokens or 0,
                                                 cut=getattr(result.message, "stop_reason", None) == "max_tokens")
            elif result.type == "errored":
                message = result.error.error.message
                answers[item.custom_id] = Answer(error=f"errored: {message}", too_long=is_too_long(message))
            else:
                answers[item.custom_id] = Answer(error="was canceled" if result.type == "canceled" else result.type)
        return answers, "has no result in the batch's results"

    def cancel(self, batch: str) -> None:
        self._calling(lambda: self.api.messages.batches.cancel(batch))

    def close(self) -> None:
        self.api.close()


class OpenAIBatches:
    """The Batch API of OpenAI (`/v1/batches` over a JSONL file of Chat Completions requests)
    through the official SDK."""

    name = "openai"
    max_requests = 50_000
    max_bytes = 200_000_000
    ENDED = ("completed", "failed", "expired", "cancelled")

    def __init__(self, resolved: Resolved, *, timeout: float, retries: int):
        import openai

        from ..providers.openai import NO_KEY

        self.timeout, self.retries = timeout, retries
        self.api = openai.OpenAI(api_key=resolved.key or NO_KEY, base_url=resolved.base_url, timeout=timeout,
                                 max_retries=retries)

    def _calling(self, call: Callable[[], Any]) -> Any:
        import openai

        try:
            return call()
        except openai.APIError as error:
            address = self._service()
            raise sdk_error(openai, error, service=address, address=address, timeout=self.timeout,
                            retries=self.retries) from None

    def entry(self, key: str, body: dict) -> dict:
        return {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body}

    def submit(self, entries: list[dict]) -> str:
        data = b"".join(json.dumps(entry, ensure_ascii=False).encode() + b"\n" for entry in entries)
        with _answer_read(self._service()):
            upload = self._calling(lambda: self.api.files.create(file=("transcompact-batch.jsonl", data, "application/jsonl"),
                                                                 purpose="batch"))
            created = self._calling(lambda: self.api.batches.create(input_file_id=_given(upload, "id"),
                                                                    endpoint="/v1/chat/completions", completion_window="24h"))
            return str(_given(created, "id"))

    def poll(self, batch: str) -> Polled:
        found = self._calling(lambda: self.api.batches.retrieve(batch))
        with _answer_read(self._service()):
            counts = found.request_counts
            done, total = (counts.completed + counts.failed, counts.total) if counts else (0, 0)
            return Polled(done, total, _given(found, "status") in self.ENDED)

    def _service(self) -> str:
        return f"{self.api.base_url}batches"

    def results(self, batch: str) -> tuple[dict[str, Answer], str]:
        with _answer_read(self._service()):
            return self._results(batch)

    def _results(self, batch: str) -> tuple[dict[str, Answer], str]:
        found = self._calling(lambda: self.api.batches.retrieve(batch))
        answers: dict[str, Answer] = {}
        for file_id in (found.output_file_id, found.error_file_id):
            if file_id:
                text = self._calling(functools.partial(self.api.files.content, file_id)).text
                answers.update(self._answer(json.loads(line)) for line in text.splitlines() if line.strip())
        errors = [e.message for e in (found.errors.data or [])] if found.errors else []
        why = f"has no result: the batch {found.status}" + (f": {'; '.join(map(str, errors))}" if errors else "")
        return answers, why

    @staticmethod
    def _answer(line: dict) -> tuple[str, Answer]:
        response, error = line.get("response") or {}, line.get("error") or {}
        body = response.get("body") or {}
        if response.get("status_code") == 200:
            usage = body.get("usage") or {}
            text = body["choices"][0]["message"].get("content") or ""
            return line["custom_id"], Answer(text, usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0,
                                             cut=body["choices"][0].get("finish_reason") == "length")
        if error.get("code") == "batch_expired":
            return line["custom_id"], Answer(error="expired")
        if error.get("code") == "batch_cancelled":
            return line["custom_id"], Answer(error="was canceled")
        message = error.get("message") or (body.get("error") or {}).get("message") or "no message"
        status = f"HTTP {response['status_code']}: " if response.get("status_code") else ""
        return line["custom_id"], Answer(error=f"errored: {status}{message}", too_long=is_too_long(message))

    def cancel(self, batch: str) -> None:
        self._calling(lambda: self.api.batches.cancel(batch))

    def close(self) -> None:
        self.api.close()


def service(resolved: Resolved, *, timeout: float = settings.TIMEOUT, retries: int = settings.RETRIES) -> BatchService:
    return (AnthropicBatches if resolved.provider == "anthropic" else OpenAIBatches)(resolved, timeout=timeout, retries=retries)


def split(entries: list[dict], max_requests: int, max_bytes: int) -> list[list[dict]]:
    """Consecutive entries grouped under both limits (an entry's size is its JSON line's)."""
    groups: list[list[dict]] = []
    current: list[dict] = []
    size = 0
    for entry in entries:
        cost = len(json.dumps(entry, ensure_ascii=False).encode()) + 1
        if current and (len(current) >= max_requests or size + cost > max_bytes):
            groups.append(current)
            current, size = [], 0
        current.append(entry)
        size += cost
    return groups + [current] if current else groups


# --- the whole thing -----------------------------------------------------------------------


@dataclass(frozen=True)
class Watching:
    """Who is told what, while the batches run: lines to say, and the poll's progress."""

    say: Callable[[str], None] = lambda line: None
    progress: Callable[[int, int, int, int], None] = lambda done, total, ended, batches: None


def summarize_in_bulk(names: Iterable[str], load: Callable[[str], Transcript], options: CompactOptions, resolved: Resolved,
                      state_path: str, *, keep_batches: bool = True, timeout: float = settings.TIMEOUT,
                      retries: int = settings.RETRIES, poll_interval: float = settings.POLL_INTERVAL,
                      watching: Watching = Watching()) -> Answers:
    """Every summary compacting the files `names` with `options` (CompactOptions) needs, through
    `resolved`'s batch API; `load` reads a file (one it cannot read is left to the caller, who
    compacts it and reports it). The results go to the state file `state_path`, resumed when it
    exists. Interrupted, the batches under way go on for a resume from it, or with
    `keep_batches` off (nothing will resume them) are canceled.

    A batch API that cannot be used (no key, unreachable, refused) is not an error: the files
    whose summary it was to write fall back to the emergency mode, with its reason. But when it
    fails while batches it keeps for a resume are under way, the error is raised: their results
    are still to come, and the files are left as they are for them.
    """
    state = State.open(state_path, resolved.provider)
    state.save()  # a state file that cannot be written fails here, before a batch it would lose is sent
    if state.batches:
        watching.say(f"resuming: {counted(len(state.batches), 'batch', 'batches')} submitted before, "
                     f"{counted(len(state.results), 'result')} in")
    connection: list[BatchService] = []

    def connected() -> BatchService:
        if not connection:
            connection.append(service(resolved, timeout=timeout, retries=retries))
        return connection[0]

    asking = list(names)
    try:
        while asking:
            wanted, asking = _plan(asking, load, options, resolved, state)
            submitted = state.submitted
            new = {key: body for key, body in wanted.items() if key not in submitted}
            if not new and not state.waiting:
                break  # every request has a result already
            if new:
                _submit(connected(), new, state, watching)
            _wait(connected(), state, poll_interval, watching)
    except ProviderError as error:
        resumable = keep_batches and state.waiting
        _abandon(state, connection, keep_batches, watching)
        if resumable:
            raise
        return Answers(resolved.provider, resolved.model, state_path, missing=f"the batch API failed: {error}")
    except BaseException:
        _abandon(state, connection, keep_batches, watching)
        raise
    finally:
        for opened in connection:
            opened.close()
    return Answers(resolved.provider, resolved.model, state_path)


def _abandon(state: State, connection: list[BatchService], keep_batches: bool, watching: Watching) -> None:
    """The batches under way when the run stops early: left for a resume, or canceled (nothing
    could pick their results up: they would be paid for nothing)."""
    if keep_batches and state.waiting:
        watching.say(f"the batches go on; run again with --resume {state.path} to apply their results")
    elif connection:
        for batch in state.waiting:
            try:
                connection[0].cancel(batch)
                watching.say(f"canceled batch {batch}")
            except ProviderError:  # it ends by itself within 24 h
                pass


def _plan(names: list[str], load: Callable[[str], Transcript], options: CompactOptions, resolved: Resolved,
          state: State) -> tuple[dict[str, dict], list[str]]:
    """The requests the files ask for that have no result (custom_id → request), and the files that ask."""
    summarizer = AnsweringSummarizer(resolved.provider, resolved.model, state.results)
    wanted: dict[str, dict] = {}
    asking = []
    for name in names:
        try:
            requests = requests_of(load(name), options, summarizer)
        except TranscompactError:  # not read, or not compacted: the apply step says why
            continue
        if requests:
            wanted.update(requests)
            asking.append(name)
    return wanted, asking


def _submit(service: BatchService, requests: Mapping[str, dict], state: State, watching: Watching) -> None:
    entries = []
    for key, body in requests.items():
        entry = service.entry(key, body)
        if len(json.dumps(entry, ensure_ascii=False).encode()) >= service.max_bytes:
            state.results[key] = Answer(error=f"was not sent: it is over the {service.max_bytes:,} bytes a batch may hold")
        else:
            entries.append(entry)
    for group in split(entries, service.max_requests, service.max_bytes):
        batch = service.submit(group)
        state.batches[batch] = [entry["custom_id"] for entry in group]
        state.save()  # at once: a run stopped now resumes this batch, it does not submit it again
        watching.say(f"submitted batch {batch}: {counted(len(group), 'request')}")
    state.save()


def _wait(service: BatchService, state: State, poll_interval: float, watching: Watching) -> None:
    """Poll the batches not collected yet until each has ended, and collect each as it ends."""
    waiting = state.waiting
    while waiting:
        polled = {batch: service.poll(batch) for batch in waiting}
        ended = [batch for batch, found in polled.items() if found.ended]
        total = sum(len(state.batches[batch]) for batch in state.batches)
        done = sum(len(state.batches[batch]) for batch in state.collected)
        done += sum(found.done for found in polled.values())
        watching.progress(done, total, len(state.collected) + len(ended), len(state.batches))
        for batch in ended:
            _collect(service, batch, state, watching)
        waiting = state.waiting
        if waiting:
            time.sleep(poll_interval)


def _collect(service: BatchService, batch: str, state: State, watching: Watching) -> None:
    answers, why_none = service.results(batch)
    for key in state.batches[batch]:
        state.results[key] = answers.get(key) or Answer(error=why_none)
    state.collected.append(batch)
    state.save()
    kinds: dict[str, int] = {}
    for key in state.batches[batch]:
        answer = state.results[key]
        kind = "succeeded" if answer.error is None else answer.error.split(":")[0].removeprefix("was ")  # (3 canceled)
        kinds[kind] = kinds.get(kind, 0) + 1
    watching.say(f"batch {batch} ended: " + ", ".join(f"{count:,} {kind}" for kind, count in kinds.items()))


# --- the command line ------------------------------------------------------------------------


@contextlib.contextmanager
def answers_for_files(files: Sequence[str], patterns: Sequence[str], reading: Reading, options: CompactOptions, resolved: Resolved, *,
                      state_file: str | None, poll_interval: float, timeout: float, retries: int, dry_run: bool,
                      quiet: bool) -> Iterator[Answers | int]:
    """`compact --batch-api`: the answers for the files the arguments name, while the caller
    compacts them; in a dry run, which says what it would submit (and which files it cannot
    read) and submits nothing, its exit status.
    Without `state_file` the state is a temporary file, gone afterwards, and an interrupt
    cancels the batches (nothing could resume them)."""
    from ..io.files import STDIN
    from ..io.inputs import discover, read_input

    if not files or STDIN in files:
        raise UsageError(f"{option('batch_api')} reads each file twice (to find the requests, then to apply the results): "
                         "give files, not stdin")
    sources = list(discover(files, patterns))
    names = [source.path for source in sources if source.problem is None and source.left is None]

    def load(name: str) -> Transcript:
        return reading.load(read_input(name)[1], name)

    if dry_run:
        yield _say_what_would_be_submitted(sources, load, options, resolved, state_file, quiet)
        return
    with tempfile.TemporaryDirectory(prefix="transcompact-") as scratch:
        with PollDisplay(quiet=quiet) as display:  # gone before the files are compacted, with a bar of their own
            answers = summarize_in_bulk(names, load, options, resolved, state_file or os.path.join(scratch, "state.json"),
                                        keep_batches=state_file is not None, timeout=timeout, retries=retries,
                                        poll_interval=poll_interval, watching=display.watching())
        yield answers


def _say_what_would_be_submitted(sources: Sequence[Source], load: Callable[[str], Transcript], options: CompactOptions,
                                 resolved: Resolved, state_file: str | None, quiet: bool) -> int:
    """A dry run's plan: the first round's requests per file (a file summarized in chunks asks
    for the next chunk's once the first is in); each file that cannot be read or compacted named
    with its error, as the run itself names it. Its exit status: the worst of those errors'."""
    results = State.open(state_file, resolved.provider).results if state_file else {}
    summarizer = AnsweringSummarizer(resolved.provider, resolved.model, results)
    wanted: set[str] = set()
    status = 0
    for source in sources:
        if source.left is not None:
            continue  # a walk's file it does not touch (a link out of the tree): the run names it, reads nothing
        name = shown_name(source.path)
        try:
            if source.problem:
                raise InputError(source.problem, location=Location(source.path))
            requests = requests_of(load(source.path), options, summarizer)
        except TranscompactError as error:
            line, _ = error.for_command_line()
            shown = line if error.location is not None or line.startswith(f"{name}:") else f"{name}: {line}"
            print(f"transcompact: error: {shown}", file=sys.stderr)
            status = max(status, error.exit_code)
            continue
        wanted.update(requests)
        if requests and not quiet:
            print(f"{name}: dry run: would submit {counted(len(requests), 'summary request')}",
                  file=sys.stderr)
    if not quiet:
        print(f"compact: dry run: would submit {counted(len(wanted), 'request')} to the {resolved.provider} batch API; "
              "nothing was submitted, nothing written", file=sys.stderr)
    return status


# --- on stderr -----------------------------------------------------------------------------


class PollDisplay:
    """The poll on stderr: a rich bar on a terminal; otherwise a plain line at the first poll and
    then at most every `PLAIN_EVERY` seconds, when something changed (a CI log)."""

    PLAIN_EVERY = 60.0

    def __init__(self, *, quiet: bool):
        self.quiet = quiet
        self.bar: Any = None
        self.last: tuple[int, int, int, int] | None = None
        self.printed = 0.0
        self.started = time.monotonic()

    def __enter__(self) -> PollDisplay:
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def watching(self) -> Watching:
        return Watching(say=self.say, progress=self.progress)

    def say(self, line: str) -> None:
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.console.out(f"compact: {line}", highlight=False)
        else:
            print(f"compact: {line}", file=sys.stderr, flush=True)

    def progress(self, done: int, total: int, ended: int, batches: int) -> None:
        if self.quiet:
            return
        if sys.stderr.isatty():
            self._bar(done, total, ended, batches)
            return
        now = time.monotonic()
        if (done, total, ended, batches) != self.last and (self.last is None or now - self.printed >= self.PLAIN_EVERY):
            self.last, self.printed = (done, total, ended, batches), now
            print(f"compact: batch API: {done:,} of {total:,} requests done, {ended} of {batches} batches ended, "
                  f"{now - self.started:.0f} s", file=sys.stderr, flush=True)

    def _bar(self, done: int, total: int, ended: int, batches: int) -> None:
        if self.bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("batch API"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[batches]}"),
                                TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self.task = self.bar.add_task("requests", total=total, batches="")
            self.bar.start()
        self.bar.update(self.task, completed=done, total=total, batches=f"{ended} of {batches} batches ended")
