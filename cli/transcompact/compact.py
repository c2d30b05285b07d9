"""The whole pipeline: estimate, prune, cut, summarize, rebuild; with a fallback that needs no model.

The rebuilt transcript is: what the format keeps first (system, tools, leading OpenAI system and
developer messages), the summary pair of design.md §3, then the recent window, verbatim (but
for thinking, removed by default). When the cut split a turn, the summary message also carries,
verbatim, the request that opened the turn, and the window follows it directly.

The emergency mode drops the old part and puts, in the summary slot, a checkpoint built without a
model from what the old part holds. It always fits: a window that is still too big is pruned
harder, then shrunk.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable, Sequence

from .check import added_errors
from .cut import Cut, find_cut_point, starts_turn
from .errors import PostConditionError, ProviderError
from .formats import claude_code
from .estimate import EMERGENCY_FRACTION, Options as EstimateOptions, transcript_tokens
from .model import ASSISTANT, USER, Message, RedactedThinking, Text, Thinking, ToolCall, ToolResult, Transcript
from .prune import PruneOptions, PruneReport, prune
from .providers import Provider
from .summarize import (
    SUMMARY_ACK,
    SUMMARY_PREFIX,
    SummaryOptions,
    result_errors,
    find_previous_summary,
    summarize,
    text_of,
)

USER_WORDS_HEADING = "## The user's own words (verbatim, most recent first)"
STRATEGIES = ("none", "prune", "summary", "emergency")


@dataclass(frozen=True)
class CompactOptions:
    threshold: float = 100_000  # a value <= 1 is a fraction of the input budget
    force: bool = False
    emergency: bool = False
    fallback: bool = True
    window: int = 200_000
    max_output: int = 16_000
    counting: EstimateOptions = EstimateOptions()
    pruning: PruneOptions = PruneOptions()
    summary: SummaryOptions = SummaryOptions()
    keep_user_tokens: int = 4000
    keep_thinking: bool = False
    drop_history: bool = False  # Claude Code logs: write only the new chain

    @property
    def budget(self) -> int:
        return self.window - self.max_output

    @property
    def threshold_tokens(self) -> int:
        return int(self.threshold * self.budget) if self.threshold <= 1 else int(self.threshold)


@dataclass(frozen=True)
class CompactReport:
    strategy: str
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    cut: int | None = None
    split_turn: bool = False
    pruned: PruneReport | None = None
    summary_chars: int = 0
    fallback_reason: str | None = None
    notes: tuple[str, ...] = field(default=())

    def line(self) -> str:
        if self.strategy == "none":
            why = self.notes[0] if self.notes else "under the threshold; --force compacts anyway"
            return f"not compacted ({self.tokens_before:,} tokens, {self.messages_before} messages): {why}"
        return (f"compacted ({self.strategy}): {self.tokens_before:,} → {self.tokens_after:,} tokens, "
                f"{self.messages_before} → {self.messages_after} messages")

    def as_dict(self) -> dict:
        return {
            "strategy": self.strategy, "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
            "messages_before": self.messages_before, "messages_after": self.messages_after, "cut": self.cut,
            "split_turn": self.split_turn, "pruned": self.pruned.as_dict() if self.pruned else None,
            "summary_chars": self.summary_chars, "fallback_reason": self.fallback_reason, "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Rebuilt:
    """What compact decided, before a format writes it (a Claude Code log is written its own way)."""

    transcript: Transcript  # the rebuilt transcript, in the input's format
    summary: str  # the text of the summary message (summary + user words + opening request when split)
    recent: tuple[Message, ...]  # the recent window as it is kept
    cut: Cut | None


# --- the deterministic checkpoint ----------------------------------------------------------

_PATH_KEYS = ("path", "file_path", "filename", "file", "notebook_path", "target_file")
_COMMAND_KEYS = ("command", "cmd", "script")


def _first_request(messages: Sequence[Message]) -> str | None:
    for message in messages:
        if starts_turn(message) and text_of(message).strip() and not text_of(message).startswith(SUMMARY_PREFIX):
            return text_of(message).strip()
    return None


def user_words(messages: Sequence[Message], budget_tokens: int, ratio: float = 0.25) -> list[str]:
    """The user's own messages, most recent first, as many as fit in `budget_tokens`."""
    kept: list[str] = []
    used = 0
    for message in reversed(messages):
        text = text_of(message).strip()
        if not starts_turn(message) or not text or text.startswith(SUMMARY_PREFIX):
            continue
        if isinstance(message.raw, dict) and (message.raw.get("isCompactSummary") or message.raw.get("isMeta")):
            continue
        cost = int(len(text) * ratio) + 4
        if used + cost > budget_tokens:
            break
        kept.append(text)
        used += cost
    return kept


