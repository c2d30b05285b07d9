"""transcompact: keep long LLM conversations inside their context window.

The library: `load` a transcript from a file or `loads` it from bytes (any format), run
operations over the one in-memory model (`estimate`, `prune`, `find_cut_point`, `summarize`,
`compact`, `check`, `repair`; `expand` works on the bytes prune wrote), `dump` it to a file
or `dumps` it to bytes, in the shape it was read in, or `convert` it to a plain request body.

The names below are imported on first use, so that `transcompact --help` and every command
that needs only part of the library start fast (a shell pipeline pays the start-up each call).
"""

import importlib
import sys
import types

__version__ = "0.1.0"

_EXPORTS = {
    "ExitCode": ("errors", "ExitCode"),
    "TranscompactError": ("errors", "TranscompactError"),
    "Message": ("model", "Message"),
    "Transcript": ("model", "Transcript"),
    "load": ("formats", "load"),
    "loads": ("formats", "loads"),
    "dump": ("formats", "dump"),
    "dumps": ("formats", "dumps"),
    "check": ("check", "check"),
    "Violation": ("check", "Violation"),
    "repair": ("repair", "repair"),
    "Fix": ("repair", "Fix"),
    "RepairReport": ("repair", "RepairReport"),
    "estimate": ("estimate", "estimate"),
    "Estimate": ("estimate", "Estimate"),
    "EstimateOptions": ("estimate", "Options"),
    "prune": ("prune", "prune"),
    "PruneOptions": ("prune", "PruneOptions"),
    "PruneReport": ("prune", "PruneReport"),
    "context_management": ("context_editing", "context_management"),
    "expand": ("expand", "expand"),
    "find_cut_point": ("cut", "find_cut_point"),
    "Cut": ("cut", "Cut"),
    "summarize": ("summarize", "summarize"),
    "SummaryOptions": ("summarize", "SummaryOptions"),
    "Summary": ("summarize", "Summary"),
    "compact": ("compact", "compact"),
    "CompactOptions": ("compact", "CompactOptions"),
    "CompactReport": ("compact", "CompactReport"),
    "convert": ("convert", "convert"),
    "diff": ("diff", "diff"),
}

__all__ = sorted(_EXPORTS)


class _Package(types.ModuleType):
    # A function named like its module (check, repair, estimate) wins over the submodule, which
    # the import system also sets as an attribute of the package once it is imported.
    def __getattribute__(self, name):
        if name in _EXPORTS:
            module, attribute = _EXPORTS[name]
            return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        return super().__getattribute__(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_EXPORTS))


sys.modules[__name__].__class__ = _Package
