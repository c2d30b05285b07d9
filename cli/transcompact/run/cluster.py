"""`--scheduler ADDRESS`: a batch's files worked on by a Dask distributed cluster instead of the
local process pool (docs/input-output.md#past-one-machine); the `dask` extra installs Dask.

Each file is the same `tasks.process(task)` the pool runs: a worker reads the file, works on it
and writes its output itself, so only paths and URLs go to the cluster and only each file's
outcome comes back. The outcomes are given back in input order, as the pool gives them.

Before any file is handed out the scheduler is reached (`_connect`): an address that is not one,
has a password in it, or where no scheduler answers within a few seconds is a UsageError, in
one line that shows no password.
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


# How long the scheduler is sought before the batch starts. Dask itself retries a refused
# connection for `distributed.comm.timeouts.connect` (30 s): a scheduler being started has this
# long to come up, and an address where nothing listens fails in this time, not in 30 s.
REACH_WITHIN = 5.0
NO_SCHEDULER = "start one with `dask scheduler` (it listens on tcp://HOST:8786)"


def _connect(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(f"{option('scheduler')} needs Dask, which is not installed", hint=EXTRA) from None
    shown = _shown(address)
    _reach(address, shown)
    try:
        return Client(address, set_as_default=False)  # a library caller's own default client stays theirs
    except (OSError, ValueError, TypeError) as error:  # gone since it was reached
        raise UsageError(f"cannot reach the Dask scheduler at {shown}: {_why(error)}", hint=NO_SCHEDULER) from None


def _shown(address: str) -> str:
    """The address as a message shows it. One with a user name or password is refused before Dask
    sees it: Dask takes none (it authenticates with TLS), and its messages quote an address without
    its scheme, where the scrubbing of messages (`without_credentials`) would not find them."""
    scheme, separator, rest = address.partition("://")
    if not separator:
        scheme, rest = "", address
    if "@" in rest:
        bare = f"{scheme}{separator}{rest.rpartition('@')[2]}"
        raise UsageError(f"a Dask scheduler's address has no user name or password: {option('scheduler', bare)}",
                         hint="Dask authenticates with TLS (tls://HOST:8786 and its distributed.comm.tls settings)")
    return address


def _reach(address: str, shown: str) -> None:
    """Connect to the scheduler and greet it as Dask does, then hang up, within REACH_WITHIN
    seconds (or Dask's own connect timeout, if shorter), before a client is made: made with an
    address that is not one, a client would also leave its thread to hang the exit for a minute.
    In a thread of its own, so that a caller's own event loop, if one runs, is not in the way."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import dask
    from dask.utils import parse_timedelta
    from distributed.comm import connect
    from distributed.security import Security

    within = min(REACH_WITHIN, parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s") or REACH_WITHIN)
    arguments = Security().get_connection_args("client")

    async def greeted() -> None:
        # Dask retries what is refused until `within`; the greeting itself it would wait for for ever.
        try:
            comm = await asyncio.wait_for(connect(address, timeout=within, **arguments), within + 1)
        except asyncio.TimeoutError:
            raise
        except OSError as error:
            raise _Unreached(await _why_not(address, arguments) or _why(error)) from None
        await comm.close()

    try:
        with ThreadPoolExecutor(1, thread_name_prefix="transcompact-scheduler") as thread:
            thread.submit(asyncio.run, greeted()).result()
    except ValueError as error:  # not an address: no port, an unknown scheme
        raise UsageError(f"{option('scheduler', shown)}: {_why(error)}",
                         hint="a scheduler's address is tcp://HOST:PORT (`dask scheduler` listens on 8786)") from None
    except TypeError as error:  # tls:// without Dask's TLS settings
        raise UsageError(f"{option('scheduler', shown)}: {_why(error)}") from None
    except _Unreached as error:
        raise UsageError(f"cannot reach the Dask scheduler at {shown} (tried for {within:g} s): {error}",
                         hint=NO_SCHEDULER) from None
    except asyncio.TimeoutError:
        raise UsageError(f"cannot reach the Dask scheduler at {shown}: what listens there did not answer as a Dask "
                         f"scheduler within {within + 1:g} s", hint=NO_SCHEDULER) from None


class _Unreached(Exception):
    """No connection to the scheduler: why."""


async def _why_not(address: str, arguments: dict) -> str | None:
    """Why one attempt to connect fails, once Dask's retries have: the last of those may have been
    cut short by their deadline, and says only that. None if this one gets through."""
    import asyncio

    from distributed.comm import parse_address
    from distributed.comm.registry import get_backend

    scheme, location = parse_address(address)
    try:
        comm = await asyncio.wait_for(get_backend(scheme).get_connector().connect(location, deserialize=True, **arguments), 1)
    except asyncio.TimeoutError:
        return "no answer"
    except Exception as error:
        return _why(error)
    comm.abort()
    return None


def _why(error: BaseException) -> str:
    """The first cause of a Dask error, in one line: "Connection refused", not "Timed out trying to
    connect … after 5 s" over a "CommClosedError in <TCPConnector object …>" over it."""
    while True:
        inner = getattr(error, "real_error", None) or error.__cause__  # tornado's StreamClosedError holds it
        if not isinstance(inner, BaseException):
            break
        error = inner
    return " ".join((getattr(error, "strerror", None) or str(error) or type(error).__name__).split())
