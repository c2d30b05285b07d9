"""fsspec URLs as inputs and outputs (`s3://bucket/logs/`, `gs://…`, `file:///…`, `memory://…`):
read, listed and written through fsspec, which the `dask` extra installs
(docs/input-output.md#past-one-machine).

A plain path never comes here, and fsspec is imported only when a URL is used, so that the
command line starts without it and works without the extra.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import re
from typing import Any, NamedTuple

from ..core.errors import InputError, Location, OutputError, UsageError, without_credentials

EXTRA = "pip install 'transcompact[dask]'"  # what to do when fsspec or Dask is missing

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")  # two letters at least: `C://` stays a Windows path

# Object stores replace an object whole when its upload completes, and have no rename (a move is a
# copy and a delete): an output goes there in one upload, with no temporary object.
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oci", "oss"})


def is_url(path: str) -> bool:
    return _URL.match(path) is not None


def filesystem(url: str, *, writing: bool = False) -> tuple[Any, str]:
    """(the fsspec filesystem, the path in it) of a URL. Some filesystems reach out when they are
    made (an FTP or SFTP server, the archive of a `zip://a.json::logs.zip`): one that cannot be
    made is an InputError of the URL ("cannot read: …"), or with `writing` an OutputError
    ("cannot write: …")."""
    try:
        import fsspec
    except ImportError:
        raise UsageError(f"{url}: a URL needs fsspec, which is not installed", hint=EXTRA) from None
    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as error:  # the protocol's own package is missing (s3fs, gcsfs), or no such protocol
        raise UsageError(f"{url}: {error}") from None
    except Exception as error:  # refused, no such host, no such archive: each filesystem raises its own kinds
        failure = OutputError if writing else InputError
        raise failure(f"{'cannot write' if writing else 'cannot read'}: {_unmade(error)}", location=_at(url)) from None


def _at(url: str) -> Location:
    """Where an error of `url` is: the URL without its user-info (a location is shown as it is)."""
    return Location(without_credentials(url))


def read(url: str) -> bytes:
    fs, path = filesystem(url)
    try:
        return fs.cat_file(path)
    except FileNotFoundError:
        raise InputError("no such file", location=_at(url)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a transcript file", location=_at(url)) from None
    except Exception as error:  # a remote filesystem raises its own kinds (botocore's, aiohttp's), not only OSError
        raise InputError(f"cannot read: {_reason(error)}", location=_at(url)) from None


def local_path(url: str) -> str | None:
    """The plain path a URL names on this machine's own filesystem (`file://`), else None: such a
    file is written as a plain path is (`files.write_file`), not through fsspec, whose move
    would replace a device, a FIFO or a link with a file (as root, /dev/null), and drop the
    file's mode."""
    fs, path = filesystem(url, writing=True)
    from fsspec.implementations.local import LocalFileSystem

    return path if isinstance(fs, LocalFileSystem) else None


def write(url: str, data: bytes) -> None:
    """Write `data` at `url` (not on the local filesystem: `local_path`), so that a write that
    fails (or is interrupted) leaves what was there.

    On an object store, one upload: the object is replaced whole when it completes. Elsewhere, a
    temporary file beside the target, moved over it: a rename where the filesystem has one
    (SFTP, HDFS), atomic; a copy and a delete where it has none (`memory://`), not atomic.
    """
    fs, path = filesystem(url, writing=True)
    try:
        if url.split("://", 1)[0].lower() in OBJECT_STORES:
            fs.pipe_file(path, data)
            return
        directory, name = posixpath.split(path)
        temporary = posixpath.join(directory, f".{name}.{os.urandom(4).hex()}.tmp")  # hidden: a directory walk skips it
        try:
            fs.pipe_file(temporary, data)
            fs.mv(temporary, path)
        except BaseException:
            with contextlib.suppress(Exception):
                fs.rm_file(temporary)
            raise
    except Exception as error:
        raise OutputError(f"cannot write: {_reason(error)}", location=_at(url)) from None


def make_directory(url: str) -> None:
    fs, path = filesystem(url, writing=True)
    try:
        fs.makedirs(path, exist_ok=True)  # on an object store, where directories are only prefixes, nothing
    except Exception as error:
        raise OutputError(f"cannot create the directory: {_reason(error)}", location=_at(url)) from None


def is_directory(url: str) -> bool:
    try:
        fs, path = filesystem(url)
    except InputError:  # its filesystem cannot be made: then it is read as a file, and the error is that file's
        return False
    try:
        return fs.isdir(path)
    except Exception:  # then it is read as a file, and the error is that file's
        return False


class Entry(NamedTuple):  # not a dataclass: this module is imported at every start-up
    """An entry of a directory at a URL, with what `inputs` reads of an `os.scandir` entry."""

    name: str
    path: str  # the URL, as the directory's was spelled + "/" + name
    type: str  # "file", "directory", or what else the filesystem calls it
    link: bool

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return self.type == "directory" and (follow_symlinks or not self.link)

    def is_file(self) -> bool:
        return self.type == "file"

    def is_symlink(self) -> bool:
        return self.link


def scandir(url: str) -> contextlib.nullcontext[list[Entry]]:
    """The entries of the directory at `url`, as `os.scandir` gives a local one (a context
    manager); an error is an OSError with its reason in `strerror`."""
    try:
        fs, path = filesystem(url)
    except InputError as error:
        raise OSError(None, error.message.removeprefix("cannot read: ")) from None
    try:
        listing = fs.ls(path, detail=True)
    except Exception as error:
        raise OSError(None, _reason(error)) from None
    entries = []
    for info in listing:
        found = info["name"].rstrip("/")
        if found == path.rstrip("/"):  # an object store may list a directory's own marker object
            continue
        name = posixpath.basename(found)
        entries.append(Entry(name, f"{url.rstrip('/')}/{name}", info["type"], bool(info.get("islink"))))
    return contextlib.nullcontext(entries)


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def _unmade(error: BaseException) -> str:
    """Why a filesystem could not be made, in one line: an OSError's words and the file it names
    (the archive of a `zip://` URL), else the error's."""
    reason, filename = getattr(error, "strerror", None), getattr(error, "filename", None)
    if reason and isinstance(filename, str):
        reason += f": {filename}"
    return " ".join((reason or str(error) or type(error).__name__).split())
