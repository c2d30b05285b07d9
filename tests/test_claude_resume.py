"""The real client is the judge: `claude -p --resume` on our compacted Claude Code logs.

The real Claude Code CLI (npm `@anthropic-ai/claude-code`, pinned below) loads a log from a
fresh HOME and sends the conversation to the loopback server, and the test reads the request
Claude Code built. For a log that `transcompact compact --emergency --force` compacted (once, and
twice), the request must:
- start with our summary: the `isCompactSummary` line's text;
- hold the kept window after it, as transcompact reads it: the same messages, calls, results
  and texts, once Claude Code's own additions are set aside (`<system-reminder>` blocks, the
  note it adds to an interrupted turn, the "No response requested." sentinel, the new prompt);
- hold nothing from before our compact boundary;
- answer every `tool_use` in the next message, and send no `tool_use` id twice.
The uncompacted original is resumed too, as a control. And a log over Claude Code's blocking
limit, which it refuses to send, is sent once pruned below it (prune restates the usage Claude
Code judges its context by). A log `transcompact slim` made smaller is sent as the original is,
request for request, and Claude Code goes on working from it: it edits a file the session read.

Claude Code runs offline: `ANTHROPIC_BASE_URL` points at the loopback, the key is a dummy, and
telemetry, auto-update, auto-compact and other nonessential traffic are off. It is installed by
`make agents` (tests/npm_agent.py: pinned, `CLAUDE_CODE_VERSION` picks another release); without it,
or without node, the tests skip, except under `CI=true`, where they install it with npm (and fail if
they cannot).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from transcompact import loads
from transcompact.cli.main import cli
from transcompact.dialects import anthropic as codec

from .builders import assert_counted_as_sent
from .conftest import CORPUS, FIXTURES
from .loopback import Loopback, count_tokens_of
from .npm_agent import CLAUDE_CODE, CLAUDE_CODE_RECORDED, at_release

TIMEOUT = 60  # seconds for one `claude -p` run: 1 to 3 in practice
PROMPT = "Carry on from where we stopped."
REPLY = "Carrying on."
# Claude Code's own additions to what a log holds (2.1.332 `qYn`, its note `_Sr`; cli.js 2.1.112
# `K77`): the note after an interrupted turn, and the assistant sentinel after a final user turn.
CONTINUE = "Continue from where you left off."
NO_RESPONSE = "No response requested."
OFFLINE = {  # no traffic but to the loopback; nothing the tests do not ask for
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTO_COMPACT": "1",  # the request as the log loads, not Claude Code's own compaction of it
}


@pytest.fixture(scope="session")
def claude() -> list[str]:
    """The command that runs Claude Code; skips when it cannot (under CI=true it installs it, or fails)."""
    return CLAUDE_CODE.command()


# --- running it --------------------------------------------------------------------------


@dataclass
class Resumed:
    """What one `claude -p --resume` run sent."""

    body: dict  # the /v1/messages request
    messages: list[dict]  # its messages, each content as a list of blocks


def session_of(log: bytes) -> str:
    """The session `--resume` is asked for: the last transcript line's (our copies keep it)."""
    for line in reversed(log.splitlines()):
        value = json.loads(line) if line.strip() else {}
        if isinstance(value.get("sessionId"), str) and isinstance(value.get("uuid"), str):
            return value["sessionId"]
    raise AssertionError("the log names no session")


