"""Errors, where they happened, and the exit status each one maps to.

The tree: `TranscompactError` and its subclasses below, each with its exit status and what it
means in its docstring (docs/errors.md shows the tree as the package exports it).

A result that is merely not smaller is not an error: compact then writes the input as it is
(strategy `none`, status 0) and says why in its report's notes.

Messages never name a command-line flag: a setting is named with `option("timeout")`, which
reads `timeout` in `str(error)`, `error.message` and `error.hint` (what a library caller sees) and
`--timeout` in `error.for_command_line()` (what the CLI prints).

This module imports nothing from the package, so every other module can import it.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable
from typing import NamedTuple, overload


class ExitCode(enum.IntEnum):
    OK = 0
    VIOLATIONS = 1  # `check` found errors; `estimate --fail-over` exceeded
    USAGE = 2
    INPUT = 3
    PROVIDER = 4
    OUTPUT = 5
    INTERNAL = 70  # a bug in transcompact (sysexits' EX_SOFTWARE)
    INTERRUPTED = 130  # 128 + SIGINT


def shown_name(path: str) -> str:
    """A file's name as every message, report and `--json` shows it: the bytes of a name that are
    not UTF-8 (which Python holds as surrogates) as `\\xff`, a control character as `\\n`, `\\t` or
    `\\x1b`, so that a name can neither make a JSON report fail nor forge a line on a terminal.
    Any other name is shown as it is."""
    if path.isprintable():
        return path
    return "".join(character if character.isprintable() else _escaped(character) for character in path)


def _escaped(character: str) -> str:
    code = ord(character)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os's surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if character in "\n\t\r":
        return repr(character)[1:-1]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class Location(NamedTuple):
    """Where in an input something is: renders as `path:line:column: pointer`."""

    path: str
    line: int | None = None
    column: int | None = None
    pointer: str | None = None  # e.g. "message 3" or "/messages/3/content/0"

    def __str__(self) -> str:
        text = shown_name(self.path)
        if self.line is not None:
            text += f":{self.line}"
            if self.column is not None:
                text += f":{self.column}"
        if self.pointer:
            text += f": {self.pointer}"
        return text


# A setting named in a message, between two private-use characters: its name, and the value it had.
_OPEN, _VALUE, _CLOSE = "\ue000", "\ue002", "\ue001"
# The patterns of this module are compiled on first use (re's own cache), not at start-up: most
# runs print no message, and every run, `--help` too, imports this module.
_OPTION = f"{_OPEN}([A-Za-z_][A-Za-z0-9_]*)(?:{_VALUE}([^{_OPEN}{_CLOSE}]*))?{_CLOSE}"


def option(name: str, value: object = None) -> str:
    """A setting as a message names it: the library's parameter `name` (with `value`: `name='value'`)
    to a library caller, the flag (`--name`, `--name value`) on the command line."""
    given = "" if value is None else _VALUE + str(value)
    return f"{_OPEN}{name}{given}{_CLOSE}"


def refuse_negative(**counts: float | None) -> None:
    """A UsageError for the first of `counts` (of tokens, characters, messages, turns) below 0, or
    not a whole number (NaN, 2.5): what the command line's flags refuse, refused to a library caller too."""
    for name, value in counts.items():
        if value is None:
            continue
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            raise UsageError(f"{option(name)} must be a whole number, not {value}")
        if value < 0:
            raise UsageError(f"{option(name)} must be 0 or more, not {value}")


@overload
def _named(text: str, *, flags: bool, variable: Callable[[str], str | None] = ...) -> str: ...
@overload
def _named(text: None, *, flags: bool, variable: Callable[[str], str | None] = ...) -> None: ...
def _named(text: str | None, *, flags: bool, variable: Callable[[str], str | None] = lambda name: None) -> str | None:
    """`text` with each `option(...)` in it spelled for a library caller, or as a flag (as the
    environment variable that gave its value, when `variable` names one)."""
    if text is None or _OPEN not in text:
        return text

    def spell(found: re.Match) -> str:
        name, value = found[1], found[2]
        if flags and (given := variable(name)) is not None:
            return given if value is None else f"{given}={value}"
        if flags:
            flag = "--" + name.replace("_", "-")
            return flag if value is None else f"{flag} {value}"
        return name if value is None else f"{name}={value!r}"

    return re.sub(_OPTION, spell, text)


# A URL's user-info (`user:secret@`) and its query (`?key=…`, where some services take a key),
# which no message, report or event shows; and the credentials of an Authorization header, which
# a service may quote back in its answer.
_USER_INFO = r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@"
_QUERY = r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#]*)\?[^\s#'\"]*?(?=[:;,.)\]]*(?:[\s'\"]|$))"  # (a sentence's colon after it stays)
_AUTHORIZATION = r"\b(Bearer|Basic) [A-Za-z0-9._~+/=-]+"
_SECRETS: set[str] = set()  # the keys and passwords of this run (`keep_secret`)


