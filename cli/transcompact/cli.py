"""The command line: parse flags, read, call the library, write, render. Nothing else lives here."""

from __future__ import annotations

import os
import sys
from typing import Callable, Iterator

import click

from . import __version__
from .errors import ExitCode, TranscompactError, UsageError
from .files import STDIN, make_directory, read_input, write_file, write_stdout

TRACEBACK_ENV = "TRANSCOMPACT_TRACEBACK"
# formats.NAMES, spelled out so that parsing flags does not import every format (a test keeps them equal)
FORMAT_NAMES = ("claude-code", "jsonl", "anthropic", "openai")


class Group(click.Group):
    """Turns every error into one line on stderr and its exit status (`design.md` §4)."""

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)
        except click.exceptions.Exit as done:
            code = done.exit_code
        except click.UsageError as error:
            click.echo(f"transcompact: error: {error.format_message()}", err=True)
            command = error.ctx.command_path if error.ctx is not None else "transcompact"
            click.echo(f"hint: see '{command} --help'", err=True)
            code = ExitCode.USAGE
        except click.ClickException as error:
            error.show()
            code = error.exit_code
        except click.exceptions.Abort:
            click.echo("transcompact: interrupted", err=True)
            code = ExitCode.INTERRUPTED
        except TranscompactError as error:
            if os.environ.get(TRACEBACK_ENV):
                raise
            click.echo(f"transcompact: error: {error}", err=True)
            if error.hint:
                click.echo(f"hint: {error.hint}", err=True)
            code = error.exit_code
        except KeyboardInterrupt:
            click.echo("transcompact: interrupted", err=True)
            code = ExitCode.INTERRUPTED
        except Exception as error:  # a bug: say so in one line, unless asked for the traceback
            if os.environ.get(TRACEBACK_ENV):
                raise
            click.echo(f"transcompact: error: internal error: {type(error).__name__}: {error}", err=True)
            click.echo("hint: run again with --traceback and report it", err=True)
            code = 70
        sys.exit(code or 0)


def _traceback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        os.environ[TRACEBACK_ENV] = "1"


def input_options(fn: Callable) -> Callable:
    """FILE... (stdin when none or `-`), --format, --messages-path, --traceback."""
    fn = click.option("--traceback", is_flag=True, expose_value=False, callback=_traceback, is_eager=True,
                      help="Show the Python traceback of an unexpected error (for bug reports).")(fn)
    fn = click.option("--messages-path", metavar="KEY",
                      help="Where the messages sit in a wrapper object, dotted: history, trajectory.0.messages.")(fn)
    fn = click.option("--format", "format_", type=click.Choice(FORMAT_NAMES), help="Read as this format instead of detecting it.")(fn)
    return click.argument("files", nargs=-1)(fn)


def output_options(fn: Callable) -> Callable:
    """-o, -i, --output-dir: where a rewritten transcript goes (stdout by default)."""
    fn = click.option("--output-dir", type=click.Path(file_okay=False), help="Write each output to DIR/<input name>.")(fn)
    fn = click.option("-i", "--in-place", is_flag=True, help="Rewrite each input file (atomically).")(fn)
    return click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), help="Write to FILE (atomically).")(fn)


def load_inputs(files: tuple[str, ...], format_: str | None, messages_path: str | None) -> Iterator[tuple[str, bytes, object]]:
    """(name, bytes, transcript) for each input, stdin when there is none."""
    from .formats import load

    for path in files or (STDIN,):
        name, data = read_input(path)
        yield path, data, load(data, name, format=format_, messages_path=messages_path)


def _check_output_flags(files: tuple[str, ...], output: str | None, in_place: bool, output_dir: str | None) -> None:
    chosen = [flag for flag, on in (("-o", output), ("-i", in_place), ("--output-dir", output_dir)) if on]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} cannot be used together")
    if in_place and (not files or STDIN in files):
        raise UsageError("-i rewrites files; stdin cannot be rewritten in place")
    if len(files) > 1 and not (in_place or output_dir):
        raise UsageError("several inputs need -i or --output-dir")


