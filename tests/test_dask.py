"""Past one machine (docs/input-output.md#past-one-machine): `--scheduler` runs the same per-file
function on a Dask cluster, the workers reading and writing fsspec URLs themselves, with the
pool's outcomes, lines, summary, report and exit status; and without the `dask` extra, a plain
run still works and `--scheduler` or a URL says what to install."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dask
import fsspec
import pytest
from distributed import LocalCluster

from transcompact.core.errors import ExitCode

from .builders import run_cli as run
from .conftest import FIXTURES

COMPACT = ["compact", "--emergency", "--force", "--keep-recent-tokens", "1000"]
TREE = {"a/every-block.json": "anthropic/every-block.json", "a/long-session.json": "anthropic/long-session.json",
        "b/chat.jsonl": "jsonl/chat.jsonl", "b/session.jsonl": "claude-code/broken-session.jsonl",
        "tool-loop.json": "anthropic/tool-loop.json"}
BAD = b'{"messages": ['
COMPACTED = 2  # every-block.json and long-session.json; the others have nothing to gain




@pytest.fixture(scope="module")
def processes():
    """Two worker processes: each file is read and written in one of them, not here."""
    with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


@pytest.fixture(scope="module")
def threads():
    """Workers in this process, so that they see the `memory://` filesystem the test fills."""
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=2, dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def tree(tmp_path) -> Path:
    logs = tmp_path / "logs"
    for name, fixture in TREE.items():
        (logs / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / fixture, logs / name)
    (logs / "bad.json").write_bytes(BAD)
    (logs / ".hidden").mkdir()
    (logs / ".hidden/long-session.json").write_bytes(b"{")  # would fail if it were read
    return logs


@pytest.fixture
def memory_tree():
    """The tree on `memory://`, under a name of its own (the filesystem lives as long as the process)."""
    top = f"memory://logs-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    for name, fixture in TREE.items():
        fs.pipe_file(f"{top}/{name}", (FIXTURES / fixture).read_bytes())
    fs.pipe_file(f"{top}/bad.json", BAD)
    fs.pipe_file(f"{top}/.hidden/long-session.json", b"{")
    yield top
    fs.rm(top, recursive=True)


def files(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def without_time(stderr: str) -> str:
    return re.sub(r"; \d+\.\d s$", "", stderr.rstrip("\n"))


def test_a_cluster_of_processes_compacts_file_urls_as_the_pool_compacts_paths(processes, tree, tmp_path, monkeypatch):
    pooled = tmp_path / "pooled"
    shutil.copytree(tree, pooled)
    by_pool = run(*COMPACT, "-i", "--jobs", "2", "--report", str(tmp_path / "pool.jsonl"), str(pooled))
    # Here, nothing is read or written but the report: the workers read and write every file.
    for name in ("read", "write"):
        monkeypatch.setattr(f"transcompact.io.urls.{name}", lambda *_: pytest.fail("the client touched a file"))
    by_cluster = run(*COMPACT, "-i", "--scheduler", processes, "--report", str(tmp_path / "cluster.jsonl"), f"file://{tree}")
    assert by_cluster.exit_code == by_pool.exit_code == ExitCode.INPUT  # the worst: bad.json
    assert by_cluster.stdout == ""
    assert without_time(by_cluster.stderr).replace(f"file://{tree}", str(pooled)) == without_time(by_pool.stderr)
    assert "6 files: 2 compacted, 3 unchanged, 1 failed" in by_cluster.stderr  # .hidden is not read
    assert files(tree) == files(pooled)
    assert (tmp_path / "cluster.jsonl").read_text().replace(f"file://{tree}", str(pooled)) == (tmp_path / "pool.jsonl").read_text()


def test_fail_fast_on_a_cluster_reports_every_file_it_wrote(processes, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "0-bad.json").write_bytes(b"{")
    original = (FIXTURES / "anthropic/long-session.json").read_bytes()
    for i in range(20):
        (logs / f"s{i:02}.json").write_bytes(original)
    result = run(*COMPACT, "-i", "--fail-fast", "--scheduler", processes, f"file://{logs}")
    assert result.exit_code == ExitCode.INPUT
    written = sum(p.read_bytes() != original for p in logs.glob("s*.json"))
    assert written < 20  # the tasks not handed out were not
    assert f"{written + 1} files: {written} compacted, 0 unchanged, 1 failed" in result.stderr  # those handed out finished, and count


def test_an_interrupt_starts_no_other_file_and_leaves_every_file_old_or_new(processes, tmp_path):
    original = (FIXTURES / "anthropic/long-session.json").read_bytes()
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(200):
        (logs / f"s{i:03}.json").write_bytes(original)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCOMPACT_")}
    command = subprocess.Popen([sys.executable, "-m", "transcompact", *COMPACT, "-i", "--scheduler", processes, f"file://{logs}"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 60
    while command.stderr.readline().find(b"compacted (emergency)") < 0:  # files are being written now
        assert time.monotonic() < deadline and command.poll() is None
    command.send_signal(signal.SIGTERM)
    stdout, stderr = command.communicate(timeout=30)
    assert command.returncode == ExitCode.INTERRUPTED, stderr[-2000:]
    assert stderr.endswith(b"transcompact: interrupted\n") and stdout == b""

    def compacted() -> int:
        return sum(p.read_bytes() != original for p in logs.iterdir())

    time.sleep(0.5)  # a file a worker had started is finished by now
    done = compacted()
    time.sleep(0.5)  # and no other file starts
    assert compacted() == done < 200
    assert sorted(p.name for p in logs.iterdir()) == [f"s{i:03}.json" for i in range(200)]  # no temporary file left
    assert len({p.read_bytes() for p in logs.iterdir()} - {original}) == 1  # every file is the old one or the one new version


def test_one_input_comes_back_to_stdout_and_the_variable_names_the_scheduler(processes, tree):
    result = run(*COMPACT, "-q", f"file://{tree}/a/long-session.json", env={"TRANSCOMPACT_SCHEDULER": processes})
    assert result.exit_code == 0
    assert result.stdout_bytes == run(*COMPACT, "-q", str(tree / "a/long-session.json")).stdout_bytes
    assert files(tree)["a/long-session.json"] == (FIXTURES / "anthropic/long-session.json").read_bytes()


def test_memory_urls_glob_output_dir_and_progress_on_a_cluster_of_threads(threads, memory_tree, monkeypatch):
    monkeypatch.setattr("transcompact.run.batch._Progress.PLAIN_EVERY", 0)
    out = f"memory://out-{uuid.uuid4().hex}"
    result = run(*COMPACT, "--scheduler", threads, "--glob", "a/*.json", "--glob", "*.jsonl", "--output-dir", out,
                 "--report", "-", memory_tree)
    assert result.exit_code == 0, result.stderr
    fs = fsspec.filesystem("memory")
    assert sorted(p.removeprefix(fs._strip_protocol(out) + "/") for p in fs.find(out)) == [
        "a/every-block.json", "a/long-session.json", "b/chat.jsonl", "b/session.jsonl"]  # mirrored, and no temporary file
    assert fs.cat_file(f"{out}/b/chat.jsonl") == (FIXTURES / "jsonl/chat.jsonl").read_bytes()
    assert [json.loads(line)["output"] for line in result.stdout.splitlines()] == [
        f"{out}/a/every-block.json", f"{out}/a/long-session.json", f"{out}/b/chat.jsonl", f"{out}/b/session.jsonl"]
    progress = [line for line in result.stderr.splitlines() if line.startswith("compact: ")]
    assert progress[-1].startswith("compact: 4 of 4 files done")
    assert run(*COMPACT, "--scheduler", threads, "--output-dir", out, memory_tree).exit_code == ExitCode.INPUT  # bad.json


def test_memory_urls_in_place_without_a_cluster(memory_tree):
    fs = fsspec.filesystem("memory")
    before = fs.cat_file(f"{memory_tree}/a/long-session.json")
    result = run(*COMPACT, "-i", "--jobs", "1", memory_tree)
    assert result.exit_code == ExitCode.INPUT
    assert f"transcompact: error: {memory_tree}/bad.json:1:" in result.stderr
    assert fs.cat_file(f"{memory_tree}/a/long-session.json") != before
    assert run("check", f"{memory_tree}/a/long-session.json").exit_code == 0
    assert not [p for p in fs.find(memory_tree) if p.endswith(".tmp")]
    fixture = str(FIXTURES / "anthropic/long-session.json")
    assert run(*COMPACT, "-o", f"{memory_tree}/one.json", fixture).exit_code == 0
    assert fs.cat_file(f"{memory_tree}/one.json") == run(*COMPACT, fixture).stdout_bytes


def test_a_file_url_is_written_as_its_path_is(tmp_path):
    """Atomically, and never over what is not a regular file: fsspec's move would replace a link with a file."""
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    shutil.copy(FIXTURES / "anthropic/long-session.json", real)
    real.chmod(0o640)
    link.symlink_to(real)
    assert run(*COMPACT, "-i", f"file://{link}").exit_code == 0
    assert link.is_symlink() and real.read_bytes() != (FIXTURES / "anthropic/long-session.json").read_bytes()
    assert real.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_write_that_fails_on_a_url_leaves_the_old_file_and_no_temporary_one(memory_tree, monkeypatch):
    fs = fsspec.filesystem("memory")
    target = f"{memory_tree}/a/long-session.json"
    before = fs.cat_file(target)
    monkeypatch.setattr(type(fs), "mv", lambda *_, **__: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    result = run(*COMPACT, "-i", target)
    assert result.exit_code == ExitCode.OUTPUT
    assert result.stderr.splitlines()[-1] == f"transcompact: error: {target}: cannot write: No space left on device"
    assert fs.cat_file(target) == before
    assert not [p for p in fs.find(memory_tree) if p.endswith(".tmp")]


def test_a_scheduler_that_cannot_be_reached_is_a_usage_error(tree):
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):  # Dask's own timeout, when shorter, is the one
        result = run(*COMPACT, "-i", "--scheduler", "tcp://127.0.0.1:9", str(tree))
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.startswith("transcompact: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 (tried for 1 s): ")
    assert files(tree)["a/long-session.json"] == (FIXTURES / "anthropic/long-session.json").read_bytes()


