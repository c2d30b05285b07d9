"""`--scheduler ADDRESS`: a batch's files worked on by a Dask distributed cluster instead of the
local process pool (docs/input-output.md#past-one-machine); the `dask` extra installs Dask.

Each file is the same `tasks.process(task)` the pool runs: a worker reads the file, works on it
and writes its output itself, so only paths and URLs go to the cluster and only each file's
outcome comes back. The outcomes are given back in input order, as the pool gives them.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from typing import Any

from ..core.errors import UsageError, option
from ..io.urls import EXTRA
from .tasks import AHEAD, INTERRUPT_POLL, Outcome, Task, interrupts_noted, process

# Seconds between two looks at how many threads the cluster has: an adaptive cluster grows with
# the tasks it is given, and is given more as it grows.
RESIZE_EVERY = 2.0


def outcomes_on_cluster(tasks: Iterator[Task], address: str, fail_fast: bool) -> Iterator[Outcome]:
    """Each task's outcome, worked on by the cluster whose scheduler is at `address`, in task
    order. Up to AHEAD tasks per worker thread are handed out beyond the oldest outcome not yet
    given back; with `fail_fast`, none after one failed (those handed out finish, and are given)."""
    # Closing the client drops every task it handed out that has not started: so an interrupt
    # starts no other file, and the files being worked on finish (each written whole, or not).
    with interrupts_noted() as interrupted, _connect(address) as client:
        completed: queue.SimpleQueue = queue.SimpleQueue()  # each future, once done (distributed's
        # as_completed polls every 100 ms, which would leave the workers idle between small files)
        place: dict[str, int] = {}  # a handed-out task's key → its place among the tasks
        waiting: dict[int, Outcome] = {}  # done, behind one not done yet
        handed = given = 0
        stopped = False
        width, resized = 0, -RESIZE_EVERY
        while True:
            if time.monotonic() - resized >= RESIZE_EVERY:
                width, resized = AHEAD * max(1, sum(client.nthreads().values())), time.monotonic()
            while not stopped and handed - given < width and (task := next(tasks, None)) is not None:
                future = client.submit(process, task, pure=False)
                place[future.key] = handed
                future.add_done_callback(completed.put)
                handed += 1
            if given == handed:
                return
            done = _next_done(completed, interrupted)
            # One fetch for all that are done, not one each: a round trip to the workers apiece
            # would make the cluster's latency, not its work, set the pace. It raises what
            # `process` raised: a bug, or an error with --traceback.
            for future, outcome in zip(done, client.gather(done)):
                waiting[place.pop(future.key)] = outcome
                stopped = stopped or (fail_fast and outcome.failed)
            while given in waiting:
                yield waiting.pop(given)
                given += 1


def _next_done(completed: queue.SimpleQueue, interrupted: list) -> list:
    """The futures done by now (waiting for one), looking for an interrupt between waits."""
    while not interrupted:
        try:
            done = [completed.get(timeout=INTERRUPT_POLL)]
        except queue.Empty:
            continue
        while not completed.empty():
            done.append(completed.get())
        return done
    raise KeyboardInterrupt


def _connect(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(f"{option('scheduler')} needs Dask, which is not installed", hint=EXTRA) from None
    try:
        return Client(address, set_as_default=False)  # a library caller's own default client stays theirs
    except (OSError, ValueError) as error:  # refused, timed out, or not an address (no port)
        raise UsageError(f"cannot reach the Dask scheduler at {address}: {error}",
                         hint="start one with `dask scheduler` (it listens on tcp://HOST:8786)") from None
