"""The tests' own house rules: a test asks for a shared fixture (conftest.py) or builder
(builders.py, strategies.py), never for another test module's helpers, so that a newcomer can
add or delete a test module without breaking another."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def imported_test_modules(source: str) -> list[str]:
    """The test modules (`test_*`) that `source` imports, however it spells the import."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            found += [module] if module.split(".")[-1].startswith("test_") else \
                [alias.name for alias in node.names if alias.name.startswith("test_")]
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name.split(".")[-1].startswith("test_")]
    return found


@pytest.mark.parametrize("path", sorted(TESTS.glob("*.py")), ids=lambda path: path.name)
def test_no_test_module_imports_another(path):
    assert imported_test_modules(path.read_text()) == []


def test_the_rule_finds_every_spelling():
    assert imported_test_modules("from .test_prune import session\nfrom . import test_check\nimport tests.test_cli\n"
                                 "def f():\n    from .test_archive import claude_log\n") == [
        "test_prune", "test_check", "tests.test_cli", "test_archive"]
