"""Five compactions in a row: what the agent needs survives every one, and the agent resumes each.

An agent's log is compacted again and again as the session goes on: `transcompact compact
--emergency --force` with a halving `--keep-recent-tokens`, each step's output the next step's
input (the command line, as a user runs it). The logs:
- the sessions the four agents recorded themselves (tests/recorded/<agent>/, see its README.md:
  Claude Code, Codex, Gemini CLI, pi; two commits, a failing then passing pytest, two files edited);
- the same Codex session with its `apply_patch` calls run through the shell, as Codex records a
  patch the model runs that way (`exec_command` with `cmd: "apply_patch <<'PATCH' …"`, and
  `shell_command` with `command: …`): nothing else in it changes;
- when the shared corpus is here, two of its logs that hold commits: a Claude Code session (2
  commits, `mix test` runs, 12 files edited; it has check errors of its own) and pi's large session
  (1 commit, 23 files edited; its last test run printed no result).

The facts of the original are defined here, apart from the checkpoint's code, from the log as
transcompact reads it (what the agent would send):
- commit hashes: each `[branch hash] subject` line of the output of a call whose command commits,
  wherever the agent's output format puts that line (Gemini prefixes `Output: `; a result that is
  JSON is read by its strings too);
- the last test result: the result line (`3 passed in 0.14s`, `14 doctests, 87 tests, 0 failures`)
  of the last call that runs the tests; none when that run printed no result line;
- modified files: the path argument of each edit or write call, and each file a patch names
  (`*** Update File: x`, `Add File`, `Delete File`, `Move to`: Codex `apply_patch`, as its own
  tool's input, under `input` or `patch`, in an argv, or in a shell command's here-document).
A fact is found when its text is in what transcompact reads from the output (the checkpoint or the
window: texts, call inputs, results), whitespace aside; a file outside the user's own words (the
summary keeps them verbatim, and they name the files the user asked about: `fix calc.py`). As the
recorded sessions also name their files in commands, errors and tool output, a file is checked a
second way too ("files as modified"): named in the checkpoint's list of files modified (its lines
under a `Files modified` heading), or by an edit, write or patch call of the window.

After every step: the output passes `transcompact check` (the corpus's Claude Code log: no error it
did not have), holds exactly one summary, within `--checkpoint-tokens` + `--keep-user-tokens` (at
0.25 tokens a character); the step cut, unless the window it was given was already one message (then
there is nothing left to cut and the log goes on as it was); and every fact of the ORIGINAL is
found in it. Each step's output that differs from the one before is resumed by the real agent
against the loopback stand-in, as the resume tests do (every step, not only the last): the agent
must accept the log, send one request, and send the summary and every fact the output holds.

The recorded sessions are short (24 to 34 messages, about 1,600 to 5,500 tokens), so the 4,000 →
250 windows would mostly not cut: each starts at the window from which halving cuts most often
(Claude Code's cuts five times, Codex's, Gemini's and pi's four, before the window is one
message). The corpus's Claude Code log starts at 4,000 tokens, pi's at 20,000 (its last message is
big); both cut five times.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from transcompact import loads
from transcompact.core.model import Text, ToolCall, ToolResult, result_text
from transcompact.core.summary_text import SUMMARY_PREFIX, text_of
from transcompact.ops.compaction.summary_message import is_summary_message

from .builders import run_cli
from .conftest import CORPUS
from .loopback import Loopback
from .loopback import serve as serve_anthropic
from .npm_agent import CLAUDE_CODE, CODEX, GEMINI_CLI, PI
from .standin_gemini import is_turn
from .standin_gemini import serve as serve_gemini
from .standin_responses import Responses
from .standin_responses import serve as serve_responses

RECORDED = Path(__file__).parent / "recorded"
STEPS = 5
CHECKPOINT_TOKENS = 2500  # compact's defaults, given explicitly: the budget the summary is held to
USER_TOKENS = 4000
RATIO = 0.25  # the chars estimator's tokens per character, by which compact counts the summary


@dataclass(frozen=True)
class Session:
    name: str
    agent: str  # claude-code, codex, gemini, pi
    path: Path
    first: int  # --keep-recent-tokens of the first step; halved at each next one
    shell: tuple[str, str] | None = None  # (tool, argument): the patches as a shell runs them (see `patches_run_by`)

    def log(self) -> bytes:
        data = self.path.read_bytes()
        return patches_run_by(data, *self.shell) if self.shell else data


def patches_run_by(log: bytes, tool: str, argument: str) -> bytes:
    """A Codex rollout whose `apply_patch` calls ran as the model also runs them: through the
    shell, `apply_patch <<'PATCH'` as the command of `tool` (`exec_command`'s `cmd`,
    `shell_command`'s `command`), as Codex records such a call (a function call, its output a
    function call output). Nothing else changes."""
    lines = []
    for line in log.splitlines():
        value = json.loads(line) if line.strip() else None
        payload = value.get("payload") if isinstance(value, dict) and value.get("type") == "response_item" else None
        if isinstance(payload, dict) and payload.get("type") == "custom_tool_call" and payload.get("name") == "apply_patch":
            command = f"apply_patch <<'PATCH'\n{payload['input']}PATCH\n"
            value["payload"] = {"type": "function_call", "status": payload.get("status", "completed"), "id": payload.get("id"),
                                "name": tool, "arguments": json.dumps({argument: command}), "call_id": payload["call_id"],
                                **{k: v for k, v in payload.items() if k == "internal_chat_message_metadata_passthrough"}}
        elif isinstance(payload, dict) and payload.get("type") == "custom_tool_call_output":
            value["payload"] = {**payload, "type": "function_call_output"}
        lines.append(line if value is None or value.get("payload") is payload else json.dumps(value, separators=(",", ":")).encode())
    return b"\n".join(lines) + b"\n"


def recorded(agent: str) -> Path:
    return next(iter(sorted(p for p in (RECORDED / agent).glob("*.json*") if p.is_file())), RECORDED / agent / "missing")


SESSIONS = [
    Session("claude-code", "claude-code", recorded("claude-code"), 1500),  # 5 (700 to 1,200: 4)
    Session("codex", "codex", recorded("codex"), 1000),  # 4, then the window is one message (600 to 900: 3)
    Session("gemini", "gemini", recorded("gemini"), 1800),  # 4 (900 to 1,500: 3; 2,000 to 3,000 only prune at first)
    Session("pi", "pi", recorded("pi"), 700),  # 4 (700 to 1,000; 360 to 600 cut 3 times, 300 twice)
    # The same Codex session, its patches run through the shell (exec_command's `cmd`, shell_command's `command`).
    Session("codex-patch-by-exec-command", "codex", recorded("codex"), 1000, ("exec_command", "cmd")),
    Session("codex-patch-by-shell-command", "codex", recorded("codex"), 1000, ("shell_command", "command")),
    # 5 cuts each (pi's large session from 20,000: its last message is big, and from 4,000 the window is one message at step 3).
    Session("corpus-claude-code", "claude-code", CORPUS / "claude-code" / "spotter-session-258c7280-compacted-1863lines.jsonl", 4000),
    Session("corpus-pi", "pi", CORPUS / "trajectories" / "pi-coding-agent-large-session.jsonl", 20000),
]
BY_NAME = {s.name: s for s in SESSIONS}
NAMES = [s.name for s in SESSIONS]


# --- the facts of a log, defined apart from the checkpoint's code ---------------------------------

COMMIT_LINE = re.compile(r"^(?:Output: )?\[(?P<branch>[^\]\s]+)(?: \(root-commit\))? (?P<hash>[0-9a-f]{7,40})\] \S.*$", re.M)
TEST_COMMAND = re.compile(r"\b(?:pytest|py\.test|tox|nox|(?:npm|pnpm|yarn|bun)(?: run)? test|vitest|jest|go test|cargo test|"
                          r"mix test|rspec|make test)\b")
RESULT_LINE = re.compile(
    r"^[=\s]*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)(?:, )?)+(?: in [\d.]+s)?)"  # pytest
    r"|^\s*((?:\d+ (?:doctests?|properties|features?), )*\d+ tests?, \d+ failures?(?:, \d+ \w+)*)"  # mix test, ExUnit
    r"|^\s*(Tests:?\s+(?:\d+ \w+, )*\d+ (?:passed|failed)\b.*)$"  # vitest, jest
    r"|^\s*(test result: .*)$"  # cargo test
    r"|^((?:ok|FAIL)\s+\S+\s+[\d.]+s)$",  # go test
    re.M)
PATCH_FILE = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)
EDIT_TOOLS = frozenset({"edit", "multiedit", "write", "notebookedit", "replace", "write_file", "edit_file", "create_file",
                        "str_replace_editor", "str_replace_based_edit_tool"})
PATH_KEYS = ("file_path", "path", "notebook_path", "filename", "file")
NOT_AN_EDIT = frozenset({"view", "read"})  # an editor tool's verbs that change nothing


def strings(value: Any):
    """Every string in a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def command_of(call: ToolCall) -> str:
    """The command a call runs (`command` or `cmd`, a string or an argv), else ""."""
    if not isinstance(call.input, dict):
        return ""
    value = call.input.get("command", call.input.get("cmd"))
    if isinstance(value, list):
        return " ".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def texts_of_result(result: ToolResult) -> list[str]:
    """A result's text, and the strings in it when it is JSON (an output an agent wraps as an object)."""
    text = result_text(result)
    found = [text]
    if text.lstrip().startswith(("{", "[")):
        try:
            found += list(strings(json.loads(text)))
        except ValueError:
            pass
    return found


