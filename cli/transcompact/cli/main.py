"""The command line: parse flags, read, call the library, write, render. Nothing else lives here."""

from __future__ import annotations

import contextlib
import functools
import math
import os
import signal
import sys
from typing import Callable, Iterator

import click

from ..core import settings
from .. import __version__
from ..core.errors import ENVIRONMENT_PREFIX, ExitCode, InternalError, TranscompactError, UsageError, option, variable_of
from ..io.files import STDIN

# formats.NAMES, spelled out so that parsing flags does not import every format (a test keeps them equal)
FORMAT_NAMES = ("claude-code", "codex", "gemini", "pi", "openhands", "openhands-v0", "copilot", "jsonl", "responses", "anthropic", "openai")
# convert.TARGETS, spelled out for the same reason (a test keeps them equal)
CONVERSION_TARGETS = ("anthropic", "openai", "jsonl")


# Each command: the module in `commands/` that defines it, and the line `transcompact --help` shows.
# A command's module is imported only when it runs, so start-up pays for one command, not all.
COMMANDS = {
    "check": ("check", "Check transcripts against the providers' rules; exit 1 when one has an error."),
    "compact": ("compact", "Compact transcripts: prune, cut, summarize the old part, keep the recent window verbatim."),
    "cut-point": ("cut_point", "Print where old history ends and the verbatim recent window begins (a message index)."),
    "estimate": ("estimate", "Count a transcript's tokens, show where they sit and how close it is to the window."),
    "expand": ("expand", "Put back what `prune --archive` replaced and `compact --archive` dropped."),
    "prune": ("prune", "Trim and clear old tool results, without a model."),
    "repair": ("repair", "Make invalid transcripts valid with the smallest change, reporting each fix on stderr."),
    "summarize": ("summarize", "Write a structured checkpoint summary of the old part of a transcript, by an LLM."),
}


class Group(click.Group):
    """Loads each command when it runs, and turns every error into one line on stderr and its
    exit status (`design.md` §4)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        import importlib

        module = importlib.import_module(f"{__package__}.commands.{COMMANDS[name][0]}")
        return _checked(getattr(module, name.replace("-", "_")))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from COMMANDS, without importing every command to read its help."""
        from click.utils import make_default_short_help

        limit = formatter.width - 6 - max(map(len, COMMANDS))
        with formatter.section("Commands"):
            formatter.write_dl([(name, make_default_short_help(COMMANDS[name][1], limit)) for name in sorted(COMMANDS)])

    def main(self, *args, **kwargs):
        kwargs["standalone_mode"] = False
        self.show_traceback = False  # set by --traceback (`_traceback`), read when an error ends the run
        self.from_environment: frozenset[str] = frozenset()  # the settings a TRANSCOMPACT_* variable gave (`_checked`)
        with _termination_interrupts():
            code = self._exit_status(*args, **kwargs)
        sys.exit(code or 0)

    def _exit_status(self, *args, **kwargs) -> int:
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
            if self.show_traceback:
                raise
            # The settings a message names, as their flags, or as the variables that gave their values.
            line, hint = error.for_command_line(variable_of(self.from_environment))
            click.echo(f"transcompact: error: {line}", err=True)
            if hint:
                click.echo(f"hint: {hint}", err=True)
            code = error.exit_code
        except KeyboardInterrupt:
            click.echo("transcompact: interrupted", err=True)
            code = ExitCode.INTERRUPTED
        except Exception as error:  # a bug: say so in one line, unless asked for the traceback
            if self.show_traceback:
                raise
            line, hint = InternalError(error).for_command_line()
            click.echo(f"transcompact: error: {line}", err=True)
            click.echo(f"hint: {hint}", err=True)
            code = InternalError.exit_code
        return code


@contextlib.contextmanager
def _termination_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP end a command as Ctrl-C does: a KeyboardInterrupt, so that a file being
    written loses its temporary file and the exit status is 130 (`design.md` §4)."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    try:
        previous = {number: signal.signal(number, interrupt) for number in wanted}
    except ValueError:  # not the main thread (a library user's worker): signals are theirs to handle
        previous = {}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _traceback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.find_root().command.show_traceback = True


def traceback_option(fn: Callable) -> Callable:
    return click.option("--traceback", is_flag=True, expose_value=False, callback=_traceback, is_eager=True,
                        help="Show the Python traceback of an unexpected error (for bug reports).")(fn)


