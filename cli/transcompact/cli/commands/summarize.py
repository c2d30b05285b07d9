"""`transcompact summarize`: a checkpoint summary of the old part, by an LLM."""

from __future__ import annotations

import itertools
import os
import sys
from dataclasses import dataclass
from typing import Any

import click

from ...run.batch import Reading, Result
from ..main import anthropic_api, input_options, provider_options, summary_options, progress_printer
from ...core.errors import UsageError
from ...io.files import write_stdout
from ...io.inputs import read_input


@click.command()
@input_options
@summary_options
@click.option("--all", "everything", is_flag=True, help="Summarize every message, not only the old part before the cut.")
@provider_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary and what it took as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no warnings on stderr.")
def summarize(files, format_, messages_path, encoding_errors, patterns, keep_recent_tokens, keep_recent_messages, tokenizer, ratio, previous_summary, instructions, style,
              summary_input_tokens, result_chars, everything, provider, model, base_url, retries, timeout, as_json, quiet):
    """Write a structured checkpoint summary of the old part of a transcript, by an LLM.

    The old part is what comes before `cut-point` (all of it with --all). A summary that
    already exists in it is updated rather than started over. Long histories are summarized
    in chunks, so it never fails because the history is too long.

    \b
    transcompact summarize session.jsonl > summary.md
    transcompact summarize --provider openai --base-url http://localhost:8000/v1 --model qwen3 chat.json
    """
    from ...run.batch import Batch
    from ...ops.estimate import Options
    from ...io.inputs import discover
    from ...providers import resolve
    from ..render import report_json
    from ...ops.summarize import SummaryOptions

    if len(list(itertools.islice(discover(files, patterns), 2))) > 1:
        raise UsageError("summarize takes one transcript (run it once per file)")
    given = read_input(previous_summary)[1].decode("utf-8", "replace") if previous_summary else None
    options = SummaryOptions(keep_recent_tokens=keep_recent_tokens, keep_recent_messages=keep_recent_messages, everything=everything,
                             counting=Options(tokenizer=tokenizer, ratio=ratio, anthropic=anthropic_api(tokenizer)), instructions=instructions, style=style,
                             previous_summary=given, result_chars=result_chars, input_tokens=summary_input_tokens)
    batch = Batch("summarize", files, patterns, quiet=quiet)
    work = Summarizing(Reading(format_, messages_path, encoding_errors), options, resolve(provider, model=model, base_url=base_url, environ=os.environ),
                       timeout=timeout, retries=retries, as_json=as_json, quiet=quiet)
    reports = batch.reports(summarize_file, work)
    if as_json:
        write_stdout(report_json("summarize", reports))
    sys.exit(batch.exit)


@dataclass(frozen=True)
class Summarizing:
    """What `summarize_file` needs besides the file."""

    reading: Reading
    options: Any  # SummaryOptions
    summarizer: Any  # providers.Resolved
    timeout: float
    retries: int
    as_json: bool
    quiet: bool


def summarize_file(name: str, data: bytes, how: Summarizing) -> Result:
    """Summarize one file (`batch.process` runs it)."""
    from ...providers import provider as make_provider
    from ...ops.summarize import summarize as run_summarize

    transcript = how.reading.load(data, name)
    summarizer = make_provider(how.summarizer, timeout=how.timeout, retries=how.retries)
    try:
        result = run_summarize(transcript, summarizer, how.options, progress=progress_printer(how.quiet))
    finally:
        summarizer.close()
    if result is None:
        keep = how.options.keep_recent_tokens
        return Result(
            report={"summary": None, "notes": [f"nothing old to summarize: everything fits in the recent window ({keep:,} tokens)"]},
            stderr=() if how.quiet else (f"{name}: nothing old to summarize: everything fits in the recent window "
                                         f"(--keep-recent-tokens {keep:,}); --all summarizes every message",))
    return Result(report=result.as_dict(), stdout=b"" if how.as_json else result.text.encode() + b"\n",
                  stderr=() if how.quiet else tuple(f"{name}: warning: {warning}" for warning in result.warnings))
