"""A command over many files: one function per file (`tasks.process`), mapped over the inputs in
order, in a pool of processes with `--jobs` > 1, or on a Dask cluster with `--scheduler` (`cluster`)
(docs/input-output.md#batches).

- A file's work is a top-level function of its command (`work(name, data, settings) -> Result`),
  carried with plain values in a `Task`, so that a task pickles to a worker process as it is.
- The command line is not imported here: it hands the batch how to show it (`CommandLine`: the
  rendering of reports and diffs, where a line for stderr goes, --traceback, the settings its
  variables gave) and where to run it (`Running`: --jobs, --fail-fast, --scheduler).
- A file that fails is an `Outcome` with its error, not an exception: the batch goes on, and the
  exit status is the worst one seen (`SEVERITY`); `--fail-fast` stops at the first.
- The worker writes its file itself: the output never travels back through the pool (a large
  transcript is not pickled twice), and the same task runs where the storage is. The parent gets
  each outcome back in input order, prints its lines, and keeps the score.
- An interrupt (Ctrl-C, SIGTERM) stops every worker: a file being written loses its temporary
  file (`files.write_file`), so every file is the old one or the new one, and the exit is 130.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import sys
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.errors import ExitCode, OutputError, without_credentials
from ..io.files import STDIN, streamed, write_stdout
from ..io.inputs import Source, discover, output_paths, several
from .tasks import AHEAD, INTERRUPT_POLL, Outcome, Result, Settings, Task, interrupts_noted, process, stop_worker, worker_signals

# Worst last: a finding (1) is better than a file that could not be used (3), which is better than
# a provider that failed (4), an output that could not be written (5), and a run cut short (130).
SEVERITY = (ExitCode.OK, ExitCode.VIOLATIONS, ExitCode.USAGE, ExitCode.INPUT, ExitCode.PROVIDER, ExitCode.OUTPUT,
            ExitCode.INTERNAL, ExitCode.INTERRUPTED)


def worst(codes: Iterable[int]) -> int:
    """The worst exit status of several, by `SEVERITY` (0 when there is none)."""
    return max(codes, key=SEVERITY.index, default=ExitCode.OK)


def tasks(sources: Iterable[Source], work: Callable[[str, bytes, Settings], Result], settings: Settings, *,
          output: str | None = None, in_place: bool = False, output_dir: str | None = None,
          output_suffix: str | None = None, dry_run: bool = False, rewrites: bool = False, traceback: bool = False,
          from_environment: frozenset[str] = frozenset()) -> Iterator[Task[Settings]]:
    """A task per source, with the target its output flag gives it (none: stdout, or nothing to
    write). With --output-dir every target is known before the first task: a clash writes nothing;
    `output_suffix` is their extension, for an output in another format than its input (--to).
    `traceback` and `from_environment`: how a file's error is shown (`Task`)."""
    if output_dir:
        planned: Iterable[tuple[Source, str | None]] = output_paths(sources, output_dir, output_suffix)
    else:
        planned = ((source, source.path if in_place else output if output and output != STDIN else None)
                   for source in sources)
    for source, target in planned:
        data = sys.stdin.buffer.read() if source.path == STDIN else None
        yield Task(source, work, settings, target, bool(output_dir), dry_run, data, traceback, from_environment, rewrites,
                   keeps_compression=in_place or bool(output_dir))


def default_jobs() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def outcomes(tasks: Iterable[Task], jobs: int, *, fail_fast: bool = False,
             scheduler: str | None = None) -> Generator[Outcome, None, None]:
    """Each task's outcome, in the order of the tasks: on the Dask cluster at `scheduler`
    (`cluster`), else here with one job (or one task), else in a pool of up to `jobs` processes.
    With `fail_fast`, no task is handed out after one failed (those a worker has already been
    given cannot be taken back: they finish)."""
    tasks = iter(tasks)
    if scheduler:
        from .cluster import outcomes_on_cluster

        yield from outcomes_on_cluster(tasks, scheduler, fail_fast)
        return
    first = list(itertools.islice(tasks, jobs))
    if len(first) > 1:
        yield from _in_pool(itertools.chain(first, tasks), len(first), fail_fast)
        return
    tasks = itertools.chain(first, tasks)
    task = next(tasks, None)
    while task is not None:
        following = next(tasks, None)  # found before this file is worked on: the count is known sooner
        outcome = process(task)
        yield outcome
        if outcome.interrupted:  # the stop that came while its file was written, now that the file is told
            raise KeyboardInterrupt
        if fail_fast and outcome.failed:
            return
        task = following