REMOVED = re.compile(r"(?:^|[;&|]\s*)rm (?:-\w+ )*([^;&|<>*\n]+)$", re.M)


def edited_files(call: ToolCall) -> list[str]:
    """The files an edit, write or patch call modifies."""
    patches = [s for s in strings(call.input) if "*** Begin Patch" in s or ("*** " in s and call.name == "apply_patch")]
    files = [m.group(1) for patch in patches for m in PATCH_FILE.finditer(patch)]
    if call.name.lower() in EDIT_TOOLS and isinstance(call.input, dict) and call.input.get("command") not in NOT_AN_EDIT:
        files += [call.input[k] for k in PATH_KEYS if isinstance(call.input.get(k), str) and call.input[k].strip()]
    return files


@dataclass(frozen=True)
class Facts:
    commits: tuple[str, ...]  # the hashes
    last_test: str | None  # the result line of the last test run
    files: tuple[str, ...]  # the files modified
    user_words: tuple[str, ...]  # the user's messages, whitespace normalized


def norm(text: str) -> str:
    return " ".join(text.split())


def facts_of(log: bytes, name: str) -> Facts:
    transcript = loads(log, name)
    calls: dict[str, ToolCall] = {}
    commits: list[str] = []
    files: list[str] = []
    last_test: str | None = None
    tested = False
    words = []
    for message in transcript.messages:
        if message.role == "user" and not is_summary_message(message):
            words += [norm(b.text) for b in message.blocks if isinstance(b, Text) and b.text.strip()]
        for block in message.blocks:
            if isinstance(block, ToolCall):
                calls[block.id] = block
            elif isinstance(block, ToolResult) and block.tool_call_id in calls:
                if not block.is_error:  # a failed edit modified nothing; a file `rm` deleted is modified no more
                    files = [*(f for f in files if f not in edited_files(calls[block.tool_call_id])), *edited_files(calls[block.tool_call_id])]
                command = command_of(calls[block.tool_call_id])
                texts = texts_of_result(block)
                if not block.is_error and (removed := REMOVED.search(command)):
                    files = [f for f in files if not any(f == gone or f.endswith("/" + gone) for gone in removed[1].split())]
                if "commit" in command:
                    commits += [m["hash"] for text in texts for m in COMMIT_LINE.finditer(text)]
                if TEST_COMMAND.search(command):
                    tested = True
                    lines = [norm(group) for text in texts for m in RESULT_LINE.finditer(text) for group in m.groups() if group]
                    last_test = lines[-1] if lines else None
    return Facts(tuple(dict.fromkeys(commits)), last_test if tested else None, tuple(dict.fromkeys(files)),
                 tuple(dict.fromkeys(words)))


