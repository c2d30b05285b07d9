"""Heavy imports are lazy (docs/design.md §1): `--help` and an offline command never load them.

Runs the CLI in a fresh interpreter with `-X importtime` and reads the module names it imported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .builders import heavy_in, imported_modules, run_with_importtime

FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_parser_reads_importtime_lines():
    sample = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       120 |        120 |   rich.text\n"
        "import time:      3000 |      20000 | anthropic\n"
        "import time:        50 |         50 |     richtext\n"
    )
    assert heavy_in(imported_modules(sample)) == ["anthropic", "rich.text"]


def test_help_imports_no_heavy_module_and_no_command():
    done, modules = run_with_importtime("--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Usage: transcompact" in done.stdout and "compact    Compact transcripts" in done.stdout
    assert heavy_in(modules) == []
    assert not [m for m in modules if m.startswith("transcompact.cli.commands.")]
    assert "shutil" not in modules and "dataclasses" not in modules  # each a tenth of --help's start-up
    assert not [m for m in modules if m.startswith("transcompact.formats")]  # the --format choices: core.format_names


@pytest.mark.parametrize("columns", [None, "60", "junk", "0"])
def test_the_help_width_is_the_one_shutil_would_find(monkeypatch, columns):
    import shutil

    from transcompact.cli.main import terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.parametrize("fixture", ["anthropic/tool-loop.json"])
def test_offline_check_imports_no_heavy_module(fixture):
    path = FIXTURES / fixture
    assert path.is_file()
    done, modules = run_with_importtime("check", str(path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "transcompact.ops.validity.check" in modules  # the command really ran its checks
    assert heavy_in(modules) == []


@pytest.mark.parametrize("command", [["prune"], ["compact", "--emergency", "--force"], ["repair"]])
def test_a_plain_rewrite_imports_what_no_flag_of_it_asked_for(command):
    done, modules = run_with_importtime(*command, str(FIXTURES / "anthropic/long-session.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    flags_only = {"transcompact.ops.pruning.archive", "transcompact.run.batch_api", "transcompact.ops.convert", "transcompact.ops.diff",
                  "transcompact.ops.compaction.events", "transcompact.run.cluster"}
    assert sorted(modules & flags_only) == []


def test_a_file_written_that_is_no_codex_rollout_opens_no_database(tmp_path):
    """Every file a rewrite writes passes by Codex's thread-history check (formats/codex/thread_store.py),
    imported only for a file named as a rollout (6 ms of the 130 a small file's compaction takes), and
    sqlite3 (9 ms more) only where a rollout's database is opened."""
    done, modules = run_with_importtime("compact", "--emergency", "--force", "-o", str(tmp_path / "out.json"),
                                        str(FIXTURES / "anthropic/long-session.json"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out.json").is_file()
    assert "transcompact.formats.codex.thread_store" not in modules and "sqlite3" not in modules
    rollout = tmp_path / "rollout-2026-01-01T00-00-00-0199c3a1-7b2e-7c40-9d11-2f6a8e4b5c01.jsonl"
    done, modules = run_with_importtime("prune", "-o", str(rollout), str(next((FIXTURES / "codex").iterdir())))
    assert done.returncode == 0, done.stderr[-2000:]
    assert rollout.is_file() and "transcompact.formats.codex.thread_store" in modules  # a rollout's name: checked


def test_the_light_format_names_are_the_registry_s():
    """--format takes core.format_names (test_cli_errors checks its choices), which the registry
    checks as it is imported."""
    from transcompact.core.format_names import FORMAT_NAMES
    from transcompact.formats import BY_NAME, NAMES

    assert NAMES == FORMAT_NAMES == tuple(BY_NAME)


def test_a_format_is_imported_when_it_is_first_asked_for():
    """A request body read quickly imports its own format only; detection imports the formats it
    tries, in order, until one takes the input."""
    script = ("import sys, json; from transcompact.formats import loads; "
              "loads(json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}]}).encode(), lazily=True); "
              "print(sorted(m.split('.')[2] for m in sys.modules if m.startswith('transcompact.formats.') "
              "and m.split('.')[2] not in ('_document', 'adapter')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"  # its format is named, not yet asked for


def test_a_log_read_lazily_imports_its_own_format_and_no_decoder_of_request_bodies():
    """The typed decoder (msgspec) reads request bodies; a Claude Code log, read lazily, needs none
    of it, nor any other format's reader: of another format only what its trim or its line view
    needs (what parsing runs: formats.TRIMMED; Codex's, Gemini CLI's and pi's `parsing`), and the modules the
    formats share (`adapter`, `_document`, `_log`)."""
    done, modules = run_with_importtime("estimate", str(FIXTURES / "claude-code" / "broken-session.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "transcompact.formats.claude_code.reader" in modules
    assert not any(m.split(".")[0] == "msgspec" for m in modules)
    formats = {m for m in modules if m.startswith("transcompact.formats.")}
    assert sorted({m.split(".")[2] for m in formats}) == ["_document", "_log", "adapter", "claude_code", "codex", "gemini", "pi"]
    for other in ("codex", "gemini", "pi"):
        assert {m for m in formats if m.startswith(f"transcompact.formats.{other}.")} == {f"transcompact.formats.{other}.parsing"}


def test_an_adapter_s_class_imports_none_of_its_lazy_hooks():
    """Making an adapter's class looks its hooks up on the class (ABCMeta, for each inherited
    abstract method): a lazy hook imports its module only when an instance asks for it. Else a
    Claude Code log's estimate imported Codex's reader and writer, as the hash order of the
    abstract methods happened to fall."""
    from transcompact.formats.adapter import Format, lazy

    class Unwritten(Format):
        name, description, lines = "unwritten", "a format whose modules do not exist", True
        detect, read, write = lazy("no_such_reader"), lazy("no_such_reader"), lazy("no_such_writer")

    assert Unwritten.write is Unwritten.__dict__["write"]  # the hook itself, not its function
    with pytest.raises(ModuleNotFoundError):
        Unwritten().write  # noqa: B018 (asked for by an instance: imported)


def test_the_registry_imports_no_format_rules_or_rewrites():
    """A format's rules and rewrites are imported when an operation first calls one of its hooks."""
    done = subprocess.run([sys.executable, "-c", "import sys, transcompact.formats; "
                           "print(sorted(m for m in sys.modules if m.endswith(('.rules', '.rewrites'))))"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_the_library_exports_resolve_to_functions_not_submodules():
    import transcompact
    import transcompact.ops.validity.check  # noqa: F401  (the submodule, imported first on purpose)

    assert callable(transcompact.check) and transcompact.check.__module__ == "transcompact.ops.validity.check"
    assert callable(transcompact.estimate) and callable(transcompact.repair) and callable(transcompact.load)
    assert set(transcompact.__all__) <= set(dir(transcompact))
