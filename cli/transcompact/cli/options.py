"""The flags the commands share, and what they become. A group of flags reaches a command as one
argument (`OptionGroup`): where the inputs come from and how they are read (a `Reading`), where
the outputs go (`Outputs`), how a batch runs (a `Running`), the pruning (a `PruneOptions`), the
counting (an estimate `Options`), the summary (a `SummaryOptions`), who writes it (`Asking`); so
a new flag touches its group, not every command that has it. The library behind a group is
imported when its command runs, not when its flags are declared.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import click

from ..core import settings
from ..core.errors import ENVIRONMENT_PREFIX, UsageError
from ..core.format_names import FORMAT_NAMES  # the registered formats' names, without importing any format
from ..io.files import STDIN

if TYPE_CHECKING:  # the libraries behind the groups, for their types only: loaded when a command runs
    from ..counting.counter import Options
    from ..ops.compaction.summarize import SummaryOptions
    from ..ops.pruning.prune import PruneOptions
    from ..providers import Resolved
    from ..run.batch import Batch, Running
    from ..run.tasks import Reading

# convert.TARGETS, spelled out so that parsing flags does not import convert (a test keeps them equal)
CONVERSION_TARGETS = ("anthropic", "openai", "jsonl")


class FilePath(click.Path):
    """click's Path, an empty one refused: it names no file (`-o ''` would have written stdout)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value:
            self.fail("an empty path names no file", param, ctx)
        return super().convert(value, param, ctx)


def env_name(name: str) -> str:
    return f"{ENVIRONMENT_PREFIX}{name}"


# The largest count a flag takes (tokens, characters, messages): far beyond any real window, and
# small enough that arithmetic on it stays exact.
LIMIT = 10**9


class Number(click.FloatRange):
    """The type of every numeric flag and TRANSCOMPACT_* variable: a finite number in a range, a
    whole one unless `whole=False`. (click's ranges let `nan` through and have no maximum, and
    `inf`, `nan` or `1e308` then fail deep inside a command.)"""

    min: float  # always given (click's ranges may leave either end open: None)
    max: float

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
    def like(cls, other: click.ParamType) -> Number:
        """The Number for a click INT, FLOAT, IntRange or FloatRange."""
        maximum = getattr(other, "max", None)
        minimum = getattr(other, "min", None)
        return cls(-LIMIT if minimum is None else minimum, LIMIT if maximum is None else maximum,
                   whole=isinstance(other, click.types.IntParamType), min_open=getattr(other, "min_open", False))


def number_option(name: str, default: int, help: str, minimum: int = 0, maximum: int = LIMIT):
    """A numeric flag with its TRANSCOMPACT_* variable (`--soft-trim-chars` ↔ TRANSCOMPACT_SOFT_TRIM_CHARS)."""
    return click.option(f"--{name}", type=Number(minimum, maximum), default=default, show_default=True,
                        envvar=env_name(name.upper().replace("-", "_")), show_envvar=True, help=help)


# --- flags that would do nothing ----------------------------------------------------------------


@dataclass(frozen=True)
class Idle:
    """Flags that do nothing `without` a flag, or `with` one (parameter names): given on the
    command line there, they are refused (a TRANSCOMPACT_* variable set for every run is not)."""

    flags: tuple[str, ...]
    without: str | None = None
    with_: str | None = None
    why: str = ""


_MODEL_CALL = ("provider", "model", "base_url", "timeout", "retries", "instructions", "style", "summary_input_tokens",
               "result_chars", "no_fallback", "batch_api", "poll_interval", "state_file", "previous_summary")
_PRUNING = (Idle(("result_token_cap", "kinds"), without="by_kind", why="it sets how --by-kind cuts"),
            Idle(("soft_trim_chars", "head", "tail"), with_="by_kind", why="--by-kind cuts instead of the soft trim"),
            Idle(("keep_last", "hard_clear_after", "soft_trim_chars", "head", "tail"), with_="keep_tool_uses",
                 why="--keep-tool-uses clears instead"))
# Per command; every command is checked against its own rules before it runs (main._checked).
IDLE_FLAGS: dict[str, tuple[Idle, ...]] = {
    "prune": _PRUNING,
    "compact": (*_PRUNING,
                Idle(_MODEL_CALL, with_="emergency", why="--emergency makes no model call"),
                Idle(("poll_interval", "state_file"), without="batch_api", why="it is for the batches of --batch-api")),
    "slim": (Idle(("no_archive",), without="in_place", why="only a file slimmed in place has its original archived"),),
}


