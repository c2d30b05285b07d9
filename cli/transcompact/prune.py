"""Layer 1 of the spec (seed 003): trim and clear old tool results, without a model.

Tool-result messages are counted from the end. The last `keep_last` are protected. Those older
than the last `hard_clear_after` become the placeholder. Any other result longer than
`soft_trim_chars` keeps its `head` and `tail` around a marker that states what was kept. User
text and assistant blocks are never changed (unless `clear_tool_inputs` / `clear_thinking` are
asked for), results that hold an image or anything but text are left alone, and a result that
was pruned already is not pruned again, so pruning twice is pruning once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from . import settings
from .estimate import TokenCounter
from .model import ASSISTANT, USER, Message, RedactedThinking, Text, Thinking, ToolCall, ToolResult, Transcript, tool_names

PLACEHOLDER = "[Tool output cleared — content was processed in earlier turns]"
_ARCHIVED_PLACEHOLDER = "[Tool output cleared — content was processed in earlier turns; archived as {id}]"
_MARKER = "\n\n--- trimmed (kept {head} head + {tail} tail of {total} chars) ---\n\n"
_ARCHIVED_MARKER = "\n\n--- trimmed (kept {head} head + {tail} tail of {total} chars; archived as {id}) ---\n\n"
_CLEARED = re.compile(r"\[Tool output cleared — content was processed in earlier turns(; archived as [^\]]*)?\]\Z")
_TRIMMED = re.compile(r"\n\n--- trimmed \(kept \d+ head \+ \d+ tail of \d+ chars(; archived as [^)]*)?\) ---\n\n")


@dataclass(frozen=True)
class PruneOptions:
    soft_trim_chars: int = settings.SOFT_TRIM_CHARS
    head: int = settings.HEAD
    tail: int = settings.TAIL
    hard_clear_after: int = settings.HARD_CLEAR_AFTER
    keep_last: int = settings.KEEP_LAST
    exclude_tools: frozenset[str] = frozenset()
    clear_tool_inputs: bool = False
    clear_thinking: bool = False
    archive: bool = False  # name the tool call id in each marker (the originals go to an archive: archive.py)


@dataclass(frozen=True)
class PruneReport:
    soft_trimmed: int = 0
    cleared: int = 0
    protected: int = 0
    excluded: int = 0
    untouched_media: int = 0  # results holding an image or other non-text blocks
    inputs_cleared: int = 0
    thinking_removed: int = 0
    tokens_before: int = 0
    tokens_after: int = 0

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("soft_trimmed", "cleared", "protected", "excluded", "untouched_media",
                                               "inputs_cleared", "thinking_removed", "tokens_before", "tokens_after")}


def tool_result_groups(transcript: Transcript) -> list[list[int]]:
    """The tool-result messages, oldest first, each as the message indices it spans.

    An Anthropic user message with tool_result blocks is one (a Claude Code log's result lines of
    one response are already one message); in OpenAI, the run of `tool` messages answering one
    assistant message is one.
    """
    groups: list[list[int]] = []
    previous = False
    for index, message in enumerate(transcript.messages):
        is_result = message.is_tool_result_message
        if is_result and previous and transcript.dialect == "openai":
            groups[-1].append(index)
        elif is_result:
            groups.append([index])
        previous = is_result
    return groups


def _text(result: ToolResult) -> str | None:
    """The result's text, or None when it holds anything but text (an image, a document, …)."""
    if isinstance(result.content, str):
        return result.content
    if all(isinstance(b, Text) for b in result.content):
        return "\n".join(b.text for b in result.content)
    return None


def _with_text(result: ToolResult, text: str) -> ToolResult:
    """The result with new text, in the shape it had (a string, or a list of one text block)."""
    return replace(result, content=text if isinstance(result.content, str) else (Text(text),))