def _quoted(texts: Sequence[str]) -> str:
    return "\n\n".join("> " + text.replace("\n", "\n> ") for text in texts)


def checkpoint(old: Sequence[Message], first: int, last: int, total: int, keep_user_tokens: int,
               words_from: Sequence[Message] | None = None) -> str:
    """A checkpoint built without a model, in the sections of the LLM checkpoint where it has facts.

    Deterministic: the same old part gives the same bytes.
    """
    files: dict[str, None] = {}
    commands: dict[str, None] = {}
    errors: dict[str, None] = {}
    tools: Counter = Counter()
    for message in old:
        for block in message.blocks:
            if isinstance(block, ToolCall):
                tools[block.name] += 1
                arguments = block.input if isinstance(block.input, dict) else {}
                for key in _PATH_KEYS:
                    if isinstance(arguments.get(key), str) and arguments[key].strip():
                        files.setdefault(arguments[key].strip(), None)
                for key in _COMMAND_KEYS:
                    if isinstance(arguments.get(key), str) and arguments[key].strip():
                        commands.setdefault(arguments[key].strip().splitlines()[0][:200], None)
            elif isinstance(block, ToolResult):
                for line in result_errors(block):
                    errors.setdefault(line[:200], None)
    goal = _first_request(old)
    words = user_words(old if words_from is None else words_from, keep_user_tokens)
    parts = [
        "## Goal",
        (goal[:2000] + (" […]" if len(goal) > 2000 else "")) if goal else "(no user request in the dropped part)",
        "",
        "## Progress",
        "### Done",
        f"- [x] Messages {first}–{last} of {total} were compacted without a model (emergency mode); "
        "this checkpoint lists what they held.",
    ]
    if words:
        parts += ["", USER_WORDS_HEADING, _quoted(words)]
    parts += ["", "## Critical Context"]
    for title, items, limit in (("Files touched", files, 50), ("Commands run", commands, 30), ("Errors seen", errors, 20)):
        if items:
            values = list(items)
            shown = values[-limit:]
            more = f" (the last {limit} of {len(values)})" if len(values) > limit else ""
            parts += [f"### {title}{more}", *(f"- `{v}`" if title != "Errors seen" else f"- {v}" for v in shown)]
    if tools:
        parts += ["### Tools used", *(f"- {name} × {count}" for name, count in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0])))]
    if not (files or commands or errors or tools):
        parts.append("- No tool calls in the dropped part.")
    return "\n".join(parts) + "\n"


# --- the rebuild ---------------------------------------------------------------------------


def _head(messages: Sequence[Message], dialect: str) -> int:
    """How many leading messages the format keeps first (OpenAI system and developer messages)."""
    if dialect != "openai":
        return 0
    count = 0
    while count < len(messages) and messages[count].role in ("system", "developer"):
        count += 1
    return count


def _thinking_enabled(transcript: Transcript) -> bool:
    thinking = transcript.request.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def without_thinking(messages: Sequence[Message], *, keep_current: bool = False) -> tuple[Message, ...]:
    """Thinking removed: the API binds a thinking block to everything before it, and that changed.

    With thinking enabled in the request, the current turn keeps its thinking: its tool loop
    must start with it.
    """
    current = max((i for i, m in enumerate(messages) if starts_turn(m)), default=0) if keep_current else len(messages)
    out = []
    for index, message in enumerate(messages):
        if index >= current:
            out.append(message)
            continue
        kept = tuple(b for b in message.blocks if not isinstance(b, (Thinking, RedactedThinking)))
        out.append(message if len(kept) == len(message.blocks) or not kept else message.with_blocks(kept))
    return tuple(out)


def summary_message_text(summary: str, words: Sequence[str], opening: str | None) -> str:
    text = SUMMARY_PREFIX + summary.strip()
    if words and USER_WORDS_HEADING not in summary:
        text += "\n\n" + USER_WORDS_HEADING + "\n\n" + _quoted(words)
    if opening is not None:
        text += "\n\n## The request this turn began with (verbatim)\n\n" + opening
    return text


