"""Put back what `prune --archive` replaced: `expand(prune(x)) == x`.

Byte for byte for JSON Lines and Claude Code logs (the archive keeps the text of what each line
was), as equal JSON for documents (which are written again whole). The records of an archive
apply to the exact bytes their prune run wrote (`archive.py`); a transcript pruned twice gets
the second run undone first, which gives back the bytes the first run wrote, and so on. A
document's undone run gives back equal JSON, not those bytes: the run that wrote them (the
record of the bytes that run read) is undone next on it whole.

A run whose records are not all in the archive (a write cut short, records lost) cannot give
back what prune read: that is an error naming the results that would stay pruned, and nothing
is put back, so that the transcript stays as the run wrote it and a whole copy of the archive
can still expand it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from ...core.errors import InputError, Location
from ...core.model import Text, ToolResult
from . import archive
from .archive import Pruned, Record

# What every marker prune leaves where it archived a result's original has, before the call's id
# (prune's placeholder and trim marker, truncate's notice).
ARCHIVED_AS = "; archived as "
LISTED = 10  # the results an error names; the others are counted


@dataclass(frozen=True)
class Expansion:
    data: bytes
    restored: int  # records put back


def expand(data: bytes, records: Iterable[Record], name: str = "<stdin>", *, torn: Pruned | None = None) -> Expansion:
    """`data` with every prune run in `records` that wrote it undone, newest first.

    When several runs wrote the same bytes (two files pruned to the same output), the one whose
    `file` is `name` wins, else the newest. `torn`: what the archive's last record, cut short,
    applied to (`Archive.torn_pruned`); when that is `data`, a run of it lost a record. An
    InputError when a run's records do not give back what it read (some missing, or changed).
    """
    pending = archive.runs(records)
    age = {run: position for position, run in enumerate(pending)}
    expanded, restored = data, 0
    # Whether the torn record was one of its runs', and the kinds of the runs not given back byte for byte.
    cut_short, not_as_read = False, []
    # What the last document undone read, given back as equal JSON in its layout, not as those bytes:
    # the run that wrote them (a prune or compaction before it) applies to it whole.
    stands_for: str | None = None
    while True:
        digests = _prefix_digests(expanded, {run.pruned_bytes for run in pending} | ({torn.size} if torn else set()))
        cut_short = cut_short or (torn is not None and digests.get(torn.size) == torn.sha256)
        matching = [run for run in pending if digests.get(run.pruned_bytes) == run.pruned_sha256]
        whole = not matching and stands_for is not None
        if whole:
            matching = [run for run in pending if run.pruned_sha256 == stands_for]
        if not matching:
            break
        run = max(matching, key=lambda r: (r.file == name, age[r]))
        records_of_run = pending.pop(run)
        expanded, as_read = archive.undo(expanded, records_of_run, name, whole=whole)
        stands_for = run.original_sha256 if not as_read and records_of_run[0].kind == "message" else None
        if not as_read:
            not_as_read.append(records_of_run[0].kind)
        restored += len(records_of_run)
    if cut_short or not_as_read or not restored:
        _check_whole(expanded, name, restored, cut_short, not_as_read)
    return Expansion(expanded, restored)


def _check_whole(expanded: bytes, name: str, restored: int, cut_short: bool, not_as_read: list[str]) -> None:
    """Raise unless the runs that wrote the transcript gave back what they read: a document may
    come back in another layout (equal JSON), but not with a result still pruned, whose original
    no record held, nor, when no record was for it, with a result prune archived; and one no
    record was for is a transcript, as every command's input is (else an InputError: malformed
    JSON, not a transcript)."""
    pruned = _still_pruned(expanded, name, read=not restored)
    if cut_short or (pruned and (not_as_read or not restored)):
        if restored or cut_short:
            why = "records of the run that wrote it are missing" + (" (its last record, cut short, was one)"
                                                                       if cut_short else "")
        else:
            why = ("it holds no record of the run that wrote it (they were lost, or written into another archive, "
                   "or the transcript was changed since)")
        listed = ", ".join(f"{call_id} (message {index})" for index, call_id in pruned[:LISTED])
        more = f", and {len(pruned) - LISTED} more" if len(pruned) > LISTED else ""
        results = f"; {len(pruned)} result{'s' if len(pruned) > 1 else ''} would stay pruned: {listed}{more}" \
            if pruned else ""
        raise InputError(f"the archive cannot give it back whole: {why}{results}", location=Location(name),
                         hint="expand it with the whole archive that run wrote: it is left as it is, so that it still can")
    if any(kind != "message" for kind in not_as_read):
        raise InputError("the archive's records for it do not give back what prune read: the archive was changed",
                         location=Location(name), hint=archive.CHANGED_HINT)


def _still_pruned(data: bytes, name: str, *, read: bool = False) -> list[tuple[int, str]]:
    """(message index, tool call id) of each result in `data` whose marker says prune archived its
    original. `read`: `data` is read whatever it holds, and must be a transcript."""
    from ...formats import loads

    marked = ARCHIVED_AS.encode() in data  # JSON writes it as it is: most files hold none
    if not marked and not read:
        return []
    try:
        transcript = loads(data, name, lazily=not marked)
    except InputError as error:  # not a transcript: no results to name
        if read:  # (its own hint would name what other commands do with it: --encoding-errors, --to)
            raise error.with_hint("expand gives back the transcripts prune and compact wrote: this is none") from None
        return []
    if not marked:
        return []
    return [(index, result.tool_call_id) for index, message in enumerate(transcript.messages)
            for result in message.tool_results if ARCHIVED_AS + result.tool_call_id in _text(result)]


def _text(result: ToolResult) -> str:
    if isinstance(result.content, str):
        return result.content
    return "".join(block.text for block in result.content if isinstance(block, Text))


def _prefix_digests(data: bytes, lengths: set[int]) -> dict[int, str]:
    """The SHA-256 of each prefix of `data` of those lengths, in one pass over it."""
    digest, done, out = hashlib.sha256(), 0, {}
    view = memoryview(data)
    for length in sorted(n for n in lengths if n <= len(data)):
        digest.update(view[done:length])
        done = length
        out[length] = digest.copy().hexdigest()
    return out
