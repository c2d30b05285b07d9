"""`transcompact compact`: the whole pipeline, with its fallback."""

from __future__ import annotations

import os
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import click

from ...core import settings
from ...run.tasks import Reading, Result
from ..options import (
    FilePath,
    OptionGroup,
    batch_options,
    check_conversion_flags,
    command_batch,
    conversion_option,
    conversion_suffix,
    count_option,
    env_name,
    given_summary,
    input_options,
    number_option,
    output_options,
    progress_printer,
    provider_options,
    prune_options,
    start_archive,
    summary_options,
    verbose_option,
)

if TYPE_CHECKING:  # types only: the command's libraries are loaded when it runs
    from ...core.jsondata import Lines
    from ...core.model import Transcript
    from ...ops.compaction.compact import CompactOptions
    from ...ops.compaction.summarize import SummaryOptions
    from ...ops.pruning.prune import PruneOptions
    from ...providers import Resolved
    from ...run.batch_api import Answers


def _compact_options(threshold: float | None, force: bool, emergency: bool, no_fallback: bool, keep_user_tokens: int,
                     checkpoint_tokens: int, keep_thinking: bool, slim: bool, window: int, max_output: int,
                     calibrate: bool, count: str, pruning: PruneOptions, summary: SummaryOptions) -> CompactOptions:
    from ...ops.compaction.compact import CompactOptions

    # One count for all: the summary's tokenizer, the budget's window, the usage it is anchored on.
    counting = replace(summary.counting, calibrate=calibrate, count=count, window=window, max_output=max_output)
    return CompactOptions(threshold=threshold, force=force, emergency=emergency, fallback=not no_fallback, window=window,
                          max_output=max_output, counting=counting, pruning=pruning, summary=replace(summary, counting=counting),
                          keep_user_tokens=keep_user_tokens, checkpoint_tokens=checkpoint_tokens, keep_thinking=keep_thinking,
                          slim=slim)


compact_options = OptionGroup(  # `options`: a CompactOptions, the previous summary left out (the command reads its file)
    "options", _compact_options,
    click.option("--threshold", type=click.FloatRange(min=0, min_open=True), envvar=env_name("THRESHOLD"), show_envvar=True,
                 help="Compact only above this many estimated tokens (a value <= 1 is a fraction of the input budget). Not given: "
                      f"{settings.THRESHOLD:,} of a {settings.WINDOW - settings.MAX_OUTPUT:,} budget, as the same share of this one."),
    click.option("--force", is_flag=True, help="Compact even under the threshold."),
    click.option("--emergency", is_flag=True, help="Make no model call: drop the old part behind a checkpoint built without one "
                 "(under --threshold the transcript still goes out unchanged; --force compacts it anyway)."),
    click.option("--no-fallback", is_flag=True, help="When the summary fails, exit 4 instead of falling back to --emergency."),
    number_option("keep-user-tokens", settings.KEEP_USER_TOKENS, "The user's own old messages kept verbatim in the summary message (0: none)."),
    number_option("checkpoint-tokens", settings.CHECKPOINT_TOKENS, "The emergency checkpoint's facts (errors, commands, files), newest first."),
    click.option("--keep-thinking", is_flag=True, help="Keep thinking blocks in the kept messages (removed by default)."),
    click.option("--slim", is_flag=True, help="Agent logs: write only what the agent reads after the compaction, not the old lines, "
                 "and drop what it never sends (see `transcompact slim`)."),
    number_option("window", settings.WINDOW, "Context window in tokens.", minimum=1),
    number_option("max-output", settings.MAX_OUTPUT, "Tokens kept free for the reply; input budget = window − max output."),
    click.option("--calibrate", is_flag=True, help="Estimate with the fit to the usage the transcript recorded (see estimate)."),
    count_option,
    prune_options,
    summary_options,
)


@click.command()
@input_options
@output_options
@conversion_option
@batch_options
@compact_options
@provider_options
@click.option("--batch-api", is_flag=True,
              help="Write the summaries through the provider's batch API: half the price, results within 24 h "
                   "(docs/compact.md#summaries-in-bulk).")
@click.option("--resume", "state_file", type=FilePath(dir_okay=False), metavar="STATE",
              help="With --batch-api: keep the batches and their results in STATE (JSON), and pick up from it: "
                   "nothing is submitted twice.")
@click.option("--poll-interval", type=click.FloatRange(min=0, max=3600, min_open=True), default=settings.POLL_INTERVAL,
              envvar=env_name("POLL_INTERVAL"), show_default=True, show_envvar=True,
              help="With --batch-api: seconds between two looks at the batches.")
