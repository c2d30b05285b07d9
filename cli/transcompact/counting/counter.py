"""How many tokens a transcript holds, counted on one scale for a whole run (`TokenCounter`).

The content estimate is the spec's estimator (`TokenEstimator`, docs/design.md §7): a message costs
`max(1, int(chars × ratio)) + 4` tokens. What `chars` is for each block is defined by `pieces`
below and documented in docs/counting.md. `--tokenizer o200k|cl100k` counts the same text with
tiktoken instead (plus the same 4 per message); `--tokenizer anthropic` asks the Messages API.
Images and PDFs cost a fixed figure (see `core/media.py`) whatever the tokenizer.

A transcript does not hold everything the API is sent: a Claude Code log has no system prompt
and no tool schemas. When at least 2 of its responses recorded usage, every count is one model
fitted on them (`calibrate.py`): the content, by the tokenizer, times a fitted ratio, plus a
fitted frame for each block, plus a fixed overhead fitted apart from them, the frame and the
overhead the same for every tokenizer, up to the newest response
that recorded usage; that response's recorded output and the estimate of what follows it after
(`_by_fit`). The line goes through that response, so a log counts the context it recorded plus
the estimate of what follows, whatever the rest of the fit (`sessions` reads it by its end). The
estimator's shortfall then scales with the content, and only the fixed part (the system prompt
and tools) stays with a rewrite, whose writer restates the usage it keeps on the same model
(`tokens_per_char`, `prompts`). With one response, the count is anchored on it: the context it
recorded plus the estimate of the messages after it, the difference (recorded − estimate)
carried as a hidden overhead. A `Basis` holds the model or the overhead, so that a rewritten
transcript is counted on its input's scale; a log compacted with no response since is counted
with the model of the log before its compaction, and one with few responses since with that
model's ratio and frame through its newest. An Anthropic request body is counted from its
last `compaction` block on: the API ignores everything before it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core import settings
from ..core.errors import UsageError, option
from ..core.jsondata import compact_json
from ..core.media import IMAGE_UNKNOWN_TOKENS, PDF_PAGE_TOKENS, decoded_text, image_tokens, pdf_tokens
from ..core.model import (
    SHARED_TEXT_CHARS,
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
from .calibrate import Calibration, Recorded, calibrate, recorded_prompts, recorded_usage

PER_MESSAGE = 4


TOKENIZERS = ("chars", "o200k", "cl100k", "anthropic")


COUNTS = ("usage", "content")


# Kinds, in the order reports show them. "overhead" is what no block holds: the 4 tokens per
# message of the estimators (and what rounding adds), plus what the transcript does not show (the
# fitted overhead, or the hidden overhead of an anchor); "other" is any block the model does not name.
KINDS = ("system", "tool_schemas", "text", "thinking", "tool_calls", "tool_results", "images", "documents", "other", "overhead")


@dataclass(frozen=True)
class Options:
    tokenizer: str = settings.TOKENIZER
    ratio: float = settings.RATIO
    calibrate: bool = False  # show the fit and its error (the fit is the count wherever it can be made)
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
    the input's fit (or the hidden overhead of its anchor) applies to the new content too.
    """

    method: str  # how the input is counted, in words
    overhead: int = 0  # an anchor's: tokens the transcript does not show, recorded context − the estimate of what it covered
    anchor: int | None = None  # the message whose recorded usage gives `overhead`
    calibration: Calibration | None = None  # the fit, which replaces the estimator's ratio and adds its overhead
    notes: tuple[str, ...] = field(default=())
    behind: int = 0  # the compactions the fit was carried past (`_carried`)


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
    thousands of messages, most hold one kind and no image), not dicts and lists; never changed
    once made (messages of one short text share theirs: `_tally_of_view`)."""

    units: tuple[tuple[str, int], ...] = ()  # (kind, chars), or tokens for a tokenizer
    fixed: tuple[tuple[str, int], ...] = ()  # (kind, tokens) from images and documents
    results: tuple[tuple[str, int, int], ...] = ()  # (tool_call_id, units, fixed)
    blocks: int = 0  # each sent in a frame the fit counts (`Calibration.frame`)


def _scaled(tally: _Tally, ratio: float | None) -> tuple:
    """(ratio, a message's tokens per kind, its overhead (the 4, and what rounding adds), its
    total), made again by each count: a few multiplications, where keeping them with each tally
    made a large log's tallies half as heavy again."""
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
    return ratio, kinds, body - split + PER_MESSAGE, body + PER_MESSAGE