def emit(path: str, data: bytes, *, output: str | None, in_place: bool, output_dir: str | None) -> None:
    if in_place:
        write_file(path, data)
    elif output_dir:
        make_directory(output_dir)
        write_file(os.path.join(output_dir, os.path.basename(path if path != STDIN else "stdin.json")), data)
    elif output and output != STDIN:
        write_file(output, data)
    else:
        write_stdout(data)


def _where(index: int | None, line: int | None) -> str:
    """The part of a report line between the file name and the rule: `:12: message 3: `."""
    if line is not None and index is not None:
        return f":{line}: message {index}: "
    if line is not None:
        return f":{line}: "
    if index is not None:
        return f": message {index}: "
    return ": "


def _name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="transcompact")
def cli() -> None:
    """Keep long LLM conversations inside their context window.

    Reads a transcript (Anthropic Messages, OpenAI Chat Completions, JSON Lines of messages,
    Claude Code session logs) from files or stdin and writes a rewritten transcript to stdout.
    """


@cli.command()
@input_options
@click.option("--json", "as_json", is_flag=True, help="Print the violations as a JSON list.")
@click.option("--strict", is_flag=True, help="Treat warnings (e.g. the last message is not a user message) as errors.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit status tells.")
def check(files, format_, messages_path, as_json, strict, quiet):
    """Check transcripts against the providers' rules; exit 1 when one has an error.

    \b
    transcompact check session.jsonl
    transcompact check --json request.json | jq '.[].rule'
    """
    import orjson

    from .check import ERROR, check as run_check

    found_errors = False
    report = []
    for path, _, transcript in load_inputs(files, format_, messages_path):
        violations = run_check(transcript, strict=strict, path=None if path == STDIN else path)
        found_errors = found_errors or any(v.severity == ERROR for v in violations)
        if as_json:
            report += [{"file": _name(path), **v.as_dict()} for v in violations]
        elif not quiet:
            for v in violations:
                severity = "" if v.severity == ERROR else " (warning)"
                click.echo(f"{_name(path)}{_where(v.index, v.line)}{v.rule}{severity} {v.text}")
    if as_json and not quiet:
        write_stdout(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    sys.exit(ExitCode.VIOLATIONS if found_errors else ExitCode.OK)


@cli.command()
@input_options
@output_options
@click.option("-q", "--quiet", is_flag=True, help="Do not report the fixes on stderr.")
def repair(files, format_, messages_path, output, in_place, output_dir, quiet):
    """Make invalid transcripts valid with the smallest change, reporting each fix on stderr.

    A tool call with no result gets an error result "[No result recorded]"; an orphan tool
    result, an empty text block and an empty message are removed. A valid transcript is
    written back unchanged. Exit 1 if errors remain that repair cannot fix.

    \b
    transcompact repair broken.json > fixed.json
    transcompact repair -i ~/.claude/projects/*/SESSION.jsonl
    """
    from .check import check as run_check, errors
    from .formats import dump
    from .repair import repair as run_repair

    _check_output_flags(files, output, in_place, output_dir)
    remaining = False
    for path, data, transcript in load_inputs(files, format_, messages_path):
        repaired, fixes = run_repair(transcript)
        if not quiet:
            for fix in fixes:
                click.echo(f"{_name(path)}{_where(fix.index, fix.line)}{fix.rule} fixed: {fix.text}", err=True)
        left = errors(run_check(repaired))
        for v in left:
            click.echo(f"{_name(path)}{_where(v.index, v.line)}{v.rule} cannot be repaired: {v.text}", err=True)
        remaining = remaining or bool(left)
        emit(path, dump(repaired, data), output=output, in_place=in_place, output_dir=output_dir)
    sys.exit(ExitCode.VIOLATIONS if remaining else ExitCode.OK)


def _env(name: str) -> str:
    return f"TRANSCOMPACT_{name}"


def tokenizer_options(fn: Callable) -> Callable:
    """--tokenizer and --ratio: how every command that counts tokens counts them."""
    fn = click.option("--ratio", type=click.FloatRange(min=0, min_open=True), default=0.25, envvar=_env("RATIO"),
                      show_default=True, show_envvar=True, help="Tokens per character of the chars estimator.")(fn)
    return click.option("--tokenizer", type=click.Choice(["chars", "o200k", "cl100k", "anthropic"]), default="chars",
                        envvar=_env("TOKENIZER"), show_default=True, show_envvar=True,
                        help="chars: the spec's chars × ratio + 4 per message; o200k/cl100k: tiktoken, offline; "
                             "anthropic: the Messages API's count_tokens (needs ANTHROPIC_API_KEY).")(fn)


@cli.command()
@input_options
@tokenizer_options
@click.option("--calibrate", is_flag=True,
              help="Fit overhead + ratio × chars to the usage the transcript's responses recorded, and use it.")
@click.option("--model", metavar="NAME", help="Take the window and max output from this model's entry in the table "
                                             "(see the README); also the model --tokenizer anthropic asks about.")
@click.option("--window", type=click.IntRange(min=1), default=200_000, envvar=_env("WINDOW"), show_default=True,
              show_envvar=True, help="Context window in tokens.")
@click.option("--max-output", type=click.IntRange(min=0), default=16_000, envvar=_env("MAX_OUTPUT"), show_default=True,
              show_envvar=True, help="Tokens kept free for the reply; input budget = window − max output.")
@click.option("--threshold", type=click.FloatRange(min=0, min_open=True), default=100_000, envvar=_env("THRESHOLD"),
              show_default=True, show_envvar=True,
              help="Compaction threshold in tokens (a value <= 1 is a fraction of the input budget).")
@click.option("--top", type=click.IntRange(min=0), default=5, envvar=_env("TOP"), show_default=True, show_envvar=True,
              help="Show the N largest tool results.")
@click.option("--per-message", is_flag=True, help="List every message: index, role, tokens, running total.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (schema in the README).")
@click.option("--fail-over", type=click.IntRange(min=0), metavar="N",
              help="Exit 1 when a transcript's estimate is above N tokens (a CI gate).")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit status tells (with --fail-over).")
@click.pass_context
def estimate(ctx, files, format_, messages_path, tokenizer, ratio, calibrate, model, window, max_output, threshold, top,
             per_message, as_json, fail_over, quiet):
    """Count a transcript's tokens, show where they sit and how close it is to the window.

    \b
    transcompact estimate session.jsonl
    transcompact estimate --tokenizer o200k --per-message chat.json
    transcompact estimate --calibrate ~/.claude/projects/*/SESSION.jsonl
    transcompact estimate --fail-over 150000 -q logs/*.jsonl   # exit 1 if one is over
    """
    from click.core import ParameterSource

    from . import render
    from .estimate import Options, estimate as run_estimate, model_limits

    if model:
        model_window, model_output = model_limits(model) if (
            ctx.get_parameter_source("window") != ParameterSource.COMMANDLINE
            or ctx.get_parameter_source("max_output") != ParameterSource.COMMANDLINE
        ) else (window, max_output)
        if ctx.get_parameter_source("window") != ParameterSource.COMMANDLINE:
            window = model_window
        if ctx.get_parameter_source("max_output") != ParameterSource.COMMANDLINE:
            max_output = model_output
    options = Options(tokenizer=tokenizer, ratio=ratio, calibrate=calibrate, model=model, window=window,
                      max_output=max_output, threshold=threshold, top=top)
    estimates = [run_estimate(transcript, options) for _, _, transcript in load_inputs(files, format_, messages_path)]
    over = [e for e in estimates if fail_over is not None and e.tokens > fail_over]
    if not quiet:
        if as_json:
            write_stdout(render.estimate_json(estimates, show_messages=per_message))
        else:
            sections = render.estimate_sections(estimates, show_messages=per_message)
            if sys.stdout.isatty():
                render.rich_print(sections)
            else:
                write_stdout(render.plain(sections).encode())
        for e in over:
            click.echo(f"{e.name}: {e.tokens:,} tokens is over --fail-over {fail_over:,}", err=True)
    sys.exit(ExitCode.VIOLATIONS if over else ExitCode.OK)


def _number(name: str, default: int, help: str, minimum: int = 0):
    """A numeric flag with its TRANSCOMPACT_* variable (`--soft-trim-chars` ↔ TRANSCOMPACT_SOFT_TRIM_CHARS)."""
    return click.option(f"--{name}", type=click.IntRange(min=minimum), default=default, show_default=True,
                        envvar=_env(name.upper().replace("-", "_")), show_envvar=True, help=help)


def _postcondition(path: str, before, after) -> None:
    """A rewrite may not add a `check` error its input did not have (`design.md` §5)."""
    from .check import added_errors
    from .errors import PostConditionError

    new = added_errors(before, after)
    if new:
        v = new[0]
        raise PostConditionError(f"{_name(path)}: the rewrite would add {v.rule} at message {v.index}: {v.text}; nothing written",
                                 hint="this is a bug in transcompact: run again with --traceback and report it")


def prune_options(fn: Callable) -> Callable:
    """The flags of `prune`, which `compact` shares."""
    for option in reversed([
        _number("soft-trim-chars", 4000, "Soft-trim an unprotected tool result longer than this many characters."),
        _number("head", 1500, "Characters a soft-trimmed result keeps at its start."),
        _number("tail", 1500, "Characters a soft-trimmed result keeps at its end."),
        _number("hard-clear-after", 6, "Clear tool-result messages older than the last N to a placeholder."),
        _number("keep-last", 2, "Never touch the last N tool-result messages."),
        click.option("--exclude-tool", "exclude_tools", multiple=True, metavar="NAME",
                     help="Never prune results of this tool (repeatable)."),
        click.option("--clear-tool-inputs", is_flag=True, help="Also clear the input of a call whose result is cleared (to {})."),
        click.option("--clear-thinking", is_flag=True,
                     help="Remove thinking from every assistant message but the last (and the current turn's)."),
    ]):
        fn = option(fn)
    return fn


def _prune_options(flags: dict, archive: bool = False):
    from .prune import PruneOptions

    return PruneOptions(soft_trim_chars=flags.pop("soft_trim_chars"), head=flags.pop("head"), tail=flags.pop("tail"),
                        hard_clear_after=flags.pop("hard_clear_after"), keep_last=flags.pop("keep_last"),
                        exclude_tools=frozenset(flags.pop("exclude_tools")), clear_tool_inputs=flags.pop("clear_tool_inputs"),
                        clear_thinking=flags.pop("clear_thinking"), archive=archive)


@cli.command()
@input_options
@output_options
@prune_options
@click.option("--prune-ui-copy", is_flag=True, help="Claude Code logs: prune the toolUseResult copy the UI shows, too.")
@click.option("--archive", type=click.Path(dir_okay=False), metavar="FILE",
              help="Append every original prune replaces to FILE (JSON Lines), for `transcompact expand`.")
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
    import orjson

    from .formats import claude_code, dump
    from .prune import prune as run_prune

    _check_output_flags(files, output, in_place, output_dir)
    options = _prune_options(flags, archive=archive is not None)
    reports = []
    for path, data, transcript in load_inputs(files, format_, messages_path):
        pruned, report = run_prune(transcript, options)
        _postcondition(path, transcript, pruned)
        if prune_ui_copy and pruned.format == claude_code.NAME:
            pruned = claude_code.replace_ui_copies(pruned)
        output_bytes = dump(pruned, data)
        if archive is not None and report.archived:
            _append_lines(archive, [{"file": _name(path), **a.as_dict()} for a in report.archived])
        emit(path, output_bytes, output=output, in_place=in_place, output_dir=output_dir)
        reports.append({"file": _name(path), **report.as_dict()})
        if not quiet:
            click.echo(f"{_name(path)}: pruned {report.soft_trimmed} soft-trimmed, {report.cleared} cleared "
                       f"({report.protected} protected): {report.tokens_before:,} → {report.tokens_after:,} tokens", err=True)
    if report_file:
        data = orjson.dumps(reports[0] if len(reports) == 1 else reports, option=orjson.OPT_INDENT_2) + b"\n"
        write_stdout(data) if report_file == STDIN else write_file(report_file, data)


def _append_lines(path: str, values: list) -> None:
    """Append JSON Lines to `path` (an archive grows; what it held stays as it was)."""
    import orjson

    from .errors import OutputError

    try:
        with open(path, "ab") as handle:
            handle.write(b"".join(orjson.dumps(v) + b"\n" for v in values))
    except OSError as error:
        raise OutputError(f"cannot write the archive: {error.strerror}", location=None) from None


@cli.command()
@input_options
@output_options
@click.option("--archive", required=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="The archive `prune --archive` wrote.")
@click.option("-q", "--quiet", is_flag=True, help="Do not report on stderr.")
def expand(files, format_, messages_path, output, in_place, output_dir, archive, quiet):
    """Put back what `prune --archive` replaced.

    \b
    transcompact expand --archive originals.jsonl pruned.jsonl > original.jsonl
    """
    import orjson

    from .errors import InputError, Location
    from .expand import expand as run_expand
    from .formats import dump

    _check_output_flags(files, output, in_place, output_dir)
    _, archive_bytes = read_input(archive)
    records = []
    for number, line in enumerate(archive_bytes.splitlines(), start=1):
        if line.strip():
            try:
                records.append(orjson.loads(line))
            except orjson.JSONDecodeError as error:
                raise InputError(f"malformed archive line: {error.msg}", location=Location(archive, number)) from None
    for path, data, transcript in load_inputs(files, format_, messages_path):
        expanded, restored = run_expand(transcript, records)
        emit(path, dump(expanded, data), output=output, in_place=in_place, output_dir=output_dir)
        if not quiet:
            click.echo(f"{_name(path)}: restored {restored} originals from {archive}", err=True)


@cli.command("cut-point")
@input_options
@_number("keep-recent-tokens", 20_000, "Tokens the verbatim recent window holds at least.")
@tokenizer_options
@click.option("--json", "as_json", is_flag=True, help="Print the cut and both parts' sizes as JSON.")
def cut_point(files, format_, messages_path, keep_recent_tokens, tokenizer, ratio, as_json):
    """Print where old history ends and the verbatim recent window begins (a message index).

    0 means everything fits in the recent window. The cut never separates a tool call from
    its result.

    \b
    transcompact cut-point session.jsonl
    transcompact cut-point --json --keep-recent-tokens 8000 chat.json
    """
    import orjson

    from .cut import find_cut_point
    from .estimate import Options

    for path, _, transcript in load_inputs(files, format_, messages_path):
        cut = find_cut_point(transcript, keep_recent_tokens, Options(tokenizer=tokenizer, ratio=ratio))
        if as_json:
            write_stdout(orjson.dumps({"file": _name(path), **cut.as_dict()}) + b"\n" if len(files) > 1
                         else orjson.dumps(cut.as_dict(), option=orjson.OPT_INDENT_2) + b"\n")
        else:
            write_stdout((f"{_name(path)}\t{cut.index}\n" if len(files) > 1 else f"{cut.index}\n").encode())


def provider_options(fn: Callable) -> Callable:
    """--provider, --model, --base-url, --retries, --timeout: who writes a summary, and how patiently."""
    fn = click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, envvar=_env("TIMEOUT"),
                      show_default=True, show_envvar=True, help="Seconds to wait for each answer.")(fn)
    fn = _number("retries", 2, "Retries on 429, 500, 529 and timeouts, with backoff.")(fn)
    fn = click.option("--base-url", metavar="URL",
                      help="The endpoint (openai: e.g. http://localhost:8000/v1; default OPENAI_BASE_URL or OpenAI's; "
                           "anthropic: default ANTHROPIC_BASE_URL or Anthropic's).")(fn)
    fn = click.option("--model", envvar=_env("MODEL"), show_envvar=True, metavar="NAME",
                      help="The summarizer model (default claude-haiku-4-5 for anthropic, gpt-4o-mini for openai).")(fn)
    return click.option("--provider", type=click.Choice(["anthropic", "openai"]), default="anthropic",
                        envvar=_env("PROVIDER"), show_default=True, show_envvar=True,
                        help="anthropic (the official SDK) or any OpenAI-compatible Chat Completions endpoint.")(fn)


