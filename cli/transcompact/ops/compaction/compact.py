"""The whole pipeline: estimate, prune, cut, summarize, rebuild; with a fallback that needs no model.

The rebuilt transcript is: what the format keeps first (system, tools, leading OpenAI system and
developer messages), the summary pair of docs/design.md §3, then the recent window, verbatim (but
for thinking, removed by default). When the cut split a turn, the summary message also carries,
verbatim, the request that opened the turn, and the window follows it directly.

The budget is the budget: the window holds at most `--keep-recent-tokens` (its biggest tool
results are trimmed when even the smallest window that can be cut off is bigger), the user's
words at most `--keep-user-tokens`, the checkpoint's facts at most `--checkpoint-tokens`; and
the result is never bigger than pruning alone would leave.

An earlier summary (ours, Claude Code's, an Anthropic compaction block) is merged, never
quoted: the model updates it, the emergency checkpoint takes its facts in, and its quoted user
words join the new ones. Compacting k times leaves one summary.

The emergency mode drops the old part and puts, in the summary slot, a checkpoint built without a
model from what the old part holds. It always fits: a window that is still too big is pruned
harder, then shrunk.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache

from ...core import settings
from ...core.errors import PostConditionError, ProviderError, UsageError, option, refuse_negative
from ...core.jsondata import compact_json
from ...core.model import ASSISTANT, USER, Message, RedactedThinking, Text, Thinking, ToolCall, Transcript, tool_inputs, tool_names
from ...core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX, SummaryText, text_of
from ...core.words import counted
from ...counting.counter import Options as EstimateOptions
from ...counting.counter import TokenCounter
from ...counting.models import threshold_tokens
from ...formats import adapter
from ...providers import Provider
from ..estimate import EMERGENCY_FRACTION
from ..pruning.prune import PruneOptions, PruneReport, prune
from ..validity.check import added_errors
from .checkpoint import COUNTED, INTERRUPTED, OPENING_IS_GOAL, artifact_trail, checkpoint, find_facts, goal_of, head_and_tail, user_text
from .cut import Cut, starts_turn, window_cut
from .output_errors import remembered
from .summarize import SummaryOptions, summarize
from .summary_message import Previous, find_previous, is_summary_message

STRATEGIES = ("none", "prune", "summary", "emergency")
NEAR_THE_WINDOW = f"the estimate is at least {EMERGENCY_FRACTION:.0%} of the input budget"


@dataclass(frozen=True)
class CompactOptions:
    threshold: float | None = None  # None: the default, scaled to the budget (estimate.threshold_tokens); <= 1: a fraction of it
    force: bool = False
    emergency: bool = False
    fallback: bool = True
    window: int = settings.WINDOW
    max_output: int = settings.MAX_OUTPUT
    counting: EstimateOptions = EstimateOptions()
    pruning: PruneOptions = PruneOptions()
    summary: SummaryOptions = SummaryOptions()
    keep_user_tokens: int = settings.KEEP_USER_TOKENS
    checkpoint_tokens: int = settings.CHECKPOINT_TOKENS
    keep_thinking: bool = False
    slim: bool = False  # an agent's log: write only what the agent reads after the new compaction, slimmed (ops/pruning/slim.py)

    def __post_init__(self) -> None:
        # What the command line's flags refuse, refused to a library caller too.
        refuse_negative(window=self.window, max_output=self.max_output, keep_user_tokens=self.keep_user_tokens,
                        checkpoint_tokens=self.checkpoint_tokens)
        if self.threshold is not None and not (self.threshold > 0 and math.isfinite(self.threshold)):
            raise UsageError(f"{option('threshold')} must be a finite number above 0, not {self.threshold}")

    @property
    def budget(self) -> int:
        return self.window - self.max_output

    @property
    def threshold_tokens(self) -> int:
        return threshold_tokens(self.threshold, self.budget)


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
    counted_by: str = ""  # how both counts were made (the input's scale)
    window_messages: int = 0  # the messages kept verbatim at the end of the output
    facts: tuple[tuple[str, int, int], ...] = ()  # (kind, how many the old part held, how many the summary keeps)

    def facts_line(self) -> str:
        """What the summary kept of the old part's facts: `commands 33 of 40, errors 5 of 5, …`."""
        return ", ".join(f"{kind} {kept} of {held}" for kind, held, kept in self.facts)

    def line(self) -> str:
        if self.strategy == "none":
            why = self.notes[0] if self.notes else "nothing to gain"
            return f"not compacted ({self.tokens_before:,} tokens, {counted(self.messages_before, 'message')}): {why}"
        return (f"compacted ({self.strategy}): {self.tokens_before:,} → {self.tokens_after:,} tokens, "
                f"{self.messages_before:,} → {counted(self.messages_after, 'message')}")

    def ci_line(self) -> str:
        """The line in the CI form an earlier design gave (docs/design.md §7): `[transcompact:compacted:summary] 60674 → 7144 tokens`."""
        if self.strategy == "none":
            return f"[transcompact:unchanged:none] {self.tokens_before} tokens"
        return f"[transcompact:compacted:{self.strategy}] {self.tokens_before} → {self.tokens_after} tokens"

    def as_dict(self) -> dict:
        return {
            "strategy": self.strategy, "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
            "messages_before": self.messages_before, "messages_after": self.messages_after, "cut": self.cut,
            "split_turn": self.split_turn, "pruned": self.pruned.as_dict() if self.pruned else None,
            "summary_chars": self.summary_chars, "fallback_reason": self.fallback_reason, "notes": list(self.notes),
            "counted_by": self.counted_by, "window_messages": self.window_messages,
            "facts": {kind: {"held": held, "kept": kept} for kind, held, kept in self.facts},
        }


