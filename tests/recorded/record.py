"""Record the sessions of tests/recorded/ again: the real agents, offline, against a
scripted stand-in of their model API on 127.0.0.1, in a tiny pytest project they really work in.

    .venv/bin/python tests/recorded/record.py [claude-code] [codex] [pi] [gemini] [compacted]

(all of them when none is named; `compacted`: the sessions of compacted/, which each agent
compacted itself). Each agent must be installed (`make agents`; Claude Code 2.1.112,
installed beside the pinned release, is the one run here: see README.md). The stand-ins are the
test suite's (tests/loopback.py, tests/standin_pi.py, tests/standin_responses.py,
tests/standin_gemini.py); nothing leaves the machine.

Every session plays the same work, a fix cycle then a step named next, done and committed:
the tests fail (add() subtracts), the agent says it will fix that next, edits calc.py, the
tests pass, it commits; it plans "Commit the fix" as its next step (Claude Code `TodoWrite`,
Codex `update_plan`, Gemini `write_todos`; pi has no planning tool) and commits without marking
that step done; then it adds subtract() with a test, runs the tests, commits, marks every step
done and says so. A second prompt asks for the last commits. The project is a git repository
at a fixed path, the commits' dates are fixed, so that a new recording differs from the last one
only where the agents' own ids and times do.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "cli")]

from tests.loopback import count_tokens_of, serve  # noqa: E402 (found through the path above)
from tests.npm_agent import CLAUDE_CODE, CLAUDE_CODE_RECORDED, CODEX, GEMINI_CLI, PI  # noqa: E402
from tests.standin_pi import events, text, tool_use  # noqa: E402

HERE = Path(__file__).resolve().parent  # tests/recorded
WORK = Path("/tmp/transcompact-sessions")  # the projects, at the same paths each time
CLAUDE_CODE_RELEASE = CLAUDE_CODE_RECORDED  # its logs hold only the session (2.1.332 adds ~60 KB of request snapshots per turn)
TIMEOUT = 180
GIT_DATES = {"GIT_AUTHOR_DATE": "2026-01-05T10:00:00Z", "GIT_COMMITTER_DATE": "2026-01-05T10:00:00Z",
             "GIT_AUTHOR_NAME": "Recorder", "GIT_AUTHOR_EMAIL": "recorder@example.invalid",
             "GIT_COMMITTER_NAME": "Recorder", "GIT_COMMITTER_EMAIL": "recorder@example.invalid"}

CALC = '"""Small arithmetic helpers."""\n\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n'
TESTS = "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
USAGE = "# Using calc\n\n" + "".join(
    f"{n}. `calc.{('add', 'mul')[n % 2]}({n}, {n + 1})` gives {(n + n + 1, n * (n + 1))[n % 2]}: the helpers take two numbers "
    f"and return one, as the spreadsheet's column {chr(65 + n % 26)} expects.\n" for n in range(1, 61))
FIRST = "test_calc.py fails. Read docs/usage.md, fix calc.py so that the tests pass and commit the fix; then add subtract() with a test and commit that too."
SECOND = "Show me the last three commits."
FIX_NEXT = "test_add fails: add() returns a - b instead of a + b. I'll fix that next."
DONE = "Fixed add() (it subtracted) and added subtract() with its test; all 3 tests pass and both changes are committed."
FIX_SUBJECT = "Fix add() to return the sum"
SUBTRACT_SUBJECT = "Add subtract() with a test"
TASKS = ("Fix add() in calc.py", "Commit the fix", "Add subtract() with a test and commit it")


def project(agent: str) -> Path:
    """A fresh project: calc.py whose add() subtracts, its tests, a usage page; a git repository."""
    root = WORK / agent
    shutil.rmtree(root, ignore_errors=True)
    where = root / "project"
    (where / "docs").mkdir(parents=True)
    (where / "calc.py").write_text(CALC)
    (where / "test_calc.py").write_text(TESTS)
    (where / "docs" / "usage.md").write_text(USAGE)
    (where / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    for command in (["git", "init", "-q", "-b", "main"], ["git", "add", "."], ["git", "commit", "-q", "-m", "calc: add and mul"]):
        subprocess.run(command, cwd=where, env={**os.environ, **GIT_DATES}, check=True)
    return where


def environment(home: Path, **extra: str) -> dict[str, str]:
    """What an agent runs with: its own HOME, the venv's python (pytest) first on PATH, fixed git
    dates, a dead proxy for anything but the loopback."""
    return {"PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}", "HOME": str(home), "TMPDIR": str(home.parent),
            "PYTHONDONTWRITEBYTECODE": "1", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost", **GIT_DATES, **extra}


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


def installed(agent, version: str | None = None) -> list[str]:
    if version is not None:
        os.environ[agent.variable] = version
    command = agent.installed()
    if command is None:
        raise SystemExit(f"{agent.package} {agent.version} is not installed: run `make agents`"
                         f"{f' and {agent.variable}={agent.version} make agents' if version else ''}")
    return command


def saved(log: Path, name: str, limit: int | None = 100_000) -> Path:
    target = HERE / name
    target.parent.mkdir(parents=True, exist_ok=True)
    for old in target.parent.glob("*"):
        old.unlink()
    shutil.copyfile(log, target)
    size = target.stat().st_size
    print(f"{target.relative_to(ROOT)}: {size:,} bytes", file=sys.stderr)
    if limit is not None and size >= limit:
        raise SystemExit(f"{target} is {size:,} bytes: the fixtures stay under {limit // 1000} KB")
    return target


# --- the Anthropic Messages API (Claude Code, pi) ---------------------------------------------


class AnthropicScript:
    """Each request of the agent's loop (one that offers tools) gets the next response of a turn's
    script; any other request (a side request) a short text."""

    def __init__(self) -> None:
        self.responses: list[list[dict]] = []
        self.answered = 0

    def __call__(self, request) -> tuple:
        body = request.body if isinstance(request.body, dict) else {}
        if not request.route.endswith("/messages"):
            return 404, {"type": "error", "error": {"type": "not_found_error", "message": request.path}}
        blocks = self.responses.pop(0) if body.get("tools") and self.responses else [text("ok")]
        self.answered += 1
        calls = any(block["type"] == "tool_use" for block in blocks)
        prompt = count_tokens_of(body)  # the whole request: system prompt, tools, messages
        message = {"id": f"msg_standin_{self.answered:03d}", "type": "message", "role": "assistant", "model": body.get("model"),
                   "content": blocks, "stop_reason": "tool_use" if calls else "end_turn", "stop_sequence": None,
                   "usage": {"input_tokens": prompt, "output_tokens": len(json.dumps(blocks)) // 4,
                             "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}
        return 200, events(message)


def claude_code_turns(where: Path) -> list[list[list[dict]]]:
    """Claude Code's script: the responses of each prompt's turn. Its first test run is spelled
    `pytest -q`, the later ones `python -m pytest -q`."""
    def todos(*statuses: str) -> dict:
        return {"todos": [{"content": task, "status": status, "activeForm": task} for task, status in zip(TASKS, statuses)]}

    call = iter(range(1, 100))

    def use(name: str, **arguments) -> dict:
        return tool_use(f"toolu_standin_{next(call):02d}", name, **arguments)

    return [[
        [text("I'll plan the work and read the usage notes."), use("TodoWrite", **todos("in_progress", "pending", "pending")),
         use("Read", file_path=str(where / "docs" / "usage.md"))],
        [use("Bash", command="pytest -q", description="Run the tests")],
        [text(FIX_NEXT), use("Read", file_path=str(where / "calc.py"))],
        [use("Edit", file_path=str(where / "calc.py"), old_string="    return a - b", new_string="    return a + b")],
        [use("Bash", command="python -m pytest -q", description="Run the tests again")],
        [use("TodoWrite", **todos("completed", "in_progress", "pending"))],
        [use("Bash", command=f'git add calc.py && git commit -m "{FIX_SUBJECT}"', description="Commit the fix")],
        [use("Read", file_path=str(where / "test_calc.py"))],
        [use("Edit", file_path=str(where / "calc.py"), old_string="def mul(a, b):",
             new_string="def subtract(a, b):\n    return a - b\n\n\ndef mul(a, b):")],
        [use("Edit", file_path=str(where / "test_calc.py"), old_string="from calc import add, mul\n",
             new_string="from calc import add, mul, subtract\n")],
        [use("Edit", file_path=str(where / "test_calc.py"), old_string="def test_mul():",
             new_string="def test_subtract():\n    assert subtract(5, 3) == 2\n\n\ndef test_mul():")],
        [use("Bash", command="python -m pytest -q", description="Run the tests")],
        [use("Bash", command=f'git add calc.py test_calc.py && git commit -m "{SUBTRACT_SUBJECT}"', description="Commit subtract()")],
        [use("TodoWrite", **todos("completed", "completed", "completed"))],
        [text(DONE)],
    ], [
        [use("Bash", command="git log --oneline -3", description="Show the last commits")],
        [text(f"The last three commits: {SUBTRACT_SUBJECT}, {FIX_SUBJECT}, and the first one, calc: add and mul.")],
    ]]


def claude_code() -> Path:
    command = installed(CLAUDE_CODE, CLAUDE_CODE_RELEASE)
    where = project("claude-code")
    home = where.parent / "home"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({"metricsStatusCache": {"enabled": False, "timestamp": int(time.time() * 1000)}}))
    state, stop = serve()
    script = AnthropicScript()
    state.answer = script
    env = environment(home, ANTHROPIC_BASE_URL=state.url, ANTHROPIC_API_KEY="sk-ant-loopback-dummy",
                      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", DISABLE_TELEMETRY="1",
                      DISABLE_ERROR_REPORTING="1", DISABLE_AUTO_COMPACT="1")
    session = str(uuid.uuid5(uuid.NAMESPACE_URL, "transcompact/sessions-recorded/claude-code"))
    flags = ["--permission-mode", "acceptEdits", "--allowedTools", "Bash,Edit,Read,Write,TodoWrite"]
    try:
        for number, (prompt, turn) in enumerate(zip((FIRST, SECOND), claude_code_turns(where))):
            script.responses = list(turn)
            run([*command, "-p", *(["--session-id", session] if number == 0 else ["--resume", session]), *flags, "--", prompt],
                where, env)
            if script.responses:
                raise RuntimeError(f"Claude Code took {len(turn) - len(script.responses)} of the {len(turn)} responses")
    finally:
        stop()
    (log,) = (home / ".claude" / "projects").glob(f"*/{session}.jsonl")
    return saved(log, f"claude-code/{session}.jsonl")


# --- the Responses API (Codex) -----------------------------------------------------------------


def codex_turns(where: Path) -> list[list]:
    """Codex's script: the responses of each prompt's turn (its calls of one response run in parallel)."""
    from tests.standin_responses import Response, function_call, message, reasoning

    call = iter(range(1, 100))

    def ex(command: str) -> dict:
        return function_call(f"call_standin_{next(call):02d}", "exec_command", {"cmd": command, "login": False})

    def plan(*statuses: str) -> dict:
        return function_call(f"call_standin_{next(call):02d}", "update_plan",
                             {"plan": [{"step": task, "status": status} for task, status in zip(TASKS, statuses)]})

    def patch(body: str) -> dict:
        return {"type": "custom_tool_call", "call_id": f"call_standin_{next(call):02d}", "name": "apply_patch",
                "input": f"*** Begin Patch\n{body}*** End Patch\n"}

    return [[
        Response((reasoning("Plan, then read the usage notes and the code."), plan("in_progress", "pending", "pending"),
                  ex("sed -n 1,30p docs/usage.md"), ex("cat calc.py test_calc.py"))),
        Response((ex("python -m pytest -q"),)),
        Response((message(FIX_NEXT), patch("*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"))),
        Response((ex("python -m pytest -q"),)),
        Response((plan("completed", "in_progress", "pending"), ex(f'git add calc.py && git commit -m "{FIX_SUBJECT}"'))),
        Response((patch("*** Update File: calc.py\n@@\n def mul(a, b):\n-    return a * b\n+    return a * b\n+\n+\n"
                        "+def subtract(a, b):\n+    return a - b\n"
                        "*** Update File: test_calc.py\n@@\n-from calc import add, mul\n+from calc import add, mul, subtract\n"
                        "@@\n def test_mul():\n     assert mul(2, 3) == 6\n+\n+\n+def test_subtract():\n+    assert subtract(5, 3) == 2\n"),)),
        Response((ex("python -m pytest -q"),)),
        Response((ex(f'git add calc.py test_calc.py && git commit -m "{SUBTRACT_SUBJECT}"'), plan("completed", "completed", "completed"))),
        Response((message(DONE),)),
    ], [
        Response((ex("git log --oneline -3"),)),
        Response((message(f"The last three commits: {SUBTRACT_SUBJECT}, {FIX_SUBJECT}, and the first one, calc: add and mul."),)),
    ]]


def codex() -> Path:
    from tests.standin_responses import Script
    from tests.standin_responses import serve as serve_responses

    command = installed(CODEX)
    where = project("codex")
    home = where.parent / "home"
    (home / ".codex").mkdir(parents=True)
    state, stop = serve_responses()
    provider = [f"model_providers.standin.{key}={value}" for key, value in (
        ("name", '"standin"'), ("base_url", f'"{state.url}/v1"'), ("env_key", '"STANDIN_KEY"'), ("wire_api", '"responses"'),
        ("request_max_retries", "0"), ("stream_max_retries", "0"))]
    settings = ["model_provider=standin", *provider, "check_for_update_on_startup=false", "analytics.enabled=false",
                "tools.update_plan.enabled=true"]
    flags = [argument for setting in settings for argument in ("-c", setting)]
    flags += ["--disable", "plugins", "--disable", "remote_plugin", "-m", "gpt-5.5", "--skip-git-repo-check", "-s", "danger-full-access"]
    env = environment(home, CODEX_HOME=str(home / ".codex"), STANDIN_KEY="loopback-dummy", RUST_LOG="warn")
    thread = None
    try:
        for prompt, turn in zip((FIRST, SECOND), codex_turns(where)):
            state.answer = script = Script(list(turn))
            run([*command, "exec", *flags, *(["resume", thread] if thread else []), prompt], where, env)
            if script.responses:
                raise RuntimeError(f"Codex took {len(turn) - len(script.responses)} of the {len(turn)} responses")
            (log,) = (home / ".codex" / "sessions").rglob("rollout-*.jsonl")
            thread = json.loads(log.read_bytes().split(b"\n", 1)[0])["payload"]["id"]
    finally:
        stop()
    return saved(log, f"codex/{log.name}")


# --- pi (the Anthropic Messages API) ------------------------------------------------------------


def pi_turns() -> list[list[dict]]:
    """pi's script: both prompts' responses in one run (`pi -p FIRST SECOND`); pi has no planning tool."""
    call = iter(range(1, 100))

    def use(name: str, **arguments) -> dict:
        return tool_use(f"toolu_standin_{next(call):02d}", name, **arguments)

    return [
        [text("Reading the usage notes and the code."), use("read", path="docs/usage.md", limit=30), use("read", path="calc.py")],
        [use("bash", command="python -m pytest -q")],
        [text(FIX_NEXT), use("edit", path="calc.py", edits=[{"oldText": "    return a - b", "newText": "    return a + b"}])],
        [use("bash", command="python -m pytest -q")],
        [text("The tests pass. Committing the fix next."), use("bash", command=f'git add calc.py && git commit -m "{FIX_SUBJECT}"')],
        [use("edit", path="calc.py", edits=[{"oldText": "def mul(a, b):", "newText": "def subtract(a, b):\n    return a - b\n\n\ndef mul(a, b):"}]),
         use("edit", path="test_calc.py", edits=[
             {"oldText": "from calc import add, mul\n", "newText": "from calc import add, mul, subtract\n"},
             {"oldText": "def test_mul():", "newText": "def test_subtract():\n    assert subtract(5, 3) == 2\n\n\ndef test_mul():"}])],
        [use("bash", command="python -m pytest -q")],
        [use("bash", command=f'git add calc.py test_calc.py && git commit -m "{SUBTRACT_SUBJECT}"')],
        [text(DONE)],
        [use("bash", command="git log --oneline -3")],
        [text(f"The last three commits: {SUBTRACT_SUBJECT}, {FIX_SUBJECT}, and the first one, calc: add and mul.")],
    ]


def pi() -> Path:
    command = installed(PI)
    where = project("pi")
    agent, home = where.parent / "agent", where.parent / "home"
    agent.mkdir()
    home.mkdir()
    state, stop = serve()
    state.answer = script = AnthropicScript()
    script.responses = pi_turns()
    models = {"providers": {"standin": {"baseUrl": state.url, "api": "anthropic-messages", "apiKey": "sk-standin", "models": [
        {"id": "claude-standin", "input": ["text", "image"], "reasoning": False, "contextWindow": 1_000_000, "maxTokens": 8192}]}}}
    (agent / "models.json").write_text(json.dumps(models))
    (agent / "settings.json").write_text(json.dumps({"compaction": {"enabled": False}}))
    env = environment(home, PI_CODING_AGENT_DIR=str(agent), PI_OFFLINE="1", PI_TELEMETRY="0")
    try:
        run([*command, "--provider", "standin", "--model", "claude-standin", "--no-extensions", "--no-skills",
             "--no-prompt-templates", "--no-context-files", "-p", FIRST, SECOND], where, env)
    finally:
        stop()
    if script.responses:
        raise RuntimeError(f"pi left {len(script.responses)} responses")
    (log,) = agent.glob("sessions/*/*.jsonl")
    return saved(log, f"pi/{log.name}")


# --- Gemini CLI (the Gemini API) -----------------------------------------------------------------


def gemini_turns() -> list[list]:
    """Gemini's script: the responses of the first prompt's turn (`write_todos` is its planning tool, offered to a
    Gemini 2 model: the sessions run gemini-2.5-pro)."""
    from tests.standin_gemini import Response

    def todos(*statuses: str) -> tuple[str, dict]:
        return ("write_todos", {"todos": [{"description": task, "status": status} for task, status in zip(TASKS, statuses)]})

    return [[
        Response("Planning, then reading the notes and the code.",
                 (todos("in_progress", "pending", "pending"), ("read_file", {"file_path": "docs/usage.md", "limit": 30}),
                  ("read_file", {"file_path": "calc.py"})), ("**Planning** A plan first.",)),
        Response("", (("run_shell_command", {"command": "python -m pytest -q"}),)),
        Response(FIX_NEXT, (("replace", {"file_path": "calc.py", "instruction": "Make add() return the sum.",
                                          "old_string": "    return a - b", "new_string": "    return a + b"}),)),
        Response("", (("run_shell_command", {"command": "python -m pytest -q"}),)),
        Response("", (todos("completed", "in_progress", "pending"),
                      ("run_shell_command", {"command": f'git add calc.py && git commit -m "{FIX_SUBJECT}"'}))),
        Response("", (("replace", {"file_path": "calc.py", "instruction": "Add subtract() before mul().", "old_string": "def mul(a, b):",
                                   "new_string": "def subtract(a, b):\n    return a - b\n\n\ndef mul(a, b):"}),)),
        Response("", (("write_file", {"file_path": "test_calc.py", "content": TESTS.replace("add, mul", "add, mul, subtract")
                                      + "\n\ndef test_subtract():\n    assert subtract(5, 3) == 2\n"}),)),
        Response("", (("run_shell_command", {"command": "python -m pytest -q"}),)),
        Response("", (("run_shell_command", {"command": f'git add calc.py test_calc.py && git commit -m "{SUBTRACT_SUBJECT}"'}),
                      todos("completed", "completed", "completed"))),
        Response(DONE),
    ]]  # no second prompt: a resume appends the whole history again (`$set`), over 100 KB


GEMINI_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "telemetry": {"enabled": False},
                   "privacy": {"usageStatisticsEnabled": False},
                   "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}


def gemini() -> Path:
    from tests.standin_gemini import is_turn
    from tests.standin_gemini import serve as serve_gemini

    command = installed(GEMINI_CLI)
    where = project("gemini")
    home = where.parent / "home"
    chats = home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(where): "project"}}))
    (home / ".gemini" / "tmp" / "project" / ".project_root").write_text(str(where))
    state, stop = serve_gemini()
    env = environment(home, GOOGLE_GEMINI_BASE_URL=state.url, GEMINI_API_KEY="loopback-dummy")
    try:
        for number, (prompt, turn) in enumerate(zip((FIRST, SECOND), gemini_turns())):
            state.script.extend(turn)
            run([*command, "--skip-trust", "--yolo", "-m", "gemini-2.5-pro", *(["--resume", "latest"] if number else []), "-p", prompt], where, env)
            if state.script:
                raise RuntimeError(f"Gemini left {len(state.script)} responses")
        offered = {d["name"] for r in state.requests if is_turn(r) for t in r.body.get("tools", [])
                   for d in t.get("functionDeclarations", [])}
        if "write_todos" not in offered:
            print(f"Gemini offered no write_todos (its tools: {sorted(offered)})", file=sys.stderr)
    finally:
        stop()
    log = max(chats.glob("session-*"), key=lambda path: path.stat().st_size)
    return saved(log, f"gemini/{log.name}")


# --- sessions each agent compacted itself (compacted/) -------------------------------------------
# The work of the resume tests' own recordings (tests/test_codex_resume.py, test_pi_resume.py,
# test_gemini_resume.py: their scripts are read from there), with the agent's own compaction at a
# low limit. These logs may pass 100 KB.


def codex_compacted() -> Path:
    """Codex's tool loop (four turns), compacted by Codex itself at a low auto-compact limit, two
    turns more, compacted again (the second compaction supersedes the first), two turns more."""
    from tests import test_codex_resume as recorded_here
    from tests.standin_responses import Response, message
    from tests.standin_responses import serve as serve_responses

    command = installed(CODEX)
    root = WORK / "compacted-codex"
    shutil.rmtree(root, ignore_errors=True)
    state, stop = serve_responses()
    try:
        recording = recorded_here.Recording.start(command, state, root)
        session = recording.tool_loop()
        recording.compacted_by_codex(session)
        thread = recorded_here.thread_of(session.read_bytes())
        recording.turn([Response((message("Summed up again."),))], "-c", "model_auto_compact_token_limit=6000", "resume",
                       thread, "Turn 7: sum up again.")
        for number, script in enumerate(recorded_here.AFTER_COMPACTION, 8):
            recording.turn(script, "resume", thread, f"Turn {number}: go on.")
    finally:
        stop()
    return saved(session, "compacted/codex/codex-recorded-2compactions.jsonl", limit=None)


class PiCompacting:
    """pi's script, and a summary for each compaction pi asks for (its summarization system prompt)."""

    def __init__(self, responses: list[list[dict]]) -> None:
        from tests.standin_pi import Script

        self.script = Script(responses)

    def __call__(self, request) -> tuple:
        body = request.body if isinstance(request.body, dict) else {}
        system = json.dumps(body.get("system") or "")
        if "context summarization assistant" in system or "summarization" in system[:400]:
            message = {"id": "msg_standin_summary", "type": "message", "role": "assistant", "model": body.get("model"),
                       "content": [text("## Goal\nThe pi session so far (summary by the stand-in).")], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": count_tokens_of(body), "output_tokens": 20,
                                                        "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}
            return 200, events(message)
        return self.script(request)


def pi_compacted() -> Path:
    """pi's six prompts with its auto-compaction at a context window of 2,600 tokens."""
    from tests import test_pi_resume as recorded_here

    command = installed(PI)
    root = WORK / "compacted-pi"
    shutil.rmtree(root, ignore_errors=True)
    agent, home, where = root / "agent", root / "home", root / "project"
    for directory in (agent, home, where):
        directory.mkdir(parents=True)
    for name, content in (("calc.py", recorded_here.CALC), ("test_calc.py", recorded_here.TESTS),
                          ("README.md", recorded_here.README), ("data.txt", recorded_here.DATA)):
        (where / name).write_text(content)
    state, stop = serve()
    state.answer = PiCompacting(recorded_here.RESPONSES)
    models = {"providers": {"standin": {"baseUrl": state.url, "api": "anthropic-messages", "apiKey": "sk-standin", "models": [
        {"id": "claude-standin", "input": ["text", "image"], "reasoning": True, "contextWindow": 2600, "maxTokens": 8192}]}}}
    (agent / "models.json").write_text(json.dumps(models))
    (agent / "settings.json").write_text(json.dumps({"compaction": {"enabled": True, "reserveTokens": 600, "keepRecentTokens": 400}}))
    env = environment(home, PI_CODING_AGENT_DIR=str(agent), PI_OFFLINE="1", PI_TELEMETRY="0")
    try:
        run([*command, "--provider", "standin", "--model", "claude-standin", "--no-extensions", "--no-skills",
             "--no-prompt-templates", "--no-context-files", "-p", *recorded_here.PROMPTS], where, env)
    finally:
        stop()
    (log,) = agent.glob("sessions/*/*.jsonl")
    if b'"type":"compaction"' not in log.read_bytes():
        raise RuntimeError("pi did not compact")
    return saved(log, "compacted/pi/pi-recorded-compacted.jsonl", limit=None)


def gemini_compacted() -> Path:
    """Gemini CLI's three runs of tool turns, with its chat compression at a low threshold."""
    from tests import test_gemini_resume as recorded_here
    from tests.standin_gemini import serve as serve_gemini

    command = installed(GEMINI_CLI)
    root = WORK / "compacted-gemini"
    shutil.rmtree(root, ignore_errors=True)
    home, where = root / "home", root / "project"
    chats = home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    (where / "src").mkdir(parents=True)
    (where / "src" / "app.py").write_text(recorded_here.APP)
    (where / "README.md").write_text("# Orders\n\nEighty steps over an order.\n")
    (home / ".gemini" / "settings.json").write_text(json.dumps({**GEMINI_SETTINGS, "model": {"compressionThreshold": 0.002}}))
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(where): "project"}}))
    (home / ".gemini" / "tmp" / "project" / ".project_root").write_text(str(where))
    state, stop = serve_gemini()
    env = environment(home, GOOGLE_GEMINI_BASE_URL=state.url, GEMINI_API_KEY="loopback-dummy")
    try:
        for number, (prompt, script) in enumerate(recorded_here.RUNS):
            state.script.extend(script)
            run([*command, "--skip-trust", "--yolo", *(["--resume", "latest"] if number else []), "-p", prompt], where, env)
            state.script.clear()  # a compression takes turns of its own
    finally:
        stop()
    log = max(chats.glob("session-*"), key=lambda path: path.stat().st_size)
    return saved(log, "compacted/gemini/gemini-recorded-compressed.jsonl", limit=None)


def compacted() -> None:
    for record in (codex_compacted, pi_compacted, gemini_compacted):
        record()


AGENTS = {"claude-code": claude_code, "codex": codex, "pi": pi, "gemini": gemini, "compacted": compacted}


def main(names: list[str]) -> None:
    for name in names or list(AGENTS):
        if name not in AGENTS:
            raise SystemExit(f"no such agent: {name} (choose from {', '.join(AGENTS)})")
        AGENTS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
