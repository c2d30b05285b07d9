"""`transcompact check`: validity against the providers' rules."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace

import click

from ...core.errors import ExitCode
from ...io.files import write_stdout
from ...run.tasks import STDIN_NAME, Reading, Result
from ..options import batch_options, command_batch, input_options
from ..render import report_json, where


@click.command()
@input_options
@batch_options
@click.option("--json", "as_json", is_flag=True, help="Print the violations as JSON (docs/input-output.md#json-reports).")
@click.option("--strict", is_flag=True, help="Treat warnings (e.g. the last message is not a user message) as errors.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit status tells.")
def check(files, patterns, reading, running, as_json, strict, quiet):
    """Check transcripts against the providers' rules; exit 1 when one has an error.

    \b
    transcompact check session.jsonl
    transcompact check --json request.json | jq '.files[].violations[].rule'
    transcompact check logs/
    """
    batch = command_batch("check", files, patterns, running=running, quiet=quiet, prints_as_it_goes=not as_json)
    work = Checking(replace(reading, lazily=True), strict, printed=not (as_json or quiet))  # the rules read views
    reports = batch.reports(check_file, work)
    if as_json and not quiet:
        write_stdout(report_json("check", reports))
    sys.exit(batch.exit)


@dataclass(frozen=True)
class Checking:
    """What `check_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    strict: bool
    printed: bool  # the violations as lines on stdout


def check_file(name: str, data: bytes, how: Checking) -> Result:
    """Check one file (`tasks.process` runs it, here or in a worker); exit 1 when it has an error."""
    from ...core.violation import ERROR
    from ...io.compression import without_suffix
    from ...ops.validity.check import check as run_check

    # A compressed log is judged by the name of what it holds (Claude Code's C1: <session uuid>.jsonl.gz).
    violations = run_check(how.reading.load(data, name), strict=how.strict,
                           path=None if name == STDIN_NAME else without_suffix(name))
    errors = sum(v.severity == ERROR for v in violations)
    lines = "".join(f"{name}{where(v.index, v.line)}{v.rule}{'' if v.severity == ERROR else ' (warning)'} {v.text}\n"
                    for v in violations) if how.printed else ""
    return Result(report={"errors": errors, "warnings": len(violations) - errors, "violations": [v.as_dict() for v in violations]},
                  stdout=lines.encode(), exit=ExitCode.VIOLATIONS if errors else ExitCode.OK)
