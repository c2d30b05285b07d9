"""What a command reads: the files its arguments name, found one at a time, and where each one's
output goes (docs/input-output.md#inputs).

An argument is a file, `-` (stdin), or a directory, walked recursively in sorted order for the
files whose path matches a `--glob` pattern (`*.json` and `*.jsonl` by default; a compressed
file by its name without its compression suffix too); hidden entries and version-control
directories are skipped, and a link to a directory is not followed. An
OpenHands conversation directory (`base_state.json` and `events/`) is one input. A file
named twice (`logs logs/a.json`) is read once. Any of them may be an fsspec URL (`s3://bucket/logs/`),
listed and read through `urls`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from ..core.errors import InputError, Location, UsageError, option
from . import urls
from .compression import plain, split_suffix
from .files import STDIN, read_file
from .openhands_store import BASE_STATE, is_conversation, read_conversation

TRANSCRIPT_PATTERNS = ("*.json", "*.jsonl")
# Besides the hidden ones (.git, .hg, .svn, .bzr): the version-control directories that are not.
VCS_DIRECTORIES = frozenset({"CVS", "_darcs"})


def read_input(path: str) -> tuple[str, bytes]:
    """(name to show, bytes) of a file, or of stdin for `-`: what it holds, decompressed when it is
    compressed (`compression`)."""
    name, data, _ = read_compressed(path)
    return name, data


def read_compressed(path: str) -> tuple[str, bytes, str | None]:
    """`read_input`, and the compression the input was in (None: plain), which `-i` writes it in again."""
    name, data = _read(path)
    data, compressed = plain(data, name)
    return name, data, compressed


def _read(path: str) -> tuple[str, bytes]:
    if path == STDIN:
        return "<stdin>", sys.stdin.buffer.read()
    if urls.is_url(path):
        return path, urls.read(path)
    try:
        return path, read_file(path)
    except FileNotFoundError:
        raise InputError("no such file", location=Location(path)) from None
    except IsADirectoryError:
        if is_conversation(path):  # an OpenHands conversation: one input, read as its bundle
            return path, read_conversation(path)
        raise InputError("is a directory, not a transcript file", location=Location(path)) from None
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", location=Location(path)) from None



@dataclass(frozen=True)
class Source:
    """One input: the file to read, and its path under the argument that named it (what
    `--output-dir` mirrors). `problem` is why an argument gave no file to read (a directory that
    cannot be listed, or holds no matching file): the input is reported as failed. `left` is why
    a walk names a file it does not touch."""

    path: str
    relative: str
    problem: str | None = None
    left: str | None = None  # why a walk leaves this file alone (a link out of the tree): named, never read


def several(arguments: Sequence[str]) -> bool:
    """Whether the arguments may name several inputs: more than one, or a directory (known only
    once walked). Decided before any file is read, so that flags are checked first."""
    named = {a if a == STDIN or urls.is_url(a) else os.path.realpath(a) for a in arguments}  # a file named twice is one
    return len(named) > 1 or any(_is_directory(argument) for argument in arguments)


def _is_directory(argument: str) -> bool:
    """A directory to walk (an OpenHands conversation directory is one input, not a tree)."""
    if urls.is_url(argument):
        return urls.is_directory(argument)
    return os.path.isdir(argument) and not is_conversation(argument)


def discover(arguments: Sequence[str], patterns: Sequence[str] = (), *, ours: Sequence[str] = (),
             each_name: bool = False) -> Iterator[Source]:
    """Each input the arguments name (stdin when none), in their order, each directory's files
    in sorted order (matching `patterns`, by default TRANSCRIPT_PATTERNS), found as they are asked
    for: a large tree is not listed before the first file is read. `ours`, the files the run
    itself keeps (a `--report` or an archive inside the tree it walks), are no input. A file is
    read once, however it is named (a link, a hard link); with `each_name`, the hard links of a
    file are each its own (an agent knows a stored session by its name)."""
    patterns = patterns or TRANSCRIPT_PATTERNS
    matches = matcher(patterns)
    seen: set[Hashable] = {key for path in ours for key in _names_of(path)}
    for argument in arguments or (STDIN,):
        if argument == STDIN or not _is_directory(argument):
            source = Source(argument, "stdin.json" if argument == STDIN else os.path.basename(argument))
            found: Iterable[tuple[Source, tuple[Hashable, ...]]] = [(source, (STDIN,) if argument == STDIN else _names_of(argument))]
        else:
            found = _walk(argument, patterns, matches)
        for source, keys in found:
            keys = keys[:1] if each_name else keys  # (the first: its real path)
            if not any(key in seen for key in keys):
                seen.update(keys)
                yield source


def _names_of(path: str) -> tuple[Hashable, ...]:
    """What tells a file named as an argument from another name of it: its real path (a link),
    and its device and inode (a hard link) where it can be looked at."""
    if urls.is_url(path):
        return (path,)
    try:
        found = os.stat(path)
    except OSError:
        return (os.path.realpath(path),)
    return os.path.realpath(path), ("inode", found.st_dev, found.st_ino)


def _walk(top: str, patterns: Sequence[str], matches: Callable[[str, str], bool]) -> Iterator[tuple[Source, tuple[Hashable, ...]]]:
    """(each file under `top`, what tells it from another name of the same file: its real path,
    and within a walk the inode its directory lists it with)."""
    found = False
    real = top if urls.is_url(top) else os.path.realpath(top)
    for source in _files_under(top, real, "", matches, real):
        found = True
        yield source
    if not found:
        problem = f"no file matching {' or '.join(patterns)} in this directory (see {option('glob')})"
        yield Source(top, "", problem=problem), (top,)


def skipped(name: str) -> bool:
    """Whether a walk passes over an entry of this name: hidden, or a version-control directory."""
    return name.startswith(".") or name in VCS_DIRECTORIES


def _files_under(directory: str, real: str, relative: str, matches: Callable[[str, str], bool],
                 top: str) -> Iterator[tuple[Source, tuple[Hashable, ...]]]:
    """The files under `directory` (whose real path is `real`, its path under the argument
    `relative`): paths made by joining names, a link alone resolved (a tree of thousands of files
    costs one system call per directory, none per file: a file's inode comes with its name). A
    link to a file outside `top` (the argument's real path) is named and left, as `find`, `tar`
    and `rsync` leave it: a walk stays in its tree."""
    local = not urls.is_url(directory)
    try:
        opened: AbstractContextManager[Iterable[urls.Entry | os.DirEntry[str]]] = (
            os.scandir(directory) if local else urls.scandir(directory))
        with opened as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
        device = os.stat(directory).st_dev if local else None  # (a hard link is another name of an inode of it)
    except OSError as error:
        yield Source(directory, "", problem=f"cannot list the directory: {error.strerror}"), (directory,)
        return
    for entry in entries:
        if skipped(entry.name):
            continue
        path = f"{relative}{entry.name}"
        key = f"{real}/{entry.name}"
        if entry.is_dir(follow_symlinks=False) and is_conversation(entry.path):
            # Found through its base_state.json, so that --glob selects conversations as it does files.
            if matches(f"{path}/{BASE_STATE}", BASE_STATE):
                yield Source(entry.path, path), (key,)
            continue
        if entry.is_dir(follow_symlinks=False):
            yield from _files_under(entry.path, key, f"{path}/", matches, top)
            continue
        try:
            is_file = entry.is_file()
        except OSError as error:  # a link in a loop: named and left, as a link out of the tree
            if matches(path, entry.name):
                yield Source(entry.path, path, left=f"a link that leads nowhere ({error.strerror}): left as it is"), (key,)
            continue
        if not is_file and not urls.is_url(entry.path) and matches(path, entry.name):
            # A link to nothing, a device, a FIFO, a socket: named and left too, not passed over in silence.
            left = "a link that leads nowhere: left as it is" if not os.path.exists(entry.path) else \
                "not a regular file (a device, a FIFO or a socket): left as it is"
            yield Source(entry.path, path, left=left), (key,)
            continue
        if is_file and matches(path, entry.name):
            linked = local and entry.is_symlink()  # a link to a file named elsewhere too
            target = os.path.realpath(entry.path) if linked else key
            if linked and not target.startswith(top.rstrip(os.sep) + os.sep):
                yield Source(entry.path, path, left=f"a link to {target}, outside the directory: left as it is"), (key,)
                continue
            # (A hard link is known by its inode: the one the directory lists, for a walk to compare.)
            listed = (target, ("listed", device, entry.inode())) if isinstance(entry, os.DirEntry) and not linked else (target,)
            yield Source(entry.path, path), listed


def matcher(patterns: Sequence[str]) -> Callable[[str, str], bool]:
    """Whether a file (its path under its argument, its name) matches one of `patterns`, as
    `PurePath(path).match` says: a pattern without a slash is matched against the name alone,
    by fnmatch, which needs no path object made per file. A compressed file's name matches
    without its compression suffix too: `*.jsonl` takes `a.jsonl.gz`."""
    import fnmatch

    names = [pattern for pattern in patterns if pattern and "/" not in pattern]
    paths = [pattern for pattern in patterns if not pattern or "/" in pattern]
    if paths:
        from pathlib import PurePath  # not at start-up: most runs match names alone

    def matches_as_named(path: str, name: str) -> bool:
        return (any(fnmatch.fnmatch(name, pattern) for pattern in names)
                or any(PurePath(path).match(pattern) for pattern in paths))

    def matches(path: str, name: str) -> bool:
        if matches_as_named(path, name):
            return True
        stem, compressed = split_suffix(name)
        return bool(compressed) and matches_as_named(path[:-len(compressed)], stem)

    return matches


def _with_extension(name: str, extension: str) -> str:
    """`a.jsonl` → `a.json`; a compressed file's keeps its compression: `a.jsonl.gz` → `a.json.gz`."""
    stem, compressed = split_suffix(name)
    return os.path.splitext(stem)[0] + extension + compressed


def output_paths(sources: Iterable[Source], output_dir: str, suffix: str | None = None) -> list[tuple[Source, str | None]]:
    """Each source with the file it is written to under `output_dir` (None for one that failed to
    be found), its path there mirroring the one under its argument, its extension `suffix` when
    given (the output is in another format: `--to`). Two inputs with one output path are refused
    before anything is written."""
    planned: list[tuple[Source, str | None]] = []
    claimed: dict[str, str] = {}
    for source in sources:
        relative = _with_extension(source.relative, suffix) if suffix else source.relative
        target = None if source.problem else os.path.join(output_dir, relative)
        if target in claimed:
            raise UsageError(f"{claimed[target]} and {source.path} would both be written to {target}; nothing written",
                             hint=f"name the directory that holds both, so that their paths under {option('output_dir')} differ")
        if target is not None:
            claimed[target] = source.path
        planned.append((source, target))
    return planned
