"""An OpenHands conversation directory as one input (upstream `conversation/persistence_const.py`,
`event_store.py`): `base_state.json` and `events/event-NNNNN-<id>.json`, one event per file.

Reading and writing go through bytes like every other input, so a directory is read as its
**bundle**: JSON Lines of `base_state.json`, then each event file in index order. The indices
must run from 0 without a gap, each held by one file: the agent's `EventLog` loads only up to
the first missing index (and numbers its next event by the count of files, over the later
ones), and of two files with one index it loads whichever the directory lists last, so such a
directory is refused rather than read as part of itself. An event file as OpenHands writes it is
one line of JSON (`model_dump_json`), taken as it is; one laid out over several lines is taken
compacted. Writing a bundle back to a directory writes only what differs: an event file (or the
state) whose JSON is unchanged is left as it is, byte for byte, and a new event gets the file
name OpenHands gives it; written to another directory, the conversation takes along the files
beside them that are no part of the bundle. The bundle is also what goes to stdout, and reads
back as the same conversation.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import orjson

from ..core.errors import InputError, Location, OutputError, ParseError
from ..core.jsondata import dumps, load_json
from .files import write_file

BASE_STATE = "base_state.json"
EVENTS_DIR = "events"
EVENT_NAME = re.compile(r"^event-(?P<idx>\d{5,})-(?P<event_id>[0-9a-fA-F\-]{8,})\.json$")


def is_conversation(path: str | os.PathLike) -> bool:
    """A directory holding `base_state.json` and `events/`: one conversation, not a tree of inputs."""
    return (os.path.isdir(path) and os.path.isfile(os.path.join(path, BASE_STATE))
            and os.path.isdir(os.path.join(path, EVENTS_DIR)))


def event_file_name(index: int, event_id: str) -> str:
    return f"event-{index:05d}-{event_id}.json"


def _event_files(path: str) -> dict[int, list[str]]:
    """The event files by index, as the agent's scan finds them (other names are not events), each
    index with every file that names it."""
    directory = os.path.join(path, EVENTS_DIR)
    try:
        names = sorted(os.listdir(directory))
    except OSError as error:
        raise InputError(f"cannot list the events: {error.strerror}", location=Location(directory)) from None
    files: dict[int, list[str]] = {}
    for name in names:
        if found := EVENT_NAME.match(name):
            files.setdefault(int(found["idx"]), []).append(name)
    return files


def _loaded_events(path: str) -> list[str]:
    """The event files in index order, when they are what the agent loads: every index from 0 to
    the last, each in one file."""
    files = _event_files(path)
    for index, names in sorted(files.items()):
        if len(names) > 1:
            raise InputError(f"event {index} is held by {len(names)} files ({', '.join(names)}): which one OpenHands "
                             "loads depends on the order the file system lists them", location=Location(path),
                             hint="keep the one that belongs to this conversation and move the other out of events/")
    missing = next(index for index in range(len(files) + 1) if index not in files)
    if missing < len(files):
        later = len(files) - missing  # every index before the gap is there
        loaded = {0: "none of its events", 1: "only event 0"}.get(missing, f"only events 0 to {missing - 1}")
        raise InputError(f"event {missing} is missing (no events/{event_file_name(missing, '<id>')}) and {later} later "
                         f"event file{'s' if later > 1 else ''} follow{'' if later > 1 else 's'}: OpenHands loads "
                         f"{loaded}, and numbers its next event as if the gap were not there", location=Location(path),
                         hint=f"put event {missing} back, or renumber the later files so that the indices run "
                              "from 0 without a gap")
    return [files[index][0] for index in range(len(files))]


def _line(path: str) -> bytes:
    """A file's JSON as one line: its bytes when they are one line already."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", location=Location(path)) from None
    try:
        value = load_json(data)
    except orjson.JSONDecodeError as error:
        raise ParseError(f"malformed JSON: {error.msg}", location=Location(path, error.lineno, error.colno)) from None
    return data if b"\n" not in data and not data.startswith(b"\xef\xbb\xbf") else dumps(value, indent=False)


