"""transcompact: keep long LLM conversations inside their context window.

The library: `load` a transcript from bytes (any format), run operations over the one
in-memory model (`check`, `repair`), `dump` it back in the shape it was read in.
"""

from .check import Violation, check
from .errors import ExitCode, TranscompactError
from .formats import dump, load
from .model import Message, Transcript
from .repair import Fix, repair

__version__ = "0.1.0"

__all__ = [
    "ExitCode",
    "Fix",
    "Message",
    "Transcript",
    "TranscompactError",
    "Violation",
    "check",
    "dump",
    "load",
    "repair",
]
