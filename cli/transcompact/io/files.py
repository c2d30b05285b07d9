"""Reading inputs (files or stdin) and writing outputs: a regular file atomically (temporary file +
rename), anything else (a device, a FIFO, /dev/stdout) written through, never replaced. An fsspec
URL (`s3://…`) is read and written by `urls`."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..core.errors import InputError, Location, OutputError, shown_name
from . import urls

if TYPE_CHECKING:  # not imported at start-up: --help needs no orjson
    from ..core import jsondata

STDIN = "-"


_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def read_file(path: str) -> bytes:
    """The file's bytes, by a read of its size (the system calls of a file object's open and read
    are half a small file's reading, which a batch of thousands pays each time)."""
    fd = os.open(path, _READ)
    try:
        found = os.fstat(fd)
        if stat.S_ISCHR(found.st_mode) and not os.isatty(fd) and found.st_rdev != os.stat(os.devnull).st_rdev:
            # /dev/zero, /dev/urandom: read for ever
            raise InputError("is a device, not a transcript: a file, a pipe or a terminal is read", location=Location(path))
        size = found.st_size
        chunks = [os.read(fd, size + 1)]
        if len(chunks[0]) <= size:  # short of what was asked: the end of the file
            return chunks[0]
        while chunk := os.read(fd, 1 << 20):  # a log still being written has grown since
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def signature(path: str) -> tuple[int, int, int] | None:
    """What tells a file that was written to since from one that was not: its inode, size and
    modification time (None: not a regular file, or none there)."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):  # (ValueError: a name no file can have, a NUL in it)
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns) if stat.S_ISREG(found.st_mode) else None


def write_file(path: str | os.PathLike, data: bytes | jsondata.Lines, *, durable: bool = True,
               before: Callable[[], None] | None = None, unchanged: tuple[int, int, int] | None = None) -> None:
    """Write `data` to `path`, replacing a regular file but never anything else.

    A regular file (or a new one) is replaced atomically: a temporary file beside it is renamed
    over it, so that a reader sees the old file or the new one, never half of it. The temporary
    file goes whatever ends the write: an error, Ctrl-C, or SIGTERM / SIGHUP (which the command
    line turns into KeyboardInterrupt).

    `durable`: a file that replaces another is on the disk before the rename, so that a power cut
    cannot leave an empty file where the old one was: the old one may be the only copy of a
    transcript (`-i`, an archive). An output made from an input that stays (`-o`, `--output-dir`)
    needs no such wait; a batch of many small files would spend most of its time in it.

    Anything else is written through and stays what it was: a device (`/dev/null`, a terminal),
    a FIFO, or a descriptor this process has open (`/dev/stdout`, `/dev/fd/3`: written at its
    offset, so that `>>` appends). A symbolic link stays a link: what it points at is written.

    `before`: run once the new bytes are written, before anything is replaced (the archive of the
    original: a write that cannot be made archives nothing). `unchanged`: the `signature` the file
    had when it was read (a file rewritten in place); one written to since (an agent appending to
    the log it is working in) is left as it is, an OutputError, so that nothing it wrote is lost.
    """
    target = os.fspath(path)
    if urls.is_url(target):
        local = urls.local_path(target)
        if local is None:  # on a filesystem with no devices nor links
            urls.write(target, bytes(data))
            return
        try:
            write_file(local, data, durable=durable)
        except OutputError as error:
            raise OutputError(error.message, location=Location(target)) from None
        return
    try:
        replaced = _replaced(target)
        if replaced is None:
            if before is not None:
                before()
            _write_through(target, data)
        else:
            resolved, mode = replaced
            _replace(resolved, data, mode, durable, before, unchanged)
    except OutputError:  # one that says more than the system call's error (an OSError too)
        raise
    except OSError as error:
        raise OutputError(f"cannot write: {error.strerror}", location=Location(target)) from None


def replaces(path: str | os.PathLike) -> bool:
    """Whether `write_file` replaces what is at `path` (a regular file, or nothing yet) rather than
    writing through it. A path that cannot be looked at is left for the write to report."""
    try:
        return _replaced(os.fspath(path)) is not None
    except OSError:
        return True


def _replaced(target: str) -> tuple[str, int | None] | None:
    """(the file to replace: `target`, or the file a link leads to; its mode, None when new) when
    it is to be replaced, else None. Only a link is resolved: a batch writes thousands of plain files."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return target, None
    if stat.S_ISREG(mode):
        return target, mode
    if not stat.S_ISLNK(mode) or _descriptor_named(target) is not None:
        return None
    resolved = os.path.realpath(target)
    resolved_mode = _mode(resolved)
    return (resolved, resolved_mode) if resolved_mode is None or stat.S_ISREG(resolved_mode) else None


