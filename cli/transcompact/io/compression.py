"""Compressed inputs and outputs: gzip, zstd, bzip2 and xz (docs/input-output.md#compressed-files).

An input is known as compressed by its first bytes, whatever its name, and decompressed before
anything reads it; an output is compressed by its name's suffix (`-o log.jsonl.zst`), or as its
input was read (`-i`, `--output-dir`: the caller says which). A name's compression suffix is not
part of what it names: the walk matches `*.jsonl` against `a.jsonl.gz` as `a.jsonl`
(`without_suffix`).

The compressors are imported when a compressed file is met or written (zstd's from the
`zstandard` package, the others from the standard library), never at start-up. What is written
is the same bytes for the same input: no time and no file name in a gzip header, each tool's
default level.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError, InstallationError, Location

if TYPE_CHECKING:  # not imported at start-up: --help needs no orjson
    from ..core import jsondata

GZIP, ZSTD, BZIP2, XZ = "gzip", "zstd", "bzip2", "xz"
# How each begins (bzip2: "BZh" and the block size, 1 to 9).
MAGIC = ((GZIP, b"\x1f\x8b"), (ZSTD, b"\x28\xb5\x2f\xfd"), (BZIP2, b"BZh"), (XZ, b"\xfd7zXZ\x00"))
SUFFIXES = {".gz": GZIP, ".zst": ZSTD, ".bz2": BZIP2, ".xz": XZ}

# Compressed bytes handed to a decompressor at a time: what it has not used when a stream ends
# (`unused_data`, a copy) is handed again to the next one.
_INPUT_PIECE = 1 << 18
_GZIP_LEVEL = 6  # each tool's own default: gzip -6, zstd -3, bzip2 -9, xz -6
_ZSTD_LEVEL = 3
ZSTD_EXTRA = "pip install zstandard"


def detect(data: bytes | memoryview) -> str | None:
    """The compression `data` is in, by its first bytes (JSON never begins so), or None."""
    for kind, magic in MAGIC:
        if data[:len(magic)] == magic and (kind != BZIP2 or data[3:4] in (b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8", b"9")):
            return kind
    return None


def split_suffix(name: str) -> tuple[str, str]:
    """(the name without its compression suffix, that suffix or "")."""
    stem, dot, last = name.rpartition(".")
    suffix = f".{last.lower()}"
    return (stem, name[len(stem):]) if dot and stem and suffix in SUFFIXES and not stem.endswith(("/", "\\")) else (name, "")


def without_suffix(name: str) -> str:
    """`a.jsonl.gz` → `a.jsonl`: the name a compressed file has for what it holds."""
    return split_suffix(name)[0]


def by_suffix(path: str) -> str | None:
    """The compression a file named so is written in (`out.jsonl.zst`: zstd), or None."""
    suffix = split_suffix(path)[1]
    return SUFFIXES[suffix.lower()] if suffix else None


def plain(data: bytes, name: str) -> tuple[bytes, str | None]:
    """(the bytes `data` holds, decompressed when it is compressed; the compression, or None). A
    compressed input that is cut short or damaged is an InputError naming `name`."""
    kind = detect(data)
    if kind is None:
        return data, None
    return decompress(data, kind, name), kind


def decompress(data: bytes, kind: str, name: str) -> bytes:
    """Every stream of `kind` in `data`, one after the other (`cat a.gz b.gz` is one file, as
    gzip -d reads it; so is a bgzip file, a stream per 64 KB), fed a piece at a time into one
    growing buffer: the input is held once compressed and once plain, never twice plain. Zero
    bytes after the last stream are padding."""
    out = io.BytesIO()
    view = memoryview(data)
    start = 0
    new, damaged = _decompressor(kind)
    try:
        while True:
            decompressor = new()
            position = start
            while not decompressor.eof:
                if position >= len(view):
                    raise InputError(f"cut-off {kind} data: the file ends before its compressed stream does",
                                     location=Location(name))
                out.write(decompressor.decompress(view[position:position + _INPUT_PIECE]))
                position += _INPUT_PIECE
            start = min(position, len(view)) - len(decompressor.unused_data)
            if start == len(view):
                break
            if detect(bytes(view[start:start + 6])) != kind:
                if not view[start:].tobytes().strip(b"\x00"):
                    break
                raise InputError(f"{kind} data followed by bytes that are not {kind} (at byte offset {start})",
                                 location=Location(name))
    except damaged as error:
        raise InputError(f"damaged {kind} data: {_reason(error)}", location=Location(name)) from None
    return out.getvalue()  # the buffer itself, not a copy of it


def compressed(data: bytes | jsondata.Lines, kind: str) -> bytes:
    """`data` compressed in `kind`, fed a piece at a time (a log's lines are never joined whole):
    the same bytes each time for the same data."""
    pieces: Iterable[bytes | memoryview] = [data] if isinstance(data, bytes) else data.chunks()
    out = io.BytesIO()
    if kind == GZIP:
        import gzip

        # No file name and no time in the header (mtime=0): the same input gives the same bytes.
        with gzip.GzipFile(filename="", mode="wb", compresslevel=_GZIP_LEVEL, fileobj=out, mtime=0) as file:
            for piece in pieces:
                file.write(piece)
        return out.getvalue()
    compressor = _compressor(kind, len(data) if kind == ZSTD else 0)
    for piece in pieces:
        out.write(compressor.compress(piece))
    out.write(compressor.flush())
    return out.getvalue()


def _decompressor(kind: str) -> tuple[Callable[[], Any], tuple[type[Exception], ...]]:
    """(what makes a decompressor of one stream of `kind`: `decompress`, `eof`, `unused_data`;
    the errors it raises on damaged data)."""
    if kind == GZIP:
        import zlib

        # A gzip header and trailer, whose CRC and length are checked.
        return partial(zlib.decompressobj, wbits=16 + zlib.MAX_WBITS), (zlib.error,)
    if kind == BZIP2:
        import bz2

        return bz2.BZ2Decompressor, (OSError, EOFError)  # "Invalid data stream"
    if kind == XZ:
        import lzma

        return partial(lzma.LZMADecompressor, format=lzma.FORMAT_XZ), (lzma.LZMAError,)
    zstandard = _zstandard("read")
    return zstandard.ZstdDecompressor().decompressobj, (zstandard.ZstdError,)


def _compressor(kind: str, size: int) -> Any:
    """A compressor of `kind`: `compress`, `flush`."""
    if kind == BZIP2:
        import bz2

        return bz2.BZ2Compressor()
    if kind == XZ:
        import lzma

        return lzma.LZMACompressor(format=lzma.FORMAT_XZ)
    # As the zstd tool writes a frame: its checksum (a damaged file is found), and its size in its header.
    return _zstandard("write").ZstdCompressor(level=_ZSTD_LEVEL, write_checksum=True).compressobj(size=size)


def _zstandard(doing: str) -> Any:
    try:
        import zstandard
    except ImportError:
        raise InstallationError(f"cannot {doing} zstd: the zstandard package is not installed", hint=ZSTD_EXTRA) from None
    return zstandard


def _reason(error: BaseException) -> str:
    """The decompressor's words, in one line."""
    reason = str(error) or type(error).__name__
    for prefix in ("zstd decompress error: ", "zstd decompressor error: ", "Error -3 while decompressing data: "):
        reason = reason.removeprefix(prefix)
    return " ".join(reason.split())
