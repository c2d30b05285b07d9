"""`transcompact cut-point`: where old history ends and the recent window begins."""

from __future__ import annotations

import click

from .. import settings
from ..cli import anthropic_api, input_options, load_inputs, display_name, tokenizer_options, number_option
from ..files import write_stdout


@click.command("cut-point")
@input_options
@number_option("keep-recent-tokens", settings.KEEP_RECENT_TOKENS, "Tokens the verbatim recent window holds at least.")
@tokenizer_options
@click.option("--json", "as_json", is_flag=True, help="Print the cut and both parts' sizes as JSON.")
def cut_point(files, format_, messages_path, keep_recent_tokens, tokenizer, ratio, as_json):
    """Print where old history ends and the verbatim recent window begins (a message index).

    0 means everything fits in the recent window. The cut never separates a tool call from
    its result.

    \b
    transcompact cut-point session.jsonl
    transcompact cut-point --json --keep-recent-tokens 8000 chat.json
    """
    from ..cut import find_cut_point
    from ..estimate import Options
    from ..render import report_json

    reports = []
    for path, _, transcript in load_inputs(files, format_, messages_path):
        cut = find_cut_point(transcript, keep_recent_tokens, Options(tokenizer=tokenizer, ratio=ratio, anthropic=anthropic_api(tokenizer)))
        if as_json:
            reports.append((display_name(path), cut.as_dict()))
        else:
            write_stdout((f"{display_name(path)}\t{cut.index}\n" if len(files) > 1 else f"{cut.index}\n").encode())
    if as_json:
        write_stdout(report_json("cut-point", reports))
