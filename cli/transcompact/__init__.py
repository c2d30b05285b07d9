"""transcompact: keep long LLM conversations inside their context window.

The library: `load` a transcript from a file or `loads` it from bytes (any format), run
operations over the one in-memory model (`estimate`, `prune`, `find_cut_point`, `summarize`,
`compact`, `check`, `repair`; `slim` and `expand` work on the bytes too; `sessions` lists the logs agents have stored), `dump` it to a file
or `dumps` it to bytes, in the shape it was read in, or `convert` it to a plain request body.

The layers, lowest first (each imports only from those below it): `core`, `io`, `dialects`,
`formats` and `providers`, `counting`, `ops`, `run`, `cli` (the command line; `__main__` runs it
as `python -m transcompact`).

The names below are imported on first use, so that `transcompact --help` and every command
that needs only part of the library start fast (a shell pipeline pays the start-up each call).
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "ExitCode": ("core.errors", "ExitCode"),
    "Location": ("core.errors", "Location"),
    **{name: ("core.errors", name) for name in (  # the errors, as docs/errors.md shows their tree
        "TranscompactError", "UsageError", "InputError", "ParseError", "UnknownFormat", "ShapeError", "InstallationError",
        "ProviderError", "PromptTooLong", "RefusedByCommand", "OutputError", "PostConditionError", "InternalError")},
    "Message": ("core.model", "Message"),
    "Transcript": ("core.model", "Transcript"),
    "load": ("formats", "load"),
    "loads": ("formats", "loads"),
    "dump": ("formats", "dump"),
    "dumps": ("formats", "dumps"),
    "check": ("ops.validity.check", "check"),
    "Violation": ("core.violation", "Violation"),
    "repair": ("ops.validity.repair", "repair"),
    "Fix": ("ops.validity.repair", "Fix"),
    "RepairReport": ("ops.validity.repair", "RepairReport"),
    "estimate": ("ops.estimate", "estimate"),
    "Estimate": ("ops.estimate", "Estimate"),
    "EstimateOptions": ("counting.counter", "Options"),
    "prune": ("ops.pruning.prune", "prune"),
    "PruneOptions": ("ops.pruning.prune", "PruneOptions"),
    "PruneReport": ("ops.pruning.prune", "PruneReport"),
    "context_management": ("ops.pruning.context_editing", "context_management"),
    "slim": ("ops.pruning.slim", "slim"),
    "SlimReport": ("ops.pruning.slim", "SlimReport"),
    "expand": ("ops.pruning.expand", "expand"),
    "sessions": ("ops.sessions", "sessions"),
    "Session": ("ops.sessions", "Session"),
    "find_cut_point": ("ops.compaction.cut", "find_cut_point"),
    "Cut": ("ops.compaction.cut", "Cut"),
    "summarize": ("ops.compaction.summarize", "summarize"),
    "SummaryOptions": ("ops.compaction.summarize", "SummaryOptions"),
    "Summary": ("ops.compaction.summarize", "Summary"),
    "compact": ("ops.compaction.compact", "compact"),
    "CompactOptions": ("ops.compaction.compact", "CompactOptions"),
    "CompactReport": ("ops.compaction.compact", "CompactReport"),
    "convert": ("ops.convert", "convert"),
    "diff": ("ops.diff", "diff"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        module, attribute = _EXPORTS[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