# The kind each type of block a view holds is counted as (as `pieces` counts the block).
_VIEW_KINDS = {Text: "text", Thinking: "thinking", RedactedThinking: "thinking", ToolCall: "tool_calls",
               ToolResult: "tool_results", Opaque: "other"}


# The tally of an unread message of one short text (`SHARED_TEXT_CHARS`), by its characters, made
# once: a tally is four objects (176 bytes).
_TEXT_TALLIES: dict[int, _Tally] = {}


def _tally_of_view(view: MessageView) -> _Tally:
    """The chars tally of an unread message, from its view: the same as `_tally` of its blocks."""
    blocks = view.blocks
    if len(blocks) == 1 and blocks[0].type is Text and (chars := blocks[0].chars) < SHARED_TEXT_CHARS:
        tally = _TEXT_TALLIES.get(chars)
        if tally is None:
            tally = _TEXT_TALLIES[chars] = _Tally((("text", chars),), (), (), 1)
        return tally
    units: dict[str, int] = {}
    results: list[tuple[str, int, int]] = []
    for size in view.blocks:
        kind = _VIEW_KINDS[size.type]
        units[kind] = units.get(kind, 0) + size.chars
        if size.type is ToolResult:
            results.append((size.call_id or "", size.chars, 0))
    return _Tally(tuple(units.items()), (), tuple(results) if results else (), len(view.blocks))


def _tally(blocks: Sequence[Block], measure: Callable[[str], int]) -> _Tally:
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
    return _Tally(tuple(units.items()), tuple(fixed.items()) if fixed else (), tuple(results) if results else (), len(blocks))


@dataclass
class _Counted:
    """Tokens per kind, per message and per tool result, before they are assembled into a report."""

    by_kind: Counter
    messages: list[int]
    results: list[tuple[int, str, int]]  # (message index, tool_call_id, tokens)
    head: int  # what comes before the first message: system prompt, tool schemas, a hidden or fitted overhead
    framing: list[int]  # of each message's tokens, the overhead (the 4 per message, rounding): no block holds it


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
    messages, results, framing = [], [], []
    scale = 1 if ratio is None else ratio
    overhead = 0
    for index, tally in enumerate(tallies):
        if tally is None:
            messages.append(0)
            framing.append(0)
            continue
        _, kinds, extra, total = _scaled(tally, ratio)
        for kind, t in kinds:
            by_kind[kind] = by_kind.get(kind, 0) + t
        overhead += extra
        messages.append(total)
        framing.append(extra)
        if tally.results:
            results += [(index, call_id, int(u * scale) + f) for call_id, u, f in tally.results]
    by_kind["overhead"] = overhead
    return _Counted(Counter(by_kind), messages, results, by_kind["system"] + by_kind["tool_schemas"], framing)


def _by_fit(system: _Tally, tools: _Tally, tallies: list[_Tally | None], fit: Calibration, ratio: float | None,
            anchor: Recorded | None, left_out: frozenset[int]) -> _Counted:
    """The model of a log: the fitted overhead + ratio × the content before its newest response
    with recorded usage (`anchor`) + the fitted frame × its blocks, plus the figures of images and
    documents there (a message's frames are its `framing`: no block holds them); that response
    its recorded output, and what follows it (and what no usage counted: `left_out`) the estimator's
    count (`ratio`). The line goes through the newest response of the log it was fitted on, so
    that log counts the context that response recorded plus the estimate of what follows, as an
    anchor does, and what follows the newest response is counted alike in any log (`sessions`
    reads it by its end). Without an anchor, the whole content is the model's."""
    scale = fit.ratio
    newest = anchor.message if anchor is not None else len(tallies)
    by_kind = Counter(system=int(_units(system) * scale) + _fixed(system), tool_schemas=int(_units(tools) * scale))
    units, fixed, blocks = _units(system) + _units(tools), _fixed(system), 0
    outside = 0  # what the estimator counts: after the newest response, and what no usage counted
    messages, results, framing = [], [], []
    for index, tally in enumerate(tallies):
        if tally is None:
            messages.append(0)
            framing.append(0)
            continue
        if index > newest or index in left_out:
            _, kinds, extra, total = _scaled(tally, ratio)
            for kind, t in kinds:
                by_kind[kind] += t
            messages.append(total)
            framing.append(extra)
            outside += total
            per_unit = 1 if ratio is None else ratio
            results += [(index, call_id, int(u * per_unit) + f) for call_id, u, f in tally.results]
            continue
        kinds = Counter({k: int(u * scale) for k, u in tally.units})
        kinds.update(dict(tally.fixed))
        by_kind.update(kinds)
        frames = int(fit.frame * tally.blocks)
        messages.append(sum(kinds.values()) + frames)
        framing.append(frames)
        results += [(index, call_id, int(u * scale) + f) for call_id, u, f in tally.results]
        if index < newest:
            units += _units(tally)
            fixed += _fixed(tally)
            blocks += tally.blocks
    total = (round(fit.overhead + scale * units + fit.frame * blocks) + fixed + outside
             + (anchor.output if anchor is not None else 0))
    by_kind["overhead"] = total - sum(by_kind.values())  # the fitted overhead: what the log never shows
    return _Counted(by_kind, messages, results, total - sum(messages), framing)


