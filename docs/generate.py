"""Rewrite the parts of README.md and docs/*.md that come from the code: `make docs`.

A generated part sits between two markers and is rewritten whole:

    <!-- generated: NAME -->
    …
    <!-- end generated -->

NAME is one of
- `commands`: the command list, from `transcompact.cli.main.COMMANDS` (what `transcompact --help` lists);
- `help COMMAND`: the output of `transcompact COMMAND --help` at 80 columns;
- `rules`: the table of `transcompact.ops.validity.check.RULES`;
- `formats-readme` and `formats-detection`: the README's table of the formats and docs/formats.md's,
  from their registrations (`transcompact.core.format_names.FORMATS`);
- `models`: the table of `transcompact.counting.models.MODELS`;
- `errors`: the tree of the error classes `transcompact` exports, with their exit statuses;
- `console` (or `console SETUP`): a ```console block whose `$ ` lines are kept and run, each
  followed by what it prints: docs/console.py says how (a scratch directory made from the
  fixtures, a loopback stand-in for the APIs, what is compared loosely).

`python docs/generate.py` rewrites the files; `python docs/generate.py --check` changes nothing
and exits 1, naming each part that differs from what the code gives (tests/test_docs.py runs it).
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONSOLE = "console"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[^>]*?) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


@functools.cache
def _console():
    """docs/console.py, loaded by its path (this file is run as a script, and loaded by path by the tests)."""
    spec = importlib.util.spec_from_file_location("docs_console", Path(__file__).resolve().parent / "console.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(text: str) -> str:
    """Text as one Markdown table cell: no HTML tag, no column break."""
    return text.replace("|", "\\|").replace("<", "&lt;")


def commands() -> str:
    from transcompact.cli.main import COMMANDS

    return "".join(f"- [`{name}`](docs/{name}.md): {COMMANDS[name][1]}\n" for name in sorted(COMMANDS))


def help_text(command: str) -> str:
    from click.testing import CliRunner

    from transcompact.cli.main import cli

    unset = {name: None for name in os.environ if name.startswith("TRANSCOMPACT_")}
    result = CliRunner(env=unset).invoke(cli, [command, "--help"], prog_name="transcompact", terminal_width=80)
    if result.exit_code != 0:
        raise SystemExit(f"transcompact {command} --help failed:\n{result.output}")
    return f"```text\n{result.stdout.rstrip()}\n```\n"


def rules() -> str:
    table = importlib.import_module("transcompact.ops.validity.check").RULES
    rows = "".join(f"| {rule} | {_cell(text)} |\n" for rule, text in table.items())
    return "| rule | what must hold |\n| --- | --- |\n" + rows


def _format_cell(text: str) -> str:
    """A registration's text as one Markdown table cell: it is Markdown already (code spans and
    all), so only a column break is escaped; a setting it names (`core.errors.option`) is
    spelled as the command line's flag."""
    from transcompact.core.errors import _named

    return _named(text, flags=True).replace("|", "\\|")


def formats_readme() -> str:
    """The README's table: what each format is read from, whether it is written, how a compaction is recorded."""
    from transcompact.core.format_names import FORMATS

    rows = "".join(f"| `{f.name}` | {_format_cell(f.reads)} | {'yes' if f.writes else 'no (`--to` only)'} "
                   f"| {_format_cell(f.compaction) if f.writes else '—'} |\n" for f in FORMATS)
    return "| format | reads | writes | a compaction is |\n| --- | --- | --- | --- |\n" + rows


def formats_detection() -> str:
    """docs/formats.md's table: each format, what it is and what detection takes for it, in the order it is tried."""
    from transcompact.core.format_names import FORMATS

    rows = "".join(f"| `{f.name}` | {_format_cell(f.what)} | {_format_cell(f.detected_by)} |\n" for f in FORMATS)
    return "| `--format` | what it is | detected by |\n| --- | --- | --- |\n" + rows


