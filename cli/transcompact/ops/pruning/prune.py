"""Layer 1 of the spec (docs/design.md §7): trim and clear old tool results, without a model.

Tool-result messages are counted from the end. The last `keep_last` are protected. Those older
than the last `hard_clear_after` become the placeholder. Any other result longer than
`soft_trim_chars` keeps its `head` and `tail` around a marker that states what was kept. What
either leaves out keeps its key lines (key_lines.py: an error message, a commit, a test summary,
the words of a user who rejected the call), one a line under the placeholder's line, or under
the marker and before a blank line and the tail. User text and assistant blocks are never
changed (unless `clear_tool_inputs` / `clear_thinking` are asked for), results that hold an
image or anything but text are left alone, and a result that was pruned already is not pruned
again, so pruning twice is pruning once.

With `by_kind`, the soft trim is a cut by the kind of output the result holds, to
`result_token_cap` (truncate.py). The names of Anthropic's context editing are options too
(context_editing.py): `keep_tool_uses` counts in tool uses instead of tool-result messages and
clears every older result, `clear_at_least` holds back an edit of the results that saves less,
`clear_tool_inputs` may name the tools, and `keep_thinking_turns` widens `clear_thinking`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...core import settings
from ...core.errors import refuse_negative
from ...core.model import (
    ASSISTANT,
    LISTED,
    USER,
    Message,
    MessageView,
    RedactedThinking,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
    tool_names,
)
from ...counting.counter import TokenCounter
from .key_lines import key_lines, not_shown, within_budget
from .truncate import is_truncated, kind_of, truncate

PLACEHOLDER = "[Tool output cleared — content was processed in earlier turns]"
_ARCHIVED_PLACEHOLDER = "[Tool output cleared — content was processed in earlier turns; archived as {id}]"
_MARKER = "\n\n--- trimmed (kept {head} head + {tail} tail of {total} chars) ---\n"
_ARCHIVED_MARKER = "\n\n--- trimmed (kept {head} head + {tail} tail of {total} chars; archived as {id}) ---\n"
_CLEARED = re.compile(r"\[Tool output cleared — content was processed in earlier turns(; archived as [^\]\n]*)?\](?:\n|\Z)")
_TRIMMED = re.compile(r"\n\n--- trimmed \(kept \d+ head \+ \d+ tail of \d+ chars(; archived as [^)]*)?\) ---\n")


@dataclass(frozen=True)
class PruneOptions:
    soft_trim_chars: int = settings.SOFT_TRIM_CHARS
    head: int = settings.HEAD
    tail: int = settings.TAIL
    hard_clear_after: int = settings.HARD_CLEAR_AFTER
    keep_last: int = settings.KEEP_LAST
    exclude_tools: frozenset[str] = frozenset()
    clear_tool_inputs: bool | frozenset[str] = False  # True: of every cleared call; a set: of the calls of these tools
    clear_thinking: bool = False
    keep_thinking_turns: int = settings.KEEP_THINKING_TURNS  # with clear_thinking: the last turns that keep their thinking
    archive: bool = False  # name the tool call id in each marker (the originals go to an archive: archive.py)
    by_kind: bool = False  # the soft trim cuts a result over result_token_cap by its kind instead
    result_token_cap: int = settings.RESULT_TOKEN_CAP
    kinds: tuple[tuple[str, str], ...] = ()  # (tool, kind) entries over the default map (settings.TOOL_KINDS)
    keep_tool_uses: int | None = None  # the results of the last N tool uses stay, every older one is cleared
    clear_at_least: int = settings.CLEAR_AT_LEAST  # tokens: an edit of the results that saves fewer is not made

    def __post_init__(self) -> None:
        refuse_negative(soft_trim_chars=self.soft_trim_chars, head=self.head, tail=self.tail, hard_clear_after=self.hard_clear_after,
                        keep_last=self.keep_last, keep_thinking_turns=self.keep_thinking_turns,
                        result_token_cap=self.result_token_cap, keep_tool_uses=self.keep_tool_uses, clear_at_least=self.clear_at_least)


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
        return "\n".join(b.text for b in result.content if isinstance(b, Text))
    return None


def _with_text(result: ToolResult, text: str) -> ToolResult:
    """The result with new text, in the shape it had (a string, or a list of one text block)."""
    content = text if isinstance(result.content, str) else (Text(text),)
    raw = result.raw
    if isinstance(raw, dict) and "content" in raw:
        raw = {**raw, "content": ""}  # the old text is written over (`write_block`): not held for it
    return ToolResult(result.tool_call_id, content, result.is_error, raw=raw, line=result.line)


def prune(transcript: Transcript, options: PruneOptions = PruneOptions(),
          counter: TokenCounter | None = None) -> tuple[Transcript, PruneReport]:
    """The transcript with old tool results trimmed and cleared (`transcript` itself when nothing
    is), and what was done; the report's counts by `counter` (a run's, made on its input), else by
    the default count of `transcript`."""
    groups = tool_result_groups(transcript)
    names = tool_names(transcript.messages)
    arguments = _call_inputs(transcript.messages)
    messages = list(transcript.messages)
    counts = dict(soft_trimmed=0, cleared=0, protected=0, excluded=0, untouched_media=0)
    later_uses = sum(transcript.messages[i].result_count for indices in groups for i in indices)

    for position, indices in enumerate(groups):
        age = len(groups) - 1 - position  # how many tool-result messages came after this one
        for index in indices:
            view = messages[index].view
            if view is not None and _stays(view, age, later_uses, options, names, counts):
                later_uses -= messages[index].result_count  # left unread: its view says pruning keeps it
                continue
            message = messages[index].read_apart()  # an unread one stays unread: the input is not held read
            blocks = list(message.blocks)
            for b, block in enumerate(blocks):
                if not isinstance(block, ToolResult):
                    continue
                later_uses -= 1  # now: how many tool results come after this one
                new = _pruned_result(block, age, later_uses, options, names, arguments, counts)
                if new is None:
                    continue
                blocks[b] = new
            if blocks != list(message.blocks):
                messages[index] = message.with_blocks(tuple(blocks))

    inputs_cleared = 0
    if options.clear_tool_inputs:
        cleared = {r.tool_call_id for m in messages for r in m.tool_results if _CLEARED.match(_text(r) or "")}
        inputs_cleared = _clear_inputs(messages, cleared, options.clear_tool_inputs)
    counter = counter or TokenCounter(transcript)
    if options.clear_at_least and counter.tokens(transcript) - counter.tokens(transcript.with_messages(messages)) < options.clear_at_least:
        messages = list(transcript.messages)  # too little to gain: the results stay as they were
        counts.update(soft_trimmed=0, cleared=0)
        inputs_cleared = 0
    thinking_removed = _clear_thinking(messages, options.keep_thinking_turns) if options.clear_thinking else 0
    unchanged = all(new is old for new, old in zip(messages, transcript.messages))
    # The same one when unchanged: counted once. A changed one says what a character of it costs by
    # the model it is counted with: its writer restates the usage its responses recorded by it
    # (none where that count rests on usage that counted less than the log held).
    pruned = transcript if unchanged else replace(transcript.with_messages(messages), tokens_per_char=counter.restating_ratio,
                                                   tokens_per_block=counter.restating_frame)
    before, after = counter.tokens(transcript), counter.tokens(pruned)
    report = PruneReport(**counts, inputs_cleared=inputs_cleared, thinking_removed=thinking_removed,
                         tokens_before=before, tokens_after=after)
    return pruned, report


def _call_inputs(messages: tuple[Message, ...]) -> Callable[[str], Any]:
    """The input of a call by its id, read (apart) from its message only when asked: for the key
    lines of a result that is pruned, so that the calls of the results that stay are not read."""
    where = {call_id: index for index, message in enumerate(messages) for call_id in message.call_ids}

    def arguments(call_id: str) -> Any:
        index = where.get(call_id)
        calls = messages[index].read_apart().tool_calls if index is not None else ()
        return next((call.input for call in calls if call.id == call_id), None)

    return arguments


def _stays(view: MessageView, age: int, later_uses: int, options: PruneOptions, names: dict, counts: dict) -> bool:
    """Whether every result of an unread message stays as it is, told from its view alone (then
    counted as `_pruned_result` counts them); False when one may change, and its text decides."""
    verdicts = []
    for size in view.blocks:
        if size.type is not ToolResult:
            continue
        later_uses -= 1
        verdict = _protection(size.call_id, age, later_uses, options, names)
        if verdict is None:
            if options.by_kind or size.flags & LISTED:
                return False  # the cut depends on the text; a list's text is longer than its blocks'
            hard = options.keep_tool_uses is not None or age >= options.hard_clear_after
            limit = len(_ARCHIVED_PLACEHOLDER.format(id=size.call_id) if options.archive else PLACEHOLDER) if hard \
                else options.soft_trim_chars
            if size.chars > limit:
                return False
        verdicts.append(verdict)
    for verdict in verdicts:
        if verdict is not None:
            counts[verdict] += 1
    return True


def _protection(call_id: str | None, age: int, later_uses: int, options: PruneOptions, names: dict) -> str | None:
    """"protected" or "excluded" when the result of `call_id` is kept whatever it holds, else None."""
    keep_uses = options.keep_tool_uses
    if (later_uses < keep_uses) if keep_uses is not None else (age < options.keep_last):
        return "protected"
    if names.get(call_id) in options.exclude_tools:
        return "excluded"
    return None


def _pruned_result(block: ToolResult, age: int, later_uses: int, options: PruneOptions, names: dict,
                   arguments: Callable[[str], Any], counts: dict) -> ToolResult | None:
    """The new result, or None when this one stays as it is. `age` counts the tool-result messages
    after it, `later_uses` the tool results after it (what `keep_tool_uses` counts)."""
    by_uses = options.keep_tool_uses is not None
    if (kept := _protection(block.tool_call_id, age, later_uses, options, names)) is not None:
        counts[kept] += 1
        return None
    text = _text(block)
    if text is None:
        counts["untouched_media"] += 1
        return None
    if _CLEARED.match(text):
        return None
    if by_uses or age >= options.hard_clear_after:
        placeholder = _ARCHIVED_PLACEHOLDER.format(id=block.tool_call_id) if options.archive else PLACEHOLDER
        if len(text) <= len(placeholder):
            return None  # clearing would make it longer
        notice = "\n".join([placeholder, *within_budget(_key_lines(block, names, arguments))])
        if len(text) <= len(notice):
            return None  # it says little more than its key lines do
        counts["cleared"] += 1
        return _with_text(block, notice)
    if options.by_kind:
        return _cut_by_kind(block, text, options, names, arguments, counts)
    if len(text) <= options.soft_trim_chars or _TRIMMED.search(text):
        return None
    marker = (_ARCHIVED_MARKER if options.archive else _MARKER).format(
        head=options.head, tail=options.tail, total=len(text), id=block.tool_call_id)
    head, tail = text[: options.head], text[-options.tail :] if options.tail else ""
    middle = within_budget(not_shown(_key_lines(block, names, arguments), head, tail))
    trimmed = head + marker + "".join(line + "\n" for line in middle) + "\n" + tail
    if len(trimmed) >= len(text):
        return None  # the marker would add more than the trim takes away
    counts["soft_trimmed"] += 1
    return _with_text(block, trimmed)


def _cut_by_kind(block: ToolResult, text: str, options: PruneOptions, names: dict, arguments: Callable[[str], Any],
                 counts: dict) -> ToolResult | None:
    """The result cut by the kind of output its tool gives, when it is over the cap (truncate.py),
    and the key lines of what the cut left out after its notice (over the cap)."""
    if _TRIMMED.search(text) or is_truncated(text):
        return None  # trimmed already, by either way
    kind = kind_of(names.get(block.tool_call_id), options.kinds)
    cut = truncate(text, kind, options.result_token_cap, archived_as=block.tool_call_id if options.archive else None)
    if cut == text:
        return None
    cut += "".join("\n" + line for line in within_budget(not_shown(_key_lines(block, names, arguments), cut)))
    if len(cut) >= len(text):
        return None  # the key lines would add more than the cut takes away
    counts["soft_trimmed"] += 1
    return _with_text(block, cut)


def _key_lines(block: ToolResult, names: dict, arguments: Callable[[str], Any]) -> list[str]:
    return key_lines(block, names.get(block.tool_call_id), arguments(block.tool_call_id))


def _clear_inputs(messages: list[Message], cleared: set[str], of_tools: bool | frozenset[str]) -> int:
    """The input of each call whose result is cleared becomes {} (its name and id stay), "" where
    it is text (Codex's custom tools take their input so); only the calls of `of_tools` when it names tools."""
    count = 0
    for index, message in enumerate(messages):
        if message.role != ASSISTANT:
            continue
        blocks = list(message.blocks)
        for b, block in enumerate(blocks):
            if not isinstance(block, ToolCall):
                continue
            empty: str | dict = "" if isinstance(block.input, str) else {}
            if block.id in cleared and block.input != empty and (
                    of_tools is True or (isinstance(of_tools, frozenset) and block.name in of_tools)):
                blocks[b] = replace(block, input=empty)
                count += 1
        if blocks != list(message.blocks):
            messages[index] = message.with_blocks(tuple(blocks))
    return count


def _clear_thinking(messages: list[Message], keep_turns: int) -> int:
    """Remove thinking from every assistant message but the last, which the API allows, and
    those of the last `keep_turns` turns.

    The current turn (from the last user message that is not a tool result) keeps its thinking
    too: with thinking enabled, its tool loop must start with it. Each turn before it starts at a
    user message that is not a tool result. A message that holds nothing but thinking keeps it,
    since an empty message is not allowed.
    """
    turn_starts = [i for i, m in enumerate(messages) if m.role == USER and not m.is_tool_result_message]
    last_assistant = max((i for i, m in enumerate(messages) if m.role == ASSISTANT), default=0)
    current = min(max(turn_starts, default=0), last_assistant)
    earlier = [i for i in turn_starts if i < current]
    kept_from = current if keep_turns <= 1 else (earlier[-(keep_turns - 1)] if len(earlier) >= keep_turns - 1 else 0)
    removed = 0
    for index, message in enumerate(messages[:kept_from]):
        if message.role != ASSISTANT:
            continue
        kept = tuple(b for b in message.blocks if not isinstance(b, (Thinking, RedactedThinking)))
        if kept and len(kept) < len(message.blocks):
            removed += len(message.blocks) - len(kept)
            messages[index] = message.with_blocks(kept)
    return removed
