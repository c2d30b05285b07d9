"""Writes are atomic whatever ends them: an error leaves the old file, Ctrl-C, SIGTERM or SIGHUP
the old one or (come while it is written) the new one whole, never a temporary file, and the
command exits 130. What is not a regular file is written through
(more in test_write_targets.py). Reading: a byte-order mark is kept, invalid UTF-8 named where it is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from transcompact.core.errors import ExitCode, OutputError
from transcompact.core.jsondata import BOM
from transcompact.io.files import write_file

from .builders import ORPHAN, env_name

# Runs the command line with a hook in os.replace, the rename that ends writing a file: the
# signal arrives while the temporary file exists and holds the whole output.
SIGNAL_DURING_WRITE = """
import os, signal, sys
sent, real_replace = getattr(signal, sys.argv.pop(1)), os.replace
def replace(source, target):
    os.kill(os.getpid(), sent)
    real_replace(source, target)
os.replace = replace
from transcompact.cli.main import main
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
    assert done.stderr.decode() == "transcompact: interrupted\n"  # one line: click's blank line before it is gone
    assert "Traceback" not in done.stderr.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json", "out.json"]
    # A stop that comes while a file is written waits for it: the file is the new one, whole.
    repaired = subprocess.run([sys.executable, "-m", "transcompact", "repair", "-q", "big.json"], cwd=tmp_path, env=env_name(),
                              capture_output=True, timeout=60)
    assert (tmp_path / "out.json").read_bytes() == repaired.stdout


def test_only_a_file_rewritten_in_place_waits_for_the_disk(tmp_path, monkeypatch):
    """A power cut must not leave an empty file where the only copy of a transcript was; an
    output made from an input that stays is not worth a wait per file."""
    from transcompact.cli.main import cli

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    monkeypatch.chdir(tmp_path)
    Path("orphan.json").write_bytes(orjson.dumps(ORPHAN))  # repair rewrites it
    Path("out").mkdir()
    Path("out/orphan.json").write_bytes(b"the previous output\n")
    Path("other.json").write_bytes(b"the previous output\n")
    runner = CliRunner()
    for flags in (["--output-dir", "out"], ["-o", "other.json"]):
        assert runner.invoke(cli, ["repair", "-q", *flags, "orphan.json"]).exit_code == 0
    assert synced == []
    assert orjson.loads(Path("out/orphan.json").read_bytes()) == orjson.loads(Path("other.json").read_bytes())
    assert runner.invoke(cli, ["repair", "-q", "-i", "orphan.json"]).exit_code == 0
    assert len(synced) == 1


def test_the_command_line_gives_back_the_signal_handlers_it_installed():
    from transcompact.cli.main import cli

    before = signal.getsignal(signal.SIGTERM)
    CliRunner().invoke(cli, ["check", str(Path(__file__).parent.parent / "fixtures/anthropic/tool-loop.json")])
    assert signal.getsignal(signal.SIGTERM) is before


# --- what is not a regular file ------------------------------------------------------------------


def test_a_directory_is_not_replaced(tmp_path):
    (tmp_path / "out").mkdir()
    with pytest.raises(OutputError) as raised:
        write_file(tmp_path / "out", b"new")
    assert str(raised.value) == f"{tmp_path / 'out'}: cannot write: Is a directory"
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and not any((tmp_path / "out").iterdir())


def test_a_descriptor_path_writes_at_its_offset_and_truncates_nothing(tmp_path):
    """`/dev/fd/N` (as `/dev/stdout` is `/dev/fd/1`) opened again would start at offset 0."""
    log = tmp_path / "log"
    log.write_bytes(b"before\n")
    with open(log, "ab") as appending:
        write_file(f"/dev/fd/{appending.fileno()}", b"report\n")
    assert log.read_bytes() == b"before\nreport\n"


@pytest.mark.parametrize("through", [False, True], ids=["replaced", "written-through"])
def test_a_log_given_as_its_lines_is_written_joined_by_newlines(tmp_path, through):
    """A rewritten log's lines are joined a block at a time as they are written (more than one block here)."""
    from transcompact.core.jsondata import Lines

    lines = Lines([(b"x" * 300_000 + str(i).encode(), None) for i in range(8)] + [(b"", None)])
    target = tmp_path / "out.jsonl"
    if through:
        with open(target, "ab") as appending:
            write_file(f"/dev/fd/{appending.fileno()}", lines)
    else:
        write_file(target, lines)
    assert target.read_bytes() == bytes(lines) == b"\n".join(line for line, _ in lines.records)


# --- reading: a byte-order mark, invalid UTF-8 -------------------------------------------------------