def project_dir(cwd: Path) -> str:
    """Claude Code's directory for a project under ~/.claude/projects (2.1.332 `J$`, cli.js 2.1.112 `AP`)."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in str(cwd))


def resume(claude: list[str], log: bytes, where: Path, api: Loopback, env: dict[str, str] | None = None) -> Resumed:
    """Put `log` where Claude Code keeps the sessions of a project, in a fresh HOME; resume it there
    with one prompt (`env`: more of Claude Code's variables); return the one request it sent."""
    done, sent = run_resumed(claude, log, where, api, env or {})
    assert done.returncode == 0, f"claude exited {done.returncode}: {done.stdout[-1000:]}{done.stderr[-2000:]}"
    assert done.stdout.strip() == REPLY
    assert [r.route for r in sent] == ["/v1/messages"], f"Claude Code asked for {[r.path for r in sent]}"
    body = sent[0].body
    # From 2026-11-30 Claude Code 2.1.332 puts messages of its own among the conversation's, of
    # role `system`: one that sets the turn's effort (no content), after the first user message,
    # and its environment (working directory, platform) after the prompt. No line of the log
    # holds them, as none holds its system prompt: they are set aside with it (`body` keeps them).
    messages = [{**m, "content": [{"type": "text", "text": m["content"]}] if isinstance(m["content"], str) else m["content"]}
                for m in body["messages"] if m["role"] != "system"]
    return Resumed(body, messages)


def run_resumed(claude: list[str], log: bytes, where: Path, api: Loopback, env: dict[str, str],
                answer: Any = None, args: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, list]:
    """One `claude -p --resume` run on `log` in a fresh HOME: how it ended, and the requests it sent
    (`answer`: how the stand-in answers, by default with the reply; `args`: more of Claude Code's flags)."""
    home, cwd = where / "home", (where / "project")
    cwd.mkdir(parents=True, exist_ok=True)  # a test may have put files there
    cwd = cwd.resolve()
    assert len(project_dir(cwd)) <= 200  # longer names get a hash suffix
    session = session_of(log)
    sessions = home / ".claude" / "projects" / project_dir(cwd)
    sessions.mkdir(parents=True)
    (sessions / f"{session}.jsonl").write_bytes(log)
    # A fresh "metrics are off" answer, or it asks api.anthropic.com for one on exit.
    (home / ".claude.json").write_text(json.dumps({"metricsStatusCache": {"enabled": False, "timestamp": int(time.time() * 1000)}}))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "TMPDIR": str(where),
           "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-ant-loopback-dummy", **OFFLINE, **env}
    api.answer = answer or Loopback.text(REPLY)
    before = len(api.requests)
    done = subprocess.run([*claude, "-p", *args, "--resume", session, PROMPT], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    return done, api.requests[before:]


# --- reading what it sent ----------------------------------------------------------------


def is_reminder(block: dict) -> bool:
    """A block Claude Code adds of its own (context, date, skills): no line of the log holds it."""
    return block.get("type") == "text" and block["text"].lstrip().startswith("<system-reminder>")


def texts(message: dict) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text" and not is_reminder(b)]


def calls(message: dict) -> tuple[str, ...]:
    return tuple(b["id"] for b in message["content"] if b.get("type") in ("tool_use", "server_tool_use"))


def results(message: dict) -> dict[str, str]:
    return {b["tool_use_id"]: json.dumps(b.get("content")) for b in message["content"] if b.get("type") == "tool_result"}


def assert_pairs(messages: list[dict]) -> None:
    """Every tool_use answered in the next message, every tool_result answering the previous one, no id twice."""
    ids = [i for m in messages for i in calls(m)]
    assert len(ids) == len(set(ids)), f"a tool_use id is sent twice: {sorted({i for i in ids if ids.count(i) > 1})[:3]}"
    for index, message in enumerate(messages):
        if message["role"] == "assistant" and calls(message):
            following = messages[index + 1] if index + 1 < len(messages) else {"role": None, "content": []}
            assert following["role"] == "user" and set(calls(message)) <= set(results(following)), \
                f"message {index}: a tool_use without its tool_result in the next message"
        if message["role"] == "user" and results(message):
            previous = messages[index - 1] if index else {"content": []}
            assert set(results(message)) <= set(calls(previous)), f"message {index}: a tool_result without its tool_use"


def as_api(log: bytes) -> list[dict]:
    """The messages transcompact reads from a log: what it says `claude --resume` sends."""
    return [{"role": m.role, "content": codec.write_content(m.blocks, False)} for m in loads(log, "session.jsonl").messages]


def differences(log: bytes, sent: list[dict], *, control: bool = False) -> list[str]:
    """How Claude Code's request differs from our reading of `log`, its own additions set aside; [] when it does not.

    `control` (an original log) allows what transcompact's reader is known to do otherwise:
    parallel calls of one response whose lines are not all on the chain come in file order
    (Claude Code puts those off the chain after those on it), and a `system` line of subtype
    `local_command` on the chain is not read (Claude Code sends its text as a user message).
    """
    ours = as_api(log)
    extra = Counter()  # texts Claude Code may send that we do not read
    if control:
        extra.update(v["content"].strip() for v in lines_of(log) if v.get("subtype") == "local_command" and isinstance(v.get("content"), str))
    problems = []
    tail = sent[len(ours):]
    if tail and tail[0]["role"] == "assistant" and texts(tail[0]) == [NO_RESPONSE]:
        tail = tail[1:]
    if len(tail) != 1 or tail[0]["role"] != "user" or texts(tail[0])[-1:] != [PROMPT]:
        problems.append(f"{len(sent)} messages sent for {len(ours)} read; the last ones: {[texts(m)[:1] for m in sent[len(ours):]][:4]}")
    for index, (mine, theirs) in enumerate(zip(ours, sent)):
        where = f"message {index} ({theirs['role']})"
        if mine["role"] != theirs["role"]:
            problems.append(f"{where}: read as {mine['role']}")
            continue
        if (sorted(calls(mine)) != sorted(calls(theirs))) if control else (calls(mine) != calls(theirs)):
            problems.append(f"{where}: calls {calls(theirs)} sent, {calls(mine)} read")
        if results(mine) != results(theirs):
            problems.append(f"{where}: results {sorted(results(theirs))} sent, {sorted(results(mine))} read (or their content differs)")
        read = Counter(t.strip() for t in texts(mine) if t.strip())
        seen = Counter(t.strip() for t in texts(theirs) if t.strip() and t.strip() != CONTINUE) - extra
        if read != seen:
            problems.append(f"{where}: texts {[t[:80] for t in seen - read][:2]} sent, {[t[:80] for t in read - seen][:2]} read")
    return problems


def lines_of(log: bytes) -> list[dict]:
    return [json.loads(line) for line in log.splitlines() if line.strip()]


def assert_resumed_from_our_boundary(log: bytes, resumed: Resumed) -> None:
    """The request starts with our summary and holds nothing the lines before our boundary hold alone."""
    lines = lines_of(log)
    boundary = max(i for i, v in enumerate(lines) if v.get("type") == "system" and v.get("subtype") == "compact_boundary")
    summary = lines[boundary + 1]
    assert summary.get("isCompactSummary") is True and summary["parentUuid"] == lines[boundary]["uuid"]
    first = resumed.messages[0]
    assert first["role"] == "user" and texts(first)[0].rstrip("\n") == summary["message"]["content"], "the request does not start with our summary"
    assert summary["message"]["content"].count("This session is being continued from a previous conversation") == 1

    def ids(values: list[dict]) -> set[str]:
        blocks = [b for v in values if isinstance(v.get("message"), dict) and isinstance(v["message"].get("content"), list)
                  for b in v["message"]["content"] if isinstance(b, dict)]
        return {b.get("id") or b.get("tool_use_id") for b in blocks if b.get("type") in ("tool_use", "tool_result")}

    before_only = ids(lines[:boundary]) - ids(lines[boundary:])
    sent = {i for m in resumed.messages for i in (*calls(m), *results(m))}
    assert not sent & before_only, f"calls from before our boundary are sent: {sorted(sent & before_only)[:3]}"
    kept = {b["text"].strip() for v in lines[boundary:] if isinstance(v.get("message"), dict)
            for b in (v["message"]["content"] if isinstance(v["message"]["content"], list) else [{"type": "text", "text": v["message"]["content"]}])
            if isinstance(b, dict) and b.get("type") == "text"}
    stray = [t for m in resumed.messages for t in texts(m) if t.strip() and t.strip() not in kept | {PROMPT, CONTINUE, NO_RESPONSE}]
    assert not stray, f"texts no line after our boundary holds are sent: {[t[:80] for t in stray[:2]]}"


# --- the logs ----------------------------------------------------------------------------

SESSION = "7f3e9b2a-4c1d-4e8f-9a6b-2d5c8e1f0a3b"
OUTPUT = "".join(f"{n:4d}  lib/shop/orders.ex: def total(order), do: Enum.sum(order.lines)\n" for n in range(60))


def synthetic_log() -> bytes:
    """A log as Claude Code 2.1 writes one: six rounds of a prompt, a response whose text and two
    parallel calls are three lines (one `message.id`), each result a line under the line of its call
    (so the first result hangs off the chain, as in real logs), progress lines, a closing answer."""
    lines, second = [], 0

    def add(kind: str, parent: str | None, **fields) -> str:
        nonlocal second
        second += 1
        uid = f"00000000-0000-4000-8000-{len(lines):012d}"
        lines.append({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ada/shop",
                      "sessionId": SESSION, "version": "2.1.112", "gitBranch": "main", "type": kind, "uuid": uid,
                      "timestamp": f"2026-11-02T09:{second // 60:02d}:{second % 60:02d}.000Z", **fields})
        return uid

    def response(parent: str, number: int, block: dict) -> str:
        return add("assistant", parent, requestId=f"req_{number:04d}", message={
            "id": f"msg_{number:04d}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [block], "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 40,
                                                              "cache_read_input_tokens": 20_000 + 1_100 * number}})

    leaf = None
    lines.append({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}, "isSnapshotUpdate": False})
    for n in range(6):
        leaf = add("user", leaf, message={"role": "user", "content": f"Round {n}: check orders.ex and the tests of step {n}."})
        leaf = response(leaf, 2 * n, {"type": "text", "text": f"Looking at step {n}."})
        first = response(leaf, 2 * n, {"type": "tool_use", "id": f"toolu_{n}a", "name": "Read", "input": {"file_path": "lib/shop/orders.ex"}})
        second_call = response(first, 2 * n, {"type": "tool_use", "id": f"toolu_{n}b", "name": "Bash", "input": {"command": f"mix test --only step{n}"}})
        add("progress", second_call, data={"type": "bash_progress", "output": "running"}, toolUseID=f"toolu_{n}b")
        add("user", first, sourceToolAssistantUUID=first, toolUseResult={"type": "text"},
            message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}a", "content": OUTPUT}]})
        leaf = add("user", second_call, sourceToolAssistantUUID=second_call, toolUseResult={"stdout": "ok"},
                   message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{n}b",
                                                         "content": f"step {n}: 12 tests, {n} failures\n" + OUTPUT}]})
        leaf = response(leaf, 2 * n + 1, {"type": "text", "text": f"Step {n} has {n} failures in orders.ex."})
    return b"".join(json.dumps(v, separators=(",", ":")).encode() + b"\n" for v in lines)


