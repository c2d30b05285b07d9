"""`slim`: a stored agent log without what its agent never sends when it resumes it.

The format says what that is (`Format.slimming`: lines to drop, members of the lines kept to
take out or relink); here the lines are cut accordingly, every other byte as it was written,
and the result is read back as the very messages the log held (the post-condition), so that the
agent resuming it sends what it sends from the whole log. The report says per file what was
dropped, what a user loses with it, and how many bytes; the archive (`archive.slim_record`)
keeps the whole original for `expand`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.jsondata import Lines, PartialLine, Record, line_bytes, without_members
from ...core.model import Transcript
from ...formats import adapter


@dataclass
class SlimReport:
    file: str
    bytes_before: int
    bytes_after: int = 0
    dropped: dict[str, list[int]] = field(default_factory=dict)  # what the lines held → [lines, bytes]
    fields: dict[str, int] = field(default_factory=dict)  # what the members held → bytes
    slims: bool = True  # False: the format has nothing its agent does not send (a request body)

    @property
    def ratio(self) -> float:
        return self.bytes_after / self.bytes_before if self.bytes_before else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "bytes_before": self.bytes_before, "bytes_after": self.bytes_after,
                "ratio": round(self.ratio, 4),
                "dropped": [{"what": what, "lines": lines, "bytes": size} for what, (lines, size) in self.dropped.items()],
                "fields": [{"what": what, "bytes": size} for what, size in self.fields.items()]}


def slim(transcript: Transcript, data: bytes | Lines) -> tuple[bytes | Lines, SlimReport]:
    """The lines of `transcript` (read from `data`: the input's bytes, or the lines a rewrite
    wrote, not joined) without what its agent never sends, and the report; a format with no such
    part gives `data` back. Each line kept holds the value read from
    it, so that the post-condition reads the output back without parsing it again."""
    report = SlimReport(transcript.name, len(data))
    fmt = adapter(transcript)
    plan = fmt.slimming(transcript) if fmt.rewrites_lines(transcript) else None
    if plan is None or not (plan.dropped or plan.edits or plan.replaced):
        report.bytes_after, report.slims = len(data), plan is not None
        return data, report
    records: list[Record] = []
    edited = False
    for index, record in enumerate(transcript.source.records):
        if index in plan.merged:
            continue
        if index in plan.replaced:  # the input's own lines taken by the post-condition as read
            records += plan.replaced[index]
            continue
        if index in plan.dropped:
            tally = report.dropped.setdefault(plan.dropped[index], [0, 0])
            tally[0] += 1
            tally[1] += len(line_bytes(record)) + 1
            continue
        edit = plan.edits.get(index)
        if edit:
            value = record[1] if type(record[1]) is dict else None  # else read again from its line
            view = record[1] if isinstance(record[1], PartialLine) else None
            line, taken, read = without_members(line_bytes(record), edit, value, view)
            edited = edited or bool(taken)
            for key, size in taken.items():
                what = plan.fields.get(key, key)
                report.fields[what] = report.fields.get(what, 0) + size
            # A CutLine reads as `read` (kept in part as the input line was: a large log's output
            # is not held whole); bytes that do not read are read again by the post-condition.
            record = (line, read)
        records.append(record)
    if not (plan.dropped or plan.replaced or edited):  # (an edit may name members a line does not hold)
        report.bytes_after = len(data)
        return data, report
    out = Lines.of(records, bom=getattr(transcript.source, "bom", False))
    report.bytes_after = len(out)
    return out, report


def slim_checked(transcript: Transcript, data: bytes | Lines, *, operation: str = "slim",
                 messages_path: str | None = None) -> tuple[bytes | Lines, SlimReport]:
    """`slim`, its output held to the post-condition of every rewrite: it reads back as the very
    messages `transcript` holds, with no `check` error they did not have (else nothing is written)."""
    from ..validity.postcondition import verified

    out, report = slim(transcript, data)
    if out is not data:
        verified(transcript, transcript, out, operation=operation, messages_path=messages_path)
    return out, report
