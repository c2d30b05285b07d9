"""Errors, where they happened, and the exit status each one maps to.

The tree (each class carries its exit status):

- TranscompactError            base; never raised itself
  - UsageError (2)             a flag or value that makes no sense
  - InputError (3)             the input cannot be used
    - ParseError               malformed JSON or JSONL (file:line:column)
    - UnknownFormat            no format recognised the input; names the ones tried
    - ShapeError               a known format with a shape it forbids (names the message)
  - ProviderError (4)          the model call failed and no fallback was allowed
  - OutputError (5)            the output cannot be written
  - PostConditionError (5)     a rewrite would have produced an invalid or larger transcript

This module imports nothing from the package, so every other module can import it.
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class ExitCode(enum.IntEnum):
    OK = 0
    VIOLATIONS = 1  # `check` found errors; `estimate --fail-over` exceeded
    USAGE = 2
    INPUT = 3
    PROVIDER = 4
    OUTPUT = 5
    INTERRUPTED = 130  # 128 + SIGINT


class Location(NamedTuple):
    """Where in an input something is: renders as `path:line:column: pointer`."""

    path: str
    line: int | None = None
    column: int | None = None
    pointer: str | None = None  # e.g. "message 3" or "/messages/3/content/0"

    def __str__(self) -> str:
        text = self.path
        if self.line is not None:
            text += f":{self.line}"
            if self.column is not None:
                text += f":{self.column}"
        if self.pointer:
            text += f": {self.pointer}"
        return text


class TranscompactError(Exception):
    """An error shown to the user as one line (and a hint), never as a traceback."""

    exit_code = ExitCode.INPUT

    def __init__(self, message: str, *, hint: str | None = None, location: Location | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


class UsageError(TranscompactError, ValueError):
    exit_code = ExitCode.USAGE


class InputError(TranscompactError):
    exit_code = ExitCode.INPUT


class ParseError(InputError, ValueError):
    """Malformed JSON or JSONL."""


class UnknownFormat(InputError):
    """No format adapter recognised the input."""


class ShapeError(InputError, ValueError):
    """The input is in a known format but has a shape that format forbids."""


class InstallationError(InputError):
    """Something this installation should carry is missing or damaged (the tokenizer data)."""


class ProviderError(TranscompactError):
    exit_code = ExitCode.PROVIDER


class OutputError(TranscompactError, OSError):
    exit_code = ExitCode.OUTPUT


class PostConditionError(TranscompactError):
    exit_code = ExitCode.OUTPUT
