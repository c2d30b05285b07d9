"""The console examples of README.md and docs/*.md, run for real (the `console` parts of docs/generate.py).

A console example is a generated part around a ```console block:

    <!-- generated: console -->
    ```console
    $ transcompact check session.jsonl || transcompact repair -i session.jsonl   # a comment stays
    ```
    <!-- end generated -->

Its `$ ` lines are the writer's; the rest is the code's. The commands of a block run in order in
one `bash`, so that `echo $?` sees the command before it, in a scratch directory of their own
that `scratch()` builds from the shipped fixtures; stdout and stderr go to one pipe (`2>&1`), in
the order they come, as a user without a terminal sees them, and what each command prints is
written under it.

The run is offline and the same each time: no TRANSCOMPACT_, ANTHROPIC_ or OPENAI_ variable of
the caller's shell; the Anthropic and OpenAI APIs are the loopback stand-in of tests/loopback.py,
with a dummy key (`env -u ANTHROPIC_API_KEY transcompact compact …` shows the fallback with no
key, a summary is the stand-in's); `HOME` is a fake one, holding a Claude Code log, and is shown
as /home/ada (the log is under `~/.claude/projects/-home-ada-shop/`: ada's). A part may say how
the stand-in answers, `<!-- generated: console overloaded -->` (see `SETUPS`).

A part is compared loosely (`loose`): what varies from run to run is masked (the seconds a run
took, `; 0.2 s`; an event's `time` and `duration_ms`), and a part that differs from its new
output only there is left as it is.
"""

from __future__ import annotations

import atexit
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
HOME_SHOWN = "/home/ada"
CLAUDE_LOG = ".claude/projects/-home-ada-shop/3f0c6a52-8d1e-4c57-9b7e-0f7f7f2b9a10.jsonl"
TIMEOUT = 120  # seconds, for one block
# What an example may run besides bash, the coreutils and transcompact: it must be installed.
PROGRAMS = ("jq",)

# The scratch directory: `fixtures/` as shipped (an example that names a fixture runs as from the
# project's root), and each other name a reader meets in an example, made from a fixture.
FILES: dict[str, str | Callable[[], bytes]] = {
    "session.json": "anthropic/long-session.json",  # an Anthropic request body of 33 messages, 8,957 tokens
    "session.json.gz": lambda: gzip.compress((FIXTURES / "anthropic/long-session.json").read_bytes(), mtime=0),
    "session.jsonl": "claude-code/broken-session.jsonl",  # a Claude Code log with two errors
    "chat.json": "openai/tool-calls.json",
    "output.jsonl": lambda: (FIXTURES / "openhands-v0/output.jsonl").read_bytes() * 3,  # an evaluation's output: 3 runs
    "r.jsonl": "jsonl/chat.jsonl",
    # stored logs: two transcripts to compact, two with nothing to compact, one that is no transcript
    "logs/api/every-block.json": "anthropic/every-block.json",
    "logs/api/long-session.json": "anthropic/long-session.json",
    "logs/chat.jsonl": "jsonl/chat.jsonl",
    "logs/claude/session.jsonl": "claude-code/broken-session.jsonl",
    "logs/notes.json": lambda: b'{"title": "notes", "todo": ["ship it"]}\n',
    f"~/{CLAUDE_LOG}": "claude-code/broken-session.jsonl",
}


def scratch(work: Path, home: Path) -> None:
    """Fill `work` (and `home`, for the names under `~/`) with the files the examples name."""
    shutil.copytree(FIXTURES, work / "fixtures")
    for name, source in FILES.items():
        path = home / name[2:] if name.startswith("~/") else work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((FIXTURES / source).read_bytes() if isinstance(source, str) else source())