def _units(tally: _Tally | None) -> int:
    return sum(u for _, u in tally.units) if tally is not None else 0


def _fixed(tally: _Tally | None) -> int:
    return sum(f for _, f in tally.fixed) if tally is not None else 0


def _blocks(tally: _Tally | None) -> int:
    return tally.blocks if tally is not None else 0


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
    return _Counted(by_kind, counted.messages, counted.results, counted.head + overhead, counted.framing)


def apportioned(counted: _Counted, exact: int) -> _Counted:
    """Scale a chars breakdown so that it sums to the exact total the API counted."""
    factor = exact / max(1, sum(counted.by_kind.values()))
    by_kind = Counter({k: round(v * factor) for k, v in counted.by_kind.items()})
    by_kind["overhead"] += exact - sum(by_kind.values())
    messages = [round(t * factor) for t in counted.messages]
    return _Counted(by_kind, messages, [(i, call_id, round(t * factor)) for i, call_id, t in counted.results],
                    exact - sum(messages), [round(t * factor) for t in counted.framing])


def check_options(options: Options) -> None:
    """A UsageError for options no count can be made with, whatever it counts: a command checks
    them before it reads a file (each file would fail alike)."""
    if options.count not in COUNTS:
        raise UsageError(f"unknown count {options.count!r} (choose from {', '.join(COUNTS)})")
    if options.calibrate and options.count == "content":
        raise UsageError(f"{option('calibrate')} fits the count to recorded usage; it cannot be combined with "
                         f"{option('count', 'content')}")
    if options.tokenizer not in TOKENIZERS:
        raise UsageError(f"unknown tokenizer {options.tokenizer!r} (choose from {', '.join(TOKENIZERS)})")
    if options.tokenizer in ("chars", "anthropic") and not (options.ratio > 0 and math.isfinite(options.ratio)):
        raise UsageError(f"{option('ratio')} must be a finite number above 0, not {options.ratio:g}")


def _measure(options: Options) -> tuple[Callable[[str], int], float | None, str]:
    check_options(options)
    if options.tokenizer in ("chars", "anthropic"):
        return len, options.ratio, f"chars × {options.ratio:g} + {PER_MESSAGE} per message"
    from ..counting.tokenizers import ENCODINGS, counter

    return counter(options.tokenizer), None, f"tiktoken {ENCODINGS[options.tokenizer]} + {PER_MESSAGE} per message"


