"""`transcompact prune`: trim and clear old tool results, without a model."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import click

from ..batch import Reading, Result
from ..cli import (
    batch_options,
    input_options,
    output_options,
    check_output_flags,
    prune_options,
    prune_options_from,
)


@click.command()
@input_options
@output_options
@batch_options
@prune_options
@click.option("--prune-ui-copy", is_flag=True, help="Agent logs that keep a copy of each tool result for their UI (Claude Code toolUseResult, Gemini CLI resultDisplay): prune that copy too.")
@click.option("--archive", type=click.Path(dir_okay=False), metavar="FILE",
              help="Add what prune replaces to FILE (JSON Lines; created if missing), for `transcompact expand`.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the report line on stderr.")
def prune(files, format_, messages_path, encoding_errors, patterns, output, in_place, output_dir, dry_run, report_file, jobs, fail_fast,
          prune_ui_copy, archive, quiet, **flags):
    """Trim and clear old tool results, without a model.

    The last --keep-last tool-result messages are protected; results older than the last
    --hard-clear-after become a placeholder; others longer than --soft-trim-chars keep
    --head and --tail characters around a marker. User text and assistant blocks stay.

    \b
    transcompact prune session.jsonl > pruned.jsonl
    transcompact prune -i --archive originals.jsonl ~/.claude/projects/*/SESSION.jsonl
    """
    from ..archive import create as create_archive
    from ..batch import Batch

    check_output_flags(files, output, in_place, output_dir)
    options = prune_options_from(flags, archive=archive is not None)
    if archive is not None and not dry_run:  # whatever the inputs hold, for the `expand --archive` that follows
        create_archive(archive)
    batch = Batch("prune", files, patterns, quiet=quiet, verb="pruned", dry_run=dry_run, report_file=report_file)
    work = Pruning(Reading(format_, messages_path, encoding_errors), options, prune_ui_copy, None if dry_run else archive, quiet)
    sys.exit(batch.run(prune_file, work, output=output, in_place=in_place, output_dir=output_dir, jobs=jobs, fail_fast=fail_fast))


@dataclass(frozen=True)
class Pruning:
    """What `prune_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    options: Any  # PruneOptions
    prune_ui_copy: bool
    archive: str | None  # where the originals go (none in a dry run)
    quiet: bool


def prune_file(name: str, data: bytes, how: Pruning) -> Result:
    """Prune one file (`batch.process` runs it, here or in a worker)."""
    from ..archive import add as add_to_archive, records as archive_records
    from ..formats import dumps, hook
    from ..postcondition import verified
    from ..prune import prune as run_prune

    transcript = how.reading.load(data, name)
    pruned, report = run_prune(transcript, how.options)
    if how.prune_ui_copy and (replace_ui_copies := hook(pruned, "replace_ui_copies")) is not None:
        pruned = replace_ui_copies(pruned)
    output = dumps(pruned)
    verified(transcript, pruned, output, operation="prune", messages_path=how.reading.messages_path)
    lines = []
    if how.archive is not None:  # before the output is written: a rewritten file never lacks its originals
        torn = add_to_archive(how.archive, archive_records(data, output, transcript))
        if torn is not None:
            lines.append(f"{how.archive}:{torn}: warning: left out a last line that was cut short "
                         "(an earlier write did not finish)")
    if not how.quiet:
        lines.append(f"{name}: pruned {report.soft_trimmed} soft-trimmed, {report.cleared} cleared "
                     f"({report.protected} protected): {report.tokens_before:,} → {report.tokens_after:,} tokens")
    return Result(output=output, report=report.as_dict(), stderr=tuple(lines))