def environment(home: Path, tools: Path, base_url: str) -> dict[str, str]:
    """The caller's environment without a setting of transcompact's, a provider's or one that colors
    or adds to the output; the APIs the stand-in."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith(("TRANSCOMPACT_", "ANTHROPIC_", "OPENAI_"))
            and name not in ("FORCE_COLOR", "CLICOLOR_FORCE", "TTY_COMPATIBLE", "PYTHONWARNINGS", "PYTHONDEVMODE")}
    return {**kept, "PATH": f"{tools}{os.pathsep}{kept.get('PATH', os.defpath)}", "HOME": str(home), "TZ": "UTC",
            "LC_ALL": "C.UTF-8", "COLUMNS": "80", "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-docs-loopback",
            "OPENAI_BASE_URL": f"{base_url}/v1"}


def _overloaded(stand_in: Any) -> dict[str, str]:
    """The Messages API answers every request 529 Overloaded."""
    stand_in.answer = stand_in.error(529, "Overloaded")
    return {}


def _expiring(stand_in: Any) -> dict[str, str]:
    """A batch ends at its second look; the request for every-block.json's summary expires. The poll
    every 0.05 s instead of 60 (which changes only how long the run waits)."""
    stand_in.batch_outcome = lambda key, request: "expired" if "design mock" in str(request) else "succeeded"
    return {"TRANSCOMPACT_POLL_INTERVAL": "0.05"}


# How the stand-in answers, named after `console` in a part's marker (none: a summary each time).
SETUPS: dict[str, Callable[[Any], dict[str, str]]] = {"overloaded": _overloaded, "expiring": _expiring}


def commands(body: str) -> list[str]:
    """The `$ ` lines of a console block, without the `$ `."""
    return [line[2:] for line in body.splitlines() if line.startswith("$ ")]


def missing(commands: list[str]) -> list[str]:
    """The programs of `PROGRAMS` that `commands` run and that are not installed."""
    return [program for program in PROGRAMS if not shutil.which(program)
            and any(re.search(rf"(^|[|;&(]\s*){program}\b", command) for command in commands)]


_launcher_lock = threading.Lock()
_launcher_dirs: list[Path] = []


def launcher() -> Path:
    """The directory holding `transcompact`, this checkout's, run by this Python (the venv's, as
    `make docs` runs it): written once a process, before any block forks. A script written while
    another thread forks stays open for writing in that child until it execs, and bash running the
    script then fails with "Text file busy"."""
    with _launcher_lock:
        if not _launcher_dirs:
            tools = Path(tempfile.mkdtemp(prefix="transcompact-docs-bin-")).resolve()
            atexit.register(shutil.rmtree, tools, ignore_errors=True)
            (tools / "transcompact").write_text(f"#!{sys.executable}\nimport sys\nfrom transcompact.cli.main import main\n"
                                              "sys.exit(main())\n")
            (tools / "transcompact").chmod(0o755)
            _launcher_dirs.append(tools)
        return _launcher_dirs[0]


def run(commands: list[str], setup: str = "") -> str:
    """The console block of `commands`, each followed by what it prints."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.loopback import serve

    if not commands:
        raise SystemExit("a console part holds no `$ ` line")
    if setup and setup not in SETUPS:
        raise SystemExit(f"unknown console setup {setup!r}: one of {', '.join(SETUPS)}")
    if missing(commands):
        raise SystemExit(f"a console example runs {', '.join(missing(commands))}, which is not installed here")
    separator = f"@@transcompact-docs-{uuid.uuid4().hex}@@"  # printed after each command, which keeps its $?
    script = "".join(f"{command}\n__status=$?; printf %s {separator}; (exit $__status)\n" for command in commands)
    tools = launcher()
    stand_in, stop = serve()
    try:
        extra = SETUPS[setup](stand_in) if setup else {}
        with tempfile.TemporaryDirectory(prefix="transcompact-docs-") as name:
            top = Path(name).resolve()
            work, home = top / "work", top / "home"
            scratch(work, home)
            done = subprocess.run(["bash", "-c", script], cwd=work, env={**environment(home, tools, stand_in.url), **extra},
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
    finally:
        stop()
    output = done.stdout.decode("utf-8", "backslashreplace").replace(str(home), HOME_SHOWN)
    outputs = output.split(separator)
    if len(outputs) != len(commands) + 1 or outputs[-1]:
        raise SystemExit(f"a console part did not run to its end:\n{output}")
    lines = []
    for command, printed in zip(commands, outputs):
        trouble = [line for line in printed.splitlines() if line.startswith(("$ ", "hint: run again with --traceback"))
                   or "command not found" in line or str(top) in line or str(tools) in line or stand_in.url in line]
        if trouble:
            raise SystemExit(f"`{command}` prints what a console example cannot show (a line that reads as a command, "
                             f"an internal error, a missing program, a temporary path or the stand-in's address):\n{printed}")
        lines.append(f"$ {command}\n" + (printed if not printed or printed.endswith("\n") else printed + "\n"))
    return "```console\n" + "".join(lines) + "```\n"


def loose(text: str) -> str:
    """`text` with what varies from run to run masked: the seconds a run took, the time of an event
    and how long it took."""
    text = re.sub(r"(?<![\w.,])\d+(?:\.\d+)? s\b", "… s", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z", "…", text)
    return re.sub(r'("duration_ms": ?)\d+', r"\1…", text)


def run_all(parts: list[tuple[list[str], str]]) -> list[str]:
    """Each part's block (its commands and setup), the parts side by side."""
    if not parts:
        return []
    launcher()
    with ThreadPoolExecutor(max_workers=min(len(parts), 2 * (os.cpu_count() or 1))) as pool:
        return list(pool.map(lambda part: run(*part), parts))
