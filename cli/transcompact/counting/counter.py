"""How many tokens a transcript holds, counted on one scale for a whole run (`TokenCounter`).

The content estimate is the spec's estimator (`TokenEstimator`, docs/design.md §7): a message costs
`max(1, int(chars × ratio)) + 4` tokens. What `chars` is for each block is defined by `pieces`
below and documented in docs/counting.md. `--tokenizer o200k|cl100k` counts the same text with
tiktoken instead (plus the same 4 per message); `--tokenizer anthropic` asks the Messages API.
Images and PDFs cost a fixed figure (see `core/media.py`) whatever the tokenizer.

A transcript does not hold everything the API is sent: a Claude Code log has no system prompt
and no tool schemas. When its responses recorded usage, the default count is anchored on it:
the context the last of them recorded, plus the estimate of the messages after it. That is a
hidden overhead (recorded context − estimate of what it covered) added to the content
estimate; a `Basis` holds it, so that a rewritten transcript is counted on its input's scale.
An Anthropic request body is counted from its last `compaction` block on: the API ignores
everything before it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..core import settings
from ..core.errors import UsageError, option
from ..core.jsondata import compact_json
from ..core.media import IMAGE_UNKNOWN_TOKENS, PDF_PAGE_TOKENS, decoded_text, image_tokens, pdf_tokens
from ..core.model import (
    Block,
    Document,
    Image,
    Message,
    MessageView,
    Opaque,
    RedactedThinking,
    ServerToolCall,
    ServerToolResult,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
)
from ..formats import adapter
from .calibrate import Calibration, Recorded, calibrate, recorded_usage, usage_tokens

PER_MESSAGE = 4


TOKENIZERS = ("chars", "o200k", "cl100k", "anthropic")


COUNTS = ("usage", "content")


# Kinds, in the order reports show them. "overhead" is the 4 tokens per message (and, for the
# chars estimator, what rounding adds), plus what the transcript does not show (the hidden
# overhead of recorded usage, or the fitted overhead of --calibrate); "other" is any block the
# model does not name.
KINDS = ("system", "tool_schemas", "text", "thinking", "tool_calls", "tool_results", "images", "documents", "other", "overhead")


@dataclass(frozen=True)
class Options:
    tokenizer: str = settings.TOKENIZER
    ratio: float = settings.RATIO
    calibrate: bool = False
    count: str = settings.COUNT  # "usage": anchored on recorded usage when there is some; "content": what the transcript holds
    model: str | None = None  # for --tokenizer anthropic; the window comes from the caller
    anthropic: Any = field(default=None, repr=False, compare=False)  # --tokenizer anthropic: whom to ask (providers.resolve)
    window: int = settings.WINDOW
    max_output: int = settings.MAX_OUTPUT
    threshold: float | None = None  # None: the default, scaled to the budget (threshold_tokens); <= 1: a fraction of it
    warn_at: float = settings.WARN_AT  # the `warning` status from this fraction of the threshold
    top: int = settings.TOP


@dataclass(frozen=True)
class Basis:
    """What a count adds to the content estimate, decided once from the input.

    Counting a rewritten transcript with its input's basis puts the two counts on one scale:
    the hidden overhead the input's recorded usage showed (or the input's --calibrate fit)
    applies to the new content too.
    """

    method: str  # how the input is counted, in words
    overhead: int = 0  # tokens the transcript does not show: recorded context − the estimate of what it covered
    anchor: int | None = None  # the message whose recorded usage gives `overhead`
    calibration: Calibration | None = None  # with --calibrate: the fit, which replaces the estimator
    notes: tuple[str, ...] = field(default=())


def pieces(block: Block) -> Iterator[tuple[str, str | int]]:
    """(kind, text) for what a block counts as text, (kind, tokens) for what it costs as a figure."""
    if isinstance(block, Text):
        yield "text", block.text
    elif isinstance(block, Thinking):
        yield "thinking", block.thinking
    elif isinstance(block, RedactedThinking):
        yield "thinking", block.data  # encrypted; its length is the only measure there is
    elif isinstance(block, (ToolCall, ServerToolCall)):
        yield "tool_calls", block.name + compact_json(block.input)
    elif isinstance(block, ToolResult):
        if isinstance(block.content, str):
            yield "tool_results", block.content
        else:
            for inner in block.content:
                for kind, value in pieces(inner):
                    yield (kind if kind in ("images", "documents") else "tool_results"), value
    elif isinstance(block, ServerToolResult):
        yield "tool_results", compact_json(block.raw.get("content", "")) if isinstance(block.raw, dict) else ""
    elif isinstance(block, Image):
        yield "images", image_tokens(block.data) if block.data else IMAGE_UNKNOWN_TOKENS
    elif isinstance(block, Document):
        yield from _document(block)
    elif isinstance(block, Opaque) and block.type == "compaction" and not _encrypted_only(block):
        # The summary the API reads in place of everything before it (None when compaction failed).
        content = block.raw.get("content") if isinstance(block.raw, dict) else None
        yield "text", content if isinstance(content, str) else ""
    elif isinstance(block, Opaque):
        yield "other", compact_json(block.raw) if block.raw is not None else ""


def _encrypted_only(block: Opaque) -> bool:
    """An OpenAI `compaction` item: it has no `content` the API reads (Anthropic's block has), only
    `encrypted_content`, so its bytes are what it is counted as, like any other opaque block."""
    return isinstance(block.raw, dict) and "content" not in block.raw


def _document(block: Document) -> Iterator[tuple[str, str | int]]:
    source = block.raw.get("source") if isinstance(block.raw, dict) else None
    if isinstance(source, dict) and isinstance(source.get("content"), list):
        for part in source["content"]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield "documents", part["text"]
    elif isinstance(source, dict) and source.get("type") == "text" and block.data is not None:
        yield "documents", block.data  # Anthropic's plain-text source
    elif block.data is not None and (block.media_type or "").startswith("text/"):
        yield "documents", decoded_text(block.data)  # a base64 data URL (OpenAI `file`)
    else:
        yield "documents", pdf_tokens(block.data) if block.data else PDF_PAGE_TOKENS


def tool_schema_text(tool: Any) -> str:
    """A tool schema as counted: name + description + compact JSON of its input schema."""
    if not isinstance(tool, dict):
        return compact_json(tool)
    nested = tool.get("function")  # OpenAI nests it
    spec = nested if isinstance(nested, dict) else tool
    schema = spec.get("input_schema", spec.get("parameters"))
    if "name" not in spec or schema is None:
        return compact_json(tool)  # a server tool ({"type": "web_search_…", "name": …}) or an unknown shape
    return str(spec["name"]) + str(spec.get("description") or "") + compact_json(schema)


def server_compaction(messages) -> tuple[int, int] | None:
    """(message, block) of the last Anthropic `compaction` block: the API ignores every block before it."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].view is not None:
            continue  # an unread message: its view says it holds none
        blocks = messages[index].blocks
        for position in range(len(blocks) - 1, -1, -1):
            block = blocks[position]
            if type(block) is Opaque and block.type == "compaction":
                return index, position
    return None


@dataclass(slots=True)
class _Tally:
    """What one message (or the system prompt, or the tool schemas) holds: units per kind.

    One is kept per message of every transcript counted, so as tuples (of a long log's tens of
    thousands of messages, most hold one kind and no image), not dicts and lists."""

    units: tuple[tuple[str, int], ...] = ()  # (kind, chars), or tokens for a tokenizer
    fixed: tuple[tuple[str, int], ...] = ()  # (kind, tokens) from images and documents
    results: tuple[tuple[str, int, int], ...] = ()  # (tool_call_id, units, fixed)
    scaled: tuple | None = None  # (ratio, ((kind, tokens), …), overhead, tokens): `_scaled`, kept for the next count


def _scaled(tally: _Tally, ratio: float | None) -> tuple:
    """A message's tokens per kind, its overhead (the 4, and what rounding adds) and its total,
    made once per ratio: a rewrite's count shares the tallies of the messages it kept."""
    scaled = tally.scaled
    if scaled is not None and scaled[0] == ratio:
        return scaled
    scale = 1 if ratio is None else ratio
    # Loops, not generators: this runs once per message of every transcript counted.
    kinds = []
    total = split = 0
    for kind, units in tally.units:
        tokens = int(units * scale)
        kinds.append((kind, tokens))
        total += units
        split += tokens
    body = max(1, int(total * scale)) if total or ratio is not None else 0
    for kind, tokens in tally.fixed:
        kinds.append((kind, tokens))
        body += tokens
        split += tokens
    scaled = (ratio, tuple(kinds), body - split + PER_MESSAGE, body + PER_MESSAGE)
    tally.scaled = scaled
    return scaled


# The kind each type of block a view holds is counted as (as `pieces` counts the block).
_VIEW_KINDS = {Text: "text", Thinking: "thinking", RedactedThinking: "thinking", ToolCall: "tool_calls",
               ToolResult: "tool_results"}


def _tally_of_view(view: MessageView) -> _Tally:
    """The chars tally of an unread message, from its view: the same as `_tally` of its blocks."""
    units: dict[str, int] = {}
    results: list[tuple[str, int, int]] = []
    for size in view.blocks:
        kind = _VIEW_KINDS[size.type]
        units[kind] = units.get(kind, 0) + size.chars
        if size.type is ToolResult:
            results.append((size.call_id or "", size.chars, 0))
    return _Tally(tuple(units.items()), (), tuple(results) if results else ())


def _tally(blocks, measure: Callable[[str], int]) -> _Tally:
    units: dict[str, int] = {}
    fixed: dict[str, int] = {}
    results: list[tuple[str, int, int]] = []
    for block in blocks:
        # The two commonest blocks by the short path; everything else through `pieces`.
        if type(block) is Text:
            units["text"] = units.get("text", 0) + measure(block.text)
            continue
        if type(block) is ToolResult and type(block.content) is str:
            counted = measure(block.content)
            units["tool_results"] = units.get("tool_results", 0) + counted
            results.append((block.tool_call_id, counted, 0))
            continue
        result_units = result_fixed = 0
        for kind, value in pieces(block):
            if isinstance(value, int):
                fixed[kind] = fixed.get(kind, 0) + value
                result_fixed += value
            else:
                counted = measure(value)
                units[kind] = units.get(kind, 0) + counted
                result_units += counted
        if isinstance(block, ToolResult):
            results.append((block.tool_call_id, result_units, result_fixed))
    return _Tally(tuple(units.items()), tuple(fixed.items()) if fixed else (), tuple(results) if results else ())


@dataclass
class _Counted:
    """Tokens per kind, per message and per tool result, before they are assembled into a report."""

    by_kind: Counter
    messages: list[int]
    results: list[tuple[int, str, int]]  # (message index, tool_call_id, tokens)
    head: int  # what comes before the first message: system prompt, tool schemas, a hidden or fitted overhead


def _by_estimator(system: _Tally, tools: _Tally, tallies: list[_Tally | None], ratio: float | None) -> _Counted:
    """The spec's estimator (ratio given) or a tokenizer's counts (ratio None), 4 per message."""

    def tokens(units: int) -> int:
        return units if ratio is None else int(units * ratio)

    def once(tally: _Tally) -> int:  # the system prompt or the tool schemas: no per-message overhead
        units = _units(tally)
        if not units and not tally.fixed:
            return 0
        return (units if ratio is None else max(1, tokens(units))) + _fixed(tally)

    by_kind = {"system": once(system), "tool_schemas": once(tools)}
    messages, results = [], []
    scale = 1 if ratio is None else ratio
    overhead = 0
    for index, tally in enumerate(tallies):
        if tally is None:
            messages.append(0)
            continue
        _, kinds, extra, total = _scaled(tally, ratio)
        for kind, t in kinds:
            by_kind[kind] = by_kind.get(kind, 0) + t
        overhead += extra
        messages.append(total)
        if tally.results:
            results += [(index, call_id, int(u * scale) + f) for call_id, u, f in tally.results]
    by_kind["overhead"] = overhead
    return _Counted(Counter(by_kind), messages, results, by_kind["system"] + by_kind["tool_schemas"])


def _by_fit(system: _Tally, tools: _Tally, tallies: list[_Tally | None], fit: Calibration) -> _Counted:
    """The fitted overhead + ratio × chars, plus the figures of images and documents."""
    ratio = fit.ratio
    by_kind = Counter(system=int(_units(system) * ratio) + _fixed(system), tool_schemas=int(_units(tools) * ratio))
    messages, results = [], []
    for index, tally in enumerate(tallies):
        if tally is None:
            messages.append(0)
            continue
        kinds = Counter({k: int(u * ratio) for k, u in tally.units})
        kinds.update(dict(tally.fixed))
        by_kind.update(kinds)
        messages.append(sum(kinds.values()))
        results += [(index, call_id, int(u * ratio) + f) for call_id, u, f in tally.results]
    chars = sum(_units(t) for t in (system, tools, *tallies))
    fixed = sum(_fixed(t) for t in (system, *tallies))
    total = round(fit.overhead + ratio * chars) + fixed
    by_kind["overhead"] = total - sum(by_kind.values())  # the fitted overhead: what the log never shows
    return _Counted(by_kind, messages, results, by_kind["system"] + by_kind["tool_schemas"] + by_kind["overhead"])


def _units(tally: _Tally | None) -> int:
    return sum(u for _, u in tally.units) if tally is not None else 0


def _fixed(tally: _Tally | None) -> int:
    return sum(f for _, f in tally.fixed) if tally is not None else 0


def _with_overhead(counted: _Counted, overhead: int, input_tokens: int) -> _Counted:
    """The content estimate plus a hidden overhead. A negative one (the log holds more than the API
    read: the agent cleared old tool results itself, or the estimator counts more than the API)
    stands for content the agent left out, which a rewrite may have removed as well: so a
    transcript counts at least the smaller of its content and what the API read of the input
    (`input_tokens`), not what is left when the whole of it is taken off again (0 for a log pruned
    of its old results)."""
    content = sum(counted.by_kind.values())
    if overhead < 0:
        overhead = max(overhead, min(0, input_tokens - content), -content)
    by_kind = counted.by_kind.copy()
    by_kind["overhead"] += overhead
    return _Counted(by_kind, counted.messages, counted.results, counted.head + overhead)


def apportioned(counted: _Counted, exact: int) -> _Counted:
    """Scale a chars breakdown so that it sums to the exact total the API counted."""
    factor = exact / max(1, sum(counted.by_kind.values()))
    by_kind = Counter({k: round(v * factor) for k, v in counted.by_kind.items()})
    by_kind["overhead"] += exact - sum(by_kind.values())
    messages = [round(t * factor) for t in counted.messages]
    return _Counted(by_kind, messages, [(i, call_id, round(t * factor)) for i, call_id, t in counted.results],
                    exact - sum(messages))


def _measure(options: Options) -> tuple[Callable[[str], int], float | None, str]:
    if options.count not in COUNTS:
        raise UsageError(f"unknown count {options.count!r} (choose from {', '.join(COUNTS)})")
    if options.calibrate and options.count == "content":
        raise UsageError(f"{option('calibrate')} fits the count to recorded usage; it cannot be combined with "
                         f"{option('count', 'content')}")
    if options.tokenizer in ("chars", "anthropic"):
        if options.ratio <= 0:
            raise UsageError(f"{option('ratio')} must be above 0, not {options.ratio:g}")
        return len, options.ratio, f"chars × {options.ratio:g} + {PER_MESSAGE} per message"
    if options.tokenizer in ("o200k", "cl100k"):
        if options.calibrate:
            raise UsageError(f"{option('calibrate')} fits the chars estimator; it cannot be combined with "
                             f"{option('tokenizer', options.tokenizer)}")
        from ..counting.tokenizers import ENCODINGS, counter

        return counter(options.tokenizer), None, f"tiktoken {ENCODINGS[options.tokenizer]} + {PER_MESSAGE} per message"
    raise UsageError(f"unknown tokenizer {options.tokenizer!r} (choose from {', '.join(TOKENIZERS)})")


def _basis(transcript: Transcript, options: Options, method: str, system: _Tally, tools: _Tally,
           tallies: list[_Tally | None], counted: _Counted, recorded: Recorded | None) -> Basis:
    notes: tuple[str, ...] = ()
    # What the log holds but no recorded prompt did, though the agent sends it now: not in what the
    # usage is fitted or anchored on, counted on top of it.
    left_out = adapter(transcript).unrecorded_messages(transcript)
    if options.calibrate:
        fit = calibrate(transcript.messages, [0 if i in left_out else _units(t) for i, t in enumerate(tallies)],
                        [0 if i in left_out else _fixed(t) for i, t in enumerate(tallies)],
                        _units(system) + _units(tools), _fixed(system))
        if fit is not None:
            return Basis(f"calibrated on {fit.samples} recorded responses: {fit.overhead:,.0f} + chars × {fit.ratio:.4f}",
                         calibration=fit)
        found = sum(1 for m in transcript.messages if usage_tokens(m))
        notes = (f"--calibrate needs at least 2 responses with recorded usage ({found} found) "
                 "and a positive fit; counted without it",)
    # count_tokens is exact for what the transcript holds; the anchor corrects an estimate.
    if options.count != "usage" or options.tokenizer == "anthropic":
        return Basis(method, notes=notes)
    if recorded is None:
        return _carried(transcript, options, method, notes)
    covered = counted.head + sum(t for i, t in enumerate(counted.messages[: recorded.message + 1]) if i not in left_out)
    after = len(transcript.messages) - recorded.message - 1
    return Basis(f"recorded usage at message {recorded.message} + {method} of {after} message{'s' * (after != 1)} after",
                 overhead=recorded.context - covered, anchor=recorded.message, notes=notes)


def _carried(transcript: Transcript, options: Options, method: str, notes: tuple[str, ...]) -> Basis:
    """A compacted log with no response since its compaction: the overhead the usage recorded
    before it showed (the system prompt and tools the agent sends, which the log never shows) still
    holds, so that a log counts as much read back as `compact` reported."""
    previous = adapter(transcript).view_before_compaction(transcript)
    if previous is None:
        return Basis(method, notes=notes)
    basis = TokenCounter(previous, replace(options, calibrate=False)).basis
    # A negative overhead is not carried: it stood for old content the agent left out of what it
    # sent, which the compaction has replaced.
    if basis.overhead < 0 or (basis.anchor is None and not basis.overhead):
        return Basis(method, notes=notes)
    return Basis(f"{method} + the overhead the usage recorded before the compaction showed ({basis.overhead:,})",
                 overhead=basis.overhead, notes=notes)


def _once(known: dict[int, tuple[Any, Any]], value: Any, compute: Callable[[Any], Any]) -> Any:
    """`compute(value)`, made once per object (kept with it, so that its id is not reused)."""
    found = known.get(id(value))
    if found is None or found[0] is not value:
        found = known[id(value)] = (value, compute(value))
    return found[1]


class TokenCounter:
    """The counts of one run, on one scale: the basis fitted once on the input, each message
    tallied once (memoised by message: a rewrite shares the messages it did not change), and with
    `--tokenizer anthropic` one `count_tokens` request for each transcript whose exact count is
    reported; the counts in between are the chars estimate scaled by the input's exact count.
    Hand one to every operation of a run (prune, the cut, compact) so that they agree.
    """

    def __init__(self, transcript: Transcript, options: Options = Options()):
        self.options = options
        self.measure, self.ratio, method = _measure(options)
        self._tallied: dict[int, tuple[Message, _Tally]] = {}
        self._counted: dict[int, tuple[Transcript, _Counted]] = {}
        self._exact: dict[int, tuple[Transcript, Any]] = {}
        self._recorded: dict[int, tuple[Transcript, Recorded | None]] = {}
        system, tools, tallies = self.tallies(transcript)
        counted = _by_estimator(system, tools, tallies, self.ratio)
        self.basis = _basis(transcript, options, method, system, tools, tallies, counted, self.recorded(transcript))
        self._input_tokens = sum(counted.by_kind.values()) + self.basis.overhead  # what the API read of the input (`_with_overhead`)
        self.factor = 1.0  # the input's exact count over its chars estimate (--tokenizer anthropic)
        if options.tokenizer == "anthropic":
            self.factor = self.exact(transcript).tokens / max(1, sum(counted.by_kind.values()))
        if self.basis.calibration is None:  # the input's own breakdown is already made: keep it
            self._counted[id(transcript)] = (transcript, self._on_scale(counted))

    def tallies(self, transcript: Transcript) -> tuple[_Tally, _Tally, list[_Tally | None]]:
        """(system prompt, tool schemas, each message); None for a message the API ignores."""
        system = _tally(transcript.system, self.measure)
        tools = _Tally(units=(("tool_schemas", sum(self.measure(tool_schema_text(t)) for t in transcript.tools)),))
        messages = transcript.messages
        start = server_compaction(messages)
        if start is None:
            return system, tools, [self._message(m) for m in messages]
        index, position = start
        return system, tools, ([None] * index + [_tally(messages[index].blocks[position:], self.measure)]
                               + [self._message(m) for m in messages[index + 1:]])

    def _message(self, message: Message) -> _Tally:
        return _once(self._tallied, message, self._tally)

    def _tally(self, message: Message) -> _Tally:
        view = message.view
        return _tally_of_view(view) if view is not None and self.measure is len else _tally(message.blocks, self.measure)

    def counted(self, transcript: Transcript) -> _Counted:
        """The breakdown on the input's scale (no request: anthropic counts are scaled), made once
        per transcript: prune's report, the cut and compact's checks ask for the same one."""
        return _once(self._counted, transcript, self._count)

    def _count(self, transcript: Transcript) -> _Counted:
        system, tools, tallies = self.tallies(transcript)
        if self.basis.calibration is not None:
            return _by_fit(system, tools, tallies, self.basis.calibration)
        return self._on_scale(_by_estimator(system, tools, tallies, self.ratio))

    def _on_scale(self, counted: _Counted) -> _Counted:
        """A content estimate put on the input's scale: its hidden overhead, its exact count's factor."""
        counted = _with_overhead(counted, self.basis.overhead, self._input_tokens) if self.basis.overhead else counted
        return counted if self.factor == 1.0 else apportioned(counted, round(sum(counted.by_kind.values()) * self.factor))

    def recorded(self, transcript: Transcript) -> Recorded | None:
        """The usage the transcript's last response with usage recorded, looked for once."""
        return _once(self._recorded, transcript, lambda t: recorded_usage(t.messages))

    def tokens(self, transcript: Transcript) -> int:
        """The total on the input's scale, without a request."""
        return max(0, sum(self.counted(transcript).by_kind.values()))

    def per_message(self, transcript: Transcript) -> list[int]:
        """Each message's tokens on the input's scale (no hidden overhead)."""
        return self.counted(transcript).messages

    def exact(self, transcript: Transcript):
        """`--tokenizer anthropic`: the Messages API's count of `transcript`, asked once."""
        from ..providers.anthropic import count_tokens

        return _once(self._exact, transcript, lambda t: count_tokens(t, self.options.anthropic, self.options.model))

    @property
    def method(self) -> str:
        """How the counts are made, in words."""
        if self.options.tokenizer == "anthropic":
            return "Anthropic count_tokens of the input and of the output; the counts between scaled from the input's"
        return self.basis.method

    def reported(self, transcript: Transcript) -> int:
        """The total a report states: exact with `--tokenizer anthropic` (a request), else `tokens`."""
        return self.exact(transcript).tokens if self.options.tokenizer == "anthropic" else self.tokens(transcript)