def _glob_option(fn: Callable) -> Callable:
    return click.option("--glob", "patterns", multiple=True, metavar="PATTERN",
                        help="In a directory, read the files whose path matches PATTERN (repeatable; default: "
                             "*.json and *.jsonl).")(fn)


def file_options(fn: Callable) -> Callable:
    """FILE... (files, directories, `-` for stdin; stdin when none), --glob, --traceback."""
    return click.argument("files", nargs=-1)(_glob_option(traceback_option(fn)))


def input_options(fn: Callable) -> Callable:
    """The files, --glob, --format, --messages-path, --encoding-errors, --traceback: where
    transcripts come from and how they are read."""
    fn = traceback_option(fn)
    fn = click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default=settings.ENCODING_ERRORS,
                      show_default=True,
                      help="What invalid UTF-8 gets: an error (exit 3), or U+FFFD in its place (the bytes written "
                           "then differ from those read).")(fn)
    fn = click.option("--messages-path", metavar="KEY",
                      help="Where the messages sit in a wrapper object, dotted: history, trajectory.0.messages.")(fn)
    fn = click.option("--format", "format_", type=click.Choice(FORMAT_NAMES), help="Read as this format instead of detecting it.")(fn)
    return click.argument("files", nargs=-1)(_glob_option(fn))


def _scheduler(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        from ..run.batch import SCHEDULER

        ctx.meta[SCHEDULER] = value


def batch_options(fn: Callable) -> Callable:
    """--jobs, --fail-fast, --scheduler: how several inputs are run."""
    # Not passed to the command, which hands its files to the batch: the batch reads it (batch.SCHEDULER).
    fn = click.option("--scheduler", metavar="ADDRESS", envvar=env_name("SCHEDULER"), show_envvar=True,
                      expose_value=False, callback=_scheduler,
                      help="Work on the files on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786), "
                           "not in local processes; needs transcompact[dask].")(fn)
    fn = click.option("--fail-fast", is_flag=True,
                      help="Stop at the first file that fails (an error, not a finding); those already "
                           "under way are finished.")(fn)
    return click.option("-j", "--jobs", type=Number(1), envvar=env_name("JOBS"), show_envvar=True,
                        show_default="the CPUs; 1 for one input", help="Files worked on at once, each in its own process.")(fn)


def output_options(fn: Callable) -> Callable:
    """-o, -i, --output-dir, --dry-run, --diff, --json, --report: where a rewritten transcript goes
    (stdout by default), or what it would change."""
    fn = click.option("--report", "report_file", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
                      help="Write a JSON line per file to FILE (`-`: stdout) as each is done: status, output, error "
                           "and the command's report (docs/input-output.md#reports).")(fn)
    fn = click.option("--json", "diff_as_json", is_flag=True, help="With --diff: the changes as one JSON report.")(fn)
    fn = click.option("--diff", is_flag=True,
                      help="Show on stdout what would be removed or replaced, per message and block; write nothing "
                           "(implies --dry-run).")(fn)
    fn = click.option("--dry-run", is_flag=True, help="Do everything but write: say per file what would be written.")(fn)
    fn = click.option("--output-dir", type=click.Path(file_okay=False),
                      help="Write each output to DIR/<its path under the directory argument, or its name>.")(fn)
    fn = click.option("-i", "--in-place", is_flag=True, help="Rewrite each input file that changes (atomically).")(fn)
    return click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True), help="Write to FILE (atomically).")(fn)


def verbose_option(fn: Callable) -> Callable:
    """-v (the rewriting commands): a line for every file of a batch, the unchanged ones too."""
    return click.option("-v", "--verbose", is_flag=True,
                        help="Report every file of a batch on stderr, the unchanged ones too (they are otherwise only "
                             "counted in the closing summary), and what the summary kept of each kind of fact.")(fn)


