"""The format adapters, in the order detection tries them (most specific first).

Each module has NAME, DESCRIPTION, LINES (whether a line is the unit a rewrite changes, keeps
or removes; `rewrites_lines` asks it of a transcript), `detect(parsed, messages_path)`,
`read(parsed, messages_path) -> Transcript` and `write(transcript) -> bytes` (a log format may
add `write_lines(transcript) -> Lines`, which a rewrite writes without joining); a format
transcompact only reads sets WRITES = False, and a command that would write it stops
(`ensure_writable`). A format whose files carry more than the messages (an agent's log) adds hooks that the operations call through
`hook`, so that no operation asks which format it has:

- `check_log(transcript, path) -> list[Violation]`: the rules of the log itself (check);
- `repair_log(transcript) -> (transcript, [(rule, text, line)])`: what repair fixes of those;
- `append_compaction(transcript, summary, recent, pre_tokens, drop_history=...) -> Transcript`:
  a compaction written the way the agent writes its own (compact);
- `replace_ui_copies(transcript) -> Transcript`: the copies of tool results only a UI shows,
  made to match what prune left (prune's `--prune-ui-copy`);
- `rewrites_lines(transcript) -> bool`: LINES for a format with layouts of both kinds (prune's
  archive);
- `injected_context(message) -> [(name, value)] | None`: what a user message the agent wrote
  itself (its environment) says, None for the user's own (compact's checkpoint);
- `view_before_compaction(transcript) -> Transcript | None`: the log as the agent read it before
  its newest compaction, whose recorded usage still measures the system prompt and tools (estimate);
- `agent_lines(transcript) -> frozenset[int]`: the lines (a block's `line`) the agent wrote in
  the user's turn itself, never the user's words (compact's checkpoint);
- `summary_wording(summary: SummaryText) -> str`: the summary as the agent words its own
  (compact), instead of `summary_message.compose`;
- `unrecorded_messages(transcript) -> frozenset[int]`: the messages (indices) that no recorded
  usage counted, though the agent sends them now (estimate's anchor counts them on top).
"""

from __future__ import annotations

import importlib
import os

from ..core.errors import Location, UnknownFormat, UsageError, option
from ..core.jsondata import Lines, Parsed, parse, parse_written
from ..core.model import Transcript
from . import anthropic, copilot, jsonl, openai
from .claude_code import reader as claude_code
from .codex import reader as codex
from .gemini import reader as gemini
from .openhands import reader as openhands, v0 as openhands_v0
from .pi import reader as pi
from .responses import reader as responses

FORMATS = (claude_code, codex, gemini, pi, openhands, openhands_v0, copilot, jsonl, responses, anthropic, openai)
BY_NAME = {f.NAME: f for f in FORMATS}
NAMES = tuple(BY_NAME)


def adapter(transcript: Transcript):
    """The format module that read `transcript`."""
    return BY_NAME[transcript.format]


def rewrites_lines(transcript: Transcript) -> bool:
    """Whether a line of `transcript`'s file is the unit a rewrite changes, keeps or removes (else
    a message of one JSON document is)."""
    own = hook(transcript, "rewrites_lines")
    return own(transcript) if own is not None else BY_NAME[transcript.format].LINES


def ensure_writable(transcript: Transcript) -> None:
    """Refuse a transcript whose format transcompact reads but does not write (`WRITES = False`),
    before a command that would write it does any work."""
    if not getattr(BY_NAME[transcript.format], "WRITES", True):
        raise not_written(transcript)


def not_written(transcript: Transcript) -> UsageError:
    return UsageError(
        f"transcompact does not write the {transcript.format} format: it only reads it (estimate, check, cut-point, summarize)",
        location=Location(transcript.name),
        hint=f"write its conversation as a request body instead: {option('to', 'anthropic')} or {option('to', 'openai')}")


def hook(transcript: Transcript, name: str):
    """The format's own part of an operation (see above), or None when it has none; a format
    names the module of each hook in HOOKS, imported only when an operation asks for it."""
    module = getattr(BY_NAME[transcript.format], "HOOKS", {}).get(name)
    return getattr(importlib.import_module(f"{__name__}.{module}"), name) if module else None


def detect(parsed: Parsed, messages_path: str | None = None) -> str:
    for fmt in FORMATS:
        if fmt.detect(parsed, messages_path):
            return fmt.NAME
    raise UnknownFormat(
        f"not a transcript in a format transcompact reads (tried {', '.join(NAMES)})",
        location=Location(parsed.name),
        hint=_hint(parsed),
    )


