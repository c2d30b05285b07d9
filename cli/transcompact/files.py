"""Reading inputs (files or stdin) and writing outputs atomically (temporary file + rename)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from .errors import InputError, Location, OutputError

STDIN = "-"


def read_input(path: str) -> tuple[str, bytes]:
    """(name to show, bytes) of a file, or of stdin for `-`."""
    if path == STDIN:
        return "<stdin>", sys.stdin.buffer.read()
    try:
        return path, Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", location=Location(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a transcript file", location=Location(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", location=Location(path)) from None


def write_file(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` so that a reader sees the old file or the new one, never half of it."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise OutputError(f"cannot write: {error.strerror}", location=Location(str(path))) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            os.chmod(temporary, target.stat().st_mode & 0o7777)
        os.replace(temporary, target)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise OutputError(f"cannot write: {error.strerror}", location=Location(str(path))) from None
        raise


def write_stdout(data: bytes) -> None:
    stream = sys.stdout.buffer
    stream.write(data)
    stream.flush()
