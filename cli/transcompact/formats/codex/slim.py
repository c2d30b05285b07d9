"""What of a Codex rollout `codex resume` never sends (`slim`), found in Codex's source near 0.171
(`rollout_reconstruction.rs`, the thread store's context scan) and judged by Codex 0.171.0
(tests/test_codex_resume.py: the request from the slimmed rollout is the request from the original).

Codex rebuilds its history from the newest `compacted` line that carries a replacement history
and what follows it; before it, nothing is read, but for a compaction of the older kind (no
window number or resume metadata), after which Codex scans back to the start for the settings of
the turn before (the last `turn_context`, the turns' markers, the user's messages). After it,
every response item is sent, but ghost snapshots. Kept besides: the first line (`session_meta`),
the turns' markers (started, complete, aborted, rolled back, the user's message), the last of each
record Codex restores state from (turn context, token counts, the thread's name and goal; the
token count wherever it is, before the compaction too: Codex restores its context's size from the
newest that has its `info`, `last_token_info_from_rollout`), the world state from its last full
record, every line of a type transcompact does not know. Dropped:
the history before the compaction, the `event_msg` copies of the items (what the UI replays), ghost
snapshots, copies of the session record, and settings and counts a later line replaced. A
paginated rollout's ordinals are numbered again in order (Codex's index of it by byte offset is
reset when it is rewritten in place: thread_store.py).
"""

from __future__ import annotations

from typing import Any

from ...core.model import Transcript
from .._log import Slimming
from .reader import RolloutSource

TURN_EVENTS = frozenset({"task_started", "task_complete", "turn_aborted", "thread_rolled_back", "user_message"})
# State restored from the last of each, wherever it is: a token count's only with its `info`
# (`last_token_info_from_rollout` passes over one without).
LAST_EVENTS = frozenset({"thread_name_updated", "thread_goal_updated", "token_count"})
HISTORY = "the history before the last compaction (scroll-back)"
COPIES = "event copies of the items (what the UI replays)"
REPLACED = "settings and counts a later line replaced"
FIELDS = {"ordinal": "ordinals numbered again"}


def slimming(transcript: Transcript) -> Slimming:
    source: RolloutSource = transcript.source
    values = [value for _, value in source.records]
    if not values or _kind(values[0]) != "session_meta":
        return Slimming()
    start = next((i for i in range(len(values) - 1, -1, -1) if _kind(values[i]) == "compacted"
                  and isinstance(_payload(values[i]).get("replacement_history"), list)), None)
    compaction = _payload(values[start]) if start is not None else {}
    older_kind = start is not None and not (compaction.get("window_number") is not None and compaction.get("resume_metadata"))
    last: dict[str, int] = {}
    for index, value in enumerate(values):
        kind, payload, event = _kind(value), _payload(value), _event(value)
        if event in LAST_EVENTS and (event != "token_count" or isinstance(payload.get("info"), dict)):
            last[f"event:{event}"] = index
        elif kind in ("token_usage_record", "turn_context"):
            last[kind] = index
        elif kind == "world_state" and payload.get("full"):
            last["world_state"] = index
    dropped: dict[int, str] = {}
    for index in range(1, len(values)):
        why = _dropped(index, values[index], last, start or 1, older_kind)
        if why is not None:
            dropped[index] = why
    return Slimming(dropped, _renumbered(values, dropped) if source.paginated else {}, FIELDS)


def _dropped(index: int, value: Any, last: dict[str, int], start: int, older_kind: bool) -> str | None:
    """Why line `index` goes, or None: it stays."""
    kind, payload, event = _kind(value), _payload(value), _event(value)
    if event in LAST_EVENTS:  # restored, wherever it is
        return None if last.get(f"event:{event}") == index else REPLACED
    if index < start:
        if older_kind and (kind == "turn_context" and last.get(kind) == index or event in TURN_EVENTS
                           or kind == "response_item" and payload.get("type") == "message" and payload.get("role") == "user"):
            return None  # Codex scans back past an older compaction for the turn's settings
        return HISTORY
    if kind == "session_meta":
        return "copies of the session record"
    if kind == "response_item":
        return "ghost snapshots (undo points)" if payload.get("type") == "ghost_snapshot" else None
    if kind == "event_msg":
        if event in TURN_EVENTS or event == "item_completed" and _kind(payload.get("item")) == "UserMessage":
            return None
        return COPIES
    if kind in ("token_usage_record", "turn_context"):
        return None if last.get(kind) == index else REPLACED
    if kind == "world_state":
        return None if index >= last.get("world_state", -1) else REPLACED
    return None  # `compacted`, and what transcompact does not know


def _renumbered(values: list[Any], dropped: dict[int, str]) -> dict[int, dict[str, bytes | None]]:
    """A paginated rollout's lines numbered in order again, from the first line's ordinal."""
    first = values[0].get("ordinal") if isinstance(values[0].get("ordinal"), int) else 0
    edits: dict[int, dict[str, bytes | None]] = {}
    number = first
    for index, value in enumerate(values):
        if index in dropped or not isinstance(value, dict):
            continue
        if isinstance(value.get("ordinal"), int) and value["ordinal"] != number:
            edits[index] = {"ordinal": str(number).encode()}
        number += 1
    return edits


def _kind(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def _event(value: Any) -> str | None:
    """An `event_msg` line's event (a string), else None."""
    return _kind(_payload(value)) if _kind(value) == "event_msg" else None


def _payload(value: Any) -> dict:
    payload = value.get("payload") if isinstance(value, dict) else None
    return payload if isinstance(payload, dict) else {}