def test_without_the_extra_a_plain_batch_works_and_a_scheduler_or_a_url_says_what_to_install(tree, monkeypatch):
    for module in ("dask", "distributed", "fsspec"):
        monkeypatch.setitem(sys.modules, module, None)  # `import` of it fails, as when it is not installed
    result = run(*COMPACT, "-q", "--jobs", "1", "-i", str(tree / "a"))
    assert result.exit_code == 0 and files(tree)["a/long-session.json"] != (FIXTURES / "anthropic/long-session.json").read_bytes()
    result = run(*COMPACT, "-i", "--scheduler", "tcp://127.0.0.1:8786", str(tree))
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.splitlines() == ["transcompact: error: --scheduler needs Dask, which is not installed",
                                          "hint: pip install 'transcompact[dask]'"]
    result = run(*COMPACT, "-i", "s3://bucket/logs")
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.splitlines() == ["transcompact: error: s3://bucket/logs: a URL needs fsspec, which is not installed",
                                          "hint: pip install 'transcompact[dask]'"]


# --- what cannot be reached: one line, the right status, no password, no wait ----------


@pytest.mark.parametrize("url, reason", [
    ("ftp://127.0.0.1:9/x.json", "Connection refused"),  # nothing listens there
    ("ftp://bob:s3cretpw@127.0.0.1:9/x.json", "Connection refused"),
    ("zip://a.json::{tmp}/missing.zip", "No such file or directory: {tmp}/missing.zip"),
])
def test_a_url_whose_filesystem_cannot_be_made_is_an_input_or_output_error_of_that_url(tmp_path, url, reason):
    url, reason = url.format(tmp=tmp_path), reason.format(tmp=tmp_path)
    shown = url.replace("bob:s3cretpw@", "")
    alone = run("check", url)
    assert alone.exit_code == ExitCode.INPUT
    assert alone.stderr.splitlines() == [f"transcompact: error: {shown}: cannot read: {reason}"]
    good = str(FIXTURES / "anthropic/tool-loop.json")
    among_others = run("check", good, url)  # the others are read, this one fails
    assert among_others.exit_code == ExitCode.INPUT
    assert f"transcompact: error: {shown}: cannot read: {reason}" in among_others.stderr.splitlines()
    written = run(*COMPACT, "-o", url, str(FIXTURES / "anthropic/long-session.json"))
    assert written.exit_code == ExitCode.OUTPUT
    assert written.stderr.splitlines() == [f"transcompact: error: {shown}: cannot write: {reason}"]
    for result in (alone, among_others, written):
        assert "s3cretpw" not in result.stdout + result.stderr