def check_output_flags(files: tuple[str, ...], output: str | None, in_place: bool, output_dir: str | None, *,
                       diff: bool = False, dry_run: bool = False, report_file: str | None = None) -> None:
    """At most one of -o, -i, --output-dir; and with several inputs (or a directory), -i or
    --output-dir, unless a `diff` or a dry run takes their place: stdout never carries several
    transcripts, nor a transcript and the report."""
    from ..io.inputs import several

    chosen = [flag for flag, on in (("-o", output), ("-i", in_place), ("--output-dir", output_dir)) if on]
    if len(chosen) > 1:
        raise UsageError(f"{' and '.join(chosen)} cannot be used together")
    if in_place and (not files or STDIN in files):
        raise UsageError("-i rewrites files; stdin cannot be rewritten in place")
    if several(files) and not (in_place or output_dir or diff or dry_run):
        directory = len(files) == 1  # several only because it is a directory
        raise UsageError("several inputs need -i or --output-dir", hint="a directory counts as several" if directory else None)
    to_stdout = not (in_place or output_dir or diff or dry_run or (output and output != STDIN))
    if report_file == STDIN and to_stdout:
        raise UsageError("--report - and the transcript would both go to stdout",
                         hint="give --report a file, or write the transcript with -o FILE, -i or --output-dir")


def conversion_option(fn: Callable) -> Callable:
    """--to (prune, compact, repair): the output as a plain request body instead of the input's format."""
    return click.option("--to", type=click.Choice(CONVERSION_TARGETS), envvar=env_name("TO"), show_envvar=True,
                        help="Write the active view (what the agent would send now) as a plain request body instead: "
                             "anthropic or openai (JSON), jsonl (OpenAI messages, one a line). Not with -i.")(fn)


def conversion_suffix(to: str | None) -> str | None:
    """The extension of an output converted with --to under --output-dir (None: the input's).
    The conversion module is imported only when one is asked for: a plain run starts without it."""
    if not to:
        return None
    from ..ops.convert import SUFFIX

    return SUFFIX[to]


def check_conversion_flags(to: str | None, in_place: bool) -> None:
    """--to writes another format than the input's: never over the input, which stays the agent's own."""
    if to and in_place:
        raise UsageError("-i and --to cannot be used together: --to writes another format than the input's",
                         hint="write the conversion with -o FILE or --output-dir DIR")


def start_archive(archive: str | None, *, command: str, to: str | None, dry_run: bool) -> None:
    """--archive (prune, compact): refused with --to, and made now, whatever the inputs hold, for
    the `expand --archive` that follows (not in a dry run, which writes nothing)."""
    if archive is None:
        return
    if to:
        raise UsageError("--archive and --to cannot be used together",
                         hint=f"expand puts the originals back into {command}'s output, in the input's own format")
    if not dry_run:
        from ..ops.archive import create

        create(archive)


def archived(archive: str, records) -> list[str]:
    """Add one file's records to the archive, before its output is written (a rewritten file never
    lacks its originals); the warning to print when a torn last record was left out."""
    from ..ops.archive import add

    torn = add(archive, records)
    return [] if torn is None else [torn_warning(archive, torn)]


def torn_warning(archive: str, line: int) -> str:
    return f"{archive}:{line}: warning: left out a last line that was cut short (an earlier write did not finish)"


def diff_view(diff: bool, as_json: bool) -> str | None:
    """What --diff shows: "text", "json" (with --json), or None without --diff."""
    if as_json and not diff:
        raise UsageError("--json shows the changes --diff finds: use it with --diff",
                         hint="a JSON line per file, on any run: --report FILE")
    return ("json" if as_json else "text") if diff else None


def where(index: int | None, line: int | None) -> str:
    """The part of a report line between the file name and the rule: `:12: message 3: `."""
    if line is not None and index is not None:
        return f":{line}: message {index}: "
    if line is not None:
        return f":{line}: "
    if index is not None:
        return f": message {index}: "
    return ": "


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="transcompact")
def cli() -> None:
    """Keep long LLM conversations inside their context window.

    Reads a transcript (Anthropic Messages, OpenAI Chat Completions, JSON Lines of messages,
    Claude Code session logs) from files or stdin and writes a rewritten transcript to stdout.

    Every default is also a TRANSCOMPACT_* variable (each command's --help names them); a flag
    beats a variable, and a variable set to the empty string counts as unset.
    """


def env_name(name: str) -> str:
    return f"{ENVIRONMENT_PREFIX}{name}"


# The largest count a flag takes (tokens, characters, messages): far beyond any real window, and
# small enough that arithmetic on it stays exact.
LIMIT = 10**9


