"""The operations never ask which format they have: a format's own rules reach them through
`formats.hook` (issue 13), so that adding a format touches no operation."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "cli" / "transcompact"
# The adapters themselves may know their names; everything else is an operation or a command.
OPERATIONS = sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in ("formats", "dialects"))


def _names_a_format(node: ast.AST) -> bool:
    """`x.format` on one side of a comparison (==, !=, in) with anything: a branch on the format."""
    return isinstance(node, ast.Attribute) and node.attr == "format"


def branches(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare) and any(_names_a_format(side) for side in (node.left, *node.comparators)):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Attribute) and node.attr == "NAME" and isinstance(node.value, ast.Name) \
                and node.value.id in ("claude_code", "jsonl"):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", OPERATIONS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_operation_branches_on_the_format(path):
    assert branches(path) == []


def test_the_rule_finds_a_branch(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('if transcript.format == "claude-code":\n    pass\nif t.format in LINE_FORMATS:\n    pass\n'
                      "x = claude_code.NAME\n")
    assert len(branches(sample)) == 3
