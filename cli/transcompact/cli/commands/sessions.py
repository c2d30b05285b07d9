"""`transcompact sessions`: the sessions each agent has stored, one line each."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import click

from ...core import settings
from ...core.errors import shown_name
from ...io.files import write_stdout
from ...io.sessions import AGENTS
from ..options import Number, env_name, traceback_option

if TYPE_CHECKING:  # types only: the command's libraries are loaded when it runs
    from ...ops.sessions import Measured, Reading
    from ...run.tasks import Result

SORTS = ("activity", "size", "tokens", "unsent", "path")  # ops.sessions.SORTS, without importing it for --help


@click.command()
@click.argument("paths", nargs=-1)
@click.option("--agent", type=click.Choice(AGENTS), help="Only this agent's sessions.")
@click.option("--sort", type=click.Choice(SORTS), default=settings.SESSIONS_SORT, show_default=True,
              help="activity: the newest first; size, tokens, unsent (bytes the agent never sends, every file's "
                   "measured: --unsent): the largest first; path.")
@click.option("--unsent", is_flag=True,
              help="Measure every session's bytes never sent (else only a small file's: ? for the others), "
                   "reading whole each file whose figure is not cached.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON (schema in docs/sessions.md).")
@click.option("--no-cache", is_flag=True,
              help="Take nothing from the cache and keep nothing for the next run (the cache: "
                   "$XDG_CACHE_HOME/transcompact/sessions.json).")
@click.option("-j", "--jobs", type=Number(1), envvar=env_name("JOBS"), show_envvar=True,
              show_default="the CPUs", help="Files read at once, each in its own process.")
@traceback_option
def sessions(paths, agent, sort, unsent, as_json, no_cache, jobs):
    """List the sessions agents have stored: size, context, what slim would free.

    Without PATHS, each agent's own place (Claude Code, Codex, Gemini CLI, pi; moved by
    CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME, PI_CODING_AGENT_DIR); a PATH is a directory
    walked for logs of any format, or a file. One line a session: agent, project, last activity,
    bytes on disk, context tokens now, bytes the agent never sends (what `slim` takes out; ?
    where not measured yet: --unsent), status against the agent's own compaction threshold (ok,
    near, over). A table on a terminal; piped, tab-separated lines (the file last but one, an
    error last), the total on stderr.

    \b
    transcompact sessions
    transcompact sessions --agent codex --sort size
    transcompact sessions --unsent --json | jq -r '.files[] | select(.unsent_bytes > 1e6) | .file' | xargs -d '\\n' transcompact slim -i
    transcompact sessions ~/backups/logs
    """
    from ...ops.sessions import sessions as list_sessions
    from .. import render

    listing = list_sessions(paths, agent=agent, sort=sort, unsent=unsent, cache=None if no_cache else "",
                            measure_all=lambda readings: _measured(readings, jobs, cached=not no_cache))
    for path, why in listing.left:  # as every walk names what it leaves
        click.echo(f"{shown_name(path)}: {why}", err=True)
    if as_json:
        write_stdout(render.sessions_json(listing))
    elif sys.stdout.isatty():
        if listing.sessions:
            render.rich_sessions(listing)
    else:
        write_stdout(render.sessions_tsv(listing))
        if listing.sessions:
            click.echo(render.sessions_total(listing), err=True)
    if not listing.sessions:
        if listing.looked_in:
            where = f"in {', '.join(listing.looked_in)}"
        else:
            from ...io.sessions import places

            where = f"none of these exists: {', '.join(place.directory for place in places(agent))}"
        click.echo(f"transcompact: no stored sessions ({where})", err=True)


def _measured(readings: Sequence[Reading], jobs: int | None, *, cached: bool = True) -> Iterator[Measured]:
    """Each file read (`ops.sessions.read_session`) in a pool of processes (`run.batch`), in order
    (`cached`: what is read goes to the cache, which the next run reads instead)."""
    from ...io.inputs import Source
    from ...ops.sessions import Measured
    from ...run.batch import default_jobs, outcomes
    from ...run.tasks import Task

    if len(readings) > 20:
        later = " (the next run takes them from the cache)" if cached else ""
        click.echo(f"transcompact: reading {len(readings):,} sessions{later}", err=True)
    # A task reads its file whole before the work, unless it is handed the bytes: one read for its
    # tokens alone is handed none, and the work reads what it needs of it.
    tasks = (Task(Source(reading.path, os.path.basename(reading.path)), measure_file, reading,
                  data=None if reading.unsent else b"") for reading in readings)
    for outcome in outcomes(tasks, jobs or (default_jobs() if len(readings) > 1 else 1)):
        if outcome.result is not None:
            yield outcome.result.value
        else:
            error = outcome.error or "cannot read"
            yield Measured(error=error[len(outcome.name) + 1:].lstrip() if error.startswith(f"{outcome.name}:") else error)


def measure_file(name: str, data: bytes, reading: Reading) -> Result:
    """One file (`tasks.process` runs it, here or in a worker): the bytes the task read whole, or,
    for its tokens alone, what `ops.sessions.read_session` reads of it."""
    from ...ops.sessions import measure, read_session
    from ...run.tasks import Result

    return Result(value=measure(name, data) if reading.unsent else read_session(reading))