class Number(click.FloatRange):
    """The type of every numeric flag and TRANSCOMPACT_* variable: a finite number in a range, a
    whole one unless `whole=False`. (click's ranges let `nan` through and have no maximum, and
    `inf`, `nan` or `1e308` then fail deep inside a command.)"""

    def __init__(self, minimum: float, maximum: float = LIMIT, *, whole: bool = True, min_open: bool = False):
        super().__init__(minimum, maximum, min_open=min_open)
        self.whole = whole
        self.name = "integer" if whole else "number"

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = int(value) if self.whole else float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not {'a whole number' if self.whole else 'a number'}.", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value} is not a finite number.", param, ctx)
        if number < self.min or (self.min_open and number == self.min) or number > self.max:
            self.fail(f"{value} is not in the range {self.min}{'<' if self.min_open else '<='}x<={self.max}.", param, ctx)
        return number

    def _describe_range(self) -> str:
        """For --help: the minimum, and the maximum where it says more than 'no real value reaches it'."""
        if self.max == LIMIT:
            return f"x{'>' if self.min_open else '>='}{self.min}"
        return f"{self.min}{'<' if self.min_open else '<='}x<={self.max}"

    @classmethod
    def like(cls, other: click.ParamType) -> "Number":
        """The Number for a click INT, FLOAT, IntRange or FloatRange."""
        maximum = getattr(other, "max", None)
        minimum = getattr(other, "min", None)
        return cls(-LIMIT if minimum is None else minimum, LIMIT if maximum is None else maximum,
                   whole=isinstance(other, click.types.IntParamType), min_open=getattr(other, "min_open", False))


# Commands that take --window and --max-output from elsewhere when not given, and check the
# budget themselves after: estimate (--model's entry in the table).
BUDGET_CHECKED_BY_COMMAND = frozenset({"estimate"})


def check_budget(window: int, max_output: int) -> None:
    if max_output >= window:
        raise UsageError(f"{option('max_output')} ({max_output:,}) must be below {option('window')} ({window:,})",
                         hint="the input budget is the window less the max output")


def _checked(command: click.Command) -> click.Command:
    """The command with every numeric option a Number and its budget checked, whoever declared them.

    Done once per command, when it is first loaded, so that no command can forget a check.
    """
    if getattr(command, "_transcompact_checked", False):
        return command
    for param in command.params:
        if isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType)) and not isinstance(param.type, Number):
            param.type = Number.like(param.type)
    names = {param.name for param in command.params}
    budget = {"window", "max_output"} <= names and command.name not in BUDGET_CHECKED_BY_COMMAND
    callback = command.callback

    @functools.wraps(callback)
    def checked(*args, **kwargs):
        ctx = click.get_current_context()
        ctx.find_root().command.from_environment = frozenset(
            name for name in names if ctx.get_parameter_source(name) is click.core.ParameterSource.ENVIRONMENT)
        if budget:
            check_budget(kwargs["window"], kwargs["max_output"])
        return callback(*args, **kwargs)

    command.callback = checked
    command._transcompact_checked = True
    return command


def anthropic_api(tokenizer: str):
    """Whom `--tokenizer anthropic` asks: resolved here from the environment, as every provider is."""
    if tokenizer != "anthropic":
        return None
    from ..providers import resolve

    return resolve("anthropic", environ=os.environ)


def tokenizer_options(fn: Callable) -> Callable:
    """--tokenizer and --ratio: how every command that counts tokens counts them."""
    fn = click.option("--ratio", type=Number(0, 10, whole=False, min_open=True), default=settings.RATIO, envvar=env_name("RATIO"),
                      show_default=True, show_envvar=True, help="Tokens per character of the chars estimator.")(fn)
    return click.option("--tokenizer", type=click.Choice(["chars", "o200k", "cl100k", "anthropic"]), default=settings.TOKENIZER,
                        envvar=env_name("TOKENIZER"), show_default=True, show_envvar=True,
                        help="chars: the spec's chars × ratio + 4 per message; o200k/cl100k: tiktoken, offline; "
                             "anthropic: the Messages API's count_tokens (needs ANTHROPIC_API_KEY).")(fn)


def count_option(fn: Callable) -> Callable:
    """--count: whether the count of a transcript with recorded usage is anchored on it (estimate, compact)."""
    return click.option("--count", type=click.Choice(["usage", "content"]), default=settings.COUNT, envvar=env_name("COUNT"),
                        show_default=True, show_envvar=True,
                        help="usage: when the responses recorded usage, the context the last one recorded (system "
                             "prompt and tool schemas included, which a log does not hold) + the estimate of the "
                             "messages after it; content: only what the transcript holds.")(fn)


