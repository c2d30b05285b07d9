"""The repository explains itself: no file cites a document that is not in it (the designs the
project came from, the issues it was built by), so that a reader of a clone can follow every
reference. What the code relies on is in docs/, design.md first."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A citation of what lies outside: a design document's name, a seed, an issue, the shared folder's references.
OUTSIDE = re.compile(r"(?<![\w/])(?:reference/\w+\.md|validity\.md|agents\.md|style\.md|seeds?[ /]0\d\d|seed 0\d\d"
                     r"|[Ii]ssues? \d+|\.\./shared/(?!corpus))|(?<![\w/.])design\.md")


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout (an sdist): the files on disk
        return [p for p in ROOT.rglob("*") if p.is_file() and ".venv" not in p.parts and ".git" not in p.parts]
    return [ROOT / name for name in listed.stdout.splitlines()]


def citations(text: str, *, in_docs: bool = False) -> list[str]:
    """What `text` cites outside the repository; in docs/, `design.md` is the page beside it."""
    return [match.group(0) for match in OUTSIDE.finditer(text) if not (in_docs and match.group(0) == "design.md")]


@pytest.mark.parametrize("path", [p for p in tracked_files() if p.suffix in (".py", ".md", ".toml", ".cfg", ".txt", "")
                                  and p.name not in ("CHANGELOG.md", Path(__file__).name)  # this file: the rule's own examples
                                  and p.is_file()], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_file_cites_a_document_outside_the_repository(path):
    in_docs = path.parent == ROOT / "docs"
    found = [f"{number}: {citation}" for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
             for citation in citations(line, in_docs=in_docs)]
    assert found == []


def test_the_rule_finds_each_kind_of_citation():
    assert citations("(seed 003 `find_cut_point`) design.md §5, validity.md §3.2, issue 28, see agents.md, "
                     "../shared/reference/formats.md") == [
        "seed 003", "design.md", "validity.md", "issue 28", "agents.md", "../shared/"]
    assert citations("docs/design.md §5; ../shared/corpus; [formats](formats.md)") == []
    assert citations("[design](design.md#7-where-the-defaults-come-from)", in_docs=True) == []
