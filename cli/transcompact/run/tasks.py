"""One file's work in a batch, as a worker runs it: the `Task` (plain values, so that it pickles
to a worker process or a Dask cluster), `process` (read, work, write: the file's `Outcome`, its
error included), and the interrupts (the worker's SIGTERM stops its file; the parent notes an
interrupt while it waits, `interrupts_noted`). The pool (`batch`) and the cluster (`cluster`)
both hand out tasks and get outcomes back.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import gc
import os
import signal
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core import settings
from ..core.errors import ExitCode, InputError, InternalError, Location, TranscompactError, shown_name, variable_of
from ..core.jsondata import Lines, is_blank, same_bytes
from ..io.compression import by_suffix, compressed, plain
from ..io.files import STDIN, make_directory, signature
from ..io.inputs import Source, read_compressed
from ..io.outputs import write_output

if TYPE_CHECKING:  # types only: a worker loads the formats when it reads its first file
    from ..core.model import Transcript
    from ..formats import Laziness

STDIN_NAME = "<stdin>"  # stdin, as reports and messages name it


@dataclass(frozen=True)
class Result:
    """What a command's work made of one file."""

    output: bytes | Lines | None = None  # the file rewritten (prune, compact, repair, expand)
    report: Mapping[str, Any] = field(default_factory=dict)  # what --json and --report say of it
    stdout: bytes = b""  # its lines on stdout (check's violations, cut-point's index)
    changes: tuple | None = None  # --diff: what the rewrite changes (diff.MessageChange), when asked for
    stderr: tuple[str, ...] = ()  # its lines on stderr (the report line, fixes, notes)
    exit: int = ExitCode.OK  # VIOLATIONS when check or repair found errors
    value: Any = None  # estimate's count, for the table of every file
    events: tuple[dict, ...] = ()  # compact --events: what happened to the file, as events
    fallback: str | None = None  # why the file was done another way than asked (compact: no summary by the model)
    # The archive and the original's records to add to it: added just before the output is
    # written, once every check of the write has passed (an output refused archives nothing).
    archive: tuple[str | Beside, Any] | None = None


@dataclass(frozen=True)
class Beside:
    """An archive beside its input: the input's own name (not as shown: a name that is not UTF-8,
    or holds a line break) and `suffix` (`slim -i`'s `FILE.slim-archive`)."""

    suffix: str


@dataclass(frozen=True)
class Reading:
    """How a file's bytes become a transcript: --format, --messages-path, --encoding-errors."""

    format: str | None = None
    messages_path: str | None = None
    encoding_errors: str = settings.ENCODING_ERRORS  # "replace": invalid UTF-8 becomes U+FFFD (the bytes change)
    writes_back: bool = False  # the command writes the transcript in its own format: one only read is refused
    # The command counts or checks (True: messages a view can count and check stay unread), or
    # rewrites ("logs", "rereads": a log's lines it leaves as they are are not held parsed); formats.loads.
    lazily: Laziness = False

    def decoded(self, data: bytes) -> bytes:
        """The bytes a transcript is read from: with `replace`, invalid UTF-8 made U+FFFD. What a
        rewrite that changes nothing gives back."""
        if self.encoding_errors == "replace" and not _is_utf8(data):
            return data.decode("utf-8", "replace").encode("utf-8")
        return data

    def load(self, data: bytes, name: str) -> Transcript:
        from ..formats import ensure_writable, loads

        transcript = loads(self.decoded(data), name, format=self.format, messages_path=self.messages_path, lazily=self.lazily)
        if self.writes_back:
            ensure_writable(transcript)
        return transcript


def _is_utf8(data: bytes) -> bool:
    """Whether `data` is valid UTF-8, without holding it as a str (up to 4× its size): a large
    file is decoded a part at a time, and one of ASCII not at all."""
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(data), 1 << 20):
            decoder.decode(view[start:start + (1 << 20)])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


Settings = TypeVar("Settings")  # a command's options for its work on each file: frozen dataclasses of plain values


@dataclass(frozen=True)
class Task(Generic[Settings]):
    """One file's work, in plain values: it crosses to a worker process."""

    source: Source
    work: Callable[[str, bytes, Settings], Result]  # a top-level function, so that it pickles by name
    settings: Settings  # the command's options
    target: str | None = None  # the file the output goes to; None: back to the caller (stdout)
    makes_directories: bool = False  # --output-dir: the target's directories are made
    dry_run: bool = False
    data: bytes | None = None  # stdin's bytes, read by the parent (a worker has no stdin)
    traceback: bool = False  # --traceback: an error is raised, not reported
    from_environment: frozenset[str] = frozenset()  # the settings a variable gave: an error names the variable
    rewrites: bool = False  # a rewriting command: an empty input has nothing to rewrite (as jq, it is no error)
    # -i, --output-dir: a file's output is compressed as the file was read (else as its name says, -o out.jsonl.gz).
    keeps_compression: bool = False


