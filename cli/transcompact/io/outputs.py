"""Where an output goes: a file (written atomically, `files.write_file`), compressed as its name
says (`compression`), or, for the bundle of an OpenHands conversation read from its directory,
that directory's event files."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal

from ..core import jsondata
from .compression import by_suffix, compressed
from .files import write_file
from .openhands_store import is_bundle, is_conversation, write_conversation

BY_SUFFIX: Literal["by suffix"] = "by suffix"


def write_output(path: str | os.PathLike, data: bytes | jsondata.Lines, read_from: str, *, durable: bool = True,
                 compression: str | None = BY_SUFFIX, before: Callable[[], None] | None = None,
                 unchanged: tuple[int, int, int] | None = None) -> None:
    """Write `data` to `path`: as a conversation directory when it is the bundle of one read from
    `read_from`, else as a file (a conversation converted to another format is one file),
    compressed in `compression` (None: as it is; by default, as the path's suffix says:
    `out.jsonl.gz`). `durable`, `unchanged`: as `files.write_file`'s. `before`: run once the
    new bytes are written, before anything is replaced (the archive of the original)."""
    if is_conversation(read_from) and is_bundle(bundle := bytes(data)):  # slim gives its lines (`Lines`)
        write_conversation(path, bundle, read_from, before)
        return
    kind = by_suffix(os.fspath(path)) if compression == BY_SUFFIX else compression
    write_file(path, compressed(data, kind) if kind else data, durable=durable, before=before, unchanged=unchanged)