def refuse_idle_flags(ctx: click.Context) -> None:
    """A usage error for the first flag given on the command line that `IDLE_FLAGS` says would do nothing."""
    from click.core import ParameterSource

    flags = {param.name: max(param.opts, key=len) for param in ctx.command.params if isinstance(param, click.Option)}
    for rule in IDLE_FLAGS.get(ctx.command.name or "", ()):
        if rule.without is not None and not ctx.params.get(rule.without):
            context = f"without {flags[rule.without]}"
        elif rule.with_ is not None and ctx.params.get(rule.with_):
            context = f"with {flags[rule.with_]}"
        else:
            continue
        for name in rule.flags:
            if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE:
                raise UsageError(f"{flags[name]} has no effect {context}: {rule.why}")


# --- groups of flags ----------------------------------------------------------------------------


class ClickDecorated(Protocol):
    """A function click's decorators have noted their parameters on, last first: an attribute
    click sets at run time, which its types do not declare."""

    __click_params__: list[click.Parameter]


class OptionGroup:
    """Flags that reach a command as one argument, `name`: what `make` returns, called with each
    flag's value by its parameter name and with the argument of each group among the flags by that
    group's name. As a decorator of a command's function, it adds the flags there (in --help, in
    this order). `leaves`: flags of the group whose values go to the command as they are (a file
    the command reads itself, after it has checked its flags)."""

    def __init__(self, name: str, make: Callable[..., Any], *flags: Callable[[Callable], Callable] | OptionGroup,
                 leaves: Sequence[str] = ()):
        self.name, self.make, self.flags, self.leaves = name, make, flags, tuple(leaves)
        own = [param for flag in flags if not isinstance(flag, OptionGroup) for param in _params_of(flag)]
        self.names = [param.name for param in own if param.expose_value and param.name not in self.leaves]

    def params(self) -> list[click.Parameter]:
        """New click parameters for the flags, in their --help order."""
        return [param for flag in self.flags
                for param in (flag.params() if isinstance(flag, OptionGroup) else _params_of(flag))]

    def value(self, values: dict[str, Any]) -> Any:
        """The group's argument, made of its flags' values, which it takes out of `values` (a
        command's keyword arguments)."""
        arguments = {flag.name: flag.value(values) for flag in self.flags if isinstance(flag, OptionGroup)}
        arguments.update((name, values.pop(name)) for name in self.names)
        return self.make(**arguments)

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def grouped(*args: Any, **kwargs: Any) -> Any:
            kwargs[self.name] = self.value(kwargs)
            return fn(*args, **kwargs)

        # click keeps a function's parameters last first, and turns them round for the command.
        cast(ClickDecorated, grouped).__click_params__ = [*getattr(fn, "__click_params__", ()), *reversed(self.params())]
        return grouped


def _params_of(flag: Callable[[Callable], Callable]) -> list[click.Parameter]:
    """The click parameters a flag's decorator declares (new ones each time), in --help order."""

    def holder() -> None:
        pass

    return list(reversed(cast(ClickDecorated, flag(holder)).__click_params__))


# --- the inputs ---------------------------------------------------------------------------------


class RunNotes(Protocol):
    """What the root command (`main.Group`) carries for the run, set while the flags are parsed
    and read when an error ends it: attributes set at run time, which click's types do not declare."""

    show_traceback: bool  # --traceback
    from_environment: frozenset[str]  # the settings a TRANSCOMPACT_* variable gave


def _traceback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        cast(RunNotes, ctx.find_root().command).show_traceback = True


def traceback_option(fn: Callable) -> Callable:
    return click.option("--traceback", is_flag=True, expose_value=False, callback=_traceback, is_eager=True,
                        help="Show the Python traceback of an unexpected error (for bug reports).")(fn)


def _glob_option(fn: Callable) -> Callable:
    return click.option("--glob", "patterns", multiple=True, metavar="PATTERN", callback=_patterns,
                        help="In a directory, read the files whose path matches PATTERN (repeatable; default: "
                             "*.json and *.jsonl; a compressed file matches without its .gz, .zst, .bz2 or .xz too).")(fn)


