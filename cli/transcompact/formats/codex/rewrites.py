"""Codex's part of `compact`: a compaction appended the way Codex writes its own (core compact.rs),
and the context Codex puts in user messages told apart from what the user wrote."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from ...core.jsondata import BLANK, Record, dumps
from ...core.model import USER, Message, Text, Transcript
from ...core.summary_text import SUMMARY_PREFIX, SummaryText, compose, parse
from .._log import Prompts
from .parsing import whole_value
from .reader import (
    CODEX_SUMMARY_PREFIX,
    CONTEXT_PREFIXES,
    RolloutSource,
    active_items,
    line_usage,
    rollout,
    session_meta,
    user_item,
)
from .writer import _with_usage, message_items

# The lines a resumed session needs when the history before the compaction is dropped.
SESSION_LINES = frozenset({"session_meta", "turn_context"})
ENVIRONMENT_OPEN, ENVIRONMENT_CLOSE = "<environment_context>", "</environment_context>"
_ELEMENT = re.compile(r"<([A-Za-z_][\w-]*)>(.*?)</\1>", re.S)


def injected_context(message: Message) -> tuple[tuple[str, str], ...] | None:
    """What a user message Codex wrote itself says: the fields of `<environment_context>` (cwd,
    shell, sandbox …) as (name, value), in its order; nothing for the other context it injects
    (AGENTS.md and user instructions, an aborted turn's note), which is no request of the user's
    and no setting either. None for a message the user typed."""
    text = "".join(b.text for b in message.blocks if isinstance(b, Text)).lstrip()
    if message.role != USER or not text.startswith(CONTEXT_PREFIXES):
        return None
    if not text.startswith(ENVIRONMENT_OPEN):
        return ()
    body = text[len(ENVIRONMENT_OPEN):].split(ENVIRONMENT_CLOSE, 1)[0]
    return tuple((name, _element_value(value)) for name, value in _ELEMENT.findall(body))


def _element_value(value: str) -> str:
    """An element's text on one line; a list (`<writable_roots><root>…`) as its items, comma-separated."""
    items = _ELEMENT.findall(value)
    return ", ".join(_element_value(v) for _, v in items) if items else " ".join(value.split())


def views_before_compaction(transcript: Transcript) -> Iterator[Transcript | None]:
    """`Format.views_before_compaction`: the rollout as Codex read it before each `compacted` line,
    the newest first (its recorded usage measured the instructions and tools, which a compaction
    does not change); a view whose active items hold no response a usage line counted records
    none, which its items say without its messages being made (None)."""
    source: RolloutSource = transcript.source
    records = source.records
    for at in range(len(records) - 1, 0, -1):
        value = records[at][1]
        if not (isinstance(value, dict) and value.get("type") == "compacted"):
            continue
        items, counted = active_items([*source.inherited, *records[:at]], -len(source.inherited))
        active = {(item.record, item.slot) for item in items}
        if any((response.record, response.slot) in active for response in counted.values()):
            yield rollout(records[:at], transcript.name, source.bom, source.inherited)
        else:
            yield None


def append_compaction(transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                      *, drop_history: bool = False, prompts: Prompts | None = None) -> Transcript:
    """After the original lines, what Codex writes when it compacts, then the recent window; read
    back as a transcript.

    The `compacted` line's `replacement_history` is Codex's own (compact.rs
    `build_compacted_history`, `insert_initial_context_before_last_real_user_or_summary`): the
    user's messages (the words the summary keeps, oldest first) with the context Codex injected
    (developer messages, `<environment_context>` …) before the last of them, then the summary as a
    user message after Codex's prefix, also in `message`; no acknowledgement, no tool item. It
    carries the context window's number and ids where the rollout keeps them. Then the
    `context_compacted` event, the world state and turn context the history stands on (so that
    Codex does not inject its context again), and the recent window's items as `response_item`
    lines, as they are now. A paginated rollout's new lines continue its ordinals.

    `drop_history` keeps only the session's metadata lines before them, in a legacy rollout; a
    paginated one keeps its lines here (its ordinals run on from them), and `slim` then drops what
    Codex does not read and numbers the rest again.

    With `prompts` (the model compact counted with), each response of the window that recorded
    usage is followed by its usage line again, its prompt restated as that model counts the prompt
    it now follows (the summary and the window before it), the rest as it was: Codex resumes with
    the last one as the size of its context (the one before the compaction counted the history it
    replaced), and `estimate` of the output, with or without the lines before the compaction
    (`--slim`), says what compact reported.
    """
    source: RolloutSource = transcript.source
    first = len(transcript.messages) - len(recent)  # the window is the transcript's end (prune keeps indices)
    parts = parse(summary)
    text = CODEX_SUMMARY_PREFIX + "\n" + compose(SummaryText(parts.body, (), parts.opening)).removeprefix(SUMMARY_PREFIX)
    users = [user_item(words) for words in reversed(parts.words)]
    history = [*users[:-1], *_context_items(transcript.messages[:first], source), *users[-1:], user_item(text)]
    usage_lines = _usage_lines(source) if prompts is not None else {}
    window: list[dict[str, Any]] = []  # the lines of the window, as `response_item`s and usage lines
    for message in recent:
        items = message_items(message, source.items)
        window += [{"type": "response_item", "payload": item} for _, item in items]
        line = max((usage_lines[i] for i, _ in items if i in usage_lines), default=None)
        if line is not None:
            window.append(source.records[line][1])
    records = list(source.records)  # an append-only log: every line before ours stays, blank ones too
    while records and records[-1][1] is BLANK:  # but the end: the new lines follow the last
        records.pop()
    if drop_history and not source.paginated:
        records = [r for r in records if isinstance(r[1], dict) and r[1].get("type") in SESSION_LINES]
    every = [*source.inherited, *source.records]  # what the history stands on: a fork's parents' lines too
    window_fields = _next_window(session_meta(source.records), every, text)
    new: list[dict[str, Any]] = [
        {"type": "compacted", "payload": {"message": text, "replacement_history": history, **window_fields}},
        {"type": "event_msg", "payload": {"type": "context_compacted"}},
    ]
    state = _world_state(every)
    if state is not None:
        new.append({"type": "world_state", "payload": {"full": True, "state": state}})
    context = next((whole_value(r)["payload"] for r in reversed(every) if isinstance(r[1], dict) and r[1].get("type") == "turn_context"),
                   None)
    if context is not None:
        new.append({"type": "turn_context", "payload": context})
    new += [{key: value for key, value in line.items() if key not in ("timestamp", "ordinal")} for line in window]
    stamp = next((v["timestamp"] for _, v in reversed(records) if isinstance(v, dict) and "timestamp" in v), None)
    ordinal = next((v["ordinal"] for _, v in reversed(records) if isinstance(v, dict) and isinstance(v.get("ordinal"), int)), -1)
    lines = []
    for number, value in enumerate(new, ordinal + 1):
        # Codex's layout: timestamp, ordinal, type, payload.
        value = {**({"timestamp": stamp} if stamp is not None else {}),
                 **({"ordinal": number} if source.paginated else {}), **value}
        # The new lines are read back from these values: only they are serialised, nothing is parsed again.
        lines.append((dumps(value, indent=False), value))
    compacted = rollout([*records, *lines, (b"", BLANK)], transcript.name, source.bom, source.inherited)
    if not usage_lines or prompts is None or (now := prompts(compacted)) is None:
        return compacted
    restated = _restated(compacted, now, range(len(records), len(records) + len(lines)))
    if not restated:
        return compacted
    for record, value in restated.items():
        lines[record - len(records)] = (dumps(value, indent=False), value)
    return rollout([*records, *lines, (b"", BLANK)], transcript.name, source.bom, source.inherited)


def _usage_lines(source: RolloutSource) -> dict[int, int]:
    """Each item of the active history a usage line counted the response of, with the last such line."""
    _, counted = active_items([*source.inherited, *source.records], -len(source.inherited))
    position = {(item.record, item.slot): i for i, item in enumerate(source.items)}
    out: dict[int, int] = {}
    for record, item in counted.items():
        at = position.get((item.record, item.slot))
        if at is not None and record >= 0:
            out[at] = max(out.get(at, record), record)
    return out


def _restated(compacted: Transcript, prompts: list[int], new: range) -> dict[int, dict]:
    """The usage lines among the `new` ones, each with its prompt restated to the one `prompts`
    gives the message of the response it counts."""
    source: RolloutSource = compacted.source
    _, counted = active_items([*source.inherited, *source.records], -len(source.inherited))
    position = {(item.record, item.slot): i for i, item in enumerate(source.items)}
    message_of = {i: k for k, message in enumerate(compacted.messages) for i in message.origin.items}
    out = {}
    for record, item in counted.items():
        k = message_of.get(position.get((item.record, item.slot), -1))
        usage = line_usage(source.records[record][1]) if record in new else None
        if k is not None and usage is not None and isinstance(usage.get("input_tokens"), int):
            out[record] = _with_usage(source.records[record][1], usage["input_tokens"] - prompts[k])
    return out


def _context_items(messages: tuple[Message, ...], source: RolloutSource) -> list[dict]:
    """The items of the context Codex injected in `messages` (developer messages, and the user
    messages `injected_context` tells apart), each text once."""
    out, seen = [], set()
    for message in messages:
        if message.role != "developer" and injected_context(message) is None:
            continue
        for _, item in message_items(message, source.items):
            key = dumps(item, indent=False)
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def _next_window(meta: dict, records: list[Record], summary: str) -> dict[str, Any]:
    """The new context window's number and ids as Codex writes them on a `compacted` line (the one
    after the newest such line's, else after the session's first window), none when the rollout
    keeps no window. The new id is a UUIDv7 of the last line's time, its random bits the summary's hash."""
    window = meta.get("context_window")
    first = current = window.get("window_id") if isinstance(window, dict) else None
    number = 0
    for _, value in records:
        payload = value.get("payload") if isinstance(value, dict) and value.get("type") == "compacted" else None
        if isinstance(payload, dict) and isinstance(payload.get("window_number"), int):
            number, current = payload["window_number"], payload.get("window_id")
            first = payload.get("first_window_id", first)
    if not isinstance(current, str) and number == 0:
        return {}
    stamp = next((v["timestamp"] for _, v in reversed(records) if isinstance(v, dict) and isinstance(v.get("timestamp"), str)), "")
    ids = {"first_window_id": first if isinstance(first, str) else current, "previous_window_id": current,
           "window_id": _uuid7(stamp, f"{meta.get('id')}:{number + 1}:{summary}".encode())}
    return {"window_number": number + 1, **{key: value for key, value in ids.items() if isinstance(value, str)}}


def _uuid7(stamp: str, seed: bytes) -> str:
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        milliseconds = int((moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp() * 1000)
    except (ValueError, OverflowError):
        milliseconds = 0
    bits = int.from_bytes(hashlib.sha256(seed).digest()[:10], "big")
    value = ((milliseconds & (1 << 48) - 1) << 80 | 7 << 76 | (bits >> 68 & 0xFFF) << 64
             | 2 << 62 | bits & (1 << 62) - 1)
    return str(uuid.UUID(int=value))


def _world_state(records: list[Record]) -> dict | None:
    """The world state the rollout ends in, as Codex rebuilds it (rollout_reconstruction.rs): from
    the newest full snapshot since the last compaction, each patch after it merged in (RFC 7386)."""
    state = None
    for record in records:
        value = record[1]
        kind = value.get("type") if isinstance(value, dict) else None
        if kind == "world_state":
            value = whole_value(record)  # (its payload as the trim kept it: whether it is full)
        payload = value.get("payload") if kind else None
        if kind == "compacted":
            state = None
        elif kind == "world_state" and isinstance(payload, dict) and isinstance(payload.get("state"), dict):
            state = payload["state"] if payload.get("full") is True else (
                _merged(state, payload["state"]) if state is not None else None)
    return state


def _merged(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merged(out.get(key), value)
    return out