def cli_run(*args: str, input: bytes | None = None):
    from transcompact.cli.main import cli

    result = CliRunner().invoke(cli, list(args), input=input, prog_name="transcompact")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.mark.parametrize("command, fixture", [
    (["compact", "-q", "--emergency", "--force"], "anthropic/long-session.json"),
    (["prune", "-q", "--hard-clear-after", "0", "--keep-last", "0"], "claude-code/broken-session.jsonl"),
    (["repair", "-q"], "claude-code/broken-session.jsonl"),
    (["repair", "-q"], "anthropic/orphans.json"),
], ids=["compact", "prune", "repair-jsonl", "repair-document"])
def test_a_file_rewritten_in_place_keeps_its_byte_order_mark(tmp_path, command, fixture):
    data = (Path(__file__).parent.parent / "fixtures" / fixture).read_bytes()
    target = tmp_path / Path(fixture).name
    target.write_bytes(BOM + data)
    result = cli_run(*command, "-i", str(target))
    assert result.exit_code == ExitCode.OK, result.stderr
    rewritten = target.read_bytes()
    assert rewritten != BOM + data  # it was rewritten, not left as it was
    assert rewritten.startswith(BOM) and not rewritten[len(BOM):].startswith(BOM)


@pytest.mark.parametrize("data, where", [
    (b'{"messages":[{"role":"user","content":"caf\xe9"}]}', "1:43: not valid UTF-8: byte 0xe9 at byte offset 42"),
    (b'{\n "messages": [\n  {"role": "user", "content": "caf\xe9"}\n ]\n}\n',
     "3:35: not valid UTF-8: byte 0xe9 at byte offset 51"),
    (b'{"role":"user","content":"a"}\n{"role":"assistant","content":"caf\xe9"}\n',
     "2:35: not valid UTF-8: byte 0xe9 at byte offset 64"),
    # The column is counted as an editor shows it, without the byte-order mark; the offset is the file's.
    (BOM + b'{"role":"user","content":"caf\xe9"}\n{"role":"assistant","content":"b"}\n',
     "1:30: not valid UTF-8: byte 0xe9 at byte offset 32"),
    (b'{"role":"user","content":"caf\xc3', "1:30: not valid UTF-8: byte 0xc3 at byte offset 29"),
], ids=["one-line-document", "document", "jsonl", "jsonl-with-bom", "cut-short"])
def test_invalid_utf8_is_exit_3_naming_its_line_column_and_byte_offset(data, where):
    result = cli_run("check", input=data)
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr.splitlines() == [f"transcompact: error: <stdin>:{where}",
                                          "hint: transcripts are read as UTF-8: convert the file first, or read it with --encoding-errors replace"]


@pytest.mark.parametrize("command", ["repair", "prune", "compact"])
def test_encoding_errors_replace_reads_invalid_utf8_as_the_replacement_character(tmp_path, command):
    """--encoding-errors replace: the latin-1 byte becomes U+FFFD, and what is written says so,
    by a rewrite that changes nothing too (compact under its threshold wrote the byte as it was)."""
    import json

    from transcompact.cli.main import cli

    path = tmp_path / "latin.json"
    path.write_bytes(b'{"messages": [{"role": "user", "content": "caf\xe9"}, {"role": "assistant", "content": "ok"}]}')
    refused = CliRunner().invoke(cli, [command, str(path)])
    assert refused.exit_code == 3
    result = CliRunner().invoke(cli, [command, "--encoding-errors", "replace", str(path)])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout_bytes)["messages"][0]["content"] == "caf\ufffd"


def test_a_file_that_holds_more_than_its_size_said_is_read_to_its_end(tmp_path):
    """A file is read by one read of its size; one that has more (a FIFO says 0, a log still
    being written grows) is read on to its end."""
    import threading

    from transcompact.io.inputs import read_input

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    lines = [b'{"role": "user", "content": "%d"}\n' % i * 2000 for i in range(3)]

    def write() -> None:
        with open(fifo, "wb") as writer:
            for line in lines:
                writer.write(line)
                writer.flush()

    writer = threading.Thread(target=write)
    writer.start()
    assert read_input(str(fifo)) == (str(fifo), b"".join(lines))
    writer.join()


def test_a_directory_that_refuses_a_new_file_is_named_not_the_file(tmp_path, monkeypatch, transcompact):
    """A file is replaced through a temporary file beside it: in a read-only directory the file
    itself may be writable, and the error must say it is the directory that refuses. (Root writes
    in any directory, so the refusal is made here.)"""
    import errno

    from transcompact.io import files

    real_open = os.open

    def refusing(path, flags, mode=0o777, **kwargs):
        if str(path).endswith(".tmp"):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real_open(path, flags, mode, **kwargs)

    session = tmp_path / "logs" / "session.json"
    session.parent.mkdir()
    session.write_bytes(orjson.dumps(ORPHAN))
    monkeypatch.setattr(files.os, "open", refusing)
    result = transcompact("repair", "-i", str(session))
    assert result.exit_code == ExitCode.OUTPUT
    assert result.stderr.splitlines()[0] == (f"transcompact: error: {session}: cannot write: the directory {session.parent} "
                                             "refuses a new file (Permission denied), and a file is replaced through one")
    assert session.read_bytes() == orjson.dumps(ORPHAN)