@dataclass(frozen=True)
class Outcome:
    name: str  # the input as reports name it (STDIN_NAME for stdin; `shown_name`)
    target: str | None  # where its output went, as reports name it
    exit: int
    result: Result | None = None  # None: the file failed
    changed: bool = False  # the output is not the input, byte for byte
    written: bool = False
    error: str | None = None  # the error line, as the command line prints it
    hint: str | None = None
    error_names_file: bool = False  # a provider's or a setting's error does not
    left: bool = False  # a file the walk named and left (a link out of its tree): no result to yield
    interrupted: bool = False  # a stop came while its output was written: told once the outcome is reported

    @property
    def failed(self) -> bool:
        return self.result is None

    @property
    def status(self) -> str:
        return "failed" if self.failed else "changed" if self.changed else "unchanged"

    @property
    def error_of_the_file(self) -> str | None:
        """The error line, the file's name in front where the error does not say it."""
        return self.error if self.error is None or self.error_names_file else f"{self.name}: {self.error}"


# A worker's state for SIGTERM: whether it is inside `process` (the file it stops), and whether
# it was told to stop (it starts no other file: tasks queued to it already cannot be cancelled).
_busy = False
_stopped = False


def process(task: Task[Any]) -> Outcome:
    """One file, start to end: read it, run the command's work, write the output where it goes
    (not a file left unchanged in place, nor anything in a dry run). A worker runs this, and the
    parent too with one job. An error of the file's is its outcome."""
    global _busy
    _busy = True
    # The cyclic collector would walk every value of the parsed file again each time the model's
    # objects pile up (a third of prune's time on a 50 MB file); one file's work makes no cycles
    # worth finding before it ends, and the collector runs again between files.
    gc.disable()
    writing = _StopsHeld()
    try:
        outcome = _outcome(task, writing)
    finally:
        _busy = False
        gc.enable()
        stopped = writing.release()
    return dataclasses.replace(outcome, interrupted=True) if stopped else outcome


def _outcome(task: Task[Any], writing: _StopsHeld) -> Outcome:
    global _busy
    source = task.source
    name = STDIN_NAME if source.path == STDIN else shown_name(source.path)
    target = None if task.target is None else shown_name(task.target)
    try:
        if _stopped:
            raise KeyboardInterrupt
        if source.problem:
            raise InputError(source.problem, location=Location(source.path))
        if source.left:
            return Outcome(name, None, ExitCode.OK, Result(stderr=(f"{name}: {source.left}",), report={"left": True}),
                           left=True)
        # A file rewritten in place as it was when read, or else left as it is (an agent appending to it).
        read_as_it_was = signature(source.path) if task.target == source.path and task.data is None else None
        if task.data is not None:
            data, read_as = plain(task.data, name)
        else:
            _, data, read_as = read_compressed(source.path)
        if task.rewrites and is_blank(data):
            result = Result(output=data, report={"empty": True}, stderr=(f"{name}: the input is empty: nothing to do",))
        else:
            result = task.work(name, data, task.settings)
        changed = result.output is not None and not same_bytes(result.output, data)
        written = result.output is not None and not task.dry_run and task.target is None  # the caller writes it to stdout
        warnings: list[str] = []
        archive: tuple[str, Any] | None = None
        if result.archive is not None:
            where, records = result.archive
            archive = (source.path + where.suffix if isinstance(where, Beside) else where, records)

        def archive_the_original() -> None:
            if archive is not None:
                warnings.extend(_archived(*archive))

        to_a_file = result.output is not None and task.target is not None and not task.dry_run and (
            changed or task.target != source.path)
        if not to_a_file:  # (an output written to a file has its original archived once the write's checks pass)
            archive_the_original()
        if result.output is not None and (task.target is not None or task.dry_run):
            if task.target is not None and to_a_file:
                if task.makes_directories:
                    make_directory(os.path.dirname(task.target) or ".")
                keeps = task.target == source.path or (task.keeps_compression and source.path != STDIN)
                compression = read_as if keeps else by_suffix(task.target)
                output = compressed(result.output, compression) if compression else result.output  # before a stop waits
                # A conversation directory stays one. Only a file rewritten in place waits for the
                # disk: elsewhere the input is still there if a power cut loses the output.
                from ..formats import rewriting

                writing.hold()  # from here a stop waits: a file written gets its outcome, and its report line
                # What an agent keeps beside its logs about the file's bytes (Codex's thread store):
                # checked before the write, brought up to date after it.
                with rewriting(task.target, result.output):
                    write_output(task.target, output, source.path, durable=task.target == source.path, compression=None,
                                 before=archive_the_original, unchanged=read_as_it_was)
                _busy = False  # a worker's file is done: its stop (`_stop_the_file`) no longer raises
                written = True
            result = dataclasses.replace(result, output=None)  # in its file, or not to be written: it stays here
        result = dataclasses.replace(result, archive=None, stderr=(*warnings, *result.stderr))
        return Outcome(name, target, result.exit, result, changed, written)
    except TranscompactError as error:
        if task.traceback:
            raise
        line, hint = error.for_command_line(variable_of(task.from_environment))
        names_the_file = error.location is not None or line.startswith(f"{name}:")
        return Outcome(name, target, error.exit_code, error=line, hint=hint, error_names_file=names_the_file)
    except (KeyboardInterrupt, MemoryError):
        raise
    except Exception as error:  # a bug, met on this file: the batch goes on, each input gets its outcome
        if task.traceback:
            raise
        line, hint = InternalError(error).for_command_line()
        return Outcome(name, target, InternalError.exit_code, error=line, hint=hint)