def models() -> str:
    table = importlib.import_module("transcompact.counting.models").MODELS
    rows = "".join(f"| `{name}` | {window:,} | {max_output:,} |\n" for name, (window, max_output) in table.items())
    return "| model | window | max output |\n| --- | --- | --- |\n" + rows


def errors() -> str:
    """The tree of the error classes the package exports, each with its exit status and docstring."""
    import inspect

    import transcompact

    classes = [value for name in transcompact.__all__ if isinstance(value := getattr(transcompact, name), type)
               and issubclass(value, transcompact.TranscompactError)]

    def lines(parent: type, depth: int) -> list[str]:
        out = []
        for cls in sorted((c for c in classes if parent in c.__bases__), key=lambda c: c.__name__):
            status = f" ({int(cls.exit_code)})" if depth == 1 or cls.exit_code != parent.exit_code else ""
            said = " ".join(inspect.getdoc(cls).split())
            out += [f"{'  ' * depth}- `{cls.__name__}`{status}: {said}", *lines(cls, depth + 1)]
        return out

    root = transcompact.TranscompactError
    return "\n".join([f"- `{root.__name__}`: {' '.join(inspect.getdoc(root).split())}", *lines(root, 1)]) + "\n"


def generate(name: str) -> str:
    kind, _, argument = name.partition(" ")
    makers = {"commands": commands, "rules": rules, "models": models, "errors": errors, "formats-readme": formats_readme,
              "formats-detection": formats_detection}
    if kind == "help" and argument:
        return help_text(argument)
    if kind in makers and not argument:
        return makers[kind]()
    if kind == CONSOLE:
        raise SystemExit("a console part is made from its own commands: see rewrite")
    raise SystemExit(f"unknown generated part {name!r}")


def rewrite(text: str) -> tuple[str, list[str]]:
    """The text with every generated part as the code gives it, and the names of those that changed."""
    return rewrite_all([text])[0]


def rewrite_all(texts: list[str]) -> list[tuple[str, list[str]]]:
    """`rewrite` of each text; the console parts of all of them run side by side."""
    console = _console()
    parts = [(i, match) for i, text in enumerate(texts) for match in BLOCK.finditer(text)
             if match["name"].partition(" ")[0] == CONSOLE]
    jobs = [(console.commands(match["body"]), match["name"].partition(" ")[2]) for _, match in parts]
    produced = {(i, match.start()): body for (i, match), body in zip(parts, console.run_all(jobs))}
    return [_rewritten(text, {start: body for (j, start), body in produced.items() if j == i}, console)
            for i, text in enumerate(texts)]


def _rewritten(text: str, consoles: dict[int, str], console) -> tuple[str, list[str]]:
    """`text` with its parts rewritten, the console parts (by where they start) as given."""
    changed: list[str] = []

    def replace(match: re.Match) -> str:
        name, body = match["name"], consoles.get(match.start())
        if body is None:
            body = generate(name)
        else:
            name = f"{name} ($ {console.commands(match['body'])[0]})"
            if console.loose(body) == console.loose(match["body"]):
                body = match["body"]  # it differs at most in what varies from run to run: left as it is
        if body != match["body"]:
            changed.append(name)
        return match.group(1) + body + match.group(4)

    return BLOCK.sub(replace, text), changed


def differences(text: str, new: str, name: str) -> str:
    """What rewriting `text` would change, as a unified diff."""
    lines = difflib.unified_diff(text.splitlines(keepends=True), new.splitlines(keepends=True), name, f"{name} (from the code)")
    return "".join(lines)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    texts = [path.read_text() for path in FILES]
    for path, text, (new, changed) in zip(FILES, texts, rewrite_all(texts)):
        for name in changed:
            stale.append(f"{path.relative_to(ROOT)}: {name}")
        if changed and check:
            sys.stderr.write(differences(text, new, str(path.relative_to(ROOT))))
        if changed and not check:
            path.write_text(new)
    if stale:
        verb = "differs from the code" if check else "rewritten"
        for line in stale:
            print(f"{line}: {verb}", file=sys.stderr)
        if check:
            print("run `make docs` to regenerate", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
