"""`transcompact estimate`: tokens, where they sit, how close to the window."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from ...core import settings
from ...core.errors import ExitCode
from ...io.files import write_stdout
from ...run.tasks import Reading, Result
from ..options import batch_options, command_batch, count_option, env_name, input_options, tokenizer_options

if TYPE_CHECKING:  # types only: the command's libraries are loaded when it runs
    from ...counting.counter import Options


@click.command()
@input_options
@batch_options
@tokenizer_options
@count_option
@click.option("--calibrate", is_flag=True,
              help="Show the fit of overhead + ratio × content to the usage the transcript's responses recorded "
                   "(the count wherever it can be made) and its error.")
@click.option("--model", metavar="NAME", help="Take the window and max output from this model's entry in the table "
                                             "(docs/counting.md#models); also the model --tokenizer anthropic asks about.")
@click.option("--window", type=click.IntRange(min=1), default=settings.WINDOW, envvar=env_name("WINDOW"), show_default=True,
              show_envvar=True, help="Context window in tokens.")
@click.option("--max-output", type=click.IntRange(min=0), default=settings.MAX_OUTPUT, envvar=env_name("MAX_OUTPUT"), show_default=True,
              show_envvar=True, help="Tokens kept free for the reply; input budget = window − max output.")
@click.option("--threshold", type=click.FloatRange(min=0, min_open=True), envvar=env_name("THRESHOLD"), show_envvar=True,
              help="Compaction threshold in tokens (a value <= 1 is a fraction of the input budget). Not given: "
                   f"{settings.THRESHOLD:,} of a {settings.WINDOW - settings.MAX_OUTPUT:,} budget, as the same share of this one.")
@click.option("--warn-at", type=click.FloatRange(min=0, max=1, min_open=True), default=settings.WARN_AT,
              envvar=env_name("WARN_AT"), show_default=True, show_envvar=True, metavar="FRACTION",
              help="Show the status `warning` from this fraction of the compaction threshold.")
@click.option("--top", type=click.IntRange(min=0), default=settings.TOP, envvar=env_name("TOP"), show_default=True, show_envvar=True,
              help="Show the N largest tool results.")
@click.option("--per-message", is_flag=True, help="List every message: index, role, tokens, running total.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (schema in docs/estimate.md).")
@click.option("--fail-over", type=click.FloatRange(min=0), metavar="N",
              help="Exit 1 when a transcript's estimate is above N tokens, or above that fraction of the input "
                   "budget for N <= 1 (a CI gate).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit status tells (with --fail-over).")
@click.pass_context
def estimate(ctx, files, patterns, reading, running, counting, count, calibrate, model, window, max_output, threshold, warn_at, top,
             per_message, as_json, fail_over, quiet):
    """Count a transcript's tokens, show where they sit and how close it is to the window.

    \b
    transcompact estimate session.jsonl
    transcompact estimate --tokenizer o200k --per-message chat.json
    transcompact estimate --count content session.jsonl   # what the log holds, without its recorded usage
    transcompact estimate --calibrate ~/.claude/projects/*/SESSION.jsonl   # the fit to its usage, and its error
    transcompact estimate --fail-over 150000 -q logs/*.jsonl   # exit 1 if one is over
    transcompact estimate --fail-over 0.9 -q logs/*.jsonl      # … over 90% of the input budget
    """
    from dataclasses import replace

    from click.core import ParameterSource

    from ...core.errors import UsageError, option
    from ...counting.models import MODELS, model_family, model_limits, of_budget
    from ...ops.estimate import check_options
    from ...run.batch import worst
    from .. import render

    # A flag beats the model's entry in the table, which beats a variable.
    flagged = {name for name in ("window", "max_output") if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE}
    if model:
        if model_family(model) in MODELS or ctx.get_parameter_source("window") is ParameterSource.DEFAULT:
            model_window, model_output = model_limits(model)  # a model not in the table needs its window
            window = window if "window" in flagged else model_window
            max_output = max_output if "max_output" in flagged else model_output
        elif not quiet:  # a model released after the table: its window as given
            click.echo(f"transcompact: note: {model} is not in the table of docs/counting.md#models: counted with the "
                       f"window given ({window:,}) and a max output of {max_output:,}", err=True)
    options = replace(counting, count=count, calibrate=calibrate, model=model, window=window, max_output=max_output,
                      threshold=threshold, warn_at=warn_at, top=top)
    if model and "max_output" not in flagged and max_output >= window:  # (the max output the user did not give)
        raise UsageError(f"{model}'s max output ({max_output:,}) must be below {option('window')} ({window:,})",
                         hint=f"give {option('max_output')} too: the input budget is the window less the max output")
    check_options(options)  # before any file is read: not an empty report on stdout, with every file failed alike
    batch = command_batch("estimate", files, patterns, running=running, quiet=quiet)
    # The chars estimate counts a message from what a typed view of it says; a tokenizer reads its text.
    lazily = replace(reading, lazily=options.tokenizer == "chars")
    estimates = [outcome.result.value for outcome in batch.outcomes(estimate_file, Estimating(lazily, options))
                 if outcome.result is not None]  # every one: `outcomes` yields no failed file
    over = [e for e in estimates if fail_over is not None and e.tokens > of_budget(fail_over, e.budget)]
    if not quiet:
        if as_json:  # the files that could be read; the others are named on stderr
            write_stdout(render.estimate_json(estimates, show_messages=per_message))
        elif estimates:
            sections = render.estimate_sections(estimates, show_messages=per_message)
            if sys.stdout.isatty():
                render.rich_print(sections)
            else:
                write_stdout(render.plain(sections).encode())
        for e in over:
            limit = f"{fail_over:g} of the budget ({of_budget(fail_over, e.budget):,})" if fail_over <= 1 else f"{fail_over:,.0f}"
            click.echo(f"{e.name}: {e.tokens:,} tokens is over --fail-over {limit}", err=True)
    sys.exit(worst((batch.exit, ExitCode.VIOLATIONS if over else ExitCode.OK)))


@dataclass(frozen=True)
class Estimating:
    """What `estimate_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    options: Options


def estimate_file(name: str, data: bytes, how: Estimating) -> Result:
    """Count one file (`tasks.process` runs it, here or in a worker)."""
    from ...ops.estimate import estimate as run_estimate

    return Result(value=run_estimate(how.reading.load(data, name), how.options))
