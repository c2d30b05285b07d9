"""`transcompact slim`: stored agent logs without what the agent never sends, the original archived."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

import click

from ...core.errors import UsageError
from ...run.tasks import Beside, Reading, Result
from ..options import (
    FilePath,
    batch_options,
    command_batch,
    input_options,
    output_options,
    start_archive,
    verbose_option,
)

SIDECAR = ".slim-archive"  # what a log slimmed in place keeps its original in, beside it


@click.command()
@input_options
@output_options
@batch_options
@click.option("--archive", type=FilePath(dir_okay=False), metavar="FILE",
              help=f"Add each original to FILE (JSON Lines; created if missing), for `transcompact expand`. "
                   f"Default with -i: FILE{SIDECAR} beside each file.")
@click.option("--no-archive", is_flag=True, help="Keep no original: what slim drops is gone.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the report line on stderr.")
@verbose_option()
def slim(files, patterns, reading, outputs, running, archive, no_archive, quiet, verbose):
    """Make stored agent logs smaller: drop what the agent never sends when it resumes them.

    The agent resuming a slimmed log sends the request it sends from the original. What goes:
    history before the last compaction, branches the session does not take, progress lines,
    file-history snapshots (/rewind's), the UI's copies of tool results, the fields every line
    repeats. Each report line says what was dropped, what is lost with it, and how many bytes.
    In place, the original is archived beside the file (gzip inside) unless --no-archive;
    `transcompact expand --archive FILE.slim-archive FILE` gives it back byte for byte. Formats
    whose whole file is sent (request bodies) are left as they are.

    \b
    transcompact slim -i ~/.claude/projects/*/*.jsonl
    transcompact slim session.jsonl > slim.jsonl
    """
    if archive and no_archive:
        raise UsageError("--archive and --no-archive cannot be used together")
    outputs.check(files, patterns, own={"--archive": archive})
    batch = command_batch("slim", files, patterns, running=running, quiet=quiet, verbose=verbose, verb="slimmed",
                          ours=[archive] if archive else [], **outputs.shown())
    start_archive(archive, command="slim", to=None, dry_run=batch.dry_run)
    beside = outputs.in_place and not archive and not no_archive
    # Read as prune reads: a kept line parsed in part (`formats.loads`), the large log not held twice.
    work = Slimming(replace(reading, lazily="logs"), None if batch.dry_run or no_archive else archive, beside and not batch.dry_run, quiet)
    sys.exit(batch.run(slim_file, work, **outputs.targets()))


@dataclass(frozen=True)
class Slimming:
    """What `slim_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    archive: str | None  # where every original goes (none in a dry run)
    beside: bool  # each original beside its file (-i without --archive)
    quiet: bool


def slim_file(name: str, data: bytes, how: Slimming) -> Result:
    """Slim one file (`tasks.process` runs it, here or in a worker)."""
    from ...ops.pruning.archive import slim_record
    from ...ops.pruning.slim import slim_checked

    transcript = how.reading.load(data, name)
    output, report = slim_checked(transcript, data, messages_path=how.reading.messages_path)
    beside = how.archive is None and how.beside and output is not data
    archive: str | Beside | None = Beside(SIDECAR) if beside else how.archive
    said = () if how.quiet else (_said(name, report, f"{name}{SIDECAR}" if beside else how.archive),)
    return Result(output=output, report=report.as_dict(), stderr=said,
                  archive=None if archive is None else (archive, slim_record(data, bytes(output), name)))


def _said(name: str, report, archive: str | None) -> str:
    if not report.slims:
        return f"{name}: left as it is ({report.bytes_before:,} bytes): slim drops only what an agent's log holds beside what the agent sends"
    if report.bytes_after == report.bytes_before:
        return f"{name}: nothing its agent does not send ({report.bytes_before:,} bytes)"
    from ...core.words import counted

    dropped = [(size, f"{what} {_size(size)} ({counted(lines, 'line')})") for what, (lines, size) in report.dropped.items()]
    dropped += [(size, f"{what} {_size(size)}") for what, size in report.fields.items() if size > 0]
    kept = f"; original in {archive}" if archive else ""
    return (f"{name}: slimmed {report.bytes_before:,} → {report.bytes_after:,} bytes ({report.ratio:.2f}×), dropped "
            f"{', '.join(text for _, text in sorted(dropped, key=lambda item: -item[0]))}{kept}")


def _size(size: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"
