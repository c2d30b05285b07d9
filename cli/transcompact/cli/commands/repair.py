"""`transcompact repair`: make an invalid transcript valid with the smallest change."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import click

from ...core.errors import ExitCode
from ...run.tasks import Reading, Result
from ..options import batch_options, check_conversion_flags, command_batch, conversion_option, conversion_suffix, input_options, output_options, verbose_option
from ..render import where

if TYPE_CHECKING:  # types only: the command's libraries are loaded when it runs
    from ...core.jsondata import Lines


@click.command()
@input_options
@output_options
@conversion_option
@batch_options
@click.option("-q", "--quiet", is_flag=True, help="Do not report the fixes on stderr.")
@verbose_option()
def repair(files, patterns, reading, outputs, to, running, quiet, verbose):
    """Make invalid transcripts valid with the smallest change, reporting each fix on stderr.

    A tool call with no result gets an error result "[No result recorded]"; an orphan tool
    result, an empty text block and an empty message are removed; a tool call id used twice
    is renamed, with its result. A valid transcript is written back unchanged. Exit 1 if
    errors remain that repair cannot fix.

    \b
    transcompact repair broken.json > fixed.json
    transcompact repair -i ~/.claude/projects/*/SESSION.jsonl
    """
    check_conversion_flags(to, outputs.in_place)
    outputs.check(files, patterns, output_suffix=conversion_suffix(to))
    batch = command_batch("repair", files, patterns, running=running, quiet=quiet, verbose=verbose, verb="repaired",
                          **outputs.shown())
    work = Repairing(replace(reading, writes_back=to is None, lazily="logs"), quiet, outputs.diff, to)
    sys.exit(batch.run(repair_file, work, **outputs.targets(), output_suffix=conversion_suffix(to)))


@dataclass(frozen=True)
class Repairing:
    """What `repair_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    quiet: bool
    diff: bool = False  # --diff: the result says what repairing changes
    to: str | None = None  # --to: the output converted to this


def repair_file(name: str, data: bytes, how: Repairing) -> Result:
    """Repair one file (`tasks.process` runs it, here or in a worker); exit 1 when errors are left."""
    from ...formats import dumps
    from ...formats import written as written_out
    from ...ops.validity.check import check as run_check
    from ...ops.validity.check import errors
    from ...ops.validity.postcondition import verified
    from ...ops.validity.repair import repair as run_repair

    transcript = how.reading.load(data, name)
    repaired, report = run_repair(transcript)
    written: bytes | Lines
    if how.to is None and repaired is transcript:
        written, as_written = how.reading.decoded(data), transcript  # nothing to fix: the input as read (what writing it again would give)
    elif how.to is None:
        written = written_out(repaired)
        # What is left is what `check` says of the output as written (its lines, its indices).
        as_written = verified(transcript, repaired, written, operation="repair", messages_path=how.reading.messages_path,
                              same_messages=False)
    else:  # in the target's format, which convert's own post-condition judges (it leaves no error)
        from ...ops.convert import convert

        as_written = convert(repaired, how.to)
        written = dumps(as_written)
    left = errors(report.checked if as_written is repaired and report.checked is not None else run_check(as_written))
    lines = [] if how.quiet else [f"{name}{where(fix.index, fix.line)}{fix.rule} fixed: {fix.text}" for fix in report.fixes]
    lines += [f"{name}{where(v.index, v.line)}{v.rule} cannot be repaired: {v.text}" for v in left]
    changes = None
    if how.diff:
        from ...ops.diff import diff

        changes = tuple(diff(transcript, repaired))
    return Result(output=written, report={**report.as_dict(), "errors_left": [v.as_dict() for v in left]}, stderr=tuple(lines),
                  exit=ExitCode.VIOLATIONS if left else ExitCode.OK, changes=changes)
