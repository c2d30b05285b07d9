"""`transcompact prune`: trim and clear old tool results, without a model."""

from __future__ import annotations

import click

from ..cli import (
    input_options,
    output_options,
    load_inputs,
    check_output_flags,
    emit,
    display_name,
    prune_options,
    prune_options_from,
)


@click.command()
@input_options
@output_options
@prune_options
@click.option("--prune-ui-copy", is_flag=True, help="Claude Code logs: prune the toolUseResult copy the UI shows, too.")
@click.option("--archive", type=click.Path(dir_okay=False), metavar="FILE",
              help="Add what prune replaces to FILE (JSON Lines; created if missing), for `transcompact expand`.")
@click.option("--report", "report_file", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
              help="Write the report as JSON to FILE.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the report line on stderr.")
def prune(files, format_, messages_path, output, in_place, output_dir, prune_ui_copy, archive, report_file, quiet, **flags):
    """Trim and clear old tool results, without a model.

    The last --keep-last tool-result messages are protected; results older than the last
    --hard-clear-after become a placeholder; others longer than --soft-trim-chars keep
    --head and --tail characters around a marker. User text and assistant blocks stay.

    \b
    transcompact prune session.jsonl > pruned.jsonl
    transcompact prune -i --archive originals.jsonl ~/.claude/projects/*/SESSION.jsonl
    """
    from ..archive import add as add_to_archive, records as archive_records
    from ..formats import dumps, hook
    from ..postcondition import verified
    from ..prune import prune as run_prune
    from ..render import report_json, write_report

    check_output_flags(files, output, in_place, output_dir)
    options = prune_options_from(flags, archive=archive is not None)
    reports = []
    for path, data, transcript in load_inputs(files, format_, messages_path):
        pruned, report = run_prune(transcript, options)
        if prune_ui_copy and (replace_ui_copies := hook(pruned, "replace_ui_copies")) is not None:
            pruned = replace_ui_copies(pruned)
        output_bytes = dumps(pruned)
        verified(transcript, pruned, output_bytes, operation="prune", messages_path=messages_path)
        if archive is not None:  # before the output: a rewritten file never lacks its originals
            torn = add_to_archive(archive, archive_records(data, output_bytes, transcript))
            if torn is not None:
                click.echo(f"{archive}:{torn}: warning: left out a last line that was cut short "
                           "(an earlier write did not finish)", err=True)
        emit(path, output_bytes, output=output, in_place=in_place, output_dir=output_dir)
        reports.append((display_name(path), report.as_dict()))
        if not quiet:
            click.echo(f"{display_name(path)}: pruned {report.soft_trimmed} soft-trimmed, {report.cleared} cleared "
                       f"({report.protected} protected): {report.tokens_before:,} → {report.tokens_after:,} tokens", err=True)
    if report_file:
        write_report(report_file, report_json("prune", reports))