@click.option("--archive", type=FilePath(dir_okay=False), metavar="FILE",
              help="Keep each transcript as it was (what compacting drops, and what its pruning replaced) in FILE, "
                   "so that `expand --archive FILE` gives it back.")
@click.option("--pre-compact", metavar="CMD",
              help="Run CMD (with the shell) before writing, the part about to be dropped on its stdin as a request "
                   "body; a non-zero exit status aborts that file's compaction (exit 4, nothing written).")
@click.option("--events", "events_file", type=FilePath(dir_okay=False, allow_dash=True), metavar="FILE",
              help="Write each file's compact_start and compact_end events to FILE as JSON Lines (-: stderr).")
@click.option("--log-format", type=click.Choice(["human", "ci"]), default=settings.LOG_FORMAT, envvar=env_name("LOG_FORMAT"),
              show_default=True, show_envvar=True,
              help="ci: each file's line as `[transcompact:compacted:summary] 60674 → 7144 tokens (FILE)`.")
@click.option("-q", "--quiet", is_flag=True, help="Do not report on stderr.")
@verbose_option("what the summary kept of each kind of fact")
def compact(files, patterns, reading, outputs, to, running, options, previous_summary, asking, batch_api, state_file, poll_interval,
            archive, pre_compact, events_file, log_format, quiet, verbose):
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
    check_conversion_flags(to, outputs.in_place)
    outputs.check(files, patterns, own={"--archive": archive, "--events": events_file, "--resume": state_file},
                  output_suffix=conversion_suffix(to))
    options = replace(options, summary=replace(options.summary, previous_summary=given_summary(previous_summary)))
    batch = command_batch("compact", files, patterns, running=running, quiet=quiet, verbose=verbose, verb="compacted",
                          events_file=events_file, ours=[path for path in (archive, state_file) if path], **outputs.shown())
    work = Compacting(replace(reading, writes_back=to is None, lazily="rereads"), options, asking.resolved, timeout=asking.timeout,
                      retries=asking.retries, emergency=options.emergency, quiet=quiet, verbose=verbose,
                      chunks_shown=not batch.several and progress_printer(quiet) is not None, diff=outputs.diff, to=to,
                      events=events_file is not None, ci_lines=log_format == "ci", pre_compact=pre_compact,
                      archive=None if batch.dry_run else archive)
    start_archive(archive, command="compact", to=to, dry_run=batch.dry_run)
    # What a flag needs is imported when it is given: start-up pays for the plain run only.
    answering: AbstractContextManager[Answers | int | None] = nullcontext()
    if batch_api:
        from ...run.batch_api import answers_for_files

        answering = answers_for_files(files, patterns, work.reading, options, work.summarizer, state_file=state_file,
                                      poll_interval=poll_interval, timeout=asking.timeout, retries=asking.retries,
                                      dry_run=batch.dry_run, quiet=quiet)
    with answering as answers:
        if isinstance(answers, int):  # a dry run: it said what it would submit, and what it could not read
            sys.exit(answers)
        work = replace(work, answers=answers)
        sys.exit(batch.run(compact_file, work, **outputs.targets(), output_suffix=conversion_suffix(to)))