def rebuild(transcript: Transcript, cut: Cut, summary: str, options: CompactOptions) -> Rebuilt:
    messages = transcript.messages
    head = _head(messages, transcript.dialect)
    old = [m for m in messages[head: cut.index]]
    _, synthetic = find_previous_summary(old)
    old_real = [m for i, m in enumerate(old) if i not in synthetic]
    if cut.split_turn:  # the request that opened the turn goes in verbatim anyway
        old_real = [m for m in old_real if m is not messages[cut.turn_start]]
    words = user_words(old_real, options.keep_user_tokens, options.counting.ratio) if options.keep_user_tokens else []
    recent = messages[cut.index:]
    if not options.keep_thinking:
        recent = without_thinking(recent, keep_current=_thinking_enabled(transcript))
    opening = text_of(messages[cut.turn_start]).strip() if cut.split_turn else None
    text = summary_message_text(summary, words, opening)
    pair = [Message(USER, (Text(text),))]
    if not cut.split_turn:
        pair.append(Message(ASSISTANT, (Text(SUMMARY_ACK),)))
    rebuilt = transcript.with_messages([*messages[:head], *pair, *recent])
    return Rebuilt(rebuilt, text, tuple(recent), cut)


# --- the pipeline --------------------------------------------------------------------------


def compact(transcript: Transcript, options: CompactOptions = CompactOptions(),
            provider: Callable[[], Provider] | None = None,
            progress: Callable[[int, int], None] | None = None) -> tuple[Rebuilt | None, CompactReport]:
    """Compact a transcript; (None, report) when it is under the threshold and not forced.

    `provider` makes the summarizer (called only when a summary is needed). Without one, or when
    the summary fails, the emergency mode is used (unless `options.fallback` is off).
    """
    before = transcript_tokens(transcript, options.counting)
    count = len(transcript.messages)
    near_the_window = before >= EMERGENCY_FRACTION * options.budget
    if before <= options.threshold_tokens and not (options.force or options.emergency or near_the_window):
        return None, CompactReport("none", before, before, count, count)

    pruned, prune_report = prune(transcript, options.pruning)
    emergency_reason = None
    if options.emergency:
        emergency_reason = "--emergency"
    elif near_the_window:
        emergency_reason = f"the estimate is at least {EMERGENCY_FRACTION:.0%} of the input budget"
    cut = find_cut_point(pruned, options.summary.keep_recent_tokens, options.counting)
    if cut.index <= _head(pruned.messages, pruned.dialect) and emergency_reason is None:
        if prune_report.tokens_after < prune_report.tokens_before:
            return _finish(transcript, Rebuilt(pruned, "", pruned.messages, None), "prune", before, prune_report, None, options)
        return None, CompactReport("none", before, before, count, count,
                                   notes=("nothing to compact: everything fits in the recent window",))


    fallback_reason = None
    if emergency_reason is None:
        try:
            if provider is None:
                raise ProviderError("no summarizer was given")
            summarizer = provider()
            try:
                # The summarizer reads the old part as it was, not as pruning left it (indices are the same).
                result = summarize(transcript, summarizer, options.summary, progress, cut=cut)
            finally:
                summarizer.close()
            if result is not None:
                rebuilt = rebuild(pruned, cut, result.text, options)
                return _finish(transcript, rebuilt, "summary", before, prune_report, None, options)
            fallback_reason = "nothing to summarize"
        except ProviderError as error:
            if not options.fallback:
                raise
            fallback_reason = str(error)
    return _emergency(transcript, pruned, cut, before, prune_report, fallback_reason or emergency_reason, options)