def readable_text(transcript, user_words: tuple[str, ...] | None = None) -> str:
    """What transcompact reads from a log, as one text: every text, call input and result (thinking
    aside). With `user_words`: without the user's messages, nor any line of a text that only
    quotes them (the summary keeps them verbatim, `> ` before each line)."""
    parts = []
    for message in transcript.messages:
        for block in message.blocks:
            if isinstance(block, Text):
                if user_words is None:
                    parts.append(block.text)
                elif not (message.role == "user" and not is_summary_message(message)):
                    parts += [line for line in block.text.splitlines()
                              if not (quoted := norm(line.removeprefix(">"))) or not any(quoted in w for w in user_words)]
            elif isinstance(block, ToolCall):
                parts += list(strings(block.input))
            elif isinstance(block, ToolResult):
                parts += texts_of_result(block)
    return norm("\n".join(parts))


def kinds(facts: Facts) -> dict[str, tuple[str, ...]]:
    return {"commits": facts.commits, "last test": (facts.last_test,) if facts.last_test else (), "files": facts.files,
            "files as modified": facts.files}


def missing(facts: Facts, transcript) -> dict[str, list[str]]:
    """The facts of `facts` that what transcompact reads from `transcript` does not hold, by kind."""
    text, without_user = readable_text(transcript), readable_text(transcript, facts.user_words)
    modified = modified_in(transcript)
    return {
        "commits": [h for h in facts.commits if h not in text],
        "last test": [t for t in [facts.last_test] if t and t not in text],
        "files": [f for f in facts.files if not names(without_user, f)],
        "files as modified": [f for f in facts.files if not names(modified, f)],
    }