def read_conversation(path: str) -> bytes:
    """The bundle of the conversation directory at `path`."""
    names = _loaded_events(path)
    if not names:
        raise InputError("the conversation has no events yet (no events/event-00000-<id>.json): nothing to read",
                         location=Location(path))
    lines = [_line(os.path.join(path, BASE_STATE))]
    lines += [_line(os.path.join(path, EVENTS_DIR, name)) for name in names]
    return b"\n".join(lines) + b"\n"


def write_conversation(path: str | os.PathLike, data: bytes, read_from: str | os.PathLike | None = None,
                       before: Callable[[], None] | None = None) -> None:
    """Write a bundle into the conversation directory at `path` (made if new): the files of the
    conversation at `read_from` that the bundle does not hold, when that is another directory,
    then the event files that are new or changed, then `base_state.json` if it changed, so that
    the state never names an event that is not on disk yet. `before`: run once the bundle can be
    written there, before anything is."""
    path = os.fspath(path)
    values = [(line, load_json(line)) for line in data.split(b"\n") if line.strip()]
    if not values or not isinstance(values[0][1], dict) or "kind" in values[0][1]:
        raise OutputError("not a conversation's bundle: its first line is no base_state", location=Location(path))
    (state_line, _), events = values[0], values[1:]
    directory = os.path.join(path, EVENTS_DIR)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise OutputError(f"cannot create the directory: {error.strerror}", location=Location(directory)) from None
    names = [event_file_name(index, value["id"]) for index, (_, value) in enumerate(events)]
    # An event file the bundle does not hold would stay beside it, and the agent would load it too.
    in_place = read_from is not None and os.path.samefile(read_from, path)
    for index, held in sorted(_event_files(path).items()):
        if held != names[index:index + 1] and in_place:
            raise OutputError("the output leaves events out, and the event files after them would be numbered "
                              "again: a conversation is not renumbered in place; nothing written",
                              location=Location(path), hint="write it to another directory (-o DIR), then move it")
        if held != names[index:index + 1]:
            ours = f", not {names[index]}" if index < len(names) else f", past this conversation's {len(names)} events"
            raise OutputError(f"already holds event {index} as {', '.join(held)}{ours}; nothing written",
                              location=Location(directory))
    if before is not None:
        before()
    if read_from is not None and not os.path.samefile(read_from, path):
        _copy_the_rest(os.fspath(read_from), path)
    for name, (line, _) in zip(names, events):
        _write_if_changed(os.path.join(directory, name), line)
    _write_if_changed(os.path.join(path, BASE_STATE), state_line)


def _copy_the_rest(source: str, target: str) -> None:
    """Every file of the conversation at `source` but the state and the event files (what else the
    agent, or its user, keeps there), to the same place under `target`."""
    for directory, _, names in os.walk(source):
        inside = os.path.relpath(directory, source)
        for name in names:
            if (inside, name) == (os.curdir, BASE_STATE) or inside == EVENTS_DIR and EVENT_NAME.match(name):
                continue
            try:
                with open(os.path.join(directory, name), "rb") as handle:
                    data = handle.read()
            except OSError as error:
                raise InputError(f"cannot read: {error.strerror}", location=Location(os.path.join(directory, name))) from None
            into = os.path.normpath(os.path.join(target, inside))
            try:
                os.makedirs(into, exist_ok=True)
            except OSError as error:
                raise OutputError(f"cannot create the directory: {error.strerror}", location=Location(into)) from None
            _write_if_changed(os.path.join(into, name), data)


def is_bundle(data: bytes) -> bool:
    try:
        first = load_json(data.split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        return False
    return isinstance(first, dict) and "kind" not in first and "agent" in first


def _write_if_changed(path: str, line: bytes) -> None:
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
        return load_json(old) == load_json(new)
    except orjson.JSONDecodeError:
        return False
