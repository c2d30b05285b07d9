"""The operations never ask which format they have, nor import a format's own modules: a format's
own rules reach them through its adapter's typed hooks (`formats.adapter.Format`), so that adding
a format touches no operation."""

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


# What an operation may import of formats/: the registry and the adapter's type; never a format's own module.
REGISTRY = ("transcompact.formats", "transcompact.formats.adapter")
FORMAT_MODULES = {p.stem for p in (PACKAGE / "formats").iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file()}


def format_imports(text: str, package: str) -> list[str]:
    """The imports of a format's own module (`transcompact.formats.<format>...`) in `text`, the
    source of a module of `package`, as `line: module`: imports inside functions and under
    TYPE_CHECKING too."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            # `from ..formats import claude_code` imports the format's module as a name.
            targets = [target] + [f"{target}.{alias.name}" for alias in node.names
                                  if target == "transcompact.formats" and alias.name in FORMAT_MODULES]
        else:
            continue
        found += [f"{node.lineno}: {target}" for target in targets
                  if target.startswith("transcompact.formats.") and target not in REGISTRY]
    return found


@pytest.mark.parametrize("path", OPERATIONS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_operation_imports_a_format(path):
    """An operation reaches a format through the registry and its adapter's hooks, never by
    importing the format's own modules (its constants, its rules, its rewrites)."""
    package = ".".join(path.relative_to(PACKAGE.parent).parent.parts)
    assert format_imports(path.read_text(), package) == []


def test_the_rule_finds_an_import_of_a_format():
    text = ("from ..formats.claude_code.rewrites import COMPACT_PREAMBLE\n"
            "from ..formats import adapter, codex\n"
            "from ..formats.adapter import Format\n"
            "import transcompact.formats.pi.rules\n"
            "def later():\n    from ..formats.gemini import reader\n")
    assert format_imports(text, "transcompact.ops") == [
        "1: transcompact.formats.claude_code.rewrites", "2: transcompact.formats.codex", "4: transcompact.formats.pi.rules",
        "6: transcompact.formats.gemini"]
    assert format_imports("from ....formats.pi import rules\n", "transcompact.ops.compaction.checkpoint") == ["1: transcompact.formats.pi"]
    assert format_imports("from ..formats import adapter, loads\nfrom ..formats.adapter import Format\n", "transcompact.ops") == []


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
