"""Rewrite the parts of README.md and docs/*.md that come from the code: `make docs`.

A generated part sits between two markers and is rewritten whole:

    <!-- generated: NAME -->
    …
    <!-- end generated -->

NAME is one of
- `commands`: the command list, from `transcompact.cli.main.COMMANDS` (what `transcompact --help` lists);
- `help COMMAND`: the output of `transcompact COMMAND --help` at 80 columns;
- `rules`: the table of `transcompact.ops.check.RULES`;
- `models`: the table of `transcompact.counting.models.MODELS`.

`python docs/generate.py` rewrites the files; `python docs/generate.py --check` changes nothing
and exits 1, naming each part that differs from what the code gives (tests/test_docs.py runs it).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- generated: (?P<name>[^>]*?) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


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
    table = importlib.import_module("transcompact.ops.check").RULES
    rows = "".join(f"| {rule} | {_cell(text)} |\n" for rule, text in table.items())
    return "| rule | what must hold |\n| --- | --- |\n" + rows


def models() -> str:
    table = importlib.import_module("transcompact.counting.models").MODELS
    rows = "".join(f"| `{name}` | {window:,} | {max_output:,} |\n" for name, (window, max_output) in table.items())
    return "| model | window | max output |\n| --- | --- | --- |\n" + rows


def generate(name: str) -> str:
    kind, _, argument = name.partition(" ")
    makers = {"commands": commands, "rules": rules, "models": models}
    if kind == "help" and argument:
        return help_text(argument)
    if kind in makers and not argument:
        return makers[kind]()
    raise SystemExit(f"unknown generated part {name!r}")


def rewrite(text: str) -> tuple[str, list[str]]:
    """The text with every generated part as the code gives it, and the names of those that changed."""
    changed: list[str] = []

    def replace(match: re.Match) -> str:
        body = generate(match["name"])
        if body != match["body"]:
            changed.append(match["name"])
        return match.group(1) + body + match.group(4)

    return BLOCK.sub(replace, text), changed


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path in FILES:
        text = path.read_text()
        new, changed = rewrite(text)
        for name in changed:
            stale.append(f"{path.relative_to(ROOT)}: {name}")
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
