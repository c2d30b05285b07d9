"""Where a transcript's tokens sit and how close it is to the window: the report of `estimate`
(the counting itself: `counting/counter.py`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..core.errors import UsageError, option
from ..core.model import Transcript, tool_names
from ..counting.calibrate import Calibration, Recorded
from ..counting.counter import KINDS, Options, TokenCounter, server_compaction
from ..counting.counter import check_options as check_counting
from ..counting.models import threshold_tokens

EMERGENCY_FRACTION = 0.95


@dataclass(frozen=True, slots=True)
class MessageCount:
    index: int
    role: str
    tokens: int
    running: int  # system and tool schemas, then every message up to this one
    line: int | None = None


@dataclass(frozen=True)
class ResultCount:
    index: int  # of the message that holds the result
    tool_call_id: str
    tool: str | None  # the name of the call it answers, when that call is in the transcript
    tokens: int


@dataclass(frozen=True)
class Estimate:
    name: str
    format: str
    dialect: str
    tokenizer: str
    method: str  # how it was counted, in words
    ratio: float | None  # tokens per character, for the chars estimator and --calibrate
    tokens: int
    messages: int
    by_role: dict[str, int]  # the messages' roles, then `system_and_tools` and `overhead`, each the same as by kind
    by_kind: dict[str, int]
    per_message: tuple[MessageCount, ...]
    top_results: tuple[ResultCount, ...]
    window: int
    max_output: int
    threshold: int
    warning: int  # the tokens from which the status is `warning`
    recorded: Recorded | None = None
    calibration: Calibration | None = None
    model: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def budget(self) -> int:
        """The input budget: what the window leaves after the reply's headroom."""
        return self.window - self.max_output

    @property
    def fraction(self) -> float:
        return self.tokens / self.budget if self.budget > 0 else float("inf")

    @property
    def status(self) -> str:
        """`emergency` at 95 % of the input budget, `over` above the compaction threshold, `warning`
        from its warning fraction (half of it by default), else `under`."""
        if self.tokens >= EMERGENCY_FRACTION * self.budget:
            return "emergency"
        if self.tokens > self.threshold:
            return "over"
        return "warning" if self.tokens >= self.warning else "under"


def check_options(options: Options) -> None:
    """A UsageError for options no estimate can be made with (of any transcript): a budget of
    nothing, a warning fraction out of (0, 1], a count that cannot be made (`counter.check_options`)."""
    if options.window - options.max_output <= 0:
        raise UsageError(f"{option('max_output')} ({options.max_output:,}) must be below {option('window')} ({options.window:,})",
                         hint="the input budget is the window less the max output")
    if not 0 < options.warn_at <= 1:
        raise UsageError(f"{option('warn_at')} is a fraction of the threshold, above 0 and at most 1, not {options.warn_at:g}")
    check_counting(options)


def estimate(transcript: Transcript, options: Options = Options(), counter: TokenCounter | None = None) -> Estimate:
    """Count a transcript's tokens and say where they sit (see the module docstring).

    `counter` (made on the input a rewrite started from) counts on that input's scale; without
    one, the transcript is its own input.
    """
    check_options(options)
    budget = options.window - options.max_output
    threshold = threshold_tokens(options.threshold, budget)
    counter = counter or TokenCounter(transcript, options)
    counted = counter.breakdown(transcript)
    method, ratio, notes = counter.basis.method, counter.ratio, list(counter.basis.notes)
    fit = counter.basis.calibration
    if fit is not None:
        ratio = fit.ratio
    if options.tokenizer == "anthropic":
        exact = counter.exact(transcript)
        fixed = f" + the overhead fitted on the recorded usage ({counter.fixed:,})" if fit is not None else ""
        ratio, method = None, f"Anthropic count_tokens ({exact.model}){fixed}; the breakdown is apportioned by the chars estimate"
        notes += exact.notes
    if counted.by_kind.get("overhead", 0) < 0:
        notes.append(f"the transcript holds {-counted.by_kind['overhead']:,} tokens more than its recorded usage says the "
                     "API read (the agent sent less than it logged: cleared tool results, a compaction of its own); "
                     "the shares are of what it holds")
    recorded = counter.recorded(transcript)
    del counter  # (its tallies of each message: a long log's per-message counts are made without them)
    compaction = server_compaction(transcript.messages)
    if compaction is not None and compaction[0] > 0:
        start = compaction[0]
        notes.append(f"counted from the compaction block in message {start}: the API ignores everything before the "
                     f"last one ({start} earlier messages not counted)")

    names = tool_names(transcript.messages)
    running = counted.head
    per_message: list[MessageCount] = []
    by_role: Counter[str] = Counter()
    for message, (index, tokens), framing in zip(transcript.messages, enumerate(counted.messages), counted.framing):
        running += tokens
        by_role[message.role] += tokens - framing
        per_message.append(MessageCount(index, message.role, tokens, max(0, running), message.line))
    by_role.update(_outside_messages(counted.by_kind, by_role))
    results = sorted(counted.results, key=lambda r: (-r[2], r[0]))[: max(0, options.top)]
    return Estimate(
        name=transcript.name,
        format=transcript.format,
        dialect=transcript.dialect,
        tokenizer=options.tokenizer,
        method=method,
        ratio=ratio,
        tokens=sum(counted.by_kind.values()),
        messages=len(transcript.messages),
        by_role=dict(by_role),
        by_kind={k: counted.by_kind.get(k, 0) for k in KINDS},
        per_message=tuple(per_message),
        top_results=tuple(ResultCount(i, call_id, names.get(call_id), t) for i, call_id, t in results),
        window=options.window,
        max_output=options.max_output,
        threshold=threshold,
        warning=int(options.warn_at * threshold),
        recorded=recorded,
        calibration=fit if options.calibrate else None,
        model=options.model,
        notes=tuple(notes),
    )


def _outside_messages(by_kind: Counter, by_role: Counter) -> dict[str, int]:
    """The rows by role of what no message's blocks hold, each the same figure as by kind: the system
    prompt and tools, and the overhead. A scaled breakdown (--tokenizer anthropic) rounds the
    messages apart from the kinds: the few tokens that leaves go to the largest role, not to the overhead."""
    outside = {"system_and_tools": by_kind.get("system", 0) + by_kind.get("tool_schemas", 0), "overhead": by_kind.get("overhead", 0)}
    rounding = sum(by_kind.values()) - sum(outside.values()) - sum(by_role.values())
    if rounding and by_role:
        largest = max(by_role, key=lambda role: by_role[role])
        by_role[largest] += rounding
    return outside