def names(text: str, path: str) -> bool:
    """Whether `text` names the file `path`: itself, not a longer name that ends with it (`test_calc.py`
    is not `calc.py`); an absolute path that ends in `/calc.py` names it."""
    return re.search(r"(?<![\w.-])" + re.escape(norm(path)) + r"(?![\w/-])", text) is not None


def modified_in(transcript) -> str:
    """Where a log says which files were modified: the checkpoint's list of them (its lines under a
    `Files modified` heading, up to the next heading), and the edit, write and patch calls of the window."""
    found = [f for m in transcript.messages for b in m.blocks if isinstance(b, ToolCall) for f in edited_files(b)]
    for message in transcript.messages:
        if is_summary_message(message):
            listing = False
            for line in text_of(message).splitlines():
                if line.startswith("#"):
                    listing = "files modified" in line.lower()
                elif listing:
                    found.append(line)
    return norm("\n".join(found))


# --- the chain --------------------------------------------------------------------------------------


@dataclass
class Step:
    number: int
    keep: int  # --keep-recent-tokens
    report: dict  # compact's --report line
    path: Path  # the output
    log: bytes
    transcript: Any

    @property
    def summaries(self) -> list:
        return [m for m in self.transcript.messages if is_summary_message(m)]

    @property
    def summary(self) -> str:
        return text_of(self.summaries[-1]) if self.summaries else ""

    @property
    def cut(self) -> bool:
        return self.report.get("strategy") == "emergency" and self.report.get("cut") is not None


@dataclass
class Chain:
    session: Session
    original: bytes
    source: Path  # the original, where the chain started
    facts: Facts
    steps: list[Step]


