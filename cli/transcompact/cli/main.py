"""The command line: the group, its one error handler, and the commands (`commands/`, one module
each, loaded when it runs; the flags they share, and what those become, in `options.py`)."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol, cast

import click

from .. import __version__
from ..core.errors import ExitCode, InternalError, TranscompactError, UsageError, option, variable_of

if TYPE_CHECKING:  # types only: nothing more to load at start-up
    from .options import RunNotes

    class _CheckedCommand(Protocol):
        """A command `_checked` has seen: an attribute set at run time, which click's types do not declare."""

        _transcompact_checked: bool

# Each command: the module in `commands/` that defines it, and the line `transcompact --help` shows.
# A command's module is imported only when it runs, so start-up pays for one command, not all.
COMMANDS = {
    "check": ("check", "Check transcripts against the providers' rules; exit 1 when one has an error."),
    "compact": ("compact", "Compact transcripts: prune, cut, summarize the old part, keep the recent window verbatim."),
    "cut-point": ("cut_point", "Print where old history ends and the verbatim recent window begins (a message index)."),
    "estimate": ("estimate", "Count a transcript's tokens, show where they sit and how close it is to the window."),
    "expand": ("expand", "Put back what `prune --archive` replaced, `compact --archive` and `slim` dropped."),
    "prune": ("prune", "Trim and clear old tool results, without a model."),
    "repair": ("repair", "Make invalid transcripts valid with the smallest change, reporting each fix on stderr."),
    "sessions": ("sessions", "List the sessions agents have stored: size, context, what slim would free."),
    "slim": ("slim", "Make stored agent logs smaller: drop what the agent never sends when it resumes them."),
    "summarize": ("summarize", "Write a structured checkpoint summary of the old part of a transcript, by an LLM."),
}


# The errors of a write to a device that is full or failing, or to no stdout (not a closed pipe: `BrokenPipeError`).
_CANNOT_WRITE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF})

class _Interrupted(Exception):
    """Ctrl-C, SIGTERM or SIGHUP met while a command ran (`KeyboardInterrupt`, carried past click)."""


class Group(click.Group):
    """Loads each command when it runs, and turns every error into one line on stderr and its
    exit status (docs/design.md §4)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        import importlib

        module = importlib.import_module(f"{__package__}.commands.{COMMANDS[name][0]}")
        return _checked(getattr(module, name.replace("-", "_")))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args:  # `transcompact` alone: what is missing, not the whole help
            raise UsageError(f"a command is missing: {', '.join(sorted(COMMANDS))}", hint="see 'transcompact --help'")
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        """A name that is no command is refused as click refuses it, with the nearest one named."""
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-"):
            import difflib

            near = difflib.get_close_matches(name, COMMANDS, n=1)
            raise UsageError(f"no such command: {name!r}",
                             hint=f"did you mean '{near[0]}'?" if near else f"the commands are {', '.join(sorted(COMMANDS))}")
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from COMMANDS, without importing every command to read its help."""
        from click.utils import make_default_short_help  # deprecated: click.utils' module __getattr__ gives it

        short_help = cast(Callable[[str, int], str], make_default_short_help)  # typed `object` by that __getattr__
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        with formatter.section("Commands"):
            formatter.write_dl([(name, short_help(COMMANDS[name][1], limit)) for name in sorted(COMMANDS)])

    def invoke(self, ctx: click.Context):
        """The command; an interrupt past it as its own (click's main would print a blank line before
        its `Abort`: the message is one line)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise _Interrupted from None

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
        except SystemExit as done:
            # click ends what it printed to a reader that went away (`--help | true`) with status 1,
            # stdout made silent: ours is 0, as a command's data to a closed pipe is.
            if done.code != 1 or type(sys.stdout).__name__ != "PacifyFlushWrapper":
                raise
            code = 0
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
        except (KeyboardInterrupt, _Interrupted):
            click.echo("transcompact: interrupted", err=True)
            code = ExitCode.INTERRUPTED
        except BrokenPipeError:  # what click printed (--help, --version) to a reader that went away: quietly, as data
            from ..io.files import discard_stdout

            discard_stdout()
            code = 0
        except OSError as error:
            code = self._unwritten(error) if error.errno in _CANNOT_WRITE else self._internal_error(error)
        except Exception as error:
            code = self._internal_error(error)
        return code

    @staticmethod
    def _unwritten(error: OSError) -> int:
        """What click printed (--help, --version) could not be written (a full device): every file a
        command writes names itself in its own error, so this is stdout's."""
        from ..io.files import discard_stdout

        discard_stdout()
        click.echo(f"transcompact: error: <stdout>: cannot write: {error.strerror}", err=True)
        return ExitCode.OUTPUT

    def _internal_error(self, error: Exception) -> int:
        """A bug: said in one line, unless asked for the traceback."""
        if self.show_traceback:
            raise error
        line, hint = InternalError(error).for_command_line()
        click.echo(f"transcompact: error: {line}", err=True)
        click.echo(f"hint: {hint}", err=True)
        return InternalError.exit_code