def _patterns(ctx: click.Context, param: click.Parameter, patterns: tuple[str, ...]) -> tuple[str, ...]:
    if "" in patterns:  # (pathlib's match refuses it, in the middle of a walk)
        raise click.BadParameter("an empty pattern matches no file: give one such as '*.json'", ctx, param)
    return patterns


def file_options(fn: Callable) -> Callable:
    """FILE... (files, directories, `-` for stdin; stdin when none), --glob, --traceback."""
    return click.argument("files", nargs=-1)(_glob_option(traceback_option(fn)))


def _reading(format_: str | None, messages_path: str | None, encoding_errors: str) -> Reading:
    from ..run.tasks import Reading

    return Reading(format_, messages_path, encoding_errors)


_reading_options = OptionGroup(
    "reading", _reading,
    click.option("--format", "format_", type=click.Choice(FORMAT_NAMES), help="Read as this format instead of detecting it."),
    click.option("--messages-path", metavar="KEY",
                 help="Where the messages sit in a wrapper object, dotted: history, trajectory.0.messages."),
    click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default=settings.ENCODING_ERRORS,
                 show_default=True,
                 help="What invalid UTF-8 gets: an error (exit 3), or U+FFFD in its place (the bytes written "
                      "then differ from those read)."),
    traceback_option,
)


def input_options(fn: Callable) -> Callable:
    """`files`, `patterns` (--glob), and `reading` (a `run.tasks.Reading`: --format, --messages-path,
    --encoding-errors): where transcripts come from and how they are read; --traceback."""
    return click.argument("files", nargs=-1)(_glob_option(_reading_options(fn)))


# --- how a batch runs ---------------------------------------------------------------------------


def _running(jobs: int | None, fail_fast: bool, scheduler: str | None) -> Running:
    from ..run.batch import Running

    return Running(jobs, fail_fast, scheduler)


batch_options = OptionGroup(  # `running`: a run.batch.Running
    "running", _running,
    click.option("-j", "--jobs", type=Number(1), envvar=env_name("JOBS"), show_envvar=True,
                 show_default="the CPUs; 1 for one input", help="Files worked on at once, each in its own process."),
    click.option("--fail-fast", is_flag=True,
                 help="Stop at the first file that fails (an error, not a finding); those already "
                      "under way are finished."),
    click.option("--scheduler", metavar="ADDRESS", envvar=env_name("SCHEDULER"), show_envvar=True,
                 help="Work on the files on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786), "
                      "not in local processes; needs transcompact[dask]."),
)


def command_batch(command: str, files: Sequence[str], patterns: Sequence[str] = (), **options: Any) -> Batch:
    """A `run.batch.Batch` as the command line shows one: its reports worded by `render`, its lines
    on stderr through click, and a file's error raised with --traceback, or naming the TRANSCOMPACT_*
    variable that gave a setting (what the root command noted while the flags were parsed).
    `options`: the Batch's own (`running`, `quiet`, `verb`, …)."""
    from ..run.batch import Batch, CommandLine
    from . import render

    root = click.get_current_context().find_root().command
    shown = CommandLine(render, say=_say, traceback=getattr(root, "show_traceback", False),
                        from_environment=getattr(root, "from_environment", frozenset()))
    return Batch(command, files, patterns, command_line=shown, **options)


def _say(line: str) -> None:
    click.echo(line, err=True)