def prune(transcript: Transcript, options: PruneOptions = PruneOptions(),
          counter: TokenCounter | None = None) -> tuple[Transcript, PruneReport]:
    """The transcript with old tool results trimmed and cleared, and what was done; the report's
    counts by `counter` (a run's, made on its input), else by the default count of `transcript`."""
    groups = tool_result_groups(transcript)
    names = tool_names(transcript.messages)
    messages = list(transcript.messages)
    counts = dict(soft_trimmed=0, cleared=0, protected=0, excluded=0, untouched_media=0)

    for position, indices in enumerate(groups):
        age = len(groups) - 1 - position  # how many tool-result messages came after this one
        for index in indices:
            blocks = list(messages[index].blocks)
            for b, block in enumerate(blocks):
                if not isinstance(block, ToolResult):
                    continue
                new = _pruned_result(block, age, options, names, counts)
                if new is None:
                    continue
                blocks[b] = new
            if blocks != list(messages[index].blocks):
                messages[index] = messages[index].with_blocks(tuple(blocks))

    cleared = {r.tool_call_id for m in messages for r in m.tool_results if _CLEARED.match(_text(r) or "")}
    inputs_cleared = _clear_inputs(messages, cleared) if options.clear_tool_inputs else 0
    thinking_removed = _clear_thinking(messages) if options.clear_thinking else 0
    pruned = transcript.with_messages(messages)
    counter = counter or TokenCounter(transcript)
    before, after = counter.tokens(transcript), counter.tokens(pruned)
    report = PruneReport(**counts, inputs_cleared=inputs_cleared, thinking_removed=thinking_removed,
                         tokens_before=before, tokens_after=after)
    return pruned, report


def _pruned_result(block: ToolResult, age: int, options: PruneOptions, names: dict, counts: dict) -> ToolResult | None:
    """The new result, or None when this one stays as it is."""
    if age < options.keep_last:
        counts["protected"] += 1
        return None
    if names.get(block.tool_call_id) in options.exclude_tools:
        counts["excluded"] += 1
        return None
    text = _text(block)
    if text is None:
        counts["untouched_media"] += 1
        return None
    if _CLEARED.match(text):
        return None
    if age >= options.hard_clear_after:
        placeholder = _ARCHIVED_PLACEHOLDER.format(id=block.tool_call_id) if options.archive else PLACEHOLDER
        if len(text) <= len(placeholder):
            return None  # clearing would make it longer
        counts["cleared"] += 1
        return _with_text(block, placeholder)
    if len(text) <= options.soft_trim_chars or _TRIMMED.search(text):
        return None
    marker = (_ARCHIVED_MARKER if options.archive else _MARKER).format(
        head=options.head, tail=options.tail, total=len(text), id=block.tool_call_id)
    trimmed = text[: options.head] + marker + (text[-options.tail :] if options.tail else "")
    if len(trimmed) >= len(text):
        return None  # the marker would add more than the trim takes away
    counts["soft_trimmed"] += 1
    return _with_text(block, trimmed)


def _clear_inputs(messages: list[Message], cleared: set[str]) -> int:
    """The input of each call whose result is cleared becomes {} (its name and id stay)."""
    count = 0
    for index, message in enumerate(messages):
        if message.role != ASSISTANT:
            continue
        blocks = list(message.blocks)
        for b, block in enumerate(blocks):
            if isinstance(block, ToolCall) and block.id in cleared and block.input != {}:
                blocks[b] = replace(block, input={})
                count += 1
        if blocks != list(message.blocks):
            messages[index] = message.with_blocks(tuple(blocks))
    return count


def _clear_thinking(messages: list[Message]) -> int:
    """Remove thinking from every assistant message but the last, which the API allows.

    The current turn (from the last user message that is not a tool result) keeps its thinking
    too: with thinking enabled, its tool loop must start with it. A message that holds nothing but
    thinking keeps it, since an empty message is not allowed.
    """
    current = max((i for i, m in enumerate(messages) if m.role == USER and not m.is_tool_result_message), default=0)
    last_assistant = max((i for i, m in enumerate(messages) if m.role == ASSISTANT), default=0)
    current = min(current, last_assistant)
    removed = 0
    for index, message in enumerate(messages[:current]):
        if message.role != ASSISTANT:
            continue
        kept = tuple(b for b in message.blocks if not isinstance(b, (Thinking, RedactedThinking)))
        if kept and len(kept) < len(message.blocks):
            removed += len(message.blocks) - len(kept)
            messages[index] = message.with_blocks(kept)
    return removed
