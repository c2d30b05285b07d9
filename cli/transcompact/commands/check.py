"""`transcompact check`: validity against the providers' rules."""

from __future__ import annotations

import sys

import click

from ..cli import input_options, load_inputs, where, display_name
from ..errors import ExitCode
from ..files import STDIN, write_stdout


@click.command()
@input_options
@click.option("--json", "as_json", is_flag=True, help="Print the violations as JSON (docs/input-output.md#json-reports).")
@click.option("--strict", is_flag=True, help="Treat warnings (e.g. the last message is not a user message) as errors.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit status tells.")
def check(files, format_, messages_path, as_json, strict, quiet):
    """Check transcripts against the providers' rules; exit 1 when one has an error.

    \b
    transcompact check session.jsonl
    transcompact check --json request.json | jq '.files[].violations[].rule'
    """
    from ..check import ERROR, check as run_check
    from ..render import report_json

    found_errors = False
    reports = []
    for path, _, transcript in load_inputs(files, format_, messages_path):
        violations = run_check(transcript, strict=strict, path=None if path == STDIN else path)
        errors = sum(v.severity == ERROR for v in violations)
        found_errors = found_errors or bool(errors)
        if as_json:
            reports.append((display_name(path), {"errors": errors, "warnings": len(violations) - errors,
                                                 "violations": [v.as_dict() for v in violations]}))
        elif not quiet:
            for v in violations:
                severity = "" if v.severity == ERROR else " (warning)"
                click.echo(f"{display_name(path)}{where(v.index, v.line)}{v.rule}{severity} {v.text}")
    if as_json and not quiet:
        write_stdout(report_json("check", reports))
    sys.exit(ExitCode.VIOLATIONS if found_errors else ExitCode.OK)
