"""Layer 2 of the spec (docs/design.md §7): a structured checkpoint summary of the old part, by a model.

What the summarizer sees is the old part as text: user and assistant text, each tool call as its
name and compact JSON input, each tool result cut to a head and a tail, images and documents as
a one-line mention, thinking left out. A summary that already exists (a summary pair we wrote, a
Claude Code compact summary, or one given) is updated with UPDATE_SYSTEM_PROMPT instead of
starting over, and its messages are not sent again.

It never fails on size: when the text is over the input budget it is cut into chunks at message
boundaries, the first summarized with CHECKPOINT and each next one folded in with UPDATE; and a
chunk the provider still finds too long is halved.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core import settings
from ...core.errors import ProviderError, UsageError, option, refuse_negative
from ...core.jsondata import compact_json
from ...core.model import (
    ASSISTANT,
    USER,
    Document,
    Image,
    Message,
    Opaque,
    ServerToolCall,
    ServerToolResult,
    Text,
    ToolCall,
    ToolResult,
    Transcript,
    tool_inputs,
    tool_names,
)
from ...counting.counter import Options as EstimateOptions
from ...providers import Completion, PromptTooLong, Provider
from .cut import Cut, find_cut_point
from .output_errors import result_error_lines
from .summary_message import find_previous

# The spec's prompts (docs/design.md §7), word for word.
CHECKPOINT_SYSTEM_PROMPT = """You are a conversation summarizer. Output ONLY a structured summary.
TARGET LENGTH: 800-1200 words. Prioritize precision over completeness.

## Format

## Goal
[1-2 sentences]

## Constraints & Preferences  
- [Requirements, technical constraints]

## Progress
### Done
- [x] [Completed items]
### In Progress
- [ ] [Current work]

## Key Decisions
- **[Decision]**: [Rationale]

## Conversation Dynamics
- [User tone, frustration, preferences expressed]
- [Communication style, behavioral instructions given]
- [Unresolved questions]

## Next Steps
1. [Ordered list]

## Critical Context
- [File paths, error messages, API endpoints, variable names]
"""

UPDATE_SYSTEM_PROMPT = """You are updating a conversation summary with new messages.
TARGET LENGTH: 800-1200 words. If exceeding, prioritize:
1. Recent progress and decisions
2. Critical context (paths, errors, APIs)  
3. Active constraints
4. Conversation dynamics
Drop older completed "Done" items if needed.

RULES:
1. PRESERVE existing info unless explicitly superseded
2. ADD new progress, decisions, context
3. MOVE In Progress → Done when completed
4. UPDATE Conversation Dynamics with new signals
5. PRESERVE exact file paths, function names, error messages
6. Use SAME format as existing summary

Output ONLY the updated summary."""

# --style narrative: the earlier designs' narrative and free-text summaries, as prose (docs/design.md §7).
NARRATIVE_SYSTEM_PROMPT = """You are a conversation summarizer. Write a prose account of the conversation so far:
what the user asked for and why, what was done and decided (and the reasons), what went wrong,
where things stand and what comes next. Plain paragraphs, no headings and no lists.
TARGET LENGTH: 400-800 words. Be concise but complete; omit pleasantries and filler.
Keep exactly: file paths, function names, commands, error messages, names, dates and the
preferences the user stated.

Output ONLY the account."""

NARRATIVE_UPDATE_PROMPT = """You are updating a prose account of a conversation with new messages.
TARGET LENGTH: 400-800 words. If exceeding, shorten what is oldest and finished first.

RULES:
1. PRESERVE what is still true; replace what the new messages supersede
2. ADD what the new messages did, decided and found
3. KEEP exact file paths, function names, error messages
4. Write ONE account in plain paragraphs, no headings and no lists