# (name, --keep-recent-tokens of the first compaction, of the second): small logs of the shared
# corpus that compaction cuts in two, each different: parallel calls and an interrupted turn; a
# session that used subagents; one with microcompact boundaries and a compaction of Claude Code's
# own; one Claude Code had compacted itself.
LOGS = [
    ("synthetic", 5000, 2500),
    ("spotter-tool-heavy.jsonl", 2800, 1000),  # its recorded usage counts 0.38 tokens a character
    ("spotter-subagent-session.jsonl", 5000, 2000),
    ("entire-cli-session-839b35f7-microcompact-and-compact.jsonl", 5000, 2000),
    ("spotter-session-8463c716-compacted-1593lines.jsonl", 5000, 2000),
]
NAMES = [name for name, *_ in LOGS]


def original(name: str) -> bytes:
    if name == "synthetic":
        return synthetic_log()
    path = CORPUS / "claude-code" / name
    if not path.is_file():
        pytest.skip("the shared corpus is not here")
    return path.read_bytes()


def compact(log: bytes, keep: int) -> bytes:
    """`transcompact compact --emergency --force` on a log, as a user runs it."""
    result = CliRunner().invoke(cli, ["compact", "--emergency", "--force", "-q", "--keep-recent-tokens", str(keep)],
                                input=log, prog_name="transcompact")
    assert result.exit_code == 0, result.output
    out = result.stdout_bytes
    assert out.startswith(log.rstrip(b"\n")), "the original lines are not kept"
    assert out.count(b'"subtype":"compact_boundary"') > log.count(b'"subtype":"compact_boundary"'), "nothing was compacted"
    return out


