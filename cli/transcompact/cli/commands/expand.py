"""`transcompact expand`: put back what `prune --archive` replaced and `slim` dropped."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import click

from ...core.errors import shown_name
from ...core.words import counted
from ...run.tasks import Result
from ..options import FilePath, batch_options, command_batch, file_options, output_options, verbose_option


@click.command()
@file_options
@output_options
@batch_options
@click.option("--archive", required=True, type=FilePath(dir_okay=False), metavar="FILE",
              help="The archive `prune --archive`, `compact --archive` or `slim` wrote.")
@click.option("-q", "--quiet", is_flag=True, help="Do not report on stderr.")
@verbose_option()
def expand(files, patterns, outputs, running, archive, quiet, verbose):
    """Put back what `prune --archive` replaced, `compact --archive` and `slim` dropped.

    Only the records written for this very transcript are used: several transcripts can share
    one archive, and a Claude Code log that went on after prune or compact still gets its
    originals back.

    \b
    transcompact expand --archive originals.jsonl pruned.jsonl > original.jsonl
    """
    outputs.check(files, patterns, reads={"--archive": archive})
    _read_archive.cache_clear()  # read anew by each run (a test runs many in one process)
    found = _read_archive(archive)
    if found.torn_line is not None and not quiet:
        from ...ops.pruning.archive import torn_warning

        click.echo(torn_warning(archive, found.torn_line), err=True)
    batch = command_batch("expand", files, patterns, running=running, quiet=quiet, verbose=verbose, verb="expanded",
                          ours=[archive], **outputs.shown())
    sys.exit(batch.run(expand_file, Expanding(archive, quiet, outputs.diff), **outputs.targets()))


@dataclass(frozen=True)
class Expanding:
    """What `expand_file` needs besides the file: plain values, for a worker process."""

    archive: str
    quiet: bool
    diff: bool = False  # --diff: the result says what expanding changes


def expand_file(name: str, data: bytes, how: Expanding) -> Result:
    """Expand one file (`tasks.process` runs it, here or in a worker)."""
    from ...ops.pruning.expand import expand as run_expand

    found = _read_archive(how.archive)
    records = found.records
    expanded = run_expand(data, records, name, torn=found.torn_pruned)
    lines = []
    if not how.quiet:
        lines.append(f"{name}: restored {counted(expanded.restored, 'original')} from {shown_name(how.archive)}")
        if not expanded.restored and records:
            lines.append(f"{name}: note: none of the {len(records)} records is for this transcript: it was "
                         "changed since prune or compact wrote it, or written into another archive")
    changes = None
    if how.diff:  # expand works on the bytes: both sides are read to be compared
        from ...formats import loads
        from ...ops.diff import diff

        changes = tuple(diff(loads(data, name), loads(expanded.data, name)))
    return Result(output=expanded.data, report={"restored": expanded.restored}, stderr=tuple(lines), changes=changes)


@functools.lru_cache(maxsize=1)
def _read_archive(path: str):
    """The archive, read once per process (a worker forked after the parent read it inherits it)."""
    from ...ops.pruning.archive import read

    return read(path)