Output ONLY the updated account."""

MIN_CHARS = 200
WARN_CHARS = 8000
KEY_SECTIONS = (r"##\s*goals?\b", r"##\s*progress\b", r"##\s*critical\s*context\b")
CHARS_PER_TOKEN = 4  # how the input budget is turned into characters (the spec's chars/4)
MAX_SUMMARY_TOKENS = 4096


@dataclass(frozen=True)
class SummaryOptions:
    keep_recent_tokens: int = settings.KEEP_RECENT_TOKENS
    keep_recent_messages: int = settings.KEEP_RECENT_MESSAGES  # and at least this many messages
    everything: bool = False  # --all: summarize every message, not only the old part
    counting: EstimateOptions = EstimateOptions()
    instructions: str | None = None
    previous_summary: str | None = None  # given by the user (--previous-summary FILE)
    result_chars: int = settings.RESULT_CHARS  # a tool result is cut to this many characters (head + tail)
    input_tokens: int = settings.SUMMARY_INPUT_TOKENS  # the summarizer's input budget (--summary-input-tokens)
    style: str = settings.STYLE  # "checkpoint": the spec's sections; "narrative": a prose account

    def __post_init__(self) -> None:
        refuse_negative(keep_recent_tokens=self.keep_recent_tokens, keep_recent_messages=self.keep_recent_messages,
                        result_chars=self.result_chars, input_tokens=self.input_tokens)


@dataclass(frozen=True)
class Coverage:
    """The file paths and error lines of the old part, and how many of them the summary names."""

    paths: tuple[str, ...]
    errors: tuple[str, ...]
    paths_named: int
    errors_named: int

    @property
    def share(self) -> float | None:
        found = len(self.paths) + len(self.errors)
        return (self.paths_named + self.errors_named) / found if found else None

    def as_dict(self) -> dict:
        return {"paths": len(self.paths), "paths_named": self.paths_named, "errors": len(self.errors),
                "errors_named": self.errors_named, "share": None if self.share is None else round(self.share, 4)}


@dataclass(frozen=True)
class Summary:
    text: str
    provider: str
    model: str
    chunks: int
    requests: int
    input_tokens: int
    output_tokens: int
    previous_summary_used: bool
    coverage: Coverage
    cut: Cut | None  # None with --all
    summarized: int  # how many messages were summarized (synthetic summary messages left out)
    warnings: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict:
        return {
            "summary": self.text, "provider": self.provider, "model": self.model, "chunks": self.chunks,
            "usage": {"requests": self.requests, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "previous_summary_used": self.previous_summary_used, "coverage": self.coverage.as_dict(),
            "cut": self.cut.index if self.cut else None, "messages": self.summarized, "warnings": list(self.warnings),
        }


# --- what the summarizer sees --------------------------------------------------------------


def trimmed(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n[… {len(text) - limit} characters omitted …]\n{text[-tail:] if tail else ''}"


def serialize(message: Message, names: dict[str, str], result_chars: int = settings.RESULT_CHARS) -> str:
    """One message as the summarizer reads it (thinking left out): text blocks one after the other
    as one turn, as the API reads them (a reply with citations is a text block between each two)."""
    role = {USER: "User", ASSISTANT: "Assistant"}.get(message.role, message.role.capitalize())
    parts: list[str] = []
    text_run = False  # the last part is a turn of text the next text block goes on
    for block in message.blocks:
        if isinstance(block, Text):
            if text_run:
                parts[-1] += block.text
            elif block.text.strip():
                parts.append(f"**{role}:** {block.text}")
                text_run = True
            continue
        text_run = False
        if isinstance(block, (ToolCall, ServerToolCall)):
            parts.append(f"**{role} → tool call** `{block.name}` {compact_json(block.input)}")
        elif isinstance(block, ToolResult):
            label = names.get(block.tool_call_id, "tool")
            status = " (error)" if block.is_error else ""
            parts.append(f"**Tool result** `{label}`{status}: {trimmed(_result_text(block), result_chars)}")
        elif isinstance(block, ServerToolResult):
            parts.append(f"**Tool result** `{block.type}`: {trimmed(compact_json(_readable(block.raw.get('content', ''))), result_chars)}"
                         if isinstance(block.raw, dict) else f"**Tool result** `{block.type}`")
        elif isinstance(block, (Image, Document)):
            parts.append(f"**{role}:** {_mention(block)}")
        elif isinstance(block, Opaque) and block.type:  # audio, a file, a block of a kind no operation reads
            parts.append(f"**{role}:** [{block.type}]")
    return "\n".join(parts)


def _readable(value: Any) -> Any:
    """A server tool's result without what only the service can read (a web search's
    `encrypted_content`, which would fill the room a result has before its titles and URLs)."""
    if isinstance(value, dict):
        return {key: _readable(item) for key, item in value.items() if not key.startswith("encrypted_")}
    if isinstance(value, list):
        return [_readable(item) for item in value]
    return value


def _result_text(result: ToolResult) -> str:
    if isinstance(result.content, str):
        return result.content
    return "\n".join(b.text if isinstance(b, Text) else _mention(b) for b in result.content
                     if isinstance(b, (Text, Image, Document)))


def _mention(block: Image | Document) -> str:
    if isinstance(block, Image):
        return f"[image{' ' + block.media_type if block.media_type else ''}]"
    title = block.raw.get("title") if isinstance(block.raw, dict) else None
    return f"[document{' ' + repr(title) if title else ''}{' ' + block.media_type if block.media_type else ''}]"


# --- validation and coverage ---------------------------------------------------------------


def problems(summary: str, style: str = settings.STYLE, conversation: str = "") -> list[str]:
    """Why a summary is not acceptable (the spec's `_validate_summary`); empty when it is.

    A checkpoint needs 2 of its 3 key sections; a narrative has none, so it must name at least
    one of the file paths of the `conversation` it summarizes, when that names any.
    """
    found = []
    if len(summary.strip()) < MIN_CHARS:
        found.append(f"too short ({len(summary.strip())} characters, at least {MIN_CHARS})")
    if style == "narrative":
        paths = set(_PATH.findall(conversation))
        if paths and not any(p in summary for p in paths):
            found.append(f"names none of the {len(paths)} file paths of what it summarizes")
        return found
    sections = sum(1 for pattern in KEY_SECTIONS if re.search(pattern, summary, re.IGNORECASE))
    if sections < 2:
        found.append(f"{sections} of the 3 key sections (Goal, Progress, Critical Context), at least 2")
    return found


_PATH = re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,7}\b")
_MAX_FACTS = 100


def coverage(messages: Sequence[Message], summary: str, names: dict[str, str] | None = None,
             inputs: dict[str, object] | None = None) -> Coverage:
    """Paths in tool inputs and results, error lines of the results (as the emergency checkpoint
    finds them), and which the summary names. `names` and `inputs` map call ids to their tools."""
    names, inputs = names or {}, inputs or {}
    paths: dict[str, None] = {}
    errors: dict[str, None] = {}
    for message in messages:
        for block in message.blocks:
            if isinstance(block, ToolCall):
                for path in _PATH.findall(compact_json(block.input)):
                    paths.setdefault(path, None)
            elif isinstance(block, ToolResult):
                text = _result_text(block)
                for path in _PATH.findall(text):
                    paths.setdefault(path, None)
                for line in result_error_lines(block, names.get(block.tool_call_id), inputs.get(block.tool_call_id)):
                    errors.setdefault(line[:200], None)
            elif isinstance(block, Text) and message.role == USER:
                for path in _PATH.findall(block.text):
                    paths.setdefault(path, None)
    kept_paths = tuple(list(paths)[-_MAX_FACTS:])
    kept_errors = tuple(list(errors)[-_MAX_FACTS:])
    return Coverage(
        kept_paths, kept_errors,
        sum(1 for p in kept_paths if p in summary or p.lstrip("./") in summary),
        sum(1 for e in kept_errors if e[:60] in summary),
    )


# --- chunks --------------------------------------------------------------------------------


def chunked(pieces: Sequence[str], capacity: int) -> list[list[str]]:
    """Consecutive pieces grouped under `capacity` characters; a piece bigger than that is cut."""
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        for part in (piece[i : i + capacity] for i in range(0, len(piece), capacity)):
            if current and size + len(part) > capacity:
                chunks.append(current)
                current, size = [], 0
            current.append(part)
            size += len(part) + 2  # the blank line between messages
    return chunks + [current] if current else chunks


def halved(chunk: list[str]) -> list[list[str]]:
    if len(chunk) > 1:
        middle = len(chunk) // 2
        return [chunk[:middle], chunk[middle:]]
    text = chunk[0]
    return [[text[: len(text) // 2]], [text[len(text) // 2:]]]


# --- the whole thing -----------------------------------------------------------------------


def summarize(transcript: Transcript, provider: Provider | Callable[[], Provider], options: SummaryOptions = SummaryOptions(),
              progress: Callable[[int, int], None] | None = None, cut: Cut | None = None) -> Summary | None:
    """The summary of the old part (before `cut`, found when not given; everything with
    `options.everything`); None when there is nothing old to summarize. `provider` may be a
    function that makes one: it is called (and the provider closed after) only when there is
    something to summarize, so that a transcript with nothing old needs no key."""
    messages = transcript.messages
    if not options.everything:
        cut = cut or find_cut_point(transcript, options.keep_recent_tokens, options.counting,
                                    keep_recent_messages=options.keep_recent_messages)
        messages = messages[: cut.index]
    found = find_previous(messages)
    previous = options.previous_summary or (found.summary.body if found else None)
    old = [m for i, m in enumerate(messages) if not (found and i in found.covered)]
    names = tool_names(transcript.messages)
    pieces = [text for m in old if (text := serialize(m, names, options.result_chars))]
    if not pieces:
        return None
    if options.style not in settings.STYLES:
        raise UsageError(f"unknown summary style {options.style!r} (choose from {', '.join(settings.STYLES)})")
    first_prompt, update_prompt = ((NARRATIVE_SYSTEM_PROMPT, NARRATIVE_UPDATE_PROMPT) if options.style == "narrative"
                                   else (CHECKPOINT_SYSTEM_PROMPT, UPDATE_SYSTEM_PROMPT))
    checkpoint = first_prompt + _focus(options.instructions)
    update = update_prompt + _focus(options.instructions)
    reserve = max(len(previous or ""), WARN_CHARS) + len(update) + 200  # the summary so far travels with each chunk
    capacity = max(1000, options.input_tokens * CHARS_PER_TOKEN - reserve)
    queue = chunked(pieces, capacity)
    with _provided(provider) as summarizer:
        summary, usage, done, requests = previous, Completion(""), 0, 0
        warnings: list[str] = []
        while queue:
            chunk = queue.pop(0)
            if progress:
                progress(done + 1, done + 1 + len(queue))
            conversation = "\n\n".join(chunk)
            if summary is None:
                system, prompt = checkpoint, conversation
            else:
                system, prompt = update, f"## Existing Summary\n\n{summary}\n\n## New Conversation\n\n{conversation}"
            try:
                answer, asked = _ask(summarizer, system, prompt, lambda text: problems(text, options.style, conversation))  # noqa: B023 (called in this turn of the loop)
            except PromptTooLong:
                requests += 1
                if sum(map(len, chunk)) < 200:
                    raise
                queue[:0] = halved(chunk)
                continue
            summary = answer.text.strip()
            requests += asked
            usage = Completion("", usage.input_tokens + answer.input_tokens, usage.output_tokens + answer.output_tokens)
            done += 1
        if summary is not None and len(summary) > WARN_CHARS:
            warnings.append(f"the summary is long: {len(summary):,} characters (the spec aims at at most {WARN_CHARS:,})")
        return Summary(
            text=summary or "", provider=summarizer.name, model=summarizer.model, chunks=done, requests=requests,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, previous_summary_used=previous is not None,
            coverage=coverage(old, summary or "", names, tool_inputs(transcript.messages)), cut=cut, summarized=len(old), warnings=tuple(warnings),
        )


@contextlib.contextmanager
def _provided(provider: Provider | Callable[[], Provider]) -> Iterator[Provider]:
    """The provider given, or the one a function given makes (closed after)."""
    if isinstance(provider, Provider):
        yield provider
        return
    made = provider()
    try:
        yield made
    finally:
        made.close()


def _focus(instructions: str | None) -> str:
    return f"\n\nAdditional focus for this summary: {instructions.strip()}" if instructions and instructions.strip() else ""


def _ask(provider: Provider, system: str, prompt: str, problems: Callable[[str], list[str]]) -> tuple[Completion, int]:
    """A validated answer (asked once more when the first fails validation, but of a provider that
    answers a request once: a batch's) and how many requests it took."""
    def found_in(answer: Completion) -> list[str]:
        cut = [f"cut off at the output limit ({MAX_SUMMARY_TOKENS:,} tokens): its last sections may be missing"]
        return problems(answer.text) + (cut if answer.cut else [])

    first = provider.complete(system, prompt, MAX_SUMMARY_TOKENS)
    if not (found := found_in(first)):
        return first, 1
    once = getattr(provider, "answers_once", False)
    second = first if once else provider.complete(system, prompt, MAX_SUMMARY_TOKENS)
    if not once:
        found = found_in(second)
    if found:
        raise ProviderError(f"the summary from {provider.name} ({provider.model}) failed validation{'' if once else ' twice'}: "
                            f"{'; '.join(found)}", hint=f"try another {option('model')}, or check what the endpoint answers")
    return Completion(second.text, first.input_tokens + second.input_tokens, first.output_tokens + second.output_tokens), 2