def _write_through(target: str, data: bytes | jsondata.Lines) -> None:
    descriptor = _descriptor_named(target)
    if descriptor is not None:
        _write_all(descriptor, data)
        return
    fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0))  # a terminal written to is not made ours
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)


@contextlib.contextmanager
def streamed(path: str, what: str) -> Iterator[Callable[[bytes], None]]:
    """A file written piece by piece as a run goes (`--report`, `--events`: `what`, named in the
    error of a write that fails): each piece is in it as soon as it is written, so that a run cut
    short leaves what it had done. `-` is stdout.

    So it is not replaced atomically, as `write_file` replaces a file whole: a regular file (or a
    new one) is emptied now and written where it is, through a link; anything else is written
    through and stays what it was, as `write_file` does (a device, a FIFO, `/dev/stdout` at its
    offset, so that `>>` appends).
    """
    if path == STDIN:
        yield write_stdout
        return
    descriptor = _descriptor_named(path)
    try:
        fd = descriptor if descriptor is not None else os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOCTTY", 0), 0o666)
    except OSError as error:
        raise OutputError(f"cannot write {what}: {error.strerror}", location=Location(path)) from None

    def write(data: bytes) -> None:
        try:
            _write_blocks(fd, data)
        except OSError as error:
            raise OutputError(f"cannot write {what}: {error.strerror}", location=Location(path)) from None

    try:
        yield write  # each piece is in the file for any reader at once; on the disk at the end, as write_file's
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fsync(fd)
    finally:
        if descriptor is None:
            os.close(fd)


def _replace(target: str, data: bytes | jsondata.Lines, mode: int | None, durable: bool,
             before: Callable[[], None] | None = None, unchanged: tuple[int, int, int] | None = None) -> None:
    """Write a temporary file beside `target` and rename it over it (mode: the old file's, None
    when new); `before` and `unchanged` as `write_file` says."""
    temporary = None
    try:
        with _interrupts_held():  # so that the temporary file never exists without its name known here
            # A new file gets the mode a plain open() would give it; one that replaces a file, that file's.
            temporary, fd = _temporary_beside(target, 0o666 if mode is None else 0o600)
        try:
            _write_blocks(fd, data)
            if mode is not None:
                os.chmod(temporary, stat.S_IMODE(mode))
                if durable:  # a new file harms nothing if lost
                    os.fsync(fd)
        finally:
            os.close(fd)
        if unchanged is not None:
            _still(target, unchanged)
        if before is not None:
            before()
        if unchanged is not None:
            _still(target, unchanged)
        os.replace(temporary, target)
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        raise


def _still(target: str, unchanged: tuple[int, int, int]) -> None:
    if signature(target) != unchanged:
        raise OutputError("was written to since it was read (an agent still at work in it?): left as it is, with what "
                          "was written", location=Location(target), hint="run again once nothing writes to it")


