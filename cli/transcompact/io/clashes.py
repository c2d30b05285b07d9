"""Every path a run will write, compared before anything is opened for writing: with every input
and with each other (docs/input-output.md#paths-that-clash).

A run writes its outputs (`-o`, `-i`, `--output-dir`) and its own files (`--report`, `--archive`,
`--events`, `--resume`). Two of them naming one file (the same path, a link to it, a hard link),
or one of its own files naming an input, would lose data: the report would empty the transcript
before it is read, the archive would be written into the log. Such a run is refused as a whole
(a usage error that names both), and no file is touched.

An output may name its own input (`-o log.jsonl log.jsonl` is `-i`: the write is atomic, after
the read; `-o` takes one input); under `--output-dir`, never another input, which it would
replace before that one is read. A file of the
run's own inside a directory it walks is left out of the walk. Nor does a file of the run's own
replace a file the walk of a directory would read, nor a transcript (JSON, or compressed) that
is there already anywhere (a flag that takes a path took the first input: `--events a.json
b.json`): one the run wrote before (a report, events, an archive: known by how it begins) is
taken back.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.errors import UsageError, shown_name
from . import urls
from .compression import detect
from .files import STDIN, signature
from .inputs import TRANSCRIPT_PATTERNS, Source, discover, matcher, output_paths, skipped

# How a file the run itself writes begins: a report line, an event, an archive record, a --resume
# state (orjson and json write their keys in this order).
_OURS = (b'{"version":1,"command":', b'{"type":"compact_', b'{"kind":"', b'{\n "version": 1,\n "provider":')


@dataclass(frozen=True)
class Named:
    """A path a flag names: `flag` as the user typed it (`--report`), the path."""

    flag: str
    path: str
    read_first: bool = False  # the run reads it before it writes it, and refuses what is not its own (a --resume state)

    def __str__(self) -> str:
        return f"{self.flag} {shown_name(self.path)}"


def check_paths(files: Sequence[str], patterns: Sequence[str] = (), *, output: str | None = None,
                in_place: bool = False, output_dir: str | None = None, output_suffix: str | None = None,
                own: Iterable[Named] = (), reads: Iterable[Named] = ()) -> None:
    """Refuse (UsageError) a run whose written paths clash: `own`, the files the run writes
    besides its outputs (--report, --archive, --events, --resume); `reads`, files it reads besides
    its inputs (expand's --archive), which nothing may write over."""
    own = [named for named in own if named.path and named.path != STDIN]
    reads = [named for named in reads if named.path and named.path != STDIN]
    outputs = [Named("-o", output)] if output and output != STDIN else []
    inputs = [path for path in files if path != STDIN and not _walked(path)]
    _each_once(own + outputs, reads)
    # An input is read before its output is written (-o onto it, or -i, is safe), but a file of the
    # run's own would be written into it, and -i would rewrite a file the run reads.
    for named in own + (reads if in_place else []):
        clashing = next((path for path in inputs if _same(named.path, path)), None)
        if clashing is not None and named in reads:
            raise UsageError(f"-i would rewrite {named}, which the run reads; nothing written")
        if clashing is not None:
            raise UsageError(f"{named} is also an input ({shown_name(clashing)}); nothing written",
                             hint="give it a path of its own")
    for directory in (path for path in files if path != STDIN and _walked(path)):
        for named in own:
            if _walk_finds(directory, named.path, patterns) and _is_a_file(named.path) and not _the_runs_own(named.path):
                raise UsageError(f"{named} would replace a file in {shown_name(directory)}, which the run reads; "
                                 "nothing written", hint="give it a path outside the directory, or a new name")
    # A flag that takes a path swallows the word after it: `--events a.json b.json` meant two inputs.
    for named in own:
        if not named.read_first and _is_a_file(named.path) and _holds_a_transcript(named.path):
            raise UsageError(f"{named} would replace a transcript transcompact did not write; nothing written",
                             hint="give it a new name (a report, events or an archive of an earlier run is taken back)")
    if output_dir:
        _check_output_dir(files, patterns, output_dir, output_suffix, own + reads)


def _each_once(written: list[Named], reads: list[Named]) -> None:
    """No two written paths are one file, nor is a written one a file the run reads."""
    for i, named in enumerate(written):
        for other in [*written[i + 1:], *reads]:
            if _same(named.path, other.path):
                raise UsageError(f"{named} and {other} are the same file; nothing written",
                                 hint="give each a path of its own")


def _check_output_dir(files: Sequence[str], patterns: Sequence[str], output_dir: str, suffix: str | None,
                      others: list[Named]) -> None:
    """No output under --output-dir lands on another input, nor on a file the run writes or reads."""
    planned = output_paths(discover(files, patterns, ours=[named.path for named in others]), output_dir, suffix)
    existing = [(source, target) for source, target in planned if target is not None and _exists(target)]
    if not existing:  # the common case, a new or empty directory: one failed stat per file
        return
    for source, target in existing:
        for named in others:
            if _same(target, named.path):
                raise UsageError(f"the output of {shown_name(source.path)} would be {named}; nothing written")
    identities = {_identity(source.path): source for source, _ in planned if not source.problem}
    for source, target in existing:
        found: Source | None = identities.get(_identity(target))
        if found is not None and found is not source:
            raise UsageError(f"the output of {shown_name(source.path)} would replace the input {shown_name(found.path)} "
                             "before it is read; nothing written", hint="write to a directory that holds no input")


def _walked(path: str) -> bool:
    return not urls.is_url(path) and os.path.isdir(path)


def _walk_finds(directory: str, path: str, patterns: Sequence[str]) -> bool:
    """Whether walking `directory` reads `path` (were it not the run's own)."""
    if urls.is_url(path) or urls.is_url(directory):
        return False
    top = os.path.realpath(directory)
    real = os.path.realpath(path)
    if not real.startswith(top.rstrip(os.sep) + os.sep):
        return False
    relative = os.path.relpath(real, top)
    if any(skipped(part) for part in relative.split(os.sep)):
        return False  # the walk passes over it
    return matcher(patterns or TRANSCRIPT_PATTERNS)(relative.replace(os.sep, "/"), os.path.basename(real))


def _the_runs_own(path: str) -> bool:
    """Whether the file at `path` is empty or one the run wrote before (known by how it begins):
    what a file of the run's own may replace among the files a walk reads (any other is an input)."""
    start = _start_of(path)
    return start is not _UNREADABLE and (not start or start.startswith(_OURS))


def _holds_a_transcript(path: str) -> bool:
    """Whether the file at `path` holds JSON (a transcript, as the walk would read it) that the run
    did not write itself (known by how its files begin), or is compressed (the run's own never are)."""
    start = _start_of(path)
    if start is _UNREADABLE or not start:
        return start is _UNREADABLE
    return (start.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"[") and not start.startswith(_OURS)) or detect(start) is not None