def number_option(name: str, default: int, help: str, minimum: int = 0, maximum: int = LIMIT):
    """A numeric flag with its TRANSCOMPACT_* variable (`--soft-trim-chars` ↔ TRANSCOMPACT_SOFT_TRIM_CHARS)."""
    return click.option(f"--{name}", type=Number(minimum, maximum), default=default, show_default=True,
                        envvar=env_name(name.upper().replace("-", "_")), show_envvar=True, help=help)


def _tool_kinds(ctx, param, values) -> tuple[tuple[str, str], ...]:
    """--kind TOOL=KIND, as (tool, kind) pairs."""
    from ..ops.truncate import KINDS

    pairs = []
    for value in values:
        tool, _, kind = value.partition("=")
        if not tool or kind not in KINDS:
            raise click.BadParameter(f"{value!r} is not TOOL=KIND with KIND one of {', '.join(KINDS)}", ctx, param)
        pairs.append((tool, kind))
    return tuple(pairs)


def prune_options(fn: Callable) -> Callable:
    """The flags of `prune`, which `compact` shares; some speak the names of Anthropic's context
    editing (`clear_tool_uses_20250919`, `clear_thinking_20251015`: docs/prune.md)."""
    for flag in reversed([
        number_option("soft-trim-chars", settings.SOFT_TRIM_CHARS, "Soft-trim an unprotected tool result longer than this many characters."),
        number_option("head", settings.HEAD, "Characters a soft-trimmed result keeps at its start."),
        number_option("tail", settings.TAIL, "Characters a soft-trimmed result keeps at its end."),
        number_option("hard-clear-after", settings.HARD_CLEAR_AFTER, "Clear tool-result messages older than the last N to a placeholder."),
        number_option("keep-last", settings.KEEP_LAST, "Never touch the last N tool-result messages."),
        click.option("--exclude-tool", "exclude_tools", multiple=True, metavar="NAME",
                     help="Never prune results of this tool (repeatable)."),
        click.option("--clear-tool-inputs", is_flag=True, help="Also clear the input of a call whose result is cleared (to {})."),
        click.option("--clear-thinking", is_flag=True,
                     help="Remove thinking from every assistant message but the last (and the current turn's)."),
        click.option("--by-kind", is_flag=True,
                     help="Instead of the soft trim, cut a result over --result-token-cap by the kind of output its "
                          "tool gives: head-tail lines (shells), matches (grep, search), file (reads), generic."),
        number_option("result-token-cap", settings.RESULT_TOKEN_CAP, "With --by-kind: the tokens (characters ÷ 4) a result is cut to.", minimum=1),
        click.option("--kind", "kinds", multiple=True, metavar="TOOL=KIND", envvar=env_name("KIND"), show_envvar=True,
                     callback=_tool_kinds, help="With --by-kind: the output of TOOL is of KIND (repeatable; over the default map)."),
        click.option("--keep-tool-uses", type=Number(0), metavar="N", envvar=env_name("KEEP_TOOL_USES"), show_envvar=True,
                     help="The API's keep: the results of the last N tool uses stay, every older one is cleared "
                          "(instead of --keep-last, --hard-clear-after and the soft trim)."),
        number_option("clear-at-least", settings.CLEAR_AT_LEAST, "The API's clear_at_least: edit no tool result unless that saves this many tokens."),
        click.option("--clear-tool-inputs-of", "clear_tool_inputs_of", multiple=True, metavar="NAME",
                     help="Clear the input of a call of this tool whose result is cleared (repeatable; --clear-tool-inputs: of every tool)."),
        click.option("--keep-thinking-turns", type=Number(1), metavar="N", envvar=env_name("KEEP_THINKING_TURNS"), show_envvar=True,
                     help="The API's thinking_turns: remove thinking but in the last N turns (implies --clear-thinking; 1: its own)."),
    ]):
        fn = flag(fn)
    return fn