def loads(data: bytes, name: str = "<stdin>", *, format: str | None = None, messages_path: str | None = None) -> Transcript:
    """Read a transcript from bytes, detecting its format unless `format` is given."""
    parsed = parse(data, name, trim=claude_code.linking_fields)
    if format is None:
        format = detect(parsed, messages_path)
    elif format not in BY_NAME:
        raise UsageError(f"unknown format {format!r} (choose from {', '.join(NAMES)})")
    elif not _readable_as(parsed, format, messages_path):
        raise UnknownFormat(
            f"the input is not in the {format} format ({BY_NAME[format].DESCRIPTION})",
            location=Location(name),
            hint=_hint(parsed),
        )
    return BY_NAME[format].read(parsed, messages_path)


def reload(data: bytes | Lines, written: Transcript, messages_path: str | None = None) -> Transcript:
    """Read the bytes `dumps(written)` gave as what they were written in: its format and its dialect.

    The post-condition of a rewrite judges the output as it will be read, not the object in
    memory; naming the dialect keeps a JSON Lines file that no longer shows its dialect (a plain
    conversation) from being judged by the other dialect's rules.
    """
    # A log's lines that the rewrite kept are not parsed and held a second time.
    if isinstance(data, Lines):
        parsed = parse_written(data, written.name, bom=getattr(written.source, "bom", False))
    else:
        parsed = parse(data, written.name, known=getattr(written.source, "records", None) or (),
                       trim=claude_code.linking_fields)
    if not _readable_as(parsed, written.format, messages_path):
        raise UnknownFormat(f"the output is not in the {written.format} format ({BY_NAME[written.format].DESCRIPTION})",
                            location=Location(written.name))
    if written.format == jsonl.NAME:
        return jsonl.read(parsed, messages_path, dialect=written.dialect)
    if written.format in (anthropic.NAME, openai.NAME):  # a document is parsed whole: its kept messages are not built again
        return BY_NAME[written.format].read(parsed, messages_path, known=written.messages)
    return BY_NAME[written.format].read(parsed, messages_path)


def _readable_as(parsed: Parsed, format: str, messages_path: str | None) -> bool:
    """--format overrides the choice between formats that could read the input, not the shape."""
    if format == claude_code.NAME:
        return claude_code.detect(parsed, messages_path)
    if format == jsonl.NAME:
        return jsonl.detect(parsed, messages_path)
    if format == responses.NAME:
        return responses.readable(parsed, messages_path)
    if format not in (anthropic.NAME, openai.NAME):
        return BY_NAME[format].detect(parsed, messages_path)
    return anthropic.detect(parsed, messages_path) or openai.detect(parsed, messages_path)


def dumps(transcript: Transcript) -> bytes:
    """Write a transcript back in the format it was read from, as it was read where unchanged."""
    return BY_NAME[transcript.format].write(transcript)


def written(transcript: Transcript) -> bytes | Lines:
    """What a rewrite writes: `dumps`, or a log's lines as they are to be joined (`Lines`), which
    the post-condition reads back and the file is written from without a copy of the whole."""
    write_lines = getattr(BY_NAME[transcript.format], "write_lines", None)
    return write_lines(transcript) if write_lines is not None else dumps(transcript)


def load(path: str | os.PathLike, *, format: str | None = None, messages_path: str | None = None) -> Transcript:
    """Read a transcript from a file (`-`: standard input)."""
    from ..io.inputs import read_input

    name, data = read_input(os.fspath(path))
    return loads(data, name, format=format, messages_path=messages_path)


def dump(transcript: Transcript, path: str | os.PathLike) -> None:
    """Write a transcript to a file, atomically (`-`: standard output); one read from an OpenHands
    conversation directory, to a directory."""
    from ..io.files import STDIN, write_stdout
    from ..io.outputs import write_output

    data = dumps(transcript)
    write_stdout(data) if os.fspath(path) == STDIN else write_output(path, data, transcript.name)


def _hint(parsed: Parsed) -> str | None:
    """Name the formats we recognise but do not read yet, so the user knows what they have."""
    runs = openhands_v0.runs_hint(parsed)
    if runs is not None:
        return runs
    document = parsed.document
    if isinstance(document, list) and document and isinstance(document[0], dict):
        for key, value in document[0].items():
            if isinstance(value, list) and value and isinstance(value[0], dict) and "role" in value[0]:
                return f"the items hold messages under {key!r}: read one with {option('messages_path', f'0.{key}')}"
    if isinstance(document, dict):
        for key, value in document.items():
            if isinstance(value, list) and value and isinstance(value[0], dict) and "role" in value[0]:
                return f"messages may sit under {key!r}: try {option('messages_path', key)}"
    return None