def keep_secret(*values: str | None) -> None:
    """Values no message shows from now on, wherever it quotes them: an API key, a URL's password
    (a service's answer may say what it was sent)."""
    _SECRETS.update(value for value in values if value)


def without_credentials(text: str) -> str:
    """`text` with every URL in it shown without its user-info and its query
    (`http://user:secret@host/v1?key=k` → `http://host/v1?…`), an Authorization header's
    credentials and the run's keys (`keep_secret`) shown as `…`."""
    if "@" in text:
        text = re.sub(_USER_INFO, r"\1", text)
    if "?" in text:
        text = re.sub(_QUERY, r"\1?…", text)
    if "Bearer " in text or "Basic " in text:
        text = re.sub(_AUTHORIZATION, r"\1 …", text)
    for secret in _SECRETS:
        if secret in text:  # where it stands alone: a short one (`x`, a stand-in's) is not cut out of every word
            text = re.sub(rf"(?<![\w-]){re.escape(secret)}(?![\w-])", "…", text)
    return text


ENVIRONMENT_PREFIX = "TRANSCOMPACT_"  # every setting's variable: TRANSCOMPACT_ and its name in capitals


def variable_of(from_environment: frozenset[str]) -> Callable[[str], str | None]:
    """For a setting an error names: the environment variable that gave its value, if one did."""
    return lambda name: f"{ENVIRONMENT_PREFIX}{name.upper()}" if name in from_environment else None


class TranscompactError(Exception):
    """Every error of transcompact's: shown to the user as one line (and a hint), never as a
    traceback; never raised itself."""

    exit_code = ExitCode.INPUT

    def __init__(self, message: str, *, hint: str | None = None, location: Location | None = None):
        message, hint = without_credentials(message), hint and without_credentials(hint)
        self.message = _named(message, flags=False)
        super().__init__(self.message)
        self.hint = _named(hint, flags=False)
        self.location = location
        self._as_written = (message, hint)

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"

    def with_hint(self, hint: str | None) -> TranscompactError:
        """The same error with another hint, from a caller that knows better what to do about it."""
        return type(self)(self._as_written[0], hint=hint, location=self.location)

    def for_command_line(self, variable: Callable[[str], str | None] = lambda name: None) -> tuple[str, str | None]:
        """The line (location and message) and the hint, each setting named as its flag, or as the
        environment variable `variable` says its value came from."""
        written, hint = self._as_written
        message = _named(written, flags=True, variable=variable)
        hint = _named(hint, flags=True, variable=variable)
        return (message if self.location is None else f"{self.location}: {message}"), hint


class InternalError(TranscompactError):
    """A bug met while running: said in one line, with how to report it."""

    exit_code = ExitCode.INTERNAL

    def __init__(self, error: Exception):
        super().__init__(f"internal error: {type(error).__name__}: {error}",
                         hint=f"run again with {option('traceback')} and report it")


class UsageError(TranscompactError, ValueError):
    """A flag or value that makes no sense, alone or with the others given."""

    exit_code = ExitCode.USAGE


class InputError(TranscompactError):
    """The input cannot be used."""

    exit_code = ExitCode.INPUT


class ParseError(InputError, ValueError):
    """Malformed JSON or JSON Lines (file:line:column)."""


class UnknownFormat(InputError):
    """No format recognised the input; the message names the ones tried."""


class ShapeError(InputError, ValueError):
    """The input is in a known format but has a shape that format forbids (names the message)."""


class InstallationError(InputError):
    """Something this installation should carry is missing or damaged (the tokenizer's data); the
    hint says what to reinstall."""


class ProviderError(TranscompactError):
    """The model call failed (no key, an HTTP error after the retries, an answer that is not the
    API's) and no fallback was allowed."""

    exit_code = ExitCode.PROVIDER


class PromptTooLong(ProviderError):
    """The service refused the prompt as too long for the model (the summary sends less)."""


class RefusedByCommand(TranscompactError):
    """A command the user gave to run first (`compact --pre-compact`) failed: nothing is written.
    The status of a failed model call, since both are something outside that said no."""

    exit_code = ExitCode.PROVIDER


class OutputError(TranscompactError, OSError):
    """The output cannot be written."""

    exit_code = ExitCode.OUTPUT


class PostConditionError(TranscompactError):
    """A rewrite would have produced an invalid transcript (one that does not read back, or has a
    `check` error its input did not): nothing is written."""

    exit_code = ExitCode.OUTPUT
