"""The README and docs/: the generated parts match the code, the README fits on a screen and
starts with `make run` and `make test`, every relative link lands, the library page runs."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from transcompact.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
README_LINES = 250


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outside_code(text: str) -> str:
    """The text with fenced blocks and inline code blanked out (a link there is not a link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"(`+).*?\1", "", text, flags=re.S)


def _fences(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped but - and _, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_generated_parts_match_the_code(path):
    text = path.read_text()
    generator = _generator()
    new, changed = generator.rewrite(text)
    assert not changed, (f"{path.relative_to(ROOT)}: the generated part(s) {', '.join(changed)} differ from what the "
                         "code gives: run `make docs` (python docs/generate.py) and commit the result")


def test_the_generated_parts_are_there():
    text = {p.name: p.read_text() for p in PAGES}
    assert "<!-- generated: commands -->" in text["README.md"]
    assert "<!-- generated: rules -->" in text["check.md"]
    assert "<!-- generated: models -->" in text["counting.md"]
    for command in COMMANDS:
        page = text.get(f"{command}.md")
        assert page is not None, f"docs/{command}.md is missing"
        assert page.startswith(f"# `transcompact {command}`\n")
        assert f"<!-- generated: help {command} -->" in page


def test_every_generated_block_is_closed():
    for path in PAGES:
        text = path.read_text()
        assert text.count("<!-- generated: ") == text.count("<!-- end generated -->"), path


def test_the_readme_fits_on_a_screen():
    lines = README.read_text().count("\n")
    assert lines <= README_LINES, f"README.md has {lines} lines, more than {README_LINES}: move the detail to docs/"


def test_the_readme_starts_with_make_run_and_make_test():
    commands = []
    for language, body in _fences(README.read_text()):
        for line in body.splitlines():
            if language == "console":
                line = line[2:] if line.startswith("$ ") else ""
            line = line.split("#", 1)[0].strip()
            if line:
                commands.append(line)
    assert commands[:2] == ["make run", "make test"]


def test_make_run_and_make_test_are_what_the_readme_says():
    makefile = (ROOT / "Makefile").read_text()
    targets = dict(re.findall(r"^([\w-]+):[^\n]*\n((?:\t[^\n]*\n)*)", makefile, flags=re.M))
    run = targets["run"].replace("\\\n", " ")
    assert "env -u ANTHROPIC_API_KEY" in run and "compact" in run and "estimate" in run, "make run: the main job, no key"
    for fixture in re.findall(r"fixtures/\S+", run):
        assert (ROOT / fixture).is_file(), f"make run uses {fixture}, which is not shipped"
    assert "pytest" in targets["test"]
    assert "generate.py" in targets["docs"]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_land(path):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _outside_code(path.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        landing = (path.parent / file).resolve() if file else path
        if not landing.exists():
            broken.append(f"{target}: no such file")
        elif anchor and landing.suffix == ".md" and anchor not in _anchors(landing):
            broken.append(f"{target}: no heading #{anchor} in {landing.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_library_page_example_runs(monkeypatch):
    blocks = [body for language, body in _fences((DOCS / "library.md").read_text()) if language == "python"]
    assert blocks
    monkeypatch.chdir(ROOT)
    for code in blocks:
        exec(compile(code, "docs/library.md", "exec"), {})