@functools.cache
def compacted(name: str, times: int) -> bytes:
    """The log compacted once, or that compacted again."""
    once, twice = next(keep for n, *keep in LOGS if n == name)
    return compact(original(name), once) if times == 1 else compact(compacted(name, 1), twice)


# --- the tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_the_original_resumes_as_we_read_it(name, claude, api, tmp_path):
    """The control: Claude Code sends the uncompacted log as transcompact reads it."""
    log = original(name)
    resumed = resume(claude, log, tmp_path, api)
    assert_pairs(resumed.messages)
    assert differences(log, resumed.messages, control=True) == []


@pytest.mark.parametrize("times", [1, 2], ids=["once", "twice"])
@pytest.mark.parametrize("name", NAMES)
def test_a_compacted_log_resumes_from_our_summary(name, times, claude, api, tmp_path):
    log = compacted(name, times)
    resumed = resume(claude, log, tmp_path, api)
    assert_resumed_from_our_boundary(log, resumed)
    assert_pairs(resumed.messages)
    assert differences(log, resumed.messages) == []
    if times == 2:  # the first summary is merged into the second, never sent beside it
        once = lines_of(compacted(name, 1))
        first_summary = next(v for v in reversed(once) if v.get("isCompactSummary"))["message"]["content"]
        assert not any(first_summary in t for m in resumed.messages for t in texts(m))
        assert sum("This session is being continued" in t for m in resumed.messages for t in texts(m)) == 1