def run_chain(session: Session, where: Path) -> Chain:
    original = session.log()
    start = source = where / session.path.name
    source.write_bytes(original)
    steps = []
    for number in range(1, STEPS + 1):
        keep = session.first >> (number - 1)
        out = where / f"step{number}" / session.path.name  # the agent's own file name (Claude Code's /resume lists it)
        out.parent.mkdir(parents=True)
        report = where / f"step{number}.report.jsonl"
        result = run_cli("compact", "--emergency", "--force", "--keep-recent-tokens", keep, "--checkpoint-tokens",
                         CHECKPOINT_TOKENS, "--keep-user-tokens", USER_TOKENS, "--report", report, "-o", out, "-q", source)
        assert result.exit_code == 0, f"step {number}: {result.stderr}"
        line = json.loads(report.read_text().splitlines()[-1])
        if not out.exists():  # nothing to compact: the log goes on as it is
            assert line["status"] == "unchanged", line
            out.write_bytes(source.read_bytes())
        log = out.read_bytes()
        steps.append(Step(number, keep, line, out, log, loads(log, str(out))))
        source = out
    return Chain(session, original, start, facts_of(original, session.path.name), steps)


@pytest.fixture(scope="session")
def chains(tmp_path_factory):
    """Each session's chain of five compactions, made once (per test process) when a test first asks for it."""
    made: dict[str, Chain] = {}

    def chain(name: str) -> Chain:
        session = BY_NAME[name]
        if not session.path.is_file():
            pytest.skip("the shared corpus is not here" if session.name.startswith("corpus") else f"{session.path} is missing")
        if name not in made:
            made[name] = run_chain(session, tmp_path_factory.mktemp(f"chain-{name}"))
        return made[name]

    return chain


def check_errors(path: Path) -> set[str]:
    """The rules `transcompact check` finds broken in a file (its exit status 1 then, else 0)."""
    result = run_cli("check", "--json", path)
    found = {v["rule"] for f in json.loads(result.stdout)["files"] for v in f["violations"] if v["severity"] == "error"}
    assert result.exit_code == (1 if found else 0), result.stderr
    return found


def where(step: Step) -> str:
    return f"step {step.number} (--keep-recent-tokens {step.keep})"


# --- the tests of the chain ---------------------------------------------------------------------------


def test_the_recorded_sessions_hold_the_facts_the_readme_says():
    """The facts as defined here, of the sessions the agents recorded (tests/recorded/README.md):
    both commits, the last run's `3 passed`, calc.py and test_calc.py modified."""
    for session in SESSIONS[:6]:
        facts = facts_of(session.log(), session.path.name)
        assert len(facts.commits) == 2 and facts.commits[0] == "a149dfb", (session.name, facts.commits)
        assert facts.last_test is not None and facts.last_test.startswith("3 passed in "), (session.name, facts.last_test)
        assert sorted(Path(f).name for f in facts.files) == ["calc.py", "test_calc.py"], (session.name, facts.files)


def test_a_codex_patch_names_its_files_in_every_shape():
    """The facts' own reading of a patch (not the checkpoint's): the files it names, however the call carries it."""
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** Add File: b/c.py\n+z\n*** End Patch\n"
    shell = f"apply_patch <<'PATCH'\n{patch}PATCH\n"
    for name, arguments in (("apply_patch", patch), ("apply_patch", {"input": patch}), ("apply_patch", {"patch": patch}),
                            ("shell", {"command": ["apply_patch", patch]}), ("shell", {"command": ["bash", "-lc", shell]}),
                            ("exec_command", {"cmd": shell}), ("shell_command", {"command": shell})):
        assert edited_files(ToolCall(id="c", name=name, input=arguments)) == ["a.py", "b/c.py"], arguments
    moved = "*** Begin Patch\n*** Update File: old.py\n*** Move to: new.py\n@@\n-x\n+y\n*** End Patch\n"
    assert edited_files(ToolCall(id="c", name="apply_patch", input=moved)) == ["old.py", "new.py"]
    assert edited_files(ToolCall(id="c", name="str_replace_editor", input={"command": "view", "path": "a.py"})) == []
    for session in (BY_NAME["codex-patch-by-exec-command"], BY_NAME["codex-patch-by-shell-command"]):
        calls = [b for m in loads(session.log(), session.path.name).messages for b in m.blocks if isinstance(b, ToolCall)]
        assert [c.name for c in calls if "*** Begin Patch" in json.dumps(c.input)] == [session.shell[0]] * 2


