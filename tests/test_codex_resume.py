"""The real client is the judge: `codex exec resume` on our compacted Codex CLI rollouts.

The real Codex CLI (npm `@openai/codex`, pinned in tests/npm_agent.py) loads a rollout from a fresh
CODEX_HOME and sends the conversation to a loopback stand-in of the Responses API
(tests/standin_responses.py); the test reads the request Codex built. The rollouts are of two kinds:
sessions Codex recorded itself in a scratch project against the stand-in, whose scripted answers
call tools (several at once) that Codex really runs, with reasoning: a tool loop over four turns,
the same session after Codex compacted it itself and went on, a fork of it (a paginated rollout
whose history starts in its parent's file), and the tool loop as a legacy rollout (no ordinals);
and the Codex rollout of the shared corpus. Each is compacted by `transcompact compact --emergency
--force` once, twice (shrinking windows) and with `--slim`, and resumed with a new prompt
(the corpus rollout sends some 30 tokens after an encrypted compaction: there is nothing to
compact, and compact leaves it as it is). The request must:
- be what transcompact reads from the file, item for item, once Codex's own additions are set
  aside (its base instructions first; the developer and environment context it adds, and the new
  prompt, last) and the pairing Codex repairs silently before it sends (a call whose item does not
  parse, its output) is accounted for: the file's own view, as transcompact reads it, must pass
  `check`;
- hold exactly one summary (Codex's prefix), and the kept window's last assistant text;
- answer every call, and answer nothing that was not called;
- send nothing more often than the uncompacted rollout's request does, and fewer tokens;
- leave Codex with no warning the control does not give (`RUST_LOG=warn`), a paginated rollout's
  ordinals whole.
The uncompacted original is resumed too, as the control. A rollout `transcompact slim` made
smaller is sent as the original is.

Those resume from a fresh CODEX_HOME, where Codex has indexed nothing yet. The rollouts a user
rewrites sit in the CODEX_HOME that recorded them, whose thread-history database indexes each by
its bytes (formats/codex/thread_store.py): so a session is also recorded, rewritten there in place
(`prune`, `compact` by pruning alone and by appending, `repair`; -i, and -o onto it) and resumed
there, and Codex must warn of nothing, send what transcompact reads from the file and keep every
turn in its own history of the thread; a rewrite that would change what a fork reads of its parent
is refused.

Codex runs offline: a custom provider points at the stand-in, plugins, analytics and update checks
are off, and a dead `HTTPS_PROXY` stops anything else. Without the CLI, or without node, the tests
skip, except under `CI=true`, where they install it with npm (and fail if they cannot).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from transcompact import check, estimate, loads
from transcompact.cli.main import cli
from transcompact.formats.codex.reader import CODEX_SUMMARY_START
from transcompact.ops.validity.check import errors

from .builders import assert_counted_as_sent
from .conftest import CORPUS
from .loopback import RESPONSES_KEYS, count_tokens_of
from .npm_agent import CODEX
from .standin_responses import (
    Response,
    Responses,
    Script,
    function_call,
    message,
    reasoning,
    serve,
    text_of,
)

TIMEOUT = 60  # seconds for one `codex exec` run: under 1 in practice
PROMPT = "Carry on from where we stopped."
REPLY = "Carrying on."
PROVIDER = "standin"
# Codex's own additions at the end of a request: the context it injects at a turn's start.
CONTEXT_OPENINGS = ("<environment_context>", "<skills_instructions>", "<permissions instructions>")
# What Codex says whatever the rollout: of the model the stand-in names, and now and then as it
# exits before its last write of the rollout is flushed.
NOISE = ("Unknown model gpt-5", "failed to flush rollout after emitting terminal turn event")


@pytest.fixture(scope="session")
def codex() -> list[str]:
    """The command that runs Codex; skips when it cannot (under CI=true it installs it, or fails)."""
    return CODEX.command()


@pytest.fixture(scope="session")
def standin():
    state, stop = serve()
    yield state
    stop()


# --- running it --------------------------------------------------------------------------


@dataclass
class Run:
    """What one `codex exec` run sent and said."""

    inputs: list[list[dict]]  # the `input` of each model request, in order
    warnings: list[str]  # its WARN and ERROR lines, the variable parts left out
    stdout: str
    sent: list[int] = field(default_factory=list)  # the stand-in's count of each request (its instructions, tools and input)


def codex_command(codex: list[str], standin: Responses, *args: str) -> list[str]:
    return [*codex, "exec", "-c", f"model_provider={PROVIDER}", "-c", f'model_providers.{PROVIDER}.name="{PROVIDER}"',
            "-c", f'model_providers.{PROVIDER}.base_url="{standin.url}/v1"',
            "-c", f'model_providers.{PROVIDER}.env_key="STANDIN_KEY"', "-c", f'model_providers.{PROVIDER}.wire_api="responses"',
            "-c", f"model_providers.{PROVIDER}.request_max_retries=0", "-c", f"model_providers.{PROVIDER}.stream_max_retries=0",
            "-c", "check_for_update_on_startup=false", "-c", "analytics.enabled=false", "--disable", "plugins",
            "--disable", "remote_plugin", "-m", "gpt-5", "--skip-git-repo-check", "-s", "danger-full-access", *args]


def run_codex(codex: list[str], standin: Responses, home: Path, cwd: Path, *args: str,
              fails: bool = False) -> subprocess.CompletedProcess | Run:
    """One `codex exec` run with `home` as its HOME and CODEX_HOME; what it sent and said (what it
    printed, when it is expected to fail)."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "CODEX_HOME": str(home / ".codex"), "TMPDIR": str(home),
           "STANDIN_KEY": "loopback-dummy", "RUST_LOG": "warn",
           "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}
    before = len(standin.requests)
    done = subprocess.run(codex_command(codex, standin, *args), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    if fails:
        assert done.returncode != 0, "codex did not fail"
        return done
    assert done.returncode == 0, f"codex exited {done.returncode}: {done.stdout[-1000:]}{done.stderr[-3000:]}"
    sent = standin.requests[before:]
    assert all(r.route == "/v1/responses" for r in sent), f"Codex asked for {[r.path for r in sent]}"
    return Run([r.body["input"] for r in sent], warnings_in(done.stderr), done.stdout,
               [count_tokens_of(r.body, RESPONSES_KEYS) for r in sent])


def warnings_in(stderr: str) -> list[str]:
    """Codex's WARN and ERROR log lines, each as its module and message without the ids and paths in it."""
    found = []
    for level, target, text in re.findall(r"^\S+Z\s+(WARN|ERROR) (\S+?): (.*)$", stderr, re.MULTILINE):
        if not text.startswith(NOISE):
            found.append(f"{level} {target}: {re.split(r'[`=/:]', text, maxsplit=1)[0].strip()}")
    return found


def rollout_name(log: bytes) -> str:
    """The file name Codex gives a rollout (it finds a rollout by the id that ends it)."""
    meta = json.loads(log.split(b"\n", 1)[0])["payload"]
    stamp = re.sub(r"[:.]", "-", meta["timestamp"])[:19]
    return f"rollout-{stamp}-{meta['id']}.jsonl"


def placed(root: Path, logs: list[bytes]) -> Path:
    """A fresh CODEX_HOME holding `logs` where Codex keeps rollouts; the first one's path."""
    day = root / "home" / ".codex" / "sessions" / "2026" / "11" / "26"
    day.mkdir(parents=True)
    for log in logs:
        (day / rollout_name(log)).write_bytes(log)
    return day / rollout_name(logs[0])


@dataclass
class Resumed:
    """What `codex exec resume` sent for a rollout: its one request's input, and its warnings."""

    items: list[dict]
    warnings: list[str]
    path: Path  # where the rollout was


def resume(codex: list[str], standin: Responses, logs: list[bytes], where: Path, cwd: Path) -> Resumed:
    """Resume the first of `logs` (a fork's parents follow it) from a fresh CODEX_HOME with one prompt."""
    path = placed(where, logs)
    meta = json.loads(logs[0].split(b"\n", 1)[0])["payload"]
    standin.answer = Responses.text(REPLY)
    done = run_codex(codex, standin, where / "home", cwd, "resume", meta["id"], PROMPT)
    assert done.stdout.strip() == REPLY
    assert len(done.inputs) == 1, f"Codex sent {len(done.inputs)} requests"
    return Resumed(done.inputs[0], done.warnings, path)


# --- reading what it sent ----------------------------------------------------------------


def normal(item: dict) -> dict:
    """An item as Codex sends it: the fields it keeps only in the rollout left out, and its `id`
    (which Codex leaves out when it is not one of the API's)."""
    return {k: v for k, v in item.items() if k not in ("internal_chat_message_metadata_passthrough", "id")}


def key(item: dict) -> str:
    return json.dumps(normal(item), sort_keys=True)


def is_addition(item: dict) -> bool:
    """A context item Codex adds at the start of a turn (no line of the rollout holds it)."""
    return item.get("type") == "message" and item.get("role") in ("developer", "user") and \
        text_of(item).lstrip().startswith(CONTEXT_OPENINGS)


def is_summary(item: dict) -> bool:
    return item.get("type") == "message" and item.get("role") == "user" and text_of(item).startswith(CODEX_SUMMARY_START)


def conversation(resumed: Resumed, system: str) -> list[dict]:
    """The request's items of the rollout: its base instructions (first: `session_meta.base_instructions`,
    less the sections of tools it does not offer) and Codex's additions and the prompt (last) set aside."""
    items = list(resumed.items)
    assert items[0].get("role") == "developer" and text_of(items[0])[:500] == system[:500], \
        "the base instructions do not come first"
    assert items[-1].get("role") == "user" and text_of(items[-1]) == PROMPT
    items = items[1:-1]
    while items and is_addition(items[-1]):
        items.pop()
    return items


CALLS = ("function_call", "custom_tool_call", "local_shell_call")
OUTPUTS = ("function_call_output", "custom_tool_call_output")


def assert_paired(items: list[dict]) -> None:
    """Every call answered after it, every output answering a call before it, no call id twice."""
    calls = [i["call_id"] for i in items if i.get("type") in CALLS]
    assert len(calls) == len(set(calls)), "a call id is sent twice"
    seen = set()
    for item in items:
        if item.get("type") in CALLS:
            seen.add(item["call_id"])
        elif item.get("type") in OUTPUTS:
            assert item["call_id"] in seen, f"an output answers no call before it: {item['call_id']}"
    answered = {i["call_id"] for i in items if i.get("type") in OUTPUTS}
    assert set(calls) <= answered, f"calls without an output: {sorted(set(calls) - answered)[:3]}"


def read_view(log: bytes, path: Path) -> tuple[list[dict], str]:
    """What transcompact reads from a rollout: its active items and system prompt; the view must pass check."""
    transcript = loads(log, str(path))
    assert errors(check(transcript)) == [], f"transcompact's view of the file is not valid: {errors(check(transcript))[:2]}"
    system = "".join(b.text for b in transcript.system)
    return [item.value for item in transcript.source.items], system


def repaired_by_codex(read: list[dict], sent: list[dict]) -> set[str]:
    """The call ids whose pairing Codex repaired before sending: a call it dropped (an item it cannot
    parse), an output it dropped (its call is gone) or added (`aborted`, for a call with none)."""
    def pairing(items: list[dict]) -> Counter:
        return Counter((i["type"] in CALLS, i.get("call_id")) for i in items if i.get("type") in CALLS + OUTPUTS)
    return {call_id for _, call_id in (pairing(read) - pairing(sent)) + (pairing(sent) - pairing(read))}


def differences(read: list[dict], sent: list[dict]) -> list[str]:
    """How the request differs from transcompact's reading, the pairing Codex repairs set aside; [] when it does not."""
    repaired = repaired_by_codex(read, sent)
    ours = [key(i) for i in read if i.get("call_id") not in repaired]
    theirs = [key(i) for i in sent if i.get("call_id") not in repaired]
    if ours == theirs:
        return []
    at = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    sent_there, read_there = (theirs[at][:160] if at < len(theirs) else None), (ours[at][:160] if at < len(ours) else None)
    return [f"{len(theirs)} items sent for {len(ours)} read; first difference at {at}: sent {sent_there}, read {read_there}"]


def last_assistant_text(items: list[dict]) -> str:
    return next(text_of(i) for i in reversed(items) if i.get("type") == "message" and i.get("role") == "assistant"
                and text_of(i).strip())


# --- the rollouts --------------------------------------------------------------------------


def ex(call_id: str, command: str) -> dict:
    return function_call(call_id, "exec_command", {"cmd": command})


# Each turn: the responses Codex gets, in order (it runs the calls of one response in parallel).
TURNS = [
    [Response((reasoning("Read both notes."), ex("call_1a", "cat a.txt"), ex("call_1b", "cat b.txt"))),
     Response((message("a.txt says alpha, b.txt says beta."),))],
    [Response((reasoning("Number the lines."), ex("call_2a", "seq 1 400"), ex("call_2b", "seq 401 800"),
               ex("call_2c", "ls -la"))),
     Response((ex("call_2d", "wc -l a.txt b.txt"),)),
     Response((message("Counted 800 numbers; a.txt and b.txt have one line each."),))],
    [Response((reasoning("Write the numbers out."), ex("call_3a", "seq 1 300 > c.txt && wc -l c.txt"),
               ex("call_3b", "seq 1000 1350"))),
     Response((message("c.txt holds 300 lines."),))],
    [Response((reasoning("Check the new file."), ex("call_4a", "tail -n 3 c.txt"), ex("call_4b", "seq 2000 2300"))),
     Response((message("The last lines of c.txt are 298 to 300."),))],
]
# After Codex compacted the session itself (before a turn that only answers), two more turns.
AFTER_COMPACTION = [
    [Response((reasoning("Look again."), ex("call_5a", "seq 5000 5400"), ex("call_5b", "head -n 2 c.txt"))),
     Response((message("c.txt starts with 1 and 2."),))],
    [Response((reasoning("Once more."), ex("call_6a", "seq 6000 6400"), ex("call_6b", "wc -c c.txt"))),
     Response((ex("call_6c", "seq 6500 6700"),)),
     Response((message("c.txt holds 1092 bytes."),))],
]
SUMMARY_OF_CODEX = "Codex's own summary: the notes say alpha and beta, c.txt holds 300 numbers."


@dataclass
class Recorded:
    """The rollouts Codex recorded, and where they can be resumed from."""

    logs: dict[str, list[bytes]]  # name → the rollout, then its parents
    project: Path


@dataclass
class Recording:
    """A CODEX_HOME in which the real Codex records sessions against the stand-in, in a scratch
    project (its `a.txt` and `b.txt`, which the scripted calls read)."""

    codex: list[str]
    standin: Responses
    home: Path  # HOME; CODEX_HOME is its .codex
    project: Path

    @classmethod
    def start(cls, codex: list[str], standin: Responses, root: Path) -> Recording:
        home, project = root / "home", root / "project"
        (home / ".codex").mkdir(parents=True)
        project.mkdir()
        (project / "a.txt").write_text("alpha\n")
        (project / "b.txt").write_text("beta\n")
        return cls(codex, standin, home, project)

    @property
    def sessions(self) -> Path:
        return self.home / ".codex" / "sessions"

    def rollouts(self) -> set[Path]:
        return set(self.sessions.rglob("rollout-*.jsonl"))

    def turn(self, responses: list[Response], *args: str) -> Run:
        """One `codex exec` run, the model's answers scripted."""
        self.standin.answer = script = Script(list(responses), SUMMARY_OF_CODEX)
        run = run_codex(self.codex, self.standin, self.home, self.project, *args)
        assert not script.responses, f"Codex asked for {len(responses) - len(script.responses)} of {len(responses)} responses"
        return run

    def tool_loop(self) -> Path:
        """A new session of four turns (the tool loop); its rollout."""
        before = self.rollouts()
        self.turn(TURNS[0], "Turn 0: read the notes.")
        (session,) = self.rollouts() - before
        for number, script in enumerate(TURNS[1:], 1):
            self.turn(script, "resume", thread_of(session.read_bytes()), f"Turn {number}: go on.")
        return session

    def compacted_by_codex(self, session: Path) -> None:
        """The session compacted by Codex itself before a fifth turn (its auto-compaction at a low
        limit), then two more turns."""
        thread = thread_of(session.read_bytes())
        # A limit the history is over: Codex compacts it before the turn (and the turn's answer stays under it).
        self.turn([Response((message("Summed up."),))], "-c", "model_auto_compact_token_limit=6000", "resume", thread,
                  "Turn 4: sum up.")
        assert session.read_bytes().count(b'"type":"compacted"') == 1, "Codex did not compact (once)"
        for number, script in enumerate(AFTER_COMPACTION, 5):
            self.turn(script, "resume", thread, f"Turn {number}: go on.")

    def fork(self, session: Path) -> Path:
        """A fork of the session and one turn in it; the fork's rollout."""
        before = self.rollouts()
        self.turn([Response((reasoning("Branch off."), ex("call_7a", "seq 7000 7300"))),
                   Response((message("Forked and counted."),))], "fork", thread_of(session.read_bytes()), "Turn 7: a fork.")
        (fork,) = self.rollouts() - before
        assert b'"history_base"' in fork.read_bytes()
        return fork

    def resume(self, rollout: Path) -> Run:
        """The rollout resumed here, in the CODEX_HOME that recorded it, with one prompt."""
        self.standin.answer = Responses.text(REPLY)
        done = run_codex(self.codex, self.standin, self.home, self.project, "resume", thread_of(rollout.read_bytes()), PROMPT)
        assert done.stdout.strip() == REPLY
        assert len(done.inputs) == 1, f"Codex sent {len(done.inputs)} requests"
        return done


def thread_of(log: bytes) -> str:
    """A rollout's thread id (its `session_meta.id`)."""
    return json.loads(log.split(b"\n", 1)[0])["payload"]["id"]


@pytest.fixture(scope="session")
def recorded(codex, standin, tmp_path_factory) -> Recorded:
    """Codex's own sessions, recorded once: the tool loop (four turns), the same after Codex
    compacted it itself before a fifth (its auto-compaction at a low limit) and two more, a fork of
    that; the tool loop as a legacy rollout; the corpus rollout."""
    recording = Recording.start(codex, standin, tmp_path_factory.mktemp("codex-recorded"))
    session = recording.tool_loop()
    tool_loop = session.read_bytes()
    recording.compacted_by_codex(session)
    codex_compacted = session.read_bytes()
    fork = recording.fork(session).read_bytes()
    assert session.read_bytes() == codex_compacted
    return Recorded({"tool-loop": [tool_loop], "codex-compacted": [codex_compacted], "forked": [fork, codex_compacted],
                     "legacy": [as_legacy(tool_loop)], "corpus": [corpus_log()]}, recording.project)


def as_legacy(log: bytes) -> bytes:
    """A rollout as Codex wrote them before it paginated them: `history_mode: "legacy"`, no ordinals."""
    values = json_lines(log)
    values[0]["payload"]["history_mode"] = "legacy"
    return b"".join(json.dumps({k: v for k, v in value.items() if k != "ordinal"}, separators=(",", ":")).encode() + b"\n"
                    for value in values)


CORPUS_FILE = CORPUS / "other" / "codex-cli-rollout-small.jsonl"


def corpus_log() -> bytes:
    """The corpus rollout with a header Codex 0.171 reads. The file is a fixture of line shapes
    taken from several rollouts: its first `session_meta` holds placeholders that 0.171 refuses
    (`history_mode: "default"`, a `dynamic_tools` object), and the `session_meta` lines of the
    other rollouts are `[trimmed for fixture]`. So the first is made a plain legacy header of the
    same id, cwd and instructions, for the stand-in's provider, and the others go (transcompact
    reads no `session_meta` but the first)."""
    if not CORPUS_FILE.is_file():
        return b""
    lines = CORPUS_FILE.read_bytes().split(b"\n")
    first = json.loads(lines[0])
    meta = first["payload"]
    first["payload"] = {**{k: meta[k] for k in ("id", "timestamp", "cwd", "originator", "cli_version", "base_instructions")},
                        "source": "cli", "model_provider": PROVIDER, "history_mode": "legacy"}
    rest = [line for line in lines[1:] if b'"type":"session_meta"' not in line[:80]]
    return b"\n".join([json.dumps(first, separators=(",", ":")).encode(), *rest])


# (name, --keep-recent-tokens of the first compaction, of the second)
LOGS = [("tool-loop", 1500, 700), ("codex-compacted", 600, 300), ("forked", 1200, 500), ("legacy", 1500, 700)]
NAMES = [name for name, *_ in LOGS]


def compact(logs: list[bytes], keep: int, where: Path, *flags: str):
    """`transcompact compact --emergency --force` on a rollout where Codex keeps it (a fork's
    parents beside it), as a user runs it."""
    path = placed(where, logs)
    return CliRunner().invoke(cli, ["compact", "--emergency", "--force", "--keep-recent-tokens", str(keep), *flags,
                                    str(path)], prog_name="transcompact")


@dataclass
class Judge:
    """The recorded rollouts, compacted and resumed once each however many tests ask."""

    codex: list[str]
    standin: Responses
    recorded: Recorded
    workdir: Path
    compactions: dict[tuple[str, int], list[bytes]] = field(default_factory=dict)
    controls: dict[str, Resumed] = field(default_factory=dict)

    def rollout(self, name: str) -> list[bytes]:
        logs = self.recorded.logs[name]
        if not logs[0]:
            pytest.skip("the shared corpus is not here")
        return logs

    def resume(self, logs: list[bytes], where: Path) -> Resumed:
        return resume(self.codex, self.standin, logs, where, self.recorded.project)

    def compacted(self, name: str, times: int) -> list[bytes]:
        """The rollout compacted once, or that compacted again (a fork's parents after it)."""
        if (name, times) not in self.compactions:
            once, twice = next(keep for n, *keep in LOGS if n == name)
            logs = self.rollout(name) if times == 1 else self.compacted(name, 1)
            result = compact(logs, once if times == 1 else twice, self.workdir / f"{name}-{times}")
            assert result.exit_code == 0, result.output
            out = result.stdout_bytes
            assert out.startswith(logs[0].rstrip(b"\n")), "the original lines are not kept"
            self.compactions[name, times] = [out, *logs[1:]]
        return self.compactions[name, times]

    def control(self, name: str) -> Resumed:
        """The uncompacted rollout resumed: what the compacted ones are measured against."""
        if name not in self.controls:
            self.controls[name] = self.resume(self.rollout(name), self.workdir / f"control-{name}")
        return self.controls[name]


@pytest.fixture(scope="session")
def judge(codex, standin, recorded, tmp_path_factory) -> Judge:
    return Judge(codex, standin, recorded, tmp_path_factory.mktemp("codex-judged"))


def assert_ordinals_whole(log: bytes) -> None:
    """A paginated rollout numbers every line, from its first line's ordinal on, with no gap."""
    values = json_lines(log)
    if values[0]["payload"].get("history_mode") != "paginated":
        assert not any("ordinal" in v for v in values[-3:]), "ordinals in a legacy rollout"
        return
    ordinals = [v.get("ordinal") for v in values]
    assert ordinals == list(range(ordinals[0], ordinals[0] + len(values))), "the ordinals are not whole"


def json_lines(log: bytes) -> list[dict]:
    return [json.loads(line) for line in log.split(b"\n") if line.strip()]


def sent_length(resumed: Resumed) -> int:
    """The characters of what Codex sent, its home's path (in the skills' roots) aside."""
    home = str(resumed.path.parents[5])  # <home>/.codex/sessions/YYYY/MM/DD/rollout-….jsonl
    return len(json.dumps(resumed.items).replace(home, "HOME"))


def assert_resumed_from_our_summary(logs: list[bytes], resumed: Resumed, control_run: Resumed) -> None:
    read, system = read_view(logs[0], resumed.path)
    sent = conversation(resumed, system)
    assert_paired(sent)
    assert not repaired_by_codex(read, sent), "Codex repaired the pairing of what we wrote"
    assert differences(read, sent) == []
    summaries = [i for i in sent if is_summary(i)]
    assert len(summaries) == 1, f"{len(summaries)} summaries sent"
    assert not any(i.get("role") == "assistant" and text_of(i) == "I have the context. Let's continue." for i in sent)
    assert last_assistant_text(sent) == last_assistant_text(read) == last_assistant_text(control_run.items)
    once = Counter(key(i) for i in control_run.items)
    more = [k for k, n in Counter(key(i) for i in resumed.items).items() if k in once and n > once[k]]
    assert not more, f"sent more often than the control sends it: {[k[:120] for k in more[:2]]}"
    assert sent_length(resumed) < sent_length(control_run), "no fewer tokens than the control"
    assert set(resumed.warnings) <= set(control_run.warnings), f"new warnings: {set(resumed.warnings) - set(control_run.warnings)}"
    assert_ordinals_whole(logs[0])


# --- the tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*NAMES, "corpus"])
def test_the_original_resumes_as_we_read_it(name, judge):
    """The control: Codex sends the uncompacted rollout as transcompact reads it."""
    resumed = judge.control(name)
    read, system = read_view(judge.rollout(name)[0], resumed.path)
    sent = conversation(resumed, system)
    assert_paired(sent)
    assert differences(read, sent) == []
    assert sum(map(is_summary, sent)) == sum(map(is_summary, read))


@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
@pytest.mark.parametrize("name", NAMES)
def test_a_compacted_rollout_resumes_from_our_summary(name, times, judge, tmp_path):
    logs = judge.compacted(name, times)
    resumed = judge.resume(logs, tmp_path)
    assert_resumed_from_our_summary(logs, resumed, judge.control(name))
    if times == 2:  # the first summary is merged into the second, never sent beside it
        first = next(v for v in reversed(json_lines(judge.compacted(name, 1)[0])) if v["type"] == "compacted")
        assert not any(first["payload"]["message"] in text_of(i) for i in resumed.items)


@pytest.mark.parametrize("name", NAMES)
def test_compact_slim(name, judge, tmp_path):
    """Compacted and slimmed (a legacy rollout keeps its session lines and the compaction; a
    paginated one what Codex reads, numbered again): it resumes as one compacted once."""
    logs = judge.rollout(name)
    once = next(keep for n, keep, _ in LOGS if n == name)
    result = compact(logs, once, tmp_path / "compact", "--slim")
    assert result.exit_code == 0, result.output
    dropped = [result.stdout_bytes, *logs[1:]]
    assert len(dropped[0]) < len(judge.compacted(name, 1)[0])
    resumed = judge.resume(dropped, tmp_path / "resume")
    assert_resumed_from_our_summary(dropped, resumed, judge.control(name))


def without_ids(items: list[dict]) -> list[dict]:
    """Items less their ids: Codex numbers the context and prompt it adds anew on every run."""
    return [{k: v for k, v in item.items() if k != "id"} for item in items]


@pytest.mark.parametrize("name", [*NAMES, "corpus"])
def test_a_slimmed_rollout_is_sent_as_the_original(name, judge, tmp_path):
    logs = judge.rollout(name)
    path = placed(tmp_path / "slim", logs)
    result = CliRunner().invoke(cli, ["slim", "-q", str(path)], prog_name="transcompact")
    assert result.exit_code == 0, result.output
    slimmed = [result.stdout_bytes, *logs[1:]]
    assert len(slimmed[0]) <= len(logs[0])
    assert_ordinals_whole(slimmed[0])
    where = tmp_path / "resume"  # the same CODEX_HOME for both: its path is in what Codex sends
    control = judge.resume(logs, where)
    shutil.rmtree(where)
    resumed = judge.resume(slimmed, where)
    assert without_ids(resumed.items) == without_ids(control.items)
    assert set(resumed.warnings) <= set(control.warnings)


@pytest.mark.parametrize("flags", [(), ("--slim",)], ids=["compact", "slim"])
def test_the_corpus_rollout_has_nothing_to_compact(flags, judge, tmp_path):
    """What Codex sends of the corpus rollout starts at an encrypted `compaction` item of its last
    `compacted` line (the API reads nothing before it): some 30 tokens, which no summary makes
    smaller. So compact leaves the file as it is, as often as it runs (with --slim, slimmed)."""
    log = judge.rollout("corpus")[0]
    result = compact([log], 20, tmp_path, *flags)
    assert result.exit_code == 0 and "nothing to compact" in result.stderr
    if flags:  # what Codex does not read goes all the same
        assert len(result.stdout_bytes) < len(log)
    else:
        assert result.stdout_bytes == log


def test_the_judge_refuses_a_line_without_its_ordinal(judge, tmp_path):
    """What the judge catches: the lines we append to a paginated rollout without their ordinals
    (as transcompact wrote them before) make Codex refuse the rollout."""
    log = judge.compacted("tool-loop", 1)[0]
    original = judge.rollout("tool-loop")[0]
    unnumbered = original + b"".join(
        re.sub(rb'"ordinal":\d+,', b"", line) + b"\n" for line in log[len(original):].split(b"\n") if line.strip())
    placed(tmp_path, [unnumbered])
    thread = json_lines(log)[0]["payload"]["id"]
    done = run_codex(judge.codex, judge.standin, tmp_path / "home", judge.recorded.project, "resume", thread, PROMPT,
                     fails=True)
    assert "is missing an ordinal" in done.stderr


# --- in place, in the CODEX_HOME that recorded the rollout ------------------------------------
#
# Codex 0.171 projects a paginated rollout into its thread-history database as it writes it: per
# thread, the byte offset and ordinal of the next line to read, and the turns and items of the lines
# before it (formats/codex/thread_store.py). A resume in a fresh CODEX_HOME, as above, starts with no
# projection; these rewrite a rollout where Codex keeps it, as a user does, and resume it there.

THREAD_HISTORY = "thread_history_1.sqlite"


def projection(recording: Recording, thread: str) -> tuple[int, int] | None:
    """Where Codex's projection of the thread stands: the byte offset and ordinal of its next line."""
    with contextlib.closing(sqlite3.connect(recording.home / ".codex" / THREAD_HISTORY)) as db:
        return db.execute("SELECT next_rollout_byte_offset, next_rollout_ordinal FROM thread_history_projection_state "
                          "WHERE thread_id = ?", (thread,)).fetchone()


def prompts_shown(recording: Recording, thread: str) -> list[str]:
    """The user's messages in the history Codex keeps of the thread for its UI (thread/items), in order."""
    with contextlib.closing(sqlite3.connect(recording.home / ".codex" / THREAD_HISTORY)) as db:
        rows = db.execute("SELECT item_json FROM thread_items WHERE thread_id = ? AND item_type = 'userMessage' "
                          "ORDER BY rollout_ordinal", (thread,)).fetchall()
    return ["".join(part.get("text", "") for part in json.loads(item)["content"]) for (item,) in rows]


def assert_projected_whole(recording: Recording, rollout: Path, rewritten: bytes) -> None:
    """Codex's projection of the rollout ends at a line of the file, with the ordinal after that
    line's, and covers at least what transcompact wrote."""
    log = rollout.read_bytes()
    offset, ordinal = projection(recording, thread_of(log)) or (0, 0)
    assert len(rewritten) <= offset <= len(log) and log[:offset].endswith(b"\n"), \
        f"the projection stops at byte {offset} of {len(log)}, not after a line"
    assert json.loads(log[:offset].rstrip().rsplit(b"\n", 1)[-1])["ordinal"] == ordinal - 1


def damaged(log: bytes, call_id: str) -> bytes:
    """The rollout without the output of one call, its later lines numbered down (a file another
    tool damaged, its ordinals whole): what `repair` puts right."""
    out, shift = [], 0
    for line in log.split(b"\n"):
        value = json.loads(line) if line.strip() else None
        if value and value["type"] == "response_item" and value["payload"].get("call_id") == call_id \
                and value["payload"]["type"] == "function_call_output":
            shift += 1
            continue
        if value and shift:
            line = line.replace(b'"ordinal":%d,' % value["ordinal"], b'"ordinal":%d,' % (value["ordinal"] - shift), 1)
        out.append(line)
    return b"\n".join(out)


# (id, the command's arguments before the file, whether its output keeps every byte of the input)
IN_PLACE = [
    ("prune", ["prune", "--hard-clear-after", "2", "-i"], False),
    ("prune-o-onto-it", ["prune", "--hard-clear-after", "2", "-o", "{rollout}"], False),
    ("prune-o-from-a-copy", ["prune", "--hard-clear-after", "2", "-o", "{rollout}"], False),
    # A target 300 tokens under the session's: pruning alone (some 900 fewer) brings it under.
    ("compact-by-pruning-alone", ["compact", "--emergency", "--force", "--threshold", "{threshold}", "-i"], False),
    ("compact", ["compact", "--emergency", "--force", "--keep-recent-tokens", "1500", "-i"], True),
    ("repair", ["repair", "-i"], False),
    ("slim", ["slim", "-i"], False),  # its original archived beside it, where Codex keeps its rollouts
]


@pytest.mark.parametrize(("flags", "appends"), [(flags, appends) for _, flags, appends in IN_PLACE],
                         ids=[name for name, *_ in IN_PLACE])
def test_a_rollout_rewritten_in_place_resumes_in_its_home(flags, appends, codex, standin, tmp_path, request):
    """Recorded by Codex, rewritten where Codex keeps it (-i, or -o onto it), resumed in the same
    CODEX_HOME: Codex says nothing of its projection (no "malformed rollout line", no "missing
    rollout ordinal range", no "durable rollout shrank"), sends what transcompact reads from the
    file, and the history it keeps of the thread holds every turn, the one just resumed too.
    A compaction, which only appends, leaves the projection as Codex made it."""
    recording = Recording.start(codex, standin, tmp_path / "recorded")
    rollout = recording.tool_loop()
    original = rollout.read_bytes()
    thread = thread_of(original)
    source = rollout
    if request.node.callspec.id == "repair":
        rollout.write_bytes(damaged(original, "call_2d"))
    elif request.node.callspec.id == "prune-o-from-a-copy":
        source = tmp_path / "copy.jsonl"
        source.write_bytes(original)
    before = projection(recording, thread)
    assert before is not None, "Codex keeps no projection of the rollout it recorded"
    threshold = estimate(loads(rollout.read_bytes(), str(rollout))).tokens - 300
    result = CliRunner().invoke(cli, [*(f.format(rollout=rollout, threshold=threshold) for f in flags), str(source)],
                                prog_name="transcompact")
    assert result.exit_code == 0, result.output
    rewritten = rollout.read_bytes()
    assert rewritten != original and rewritten.startswith(original.rstrip(b"\n")) == appends
    if appends:
        assert projection(recording, thread) == before
    run = recording.resume(rollout)
    assert run.warnings == [], f"Codex warned: {run.warnings}"
    read, system = read_view(rewritten, rollout)
    sent = conversation(Resumed(run.inputs[0], run.warnings, rollout), system)
    assert_paired(sent)
    assert differences(read, sent) == []
    assert_projected_whole(recording, rollout, rewritten)
    assert prompts_shown(recording, thread) == [*(f"Turn {n}: go on." if n else "Turn 0: read the notes."
                                                  for n in range(len(TURNS))), PROMPT]
    assert_counted_as_sent(loads(rewritten, str(rollout)), run.sent[0])  # the ground truth


@pytest.mark.parametrize("how", ["tool-loop", "compacted-by-codex"])
def test_estimate_counts_what_codex_sends(how, codex, standin, tmp_path):
    """The ground truth: `estimate` of a rollout Codex recorded (the tool loop, or the same after
    Codex compacted it itself and went on) is within 5 % of what the stand-in counts of the request
    Codex sends when it resumes that file in its home (the rewrites above are held to it too).
    From another CODEX_HOME, Codex sends its skills' instructions again (their root is another path):
    some 600 tokens the file does not hold, so that estimate of a rollout the judge resumes is 3.6
    to 4.9 % under what Codex sends (tests/recorded/codex/'s, of gpt-5.5: 1,200 tokens, 10 % under)."""
    recording = Recording.start(codex, standin, tmp_path)
    rollout = recording.tool_loop()
    if how == "compacted-by-codex":
        recording.compacted_by_codex(rollout)
    log = rollout.read_bytes()
    assert_counted_as_sent(loads(log, str(rollout)), recording.resume(rollout).sent[0])


def test_the_parent_of_a_fork_is_not_rewritten_under_it(codex, standin, tmp_path):
    """A fork reads its parent's lines below the parent's size when it forked: a rewrite that
    changes them is refused (exit 2) and the file left as it was, so that the fork still resumes;
    a compaction of the parent, which only appends, goes ahead, and the fork resumes too."""
    recording = Recording.start(codex, standin, tmp_path)
    parent = recording.tool_loop()
    fork = recording.fork(parent)
    before = parent.read_bytes()
    result = CliRunner().invoke(cli, ["prune", "--hard-clear-after", "2", "-i", str(parent)], prog_name="transcompact")
    assert result.exit_code == 2, result.output
    assert f"{fork.name} is a fork of this one" in result.output
    assert parent.read_bytes() == before
    result = CliRunner().invoke(cli, ["compact", "--emergency", "--force", "--keep-recent-tokens", "1500", "-i",
                                      str(parent)], prog_name="transcompact")
    assert result.exit_code == 0 and parent.read_bytes().startswith(before.rstrip(b"\n")), result.output
    run = recording.resume(fork)
    assert run.warnings == [], f"Codex warned: {run.warnings}"
    assert last_assistant_text(run.inputs[0]) == "Forked and counted."
    assert run.inputs[0][-1]["role"] == "user" and text_of(run.inputs[0][-1]) == PROMPT


@pytest.mark.parametrize("name", NAMES)
def test_codex_goes_on_working_from_a_slimmed_rollout(name, judge, tmp_path):
    """Resumed from the slimmed rollout, Codex runs the command the stand-in asks for next, in the
    project the session worked in, and sends its output."""
    logs = judge.rollout(name)
    path = placed(tmp_path / "slim", logs)
    result = CliRunner().invoke(cli, ["slim", "-q", str(path)], prog_name="transcompact")
    assert result.exit_code == 0, result.output
    placed(tmp_path / "resume", [result.stdout_bytes, *logs[1:]])
    meta = json.loads(result.stdout_bytes.split(b"\n", 1)[0])["payload"]
    judge.standin.answer = Script([Response((ex("call_went_on", "cat a.txt"),)), Response((message(REPLY),))])
    run = run_codex(judge.codex, judge.standin, tmp_path / "resume" / "home", judge.recorded.project, "resume", meta["id"], PROMPT)
    assert run.stdout.strip() == REPLY and len(run.inputs) == 2, f"Codex sent {len(run.inputs)} requests"
    outputs = [item for item in run.inputs[1] if item.get("type") == "function_call_output" and item.get("call_id") == "call_went_on"]
    assert outputs and "alpha" in json.dumps(outputs[0])