def test_the_judge_sees_the_originals_pulled_back_in(claude, api, tmp_path):
    """The copies need their own `message.id`: with the originals' ids, Claude Code gathers the
    lines before the boundary back into the copied responses (README, "Claude Code logs"), and
    this test's checks see it."""
    log = compacted("synthetic", 1)
    lines = lines_of(log)
    boundary = max(i for i, v in enumerate(lines) if v.get("subtype") == "compact_boundary")
    id_of = {json.dumps(v["message"]["content"]): v["message"]["id"] for v in lines[:boundary] if v.get("type") == "assistant"}
    copies = [v for v in lines[boundary:] if v.get("type") == "assistant"]
    assert copies and all(v["message"]["id"] != id_of[json.dumps(v["message"]["content"])] for v in copies)
    for value in copies:  # each line of the synthetic log is unique: its copy is found by its content
        value["message"]["id"] = id_of[json.dumps(value["message"]["content"])]
    broken = b"".join(json.dumps(v, separators=(",", ":")).encode() + b"\n" for v in lines)
    resumed = resume(claude, broken, tmp_path, api)
    problems = differences(broken, resumed.messages)
    assert problems and all("texts" in p and "sent, [] read" in p for p in problems)  # each copied text twice


def test_a_pruned_log_is_sent_where_the_original_was_refused(claude, api, tmp_path):
    """Claude Code refuses to send a context at its blocking limit (set here by its
    CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE), which it judges by the usage the last response recorded
    plus its estimate of what follows. The original is over the limit and refused; pruned below it,
    it is sent as we read it: prune restated that usage (left as it was, it still counted what
    prune took out, and Claude Code refused the pruned log too)."""
    log = original("spotter-session-8463c716-compacted-1593lines.jsonl")  # 132,649 tokens; pruned, 91,687
    limit = {"CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE": "110000"}
    done, sent = run_resumed(claude, log, tmp_path / "original", api, limit)
    assert sent == [] and done.returncode != 0 and "too long" in (done.stdout + done.stderr).lower(), done.stdout[-500:]
    result = CliRunner().invoke(cli, ["prune", "-q"], input=log, prog_name="transcompact")
    assert result.exit_code == 0, result.output
    pruned = result.stdout_bytes
    resumed = resume(claude, pruned, tmp_path / "pruned", api, limit)
    assert_pairs(resumed.messages)
    assert differences(pruned, resumed.messages, control=True) == []