@pytest.mark.parametrize("name", NAMES)
def test_every_step_is_sound(name, chains):
    """Each step's output passes check, holds one summary within its budget, and cut (or had
    nothing left to cut: the window it was given was one message)."""
    chain = chains(name)
    broken = check_errors(chain.source)  # the corpus's Claude Code log has errors of its own (A4, A5)
    cuts = 0
    for step in chain.steps:
        new = check_errors(step.path) - broken
        assert not new, f"{where(step)}: check finds errors the original does not have: {sorted(new)}"
        assert len(step.summaries) == 1, f"{where(step)}: {len(step.summaries)} summaries"
        # Less the marker transcompact's reader puts before a summary it reads from an agent's own compaction entry (pi's).
        size = len(step.summary.removeprefix(SUMMARY_PREFIX))
        assert size * RATIO <= CHECKPOINT_TOKENS + USER_TOKENS, f"{where(step)}: {size} characters"
        previous = chain.steps[step.number - 2] if step.number > 1 else None
        assert step.cut or (previous is not None and previous.report.get("window_messages", 0) <= 1), \
            f"{where(step)} did not cut: {step.report.get('strategy')}, {step.report.get('notes')}"
        cuts += step.cut
    assert cuts >= 3


KINDS = ["commits", "last test", "files", "files as modified"]
# What the current code loses (session, kind) → why, named precisely; fixing the code flips them.
def cases():
    for name in NAMES:
        for kind in KINDS:
            yield pytest.param(name, kind, id=f"{name}-{kind.replace(' ', '-')}")


@pytest.mark.parametrize(("name", "kind"), list(cases()))
def test_every_step_keeps_the_facts_of_the_original(name, kind, chains):
    chain = chains(name)
    wanted = kinds(chain.facts)[kind]
    if not wanted:
        pytest.skip(f"the original holds no {kind}")
    lost = {where(step): gone for step in chain.steps if (gone := missing(chain.facts, step.transcript)[kind])}
    assert not lost, f"{kind} of the original lost: {lost}"


# --- each step resumed by the real agent --------------------------------------------------------------