_UNREADABLE = b"(unreadable)"  # (a file that cannot be read is taken as one the run may not replace)


def _start_of(path: str) -> bytes:
    """The first bytes of the file at `path`: b"" when there is none, `_UNREADABLE` when it cannot be read."""
    try:
        with open(path, "rb") as file:
            return file.read(64)
    except FileNotFoundError:
        return b""
    except OSError:
        return _UNREADABLE


def _is_a_file(path: str) -> bool:
    """A regular file (through links): what a run's own file replaces. Never a device or a FIFO,
    which a look inside would wait on or consume."""
    return not urls.is_url(path) and signature(path) is not None


def _exists(path: str) -> bool:
    return urls.is_url(path) or os.path.lexists(path)


def _identity(path: str) -> tuple:
    """What tells one file from another: its device and inode (a link or a hard link to it is the
    same file), its real path while it does not exist yet; () for what a write goes through and
    never replaces (a device, a FIFO), which two flags may both name."""
    if urls.is_url(path):
        return ("url", path)
    try:
        found = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return ("file", found.st_dev, found.st_ino) if stat.S_ISREG(found.st_mode) or stat.S_ISDIR(found.st_mode) else ()


def _same(path: str, other: str) -> bool:
    identity = _identity(path)
    return identity != () and identity == _identity(other)