# Files handed to a worker at once while many small ones wait: a round trip through the pool costs
# the parent and the worker each about a third of what a small file's work does (a 2 KB one takes
# 0.3 ms), so small files go together, up to SMALL bytes in all and HAND_OUT files. Large files go
# one at a time (a slow one holds back no others).
HAND_OUT = 64
SMALL = 64 * 1024


def _process_all(tasks: Sequence[Task]) -> list[Outcome]:
    """`process` over every task of a worker's hand-out, in order; when the worker is stopped
    (`tasks.worker_signals`), the outcomes of those it finished, whose files may be written: the
    parent still reports them."""
    done: list[Outcome] = []
    with contextlib.suppress(KeyboardInterrupt):
        for task in tasks:
            done.append(process(task))
            if done[-1].interrupted:  # stopped while its file was written: the file is told, no other is started
                stop_worker()
                break
    return done


def _hand_outs(tasks: Iterator[Task]) -> Iterator[list[Task]]:
    """The tasks in hand-outs: small files together (SMALL bytes, HAND_OUT files at most), a large one on its own."""
    waiting: list[Task] = []
    size = 0
    for task in tasks:
        task_size = _size(task)
        if waiting and (task_size > SMALL or size + task_size > SMALL or len(waiting) == HAND_OUT):
            yield waiting
            waiting, size = [], 0
        if task_size > SMALL:
            yield [task]
            continue
        waiting.append(task)
        size += task_size
    if waiting:
        yield waiting


def _size(task: Task) -> int:
    if task.data is not None:
        return len(task.data)
    try:
        return os.stat(task.source.path).st_size
    except (OSError, ValueError):  # no such file, a URL: its error or its size is the worker's
        return SMALL + 1


def _in_pool(tasks: Iterator[Task], workers: int, fail_fast: bool) -> Iterator[Outcome]:
    from concurrent.futures import ProcessPoolExecutor, wait

    def failed(future) -> bool:
        return future.done() and not future.cancelled() and any(outcome.failed for outcome in future.result())

    # With --fail-fast one file a worker, none waiting: no file is started after the first failure
    # is known, and at most one a worker is under way when it fails.
    hand_outs = ([task] for task in tasks) if fail_fast else _hand_outs(tasks)
    ahead = 1 if fail_fast else AHEAD
    with interrupts_noted() as interrupted, ProcessPoolExecutor(workers, initializer=worker_signals) as pool:
        window: collections.deque = collections.deque()  # futures in task order
        stopped = False
        try:
            while True:
                while not stopped and len(window) < ahead * workers and (hand_out := next(hand_outs, None)) is not None:
                    window.append(pool.submit(_process_all, hand_out))
                if not window:
                    return
                future = window[0]
                while not interrupted and not wait([future], timeout=INTERRUPT_POLL).done:
                    pass  # the outcomes come in task order
                if interrupted:
                    raise KeyboardInterrupt
                window.popleft()
                if future.cancelled():
                    continue
                for outcome in future.result():
                    if fail_fast and not stopped and (outcome.failed or any(map(failed, window))):
                        stopped = True
                        for waiting in window:
                            waiting.cancel()  # those not started; the running ones finish
                    yield outcome
        except KeyboardInterrupt:
            for future in window:
                future.cancel()
            _stop_workers(pool)
            yield from _finished(window)
            raise
        except BaseException:  # the caller stopped reading
            for future in window:
                future.cancel()
            _stop_workers(pool)
            raise


# Seconds the workers have, once told to stop, to tell what they finished.
STOPPING = 5.0


def _finished(window: Iterable) -> Iterator[Outcome]:
    """The outcomes of the files the stopped workers had finished (written, some of them), in task
    order: a run cut short reports every file it changed."""
    from concurrent.futures import wait

    running = [future for future in window if not future.cancelled()]
    wait(running, timeout=STOPPING)
    for future in running:
        if future.done() and not future.cancelled() and future.exception() is None:
            yield from future.result()


def _stop_workers(pool) -> None:
    # ProcessPoolExecutor has no public way to signal its workers before Python 3.14's terminate_workers().
    for worker in list((pool._processes or {}).values()):
        with contextlib.suppress(OSError):
            worker.terminate()


# --- the command line's view of a batch ---------------------------------------------------------


@dataclass(frozen=True)
class Running:
    """Where and how a batch's files are worked on: --jobs, --fail-fast, --scheduler."""

    jobs: int | None = None  # processes at once; None: the CPUs (1 for one input)
    fail_fast: bool = False  # no file is handed out after one failed (those under way finish)
    scheduler: str | None = None  # a Dask scheduler's address: the files go to its cluster (`cluster`)


