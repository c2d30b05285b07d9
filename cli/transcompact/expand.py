"""Put back what `prune --archive` replaced: `expand(prune(x)) == x`.

Byte for byte for JSON Lines and Claude Code logs (the archive keeps the text of what each line
was), as equal JSON for documents (which are written again whole). The records of an archive
apply to the exact bytes their prune run wrote (`archive.py`); a transcript pruned twice gets
the second run undone first, which gives back the bytes the first run wrote, and so on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

from . import archive
from .archive import Record


@dataclass(frozen=True)
class Expansion:
    data: bytes
    restored: int  # records put back


def expand(data: bytes, records: Iterable[Record], name: str = "<stdin>") -> Expansion:
    """`data` with every prune run in `records` that wrote it undone, newest first.

    When several runs wrote the same bytes (two files pruned to the same output), the one whose
    `file` is `name` wins, else the newest.
    """
    pending = archive.runs(records)
    age = {run: position for position, run in enumerate(pending)}
    restored = 0
    while True:
        digests = _prefix_digests(data, {run.pruned_bytes for run in pending})
        matching = [run for run in pending if digests.get(run.pruned_bytes) == run.pruned_sha256]
        if not matching:
            return Expansion(data, restored)
        run = max(matching, key=lambda r: (r.file == name, age[r]))
        records_of_run = pending.pop(run)
        data = archive.undo(data, records_of_run, name)
        restored += len(records_of_run)


def _prefix_digests(data: bytes, lengths: set[int]) -> dict[int, str]:
    """The SHA-256 of each prefix of `data` of those lengths, in one pass over it."""
    digest, done, out = hashlib.sha256(), 0, {}
    view = memoryview(data)
    for length in sorted(n for n in lengths if n <= len(data)):
        digest.update(view[done:length])
        done = length
        out[length] = digest.copy().hexdigest()
    return out