TIMEOUT = 60
PROMPT = "Carry on from where we stopped."
REPLY = "Carrying on."
DEAD_PROXY = {"HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}


def ran(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env={"PATH": os.environ.get("PATH", ""), **env}, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, f"{Path(command[-1]).name} exited {done.returncode}: {done.stdout[-1000:]}{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="session")
def anthropic_api():
    state, stop = serve_anthropic()
    yield state
    stop()


@pytest.fixture(scope="session")
def responses_api():
    state, stop = serve_responses()
    yield state
    stop()


@pytest.fixture(scope="session")
def gemini_api():
    state, stop = serve_gemini()
    yield state
    stop()


def claude_resumes(log: bytes, where: Path, api: Loopback) -> Any:
    """`claude -p --resume` from a fresh HOME, where Claude Code keeps the project's sessions (as
    tests/test_claude_resume.py does); the one request it sent."""
    home, project = where / "home", where / "project"
    project.mkdir(parents=True)
    project = project.resolve()
    session = next(v["sessionId"] for v in map(json.loads, reversed(log.splitlines()))
                   if isinstance(v.get("sessionId"), str) and isinstance(v.get("uuid"), str))
    sessions = home / ".claude" / "projects" / "".join(c if c.isascii() and c.isalnum() else "-" for c in str(project))
    sessions.mkdir(parents=True)
    (sessions / f"{session}.jsonl").write_bytes(log)
    (home / ".claude.json").write_text(json.dumps({"metricsStatusCache": {"enabled": False, "timestamp": int(time.time() * 1000)}}))
    env = {"HOME": str(home), "TMPDIR": str(where), "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-loopback-dummy",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
           "DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTO_COMPACT": "1"}
    api.answer = Loopback.text(REPLY)
    before = len(api.requests)
    done = ran([*CLAUDE_CODE.command(), "-p", "--resume", session, PROMPT], project, env)
    assert done.stdout.strip() == REPLY
    sent = api.requests[before:]
    assert [r.route for r in sent] == ["/v1/messages"], f"Claude Code asked for {[r.path for r in sent]}"
    return sent[0].body


def codex_resumes(log: bytes, where: Path, api: Responses) -> Any:
    """`codex exec resume` from a fresh CODEX_HOME holding the rollout (as tests/test_codex_resume.py
    does, with the model the session was recorded with); the one request's input."""
    meta = json.loads(log.split(b"\n", 1)[0])["payload"]
    stamp = re.sub(r"[:.]", "-", meta["timestamp"])[:19]
    day = where / "home" / ".codex" / "sessions" / stamp[:4] / stamp[5:7] / stamp[8:10]
    day.mkdir(parents=True)
    (day / f"rollout-{stamp}-{meta['id']}.jsonl").write_bytes(log)
    project = where / "project"
    project.mkdir()
    provider = [f"model_providers.standin.{key}={value}" for key, value in (
        ("name", '"standin"'), ("base_url", f'"{api.url}/v1"'), ("env_key", '"STANDIN_KEY"'), ("wire_api", '"responses"'),
        ("request_max_retries", "0"), ("stream_max_retries", "0"))]
    settings = ["model_provider=standin", *provider, "check_for_update_on_startup=false", "analytics.enabled=false"]
    flags = [a for setting in settings for a in ("-c", setting)]
    flags += ["--disable", "plugins", "--disable", "remote_plugin", "-m", "gpt-5.5", "--skip-git-repo-check", "-s", "danger-full-access"]
    env = {"HOME": str(where / "home"), "CODEX_HOME": str(where / "home" / ".codex"), "TMPDIR": str(where),
           "STANDIN_KEY": "loopback-dummy", **DEAD_PROXY}
    api.answer = Responses.text(REPLY)
    before = len(api.requests)
    done = ran([*CODEX.command(), "exec", *flags, "resume", meta["id"], PROMPT], project, env)
    assert done.stdout.strip() == REPLY
    sent = api.requests[before:]
    assert [r.route for r in sent] == ["/v1/responses"], f"Codex asked for {[r.path for r in sent]}"
    return sent[0].body["input"]


GEMINI_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "telemetry": {"enabled": False},
                   "privacy": {"usageStatisticsEnabled": False},
                   "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}


def gemini_resumes(log: bytes, where: Path, api) -> Any:
    """`gemini --resume` from a fresh HOME, where Gemini keeps the project's chats (as
    tests/test_gemini_resume.py does); the one turn's request."""
    home, project = where / "home", where / "project"
    chats = home / ".gemini" / "tmp" / "project" / "chats"
    project.mkdir(parents=True)
    chats.mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(project): "project"}}))
    (home / ".gemini" / "tmp" / "project" / ".project_root").write_text(str(project))
    session = json.loads(log.split(b"\n", 1)[0])["sessionId"]
    (chats / f"session-2026-01-01T00-00-{session[:8]}.jsonl").write_bytes(log)
    api.reply = REPLY
    before = len(api.requests)
    env = {"HOME": str(home), "TMPDIR": str(where), "GOOGLE_GEMINI_BASE_URL": api.url, "GEMINI_API_KEY": "loopback-dummy",
           **DEAD_PROXY}
    ran([*GEMINI_CLI.command(), "--skip-trust", "--yolo", "--resume", session, "-p", PROMPT], project, env)
    sent = api.requests[before:]
    unknown = [r.path for r in sent if not r.route.endswith((":generateContent", ":streamGenerateContent"))]
    assert not unknown, f"Gemini asked for {unknown}"
    turns = [r.body for r in sent if is_turn(r)]
    assert len(turns) == 1, f"{len(turns)} turns sent"
    return turns[0]