class Rendering(Protocol):
    """How a batch's reports, diffs and closing summary are worded (the command line's
    `cli/render.py` is one)."""

    def report_line(self, command: str, outcome: Outcome) -> bytes: ...

    def report_json(self, command: str, files: Iterable[tuple[str, Mapping[str, Any]]]) -> bytes: ...

    def diff_fields(self, changes: Sequence[Any]) -> dict[str, Any]: ...

    def diff_text(self, name: str, changes: Sequence[Any], *, color: bool, rewritten: bool = False) -> bytes: ...

    def batch_summary(self, tally: Tally, verb: str, *, dry_run: bool, seconds: float) -> str: ...


class _Kept:
    """A file of the run's own written a line at a time (`--report`, `--events`): once it cannot
    take a line, it is written no more and the run goes on, every file done and said as it comes
    (one rewritten in place is never left unsaid); its error ends the run at the end."""

    def __init__(self, add: Callable[[bytes], None]) -> None:
        self.add = add
        self.error: OutputError | None = None

    def __call__(self, data: bytes) -> None:
        if self.error is None:
            try:
                self.add(data)
            except OutputError as error:
                self.error = error


def to_stderr(line: str) -> None:
    """A line on stderr, at once."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


@dataclass(frozen=True)
class CommandLine:
    """What the command line gives a batch besides its inputs: how its reports are worded
    (`render`), where a line for stderr goes (`say`), and how a file's error is shown: raised with
    --traceback, naming the TRANSCOMPACT_* variable that gave a setting (`from_environment`)."""

    render: Rendering
    say: Callable[[str], None] = to_stderr
    traceback: bool = False
    from_environment: frozenset[str] = frozenset()  # the settings a variable gave


@dataclass
class Tally:
    """What a batch did, for its closing summary."""

    changed: int = 0
    unchanged: int = 0
    failed: int = 0
    tokens_before: int = 0  # of the files that did not fail, when the command counts tokens
    tokens_after: int = 0
    counted: bool = False  # whether the command counts tokens (prune, compact)
    fell_back: int = 0  # files done another way than asked (`Result.fallback`)
    first_fallback: str | None = None  # the first one's reason

    def add(self, outcome: Outcome) -> None:
        setattr(self, outcome.status, getattr(self, outcome.status) + 1)
        report = outcome.result.report if outcome.result is not None else {}
        if outcome.result is not None and outcome.result.fallback is not None:
            self.fell_back += 1
            self.first_fallback = self.first_fallback or outcome.result.fallback
        if "tokens_before" in report:
            self.counted = True
            self.tokens_before += report["tokens_before"]
            self.tokens_after += report["tokens_after"]


class Batch:
    """A command's run over its inputs as the command line shows it: each file's lines and errors
    on stderr in input order, progress while several run, a `--report` line per file, the closing
    summary of a rewriting command, and the exit status, the worst seen."""

    def __init__(self, command: str, files: Sequence[str], patterns: Sequence[str] = (), *, command_line: CommandLine,
                 running: Running = Running(), quiet: bool = False, verbose: bool = False, verb: str | None = None,
                 dry_run: bool = False, report_file: str | None = None, prints_as_it_goes: bool = False,
                 diff: str | None = None, ours: Sequence[str] = (), events_file: str | None = None):
        """`command_line`: how the batch is shown; `running`: where its files are worked on.
        `verb` (compacted, pruned, …) marks a rewriting command: it gets the closing summary.
        `prints_as_it_goes`: the command prints each file's report on stdout as it comes.
        `verbose`: a batch's unchanged files get their lines too (else the closing summary counts them).
        `diff` ("text" or "json"): stdout gets what each file's rewrite changes instead of the
        rewrite, and nothing is written, as `git diff` writes nothing. `ours`: the files the run
        reads or writes besides its inputs (an archive), which a directory walk leaves out, as it
        does the report. `events_file`: each file's `Result.events` as JSON Lines (`-`: stderr)."""
        self.command, self.files, self.patterns = command, files, patterns
        self.command_line, self.running = command_line, running
        self.several = several(files)
        self.quiet, self.verb, self.dry_run, self.report_file = quiet, verb, dry_run or diff is not None, report_file
        self.verbose = verbose
        self.diff = diff
        self.events_file = events_file
        self.ours = (*ours, *[path for path in (report_file, events_file) if path and path != STDIN])
        self.prints_as_it_goes = prints_as_it_goes or diff == "text"
        self.exit: int = ExitCode.OK
        self.started = time.monotonic()  # the closing line's time includes what came before the files (--batch-api's waits)

    def run(self, work: Callable[[str, bytes, Settings], Result], settings: Settings, **options: Any) -> int:
        """Run a rewriting command over every input; its exit status."""
        for _ in self.outcomes(work, settings, **options):
            pass
        return self.exit

    def reports(self, work: Callable[[str, bytes, Settings], Result], settings: Settings,
                **options: Any) -> list[tuple[str, Any]]:
        """(file, report) of every input that did not fail: what `--json` prints."""
        return [(outcome.name, outcome.result.report) for outcome in self.outcomes(work, settings, **options)
                if outcome.result is not None]  # every one: `outcomes` yields no failed file

    def outcomes(self, work: Callable[[str, bytes, Settings], Result], settings: Settings, *, output: str | None = None,
                 in_place: bool = False, output_dir: str | None = None,
                 output_suffix: str | None = None) -> Iterator[Outcome]:
        """Run `work` over every input (in `running.jobs` processes: by default the CPUs, 1 for one
        input); yield each outcome that did not fail, in input order, once its lines are out."""
        render, running = self.command_line.render, self.running
        tally = Tally()
        diffs: list[tuple[str, dict]] = []  # --diff --json: one report of every file, at the end
        planned = tasks(discover(self.files, self.patterns, ours=self.ours), work, settings, output=output, in_place=in_place,
                        output_dir=output_dir, output_suffix=output_suffix, dry_run=self.dry_run, rewrites=self.verb is not None,
                        traceback=self.command_line.traceback, from_environment=self.command_line.from_environment)
        jobs = (running.jobs or default_jobs()) if self.several else 1
        # No bar is drawn over a report that goes to the same terminal as it comes.
        progress = _Progress(self.command, shown=self.several and not self.quiet,
                             bar=not (self.prints_as_it_goes and sys.stdout.isatty()), say=self.command_line.say)
        if progress.use_bar:  # someone watches: the names are counted first, for the bar's end and its ETA
            progress.found(sum(1 for _ in discover(self.files, self.patterns, ours=self.ours)))
        # The report is made now and gets each file's line once the file is shown: a run cut short
        # leaves the lines of the files it did.
        report: contextlib.AbstractContextManager[Callable[[bytes], None] | None] = (
            streamed(self.report_file, "the report") if self.report_file else contextlib.nullcontext())
        events: contextlib.AbstractContextManager[Callable[[bytes], None] | None] = (
            streamed(self.events_file, "the events") if self.events_file is not None and self.events_file != STDIN
            else contextlib.nullcontext())
        with progress, report as report_to, events as events_to, contextlib.closing(outcomes(
                _counted(planned, progress), jobs, fail_fast=running.fail_fast, scheduler=running.scheduler)) as stream:
            add_to_report, add_to_events = (_Kept(add) if add is not None else None for add in (report_to, events_to))
            for outcome in stream:
                self.exit = worst((self.exit, outcome.exit))
                tally.add(outcome)
                # The file's report line is in the report before its lines are shown, so that
                # whoever reads them (a script that stops the run) finds it there; on stdout
                # (`--report -`) it follows the transcript, as a last line.
                line = render.report_line(self.command, outcome) if add_to_report is not None else None
                if add_to_report is not None and line is not None and self.report_file != STDIN:
                    add_to_report(line)
                self._show(outcome, progress)
                if add_to_report is not None and line is not None and self.report_file == STDIN:
                    add_to_report(line)
                if self.events_file is not None:
                    self._events(outcome, progress, add_to_events)
                if self.diff == "json" and outcome.result is not None:  # a failed file has no changes
                    # No changes (None): a file with nothing to rewrite, an empty one.
                    diffs.append((outcome.name, render.diff_fields(outcome.result.changes or ())))
                progress.advance(outcome)
                if not (outcome.failed or outcome.left):
                    yield outcome
        if self.diff == "json":
            write_stdout(render.report_json(self.command, diffs))
        if self.verb and self.several and not self.quiet:
            self.command_line.say(render.batch_summary(tally, self.verb, dry_run=self.dry_run,
                                                       seconds=time.monotonic() - self.started))
        for kept in (add_to_report, add_to_events):
            if kept is not None and kept.error is not None:
                raise kept.error

    def _events(self, outcome: Outcome, progress: _Progress, add: Callable[[bytes], None] | None) -> None:
        import orjson

        from ..ops.compaction.events import failure_event

        found = (failure_event(outcome.name, outcome.error, outcome.exit, time.time()),) if outcome.result is None \
            else outcome.result.events
        for event in found:
            line = without_credentials(orjson.dumps(event).decode())
            if add is None:  # `--events -`: among the other lines on stderr
                progress.echo(line)
            else:
                add(line.encode() + b"\n")

    def _show(self, outcome: Outcome, progress: _Progress) -> None:
        result = outcome.result
        if result is None:  # the file failed
            # As grep names the file only when there are several, a one-input error is as it has always been.
            progress.echo(f"transcompact: error: {outcome.error_of_the_file if self.several else outcome.error}")
            if outcome.hint:
                progress.echo(f"hint: {outcome.hint}")
            return
        # A batch of a thousand small logs says "nothing to compact" once, in its closing summary.
        said = self.verbose or outcome.left or not (self.several and self.verb and outcome.status == "unchanged")
        if result.output is not None:  # the one transcript, to stdout: said done once it is written (not to a full disk)
            write_stdout(result.output)
        for line in result.stderr if said else ():
            progress.echo(line)
        # With --diff and no -o, -i or --output-dir, the diff on stdout stands in for the transcript.
        left = not outcome.changed and outcome.target == outcome.name
        # What a dry run would write is said of every file, an unchanged one copied to --output-dir too.
        would_write = outcome.target is not None and not left
        if self.dry_run and not self.quiet and (said or would_write) and (self.diff is None or outcome.target is not None):
            # Several inputs with nowhere to go (a dry run needs no -i): what would change, not where.
            where = outcome.target or ("stdout" if not self.several else None)
            progress.echo(f"{outcome.name}: dry run: " + ("unchanged, would be left as it is" if left else
                                                           f"would write {where}" if where else
                                                           "would change" if outcome.changed else "unchanged"))
        if self.diff == "text":
            color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")  # no-color.org
            write_stdout(self.command_line.render.diff_text(outcome.name, result.changes or (), color=color,
                                                            rewritten=outcome.changed))
        if result.stdout:
            write_stdout(result.stdout)


