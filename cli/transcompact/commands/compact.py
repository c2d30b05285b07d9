"""`transcompact compact`: the whole pipeline, with its fallback."""

from __future__ import annotations

import os

import click

from .. import settings
from ..cli import (
    anthropic_api,
    input_options,
    output_options,
    load_inputs,
    check_output_flags,
    emit,
    display_name,
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
@click.option("--report", "report_file", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
              help="Write the report as JSON to FILE.")
@click.option("-q", "--quiet", is_flag=True, help="Do not report on stderr.")
def compact(files, format_, messages_path, output, in_place, output_dir, threshold, force, emergency, no_fallback,
            keep_user_tokens, checkpoint_tokens, keep_thinking, drop_history, window, max_output, calibrate, count, keep_recent_tokens, tokenizer,
            ratio, previous_summary, instructions, summary_input_tokens, result_chars, provider, model, base_url, retries,
            timeout, report_file, quiet, **flags):
    """Compact transcripts: prune, cut, summarize the old part, keep the recent window verbatim.

    Under --threshold the transcript goes out unchanged. If the summary fails (no key, an
    error, a bad summary), the emergency mode takes over: no model call, a checkpoint built
    from the old part, and a result that always fits. The output is always valid, and smaller
    or the input as it was (strategy none, when neither pruning nor a summary would gain).

    \b
    cat session.json | transcompact compact > compacted.json
    transcompact compact --emergency -i logs/*.jsonl
    transcompact compact --provider openai --base-url http://localhost:8000/v1 --model qwen3 chat.json
    """
    from ..compact import NEAR_THE_WINDOW, CompactOptions, compact as run_compact
    from ..estimate import Options
    from ..formats import dumps
    from ..postcondition import verified
    from ..providers import provider as make_provider, resolve
    from ..render import report_json, write_report
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
    summarizer_settings = resolve(provider, model=model, base_url=base_url, environ=os.environ)
    reports = []
    for path, data, transcript in load_inputs(files, format_, messages_path):
        compacted, report = run_compact(
            transcript, options, lambda: make_provider(summarizer_settings, timeout=timeout, retries=retries),
            progress=progress_printer(quiet))
        unchanged = report.strategy == "none"
        written = data if unchanged else dumps(compacted)
        if not unchanged:  # judged on the bytes a reader will find
            verified(transcript, compacted, written, operation="compact", messages_path=messages_path,
                          same_messages=False)
        if not (in_place and unchanged):  # a file left as it is is not rewritten
            emit(path, written, output=output, in_place=in_place, output_dir=output_dir)
        reports.append((display_name(path), report.as_dict()))
        if not quiet:
            if report.fallback_reason and report.strategy == "emergency" and not emergency:
                why = "" if report.fallback_reason.startswith(NEAR_THE_WINDOW) else "the summary failed, so "
                click.echo(f"{display_name(path)}: {why}the emergency mode was used: {report.fallback_reason}", err=True)
            click.echo(f"{display_name(path)}: {report.line()}", err=True)
            for note in report.notes[1:] if report.strategy == "none" else report.notes:
                click.echo(f"{display_name(path)}: note: {note}", err=True)
    if report_file:
        write_report(report_file, report_json("compact", reports))