@contextlib.contextmanager
def _termination_interrupts() -> Iterator[None]:
    """SIGTERM and SIGHUP end a command as Ctrl-C does: a KeyboardInterrupt, so that a file being
    written loses its temporary file and the exit status is 130 (docs/design.md §4)."""

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


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="transcompact")
def cli() -> None:
    """Keep long LLM conversations inside their context window.

    Reads a transcript (an Anthropic Messages or OpenAI Chat Completions request, Responses API
    input, JSON Lines of messages, or the session log of Claude Code, Codex CLI, Gemini CLI, pi,
    OpenHands or Copilot CLI) from files or stdin, and writes a rewritten transcript to stdout in
    the shape it was read in.

    Every default is also a TRANSCOMPACT_* variable (each command's --help names them); a flag
    beats a variable, and a variable set to the empty string counts as unset.
    """


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
    from .options import Number, refuse_idle_flags  # loaded with the command already

    if getattr(command, "_transcompact_checked", False):
        return command
    for param in command.params:
        if isinstance(param.type, (click.types.IntParamType, click.types.FloatParamType)) and not isinstance(param.type, Number):
            param.type = Number.like(param.type)
    names = {param.name for param in command.params}
    budget = {"window", "max_output"} <= names and command.name not in BUDGET_CHECKED_BY_COMMAND
    callback = command.callback
    if callback is not None:  # click allows a command that runs nothing: then there is nothing to check
        @functools.wraps(callback)
        def checked(*args, **kwargs):
            ctx = click.get_current_context()
            cast("RunNotes", ctx.find_root().command).from_environment = frozenset(
                name for name in names if ctx.get_parameter_source(name) is click.core.ParameterSource.ENVIRONMENT)
            refuse_idle_flags(ctx)
            if budget:
                check_budget(kwargs["window"], kwargs["max_output"])
            return callback(*args, **kwargs)

        command.callback = checked
    cast("_CheckedCommand", command)._transcompact_checked = True
    return command


def terminal_columns() -> int:
    """The width `shutil.get_terminal_size` gives (COLUMNS, else the terminal's, else 80), found
    without importing shutil, which brings bz2, lzma and zlib: a tenth of `--help`'s start-up."""
    with contextlib.suppress(ValueError):
        if (columns := int(os.environ.get("COLUMNS", 0))) > 0:
            return columns
    if sys.__stdout__ is None:  # started without one (pythonw)
        return 80
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Messages:
    """stderr as a run writes it: its messages only, so a write that fails (a full device, a
    reader that went away, none at all: `2>&-`) drops them, and the run goes on to its own
    exit status, where it would have ended with another."""

    def __init__(self, stream) -> None:
        self._stream, self._failed = stream, stream is None

    def write(self, text: str) -> int:
        if not self._failed:
            try:
                return self._stream.write(text)
            except (OSError, ValueError):
                self._failed = True
        return len(text)

    def flush(self) -> None:
        if not self._failed:
            try:
                self._stream.flush()
            except (OSError, ValueError):
                self._failed = True

    def isatty(self) -> bool:
        return not self._failed and self._stream.isatty()

    def __getattr__(self, name: str):
        if self._stream is None:
            raise AttributeError(name)
        return getattr(self._stream, name)


class _NoStdout:
    """stdout where the run was started without one (`>&-`): data written to it fails as a write to
    a closed descriptor does (exit 5, `<stdout>: cannot write: Bad file descriptor`)."""

    @property
    def buffer(self) -> _NoStdout:
        return self

    def write(self, data) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def writelines(self, lines) -> None:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


def main() -> None:
    if sys.stdout is None:
        sys.stdout = _NoStdout()
    sys.stderr = _Messages(sys.stderr)
    try:
        cli(prog_name="transcompact", terminal_width=terminal_columns())
    except TranscompactError as error:  # only with --traceback: show it, keep the exit status
        import traceback

        traceback.print_exc()
        sys.exit(error.exit_code)