def _basis(transcript: Transcript, options: Options, method: str, system: _Tally, tools: _Tally,
           tallies: list[_Tally | None], counted: _Counted, prompts: list[int | None], recorded: Recorded | None,
           unrecorded: Callable[[], frozenset[int]]) -> Basis:
    notes: tuple[str, ...] = ()
    if options.count != "usage":
        return Basis(method)
    # What the log holds but no recorded prompt did, though the agent sends it now: not in what the
    # usage is fitted or anchored on, counted on top of it.
    left_out = unrecorded()
    found = recorded.responses if recorded is not None else 0  # the responses that recorded usage
    fit = _fitted(transcript, options, prompts, system, tools, tallies, left_out) if found >= 2 else None
    believed = fit is not None and _sane(fit, options)
    if found and (not believed or found < SHAPE_SAMPLES):
        # Few responses since a compaction (those a rewrite kept and restated, or the agent's first
        # since): the ratio and frame of the log before it, fitted on as many or more (the older
        # of two alike: the further apart its samples, the surer), through the newest.
        before = _model_before(transcript, options)
        if before is not None and before[0].samples >= (found if believed else 1):
            shape, passed = before
            shaped = _fitted(transcript, options, prompts, system, tools, tallies, left_out, shape)
            if shaped is not None and _sane(shaped, options):
                return Basis(f"{_described(shaped, options)}, the ratio{' and frame' * bool(round(shaped.frame, 1))} of "
                             f"{shape.samples} responses before {_compactions(passed + 1)}", calibration=shaped)
    if fit is not None and believed:
        return Basis(_described(fit, options), calibration=fit)
    if options.calibrate and fit is not None:
        notes = (f"the fit on the recorded usage gives {fit.ratio:.4f} tokens per unit of the count, more than "
                 f"{SANE_FACTOR}× from the tokenizer's own: too few or too odd responses to fit; counted without it",)
    elif options.calibrate:
        notes = (f"--calibrate needs at least 2 responses with recorded usage ({found} found) "
                 "and a positive fit; counted without it",)
    if recorded is None:
        return _carried(transcript, options, method, notes)
    # count_tokens is exact for what the transcript holds; an anchor corrects an estimate.
    if options.tokenizer == "anthropic":
        return Basis(method, notes=notes)
    covered = _covered(counted, recorded, left_out)
    after = len(transcript.messages) - recorded.message - 1
    return Basis(f"recorded usage at message {recorded.message} + {method} of {after} message{'s' * (after != 1)} after",
                 overhead=recorded.context - covered, anchor=recorded.message, notes=notes)


def _covered(counted: _Counted, recorded: Recorded, left_out: frozenset[int]) -> int:
    """The estimate of what a recorded usage counted: what comes before the messages, and those up
    to its response that it did not leave out."""
    return counted.head + sum(t for i, t in enumerate(counted.messages[: recorded.message + 1]) if i not in left_out)


# How far a fitted ratio may stray from the tokenizer's own (0.25 a character, 1 a tiktoken token)
# before the fit is not believed: real text runs about 0.2–0.5 tokens a character, CJK about 1.
SANE_FACTOR = 4


# Fewer responses than this since a compaction: the model's ratio and frame are those of the log
# before it, where that log has as many or more.
SHAPE_SAMPLES = 6


def _described(fit: Calibration, options: Options) -> str:
    unit = "chars" if options.tokenizer in ("chars", "anthropic") else f"{options.tokenizer} tokens"
    frame = f" + {fit.frame:.1f} a block" if round(fit.frame, 1) else ""
    return (f"fitted on {fit.samples} recorded response{'s' * (fit.samples != 1)}: {fit.overhead:,.0f} + {unit} × {fit.ratio:.4f}"
            f"{frame}")


def _sane(fit: Calibration, options: Options) -> bool:
    own = options.ratio if options.tokenizer in ("chars", "anthropic") else 1.0
    return own / SANE_FACTOR <= fit.ratio <= own * SANE_FACTOR


def _fitted(transcript: Transcript, options: Options, prompts: list[int | None], system: _Tally, tools: _Tally,
            tallies: list[_Tally | None], left_out: frozenset[int], shape: Calibration | None = None) -> Calibration | None:
    """The model fitted on the transcript's recorded usage (`calibrate`: two responses that recorded
    it at least; one, with the ratio and frame of `shape`), None where it cannot be."""
    def per_message(of: list[_Tally | None], measure: Callable[[_Tally | None], int]) -> list[int]:
        return [0 if i in left_out else measure(t) for i, t in enumerate(of)]

    if options.tokenizer in ("o200k", "cl100k"):  # the overhead is fitted on characters, the ratio on the tokenizer's units
        by_chars = TokenCounter(transcript, replace(options, tokenizer="chars", count="content", calibrate=False))
        chars_system, chars_tools, chars_of = by_chars.tallies(transcript)
        return calibrate(prompts, per_message(chars_of, _units), per_message(chars_of, _blocks),
                         per_message(chars_of, _fixed), _units(chars_system) + _units(chars_tools), _fixed(chars_system),
                         per_message(tallies, _units), _units(system) + _units(tools), shape)
    return calibrate(prompts, per_message(tallies, _units), per_message(tallies, _blocks),
                     per_message(tallies, _fixed), _units(system) + _units(tools), _fixed(system), shape=shape)