def test_an_address_where_nothing_listens_fails_in_seconds_not_in_dasks_30(tree, monkeypatch):
    monkeypatch.setattr("transcompact.run.cluster.REACH_WITHIN", 1.0, raising=False)  # 5 s by default; Dask's own connect timeout stays 30 s
    started = time.monotonic()
    result = run(*COMPACT, "-i", "--scheduler", "tcp://127.0.0.1:9", str(tree))
    assert time.monotonic() - started < 6
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.splitlines() == ["transcompact: error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 (tried for 1 s): "
                                          "Connection refused",
                                          "hint: start one with `dask scheduler` (it listens on tcp://HOST:8786)"]
    assert files(tree)["a/long-session.json"] == (FIXTURES / "anthropic/long-session.json").read_bytes()


def exits(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """The command in a fresh interpreter (what a failed client leaves behind shows at its exit), and how long it took."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCOMPACT_")} | (env or {})
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "transcompact", *args], capture_output=True, text=True, env=environment,
                          timeout=30)
    return done, time.monotonic() - started


@pytest.mark.parametrize("address, line", [
    ("tcp://user:s3cretpw@127.0.0.1:9", "a Dask scheduler's address has no user name or password: --scheduler tcp://127.0.0.1:9"),
    ("user:s3cretpw@127.0.0.1:9", "a Dask scheduler's address has no user name or password: --scheduler 127.0.0.1:9"),
    ("tcp://us%40er:s3cret/pw@127.0.0.1:9", "a Dask scheduler's address has no user name or password: --scheduler tcp://127.0.0.1:9"),
    ("tcp://127.0.0.1", "--scheduler tcp://127.0.0.1: missing port number in address '127.0.0.1'"),
    ("foo://host:8786", "--scheduler foo://host:8786: unknown address scheme 'foo'"),
])
def test_an_address_that_is_not_one_is_one_line_at_once_and_shows_no_password(tree, address, line):
    """Dask's message quoted the address without its scheme (so with its password, unscrubbed),
    and the client it had half made hung the exit for 60 s, then printed a traceback."""
    done, took = exits(*COMPACT, "-i", "--scheduler", address, str(tree))
    assert took < 15
    assert done.returncode == ExitCode.USAGE
    error, hint = done.stderr.splitlines()
    assert error.startswith(f"transcompact: error: {line}") and hint.startswith("hint: ")
    assert "s3cret" not in done.stdout + done.stderr and done.stdout == ""
    assert files(tree)["a/long-session.json"] == (FIXTURES / "anthropic/long-session.json").read_bytes()


def test_what_listens_but_is_no_scheduler_is_not_waited_for_for_ever(tree):
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()  # and never says a word
    address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    try:
        done, took = exits(*COMPACT, "-i", "--scheduler", address, str(tree),
                           env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"})
    finally:
        listener.close()
    assert took < 15 and done.returncode == ExitCode.USAGE
    assert done.stderr.splitlines()[0] == (f"transcompact: error: cannot reach the Dask scheduler at {address}: what listens "
                                           "there did not answer as a Dask scheduler within 2 s")