def _archived(archive: str, records: Any) -> list[str]:
    """Add one file's records to the archive (a rewritten file never lacks its originals); the
    warning to print when a torn last record was left out."""
    from ..ops.pruning.archive import add, torn_warning

    torn = add(archive, records)
    return [] if torn is None else [torn_warning(archive, torn)]


class _StopsHeld:
    """Ctrl-C, SIGTERM and SIGHUP held back (where the platform can) from `hold` to `release`:
    while a file's output is written and its outcome made, so that a file written is never a
    file unreported. `release` takes the stops that came meanwhile (no handler runs for them)
    and says whether one did: the caller reports the file, then stops."""

    STOPS = ("SIGINT", "SIGTERM", "SIGHUP")

    def __init__(self) -> None:
        self.previous: set | None = None

    def hold(self) -> None:
        import threading

        if hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread():
            self.previous = signal.pthread_sigmask(signal.SIG_BLOCK, self._stops())

    def release(self) -> bool:
        if self.previous is None:
            return False
        came = signal.sigpending() & self._stops()
        for number in came:
            signal.sigwait({number})  # taken now, so that no handler runs for it
        signal.pthread_sigmask(signal.SIG_SETMASK, self.previous)
        self.previous = None
        return any(signal.getsignal(number) != signal.SIG_IGN for number in came)  # a worker ignores Ctrl-C

    def _stops(self) -> set:
        return {getattr(signal, name) for name in self.STOPS if hasattr(signal, name)}


# How far the pool (or the cluster) may run ahead of the oldest outcome not yet given back, in
# hand-outs per worker: enough to keep every worker busy past a slow file, few enough to hold little
# in memory.
AHEAD = 4
# Seconds between two looks for an interrupt while the oldest hand-out is worked on.
INTERRUPT_POLL = 0.1


@contextlib.contextmanager
def interrupts_noted() -> Iterator[list[int]]:
    """While the pool (or a Dask cluster) runs, Ctrl-C, SIGTERM and SIGHUP are noted, not raised:
    raised inside the pool's own code, just after it took a lock, an interrupt would leave the
    lock taken and the pool's shutdown waiting for ever (and Dask's client lost some). The loop
    looks at the note between its waits and raises KeyboardInterrupt itself; one noted after its
    last look is raised at the end."""
    noted: list[int] = []
    previous = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        try:
            if number is not None and signal.getsignal(number) not in (signal.SIG_IGN, None):
                previous[number] = signal.signal(number, lambda signum, frame: noted.append(signum))
        except ValueError:  # not the main thread: no signal is handled here
            break
    try:
        yield noted
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if noted:
        raise KeyboardInterrupt


def worker_signals() -> None:
    """A worker leaves Ctrl-C (sent to the whole process group) to the parent, which decides and
    then sends SIGTERM: that stops the file being worked on (its temporary file is removed)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stop_the_file)


def stop_worker() -> None:
    """This worker starts no other file (its stop came while a file was written, and was taken)."""
    global _stopped
    _stopped = True


def _stop_the_file(signum, frame) -> None:
    global _stopped
    _stopped = True
    if _busy:  # an idle worker goes on to the shutdown the parent sends it
        raise KeyboardInterrupt

