"""Writes are atomic whatever ends them: an error, Ctrl-C, SIGTERM or SIGHUP leaves the old file
and no temporary file, and the command exits 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from transcompact.errors import ExitCode
from transcompact.files import write_file

from .test_cli_errors import ORPHAN, env_name

# Runs the command line with a hook in os.fsync, the last step of writing a file before its
# rename: the signal arrives while the temporary file exists and holds the whole output.
SIGNAL_DURING_WRITE = """
import os, signal, sys
sent, real_fsync = getattr(signal, sys.argv.pop(1)), os.fsync
def fsync(fd):
    os.kill(os.getpid(), sent)
    real_fsync(fd)
os.fsync = fsync
from transcompact.cli import main
sys.argv[0] = "transcompact"
main()
"""


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_file(target, b"new" * 100_000)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_during_a_write_exits_130_and_leaves_no_temporary_file(tmp_path, name):
    if not hasattr(signal, name):
        pytest.skip(f"no {name} here")
    messages = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_gone", "content": "x" * 100}]}]
    big = {**ORPHAN, "messages": [*ORPHAN["messages"], *messages * 2_000]}  # repair rewrites it
    (tmp_path / "big.json").write_bytes(orjson.dumps(big))
    (tmp_path / "out.json").write_bytes(b"the previous output\n")
    done = subprocess.run([sys.executable, "-c", SIGNAL_DURING_WRITE, name, "repair", "-q", "-o", "out.json", "big.json"],
                          cwd=tmp_path, env=env_name(), capture_output=True, timeout=60)
    assert done.returncode == ExitCode.INTERRUPTED
    assert done.stderr.decode().splitlines()[-1] == "transcompact: interrupted"
    assert "Traceback" not in done.stderr.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json", "out.json"]
    assert (tmp_path / "out.json").read_bytes() == b"the previous output\n"


def test_the_command_line_gives_back_the_signal_handlers_it_installed():
    from click.testing import CliRunner

    from transcompact.cli import cli

    before = signal.getsignal(signal.SIGTERM)
    CliRunner().invoke(cli, ["check", str(Path(__file__).parent.parent / "fixtures/anthropic/tool-loop.json")])
    assert signal.getsignal(signal.SIGTERM) is before
