"""The command line: parse flags, read, call the library, write, render. Nothing else lives here."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable, Iterator

import click

from . import __version__
from .errors import ExitCode, TranscompactError, UsageError
from .files import STDIN, make_directory, read_input, write_file, write_stdout

TRACEBACK_ENV = "TRANSCOMPACT_TRACEBACK"


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
    from .formats import NAMES

    fn = click.option("--traceback", is_flag=True, expose_value=False, callback=_traceback, is_eager=True,
                      help="Show the Python traceback of an unexpected error (for bug reports).")(fn)
    fn = click.option("--messages-path", metavar="KEY",
                      help="Where the messages sit in a wrapper object, dotted: history, trajectory.0.messages.")(fn)
    fn = click.option("--format", "format_", type=click.Choice(NAMES), help="Read as this format instead of detecting it.")(fn)
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
        write_file(Path(output_dir) / Path(path if path != STDIN else "stdin.json").name, data)
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


def main() -> None:
    try:
        cli(prog_name="transcompact")
    except TranscompactError as error:  # only with --traceback: show it, keep the exit status
        import traceback

        traceback.print_exc()
        sys.exit(error.exit_code)
