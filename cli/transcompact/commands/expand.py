"""`transcompact expand`: put back what `prune --archive` replaced."""

from __future__ import annotations

import click

from ..cli import input_options, output_options, load_inputs, check_output_flags, emit, display_name
from ..files import read_input


@click.command()
@input_options
@output_options
@click.option("--archive", required=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="The archive `prune --archive` wrote.")
@click.option("-q", "--quiet", is_flag=True, help="Do not report on stderr.")
def expand(files, format_, messages_path, output, in_place, output_dir, archive, quiet):
    """Put back what `prune --archive` replaced.

    \b
    transcompact expand --archive originals.jsonl pruned.jsonl > original.jsonl
    """
    import orjson

    from ..errors import InputError, Location
    from ..expand import expand as run_expand
    from ..formats import dump

    check_output_flags(files, output, in_place, output_dir)
    _, archive_bytes = read_input(archive)
    records = []
    for number, line in enumerate(archive_bytes.splitlines(), start=1):
        if line.strip():
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError as error:
                raise InputError(f"malformed archive line: {error.msg}", location=Location(archive, number)) from None
    for path, data, transcript in load_inputs(files, format_, messages_path):
        expanded, restored = run_expand(transcript, records)
        emit(path, dump(expanded, data), output=output, in_place=in_place, output_dir=output_dir)
        if not quiet:
            click.echo(f"{display_name(path)}: restored {restored} originals from {archive}", err=True)