@dataclass(frozen=True)
class Rebuilt:
    """What compact decided, before a format writes it (a Claude Code log is written its own way)."""

    transcript: Transcript  # the rebuilt transcript, in the input's format
    summary: str  # the summary message's text (summary, user words, a split turn's opening), as the format words it
    recent: tuple[Message, ...]  # the recent window as it is kept
    cut: Cut | None
    facts: Counter = field(default_factory=Counter)  # per kind: `held …` in the old part, `kept …` in the summary


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


def user_words(texts: Sequence[tuple[int, str]], previous: Previous | None, exclude: Sequence[str],
               budget_chars: int) -> tuple[str, ...]:
    """The user's own messages of the old part (`texts`, as `user_texts` finds them), most recent
    first, then the earlier summary's, as many as fit in `budget_chars`; the last that does not fit
    whole is cut to its start and end."""
    candidates = [text for _, text in reversed(texts)]
    if previous is not None:
        candidates += ([previous.summary.opening] if previous.summary.opening else []) + list(previous.summary.words)
    kept: list[str] = []
    seen = {text.strip() for text in exclude if text}
    for text in candidates:
        if text.strip() in seen:
            continue
        seen.add(text.strip())
        cost = len(text) + 4
        if cost <= budget_chars:
            kept.append(text)
            budget_chars -= cost
        else:
            if budget_chars >= 400:
                kept.append(head_and_tail(text, budget_chars - 4))
            break
    return tuple(kept)


def _interrupting_request(turn: Sequence[Message], injected: Callable[[Message], str] | None) -> str | None:
    """The words of the last request the user typed within a turn, beside the results of the calls
    they interrupted (after Claude Code's `[Request interrupted by user]`): what the work is now
    for, where the turn's opening message was what it began for. None when they typed none (words
    beside results the user did not interrupt, notes, leave the turn's request as it was).
    Only a message that holds text beside its results is read for it (a long turn's results are many)."""
    for message in reversed(turn):
        if message.role == USER and message.is_tool_result_message and message.holds_text:
            read = message.read_apart()
            if INTERRUPTED in text_of(read) and (said := user_text(read, injected)):
                return said
    return None


def _old_part(transcript: Transcript, cut: Cut) -> tuple[list[Message], Previous | None]:
    """The old messages that are the conversation's own (an earlier summary's left out), and that summary."""
    head = _head(transcript.messages, transcript.dialect)
    old = transcript.messages[head: cut.index]
    previous = find_previous(old)
    covered = previous.covered if previous else frozenset()
    return [m for i, m in enumerate(old) if i not in covered], previous