@dataclass(frozen=True)
class Compacting:
    """What `compact_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    options: CompactOptions
    summarizer: Resolved  # who writes the summary
    timeout: float
    retries: int
    emergency: bool  # asked for: the fallback to it is not news
    quiet: bool
    verbose: bool  # -v: what the summary kept of each kind of fact
    chunks_shown: bool  # "summarizing: chunk k of n" on a terminal, for one input
    answers: Answers | None = None  # with --batch-api, the summaries come from the batches' results
    diff: bool = False  # --diff: the result says what compacting changes
    to: str | None = None  # --to: the output converted to this
    events: bool = False  # --events: the result carries the compaction's events
    ci_lines: bool = False  # --log-format ci
    pre_compact: str | None = None  # --pre-compact: the command that sees the dropped part first
    archive: str | None = None  # --archive: where each transcript goes as it was (none in a dry run)


def compact_file(name: str, data: bytes, how: Compacting) -> Result:
    """Compact one file (`tasks.process` runs it, here or in a worker)."""
    from ...core.jsondata import same_bytes
    from ...formats import dumps
    from ...formats import written as written_out
    from ...ops.compaction.compact import NEAR_THE_WINDOW
    from ...ops.compaction.compact import compact as run_compact
    from ...ops.validity.postcondition import verified
    from ...providers import provider as make_provider

    started = time.time()
    transcript = how.reading.load(data, name)
    summarizer = (how.answers.summarizer if how.answers is not None else
                  lambda: make_provider(how.summarizer, timeout=how.timeout, retries=how.retries))
    written: bytes | Lines
    compacted, report = run_compact(transcript, how.options, summarizer,
                                    progress=progress_printer(quiet=False) if how.chunks_shown else None)
    if how.to is not None:  # compacted or not, in the target's format, which convert's own post-condition judges
        from ...ops.convert import convert

        written = dumps(convert(compacted, how.to))
    elif report.strategy == "none":
        written = how.reading.decoded(data)  # the input as read (with --encoding-errors replace, its U+FFFD)
        if how.options.slim:  # nothing to compact, but what the agent never sends goes all the same
            from ...ops.pruning.slim import slim_checked

            written, _ = slim_checked(transcript, written, operation="compact --slim", messages_path=how.reading.messages_path)
    else:
        written = written_out(compacted)
        as_written = verified(transcript, compacted, written, operation="compact", messages_path=how.reading.messages_path,
                              same_messages=False)  # judged on the bytes a reader will find
        if how.options.slim:  # and without what the agent never sends of what is left
            from ...ops.pruning.slim import slim_checked

            written, _ = slim_checked(as_written, written, operation="compact --slim",
                                      messages_path=how.reading.messages_path)
    lines = []
    if how.pre_compact and report.cut and report.strategy in ("summary", "emergency") and not how.diff:
        lines += run_pre_compact(how.pre_compact, name, transcript, report.cut)
    archive = None
    if how.archive is not None and not same_bytes(written, data):
        from ...ops.pruning.archive import compaction_record

        archive = (how.archive, compaction_record(data, bytes(written), name))
    reason = report.fallback_reason if report.strategy == "emergency" and not how.emergency else None
    if reason and not how.quiet:
        why = "" if reason.startswith(NEAR_THE_WINDOW) else "the summary failed, so "
        lines.append(f"{name}: {why}the emergency mode was used: {reason}")
    if not how.quiet:
        lines.append(f"{report.ci_line()} ({name})" if how.ci_lines else f"{name}: {report.line()}")
        lines += [f"{name}: note: {note}" for note in (report.notes[1:] if report.strategy == "none" else report.notes)]
        if how.verbose and report.facts:
            lines.append(f"{name}: the summary kept {report.facts_line()}")
    events: tuple[dict, ...] = ()
    changes = None
    if how.events:
        from ...ops.compaction.events import compaction_events

        events = compaction_events(name, report, how.options.threshold_tokens, started, time.time())
    if how.diff:
        from ...ops.diff import diff

        changes = tuple(diff(transcript, compacted, how.options.counting))
    return Result(output=written, report=report.as_dict(), stderr=tuple(lines), events=events, changes=changes,
                  fallback=f"the emergency mode ({reason})" if reason else None, archive=archive)


def run_pre_compact(command: str, name: str, transcript: Transcript, cut: int) -> list[str]:
    """Seed 003's pre-compaction event, as a command: the messages about to be replaced by the
    summary go to its stdin as a plain request body of the transcript's API. Its output lines,
    for stderr (stdout carries only data); a failure stops the file before anything is written."""
    import subprocess

    from ...core.errors import Location, RefusedByCommand
    from ...formats import dumps
    from ...ops.convert import ANTHROPIC, OPENAI, convert

    dropped = transcript.with_messages(transcript.messages[:cut])
    body = dumps(convert(dropped, ANTHROPIC if transcript.dialect == ANTHROPIC else OPENAI))
    environment = {**os.environ, "TRANSCOMPACT_FILE": name, "TRANSCOMPACT_CUT": str(cut)}
    try:
        done = subprocess.run(command, shell=True, input=body, env=environment, stdout=subprocess.PIPE)
    except OSError as error:
        raise RefusedByCommand(f"--pre-compact could not run: {error.strerror or error}; nothing written",
                               location=Location(name)) from None
    if done.returncode != 0:
        ended = f"was killed by signal {-done.returncode}" if done.returncode < 0 else f"exited with status {done.returncode}"
        # What it printed says why: with the error, in a worker as here (a failed file's lines are not shown).
        said = [line.strip() for line in done.stdout.decode("utf-8", "replace").splitlines() if line.strip()]
        raise RefusedByCommand(f"--pre-compact {command!r} {ended}; nothing written", location=Location(name),
                               hint=f"it printed: {' / '.join(said[-3:])}" if said else None)
    return done.stdout.decode("utf-8", "replace").splitlines()
