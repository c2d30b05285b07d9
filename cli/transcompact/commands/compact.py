"""`transcompact compact`: the whole pipeline, with its fallback."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

import click

from .. import settings
from ..batch import Reading, Result
from ..cli import (
    anthropic_api,
    batch_options,
    input_options,
    output_options,
    check_output_flags,
    env_name,
    number_option,
    prune_options,
    prune_options_from,
    provider_options,
    count_option,
    summary_options,
    progress_printer,
)
from ..files import read_input


@click.command()
@input_options
@output_options
@batch_options
@click.option("--threshold", type=click.FloatRange(min=0, min_open=True), default=settings.THRESHOLD, envvar=env_name("THRESHOLD"),
              show_default=True, show_envvar=True,
              help="Compact only above this many estimated tokens (a value <= 1 is a fraction of the input budget).")
@click.option("--force", is_flag=True, help="Compact even under the threshold.")
@click.option("--emergency", is_flag=True, help="Drop the old part behind a checkpoint built without a model.")
@click.option("--no-fallback", is_flag=True, help="When the summary fails, exit 4 instead of falling back to --emergency.")
@number_option("keep-user-tokens", settings.KEEP_USER_TOKENS, "The user's own old messages kept verbatim in the summary message (0: none).")
@number_option("checkpoint-tokens", settings.CHECKPOINT_TOKENS, "The emergency checkpoint's facts (errors, commands, files), newest first.")
@click.option("--keep-thinking", is_flag=True, help="Keep thinking blocks in the kept messages (removed by default).")
@click.option("--drop-history", is_flag=True, help="Claude Code logs: write only the new chain, not the old lines.")
@number_option("window", settings.WINDOW, "Context window in tokens.", minimum=1)
@number_option("max-output", settings.MAX_OUTPUT, "Tokens kept free for the reply; input budget = window − max output.")
@click.option("--calibrate", is_flag=True, help="Estimate with the fit to the usage the transcript recorded (see estimate).")
@count_option
@prune_options
@summary_options
@provider_options
@click.option("-q", "--quiet", is_flag=True, help="Do not report on stderr.")
def compact(files, format_, messages_path, encoding_errors, patterns, output, in_place, output_dir, dry_run, report_file, jobs, fail_fast, threshold, force, emergency, no_fallback,
            keep_user_tokens, checkpoint_tokens, keep_thinking, drop_history, window, max_output, calibrate, count, keep_recent_tokens, tokenizer,
            ratio, previous_summary, instructions, summary_input_tokens, result_chars, provider, model, base_url, retries,
            timeout, quiet, **flags):
    """Compact transcripts: prune, cut, summarize the old part, keep the recent window verbatim.

    Under --threshold the transcript goes out unchanged. If the summary fails (no key, an
    error, a bad summary), the emergency mode takes over: no model call, a checkpoint built
    from the old part, and a result that always fits. The output is always valid, and smaller
    or the input as it was (strategy none, when neither pruning nor a summary would gain).

    \b
    cat session.json | transcompact compact > compacted.json
    transcompact compact --emergency -i logs/
    transcompact compact --provider openai --base-url http://localhost:8000/v1 --model qwen3 chat.json
    """
    from ..batch import Batch
    from ..compact import CompactOptions
    from ..estimate import Options
    from ..providers import resolve
    from ..summarize import SummaryOptions

    check_output_flags(files, output, in_place, output_dir)
    counting = Options(tokenizer=tokenizer, ratio=ratio, calibrate=calibrate, count=count, window=window, max_output=max_output,
                       anthropic=anthropic_api(tokenizer))
    given = read_input(previous_summary)[1].decode("utf-8", "replace") if previous_summary else None
    options = CompactOptions(
        threshold=threshold, force=force, emergency=emergency, fallback=not no_fallback, window=window,
        max_output=max_output, counting=counting, pruning=prune_options_from(flags),
        summary=SummaryOptions(keep_recent_tokens=keep_recent_tokens, counting=counting, instructions=instructions,
                               previous_summary=given, result_chars=result_chars, input_tokens=summary_input_tokens),
        keep_user_tokens=keep_user_tokens, checkpoint_tokens=checkpoint_tokens, keep_thinking=keep_thinking, drop_history=drop_history)
    batch = Batch("compact", files, patterns, quiet=quiet, verb="compacted", dry_run=dry_run, report_file=report_file)
    work = Compacting(Reading(format_, messages_path, encoding_errors), options, resolve(provider, model=model, base_url=base_url, environ=os.environ),
                      timeout=timeout, retries=retries, emergency=emergency, quiet=quiet,
                      chunks_shown=not batch.several and progress_printer(quiet) is not None)
    sys.exit(batch.run(compact_file, work, output=output, in_place=in_place, output_dir=output_dir, jobs=jobs, fail_fast=fail_fast))


@dataclass(frozen=True)
class Compacting:
    """What `compact_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    options: Any  # CompactOptions
    summarizer: Any  # providers.Resolved: who writes the summary
    timeout: float
    retries: int
    emergency: bool  # asked for: the fallback to it is not news
    quiet: bool
    chunks_shown: bool  # "summarizing: chunk k of n" on a terminal, for one input


def compact_file(name: str, data: bytes, how: Compacting) -> Result:
    """Compact one file (`batch.process` runs it, here or in a worker)."""
    from ..compact import NEAR_THE_WINDOW, compact as run_compact
    from ..formats import dumps
    from ..postcondition import verified
    from ..providers import provider as make_provider

    transcript = how.reading.load(data, name)
    compacted, report = run_compact(
        transcript, how.options, lambda: make_provider(how.summarizer, timeout=how.timeout, retries=how.retries),
        progress=progress_printer(quiet=False) if how.chunks_shown else None)
    unchanged = report.strategy == "none"
    written = data if unchanged else dumps(compacted)
    if not unchanged:  # judged on the bytes a reader will find
        verified(transcript, compacted, written, operation="compact", messages_path=how.reading.messages_path,
                 same_messages=False)
    lines = []
    if not how.quiet:
        if report.fallback_reason and report.strategy == "emergency" and not how.emergency:
            why = "" if report.fallback_reason.startswith(NEAR_THE_WINDOW) else "the summary failed, so "
            lines.append(f"{name}: {why}the emergency mode was used: {report.fallback_reason}")
        lines.append(f"{name}: {report.line()}")
        lines += [f"{name}: note: {note}" for note in (report.notes[1:] if report.strategy == "none" else report.notes)]
    return Result(output=written, report=report.as_dict(), stderr=tuple(lines))