def _without_injected_context(transcript: Transcript,
                              messages: list[Message]) -> tuple[list[Message], tuple[tuple[str, str], ...]]:
    """The messages but those the agent wrote in the user's place (its environment: not the
    user's goal, nor their words), and what those said, each setting at its newest value."""
    injected_context = adapter(transcript).injected_context
    kept: list[Message] = []
    settings_stated: dict[str, str] = {}
    for message in messages:
        stated = injected_context(message)
        if stated is None:
            kept.append(message)
        else:
            settings_stated.update(stated)
    return kept, tuple(settings_stated.items())


def _without_agent_lines(transcript: Transcript) -> Callable[[Message], str]:
    """A user message's text without what the agent wrote in the user's turn: nothing of a message
    it wrote whole (the format's `written_by_agent`), none of its lines in another (`agent_lines`)."""
    format_ = adapter(transcript)
    lines = format_.agent_lines(transcript)

    def words(message: Message) -> str:
        if format_.written_by_agent(message):
            return ""
        if not lines:
            return text_of(message)
        return "\n".join(b.text for b in message.blocks if isinstance(b, Text) and b.line not in lines)

    return words


def summary_text(transcript: Transcript, cut: Cut, body: str | None, options: CompactOptions,
                 counts: Counter | None = None) -> SummaryText:
    """The summary message's parts: the body, the user's words, and the opening request of a split turn.

    `counts` gets, per kind of fact, how many the old part held and how many the summary keeps.

    `body` is a model's summary, or None for the emergency checkpoint, built here from the old
    part as it was before pruning (prune keeps indices), so that what the user's words leave of
    `--keep-user-tokens` goes to its facts: the message stays within the two budgets together.
    """
    real, previous = _old_part(transcript, cut)
    real, environment = _without_injected_context(transcript, real)
    injected = _without_agent_lines(transcript)
    ratio = options.counting.ratio
    budget = int(options.keep_user_tokens / ratio)
    opening = None
    if cut.split_turn:
        interrupted = _interrupting_request(transcript.messages[cut.turn_start + 1:cut.index], injected)
        opening_message = transcript.messages[cut.turn_start]
        read = opening_message.read_apart()
        if interrupted is not None:  # (its message answers calls too: it stays among the old part's)
            opening = head_and_tail(interrupted, max(400, budget))
        elif is_summary_message(read):  # the turn began before the last compaction, which kept its opening
            real = [m for m in real if m is not opening_message]
            opening = previous.summary.opening if previous else None
        elif user_text(read, injected):
            real = [m for m in real if m is not opening_message]
            opening = head_and_tail(text_of(read).strip(), max(400, budget))
        # (else the agent's harness began it, not the user: nothing of it is quoted as their request)
        budget -= len(opening or "")
    goal_chars = max(400, int(options.keep_user_tokens / ratio) // 2)
    among = {id(m) for m in real}  # the calls of the old part give their inputs as find_facts reads them
    elsewhere = tool_inputs(m for m in transcript.messages if id(m) not in among)
    facts = replace(find_facts(real, tool_names(transcript.messages), elsewhere, injected),
                    environment=environment)
    if body is None:
        if facts.goal is None and opening and previous is None:
            # No word of the user's before it (an agent's own context aside): its opening request is the goal.
            facts = replace(facts, goal=OPENING_IS_GOAL)
        earlier = previous.summary.body if previous else None
        goal = (goal_of(earlier) if earlier else facts.goal) or ""  # as `checkpoint` chooses it
    else:  # a model's summary, and after it the facts it does not hold (the artifact trail)
        goal = goal_of(body) or ""
        trail = artifact_trail(facts, options.checkpoint_tokens, ratio, body, counts, previous.summary.body if previous else None)
        body = body.rstrip() + "\n\n" + trail if trail else body
    goal = head_and_tail(goal, goal_chars) if goal else ""
    words = user_words(facts.user_texts, previous, (goal, opening or ""), budget - len(goal)) if budget > 0 else ()
    if body is None:
        left = max(0, budget - len(goal) - sum(len(w) + 4 for w in words))
        room = options.checkpoint_tokens + int(left * ratio)
        # The quotes' marks and the headings (as the agent words them) are not in either budget:
        # what they take comes off the checkpoint's, again while a line that counts what did not
        # fit grows as the room shrinks.
        worded = adapter(transcript).summary_wording
        limit = int((options.checkpoint_tokens + options.keep_user_tokens) / ratio)
        while True:
            kept: Counter[str] = Counter()
            body = checkpoint(facts, room, ratio, earlier, goal_chars=goal_chars, counts=kept)
            over = len(worded(SummaryText(body, words, opening))) - limit
            if over <= 0 or room == 0:
                break
            room = max(0, room - int(over * ratio) - 1)
        if counts is not None:
            counts.update(kept)
    return SummaryText(body, words, opening)


def rebuild(transcript: Transcript, cut: Cut, summary: SummaryText, options: CompactOptions) -> Rebuilt:
    messages = transcript.messages
    head = _head(messages, transcript.dialect)
    recent = messages[cut.index:]
    if not options.keep_thinking:
        recent = without_thinking(recent, keep_current=_thinking_enabled(transcript))
    text = adapter(transcript).summary_wording(summary)  # an agent's log: as the agent words its own
    pair = [Message(USER, (Text(text),))]
    if not cut.split_turn:
        pair.append(Message(ASSISTANT, (Text(SUMMARY_ACK),)))
    rebuilt = transcript.with_messages([*messages[:head], *pair, *recent])
    return Rebuilt(rebuilt, text, tuple(recent), cut)


# --- the window ------------------------------------------------------------------------------


WINDOW_TRIMMED = ("the recent window is not verbatim: the smallest that can be cut off is over the recent tokens asked for "
                  "({keep:,}), so its biggest tool results were trimmed")


def fitted_window(transcript: Transcript, cut: Cut, keep: int, options: CompactOptions, counter: TokenCounter) -> Transcript:
    """The transcript with the window's tool results trimmed, biggest first, until the window fits
    in `keep` tokens (its results soft-trimmed, then cleared); unchanged when it fits already."""
    tokens = counter.per_message(transcript)
    if sum(tokens[cut.index:]) <= keep:
        return transcript
    window = transcript.with_messages(transcript.messages[cut.index:])
    forced = replace(options.pruning, keep_tool_uses=None, clear_at_least=0)  # the budget wins over the API's keep
    for level in (replace(forced, keep_last=0, hard_clear_after=1 << 30, soft_trim_chars=1000, head=400, tail=400,
                          result_token_cap=min(forced.result_token_cap, 250)),
                  replace(forced, keep_last=0, hard_clear_after=0)):
        window = prune(window, level, counter)[0]
        if sum(counter.per_message(window)) <= keep:
            break
    return transcript.with_messages([*transcript.messages[:cut.index], *window.messages])


# --- the pipeline --------------------------------------------------------------------------


def target(options: CompactOptions) -> int:
    """What a compacted transcript must fit in: the threshold, and below the emergency line."""
    return min(options.threshold_tokens, int(EMERGENCY_FRACTION * options.budget) - 1)


def compact(transcript: Transcript, options: CompactOptions = CompactOptions(),
            provider: Callable[[], Provider] | None = None,
            progress: Callable[[int, int], None] | None = None) -> tuple[Transcript, CompactReport]:
    """The compacted transcript and what was done; `transcript` itself, with strategy `none`,
    when it is left as it is (under the threshold and not forced, or nothing to gain).

    `provider` makes the summarizer (called only when a summary is needed). Without one, or when
    the summary fails, the emergency mode is used (unless `options.fallback` is off).
    """
    with remembered():
        rebuilt, report = _compact(transcript, options, provider, progress)
    return (transcript if rebuilt is None else rebuilt.transcript), report


def _compact(transcript: Transcript, options: CompactOptions, provider: Callable[[], Provider] | None,
             progress: Callable[[int, int], None] | None) -> tuple[Rebuilt | None, CompactReport]:
    counter = TokenCounter(transcript, options.counting)  # fitted once: every count below is on the input's scale
    before = counter.reported(transcript)
    count = len(transcript.messages)
    near_the_window = before >= EMERGENCY_FRACTION * options.budget
    if before <= options.threshold_tokens and not (options.force or near_the_window):
        return None, CompactReport("none", before, before, count, count, counted_by=counter.method,
                                   notes=(f"under the threshold of {options.threshold_tokens:,} tokens; --force compacts anyway",))

    pruned, prune_report = prune(transcript, options.pruning, counter)
    pruned_tokens = counter.tokens(pruned) if pruned is not transcript else before  # (prune gives back the same one)
    prune_only = (Rebuilt(pruned, "", pruned.messages, None), pruned_tokens)
    if pruned_tokens <= target(options) and not options.force:
        return _finish(transcript, prune_only[0], "prune", before, prune_report, None, options, prune_only, counter)
    emergency_reason = None
    if options.emergency:
        emergency_reason = "--emergency"
    elif near_the_window:
        emergency_reason = NEAR_THE_WINDOW
    keep = options.summary.keep_recent_tokens
    # The window is cut from the transcript as it is, and kept so (pruning is for the part dropped).
    head = _head(transcript.messages, transcript.dialect)
    cut = window_cut(transcript, keep, counter.per_message(transcript), head, options.summary.keep_recent_messages)
    if cut.index <= head and emergency_reason is None:
        return _finish(transcript, prune_only[0], "prune", before, prune_report, None, options, prune_only, counter,
                       notes=("nothing to summarize: everything fits in the recent window",))

    fallback_reason = None
    if emergency_reason is None:
        try:
            if provider is None:
                raise ProviderError("no summarizer was given")
            # The summarizer reads the old part as it was; it is made only if there is something to summarize.
            result = summarize(transcript, provider, options.summary, progress, cut=cut)
            if result is not None:
                fitted = fitted_window(transcript, cut, keep, options, counter)
                counts: Counter[str] = Counter()
                rebuilt = replace(rebuild(fitted, cut, summary_text(transcript, cut, result.text, options, counts), options),
                                  facts=counts)
                return _finish(transcript, rebuilt, "summary", before, prune_report, None, options, prune_only, counter,
                               notes=() if fitted is transcript else (WINDOW_TRIMMED.format(keep=keep),))
            fallback_reason = "nothing to summarize"
        except ProviderError as error:
            if not options.fallback:
                raise
            fallback_reason = str(error)
    reason = fallback_reason or emergency_reason
    assert reason is not None  # the summary returned above, failed with a reason, or was not asked for one
    return _emergency(transcript, prune_only, cut, before, prune_report, reason, options, counter)


def _emergency(original: Transcript, prune_only: tuple[Rebuilt, int], cut: Cut, before: int,
               prune_report: PruneReport, reason: str, options: CompactOptions,
               counter: TokenCounter) -> tuple[Rebuilt | None, CompactReport]:
    """Drop the old part behind a checkpoint built without a model, the window verbatim; where that
    is over the target, prune the window too, then shrink it, until it fits."""
    pruned = prune_only[0].transcript
    goal = target(options)
    keep = options.summary.keep_recent_tokens

    @cache
    def harder(level: int) -> Transcript:
        if level <= 1:
            return (original, pruned)[level]
        # The budget wins over the API's clear_at_least. Level 2: every unprotected result
        # cleared; level 3: the protected ones trimmed too.
        stricter = replace(options.pruning, clear_at_least=0, hard_clear_after=options.pruning.keep_last)
        if level == 3:
            stricter = replace(stricter, keep_last=0, keep_tool_uses=None, soft_trim_chars=min(stricter.soft_trim_chars, 2000),
                               head=500, tail=500, result_token_cap=min(stricter.result_token_cap, 500))
        return prune(pruned, stricter, counter)[0]

    head = _head(original.messages, original.dialect)

    @cache
    def before_any_window() -> int:
        """What every attempt keeps before its window: the messages kept first, and with them the
        system prompt, the tools, a log's hidden overhead."""
        return counter.tokens(harder(STRICTEST).with_messages(harder(STRICTEST).messages[:head]))

    def attempt_at(candidate: Transcript, keep_now: int) -> Rebuilt:
        same = candidate is original and keep_now == keep
        # A window made smaller to fit the budget no longer promises --keep-recent-messages: the budget wins.
        cut_now = cut if same else window_cut(candidate, keep_now, counter.per_message(candidate), head,
                                              options.summary.keep_recent_messages if keep_now == keep else 0)
        if cut_now.index <= head:  # nothing old: pruning alone (harder at a later level) is what is left to do
            return prune_only[0] if candidate is original else Rebuilt(candidate, "", candidate.messages, None)
        fitted = fitted_window(candidate, cut_now, keep_now, options, counter)
        # What a cut drops is read from the original: the same checkpoint for every attempt at it.
        where = (cut_now.index, cut_now.split_turn, cut_now.turn_start)
        if where not in checkpoints:
            counts: Counter[str] = Counter()
            checkpoints[where] = (summary_text(original, cut_now, None, options, counts), counts)
        summary, counts = checkpoints[where]
        return replace(rebuild(fitted, cut_now, summary, options), facts=counts)

    checkpoints: dict[tuple[int, bool, int], tuple[SummaryText, Counter[str]]] = {}

    # The window as asked, verbatim, then with harder and harder pruning, then a smaller and smaller
    # window, unless what every attempt keeps before its window is over the target already: then no
    # window is small enough, and each smaller one would only have summarized the old part again.
    attempts = [(level, keep) for level in range(STRICTEST + 1)]
    attempts += [(STRICTEST, keep >> halvings) for halvings in range(1, 16) if keep >> halvings >= 100]
    first: Rebuilt | None = None
    fits: Rebuilt | None = None
    for level, keep_now in attempts:
        if keep_now < keep and before_any_window() >= goal:
            break
        attempt = attempt_at(harder(level), keep_now)
        first = first or attempt
        if counter.tokens(attempt.transcript) <= goal:
            fits = attempt
            break
    notes: tuple[str, ...] = ()
    if fits is None:
        assert first is not None  # the attempts at the window asked for are always made
        attempt, reason = _squeezed(attempt, first, goal, options, counter, reason)
    elif level:
        shrunk = f", and shrunk to {keep_now:,} tokens" if keep_now < keep else ""
        notes = (f"the recent window is not verbatim: it did not fit the target of {goal:,} tokens, so its tool "
                 f"results were pruned too{shrunk}",)
    elif cut.index > head and sum(counter.per_message(original)[cut.index:]) > keep:
        notes = (WINDOW_TRIMMED.format(keep=keep),)
    if attempt.transcript is pruned:  # nothing old to drop: pruning was all there was to do
        return _finish(original, attempt, "prune", before, prune_report, None, options, prune_only, counter)
    return _finish(original, attempt, "emergency", before, prune_report, reason, options, prune_only, counter, notes)


STRICTEST = 3  # the last level of `_emergency`'s pruning (`harder`)
TRIMMED = "\n\n[… {count:,} characters trimmed by transcompact to fit the budget …]\n\n"


def _squeezed(smallest: Rebuilt, asked: Rebuilt, goal: int, options: CompactOptions, counter: TokenCounter,
              reason: str) -> tuple[Rebuilt, str]:
    """The smallest window with its biggest blocks trimmed until the whole fits `goal`: every tool
    result cleared (and its call's input), thinking removed, then the biggest call inputs emptied,
    then the longest assistant texts cut to their start and end. The user's text is never cut. When what is not the window (what the
    format keeps first, the summary, a log's hidden overhead) is over `goal` already, trimming the
    window is no use: the window asked for is kept, and the reason says so."""
    count = counter.tokens
    transcript = smallest.transcript
    first = len(transcript.messages) - len(smallest.recent)
    if count(transcript.with_messages(transcript.messages[:first])) >= goal:
        return asked, f"{reason}; over the target of {goal:,} tokens before the window: the window asked for is kept"
    clear_all = replace(options.pruning, keep_last=0, hard_clear_after=0, clear_tool_inputs=True, exclude_tools=frozenset(),
                        keep_tool_uses=None, clear_at_least=0)
    window = prune(transcript.with_messages(smallest.recent), clear_all)[0]
    messages = list(without_thinking(window.messages, keep_current=_thinking_enabled(transcript)))
    for trim in (_clear_call_inputs, _trim_assistant_text):
        over = count(transcript.with_messages([*transcript.messages[:first], *messages])) - goal
        if over <= 0:
            break
        trim(messages, int(over / max(counter.tokens_per_char, 0.01)) + 200)
    rebuilt = replace(smallest, transcript=transcript.with_messages([*transcript.messages[:first], *messages]),
                      recent=tuple(messages))
    if count(rebuilt.transcript) > goal:
        reason = f"{reason}; over the target of {goal:,} tokens: what is left (the user's text, tool calls) cannot be trimmed"
    return rebuilt, reason


def _clear_call_inputs(messages: list[Message], chars: int) -> None:
    """Empty the biggest tool call inputs (to {}) until `chars` characters are gone; the calls stay."""
    inputs = sorted(((len(compact_json(b.input)), i, j) for i, m in enumerate(messages) if m.role == ASSISTANT
                     for j, b in enumerate(m.blocks) if isinstance(b, ToolCall) and b.input != {}), reverse=True)
    changed: dict[int, list] = {}
    for size, i, j in inputs:
        if chars <= 0:
            break
        blocks = changed.setdefault(i, list(messages[i].blocks))
        blocks[j] = replace(blocks[j], input={})
        chars -= size - 2
    for i, blocks in changed.items():
        messages[i] = messages[i].with_blocks(tuple(blocks))


def _trim_assistant_text(messages: list[Message], chars: int) -> None:
    """Cut the longest assistant texts to their start and end until `chars` characters are gone."""
    texts = sorted(((len(b.text), i, j) for i, m in enumerate(messages) if m.role == ASSISTANT
                    for j, b in enumerate(m.blocks) if isinstance(b, Text)), reverse=True)
    for size, i, j in texts:
        if chars <= 0:
            break
        keep = max(400, size - chars)
        if keep + 100 >= size:
            continue
        block = messages[i].blocks[j]
        assert isinstance(block, Text)  # texts holds Text blocks only
        half = keep // 2
        text = block.text[:half] + TRIMMED.format(count=size - 2 * half) + block.text[-half:]
        chars -= size - len(text)
        blocks = list(messages[i].blocks)
        blocks[j] = replace(block, text=text)
        messages[i] = messages[i].with_blocks(tuple(blocks))


def _finish(original: Transcript, rebuilt: Rebuilt, strategy: str, before: int, prune_report: PruneReport,
            reason: str | None, options: CompactOptions, pruned: tuple[Rebuilt, int], counter: TokenCounter,
            notes: tuple[str, ...] = ()) -> tuple[Rebuilt | None, CompactReport]:
    """Check the result and report it; pruning alone when that leaves less, nothing when neither helps."""
    count = len(original.messages)
    prune_only, pruned_tokens = pruned
    if rebuilt.cut is not None:  # an agent's log: compacted as the agent does it
        body = rebuilt.summary[len(SUMMARY_PREFIX):] if rebuilt.summary.startswith(SUMMARY_PREFIX) else rebuilt.summary
        own = adapter(original).append_compaction(original, body, rebuilt.recent, before, drop_history=options.slim,
                                                  prompts=counter.prompts)
        if own is not None:
            rebuilt = replace(rebuilt, transcript=own)
    pruned_only = rebuilt.transcript is prune_only.transcript
    if not pruned_only:  # what a character of it costs by the model it is counted with: its writer restates usage by it
        rebuilt = replace(rebuilt, transcript=replace(rebuilt.transcript, tokens_per_char=counter.restating_ratio,
                                                      tokens_per_block=counter.restating_frame))
    after = pruned_tokens if pruned_only else counter.tokens(rebuilt.transcript)
    if not pruned_only and after >= pruned_tokens:  # dropping history gained nothing over pruning
        rebuilt, strategy, after, reason = prune_only, "prune", pruned_tokens, None
        notes += ("pruning alone leaves less than compacting would",)
    if after >= before:
        return None, CompactReport("none", before, before, count, count, counted_by=counter.method,
                                   notes=("nothing to compact: neither pruning nor a summary makes it smaller",))
    new = added_errors(original, rebuilt.transcript, same_messages=False)
    if new:
        v = new[0]
        raise PostConditionError(f"the compacted transcript would add {v.rule} at message {v.index}: {v.text}; nothing written",
                                 hint=f"this is a bug in transcompact: run again with {option('traceback')} and report it")
    cut = rebuilt.cut
    return rebuilt, CompactReport(
        strategy, before, counter.reported(rebuilt.transcript), count, len(rebuilt.transcript.messages),
        cut.index if cut else None, bool(cut and cut.split_turn), prune_report,
        len(rebuilt.summary), reason, notes, counter.method, len(rebuilt.recent),
        tuple((kind, rebuilt.facts[f"held {kind}"], rebuilt.facts[f"kept {kind}"]) for kind in COUNTED
              if rebuilt.facts[f"held {kind}"]))

