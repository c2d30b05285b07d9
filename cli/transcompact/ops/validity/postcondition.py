"""The post-condition of every rewrite (docs/design.md §5), on the bytes about to be written: they
read back, as the format and dialect they were written in, as the messages the rewrite made, and
hold no `check` error the input did not have. Every command that rewrites runs it before it
writes; a library caller runs it on what `dumps` gave.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

import orjson

from ...core.errors import InputError, PostConditionError, option
from ...core.jsondata import Lines
from ...core.model import Transcript
from ...formats import reload
from .check import added_errors


def verified(before: Transcript, after: Transcript, written: bytes | Lines, *, operation: str, messages_path: str | None = None,
             same_messages: bool = True) -> Transcript:
    """A rewrite may not add a `check` error its input did not have (docs/design.md §5).

    `after` is the rewritten transcript and `written` the bytes `dumps` made of it: they are read
    again as the format and dialect they were written in, must give back the messages of `after`,
    and are judged as a reader will find them. With `same_messages` (prune) an error is new unless the same rule failed at the same message;
    without (repair, compact, which remove messages) unless the same rule failed anywhere.
    Returns the transcript read back (`after` itself when it has no message left and the output
    does not read back, like a JSON Lines file repair emptied). An output with no message is read
    back too: what a rewrite dropped can bring back what it hid (a pi entry before the leaf).
    The two halves are `read_back` and `judged`: a caller that no longer needs `after` once it is
    read back lets go of it between them (a large log's rewrite is then held once, as read back).
    """
    as_written, same_input = read_back(before, after, written, operation=operation, messages_path=messages_path)
    judged(before, as_written, same_input, operation=operation, same_messages=same_messages)
    return as_written


def read_back(before: Transcript, after: Transcript, written: bytes | Lines, *, operation: str,
              messages_path: str | None = None) -> tuple[Transcript, bool]:
    """`written` read again as the format and dialect it was written in, which must give the
    messages of `after` (`verified`'s first half); and whether it holds `before`'s messages,
    system prompt and tools one for one (a rewrite that changed none of them: `same_input`)."""
    try:
        as_written = reload(written, after, messages_path)
    except InputError as error:
        if after.messages:
            raise PostConditionError(f"{after.name}: {operation} would write output that does not read back as "
                                     f"{after.format}: {error.message}; nothing written", hint=_BUG) from None
        as_written = after
    one_for_one = _one_for_one(as_written, after)
    if not one_for_one and not _same_turns(as_written, after):
        raise PostConditionError(f"{after.name}: {operation} would write output that reads back as other "
                                 "messages than it made; nothing written", hint=_BUG)
    same_input = before is after and one_for_one and as_written.system == after.system and as_written.tools == after.tools
    return as_written, same_input


def judged(before: Transcript, as_written: Transcript, same_input: bool, *, operation: str, same_messages: bool = True) -> None:
    """`verified`'s second half: the output read back (`read_back`) holds no `check` error its
    input did not have."""
    new = added_errors(before, as_written, same_messages=same_messages, same_input=same_input)
    if new:
        v = new[0]
        raise PostConditionError(f"{as_written.name}: {operation} would add {v.rule} at message {v.index}: {v.text}; "
                                 "nothing written", hint=_BUG)


_BUG = f"this is a bug in transcompact: run again with {option('traceback')} and report it"


def _one_for_one(one, other) -> bool:
    """Whether two transcripts hold the same messages, one for one, as most formats read back.
    A message still unread on both sides is compared by its view: it was written as the bytes it
    was read from, or as those bytes with members beside its message taken out (`slim`, which
    reads each such line back as the value it had less those members, `jsondata.without_members`),
    and read back from them."""
    return len(one.messages) == len(other.messages) and all(map(_same_message, one.messages, other.messages))


def _same_turns(one, other) -> bool:
    """Whether two transcripts hold the same turns, one at a time (a large log is not copied)."""
    missing: tuple[str | None, list] = (None, [])
    return all(_same_turn(a, b) for a, b in itertools.zip_longest(_turns(one), _turns(other), fillvalue=missing))


def _same_message(one, other) -> bool:
    if one.view is not None and other.view is not None:
        return one.role == other.role and one.view.blocks == other.view.blocks
    # Read apart: a message read back to be compared is not held read (a large log's output).
    return _same_turn((one.role, one.read_apart().blocks), (other.role, other.read_apart().blocks))


def _same_turn(one: tuple[str | None, list], other: tuple[str | None, list]) -> bool:
    (role, blocks), (other_role, other_blocks) = one, other
    return role == other_role and len(blocks) == len(other_blocks) and all(
        a == b or comparable(a) == comparable(b) for a, b in zip(blocks, other_blocks))


def _turns(transcript) -> Iterator[tuple[str, list]]:
    """Role and blocks of each run of messages of one role: what a reader gets, however a format
    splits a turn into messages (a Claude Code log reads consecutive user lines as one). Blocks
    compare as values; `comparable` settles only the ones that differ (a number kept as written)."""
    role, blocks = None, []
    for message in transcript.messages:
        if message.role != role and role is not None:
            yield role, blocks
            blocks = []
        role = message.role
        blocks += message.blocks
    if role is not None:
        yield role, blocks


def comparable(value):
    """A block or value as two readings of the same JSON give it equal: JSON objects and arrays as
    their text, since a number kept as written (`orjson.Fragment`) equals only itself."""
    if isinstance(value, (dict, list, orjson.Fragment)):
        return orjson.dumps(value)
    if isinstance(value, tuple):
        return tuple(comparable(v) for v in value)
    if dataclasses.is_dataclass(value):
        return type(value).__name__, tuple(comparable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.compare)
    return value
