"""The README and docs/: the generated parts match the code (the console examples too: they are
run, docs/console.py), the README fits on a screen and starts with `make run` and `make test`,
every relative link lands, and the Python examples run and do what their comments say."""

from __future__ import annotations

import importlib.util
import json
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
    missing = generator._console().missing([line[2:] for line in text.splitlines() if line.startswith("$ ")])
    if missing:
        pytest.skip(f"{path.relative_to(ROOT)}: its console examples run {', '.join(missing)}, which is not installed")
    new, changed = generator.rewrite(text)
    assert not changed, (f"{path.relative_to(ROOT)}: the generated part(s) {', '.join(changed)} differ from what the "
                         "code gives: run `make docs` (python docs/generate.py) and commit the result\n"
                         + generator.differences(text, new, str(path.relative_to(ROOT))))


def test_the_generated_parts_are_there():
    text = {p.name: p.read_text() for p in PAGES}
    assert "<!-- generated: commands -->" in text["README.md"]
    assert "<!-- generated: rules -->" in text["check.md"]
    assert "<!-- generated: formats-readme -->" in text["README.md"]  # the formats' tables: their registrations
    assert "<!-- generated: formats-detection -->" in text["formats.md"]
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


def test_every_console_block_is_generated():
    """A ```console block shows what its commands print: only the code may write it."""
    for path in PAGES:
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if line.startswith("```console"):
                assert number > 0 and re.fullmatch(r"<!-- generated: console( [\w-]+)? -->", lines[number - 1]), (
                    f"{path.relative_to(ROOT)}:{number + 1}: a console block outside `<!-- generated: console -->`: "
                    "wrap it so that `make docs` writes its output (or make it a ```sh block, without output)")


def _console_part(commands: str, shown: str) -> str:
    return f"<!-- generated: console -->\n```console\n{commands}{shown}```\n<!-- end generated -->\n"


def test_a_console_part_is_what_its_commands_print_in_order_with_what_varies_compared_loosely():
    generator = _generator()
    made, changed = generator.rewrite(_console_part("$ false\n$ echo $?   # the status of the one before\n$ ls logs\n", ""))
    assert changed == ["console ($ false)"]
    assert made == _console_part("$ false\n$ echo $?   # the status of the one before\n1\n$ ls logs\n",
                                 "api\nchat.jsonl\nclaude\nnotes.json\n")
    assert generator.rewrite(made) == (made, [])
    took = _console_part("$ echo '3 files; 0.2 s'\n", "3 files; 41.6 s\n")
    assert generator.rewrite(took) == (took, []), "the seconds a run took are masked"
    assert generator.rewrite(_console_part("$ echo '3 files; 0.2 s'\n", "4 files; 0.2 s\n"))[1], "a count is not"
    event = _console_part("""$ echo '{"time":"2026-11-22T22:33:29.181Z","tokens":8957,"duration_ms":34}'\n""",
                          '{"time":"2025-01-01T00:00:00.000Z","tokens":8957,"duration_ms":1}\n')
    assert generator.rewrite(event) == (event, []), "an event's time and duration are masked"


def _examples(path: Path, monkeypatch, capsys) -> tuple[dict, list[str]]:
    """Run a page's Python blocks in order, in one namespace, from the project's root: what they
    define, and the lines they print."""
    blocks = [body for language, body in _fences(path.read_text()) if language == "python"]
    assert blocks, f"{path.relative_to(ROOT)} has no Python example"
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for code in blocks:
        exec(compile(code, str(path.relative_to(ROOT)), "exec"), namespace)
    return namespace, capsys.readouterr().out.splitlines()


def _compacted_as_promised(namespace: dict, report, written: bytes, api) -> None:
    """`load` detects the format, `format="openai"` forces one; compact took the emergency
    checkpoint with no provider and no model call; `dumps` gives bytes in the shape read in."""
    from transcompact import load

    source = ROOT / "fixtures/anthropic/long-session.json"
    assert namespace["transcript"].format == "anthropic" and load(source, format="openai").format == "openai"
    assert report.strategy == "emergency" and report.fallback_reason == "--emergency"
    assert report.tokens_after < report.tokens_before and report.messages_after < report.messages_before
    assert api.requests == [], "a model was called, though a key and a server were at hand"
    assert isinstance(written, bytes) and json.loads(written).keys() == json.loads(source.read_bytes()).keys()


LIBRARY = DOCS / "library.md"


def test_the_readme_library_example_does_what_it_says(api, monkeypatch, capsys):
    namespace, printed = _examples(README, monkeypatch, capsys)
    report = namespace["report"]
    _compacted_as_promised(namespace, report, namespace["data"], api)
    assert printed == [f"emergency {report.tokens_before} → {report.tokens_after}"]


def test_the_library_page_example_does_what_it_says(api, monkeypatch, capsys):
    from transcompact import Transcript, dumps

    namespace, printed = _examples(LIBRARY, monkeypatch, capsys)
    transcript, estimated, result = namespace["transcript"], namespace["report"], namespace["result"]
    assert dumps(namespace["same"]) == dumps(transcript) and namespace["same"].messages == transcript.messages  # from bytes
    assert printed[0] == f"{estimated.tokens} {estimated.status} {estimated.method} {estimated.by_kind['tool_results']}"
    assert isinstance(namespace["fixed"], Transcript) and isinstance(namespace["fixes"].as_dict(), dict)  # (transcript, report)
    _compacted_as_promised(namespace, result, namespace["written"], api)
    assert result.as_dict()["window_messages"] > 0
    assert printed[-1] == f"emergency {result.tokens_before} → {result.tokens_after} {result.as_dict()['window_messages']}"


def test_every_python_example_is_run():
    """Each page with a Python example has a test above that runs it and checks its comments."""
    pages = {path for path in PAGES if any(language == "python" for language, _ in _fences(path.read_text()))}
    assert pages == {README, LIBRARY}, "a new page with a Python example needs a test here that runs it"
