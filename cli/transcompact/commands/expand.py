"""`transcompact expand`: put back what `prune --archive` replaced."""

from __future__ import annotations

import click

from ..cli import output_options, traceback_option, check_output_flags, emit
from ..files import STDIN, read_input


@click.command()
@click.argument("files", nargs=-1)
@traceback_option
@output_options
@click.option("--archive", required=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="The archive `prune --archive` wrote.")
@click.option("-q", "--quiet", is_flag=True, help="Do not report on stderr.")
def expand(files, output, in_place, output_dir, archive, quiet):
    """Put back what `prune --archive` replaced.

    Only the records written for this very transcript are used: several transcripts can share
    one archive, and a Claude Code log that went on after prune still gets its originals back.

    \b
    transcompact expand --archive originals.jsonl pruned.jsonl > original.jsonl
    """
    from ..archive import read as read_archive
    from ..expand import expand as run_expand

    check_output_flags(files, output, in_place, output_dir)
    found = read_archive(archive)
    if found.torn_line is not None and not quiet:
        click.echo(f"{archive}:{found.torn_line}: warning: left out a last line that was cut short "
                   "(an earlier write did not finish)", err=True)
    for path in files or (STDIN,):
        name, data = read_input(path)
        expanded = run_expand(data, found.records, name)
        emit(path, expanded.data, output=output, in_place=in_place, output_dir=output_dir)
        if not quiet:
            click.echo(f"{name}: restored {expanded.restored} originals from {archive}", err=True)
            if not expanded.restored and found.records:
                click.echo(f"{name}: note: none of the {len(found.records)} records is for this transcript: it was "
                           "changed since prune wrote it, or pruned into another archive", err=True)