def summary_options(fn: Callable) -> Callable:
    """What is summarized and how: the flags `summarize` and `compact` share."""
    fn = _number("result-chars", 2000, "A tool result is shown to the summarizer cut to this many characters.")(fn)
    fn = _number("summary-input-tokens", 150_000, "The summarizer's input budget; more is sent in chunks.", minimum=1000)(fn)
    fn = click.option("--instructions", metavar="TEXT", help="A focus for the summary, as /compact <instructions>.")(fn)
    fn = click.option("--previous-summary", type=click.Path(dir_okay=False), metavar="FILE",
                      help="Update this summary (Markdown) instead of starting a new one.")(fn)
    fn = tokenizer_options(fn)
    return _number("keep-recent-tokens", 20_000, "Tokens the verbatim recent window holds at least.")(fn)


def _progress(quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    return lambda k, n: click.echo(f"summarizing: chunk {k} of {n}", err=True)


@cli.command()
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
    import orjson

    from .estimate import Options
    from .providers import provider as make_provider
    from .summarize import SummaryOptions, summarize as run_summarize

    if len(files) > 1:
        raise UsageError("summarize takes one transcript (run it once per file)")
    given = read_input(previous_summary)[1].decode("utf-8", "replace") if previous_summary else None
    options = SummaryOptions(keep_recent_tokens=keep_recent_tokens, everything=everything,
                             counting=Options(tokenizer=tokenizer, ratio=ratio), instructions=instructions,
                             previous_summary=given, result_chars=result_chars, input_tokens=summary_input_tokens)
    for path, _, transcript in load_inputs(files, format_, messages_path):
        summarizer = make_provider(provider, model, base_url=base_url, timeout=timeout, retries=retries)
        try:
            result = run_summarize(transcript, summarizer, options, progress=_progress(quiet))
        finally:
            summarizer.close()
        if result is None:
            if not quiet:
                click.echo(f"{_name(path)}: nothing old to summarize: everything fits in the recent window "
                           f"(--keep-recent-tokens {keep_recent_tokens:,}); --all summarizes every message", err=True)
            if as_json:
                write_stdout(orjson.dumps({"summary": None}) + b"\n")
            continue
        if not quiet:
            for warning in result.warnings:
                click.echo(f"{_name(path)}: warning: {warning}", err=True)
        if as_json:
            write_stdout(orjson.dumps(result.as_dict(), option=orjson.OPT_INDENT_2) + b"\n")
        else:
            write_stdout(result.text.encode() + b"\n")


@cli.command()
@input_options
@output_options
@click.option("--threshold", type=click.FloatRange(min=0, min_open=True), default=100_000, envvar=_env("THRESHOLD"),
              show_default=True, show_envvar=True,
              help="Compact only above this many estimated tokens (a value <= 1 is a fraction of the input budget).")
@click.option("--force", is_flag=True, help="Compact even under the threshold.")
@click.option("--emergency", is_flag=True, help="Drop the old part behind a checkpoint built without a model.")
@click.option("--no-fallback", is_flag=True, help="When the summary fails, exit 4 instead of falling back to --emergency.")
@_number("keep-user-tokens", 4000, "The user's own old messages kept verbatim in the summary message (0: none).")
@click.option("--keep-thinking", is_flag=True, help="Keep thinking blocks in the kept messages (removed by default).")
@click.option("--drop-history", is_flag=True, help="Claude Code logs: write only the new chain, not the old lines.")
@_number("window", 200_000, "Context window in tokens.", minimum=1)
@_number("max-output", 16_000, "Tokens kept free for the reply; input budget = window − max output.")
@click.option("--calibrate", is_flag=True, help="Estimate with the fit to the usage the transcript recorded (see estimate).")
@prune_options
@summary_options
@provider_options
@click.option("--report", "report_file", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
              help="Write the report as JSON to FILE.")
@click.option("-q", "--quiet", is_flag=True, help="Do not report on stderr.")
def compact(files, format_, messages_path, output, in_place, output_dir, threshold, force, emergency, no_fallback,
            keep_user_tokens, keep_thinking, drop_history, window, max_output, calibrate, keep_recent_tokens, tokenizer,
            ratio, previous_summary, instructions, summary_input_tokens, result_chars, provider, model, base_url, retries,
            timeout, report_file, quiet, **flags):
    """Compact transcripts: prune, cut, summarize the old part, keep the recent window verbatim.

    Under --threshold the transcript goes out unchanged. If the summary fails (no key, an
    error, a bad summary), the emergency mode takes over: no model call, a checkpoint built
    from the old part, and a result that always fits. The output is always valid and smaller.

    \b
    cat session.json | transcompact compact > compacted.json
    transcompact compact --emergency -i logs/*.jsonl
    transcompact compact --provider openai --base-url http://localhost:8000/v1 --model qwen3 chat.json
    """
    import orjson

    from .compact import CompactOptions, compact as run_compact
    from .estimate import Options
    from .formats import dump
    from .providers import provider as make_provider
    from .summarize import SummaryOptions

    _check_output_flags(files, output, in_place, output_dir)
    counting = Options(tokenizer=tokenizer, ratio=ratio, calibrate=calibrate, window=window, max_output=max_output)
    given = read_input(previous_summary)[1].decode("utf-8", "replace") if previous_summary else None
    options = CompactOptions(
        threshold=threshold, force=force, emergency=emergency, fallback=not no_fallback, window=window,
        max_output=max_output, counting=counting, pruning=_prune_options(flags),
        summary=SummaryOptions(keep_recent_tokens=keep_recent_tokens, counting=counting, instructions=instructions,
                               previous_summary=given, result_chars=result_chars, input_tokens=summary_input_tokens),
        keep_user_tokens=keep_user_tokens, keep_thinking=keep_thinking, drop_history=drop_history)
    reports = []
    for path, data, transcript in load_inputs(files, format_, messages_path):
        rebuilt, report = run_compact(
            transcript, options, lambda: make_provider(provider, model, base_url=base_url, timeout=timeout, retries=retries),
            progress=_progress(quiet))
        # A Claude Code log comes back re-read with its appended lines: its bytes are not the input's.
        same_source = rebuilt is not None and rebuilt.transcript.source is transcript.source
        emit(path, data if rebuilt is None else dump(rebuilt.transcript, data if same_source else None),
             output=output, in_place=in_place and rebuilt is not None, output_dir=output_dir)
        reports.append({"file": _name(path), **report.as_dict()})
        if not quiet:
            if report.fallback_reason and report.strategy == "emergency" and not emergency:
                click.echo(f"{_name(path)}: the summary failed, so the emergency mode was used: {report.fallback_reason}", err=True)
            click.echo(f"{_name(path)}: {report.line()}", err=True)
            for note in report.notes if report.strategy != "none" else ():
                click.echo(f"{_name(path)}: note: {note}", err=True)
    if report_file:
        data = orjson.dumps(reports[0] if len(reports) == 1 else reports, option=orjson.OPT_INDENT_2) + b"\n"
        write_stdout(data) if report_file == STDIN else write_file(report_file, data)


def main() -> None:
    try:
        cli(prog_name="transcompact")
    except TranscompactError as error:  # only with --traceback: show it, keep the exit status
        import traceback

        traceback.print_exc()
        sys.exit(error.exit_code)