# --- the outputs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outputs:
    """Where a rewritten transcript goes (stdout by default), or what it would change: -o, -i,
    --output-dir, --dry-run, --diff, --json, --report."""

    output: str | None = None
    in_place: bool = False
    output_dir: str | None = None
    dry_run: bool = False
    diff: bool = False
    diff_as_json: bool = False
    report_file: str | None = None

    def check(self, files: Sequence[str], patterns: Sequence[str] = (), *, own: Mapping[str, str | None] | None = None,
              reads: Mapping[str, str | None] | None = None, output_suffix: str | None = None) -> None:
        """`check_output_flags` for these inputs; then that no path the run writes clashes with an
        input or with another (`io.clashes`). `own`: the files the run writes besides its outputs
        and the report, by flag (--archive, --events); `reads`: the files it reads besides its
        inputs (expand's --archive)."""
        check_output_flags(files, self.output, self.in_place, self.output_dir, diff=self.diff, dry_run=self.dry_run,
                           report_file=self.report_file)
        from ..io.clashes import Named, check_paths

        check_paths(files, patterns, output=self.output, in_place=self.in_place, output_dir=self.output_dir,
                    output_suffix=output_suffix,
                    own=[Named(flag, path, read_first=flag == "--resume")
                         for flag, path in {"--report": self.report_file, **(own or {})}.items() if path],
                    reads=[Named(flag, path) for flag, path in (reads or {}).items() if path])
        if not self.dry_run:
            _output_directory_is_there(self.output)

    def shown(self) -> dict[str, Any]:
        """What the batch shows of them: its `dry_run`, `report_file` and `diff` (`diff_view`)."""
        return {"dry_run": self.dry_run, "report_file": self.report_file, "diff": diff_view(self.diff, self.diff_as_json)}

    def targets(self) -> dict[str, Any]:
        """Where the batch writes each output: its `output`, `in_place` and `output_dir`."""
        return {"output": self.output, "in_place": self.in_place, "output_dir": self.output_dir}


output_options = OptionGroup(  # `outputs`: an Outputs
    "outputs", Outputs,
    click.option("-o", "--output", type=FilePath(dir_okay=False, allow_dash=True),
                 help="Write to FILE (atomically; compressed when FILE ends in .gz, .zst, .bz2 or .xz)."),
    click.option("-i", "--in-place", is_flag=True, help="Rewrite each input file that changes (atomically; compressed as it was read)."),
    click.option("--output-dir", type=FilePath(file_okay=False),
                 help="Write each output to DIR/<its path under the directory argument, or its name>, compressed "
                      "as its input was."),
    click.option("--dry-run", is_flag=True, help="Do everything but write: say per file what would be written."),
    click.option("--diff", is_flag=True,
                 help="Show on stdout what would be removed or replaced, per message and block; write nothing "
                      "(implies --dry-run)."),
    click.option("--json", "diff_as_json", is_flag=True, help="With --diff: the changes as one JSON report."),
    click.option("--report", "report_file", type=FilePath(dir_okay=False, allow_dash=True), metavar="FILE",
                 help="Write a JSON line per file to FILE (`-`: stdout) as each is done: status, output, error "
                      "and the command's report (docs/input-output.md#reports)."),
)


def verbose_option(also: str | None = None) -> Callable[[Callable], Callable]:
    """-v (the rewriting commands): a line for every file of a batch, the unchanged ones too; and
    what else the command says of each file (`also`)."""
    return click.option("-v", "--verbose", is_flag=True,
                        help="Report every file of a batch on stderr, the unchanged ones too (they are otherwise only "
                             f"counted in the closing summary){f', and {also}' if also else ''}.")


def check_output_flags(files: Sequence[str], output: str | None, in_place: bool, output_dir: str | None, *,
                       diff: bool = False, dry_run: bool = False, report_file: str | None = None) -> None:
    """At most one of -o, -i, --output-dir; and with several inputs (or a directory), -i or
    --output-dir, unless a `diff` or a dry run takes their place: stdout never carries several
    transcripts, nor the report with a transcript or the changes a `diff` shows."""
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
    if report_file == STDIN and diff:
        raise UsageError("--report - and the changes --diff shows would both go to stdout", hint="give --report a file")
    if report_file == STDIN and to_stdout:
        raise UsageError("--report - and the transcript would both go to stdout",
                         hint="give --report a file, or write the transcript with -o FILE, -i or --output-dir")


def diff_view(diff: bool, as_json: bool) -> str | None:
    """What --diff shows: "text", "json" (with --json), or None without --diff."""
    if as_json and not diff:
        raise UsageError("--json shows the changes --diff finds: use it with --diff",
                         hint="a JSON line per file, on any run: --report FILE")
    return ("json" if as_json else "text") if diff else None


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
        from ..ops.pruning.archive import create

        create(archive)


# --- counting -----------------------------------------------------------------------------------


def anthropic_api(tokenizer: str) -> Resolved | None:
    """Whom `--tokenizer anthropic` asks: resolved here from the environment, as every provider is."""
    if tokenizer != "anthropic":
        return None
    from ..providers import resolve

    return resolve("anthropic", environ=os.environ)


