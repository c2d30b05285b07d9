"""Every package's docstring names each of its modules, so that a reader opening a folder learns
what is in it and in which order the work goes through it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "cli" / "transcompact"


def modules_of(package: Path) -> list[str]:
    """The modules and subpackages in `package` (`__init__` aside)."""
    return sorted(entry.stem for entry in package.iterdir()
                  if (entry.suffix == ".py" and entry.name != "__init__.py") or (entry / "__init__.py").is_file())


def unnamed(package: Path) -> list[str]:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    return [name for name in modules_of(package) if not re.search(rf"`{re.escape(name)}`", docstring)]


@pytest.mark.parametrize("package", sorted(p.parent for p in PACKAGE.rglob("__init__.py")),
                         ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_every_package_docstring_names_its_modules(package):
    assert unnamed(package) == []


def test_the_rule_finds_a_module_left_out(tmp_path):
    (tmp_path / "__init__.py").write_text('"""`alpha` then `beta`."""\n')
    for name in ("alpha", "beta", "gamma"):
        (tmp_path / f"{name}.py").write_text("")
    assert unnamed(tmp_path) == ["gamma"]