def _emergency(original: Transcript, pruned: Transcript, cut: Cut, before: int, prune_report: PruneReport,
               reason: str, options: CompactOptions) -> tuple[Rebuilt | None, CompactReport]:
    """Drop the old part behind a checkpoint built without a model; prune harder and shrink until it fits."""
    target = min(options.threshold_tokens, int(EMERGENCY_FRACTION * options.budget) - 1)
    keep = options.summary.keep_recent_tokens
    stricter = (  # every unprotected result cleared; then the protected ones trimmed too
        replace(options.pruning, hard_clear_after=options.pruning.keep_last),
        replace(options.pruning, hard_clear_after=options.pruning.keep_last, keep_last=0,
                soft_trim_chars=min(options.pruning.soft_trim_chars, 2000), head=500, tail=500),
    )

    @lru_cache(maxsize=None)
    def harder(level: int) -> Transcript:
        return pruned if level == 0 else prune(pruned, stricter[level - 1])[0]

    head = _head(pruned.messages, pruned.dialect)

    def attempt_at(candidate: Transcript, keep_now: int) -> Rebuilt:
        same = candidate is pruned and keep_now == keep
        cut_now = cut if same else find_cut_point(candidate, keep_now, options.counting)
        if cut_now.index <= head:  # nothing old: pruning alone is what is left to do
            return Rebuilt(candidate, "", candidate.messages, None)
        return _emergency_rebuild(candidate, cut_now, options, original)

    # The window as asked with harder and harder pruning, then a smaller and smaller window.
    attempts = [(level, keep) for level in range(3)]
    attempts += [(2, keep >> halvings) for halvings in range(1, 16) if keep >> halvings >= 100]
    for level, keep_now in attempts:
        attempt = attempt_at(harder(level), keep_now)
        if attempt.cut is None and attempt.transcript == original:
            count = len(original.messages)
            return None, CompactReport("none", before, before, count, count,
                                       notes=("nothing to compact: nothing to prune, and everything fits in the recent window",))
        if transcript_tokens(attempt.transcript, options.counting) <= target:
            return _finish(original, attempt, "emergency" if attempt.cut is not None else "prune", before,
                           prune_report, reason, options)
    if transcript_tokens(attempt.transcript, options.counting) < before:
        return _finish(original, attempt, "emergency" if attempt.cut is not None else "prune", before, prune_report,
                       reason, options,
                       notes=(f"over the target of {target:,} tokens: the user's text in the recent window does not fit",))
    raise PostConditionError(
        f"cannot compact below {before:,} tokens: what is left is the user's own text, which is never dropped",
        hint="raise --window, or lower --keep-recent-tokens / --keep-user-tokens")


def _emergency_rebuild(transcript: Transcript, cut: Cut, options: CompactOptions, original: Transcript) -> Rebuilt:
    """The rebuild with a checkpoint of the old part as it was before pruning (prune keeps indices)."""
    head = _head(transcript.messages, transcript.dialect)
    old = original.messages[head: cut.index]
    previous, synthetic = find_previous_summary(old)
    real = [m for i, m in enumerate(old) if i not in synthetic]
    words_from = [m for m in real if not (cut.split_turn and m is original.messages[cut.turn_start])]
    text = checkpoint(real, head, cut.index - 1, len(transcript.messages), options.keep_user_tokens, words_from)
    if previous:  # an earlier summary stays: the checkpoint adds what came after it
        text = previous.strip() + "\n\n" + text
    return rebuild(transcript, cut, text, replace(options, keep_user_tokens=0))


def _finish(original: Transcript, rebuilt: Rebuilt, strategy: str, before: int, prune_report: PruneReport,
            reason: str | None, options: CompactOptions, notes: tuple[str, ...] = ()) -> tuple[Rebuilt, CompactReport]:
    if original.format == claude_code.NAME and rebuilt.cut is not None:
        body = rebuilt.summary[len(SUMMARY_PREFIX):] if rebuilt.summary.startswith(SUMMARY_PREFIX) else rebuilt.summary
        rebuilt = replace(rebuilt, transcript=claude_code.append_compaction(
            original, body, rebuilt.recent, before, drop_history=options.drop_history))
    after = transcript_tokens(rebuilt.transcript, options.counting)
    new = added_errors(original, rebuilt.transcript, same_messages=False)
    if new:
        v = new[0]
        raise PostConditionError(f"the compacted transcript would add {v.rule} at message {v.index}: {v.text}; nothing written",
                                 hint="this is a bug in transcompact: run again with --traceback and report it")
    if after >= before:
        raise PostConditionError(f"compacting would not make the transcript smaller ({before:,} → {after:,} tokens); "
                                 "nothing written", hint="lower --keep-recent-tokens, or it is small enough as it is")
    cut = rebuilt.cut
    return rebuilt, CompactReport(
        strategy, before, after, len(original.messages), len(rebuilt.transcript.messages),
        cut.index if cut else None, bool(cut and cut.split_turn), prune_report,
        len(rebuilt.summary), reason, notes)