# --- slim ------------------------------------------------------------------------------------


def _slimmable() -> list[str]:
    """Every corpus log Claude Code resumes (a subagent's log, all sidechain, it does not; nor a
    log whose session id is no UUID), and the fixtures."""
    fixtures = sorted(p.name for p in FIXTURES.joinpath("claude-code").glob("*.jsonl"))
    corpus = sorted(p.name for p in CORPUS.joinpath("claude-code").glob("*.jsonl")) if CORPUS.is_dir() else []
    unresumable = ("subagent-a", "subagent-afc", "compaction-agent", "schema-fixture")
    return [f"fixtures/{n}" for n in fixtures] + [n for n in corpus if not any(word in n for word in unresumable)]


def _as_sent(body: Any) -> Any:
    """A request as Claude Code built it, less what it makes anew on every run (its metadata, cache markers)."""
    if isinstance(body, dict):
        return {k: _as_sent(v) for k, v in body.items() if k not in ("metadata", "cache_control")}
    if isinstance(body, list):
        return [_as_sent(v) for v in body]
    return body


@pytest.mark.parametrize("name", _slimmable())
def test_a_slimmed_log_is_sent_as_the_original(name, claude, api, tmp_path):
    log = (FIXTURES / "claude-code" / name.removeprefix("fixtures/")).read_bytes() if name.startswith("fixtures/") else original(name)
    result = CliRunner().invoke(cli, ["slim", "-q"], input=log, prog_name="transcompact")
    assert result.exit_code == 0, result.output
    slimmed = result.stdout_bytes
    assert len(slimmed) <= len(log)
    sent = []
    for which in (log, slimmed):  # in the same directory: its path is in the system prompt
        for made in ("home", "project"):
            shutil.rmtree(tmp_path / made, ignore_errors=True)
        sent.append(_as_sent(resume(claude, which, tmp_path, api).body))
    assert sent[1] == sent[0]


NUMBERED = re.compile(r"^\s*\d+[\u2192\t](.*)$")  # a line of a Read's result: its number, an arrow, the line


def last_full_read(log: bytes) -> tuple[str, str] | None:
    """(path, content) of the last file the session Read whole, as its result shows it (Claude Code
    rebuilds what it may edit from these on resume), or None."""
    transcript = loads(log, "log.jsonl")
    reads = {b.id: b.input["file_path"] for m in transcript.messages for b in m.tool_calls
             if b.name == "Read" and isinstance(b.input, dict) and isinstance(b.input.get("file_path"), str)
             and "offset" not in b.input and "limit" not in b.input}
    found = None
    for message in transcript.messages:
        for result in message.tool_results:
            if result.tool_call_id in reads and isinstance(result.content, str) and not result.is_error:
                text = re.sub(r"<system-reminder>[\s\S]*?</system-reminder>", "", result.content)
                lines = text.split("\n")
                if lines and NUMBERED.match(lines[0]):
                    content = "\n".join(m.group(1) if (m := NUMBERED.match(x)) else x for x in lines).strip()
                    found = (reads[result.tool_call_id], content)
    return found


def _read_whole() -> list[str]:
    """The corpus logs Claude Code resumes that read a file whole (of 11, 7)."""
    return [n for n in _slimmable() if not n.startswith("fixtures/") and last_full_read(original(n)) is not None]