def pi_resumes(log: bytes, where: Path, api: Loopback) -> Any:
    """`pi --session FILE -p` from a fresh agent directory, its model the stand-in (as
    tests/test_pi_resume.py does); the one request it sent."""
    agent, project, home = where / "agent", (where / "project"), where / "home"
    for directory in (agent, project, home):
        directory.mkdir(parents=True)
    project = project.resolve()
    models = {"providers": {"standin": {"baseUrl": api.url, "api": "anthropic-messages", "apiKey": "sk-standin", "models": [
        {"id": "claude-standin", "input": ["text", "image"], "reasoning": True, "contextWindow": 1_000_000, "maxTokens": 8192}]}}}
    (agent / "models.json").write_text(json.dumps(models))
    (agent / "settings.json").write_text(json.dumps({"compaction": {"enabled": False}}))
    header, rest = log.split(b"\n", 1)
    log = json.dumps({**json.loads(header), "cwd": str(project)}).encode() + b"\n" + rest  # pi refuses a cwd that is not there
    session = agent / "sessions" / "--standin-project--" / "session.jsonl"
    session.parent.mkdir(parents=True)
    session.write_bytes(log)
    env = {"HOME": str(home), "TMPDIR": str(where), "PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1", "PI_TELEMETRY": "0",
           **DEAD_PROXY}
    api.answer = Loopback.text(REPLY)
    before = len(api.requests)
    done = ran([*PI.command(), "--provider", "standin", "--model", "claude-standin", "--no-extensions", "--no-skills",
                "--no-prompt-templates", "--no-context-files", "--session", str(session), "-p", PROMPT], project, env)
    assert done.stdout.strip() == REPLY
    sent = api.requests[before:]
    assert [r.route for r in sent] == ["/v1/messages"], f"pi asked for {[r.path for r in sent]}"
    return sent[0].body


RESUMES = {"claude-code": (claude_resumes, "anthropic_api"), "codex": (codex_resumes, "responses_api"),
           "gemini": (gemini_resumes, "gemini_api"), "pi": (pi_resumes, "anthropic_api")}
AGENTS = {"claude-code": CLAUDE_CODE, "codex": CODEX, "gemini": GEMINI_CLI, "pi": PI}


@pytest.mark.parametrize("number", range(1, STEPS + 1), ids=lambda n: f"step{n}")
@pytest.mark.parametrize("name", NAMES)
def test_the_agent_resumes_the_step(name, number, chains, request, tmp_path):
    """The step's output resumed by the agent that wrote the log: it accepts it, sends one request,
    and that request holds the summary (its longest line) and every fact of the original that the
    output holds."""
    session = BY_NAME[name]
    AGENTS[session.agent].command()  # skips when the agent is not installed
    chain = chains(name)
    step = chain.steps[number - 1]
    if step.log == (chain.steps[number - 2].log if number > 1 else chain.original):
        pytest.skip(f"{where(step)} left the log as it was (nothing left to cut): resumed at the step before")
    resume, server = RESUMES[session.agent]
    sent = norm("\n".join(strings(resume(step.log, tmp_path, request.getfixturevalue(server)))))
    longest = max(step.summary.splitlines(), key=len)
    assert norm(longest) in sent, f"{where(step)}: the summary is not sent"
    lost = missing(chain.facts, step.transcript)
    for kind, facts in kinds(chain.facts).items():
        not_sent = [fact for fact in facts if fact not in lost[kind]
                    and not (names(sent, fact) if kind.startswith("files") else norm(fact) in sent)]
        assert not not_sent, f"{where(step)}: {kind} in the output but not sent: {not_sent}"