def prune_options_from(flags: dict, archive: bool = False):
    from ..ops.prune import PruneOptions

    inputs_of = frozenset(flags.pop("clear_tool_inputs_of"))
    keep_thinking_turns = flags.pop("keep_thinking_turns")
    return PruneOptions(soft_trim_chars=flags.pop("soft_trim_chars"), head=flags.pop("head"), tail=flags.pop("tail"),
                        hard_clear_after=flags.pop("hard_clear_after"), keep_last=flags.pop("keep_last"),
                        exclude_tools=frozenset(flags.pop("exclude_tools")),
                        clear_tool_inputs=True if flags.pop("clear_tool_inputs") else inputs_of or False,
                        clear_thinking=flags.pop("clear_thinking") or keep_thinking_turns is not None,
                        keep_thinking_turns=keep_thinking_turns or settings.KEEP_THINKING_TURNS, archive=archive, by_kind=flags.pop("by_kind"),
                        result_token_cap=flags.pop("result_token_cap"), kinds=flags.pop("kinds"),
                        keep_tool_uses=flags.pop("keep_tool_uses"), clear_at_least=flags.pop("clear_at_least"))


def provider_options(fn: Callable) -> Callable:
    """--provider, --model, --base-url, --retries, --timeout: who writes a summary, and how patiently."""
    fn = click.option("--timeout", type=Number(0, 24 * 3600, whole=False, min_open=True), default=settings.TIMEOUT,
                      envvar=env_name("TIMEOUT"), show_default=True, show_envvar=True, help="Seconds to wait for each answer.")(fn)
    fn = number_option("retries", settings.RETRIES, "Retries on connection errors, timeouts, 408, 409, 429 and 5xx, with backoff.", maximum=100)(fn)
    fn = click.option("--base-url", metavar="URL",
                      help="The endpoint (openai: e.g. http://localhost:8000/v1; default OPENAI_BASE_URL or OpenAI's; "
                           "anthropic: default ANTHROPIC_BASE_URL or Anthropic's).")(fn)
    fn = click.option("--model", envvar=env_name("MODEL"), show_envvar=True, metavar="NAME",
                      help=f"The summarizer model (default {settings.MODELS['anthropic']} for anthropic, {settings.MODELS['openai']} for openai).")(fn)
    return click.option("--provider", type=click.Choice(["anthropic", "openai"]), default=settings.PROVIDER,
                        envvar=env_name("PROVIDER"), show_default=True, show_envvar=True,
                        help="anthropic (the official SDK) or any OpenAI-compatible Chat Completions endpoint.")(fn)


def summary_options(fn: Callable) -> Callable:
    """What is summarized and how: the flags `summarize` and `compact` share."""
    fn = number_option("result-chars", settings.RESULT_CHARS, "A tool result is shown to the summarizer cut to this many characters.")(fn)
    fn = number_option("summary-input-tokens", settings.SUMMARY_INPUT_TOKENS, "The summarizer's input budget; more is sent in chunks.", minimum=1000)(fn)
    fn = click.option("--style", type=click.Choice(settings.STYLES), default=settings.STYLE,
                      envvar=env_name("STYLE"), show_default=True, show_envvar=True,
                      help="checkpoint: the spec's sections (Goal, Progress, Critical Context, …); narrative: a prose "
                           "account of what happened and what is next.")(fn)
    fn = click.option("--instructions", metavar="TEXT", help="A focus for the summary, as /compact <instructions>.")(fn)
    fn = click.option("--previous-summary", type=click.Path(dir_okay=False), metavar="FILE",
                      help="Update this summary (Markdown) instead of starting a new one.")(fn)
    fn = tokenizer_options(fn)
    fn = keep_recent_messages_option(fn)
    return number_option("keep-recent-tokens", settings.KEEP_RECENT_TOKENS,
                         "Tokens of the verbatim recent window: compact keeps at most this, summarize's cut at least.")(fn)


def keep_recent_messages_option(fn: Callable) -> Callable:
    return number_option("keep-recent-messages", settings.KEEP_RECENT_MESSAGES,
                         "The verbatim recent window holds at least this many messages too (never splitting a tool "
                         "call from its result).")(fn)


def progress_printer(quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    return lambda k, n: click.echo(f"summarizing: chunk {k} of {n}", err=True)


def terminal_columns() -> int:
    """The width `shutil.get_terminal_size` gives (COLUMNS, else the terminal's, else 80), found
    without importing shutil, which brings bz2, lzma and zlib: a tenth of `--help`'s start-up."""
    with contextlib.suppress(ValueError):
        if (columns := int(os.environ.get("COLUMNS", 0))) > 0:
            return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def main() -> None:
    try:
        cli(prog_name="transcompact", terminal_width=terminal_columns())
    except TranscompactError as error:  # only with --traceback: show it, keep the exit status
        import traceback

        traceback.print_exc()
        sys.exit(error.exit_code)