def _before(transcript: Transcript) -> tuple[Transcript, int] | None:
    """The newest view before a compaction of the log that recorded usage, and how many views that
    recorded none it passed (each carries what the one before it holds)."""
    passed = 0
    for previous in adapter(transcript).views_before_compaction(transcript):
        if previous is not None and recorded_usage(previous.messages) is not None:
            return previous, passed
        passed += 1
    return None


def _model_before(transcript: Transcript, options: Options) -> tuple[Calibration, int] | None:
    """The model of the log before its compaction (`_before`), with the views it passed."""
    found = _before(transcript)
    if found is None or options.tokenizer == "anthropic":
        return None
    previous, passed = found
    calibration = TokenCounter(previous, replace(options, calibrate=False)).basis.calibration
    return (calibration, passed) if calibration is not None else None


def _carried(transcript: Transcript, options: Options, method: str, notes: tuple[str, ...]) -> Basis:
    """A compacted log with no response since its compaction: the model fitted on the log before
    it (or the overhead its last usage showed) still holds (the system prompt and tools the agent
    sends, which the log never shows, did not change), so that a log counts as much read back as
    `compact` reported."""
    found = _before(transcript)
    if found is None:
        return Basis(method, notes=notes)
    previous, passed = found
    exact = options.tokenizer == "anthropic"  # (the fit is on characters: no request for the log before)
    basis = TokenCounter(previous, replace(options, calibrate=False, tokenizer="chars" if exact else options.tokenizer)).basis
    if basis.calibration is not None:  # the fit --calibrate shows: no note that there is none
        behind = basis.behind + passed + 1
        fitted = basis.method.removesuffix(_behind(basis.behind))
        return Basis(fitted + _behind(behind), calibration=basis.calibration, behind=behind)
    if exact:
        return Basis(method, notes=notes)
    # A negative overhead is not carried: it stood for old content the agent left out of what it
    # sent, which the compaction has replaced; nor, past a view that recorded none, a zero one.
    if basis.overhead < 0 or (passed and not basis.overhead):
        return Basis(method, notes=notes)
    return Basis(f"{method} + the overhead the usage recorded before the compaction showed ({basis.overhead:,})",
                 overhead=basis.overhead, notes=notes)


def _behind(compactions: int) -> str:
    """How far back a carried fit was made, in words."""
    return f", before {_compactions(compactions)}" if compactions else ""


