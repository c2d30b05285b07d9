"""Where an output goes: a file (written atomically, `files.write_file`), or, for the bundle of
an OpenHands conversation read from its directory, that directory's event files."""

from __future__ import annotations

import os

from ..core import jsondata
from .files import write_file
from .openhands_store import is_bundle, is_conversation, write_conversation


def write_output(path: str | os.PathLike, data: bytes | jsondata.Lines, read_from: str, *, durable: bool = True) -> None:
    """Write `data` to `path`: as a conversation directory when it is the bundle of one read from
    `read_from`, else as a file (a conversation converted to another format is one file).
    `durable`: as `files.write_file`'s."""
    if isinstance(data, bytes) and is_conversation(read_from) and is_bundle(data):
        write_conversation(path, data, read_from)
    else:
        write_file(path, data, durable=durable)