@pytest.mark.parametrize("name", _read_whole())
def test_a_slimmed_log_goes_on_working(name, claude, api, tmp_path):
    """Resumed from the slimmed log, Claude Code edits a file the session read before (it rebuilds
    what it may edit from the Read calls, their results and their lines' times): the stand-in asks
    for the Edit, and Claude Code runs it."""
    log = original(name)
    read = last_full_read(log)
    assert read is not None
    path, content = read
    unique = [line for line in content.split("\n") if len(line.strip()) > 3 and content.count(line) == 1]
    assert unique, "no line of the file read is there once"
    project = (tmp_path / "project").resolve()
    moved = str(project / "files") + (path if path.startswith("/") else "/" + path)  # the file, where this run can edit it
    log = log.replace(json.dumps(path)[1:-1].encode(), json.dumps(moved)[1:-1].encode())
    result = CliRunner().invoke(cli, ["slim", "-q"], input=log, prog_name="transcompact")
    assert result.exit_code == 0, result.output
    Path(moved).parent.mkdir(parents=True)
    Path(moved).write_text(content)
    os.utime(moved, (946684800, 946684800))  # older than the Read: Claude Code does not see it as changed since
    old = unique[len(unique) // 2]
    edit = Loopback.call_then_text("Edit", {"file_path": moved, "old_string": old, "new_string": old + " # edited"}, REPLY)
    done, sent = run_resumed(claude, result.stdout_bytes, tmp_path, api, {}, edit, ("--permission-mode", "acceptEdits"))
    assert len(sent) == 2, f"{len(sent)} requests: {done.stdout[-500:]}{done.stderr[-500:]}"
    answered = [b for m in sent[1].body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == "toolu_loopback"]
    assert answered and not answered[0].get("is_error"), answered
    assert old + " # edited" in Path(moved).read_text()


# --- the ground truth --------------------------------------------------------------------
# The stand-in's count of the request Claude Code really sends on resume (its system prompt, tools
# and messages: loopback.py `count_tokens_of`) against `estimate` of the file it resumed. The
# session of tests/recorded/ recorded that count as its usage, so it is resumed by the release that
# recorded it: the pinned release sends another system prompt and other tools (some 3,000 tokens
# fewer). The corpus logs recorded the real API's counts, of other releases, and the synthetic
# log's usage is made up: neither is a count of what the stand-in counts.

RECORDED_LOG = next(iter(sorted((Path(__file__).parent / "recorded" / "claude-code").glob("*.jsonl"))), None)
# (how, --keep-recent-tokens of each compaction): the session holds some 3,500 tokens besides its
# system prompt and tools; 800 compacts it with a summary, 400 compacts that again.
AS_RECORDED = [("as-recorded", ()), ("compacted", (800,)), ("compacted-twice", (800, 400))]


@pytest.fixture(scope="session")
def recorder() -> list[str]:
    """The Claude Code release that recorded tests/recorded/claude-code/ (npm_agent.CLAUDE_CODE_RECORDED)."""
    return at_release(CLAUDE_CODE, CLAUDE_CODE_RECORDED).command()


@pytest.mark.parametrize("how", [how for how, _ in AS_RECORDED])
def test_estimate_counts_what_claude_code_sends(how, recorder, api, tmp_path):
    """`estimate` of the recorded session, and of it compacted, is within 5 % of what the stand-in
    counts of the request Claude Code sends when it resumes that file, system prompt and tools included."""
    assert RECORDED_LOG is not None, "tests/recorded/claude-code/ holds no session"
    log = RECORDED_LOG.read_bytes()
    for keep in dict(AS_RECORDED)[how]:
        log = compact(log, keep)
    resumed = resume(recorder, log, tmp_path, api)
    assert_counted_as_sent(loads(log, f"{session_of(log)}.jsonl"), count_tokens_of(resumed.body))
