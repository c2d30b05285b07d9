"""The operations never ask which format they have: a format's own rules reach them through its
adapter's typed hooks (`formats.adapter.Format`), so that adding a format touches
no operation."""

from __future__ import annotations

import ast
import inspect
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


def test_every_format_is_a_typed_adapter():
    """Each registered format is a `Format` whose members are all there and callable as the type
    declares them (a method it overrides takes the base's parameters first), and it overrides
    nothing the type does not declare (a misspelt hook would be a default silently kept)."""
    from transcompact.formats import BY_NAME, all_formats
    from transcompact.formats.adapter import Format

    declared = set(vars(Format)) | set(Format.__annotations__)
    methods = {name: value for name, value in vars(Format).items() if inspect.isfunction(value) and not name.startswith("_")}
    assert {"detect", "read", "write", "readable", "reload", "check_log", "append_compaction", "summary_wording"} <= set(methods)
    formats = tuple(all_formats())
    assert len(formats) == len(BY_NAME) and all(BY_NAME[f.name] is f for f in formats)
    for fmt in formats:
        assert isinstance(fmt, Format), fmt
        assert isinstance(fmt.name, str) and isinstance(fmt.description, str), fmt
        assert all(isinstance(getattr(fmt, flag), bool) for flag in ("lines", "writes", "results_twice")), fmt.name
        assert fmt.trim is None or callable(fmt.trim)
        own = {name for klass in type(fmt).__mro__[:type(fmt).__mro__.index(Format)] for name in vars(klass)
               if not name.startswith("_")}
        assert own <= declared, (fmt.name, own - declared)
        for name, base in methods.items():
            wanted = list(inspect.signature(base).parameters)[1:]  # without self
            got = list(inspect.signature(getattr(fmt, name)).parameters)
            assert got[:len(wanted)] == wanted, (fmt.name, name, got)