def _compactions(count: int) -> str:
    return "the compaction" if count == 1 else f"{count} compactions"


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
        # Each message's own tally: the first transcript counted keeps its list (the input, which
        # estimate alone counts: a memo of its tens of thousands of messages would weigh as much
        # again); a second transcript makes it a memo by message (a rewrite shares those it kept).
        self._first: tuple[Transcript, list[_Tally | None]] | None = None
        self._tallied: dict[int, tuple[Message, _Tally]] | None = None
        self._counted: dict[int, tuple[Transcript, _Counted]] = {}
        self._exact: dict[int, tuple[Transcript, Any]] = {}
        self._recorded: dict[int, tuple[Transcript, Recorded | None]] = {}
        self._as_sent: dict[int, tuple[Transcript, Mapping[int, tuple[Block, ...]]]] = {}
        self._unrecorded: dict[int, tuple[Transcript, frozenset[int]]] = {}
        system, tools, tallies = self.tallies(transcript)
        counted = _by_estimator(system, tools, tallies, self.ratio)
        prompts = recorded_prompts(transcript.messages)  # read once, for the last usage and the fit alike
        recorded = _once(self._recorded, transcript, lambda t: recorded_usage(t.messages, prompts))
        self.basis = _basis(transcript, options, method, system, tools, tallies, counted, prompts, recorded,
                            lambda: self.unrecorded(transcript))
        self.factor = 1.0  # the input's exact count over its chars estimate (--tokenizer anthropic)
        if options.tokenizer == "anthropic":
            self.factor = self.exact(transcript).tokens / max(1, sum(counted.by_kind.values()))
        if self.basis.calibration is None or options.tokenizer == "anthropic":  # the input's own breakdown is already made: keep it
            self._counted[id(transcript)] = (transcript, self._on_scale(counted, transcript))

    def tallies(self, transcript: Transcript) -> tuple[_Tally, _Tally, list[_Tally | None]]:
        """(system prompt, tool schemas, each message as its agent sends it: `blocks_as_sent`); None
        for a message the API ignores."""
        system = _tally(transcript.system, self.measure)
        tools = _Tally(units=(("tool_schemas", sum(self.measure(tool_schema_text(t)) for t in transcript.tools)),))
        messages = transcript.messages
        start = server_compaction(messages)
        each = self._each(transcript, 0 if start is None else start[0] + 1)
        if start is None:
            tallies = list(each)
        else:
            index, position = start
            tallies = [None] * index + [_tally(messages[index].blocks[position:], self.measure)] + each[index + 1:]
        for index, blocks in _once(self._as_sent, transcript, adapter(transcript).blocks_as_sent).items():
            if tallies[index] is not None:
                tallies[index] = _tally(blocks, self.measure)
        return system, tools, tallies

    def _each(self, transcript: Transcript, skip: int) -> list[_Tally | None]:
        """The own tally of each message of `transcript` from `skip` on (None before it)."""
        if self._tallied is None:
            if self._first is None:
                self._first = transcript, [None] * skip + [self._tally(m) for m in transcript.messages[skip:]]
            first, each = self._first
            if transcript is first:
                return each
            self._tallied = {id(m): (m, tally) for m, tally in zip(first.messages, each) if tally is not None}
            self._first = None
        return [None] * skip + [_once(self._tallied, m, self._tally) for m in transcript.messages[skip:]]

    def _tally(self, message: Message) -> _Tally:
        view = message.view
        return _tally_of_view(view) if view is not None and self.measure is len else _tally(message.blocks, self.measure)

    def counted(self, transcript: Transcript) -> _Counted:
        """The breakdown on the input's scale (no request: anthropic counts are scaled), made once
        per transcript: prune's report, the cut and compact's checks ask for the same one."""
        return _once(self._counted, transcript, self._count)

    def _count(self, transcript: Transcript) -> _Counted:
        system, tools, tallies = self.tallies(transcript)
        if self.basis.calibration is not None and self.options.tokenizer != "anthropic":
            anchor = self.recorded(transcript)
            left_out = self.unrecorded(transcript) if anchor is not None else frozenset()
            return _by_fit(system, tools, tallies, self.basis.calibration, self.ratio, anchor, left_out)
        return self._on_scale(_by_estimator(system, tools, tallies, self.ratio), transcript)

    def prompts(self, transcript: Transcript) -> list[int] | None:
        """The prompt each message of `transcript` is sent after, by this run's model: the fitted
        overhead + ratio × the content before it + the frame × its blocks, plus the figures there:
        what a rewrite restates the usage of a response it moved by, so that the output's usage
        lies on the model it was counted with (`Format.append_compaction`). What no usage counted
        (`unrecorded_messages`) is left out of it, as of the samples the model is fitted on: a
        count adds it on top. Anchored (one response, or no fit believed), the anchor's count
        (`_anchored_prompts`). None with neither, with an anchor that showed a negative overhead,
        or with `--tokenizer anthropic`: the rewrite restates none."""
        fit = self.basis.calibration
        if self.options.tokenizer == "anthropic":
            return None
        left_out = self.unrecorded(transcript)
        if fit is None:
            # (A negative overhead stood for old content the agent left out of what it sent, which
            # the rewrite may have taken out too: not restated by.)
            anchored = self.basis.anchor is not None and self.basis.overhead >= 0
            return self._anchored_prompts(transcript, left_out) if anchored else None
        system, tools, tallies = self.tallies(transcript)
        units, blocks, fixed = _units(system) + _units(tools), 0, _fixed(system)
        out = []
        for index, tally in enumerate(tallies):
            out.append(round(fit.overhead + fit.ratio * units + fit.frame * blocks) + fixed)
            if tally is not None and index not in left_out:
                units += _units(tally)
                blocks += tally.blocks
                fixed += _fixed(tally)
        return out

    def _anchored_prompts(self, transcript: Transcript, left_out: frozenset[int]) -> list[int]:
        """`prompts` by an anchor: the estimate of what comes before each message, with the hidden
        overhead its recorded usage showed (what the anchor counts the prompt it covered by)."""
        counted = self.counted(transcript)
        out, running = [], counted.head
        for index, tokens in enumerate(counted.messages):
            out.append(running)
            if index not in left_out:
                running += tokens
        return out

    def _on_scale(self, counted: _Counted, transcript: Transcript) -> _Counted:
        """A content estimate of `transcript` put on the input's scale: its hidden overhead, its
        exact count's factor and the fitted overhead (which count_tokens, exact for the content
        only, adds to it)."""
        overhead = self.basis.overhead
        if overhead:
            counted = _with_overhead(counted, overhead, self._read(transcript, counted) if overhead < 0 else 0)
        if self.options.tokenizer != "anthropic":
            return counted
        return _with_overhead(apportioned(counted, round(sum(counted.by_kind.values()) * self.factor)), self.fixed, 0)

    def _read(self, transcript: Transcript, counted: _Counted) -> int:
        """What the API read of `transcript`'s input by its own newest usage (`_with_overhead`): the
        prompt that recorded, and the estimate of what it did not count (the messages after it,
        those it left out); its content where it records none. Of the input, its content plus the
        overhead; of a rewrite of it, what is left of those, so that it counts as its output
        reads back (a rewrite restates none of that usage: `restating_ratio`)."""
        content = sum(counted.by_kind.values())
        recorded = self.recorded(transcript)
        if recorded is None:
            return content
        return recorded.context + content - _covered(counted, recorded, self.unrecorded(transcript))

    @property
    def tokens_per_char(self) -> float:
        """What a character of content costs on this run's scale: to turn tokens into characters to
        cut, and what a rewrite restates the usage its responses recorded by, per character it took
        out (`Transcript.tokens_per_char`): the fit's ratio on characters, else the estimator's."""
        fit = self.basis.calibration
        if fit is not None and self.options.tokenizer != "anthropic":
            return fit.per_char
        return self.options.ratio * self.factor  # (tiktoken: the estimator's, for want of a ratio per character)

    @property
    def restating_ratio(self) -> float:
        """What a rewrite restates the usage its responses recorded by, per character it took out of
        their prompts (`Transcript.tokens_per_char`): `tokens_per_char`, or 0, none restated, where
        the count rests on an anchor that showed a negative overhead. That stood for old content
        the agent left out of what it sent, which the rewrite may have taken out too (as `prompts`
        says): restated by it, a response's usage would fall to its output, no longer read as
        usage, and the output would count from an older anchor, not as the rewrite reported."""
        if self.basis.calibration is None and self.basis.anchor is not None and self.basis.overhead < 0:
            return 0.0
        return self.tokens_per_char

    @property
    def restating_frame(self) -> float:
        """What a rewrite restates recorded usage by per block it took out of their prompts, besides
        their characters (`Transcript.tokens_per_block`): the fit's frame where the count rests on
        one and usage is restated, else 0 (the ratio counts the frames with the characters)."""
        fit = self.basis.calibration
        if fit is None or self.options.tokenizer == "anthropic" or not self.restating_ratio:
            return 0.0
        return fit.frame

    @property
    def fixed(self) -> int:
        """The fitted overhead: what every count adds for what the transcript does not show."""
        return round(self.basis.calibration.overhead) if self.basis.calibration is not None else 0

    def breakdown(self, transcript: Transcript) -> _Counted:
        """The breakdown a report states: with `--tokenizer anthropic`, the exact count (a request)
        apportioned by the chars estimate, plus the fitted overhead; else `counted`."""
        if self.options.tokenizer != "anthropic":
            return self.counted(transcript)
        system, tools, tallies = self.tallies(transcript)
        return _with_overhead(apportioned(_by_estimator(system, tools, tallies, self.ratio), self.exact(transcript).tokens),
                              self.fixed, 0)

    def unrecorded(self, transcript: Transcript) -> frozenset[int]:
        """The messages no recorded usage counted, though the agent sends them (`Format.unrecorded_messages`), looked for once."""
        return _once(self._unrecorded, transcript, lambda t: adapter(t).unrecorded_messages(t))

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
            fixed = f" + the fitted overhead {self.fixed:,}" if self.basis.calibration is not None else ""
            return f"Anthropic count_tokens of the input and of the output{fixed}; the counts between scaled from the input's"
        return self.basis.method

    def reported(self, transcript: Transcript) -> int:
        """The total a report states: exact with `--tokenizer anthropic` (a request, plus the fitted
        overhead), else `tokens`."""
        return self.exact(transcript).tokens + self.fixed if self.options.tokenizer == "anthropic" else self.tokens(transcript)
