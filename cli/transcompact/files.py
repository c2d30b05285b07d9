"""Reading inputs (files or stdin) and writing outputs atomically (temporary file + rename)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

from .errors import InputError, Location, OutputError

STDIN = "-"


def read_input(path: str) -> tuple[str, bytes]:
    """(name to show, bytes) of a file, or of stdin for `-`."""
    if path == STDIN:
        return "<stdin>", sys.stdin.buffer.read()
    try:
        with open(path, "rb") as handle:
            return path, handle.read()
    except FileNotFoundError:
        raise InputError("no such file", location=Location(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a transcript file", location=Location(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", location=Location(path)) from None


def write_file(path: str | os.PathLike, data: bytes) -> None:
    """Write `data` to `path` so that a reader sees the old file or the new one, never half of it.

    The temporary file goes whatever ends the write: an error, Ctrl-C, or SIGTERM / SIGHUP (which
    the command line turns into KeyboardInterrupt).
    """
    import tempfile  # not at start-up: it imports random and hashlib

    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    temporary = None
    try:
        with _interrupts_held():  # so that the temporary file never exists without its name known here
            fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if os.path.exists(target):
            os.chmod(temporary, os.stat(target).st_mode & 0o7777)
        else:
            os.chmod(temporary, 0o666 & ~_umask())  # as a plain open() would have created it
        os.replace(temporary, target)
    except BaseException as error:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except FileNotFoundError:
                pass
        if isinstance(error, OSError):
            raise OutputError(f"cannot write: {error.strerror}", location=Location(str(path))) from None
        raise


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP for the block (where the platform can): they arrive after it."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_directory(path: str | os.PathLike) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create the directory: {error.strerror}", location=Location(str(path))) from None


def write_stdout(data: bytes) -> None:
    """Write to stdout; a reader that went away (`| head`) ends the program quietly."""
    stream = sys.stdout.buffer
    try:
        stream.write(data)
        stream.flush()
    except BrokenPipeError:
        _discard_stdout()
        raise SystemExit(0) from None
    except OSError as error:
        _discard_stdout()
        raise OutputError(f"cannot write: {error.strerror}", location=Location("<stdout>")) from None


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
