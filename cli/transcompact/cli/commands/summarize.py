"""`transcompact summarize`: a checkpoint summary of the old part, by an LLM."""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import click

from ...core.errors import UsageError
from ...io.files import write_stdout
from ...run.tasks import Reading, Result
from ..options import command_batch, given_summary, input_options, progress_printer, provider_options, summary_options

if TYPE_CHECKING:  # types only: the command's libraries are loaded when it runs
    from ...ops.compaction.summarize import SummaryOptions
    from ...providers import Resolved


@click.command()
@input_options
@summary_options
@click.option("--all", "everything", is_flag=True, help="Summarize every message, not only the old part before the cut.")
@provider_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary and what it took as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no warnings on stderr.")
def summarize(files, patterns, reading, summary, previous_summary, everything, asking, as_json, quiet):
    """Write a structured checkpoint summary of the old part of a transcript, by an LLM.

    The old part is what comes before `cut-point` (all of it with --all). A summary that
    already exists in it is updated rather than started over. Long histories are summarized
    in chunks, so it never fails because the history is too long.

    \b
    transcompact summarize session.jsonl > summary.md
    transcompact summarize --provider openai --base-url http://localhost:8000/v1 --model qwen3 chat.json
    """
    from ...io.inputs import discover
    from ..render import report_json

    if len(list(itertools.islice(discover(files, patterns), 2))) > 1:
        raise UsageError("summarize takes one transcript (run it once per file)")
    options = replace(summary, everything=everything, previous_summary=given_summary(previous_summary))
    batch = command_batch("summarize", files, patterns, quiet=quiet)
    work = Summarizing(reading, options, asking.resolved, timeout=asking.timeout, retries=asking.retries, as_json=as_json,
                       quiet=quiet)
    reports = batch.reports(summarize_file, work)
    if as_json:
        write_stdout(report_json("summarize", reports))
    sys.exit(batch.exit)


@dataclass(frozen=True)
class Summarizing:
    """What `summarize_file` needs besides the file."""

    reading: Reading
    options: SummaryOptions
    summarizer: Resolved
    timeout: float
    retries: int
    as_json: bool
    quiet: bool


def summarize_file(name: str, data: bytes, how: Summarizing) -> Result:
    """Summarize one file (`tasks.process` runs it)."""
    from ...ops.compaction.summarize import summarize as run_summarize
    from ...providers import provider as make_provider

    transcript = how.reading.load(data, name)
    # Made once there is something to summarize: a transcript with nothing old needs no key.
    result = run_summarize(transcript, lambda: make_provider(how.summarizer, timeout=how.timeout, retries=how.retries),
                           how.options, progress=progress_printer(how.quiet))
    if result is None:
        keep = how.options.keep_recent_tokens
        return Result(
            report={"summary": None, "notes": [f"nothing old to summarize: everything fits in the recent window ({keep:,} tokens)"]},
            stderr=() if how.quiet else (f"{name}: nothing old to summarize: everything fits in the recent window "
                                         f"(--keep-recent-tokens {keep:,}); --all summarizes every message",))
    return Result(report=result.as_dict(), stdout=b"" if how.as_json else result.text.encode() + b"\n",
                  stderr=() if how.quiet else tuple(f"{name}: warning: {warning}" for warning in result.warnings))
