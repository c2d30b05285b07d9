"""`transcompact summarize`: a checkpoint summary of the old part, by an LLM."""

from __future__ import annotations

import os

import click

from ..cli import anthropic_api, input_options, load_inputs, display_name, provider_options, summary_options, progress_printer
from ..errors import UsageError
from ..files import read_input, write_stdout


@click.command()
@input_options
@summary_options
@click.option("--all", "everything", is_flag=True, help="Summarize every message, not only the old part before the cut.")
@provider_options
@click.option("--json", "as_json", is_flag=True, help="Print the summary and what it took as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no warnings on stderr.")
def summarize(files, format_, messages_path, keep_recent_tokens, tokenizer, ratio, previous_summary, instructions,
              summary_input_tokens, result_chars, everything, provider, model, base_url, retries, timeout, as_json, quiet):
    """Write a structured checkpoint summary of the old part of a transcript, by an LLM.

    The old part is what comes before `cut-point` (all of it with --all). A summary that
    already exists in it is updated rather than started over. Long histories are summarized
    in chunks, so it never fails because the history is too long.

    \b
    transcompact summarize session.jsonl > summary.md
    transcompact summarize --provider openai --base-url http://localhost:8000/v1 --model qwen3 chat.json
    """
    from ..estimate import Options
    from ..providers import provider as make_provider, resolve
    from ..render import report_json
    from ..summarize import SummaryOptions, summarize as run_summarize

    if len(files) > 1:
        raise UsageError("summarize takes one transcript (run it once per file)")
    given = read_input(previous_summary)[1].decode("utf-8", "replace") if previous_summary else None
    options = SummaryOptions(keep_recent_tokens=keep_recent_tokens, everything=everything,
                             counting=Options(tokenizer=tokenizer, ratio=ratio, anthropic=anthropic_api(tokenizer)), instructions=instructions,
                             previous_summary=given, result_chars=result_chars, input_tokens=summary_input_tokens)
    summarizer_settings = resolve(provider, model=model, base_url=base_url, environ=os.environ)
    reports = []
    for path, _, transcript in load_inputs(files, format_, messages_path):
        summarizer = make_provider(summarizer_settings, timeout=timeout, retries=retries)
        try:
            result = run_summarize(transcript, summarizer, options, progress=progress_printer(quiet))
        finally:
            summarizer.close()
        if result is None:
            if not quiet:
                click.echo(f"{display_name(path)}: nothing old to summarize: everything fits in the recent window "
                           f"(--keep-recent-tokens {keep_recent_tokens:,}); --all summarizes every message", err=True)
            if as_json:
                reports.append((display_name(path), {"summary": None, "notes": [
                    f"nothing old to summarize: everything fits in the recent window ({keep_recent_tokens:,} tokens)"]}))
            continue
        if not quiet:
            for warning in result.warnings:
                click.echo(f"{display_name(path)}: warning: {warning}", err=True)
        if as_json:
            reports.append((display_name(path), result.as_dict()))
        else:
            write_stdout(result.text.encode() + b"\n")
    if as_json:
        write_stdout(report_json("summarize", reports))