def _counting(tokenizer: str, ratio: float) -> Options:
    from ..counting.counter import Options

    return Options(tokenizer=tokenizer, ratio=ratio, anthropic=anthropic_api(tokenizer))


tokenizer_options = OptionGroup(  # `counting`: an estimate Options; how every command that counts tokens counts them
    "counting", _counting,
    click.option("--tokenizer", type=click.Choice(["chars", "o200k", "cl100k", "anthropic"]), default=settings.TOKENIZER,
                 envvar=env_name("TOKENIZER"), show_default=True, show_envvar=True,
                 help="chars: the spec's chars × ratio + 4 per message; o200k/cl100k: tiktoken, offline; "
                      "anthropic: the Messages API's count_tokens (needs ANTHROPIC_API_KEY)."),
    click.option("--ratio", type=Number(0, 10, whole=False, min_open=True), default=settings.RATIO, envvar=env_name("RATIO"),
                 show_default=True, show_envvar=True, help="Tokens per character of the chars estimator."),
)


def count_option(fn: Callable) -> Callable:
    """--count: whether the count of a transcript with recorded usage is anchored on it (estimate, compact)."""
    return click.option("--count", type=click.Choice(["usage", "content"]), default=settings.COUNT, envvar=env_name("COUNT"),
                        show_default=True, show_envvar=True,
                        help="usage: when the responses recorded usage, the context the last one recorded (system "
                             "prompt and tool schemas included, which a log does not hold) + the estimate of the "
                             "messages after it; content: only what the transcript holds.")(fn)


# --- pruning ------------------------------------------------------------------------------------


def _tool_kinds(ctx, param, values) -> tuple[tuple[str, str], ...]:
    """--kind TOOL=KIND, as (tool, kind) pairs."""
    from ..ops.pruning.truncate import KINDS

    pairs = []
    for value in values:
        tool, _, kind = value.partition("=")
        if not tool or kind not in KINDS:
            raise click.BadParameter(f"{value!r} is not TOOL=KIND with KIND one of {', '.join(KINDS)}", ctx, param)
        pairs.append((tool, kind))
    return tuple(pairs)


def _pruning(soft_trim_chars: int, head: int, tail: int, hard_clear_after: int, keep_last: int, exclude_tools: tuple[str, ...],
             clear_tool_inputs: bool, clear_thinking: bool, by_kind: bool, result_token_cap: int, kinds: tuple[tuple[str, str], ...],
             keep_tool_uses: int | None, clear_at_least: int, clear_tool_inputs_of: tuple[str, ...],
             keep_thinking_turns: int | None) -> PruneOptions:
    from ..ops.pruning.prune import PruneOptions

    return PruneOptions(soft_trim_chars=soft_trim_chars, head=head, tail=tail, hard_clear_after=hard_clear_after,
                        keep_last=keep_last, exclude_tools=frozenset(exclude_tools),
                        clear_tool_inputs=True if clear_tool_inputs else frozenset(clear_tool_inputs_of) or False,
                        clear_thinking=clear_thinking or keep_thinking_turns is not None,
                        keep_thinking_turns=keep_thinking_turns or settings.KEEP_THINKING_TURNS, by_kind=by_kind,
                        result_token_cap=result_token_cap, kinds=kinds, keep_tool_uses=keep_tool_uses,
                        clear_at_least=clear_at_least)


prune_options = OptionGroup(  # `pruning`: a PruneOptions (`archive` left False: the command knows)
    # The flags of `prune`, which `compact` shares; some speak the names of Anthropic's context
    # editing (`clear_tool_uses_20250919`, `clear_thinking_20251015`: docs/prune.md).
    "pruning", _pruning,
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
)


# --- the summary --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Asking:
    """Who writes a summary, and how patiently: --provider, --model and --base-url resolved with
    the environment's keys (`providers.resolve`), --timeout, --retries."""

    resolved: Resolved
    timeout: float
    retries: int


def _asking(provider: str, model: str | None, base_url: str | None, retries: int, timeout: float) -> Asking:
    from ..providers import resolve

    return Asking(resolve(provider, model=model, base_url=base_url, environ=os.environ), timeout=timeout, retries=retries)


