"""OpenHands' part of `compact`: a `Condensation` appended the way the agent's condenser writes one."""

from __future__ import annotations

from ...core.errors import ShapeError
from ...core.jsondata import Parsed
from ...core.model import Message, Transcript
from .._log import Prompts
from .reader import ACTION, OBSERVATIONS, SYSTEM_PROMPT, Entry, StoreSource, _Origin, read
from .writer import appended, condensation, rewritten_records


def append_compaction(transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                      *, drop_history: bool = False, prompts: Prompts | None = None) -> Transcript:
    """What the agent's `LLMSummarizingCondenser` writes, read back as a transcript: the next
    event, a `Condensation` that forgets every event of the view before the recent window but the
    system prompt, with the summary and `summary_offset` (where the window now starts, after the
    system prompt). No earlier event is rewritten but the window's own that compact trimmed.

    The window starts where the agent may cut a view (`manipulation_indices`): never inside the
    calls of one LLM response, between a call and its observation, or inside a tool loop; a
    window that would is widened back to where it may. `drop_history` has nothing to drop: the
    forgotten events stay in the log, as the agent keeps them.
    """
    source: StoreSource = transcript.source
    messages = transcript.messages
    first = len(messages) - len(recent)  # the window is the transcript's end (prune keeps indices)
    if any(not isinstance(m.origin, _Origin) for m in recent):
        raise ShapeError("compact can only keep messages read from this OpenHands conversation")
    start = min((m.origin.entries[0] for m in recent), default=len(source.view))
    start = max(k for k in cut_points(source.view) if k <= start)
    before = source.view[:start]
    forgotten = [e.id for e in before if e.kind != SYSTEM_PROMPT]
    if not forgotten:  # all before the window is one unit the agent may not cut: a summary would only add
        return transcript
    offset = sum(e.kind == SYSTEM_PROMPT for e in before)
    # The window as compact left it (results trimmed, thinking dropped) is written into its events.
    records, _ = rewritten_records(transcript.with_messages([*messages[:first], *recent]))
    records = appended(records, source, condensation(records, source, forgotten, summary, offset))
    return read(Parsed(transcript.name, b"", records=records, bom=source.bom))


def cut_points(view: tuple[Entry, ...]) -> list[int]:
    """The positions a condensation may forget up to (`View.manipulation_indices`): every boundary
    that splits no batch, no call from its observation and no tool loop (0 always is one)."""
    allowed = set(range(len(view) + 1))
    pending: set = set()
    in_loop = False
    for k, entry in enumerate(view):
        if entry.kind == ACTION and k > 0 and view[k - 1].kind == ACTION \
                and view[k - 1].value.get("llm_response_id") == entry.value.get("llm_response_id"):
            allowed.discard(k)
        if entry.kind == ACTION:
            pending.add(entry.value.get("tool_call_id"))
        elif entry.kind in OBSERVATIONS:
            pending.discard(entry.value.get("tool_call_id"))
        if pending:
            allowed.discard(k + 1)
        if entry.kind == ACTION and entry.value.get("thinking_blocks"):
            in_loop = True
        elif entry.kind == ACTION or entry.kind in OBSERVATIONS:
            if in_loop:
                allowed.discard(k)
        else:
            in_loop = False
    return sorted(allowed)
