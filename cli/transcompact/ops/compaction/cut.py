"""Where old history ends and the verbatim recent window begins (the spec's `find_cut_point`: docs/design.md §7).

Walk back from the end, adding up each message's tokens, until the recent part holds
`keep_recent_tokens` (and at least `keep_recent_messages` messages); then cut at the boundary at
or before that point, so that the recent part is never smaller than asked. A boundary is a user message that starts a turn: never a
tool-result message, so a tool call and its result (an Anthropic pair, an OpenAI `tool_calls`
run, a Claude Code response's lines, which are one message) always stay on one side.

When the turn holding that point is on its own bigger than the window (one long agentic loop,
usually the last turn), cutting at its start would keep far more than asked, or cut nothing at
all. The cut then falls inside the turn, before an assistant message that follows a complete
tool round: a split turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core import settings
from ...core.errors import refuse_negative
from ...core.model import ASSISTANT, USER, Message, Transcript
from ...counting.counter import Options, TokenCounter
from ...formats import adapter


@dataclass(frozen=True)
class Cut:
    index: int  # the first recent message; 0 when everything fits (nothing is old)
    messages: int
    old_tokens: int
    recent_tokens: int
    split_turn: bool  # the cut falls inside a turn, before an assistant message
    turn_start: int  # the user message that opened the turn the cut falls in (the index itself when not split)
    uuid: str | None = None  # the id of the first recent line, in a log whose lines have one (Claude Code: its uuid)

    @property
    def old_messages(self) -> int:
        return self.index

    @property
    def recent_messages(self) -> int:
        return self.messages - self.index

    def as_dict(self) -> dict:
        out: dict[str, object] = {
            "index": self.index, "messages": self.messages, "old_messages": self.old_messages,
            "recent_messages": self.recent_messages, "old_tokens": self.old_tokens, "recent_tokens": self.recent_tokens,
            "split_turn": self.split_turn, "turn_start": self.turn_start,
        }
        if self.uuid is not None:
            out["uuid"] = self.uuid
        return out


def starts_turn(message: Message) -> bool:
    return message.role == USER and not message.is_tool_result_message


def after_complete_round(messages: tuple[Message, ...], index: int) -> bool:
    """An assistant message whose previous message answers every call of the assistant message before it.

    In OpenAI a round is the assistant message and its whole run of tool messages.
    """
    if messages[index].role != ASSISTANT or index < 2 or not messages[index - 1].is_tool_result_message:
        return False
    start = index - 1
    while start > 0 and messages[start - 1].is_tool_result_message:
        start -= 1
    caller = messages[start - 1] if start > 0 else None
    if caller is None or caller.role != ASSISTANT or not (calls := caller.call_ids):
        return False
    answered = {call_id for m in messages[start:index] for call_id in m.answered_ids}
    return all(call_id in answered for call_id in calls)


def find_cut_point(transcript: Transcript, keep_recent_tokens: int = settings.KEEP_RECENT_TOKENS,
                   options: Options = Options(), counter: TokenCounter | None = None,
                   keep_recent_messages: int = settings.KEEP_RECENT_MESSAGES) -> Cut:
    """The cut, counting with `counter` (a run's), else with `options` (any tokenizer of `estimate`):
    the recent part holds at least `keep_recent_tokens` and at least `keep_recent_messages` messages."""
    refuse_negative(keep_recent_tokens=keep_recent_tokens, keep_recent_messages=keep_recent_messages)
    messages = transcript.messages
    tokens = (counter or TokenCounter(transcript, options)).per_message(transcript)
    total = sum(tokens)
    cut, split, turn_start = _walk(messages, tokens, keep_recent_tokens, keep_recent_messages)
    recent = sum(tokens[cut:])
    return Cut(cut, len(messages), total - recent, recent, split, turn_start, _line_id(transcript, cut) if cut else None)


def window_cut(transcript: Transcript, keep_recent_tokens: int, tokens: list[int], first: int = 0,
               keep_recent_messages: int = settings.KEEP_RECENT_MESSAGES) -> Cut:
    """The cut whose recent window is the largest that holds at most `keep_recent_tokens`, and
    at least `keep_recent_messages` messages.

    Where `find_cut_point` keeps at least the window asked for, compact keeps at most that: the
    window is part of the budget. A cut falls where `find_cut_point` may cut (a turn's start, or
    after a complete tool round), never before `first` (what the format keeps first); when even
    the smallest such window is bigger, that one (the caller trims it), and when there is no such
    place at all, `first`: nothing is old.
    """
    messages = transcript.messages
    total, everything = sum(tokens), sum(tokens[first:])
    nothing_old = Cut(first, len(messages), total - everything, everything, False, first)
    if everything <= keep_recent_tokens:
        return nothing_old
    recent = 0
    best = None
    latest = len(messages) - keep_recent_messages  # the latest cut that leaves that many messages recent
    for index in range(len(messages) - 1, first, -1):
        recent += tokens[index]
        if index <= latest and (starts_turn(messages[index]) or after_complete_round(messages, index)):
            if best is None or recent <= keep_recent_tokens:
                best = (index, recent)
            if recent > keep_recent_tokens:
                break
    if best is None:
        return nothing_old
    index, recent = best
    turn_start = next((j for j in range(index, -1, -1) if starts_turn(messages[j])), index)
    return Cut(index, len(messages), total - recent, recent, turn_start != index, turn_start, _line_id(transcript, index))


def _line_id(transcript: Transcript, index: int) -> str | None:
    """The id of the line the window starts at, in a log whose lines have one (its format's `line_id`)."""
    if index >= len(transcript.messages):
        return None
    found = adapter(transcript).line_id(transcript.messages[index].record)  # an unread message: what its view kept of its line
    return found if isinstance(found, str) else None


def _walk(messages: tuple[Message, ...], tokens: list[int], keep: int, keep_messages: int) -> tuple[int, bool, int]:
    accumulated = 0
    point = None
    for i in range(len(messages) - 1, -1, -1):
        accumulated += tokens[i]
        if accumulated >= keep and len(messages) - i >= keep_messages:
            point = i
            break
    if point is None or point == 0:
        return 0, False, 0  # everything fits
    boundary = next((j for j in range(point, -1, -1) if starts_turn(messages[j])), 0)
    turn_end = next((j for j in range(point + 1, len(messages)) if starts_turn(messages[j])), len(messages))
    if sum(tokens[boundary:turn_end]) > keep:  # the turn alone is bigger than the window: split it
        split = next((k for k in range(point, boundary, -1) if after_complete_round(messages, k)), None)
        if split is not None:
            return split, True, boundary
    return boundary, False, boundary