provider_options = OptionGroup(  # `asking`: an Asking
    "asking", _asking,
    click.option("--provider", type=click.Choice(["anthropic", "openai"]), default=settings.PROVIDER,
                 envvar=env_name("PROVIDER"), show_default=True, show_envvar=True,
                 help="anthropic (the official SDK) or any OpenAI-compatible Chat Completions endpoint."),
    click.option("--model", envvar=env_name("MODEL"), show_envvar=True, metavar="NAME",
                 help=f"The summarizer model (default {settings.MODELS['anthropic']} for anthropic, {settings.MODELS['openai']} for openai)."),
    click.option("--base-url", metavar="URL",
                 help="The endpoint (openai: e.g. http://localhost:8000/v1; default OPENAI_BASE_URL or OpenAI's; "
                      "anthropic: default ANTHROPIC_BASE_URL or Anthropic's)."),
    number_option("retries", settings.RETRIES, "Retries on connection errors, timeouts, 408, 409, 429 and 5xx, with backoff.", maximum=100),
    click.option("--timeout", type=Number(0, 24 * 3600, whole=False, min_open=True), default=settings.TIMEOUT,
                 envvar=env_name("TIMEOUT"), show_default=True, show_envvar=True, help="Seconds to wait for each answer."),
)


def keep_recent_messages_option(fn: Callable) -> Callable:
    return number_option("keep-recent-messages", settings.KEEP_RECENT_MESSAGES,
                         "The verbatim recent window holds at least this many messages too (never splitting a tool "
                         "call from its result).")(fn)


def _summary(keep_recent_tokens: int, keep_recent_messages: int, counting: Options, instructions: str | None, style: str,
             summary_input_tokens: int, result_chars: int) -> SummaryOptions:
    from ..ops.compaction.summarize import SummaryOptions

    return SummaryOptions(keep_recent_tokens=keep_recent_tokens, keep_recent_messages=keep_recent_messages,
                          counting=counting, instructions=instructions, style=style, result_chars=result_chars,
                          input_tokens=summary_input_tokens)


summary_options = OptionGroup(  # `summary`: a SummaryOptions; and `previous_summary`, the file (`given_summary`)
    # What is summarized and how: the flags `summarize` and `compact` share.
    "summary", _summary,
    number_option("keep-recent-tokens", settings.KEEP_RECENT_TOKENS,
                  "Tokens of the verbatim recent window: compact keeps at most this, summarize's cut at least."),
    keep_recent_messages_option,
    tokenizer_options,
    click.option("--previous-summary", type=FilePath(dir_okay=False), metavar="FILE",
                 help="Update this summary (Markdown) instead of starting a new one."),
    click.option("--instructions", metavar="TEXT", help="A focus for the summary, as /compact <instructions>."),
    click.option("--style", type=click.Choice(settings.STYLES), default=settings.STYLE,
                 envvar=env_name("STYLE"), show_default=True, show_envvar=True,
                 help="checkpoint: the spec's sections (Goal, Progress, Critical Context, …); narrative: a prose "
                      "account of what happened and what is next."),
    number_option("summary-input-tokens", settings.SUMMARY_INPUT_TOKENS, "The summarizer's input budget; more is sent in chunks.", minimum=1000),
    number_option("result-chars", settings.RESULT_CHARS, "A tool result is shown to the summarizer cut to this many characters."),
    leaves=("previous_summary",),
)


def given_summary(path: str | None) -> str | None:
    """The text of --previous-summary FILE (None without it), read when the command has checked its flags."""
    if not path:
        return None
    from ..io.inputs import read_input

    return read_input(path)[1].decode("utf-8", "replace")


def progress_printer(quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    return lambda k, n: click.echo(f"summarizing: chunk {k} of {n}", err=True)


def _output_directory_is_there(output: str | None) -> None:
    """`-o FILE` in a directory that is not there is refused before any work (a summary a model
    was paid for, then nothing written), as the write itself would refuse it (exit 5)."""
    from ..core.errors import Location, OutputError
    from ..io import urls
    from ..io.files import STDIN

    if not output or output == STDIN or urls.is_url(output):
        return
    parent = os.path.dirname(output) or "."
    if not os.path.isdir(parent):
        why = "Not a directory" if os.path.exists(parent) else "No such file or directory"
        raise OutputError(f"cannot write: {why}", location=Location(output))