def _counted(tasks: Iterable[Task], progress: _Progress) -> Iterator[Task]:
    """The tasks, telling `progress` how many there are once the last has been found."""
    count = 0
    for task in tasks:
        count += 1
        yield task
    progress.found(count)


class _Progress:
    """Files done while a batch runs, on stderr: a rich bar on a terminal, a plain line every
    `PLAIN_EVERY` seconds otherwise (a CI log), nothing for one input or with -q."""

    PLAIN_EVERY = 10.0

    def __init__(self, command: str, *, shown: bool, bar: bool, say: Callable[[str], None] = to_stderr):
        self.command, self.shown, self.say = command, shown, say
        self.use_bar = shown and bar and sys.stderr.isatty()
        self.bar: Any = None  # rich's Progress, once started
        self.total: int | None = None
        self.done = self.failed = self.saved = 0
        self.started = self.printed = time.monotonic()

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def found(self, total: int) -> None:
        self.total = total
        if self.bar is not None:
            self.bar.update(self.bar_task, total=total)

    def echo(self, line: str) -> None:
        line = without_credentials(line)  # a file named by a URL with its user-info, an error quoting one
        if self.bar is not None:
            self.bar.console.out(line, highlight=False)  # above the bar
        else:
            self.say(line)

    def advance(self, outcome: Outcome) -> None:
        self.done += 1
        self.failed += outcome.failed
        if outcome.result is not None and "tokens_before" in outcome.result.report:
            self.saved += outcome.result.report["tokens_before"] - outcome.result.report["tokens_after"]
        if self.use_bar:
            if self.bar is None:
                self._start_bar()
            self.bar.update(self.bar_task, completed=self.done, saved=self._saved())
        elif self.shown and time.monotonic() - self.printed >= self.PLAIN_EVERY:
            self.printed = time.monotonic()
            of = f" of {self.total:,}" if self.total is not None else ""
            files = "file" if (self.total or self.done) == 1 else "files"
            failed = f", {self.failed:,} failed" if self.failed else ""
            self.say(f"{self.command}: {self.done:,}{of} {files} done{failed}{self._saved(', ')}, "
                     f"{self.printed - self.started:.0f} s")

    def _saved(self, before: str = "") -> str:
        return f"{before}{self.saved:,} tokens saved" if self.saved else ""

    def _start_bar(self) -> None:
        """Started at the first outcome, not before: the pool's workers are forked by then, and
        must not inherit the bar's refresh thread."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[saved]}"), TimeRemainingColumn(),
                            console=Console(stderr=True), transient=True)
        self.bar_task = self.bar.add_task(self.command, total=self.total, saved="")
        self.bar.start()
