"""What is not a regular file is written through, never replaced: a device, a FIFO, a symbolic
link (to a file or to a device) and an open descriptor (`/dev/stdout`) stay what they were.

Every node here is made in a temporary directory: a regression must not be able to replace the
real /dev/null or /dev/stdout (as root it could).
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path

import orjson
import pytest

from transcompact.core.errors import ExitCode

from .builders import run_cli as run

pytestmark = pytest.mark.skipif(os.name != "posix", reason="devices, FIFOs and /dev/fd are POSIX's")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NULL_DEVICE, FULL_DEVICE = (1, 3), (1, 7)  # Linux's /dev/null and /dev/full

# Each command that writes a transcript, its arguments before `-o TARGET` and after it.
COMMANDS = {
    "repair": (["repair", "-q"], ["orphans.json"]),
    "prune": (["prune", "-q", "--hard-clear-after", "0", "--keep-last", "0"], ["long-session.json"]),
    "compact": (["compact", "-q", "--emergency", "--force"], ["long-session.json"]),
    "expand": (["expand", "-q", "--archive", "originals.jsonl"], ["pruned.json"]),
}


@pytest.fixture(autouse=True)
def _inputs(monkeypatch, tmp_path):
    """Run in tmp_path, with the inputs every command reads (expand's: a pruned file and its archive)."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(FIXTURES / "anthropic/orphans.json", "orphans.json")
    shutil.copy(FIXTURES / "anthropic/long-session.json", "long-session.json")
    assert run("prune", "-q", "--archive", "originals.jsonl", "-o", "pruned.json", "long-session.json").exit_code == 0




def write_to(command: str, target: str):
    before, after = COMMANDS[command]
    return run(*before, "-o", target, *after)


def expected_output(command: str) -> bytes:
    before, after = COMMANDS[command]
    result = run(*before, *after)
    assert result.exit_code == 0, result.stderr
    return result.stdout_bytes


def device(name: str, numbers: tuple[int, int]) -> Path:
    try:
        os.mknod(name, stat.S_IFCHR | 0o666, os.makedev(*numbers))
    except (PermissionError, AttributeError):  # not root, or no mknod on this platform
        pytest.skip("making a device node is not permitted here")
    return Path(name)


def is_device(path: Path, numbers: tuple[int, int]) -> bool:
    found = path.lstat()
    return stat.S_ISCHR(found.st_mode) and found.st_rdev == os.makedev(*numbers)


def leftovers() -> list[str]:
    return sorted(p.name for p in Path(".").iterdir() if p.name.endswith(".tmp"))


# --- -o: the node stays what it was -----------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_a_character_device_is_written_through(command):
    null = device("null", NULL_DEVICE)
    result = write_to(command, "null")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert is_device(null, NULL_DEVICE)
    assert leftovers() == []


@pytest.mark.parametrize("command", COMMANDS)
def test_a_fifo_is_written_through_to_its_reader(command):
    os.mkfifo("fifo")
    received = []
    reader = threading.Thread(target=lambda: received.append(Path("fifo").read_bytes()), daemon=True)
    reader.start()
    result = write_to(command, "fifo")
    reader.join(timeout=10)
    assert result.exit_code == 0, result.stderr
    assert received == [expected_output(command)]
    assert stat.S_ISFIFO(Path("fifo").lstat().st_mode)
    assert leftovers() == []


@pytest.mark.parametrize("command", COMMANDS)
def test_a_link_to_a_regular_file_stays_a_link_and_its_file_gets_the_output(command):
    Path("real").mkdir()
    Path("real/out.json").write_bytes(b"the previous output\n")
    os.chmod("real/out.json", 0o640)
    os.symlink("real/out.json", "link.json")
    result = write_to(command, "link.json")
    assert result.exit_code == 0, result.stderr
    assert os.readlink("link.json") == "real/out.json"
    assert Path("real/out.json").read_bytes() == expected_output(command)
    assert stat.S_IMODE(Path("real/out.json").stat().st_mode) == 0o640
    assert os.listdir("real") == ["out.json"]  # replaced atomically where it is, no temporary file left
    assert leftovers() == []


def test_in_place_on_a_link_rewrites_the_file_it_points_at():
    repaired = expected_output("repair")
    Path("real").mkdir()
    shutil.move("orphans.json", "real/orphans.json")
    os.symlink("real/orphans.json", "orphans.json")
    assert run("repair", "-q", "-i", "orphans.json").exit_code == 0
    assert os.readlink("orphans.json") == "real/orphans.json"
    assert Path("real/orphans.json").read_bytes() == repaired


def test_a_link_to_nothing_yet_creates_what_it_points_at():
    Path("real").mkdir()
    os.symlink("real/out.json", "link.json")
    assert write_to("repair", "link.json").exit_code == 0
    assert os.readlink("link.json") == "real/out.json"
    assert Path("real/out.json").read_bytes() == expected_output("repair")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_link_to_dev_null_stays_a_link(command):
    if not stat.S_ISCHR(Path(os.devnull).stat().st_mode):  # replaced before this run (by an older transcompact?)
        pytest.skip(f"{os.devnull} is not a device here")
    os.symlink(os.devnull, "null.json")
    result = write_to(command, "null.json")
    assert result.exit_code == 0, result.stderr
    assert os.readlink("null.json") == os.devnull
    assert stat.S_ISCHR(Path(os.devnull).stat().st_mode)


def test_a_link_to_a_device_made_here_stays_a_link_to_it():
    null = device("null", NULL_DEVICE)
    os.symlink("null", "out.json")
    assert write_to("repair", "out.json").exit_code == 0
    assert os.readlink("out.json") == "null"
    assert is_device(null, NULL_DEVICE)


# --- a full device -----------------------------------------------------------------------------


def full_device() -> str:
    """A /dev/full made here where that is permitted (as root, where a regression could replace the
    real one), else the real one (which no other user can replace)."""
    try:
        os.mknod("full", stat.S_IFCHR | 0o666, os.makedev(*FULL_DEVICE))
        return "full"
    except (PermissionError, AttributeError):
        if not Path("/dev/full").exists():
            pytest.skip("no /dev/full here")
        return "/dev/full"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_full_device_exits_5_naming_it(command):
    full = full_device()
    result = write_to(command, full)
    assert result.exit_code == ExitCode.OUTPUT
    assert result.stderr.splitlines() == [f"transcompact: error: {full}: cannot write: No space left on device"]
    assert result.stdout == ""
    assert is_device(Path(full), FULL_DEVICE)
    assert leftovers() == []


def test_stdout_on_a_full_device_says_only_the_error():
    """The transcript to stdout on a full disk: the line that says it was slimmed came first, then
    the error (found using slim as a user). The line comes once the output is written."""
    import subprocess
    import sys

    full = full_device()
    shutil.copy(FIXTURES / "claude-code/broken-session.jsonl", "s.jsonl")
    with open(full, "wb") as stdout:
        done = subprocess.run([sys.executable, "-m", "transcompact", "prune", "--hard-clear-after", "0", "--keep-last", "0",
                               "s.jsonl"], stdout=stdout, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == ExitCode.OUTPUT
    assert done.stderr.decode().splitlines() == ["transcompact: error: <stdout>: cannot write: No space left on device"]


# --- --report to /dev/stdout, or what stands for it ---------------------------------------------


@pytest.mark.parametrize("command", [["compact", "-q", "--emergency", "--force"], ["prune", "-q"]])
def test_a_report_to_a_link_to_an_open_descriptor_appends_where_it_points(command):
    """`--report /dev/stdout >> log`: /dev/stdout is a link to /proc/self/fd/1. Here a link to
    /dev/fd/N, N a file opened for appending: it gets the report after what it held, and stays."""
    Path("log").write_bytes(b"before\n")
    fd = os.open("log", os.O_WRONLY | os.O_APPEND)
    try:
        os.symlink(f"/dev/fd/{fd}", "stdout")
        result = run(*command, "--report", "stdout", "-o", "out.json", "long-session.json")
    finally:
        os.close(fd)
    assert result.exit_code == 0, result.stderr
    assert os.readlink("stdout") == f"/dev/fd/{fd}"
    written = Path("log").read_bytes()
    assert written.startswith(b"before\n")
    assert orjson.loads(written.removeprefix(b"before\n"))["command"] == command[0]


def test_a_report_to_a_device_is_written_through():
    null = device("null", NULL_DEVICE)
    result = run("compact", "-q", "--emergency", "--force", "--report", "null", "-o", "out.json", "long-session.json")
    assert result.exit_code == 0, result.stderr
    assert is_device(null, NULL_DEVICE)


# --- prune --archive ---------------------------------------------------------------------------

PRUNE_ALL = ["prune", "-q", "--hard-clear-after", "0", "--keep-last", "0"]


def test_an_archive_that_is_a_fifo_gets_the_records_and_stays_a_fifo():
    os.mkfifo("archive")
    received = []
    reader = threading.Thread(target=lambda: received.append(Path("archive").read_bytes()), daemon=True)
    reader.start()
    result = run(*PRUNE_ALL, "--archive", "archive", "-o", "out.json", "long-session.json")
    reader.join(timeout=10)
    assert result.exit_code == 0, result.stderr
    records = [orjson.loads(line) for line in received[0].splitlines()]
    assert records and {r["file"] for r in records} == {"long-session.json"}
    assert stat.S_ISFIFO(Path("archive").lstat().st_mode)


@pytest.mark.parametrize("flag, what", [("--report", "the report"), ("--events", "the events")])
def test_a_report_on_a_full_device_leaves_no_file_rewritten_unsaid(flag, what):
    """Each file is rewritten in place before its report line fails: found using the tool as a
    user, the error alone was said (then, by a review, files after it were rewritten unsaid)."""
    full = full_device()
    before = Path("long-session.json").read_bytes()
    Path("logs").mkdir()
    for n in range(3):
        shutil.copy("long-session.json", f"logs/s{n}.json")
    result = run("compact", "--emergency", "--force", "-i", flag, full, "logs")
    assert result.exit_code == ExitCode.OUTPUT
    lines = result.stderr.splitlines()
    assert [line.split(":")[0] for line in lines if ": compacted " in line] == [f"logs/s{n}.json" for n in range(3)]
    assert lines[-1] == f"transcompact: error: {full}: cannot write {what}: No space left on device"
    assert all(Path(f"logs/s{n}.json").read_bytes() != before for n in range(3))


def test_an_archive_on_a_full_device_exits_5_and_writes_no_output():
    full = full_device()
    result = run(*PRUNE_ALL, "--archive", full, "-o", "out.json", "long-session.json")
    assert result.exit_code == ExitCode.OUTPUT
    assert result.stderr.splitlines() == [f"transcompact: error: {full}: cannot write: No space left on device"]
    assert not Path("out.json").exists()  # the archive first: a rewritten file never lacks its originals
    assert is_device(Path(full), FULL_DEVICE)


# --- a file rewritten in place that something wrote to meanwhile -------------------------------

APPENDED = b'{"type":"summary","summary":"the agent went on","leafUuid":"line-30"}\n'


@pytest.mark.parametrize("command", [["slim", "-i"], ["prune", "-i", "--hard-clear-after", "0", "--keep-last", "0"],
                                     ["compact", "-i", "--emergency", "--force", "--keep-recent-tokens", "500"]])
def test_a_log_appended_to_while_it_is_rewritten_is_left_with_what_was_appended(monkeypatch, command):
    """An agent appends to its log between the read and the rename: the rewrite would lose that
    line (found using slim -i on a live session as a user). It is refused (exit 5), the file keeps
    the line, and nothing is archived."""
    from transcompact.run import tasks

    from .builders import claude_log

    Path("s.jsonl").write_bytes(claude_log(rounds=12))
    original = Path("s.jsonl").read_bytes()
    read = tasks.read_compressed

    def read_then_the_agent_appends(path):
        found = read(path)
        with open(path, "ab") as log:
            log.write(APPENDED)
        return found

    monkeypatch.setattr(tasks, "read_compressed", read_then_the_agent_appends)
    here = sorted(p.name for p in Path().iterdir())
    result = run(*command, "s.jsonl")
    assert result.exit_code == ExitCode.OUTPUT, result.stderr
    assert "s.jsonl: was written to since it was read" in result.stderr
    assert Path("s.jsonl").read_bytes() == original + APPENDED
    assert sorted(p.name for p in Path().iterdir()) == here  # no temporary file, no archive


def test_a_write_that_cannot_be_made_archives_nothing(monkeypatch):
    """slim -i in a directory that refuses a new file: exit 5, and no record of a slim that never
    happened in the --archive (found using slim as a user)."""
    from transcompact.core.errors import Location, OutputError
    from transcompact.io import files

    from .builders import claude_log

    Path("s.jsonl").write_bytes(claude_log(rounds=12))
    beside = files._temporary_beside

    def refused(target, mode):  # the log's directory refuses a new file, the archive's does not
        if os.path.basename(target) == "s.jsonl":
            raise OutputError("cannot write: the directory . refuses a new file", location=Location(target))
        return beside(target, mode)

    monkeypatch.setattr(files, "_temporary_beside", refused)
    result = run("slim", "-i", "--archive", "a.jsonl", "s.jsonl")
    assert result.exit_code == ExitCode.OUTPUT, result.stderr
    assert not Path("a.jsonl").exists() or Path("a.jsonl").read_bytes() == b""


@pytest.mark.parametrize("command, source", [
    (["repair"], "claude-code/broken-session.jsonl"),
    (["prune", "--hard-clear-after", "0", "--keep-last", "0"], "codex/rollout-2025-10-08T10-15-30-0199c3a1-7b2e-7c40-9d11-2f6a8e4b5c01.jsonl"),
])
def test_the_lines_a_rewrite_makes_in_a_crlf_log_end_as_its_own_do(command, source):
    """A log whose lines end in CRLF: the lines a rewrite made ended in LF alone, a file of mixed
    line endings (found using repair as a user)."""
    data = (FIXTURES / source).read_bytes().replace(b"\n", b"\r\n")
    Path("crlf.jsonl").write_bytes(data)
    result = run(*command, "-q", "crlf.jsonl")
    assert result.exit_code in (ExitCode.OK, ExitCode.VIOLATIONS), result.stderr
    out = result.stdout_bytes
    assert out != data and out.endswith(b"\r\n") and out.count(b"\n") == out.count(b"\r\n")
    as_lf = run(*command, "-q", "-", input=data.replace(b"\r\n", b"\n")).stdout_bytes
    assert out.replace(b"\r\n", b"\n") == as_lf  # the same rewrite, each line ended as the input's


@pytest.mark.parametrize("command, source", [
    (["compact", "--emergency", "--force", "--keep-recent-tokens", "10"], "codex/rollout-2025-10-08T10-15-30-0199c3a1-7b2e-7c40-9d11-2f6a8e4b5c01.jsonl"),
    (["prune", "--hard-clear-after", "0", "--keep-last", "0"], None),  # OpenAI messages, one a line, the last a result
    (["slim"], "gemini/session-2026-01-15T20-51-f7633853.jsonl"),  # (its last line taken out: found by a review)
])
def test_a_crlf_log_without_a_last_line_break_keeps_its_endings(command, source):
    """Found using the tool as a user: the input's last line got a bare LF when lines followed it,
    and a last line made anew ended in a lone CR."""
    messages = [{"role": "user", "content": "go"}]
    for n in range(4):
        messages += [{"role": "assistant", "content": None,
                      "tool_calls": [{"id": f"c{n}", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{n}", "content": "x" * 3000}]
    made = b"\n".join(orjson.dumps(message) for message in messages)
    data = ((FIXTURES / source).read_bytes() if source else made).rstrip(b"\n").replace(b"\n", b"\r\n")
    Path("crlf.jsonl").write_bytes(data)
    result = run(*command, "-q", "crlf.jsonl")
    assert result.exit_code == ExitCode.OK, result.stderr
    out = result.stdout_bytes
    assert out != data and out.count(b"\n") == out.count(b"\r\n") and not out.endswith(b"\r")


@pytest.mark.parametrize("stderr", ["2>/dev/full", "2>&-"])
def test_a_stderr_that_cannot_be_written_leaves_the_run_to_its_work_and_its_status(stderr):
    """stderr carries messages only: found using the tool as a user, a full one stopped a batch
    after its first file at exit 1, a closed one at exit 70, the other files left undone."""
    import subprocess
    import sys

    from .builders import env_name

    if stderr == "2>/dev/full":
        full_device()
    Path("logs").mkdir()
    for n in range(3):
        shutil.copy("long-session.json", f"logs/s{n}.json")
    done = subprocess.run(f"{sys.executable} -m transcompact prune -i --report r.jsonl logs {stderr}", shell=True,
                          env=env_name(), timeout=60)
    assert done.returncode == ExitCode.OK
    assert len(Path("r.jsonl").read_bytes().splitlines()) == 3
    assert all(Path(f"logs/s{n}.json").read_bytes() != Path("long-session.json").read_bytes() for n in range(3))


@pytest.mark.parametrize("args", [["estimate", "long-session.json"], ["prune", "long-session.json"], ["--help"]])
def test_a_run_started_without_stdout_cannot_write_it(args):
    """`>&-`: found by a review, an internal error (exit 70) where a full one is exit 5."""
    import subprocess
    import sys

    from .builders import env_name

    done = subprocess.run(f"{sys.executable} -m transcompact {' '.join(args)} >&-", shell=True, env=env_name(),
                          capture_output=False, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == ExitCode.OUTPUT
    assert done.stderr.decode().splitlines() == ["transcompact: error: <stdout>: cannot write: Bad file descriptor"]
