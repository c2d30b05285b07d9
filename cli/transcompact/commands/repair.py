"""`transcompact repair`: make an invalid transcript valid with the smallest change."""

from __future__ import annotations

import sys

import click

from ..cli import input_options, output_options, load_inputs, check_output_flags, emit, where, display_name
from ..errors import ExitCode


@click.command()
@input_options
@output_options
@click.option("-q", "--quiet", is_flag=True, help="Do not report the fixes on stderr.")
def repair(files, format_, messages_path, output, in_place, output_dir, quiet):
    """Make invalid transcripts valid with the smallest change, reporting each fix on stderr.

    A tool call with no result gets an error result "[No result recorded]"; an orphan tool
    result, an empty text block and an empty message are removed; a tool call id used twice
    is renamed, with its result. A valid transcript is written back unchanged. Exit 1 if
    errors remain that repair cannot fix.

    \b
    transcompact repair broken.json > fixed.json
    transcompact repair -i ~/.claude/projects/*/SESSION.jsonl
    """
    from ..check import check as run_check, errors
    from ..formats import dumps
    from ..postcondition import verified
    from ..repair import repair as run_repair

    check_output_flags(files, output, in_place, output_dir)
    remaining = False
    for path, data, transcript in load_inputs(files, format_, messages_path):
        repaired, report = run_repair(transcript)
        written = dumps(repaired)
        # What is left is what `check` says of the output as written (its lines, its indices).
        as_written = verified(transcript, repaired, written, operation="repair", messages_path=messages_path,
                                   same_messages=False)
        left = errors(run_check(as_written))
        if not quiet:
            for fix in report.fixes:
                click.echo(f"{display_name(path)}{where(fix.index, fix.line)}{fix.rule} fixed: {fix.text}", err=True)
        for v in left:
            click.echo(f"{display_name(path)}{where(v.index, v.line)}{v.rule} cannot be repaired: {v.text}", err=True)
        remaining = remaining or bool(left)
        emit(path, written, output=output, in_place=in_place, output_dir=output_dir)
    sys.exit(ExitCode.VIOLATIONS if remaining else ExitCode.OK)