_TEMPORARIES = itertools.count()  # with the process id, a name no other writer is using (O_EXCL makes sure)
_EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _temporary_beside(target: str, mode: int) -> tuple[str, int]:
    """A new file `.NAME.PID-N.tmp` in the directory of `target`, created by this call alone, open
    for writing (what tempfile.mkstemp does, but with the mode given, and without its imports)."""
    directory, name = os.path.split(target)
    for _ in range(100):
        path = os.path.join(directory, f".{name}.{os.getpid()}-{next(_TEMPORARIES)}.tmp")
        try:
            return path, os.open(path, _EXCLUSIVE, mode)
        except FileExistsError:
            continue
        except OSError as error:
            if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            # The file may well be writable: it is the directory that refuses a new file beside it.
            raise OutputError(f"cannot write: the directory {shown_name(directory or '.')} refuses a new file "
                              f"({error.strerror}), and a file is replaced through one", location=Location(target)) from None
    raise FileExistsError(errno.EEXIST, "no unused name for a temporary file", target)


def _mode(path: str) -> int | None:
    """The mode of what is at `path`, None when nothing is."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return None


def _write_all(fd: int, data: bytes | jsondata.Lines) -> None:
    _write_blocks(fd, data)
    if stat.S_ISREG(os.fstat(fd).st_mode):  # a device or a pipe has nothing to sync (and refuses fsync)
        os.fsync(fd)


# Paths that name a descriptor the process has open: opening one again would start a new file
# description at offset 0 (and truncate a regular file behind it), where the shell's `>>` appends.
_STANDARD_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}
_DESCRIPTOR_PATH = re.compile(r"/(?:dev|proc/self)/fd/(\d+)")
_MAX_LINKS = 40  # as many as Linux follows in one path


def _descriptor_named(path: str) -> int | None:
    """The open descriptor `path` names (/dev/stdout, /dev/fd/N, /proc/self/fd/N, or a link to one), if any."""
    if os.name != "posix":
        return None
    for _ in range(_MAX_LINKS):
        path = os.path.normpath(os.path.abspath(path))
        if path in _STANDARD_STREAMS:
            return _STANDARD_STREAMS[path]
        if found := _DESCRIPTOR_PATH.fullmatch(path):
            return int(found[1])
        if not os.path.islink(path):
            return None
        path = os.path.join(os.path.dirname(path), os.readlink(path))
    return None


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


def make_directory(path: str | os.PathLike) -> None:
    if urls.is_url(os.fspath(path)):
        urls.make_directory(os.fspath(path))
        return
    try:
        try:
            os.mkdir(path)  # one system call for the directory a batch writes its files in again and again
        except FileNotFoundError:
            os.makedirs(path, exist_ok=True)
    except FileExistsError:
        if not os.path.isdir(path):
            raise OutputError("cannot create the directory: File exists", location=Location(str(path))) from None
    except OSError as error:
        raise OutputError(f"cannot create the directory: {error.strerror}", location=Location(str(path))) from None


WRITE_BLOCK = 1 << 20


def _write_blocks(fd: int, data: bytes | jsondata.Lines) -> None:
    for block in _blocks(data):
        view = memoryview(block)
        while view:
            view = view[os.write(fd, view):]


def _blocks(data: bytes | jsondata.Lines) -> Iterator[bytes]:
    """What to write, in pieces: the bytes, or a log's lines joined a megabyte at a time (never
    the whole file at once, nor a write per line)."""
    if isinstance(data, bytes):
        yield data
        return
    block: list[bytes | memoryview] = []
    size = 0
    for chunk in data.chunks():
        block.append(chunk)
        size += len(chunk)
        if size >= WRITE_BLOCK:
            yield b"".join(block)
            block, size = [], 0
    if block:
        yield b"".join(block)


def write_stdout(data: bytes | jsondata.Lines) -> None:
    """Write to stdout; a reader that went away (`| head`) ends the program quietly."""
    stream = sys.stdout.buffer
    try:
        stream.writelines(_blocks(data))
        stream.flush()
    except BrokenPipeError:
        discard_stdout()
        raise SystemExit(0) from None
    except OSError as error:
        discard_stdout()
        raise OutputError(f"cannot write: {error.strerror}", location=Location("<stdout>")) from None


def discard_stdout() -> None:
    """Point stdout at /dev/null, so that Python's flush at exit does not fail a second time (a
    stdout that has no descriptor, closed at the start, has nothing to flush)."""
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
