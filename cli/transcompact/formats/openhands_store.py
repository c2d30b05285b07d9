"""An OpenHands conversation directory as one input (upstream `conversation/persistence_const.py`,
`event_store.py`): `base_state.json` and `events/event-NNNNN-<id>.json`, one event per file.

Reading and writing go through bytes like every other input, so a directory is read as its
**bundle**: JSON Lines of `base_state.json`, then each event file in index order (the events the
agent loads: from index 0 up to the first gap). An event file as OpenHands writes it is one line
of JSON (`model_dump_json`), taken as it is; one laid out over several lines is taken compacted.
Writing a bundle back to a directory writes only what differs: an event file (or the state)
whose JSON is unchanged is left as it is, byte for byte, and a new event gets the file name
OpenHands gives it. The bundle is also what goes to stdout, and reads back as the same
conversation.
"""

from __future__ import annotations

import os
import re

import orjson

from ..errors import InputError, Location, OutputError, ParseError
from ..jsondata import dumps

BASE_STATE = "base_state.json"
EVENTS_DIR = "events"
EVENT_NAME = re.compile(r"^event-(?P<idx>\d{5,})-(?P<event_id>[0-9a-fA-F\-]{8,})\.json$")


def is_conversation(path: str | os.PathLike) -> bool:
    """A directory holding `base_state.json` and `events/`: one conversation, not a tree of inputs."""
    return (os.path.isdir(path) and os.path.isfile(os.path.join(path, BASE_STATE))
            and os.path.isdir(os.path.join(path, EVENTS_DIR)))


def event_file_name(index: int, event_id: str) -> str:
    return f"event-{index:05d}-{event_id}.json"


def _event_files(path: str) -> dict[int, str]:
    """The event files by index, as the agent's scan finds them (other names are not events)."""
    directory = os.path.join(path, EVENTS_DIR)
    try:
        names = os.listdir(directory)
    except OSError as error:
        raise InputError(f"cannot list the events: {error.strerror}", location=Location(directory)) from None
    return {int(found["idx"]): name for name in names if (found := EVENT_NAME.match(name))}


def _line(path: str) -> bytes:
    """A file's JSON as one line: its bytes when they are one line already."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", location=Location(path)) from None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise ParseError(f"malformed JSON: {error.msg}", location=Location(path, error.lineno, error.colno)) from None
    return data if b"\n" not in data and not data.startswith(b"\xef\xbb\xbf") else dumps(value, indent=False)


def read_conversation(path: str) -> bytes:
    """The bundle of the conversation directory at `path`."""
    files = _event_files(path)
    if 0 not in files:
        raise InputError("the conversation has no events yet (no events/event-00000-<id>.json): nothing to read",
                         location=Location(path))
    lines = [_line(os.path.join(path, BASE_STATE))]
    index = 0
    while index in files:  # the agent stops at the first missing index
        lines.append(_line(os.path.join(path, EVENTS_DIR, files[index])))
        index += 1
    return b"\n".join(lines) + b"\n"


def write_conversation(path: str | os.PathLike, data: bytes) -> None:
    """Write a bundle into the conversation directory at `path` (made if new): the event files
    that are new or changed, then `base_state.json` if it changed, so that the state never names
    an event that is not on disk yet."""
    path = os.fspath(path)
    values = [(line, orjson.loads(line)) for line in data.split(b"\n") if line.strip()]
    if not values or not isinstance(values[0][1], dict) or "kind" in values[0][1]:
        raise OutputError("not a conversation's bundle: its first line is no base_state", location=Location(path))
    (state_line, _), events = values[0], values[1:]
    directory = os.path.join(path, EVENTS_DIR)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create the directory: {error.strerror}", location=Location(directory)) from None
    existing = _event_files(path)
    for index, (line, value) in enumerate(events):
        name = event_file_name(index, value["id"])
        if index in existing and existing[index] != name:
            raise OutputError(f"already holds event {index} as {existing[index]}, not {name}; nothing more written",
                              location=Location(directory))
        _write_if_changed(os.path.join(directory, name), line)
    _write_if_changed(os.path.join(path, BASE_STATE), state_line)


def write_output(path: str | os.PathLike, data: bytes, read_from: str, *, durable: bool = True) -> None:
    """Write `data` to `path`: as a conversation directory when it is the bundle of one read from
    `read_from`, else as a file (a conversation converted to another format is one file).
    `durable`: as `files.write_file`'s."""
    from ..files import write_file

    if is_conversation(read_from) and _is_bundle(data):
        write_conversation(path, data)
    else:
        write_file(path, data, durable=durable)


def _is_bundle(data: bytes) -> bool:
    try:
        first = orjson.loads(data.split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        return False
    return isinstance(first, dict) and "kind" not in first and "agent" in first


def _write_if_changed(path: str, line: bytes) -> None:
    from ..files import write_file

    try:
        with open(path, "rb") as handle:
            old = handle.read()
    except FileNotFoundError:
        old = None
    except OSError as error:
        raise OutputError(f"cannot read: {error.strerror}", location=Location(path)) from None
    if old is not None and (old == line or _same_json(old, line)):
        return
    write_file(path, line)


def _same_json(old: bytes, new: bytes) -> bool:
    try:
        return orjson.loads(old) == orjson.loads(new)
    except orjson.JSONDecodeError:
        return False
