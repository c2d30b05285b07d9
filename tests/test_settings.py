"""Every default is defined once, in `transcompact.core.settings`: no option of the library or the
command line spells a default out as a literal."""

from __future__ import annotations

import ast
from pathlib import Path

from click.testing import CliRunner

from transcompact.cli.main import cli
from transcompact.core import settings
from transcompact.counting.counter import Options
from transcompact.ops.compaction.compact import CompactOptions
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.pruning.prune import PruneOptions

PACKAGE = Path(__file__).resolve().parent.parent / "cli" / "transcompact"
NAMES = {name.lower() for name in vars(settings) if name.isupper()} | {"input_tokens", "model", "provider"}


def literal(node: ast.AST | None) -> bool:
    """A number or a string written out (True, False and None are no defaults worth a setting)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool)


def literal_defaults(source: str, where: str) -> list[str]:
    """Options dataclass fields, parameters named like a setting, and flags whose default is a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name.endswith("Options"):
            found += [f"{where}: {node.name}.{item.target.id} = {ast.unparse(item.value)}" for item in node.body
                      if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and literal(item.value)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args.args + node.args.kwonlyargs
            defaults = [None] * (len(node.args.args) - len(node.args.defaults)) + node.args.defaults + node.args.kw_defaults
            found += [f"{where}: {node.name}({argument.arg}={ast.unparse(default)})"
                      for argument, default in zip(arguments, defaults)
                      if argument.arg in NAMES and literal(default)]
        elif isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name == "number_option" and len(node.args) > 1 and literal(node.args[1]):
                found.append(f"{where}: number_option({ast.unparse(node.args[0])}, {ast.unparse(node.args[1])})")
            if name == "click.option":
                found += [f"{where}: {ast.unparse(node.args[0])} default={ast.unparse(k.value)}"
                          for k in node.keywords if k.arg == "default" and literal(k.value)]
    return found


def test_no_default_is_spelled_out_twice():
    found = [place for path in sorted(PACKAGE.rglob("*.py")) if path.name != "settings.py"
             for place in literal_defaults(path.read_text(), str(path.relative_to(PACKAGE)))]
    assert found == []


def test_the_library_and_the_command_line_share_the_defaults():
    assert (PruneOptions().soft_trim_chars, PruneOptions().head, PruneOptions().keep_last) == (
        settings.SOFT_TRIM_CHARS, settings.HEAD, settings.KEEP_LAST)
    assert (Options().ratio, Options().window, CompactOptions().threshold_tokens, SummaryOptions().keep_recent_tokens) == (
        settings.RATIO, settings.WINDOW, settings.THRESHOLD, settings.KEEP_RECENT_TOKENS)
    shown = CliRunner().invoke(cli, ["compact", "--help"], terminal_width=200).output
    for flag, value in (("--keep-recent-tokens", "20000"), ("--checkpoint-tokens", str(settings.CHECKPOINT_TOKENS)),
                        ("--soft-trim-chars", str(settings.SOFT_TRIM_CHARS)), ("--window", str(settings.WINDOW))):
        line = next(line for line in shown.splitlines() if line.strip().startswith(flag))
        assert f"default: {value}" in line, flag


def test_a_planted_literal_is_found():
    """The test above can fail."""
    planted = ("@dataclass\nclass XOptions:\n    window: int = 200_000\n    force: bool = False\n"
               "def f(timeout=60.0, other=3): pass\n"
               "number_option('head', 1500, 'h')\nclick.option('--x', default='chars')\n")
    assert literal_defaults(planted, "x.py") == [
        "x.py: XOptions.window = 200000", "x.py: f(timeout=60.0)", "x.py: number_option('head', 1500)",
        "x.py: '--x' default='chars'"]


def test_ci_without_the_corpus_fails_loudly(tmp_path):
    import os
    import subprocess
    import sys

    environment = {**os.environ, "CI": "true", "TRANSCOMPACT_CORPUS": str(tmp_path / "nowhere")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "planted"],
                          env=environment, capture_output=True, text=True, cwd=Path(__file__).parent.parent)
    assert done.returncode != 0 and "the shared corpus is not at" in done.stdout + done.stderr
