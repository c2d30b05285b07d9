"""The library as a person uses it: every operation importable from the package, the README's example runs."""

from __future__ import annotations

import re
from pathlib import Path

import transcompact

README = Path(__file__).resolve().parent.parent / "README.md"
DOCUMENTED = ["Cut", "CompactOptions", "CompactReport", "Estimate", "EstimateOptions", "ExitCode", "Fix", "Message",
              "PruneOptions", "PruneReport", "Summary", "SummaryOptions", "Transcript", "TranscompactError", "Violation",
              "check", "compact", "dump", "estimate", "expand", "find_cut_point", "load", "prune", "repair", "summarize"]


def test_every_operation_is_importable_from_the_package():
    assert transcompact.__all__ == sorted(DOCUMENTED)
    for name in transcompact.__all__:
        assert getattr(transcompact, name) is not None, name
    assert callable(transcompact.compact) and callable(transcompact.find_cut_point)


def test_the_readme_library_example_runs(monkeypatch, tmp_path):
    section = README.read_text().split("## As a library", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    exec(compile(code, "README.md", "exec"), {})
