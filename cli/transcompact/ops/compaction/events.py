"""Compaction events, as the designs the project came from expected them (`ContextCompacted`, the
spec's compaction hooks: docs/design.md §7): `compact_start` when a transcript's compaction begins, `compact_end` when it
is over, one JSON object each; `compact --events FILE` writes them as JSON Lines.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .compact import CompactReport


def _at(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def compaction_events(file: str, report: CompactReport, threshold: int, started: float, ended: float) -> tuple[dict, dict]:
    """The two events of one transcript's compaction; `started` and `ended` are `time.time()`s."""
    start = {"type": "compact_start", "time": _at(started), "file": file, "tokens": report.tokens_before,
             "threshold": threshold}
    end = {"type": "compact_end", "time": _at(ended), "file": file, "tokens_before": report.tokens_before,
           "tokens_after": report.tokens_after, "strategy": report.strategy, "summary_chars": report.summary_chars,
           "duration_ms": round((ended - started) * 1000)}
    return start, end


def failure_event(file: str, error: str | None, exit_code: int, at: float) -> dict[str, Any]:
    """The `compact_end` of a transcript that could not be compacted: no strategy, the error."""
    return {"type": "compact_end", "time": _at(at), "file": file, "strategy": None, "error": error, "exit": exit_code}
