"""`transcompact prune`: trim and clear old tool results, without a model."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import click

from ...core.errors import UsageError
from ...run.tasks import Reading, Result
from ..options import (
    FilePath,
    batch_options,
    check_conversion_flags,
    command_batch,
    conversion_option,
    conversion_suffix,
    input_options,
    output_options,
    prune_options,
    start_archive,
    tokenizer_options,
    verbose_option,
)

if TYPE_CHECKING:  # types only: the command's libraries are loaded when it runs
    from ...core.jsondata import Lines
    from ...counting.counter import Options
    from ...ops.pruning.prune import PruneOptions
    from ...run.batch import Running


@click.command()
@input_options
@output_options
@conversion_option
@batch_options
@prune_options
@tokenizer_options
@click.option("--explain", is_flag=True,
              help="Write nothing: print per file (JSON) the context_management object that asks Anthropic's context "
                   "editing for this pruning; with --tokenizer anthropic, count_tokens's count of what the server "
                   "would leave beside prune's.")
@click.option("--prune-ui-copy", is_flag=True,
              help="Agent logs that keep a copy of each tool result for their UI (Claude Code toolUseResult, Gemini CLI resultDisplay): prune that copy too.")
@click.option("--archive", type=FilePath(dir_okay=False), metavar="FILE",
              help="Add what prune replaces to FILE (JSON Lines; created if missing), for `transcompact expand`.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the report line on stderr.")
@verbose_option()
def prune(files, patterns, reading, outputs, to, running, pruning, counting, explain, prune_ui_copy, archive, quiet, verbose):
    """Trim and clear old tool results, without a model.

    The last --keep-last tool-result messages are protected; results older than the last
    --hard-clear-after become a placeholder; others longer than --soft-trim-chars keep
    --head and --tail characters around a marker. User text and assistant blocks stay.

    \b
    transcompact prune session.jsonl > pruned.jsonl
    transcompact prune -i --archive originals.jsonl ~/.claude/projects/*/SESSION.jsonl
    """
    if explain:
        sys.exit(_explain(files, patterns, reading, pruning, counting, quiet=quiet, report_file=outputs.report_file,
                          running=running, writing=outputs.output or outputs.in_place or outputs.output_dir or archive
                          or outputs.diff or to or prune_ui_copy))
    check_conversion_flags(to, outputs.in_place)
    outputs.check(files, patterns, own={"--archive": archive}, output_suffix=conversion_suffix(to))
    options = replace(pruning, archive=archive is not None)
    batch = command_batch("prune", files, patterns, running=running, quiet=quiet, verbose=verbose, verb="pruned",
                          ours=[archive] if archive else [], **outputs.shown())
    start_archive(archive, command="prune", to=to, dry_run=batch.dry_run)
    work = Pruning(replace(reading, writes_back=to is None, lazily="logs"), options, prune_ui_copy, None if batch.dry_run else archive, quiet,
                   outputs.diff, to, counting)
    sys.exit(batch.run(prune_file, work, **outputs.targets(), output_suffix=conversion_suffix(to)))


@dataclass(frozen=True)
class Pruning:
    """What `prune_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    options: PruneOptions
    prune_ui_copy: bool
    archive: str | None  # where the originals go (none in a dry run)
    quiet: bool
    diff: bool = False  # --diff: the result says what pruning changes
    to: str | None = None  # --to: the output converted to this
    counting: Options | None = None  # how the report counts (--tokenizer, --ratio)


def prune_file(name: str, data: bytes, how: Pruning) -> Result:
    """Prune one file (`tasks.process` runs it, here or in a worker)."""
    from ...counting.counter import Options, TokenCounter
    from ...formats import adapter, dumps, written
    from ...ops.pruning.prune import prune as run_prune
    from ...ops.validity.postcondition import judged, read_back

    transcript = how.reading.load(data, name)
    counter = TokenCounter(transcript, how.counting if how.counting is not None else Options())
    pruned, report = run_prune(transcript, how.options, counter)
    del counter  # its tallies: a large log's output is made and read back without them
    output: bytes | Lines
    if how.prune_ui_copy:
        pruned = adapter(pruned).replace_ui_copies(pruned)
    if how.to is None and pruned is transcript:
        output = how.reading.decoded(data)  # nothing pruned: the input as read (what writing it again would give)
    elif how.to is None:
        output = written(pruned)
        as_written, same_input = read_back(transcript, pruned, output, operation="prune", messages_path=how.reading.messages_path)
        if not how.diff:  # the output is judged as read back: a large log's rewrite is not held twice meanwhile
            del pruned
        judged(transcript, as_written, same_input, operation="prune")
        del as_written
    else:  # written in the target's format, which convert's own post-condition judges
        from ...ops.convert import convert

        output = dumps(convert(pruned, how.to))
    lines = []
    archive = None
    if how.archive is not None:
        from ...ops.pruning.archive import records

        archive = (how.archive, records(data, bytes(output), transcript))
    if not how.quiet:
        lines.append(f"{name}: pruned {report.soft_trimmed} soft-trimmed, {report.cleared} cleared "
                     f"({report.protected} protected): {report.tokens_before:,} → {report.tokens_after:,} tokens")
    changes = None
    if how.diff:
        from ...ops.diff import diff

        changes = tuple(diff(transcript, pruned))
    return Result(output=output, report=report.as_dict(), stderr=tuple(lines), changes=changes, archive=archive)


# --- --explain ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Explaining:
    """What `explain_file` needs besides the file: plain values, for a worker process."""

    reading: Reading
    options: PruneOptions
    counting: Options  # with --tokenizer anthropic, count_tokens compares
    quiet: bool


def _explain(files, patterns, reading: Reading, options: PruneOptions, counting: Options, *, quiet: bool,
             report_file: str | None, running: Running, writing: Any) -> int:
    if writing:
        raise UsageError("--explain writes nothing: it goes with no -o, -i, --output-dir, --archive, --diff, --to or --prune-ui-copy",
                         hint="the context_management object it prints goes in a Messages API request instead")
    batch = command_batch("prune", files, patterns, running=running, quiet=quiet, report_file=report_file)
    return batch.run(explain_file, Explaining(reading, options, counting, quiet))


def explain_file(name: str, data: bytes, how: Explaining) -> Result:
    """The context_management object for one file; with --tokenizer anthropic, what prune leaves
    and what the server would leave, both by count_tokens."""
    import orjson

    from ...counting.counter import TokenCounter
    from ...ops.pruning.context_editing import context_management, differences
    from ...ops.pruning.prune import prune as run_prune

    transcript = how.reading.load(data, name)
    explained: dict[str, Any] = {"file": name, "context_management": context_management(how.options, transcript),
                 "differences": differences(how.options)}
    lines = []
    if how.counting.tokenizer == "anthropic":
        from ...providers.anthropic import count_tokens

        counter = TokenCounter(transcript, how.counting)
        pruned, _ = run_prune(transcript, how.options, counter)
        server = count_tokens(transcript, how.counting.anthropic, how.counting.model, explained["context_management"])
        explained["tokens"] = {"input": counter.exact(transcript).tokens, "prune": counter.exact(pruned).tokens,
                               "server": server.tokens}
        if not how.quiet:
            tokens = explained["tokens"]
            lines.append(f"{name}: {tokens['input']:,} tokens: prune leaves {tokens['prune']:,}, "
                         f"the server's context editing {tokens['server']:,} (count_tokens)")
    return Result(stdout=orjson.dumps(explained, option=orjson.OPT_APPEND_NEWLINE), report=explained, stderr=tuple(lines))
