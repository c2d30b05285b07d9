"""What of a pi session pi never sends when it resumes it (`slim`), found in pi 0.73.1
(`buildSessionContext`, core/session-manager.js) and judged by it (tests/test_pi_resume.py: the
request from the slimmed session is the request from the original).

pi's leaf is the file's last entry; it sends the path from the root to it, and with a compaction
on the path only that compaction's summary, the entries from its first kept entry on, and those
after it. Kept: the header, that part of the path, the last thinking-level and model changes
before it and the entry that last set the model (pi restores both), the last session name
(`session_info`), the labels of kept entries; each entry's parent becomes its nearest kept
ancestor. Dropped: the entries before the first kept one (their summary stands for them) and
branches the path does not take. A file of version 1 or 2 is left as it is: pi migrates (and
rewrites) it when it loads it.
"""

from __future__ import annotations

from typing import Any

from ...core.jsondata import dumps
from ...core.model import Transcript
from .._log import Slimming, string_or_none, surviving_parent
from .reader import SessionSource

SETTINGS = ("thinking_level_change", "model_change")
FIELDS = {"parentId": "links past dropped entries"}


def slimming(transcript: Transcript) -> Slimming:
    source: SessionSource = transcript.source
    records, path = source.records, source.path
    values = [value for _, value in records]
    if source.version < 3 or not path or not all(isinstance(values[i], dict) and isinstance(values[i].get("id"), str)
                                                  for i in path):
        return Slimming()
    compaction = max((k for k, i in enumerate(path) if values[i].get("type") == "compaction"), default=None)
    cut = 0
    if compaction is not None:
        first = values[path[compaction]].get("firstKeptEntryId")
        cut = next((k for k in range(compaction) if values[path[k]].get("id") == first), compaction)
    kept = set(path[cut:])
    for kind in SETTINGS:  # what pi restores: the last change before the kept part
        kept.update([i for i in path[:cut] if values[i].get("type") == kind][-1:])
    setter = next((i for i in reversed(path) if values[i].get("type") == "model_change" or _role(values[i]) == "assistant"), None)
    if setter is not None:
        kept.add(setter)
    named = [i for i, value in enumerate(values) if isinstance(value, dict) and value.get("type") == "session_info"]
    kept.update(named[-1:])
    kept_ids = {values[i]["id"] for i in kept if isinstance(values[i].get("id"), str)}
    on_path = set(path)
    labels = [index for index in on_path if values[index].get("type") == "label"
              and string_or_none(values[index].get("targetId")) in kept_ids]
    kept.update(labels)
    kept_ids.update(values[index]["id"] for index in labels)  # an entry on the path has its id (checked above)
    dropped: dict[int, str] = {}
    for index, value in enumerate(values):
        if index == 0 or index in kept or not isinstance(value, dict) or "id" not in value:
            continue
        dropped[index] = ("the entries before the compaction's first kept one (scroll-back)" if index in on_path
                          else "branches the session does not take")
    # A dropped entry's children hang from its nearest kept ancestor (not where a kept one has its id: a copy).
    skip = {values[i]["id"]: values[i].get("parentId") for i in dropped
            if isinstance(values[i]["id"], str) and values[i]["id"] not in kept_ids}
    edits: dict[int, dict[str, bytes | None]] = {}
    for index in kept:
        parent = values[index].get("parentId")
        if (new := surviving_parent(parent, skip)) != parent:
            edits[index] = {"parentId": dumps(new, indent=False)}
    return Slimming(dropped, edits, FIELDS)



def _role(value: Any) -> Any:
    message = value.get("message") if isinstance(value, dict) and value.get("type") == "message" else None
    return message.get("role") if isinstance(message, dict) else None
