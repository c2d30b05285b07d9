"""`transcompact cut-point`: where old history ends and the recent window begins."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import click

from ...core import settings
from ...io.files import write_stdout
from ...run.tasks import Reading, Result
from ..options import batch_options, command_batch, input_options, keep_recent_messages_option, number_option, tokenizer_options

if TYPE_CHECKING:  # types only: the command's libraries are loaded when it runs
    from ...counting.counter import Options


@click.command("cut-point")
@input_options
@batch_options
@number_option("keep-recent-tokens", settings.KEEP_RECENT_TOKENS, "Tokens the verbatim recent window holds at least.")
@keep_recent_messages_option
@tokenizer_options
@click.option("--json", "as_json", is_flag=True, help="Print the cut and both parts' sizes as JSON.")
def cut_point(files, patterns, reading, running, keep_recent_tokens, keep_recent_messages, counting, as_json):
    """Print where old history ends and the verbatim recent window begins (a message index).

    0 means everything fits in the recent window. The cut never separates a tool call from
    its result. With several inputs each line is FILE, a tab, and the index.

    \b
    transcompact cut-point session.jsonl
    transcompact cut-point --json --keep-recent-tokens 8000 chat.json
    transcompact cut-point --keep-recent-tokens 0 --keep-recent-messages 10 chat.json
    """
    from ..render import report_json

    batch = command_batch("cut-point", files, patterns, running=running, prints_as_it_goes=not as_json)
    # The chars estimate counts a message from its view, and the cut reads only the messages around it.
    lazily = replace(reading, lazily=counting.tokenizer == "chars")
    work = Cutting(lazily, keep_recent_tokens, keep_recent_messages, counting, printed=not as_json, named=batch.several)
    reports = batch.reports(cut_point_file, work)
    if as_json:
        write_stdout(report_json("cut-point", reports))
    sys.exit(batch.exit)


@dataclass(frozen=True)
class Cutting:
    """What `cut_point_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    keep_recent_tokens: int
    keep_recent_messages: int
    counting: Options
    printed: bool  # the index on stdout (not with --json)
    named: bool  # after the file's name and a tab (several inputs)


def cut_point_file(name: str, data: bytes, how: Cutting) -> Result:
    """Find one file's cut (`tasks.process` runs it, here or in a worker)."""
    from ...ops.compaction.cut import find_cut_point

    cut = find_cut_point(how.reading.load(data, name), how.keep_recent_tokens, how.counting,
                         keep_recent_messages=how.keep_recent_messages)
    line = (f"{name}\t" if how.named else "") + f"{cut.index}\n"
    return Result(report=cut.as_dict(), stdout=line.encode() if how.printed else b"")
