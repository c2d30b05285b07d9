"""The real client is the judge: `gemini --resume` on our compacted Gemini CLI chats.

The real Gemini CLI (npm `@google/gemini-cli`, pinned in tests/npm_agent.py) loads a chat from a
fresh HOME and sends the conversation to a loopback stand-in of the Gemini API
(tests/standin_gemini.py); the test reads the request Gemini built. The chats are of two kinds:
sessions Gemini recorded itself in a scratch project against the stand-in, whose scripted answers
call tools (two at once, too) that Gemini really runs, with thoughts (one of them also as a legacy
`.json` document that names no `projectHash`, which Gemini resumes all the same); and the Gemini
chats of the shared corpus (legacy `.json` documents). Each is compacted by `transcompact compact --emergency
--force` once, twice (shrinking windows) and, for a JSON Lines log, with `--slim`, and
resumed with a new prompt. The request must:
- be what transcompact reads from the file (the same turns, texts, calls and results, each as
  often), once Gemini's own additions are set aside (its `<session_context>` text, the new prompt,
  its note after a turn that ended on tool results);
- hold exactly one summary, and the kept window's last model text;
- answer every `functionCall` in the next turn, and answer nothing that the turn before did not call;
- send nothing more often than the uncompacted log's request does, and fewer tokens.
The uncompacted original is resumed too, as the control.

Gemini 0.61 records a tool result twice: inside its call (`toolCalls[].result`) and as a user
record holding the `functionResponse`; it sends both, in one user turn. So does transcompact count
them: its estimate of a chat Gemini recorded (anchored on the usage the stand-in reported, or
fitted to it) is what the stand-in counts of the request that resumes it. What a resume records
depends on the clock: one that starts in the minute the chat's file is named for first writes its
new session into that file and then records the history without `toolCalls`; one in a later minute
keeps them, each call of a parallel pair then holding both calls' responses (see `relaunched`).

Gemini runs offline: `GOOGLE_GEMINI_BASE_URL` points at the stand-in, the key is a dummy, telemetry,
usage statistics and auto-update are off, and a dead `HTTPS_PROXY` stops anything else. Without the
CLI, or without node, the tests skip, except under `CI=true`, where they install it with npm (and
fail if they cannot).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from transcompact import check, loads
from transcompact.cli.main import cli
from transcompact.core.model import ASSISTANT, Text, ToolCall, ToolResult
from transcompact.core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX
from transcompact.counting.calibrate import usage_tokens
from transcompact.counting.counter import Options
from transcompact.formats import adapter
from transcompact.formats.gemini.reader import response_text
from transcompact.ops.estimate import estimate
from transcompact.ops.validity.check import errors

from .builders import assert_counted_as_sent
from .conftest import CORPUS
from .npm_agent import GEMINI_CLI
from .standin_gemini import Response, Standin, is_turn, prompt_tokens, serve

TIMEOUT = 60  # seconds for one `gemini -p` run: about 2 in practice
PROMPT = "Carry on from where we stopped."
REPLY = "Carrying on."
# Gemini's own additions to what a chat holds (bundle 0.61.0): the environment it describes first,
# and the model turn it adds after a turn that ended on tool results.
SESSION_CONTEXT = "<session_context>"
INTERRUPTED = "[The previous response was interrupted before it completed.]"
SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}}, "telemetry": {"enabled": False},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}


@pytest.fixture(scope="session")
def gemini() -> list[str]:
    """The command that runs Gemini CLI; skips when it cannot (under CI=true it installs it, or fails)."""
    return GEMINI_CLI.command()


@pytest.fixture(scope="session")
def standin():
    state, stop = serve()
    yield state
    stop()


# --- running it --------------------------------------------------------------------------


@dataclass
class Place:
    """A fresh HOME and project directory, set up as Gemini keeps a project's chats."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def chats(self) -> Path:
        return self.home / ".gemini" / "tmp" / "project" / "chats"

    def make(self) -> Place:
        self.project.mkdir(parents=True)
        self.chats.mkdir(parents=True)
        gemini_dir = self.home / ".gemini"
        (gemini_dir / "settings.json").write_text(json.dumps(SETTINGS))
        (gemini_dir / "projects.json").write_text(json.dumps({"projects": {str(self.project): "project"}}))
        (gemini_dir / "tmp" / "project" / ".project_root").write_text(str(self.project))
        return self

    def run(self, gemini: list[str], standin: Standin, *args: str) -> list[dict]:
        """One `gemini` run in the project; the turns' requests it sent."""
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.home), "TMPDIR": str(self.root),
               "GOOGLE_GEMINI_BASE_URL": standin.url, "GEMINI_API_KEY": "loopback-dummy",
               "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost"}
        before = len(standin.requests)
        done = subprocess.run([*gemini, "--skip-trust", *args], cwd=self.project, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT, stdin=subprocess.DEVNULL, check=False)
        assert done.returncode == 0, f"gemini exited {done.returncode}: {done.stdout[-1000:]}{done.stderr[-2000:]}"
        sent = standin.requests[before:]
        unknown = [r.path for r in sent if not r.route.endswith((":generateContent", ":streamGenerateContent"))]
        assert not unknown, f"Gemini asked for {unknown}"
        return [r.body for r in sent if is_turn(r)]

    def chat(self) -> bytes:
        """The chat the runs recorded. A resume in a later minute than the chat's name says also
        starts a file of that minute, holding only the metadata and the environment: not that one."""
        return max((path.read_bytes() for path in self.chats.glob("session-*")), key=len)


def session_of(log: bytes) -> str:
    """The session `--resume` is asked for: the metadata's (a JSON Lines log's first line, or the document's)."""
    return json.loads(log.split(b"\n", 1)[0] if is_lines(log) else log)["sessionId"]


def is_lines(log: bytes) -> bool:
    try:
        json.loads(log)
    except ValueError:
        return True
    return False


def resume(gemini: list[str], log: bytes, where: Path, standin: Standin) -> dict:
    """Put `log` where Gemini keeps the chats of a project, in a fresh HOME; resume it there with one
    prompt; return the one turn's request it sent. In YOLO mode, as the sessions were recorded: the
    system prompt says which mode it is, and the recorded usage counted it."""
    place = Place(where).make()
    session = session_of(log)
    (place.chats / f"session-2026-01-01T00-00-{session[:8]}.{'jsonl' if is_lines(log) else 'json'}").write_bytes(log)
    standin.reply = REPLY
    sent = place.run(gemini, standin, "--yolo", "--resume", session, "-p", PROMPT)
    assert len(sent) == 1, f"{len(sent)} turns sent"
    return sent[0]


# --- reading what it sent ----------------------------------------------------------------


def unprefixed(call_id: str, name: str) -> str:
    """A call id as Gemini sends it: without the `<tool>__` prefix it records (`stripToolCallIdPrefixes`)."""
    return call_id[len(name) + 2:] if call_id.startswith(f"{name}__") else call_id


def items_of_parts(parts: list[dict]) -> list[tuple]:
    """A sent turn as comparable items: ("text", text), ("call", id), ("result", id, text)."""
    items = []
    for part in parts:
        if part.get("thought"):
            continue
        if "functionCall" in part:
            call = part["functionCall"]
            items.append(("call", unprefixed(call.get("id", ""), call["name"])))
        elif "functionResponse" in part:
            response = part["functionResponse"]
            items.append(("result", unprefixed(response.get("id", ""), response["name"]), response_text(response.get("response"))[0]))
        elif isinstance(part.get("text"), str) and part["text"].strip() and not part["text"].startswith(SESSION_CONTEXT):
            items.append(("text", part["text"].strip()))
    return items


def sent_turns(contents: list[dict]) -> list[tuple[str, list[tuple]]]:
    """The turns Gemini sent from the chat: its own additions and the new prompt set aside."""
    turns = [(c["role"], items_of_parts(c.get("parts", []))) for c in contents]
    role, last = turns[-1]
    assert role == "user" and last[-1:] == [("text", PROMPT)], f"the request does not end with the prompt: {last[-1:]}"
    turns[-1] = (role, last[:-1])
    if len(turns) > 1 and turns[-2] == ("model", [("text", INTERRUPTED)]):
        del turns[-2]
    return [(role, items) for role, items in turns if items]


def read_turns(log: bytes) -> list[tuple[str, list[tuple]]]:
    """The turns transcompact reads from a chat, as Gemini would send them: consecutive turns of one
    role are one (`coalesceConsecutiveRoles`)."""
    turns: list[tuple[str, list[tuple]]] = []
    names = {}
    for message in loads(log, "chat").messages:
        items = []
        for block in message.blocks:
            if isinstance(block, Text) and block.text.strip():
                items.append(("text", block.text.strip()))
            elif isinstance(block, ToolCall):
                names[block.id] = block.name
                items.append(("call", unprefixed(block.id, block.name)))
            elif isinstance(block, ToolResult):
                text = block.content if isinstance(block.content, str) else "".join(b.text for b in block.content if isinstance(b, Text))
                items.append(("result", unprefixed(block.tool_call_id, names.get(block.tool_call_id, "")), text))
        role = "model" if message.role == ASSISTANT else "user"
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(items)
        else:
            turns.append((role, items))
    return [(role, items) for role, items in turns if items]


def differences(log: bytes, contents: list[dict]) -> list[str]:
    """How Gemini's request differs from our reading of `log`; [] when it does not."""
    ours, theirs = read_turns(log), sent_turns(contents)
    problems = []
    if [r for r, _ in ours] != [r for r, _ in theirs]:
        problems.append(f"roles {[r for r, _ in theirs]} sent, {[r for r, _ in ours]} read")
    for index, ((role, mine), (_, sent)) in enumerate(zip(ours, theirs)):
        calls = ([i for i in mine if i[0] == "call"], [i for i in sent if i[0] == "call"])
        if calls[0] != calls[1]:
            problems.append(f"turn {index} ({role}): calls {calls[1]} sent, {calls[0]} read")
        extra, missing = Counter(sent) - Counter(mine), Counter(mine) - Counter(sent)
        if extra or missing:
            problems.append(f"turn {index} ({role}): {short(extra)} sent, {short(missing)} read")
    return problems


def short(items: Counter) -> list:
    return [tuple(str(x)[:60] for x in item) + (f"×{n}",) for item, n in list(items.items())[:3]]


def assert_pairs(contents: list[dict]) -> None:
    """Every functionCall answered in the next turn, every functionResponse answering the turn before."""
    turns = [(c["role"], items_of_parts(c.get("parts", []))) for c in contents]
    for index, (_, items) in enumerate(turns):
        calls = {i[1] for i in items if i[0] == "call"}
        results = {i[1] for i in items if i[0] == "result"}
        if calls:
            following = turns[index + 1] if index + 1 < len(turns) else ("", [])
            answered = {i[1] for i in following[1] if i[0] == "result"}
            assert following[0] == "user" and calls <= answered, f"turn {index}: a call without its response in the next turn"
        if results:
            previous = turns[index - 1][1] if index else []
            assert results <= {i[1] for i in previous if i[0] == "call"}, f"turn {index}: a response without its call"


def all_items(contents: list[dict]) -> Counter:
    return Counter(i for _, items in sent_turns(contents) for i in items)


def summaries(contents: list[dict]) -> int:
    return sum(1 for item in all_items(contents).elements() if item[0] == "text" and item[1].startswith(SUMMARY_PREFIX.strip()))


# --- the chats ---------------------------------------------------------------------------

APP = "".join(f"def step_{n}(order):\n    return order.total * {n} + len(order.lines)  # step {n}\n\n" for n in range(300))
# (prompt, the scripted responses of its turn): each run of Gemini one prompt, the first recorded
# afresh, each later one resuming the chat. Parallel calls, thoughts, a large file, a large output.
RUNS = [
    ("Look at this project and tell me what src/app.py does.", [
        Response("Reading the code and listing the files.", (("read_file", {"file_path": "src/app.py"}),
                                                            ("run_shell_command", {"command": "ls -la src"})),
                 ("**Planning** Read app.py and list src together.",)),
        Response("Now the README.", (("read_file", {"file_path": "README.md"}),), ("The README may say more.",)),
        Response("src/app.py defines 300 step functions over an order's total and lines."),
    ]),
    ("Add a CHANGES.md that says the steps were reviewed, and show it.", [
        Response("Writing CHANGES.md.", (("write_file", {"file_path": "CHANGES.md", "content": "# Changes\n\n- Reviewed the 300 steps.\n"}),),
                 ("A short changelog is enough.",)),
        Response("", (("run_shell_command", {"command": "cat CHANGES.md"}), ("list_directory", {"dir_path": "."}))),
        Response("CHANGES.md is written: it says the 300 steps were reviewed."),
    ]),
    ("Count the lines of every step and say which is longest.", [
        Response("Counting.", (("run_shell_command", {"command": "grep -c 'def step_' src/app.py"}),
                               ("run_shell_command", {"command": "wc -l src/app.py"})), ("grep counts the steps, wc the lines.",)),
        Response("There are 300 steps in 900 lines: every step is two lines long, none is longer."),
    ]),
]


@pytest.fixture(scope="session")
def recorded(gemini, standin, tmp_path_factory) -> dict[str, bytes]:
    """Sessions Gemini recorded itself: "fresh", the chat of the first run (as Gemini 0.61 records
    one: each result inside its call and again as a user record); "resumed", the chat after every
    run (each resume also appends Gemini's own `$set` of the whole history, in either shape: the
    runs may or may not share a minute); "relaunched", the first resumed twice in a later minute
    than its file's name (`resume` names it for a past one), whose `$set` keeps the calls, each of
    the parallel pair holding both responses, which the second resume sends besides; "legacy",
    the first as a legacy document."""
    place = Place(tmp_path_factory.mktemp("recorded")).make()
    (place.project / "src").mkdir()
    (place.project / "src" / "app.py").write_text(APP)
    (place.project / "README.md").write_text("# Orders\n\nEighty steps over an order.\n")
    chats = {}
    for number, (prompt, script) in enumerate(RUNS):
        standin.script.extend(script)
        place.run(gemini, standin, "--yolo", *(["--resume", "latest"] if number else []), "-p", prompt)
        assert not standin.script, "Gemini did not take every scripted turn"
        if number == 0:
            chats["fresh"] = place.chat()
    chats["resumed"] = place.chat()
    chats["relaunched"] = chats["fresh"]
    for _ in range(2):
        where = tmp_path_factory.mktemp("relaunched")
        resume(gemini, chats["relaunched"], where, standin)
        chats["relaunched"] = Place(where).chat()
    chats["legacy"] = legacy_document(chats["fresh"])
    return chats


def legacy_document(log: bytes) -> bytes:
    """A chat as the whole-file JSON of older releases, naming its session but not its project:
    Gemini resumes it by its fallback for a file it cannot replay."""
    lines = [json.loads(line) for line in log.splitlines() if line.strip()]
    held: dict[str, dict] = {}
    for value in lines:
        if isinstance(value.get("$set"), dict) and isinstance(value["$set"].get("messages"), list):
            held = {m["id"]: m for m in value["$set"]["messages"]}
        elif isinstance(value.get("id"), str):
            held[value["id"]] = value  # an upsert keeps its place, as the agent's Map does
    metadata = {k: v for k, v in lines[0].items() if k != "projectHash"}
    return json.dumps({**metadata, "messages": list(held.values())}, indent=2).encode()


# (name, --keep-recent-tokens of the first compaction, of the second): Gemini's own three sessions
# and the first as a legacy document without a `projectHash`; then the corpus's legacy documents:
# a real session of one prompt and eleven responses, and a small schema fixture whose one
# compaction leaves nothing to compact again (None).
LOGS = [
    ("fresh", 1500, 200),
    ("resumed", 500, 300),
    ("relaunched", 1500, 200),
    ("legacy", 1500, 200),
    ("entire-cli-gemini-cli-session-f7633853.json", 1000, 300),
    ("gemini-cli-chat-large.json", 50, None),
]
NAMES = [name for name, *_ in LOGS]
# Their usage is the stand-in's count of each request (its system instruction, tools and contents):
# estimate of each, and of it compacted, is what the stand-in counts of the request that resumes it.
# The corpus's chats are not: one recorded the real API's counts, the other none (estimate 240
# tokens of a chat whose request, with Gemini's system instruction and tools, the stand-in counts
# at 11,817).
RECORDED = ("fresh", "resumed", "relaunched", "legacy")
LINES = ("fresh", "resumed", "relaunched")  # the JSON Lines logs, which --slim shrinks


@pytest.fixture
def original(recorded):
    """A function: the log of a name."""
    def get(name: str) -> bytes:
        if name in recorded:
            return recorded[name]
        path = CORPUS / "other" / name
        if not path.is_file():
            pytest.skip("the shared corpus is not here")
        return path.read_bytes()
    return get


def compact(log: bytes, keep: int, *extra: str) -> bytes:
    """`transcompact compact --emergency --force` on a log, as a user runs it."""
    result = CliRunner().invoke(cli, ["compact", "--emergency", "--force", "--keep-recent-tokens", str(keep), *extra],
                                input=log, prog_name="transcompact")
    assert result.exit_code == 0, result.output
    assert "compacted (emergency)" in result.stderr, result.stderr
    return result.stdout_bytes


@functools.cache
def compacted(log: bytes, name: str, how: str) -> bytes:
    """The log compacted once, twice (that compacted again, in a smaller window), or once with --slim."""
    once, twice = next(keep for n, *keep in LOGS if n == name)
    if how == "twice":
        return compact(compacted(log, name, "once"), twice)
    return compact(log, once, *(["--slim"] if how == "drop" else []))


@pytest.fixture(scope="session")
def controls() -> dict[str, dict]:
    """The request each original's resume sent, by name."""
    return {}


def control(name: str, log: bytes, controls: dict[str, dict], gemini: list[str], standin: Standin, where: Path) -> dict:
    """The request the original's resume sent: each original is resumed once, by the first test that needs it."""
    if name not in controls:
        controls[name] = resume(gemini, log, where, standin)
    return controls[name]


# --- the tests ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_the_original_resumes_as_we_read_it(name, original, controls, gemini, standin, tmp_path):
    """The control: Gemini sends the uncompacted chat as transcompact reads it, each result as often
    (twice where Gemini 0.61 recorded it twice), and transcompact counts what it sends."""
    log = original(name)
    body = control(name, log, controls, gemini, standin, tmp_path)
    transcript = loads(log, "chat")
    assert errors(check(transcript)) == []
    assert differences(log, body["contents"]) == []
    assert_pairs(body["contents"])
    assert any(kind == "result" for kind, *_ in all_items(body["contents"]))
    if name in RECORDED:  # anchored on the usage Gemini recorded, or fitted to it
        for options in (Options(), Options(calibrate=True)):
            assert estimate(transcript, options).tokens == pytest.approx(prompt_tokens(body), rel=0.03)


HOWS = [pytest.param(name, how, id=f"{name}-{how}") for name, _, twice in LOGS for how in ("once", "twice", "drop")
        if (how != "drop" or name in LINES) and (how != "twice" or twice is not None)]


@pytest.mark.parametrize(("name", "how"), HOWS)
def test_a_compacted_chat_resumes_from_our_summary(name, how, original, controls, gemini, standin, tmp_path):
    log = original(name)
    out = compacted(log, name, how)
    transcript = loads(out, "chat")
    assert errors(check(transcript)) == []  # the file's own view is paired, as we read it
    body = resume(gemini, out, tmp_path / "compacted", standin)
    contents = body["contents"]
    assert differences(out, contents) == []
    assert_pairs(contents)
    assert summaries(contents) == 1
    kept = [b.text.strip() for m in transcript.messages if m.role == ASSISTANT
            for b in m.blocks if isinstance(b, Text) and b.text.strip() and b.text != SUMMARY_ACK]
    assert not kept or ("text", kept[-1]) in all_items(contents), "the kept window's last model text is not sent"
    before = control(name, log, controls, gemini, standin, tmp_path / "control")
    sent = all_items(contents)
    ours = {i for i in sent if i[0] == "text" and (i[1].startswith(SUMMARY_PREFIX.strip()) or i[1] == SUMMARY_ACK)}
    more = Counter({i: n for i, n in sent.items() if i not in ours}) - all_items(before["contents"])
    assert not more, f"sent more often than the control sends it: {short(more)}"
    assert prompt_tokens(body) < prompt_tokens(before)


# Depending on the minutes its runs fall in (see `recorded`), "resumed" may hold after its last `$set`
# only the last run's two responses with usage: the count takes the ratio and frame of the chat
# before the `$set`s (docs/counting.md), where a fit on those two alone put the whole request in
# the ratio (0 + chars × 0.50: 676 of a request the stand-in counts at 12,205).
@pytest.mark.parametrize(("name", "how"), [(name, how)
                                           for name in RECORDED for how in ("once", "twice", "drop") if how != "drop" or name in LINES])
def test_estimate_counts_what_gemini_sends(name, how, original, gemini, standin, tmp_path):
    """The ground truth: `estimate` of a chat Gemini recorded, compacted, is within 5 % of what the
    stand-in counts of the request Gemini sends when it resumes that file (the original is held to
    3 % above)."""
    out = compacted(original(name), name, how)
    assert_counted_as_sent(loads(out, "chat"), prompt_tokens(resume(gemini, out, tmp_path, standin)))


# --- a pair of calls whose results each hold both responses ----------------------------------

PAIR = (("run_shell_command__run_shell_command_1795730101010_0", "run_shell_command", {"command": "cat CHANGES.md"},
         "<untrusted_context>\nOutput: # Changes\n\n- Reviewed the 300 steps.\n</untrusted_context>"),
        ("list_directory__list_directory_1795730101016_1", "list_directory", {"dir_path": "."},
         "Directory listing for /project:\nCHANGES.md (37 bytes)\nREADME.md (38 bytes)"))


def relaunched_pair() -> bytes:
    """A chat as Gemini 0.61 records a run and then a resume that starts in a later minute than
    the chat's file name (a flaky `resumed` once caught that shape): the run appends the model
    record (its calls in `toolCalls`, each holding its own response), the user record of both
    responses and the answer; the resume (`$set` of the `sessionId`) appends the history it
    converted, where `updateMessagesFromHistory` keeps the calls but sets each one's `result` to
    the whole user turn that answered it, both calls' responses, and inserts a `<id>_response`
    record of them; the older records keep the usage that never counted it; the resumed run
    appends its prompt and answer. An exchange before them is what a compaction summarises."""
    stamp, session = "2026-11-20T10:00:00.000Z", "7a7a7a7a-1111-4222-8333-444455556666"
    usage = {"input": 5000, "output": 10, "cached": 0, "thoughts": 0, "tool": 0, "total": 5010}
    responses = [{"functionResponse": {"id": i, "name": n, "response": {"output": out}}} for i, n, _, out in PAIR]
    calls = [{"id": i, "name": n, "args": args, "result": [responses[k]], "status": "success", "timestamp": stamp,
              "resultDisplay": out, "description": n, "displayName": n, "renderOutputAsMarkdown": False}
             for k, (i, n, args, out) in enumerate(PAIR)]
    model = {"id": "g1", "timestamp": stamp, "type": "gemini", "content": "", "tokens": usage, "model": "gemini-3.8-flash",
             "thoughts": [{"subject": "", "description": "Showing it.", "timestamp": stamp}], "toolCalls": calls}
    run = [{"id": "env", "timestamp": stamp, "type": "user", "content": [{"text": "<session_context>\nlinux\n</session_context>"}]},
           {"id": "u0", "timestamp": stamp, "type": "user", "content": [{"text": "Review every step of src/app.py."}]},
           {"id": "d0", "timestamp": stamp, "type": "gemini", "content": APP[:4000]},  # what compaction summarises
           {"id": "u1", "timestamp": stamp, "type": "user", "content": [{"text": "Show CHANGES.md and list the files."}]},
           model,
           {"id": "r1", "timestamp": stamp, "type": "user", "content": responses},
           {"id": "d1", "timestamp": stamp, "type": "gemini", "tokens": usage, "content": "CHANGES.md says the steps were reviewed."}]
    kept = {**model, "toolCalls": [{**call, "result": responses} for call in calls],
            "content": [{"text": "Showing it.", "thought": True}, *({"functionCall": {"id": i, "name": n, "args": args}} for i, n, args, _ in PAIR)]}
    history = [*run[:4], kept, {"id": "g1_response", "timestamp": stamp, "type": "user", "content": responses},
               *({**r, "content": r["content"] if isinstance(r["content"], list) else [{"text": r["content"]}]} for r in run[5:])]
    metadata = {"sessionId": session, "projectHash": "cd" * 32, "startTime": stamp, "lastUpdated": stamp, "kind": "main"}
    resumed = [{"id": "u2", "timestamp": stamp, "type": "user", "content": [{"text": "Thanks."}]},
               {"id": "d2", "timestamp": stamp, "type": "gemini", "content": "You are welcome.", "tokens": {**usage, "input": 6000}}]
    lines = [metadata, *run, {"$set": {"sessionId": session}}, {"$set": {"messages": history, "lastUpdated": stamp}}, *resumed]
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def test_each_response_a_call_holds_is_read_with_its_own_id():
    """Gemini sends every part of a call's `result` (`convertSessionToClientHistory`): here each
    response four times, each with its own id and text; transcompact reads it so. The usage
    recorded before the resume inserted the `_response` record before it counted another history,
    and the last usage, after it, did not count the calls' results: the resume sent their earlier
    copy, now that record."""
    log = relaunched_pair()
    (role, items), = [turn for turn in read_turns(log) if any(kind == "result" for kind, *_ in turn[1])]
    assert role == "user"
    assert Counter(items) == {("result", unprefixed(i, n), out): 4 for i, n, _, out in PAIR}
    transcript = loads(log, "chat")
    assert errors(check(transcript)) == []
    assert [usage_tokens(m) for m in transcript.messages if m.role == ASSISTANT] == [None, 5000, None, 6000]
    in_calls = [i for i, m in enumerate(transcript.messages) if isinstance(m.raw, list)]  # read from `toolCalls[].result`
    assert adapter(transcript).unrecorded_messages(transcript) == set(in_calls) and len(in_calls) == 1


@pytest.mark.parametrize("how", ["original", "compacted"])
def test_each_response_a_call_holds_is_sent_as_we_read_it(how, gemini, standin, tmp_path):
    log = relaunched_pair()
    if how == "compacted":
        log = compact(log, 300)  # the window keeps the pair, the exchange before it is summarised
    contents = resume(gemini, log, tmp_path, standin)["contents"]
    assert differences(log, contents) == []
    assert_pairs(contents)
    assert sum(n for item, n in all_items(contents).items() if item[0] == "result") == 8
    assert summaries(contents) == (how == "compacted")


@pytest.mark.parametrize("name", NAMES)
def test_a_slimmed_chat_is_sent_as_the_original(name, original, gemini, standin, tmp_path):
    """`transcompact slim` of the chat, and of it compacted once: Gemini sends what it sends from
    the whole file (a legacy `.json` chat is left as it is), the system instruction aside."""
    log = original(name)
    for which, whole in (("original", log), ("compacted", compacted(log, name, "once"))):
        result = CliRunner().invoke(cli, ["slim", "-q"], input=whole, prog_name="transcompact")
        assert result.exit_code == 0, result.output
        slimmed = result.stdout_bytes
        assert len(slimmed) <= len(whole)
        if not is_lines(whole):
            assert slimmed == whole
            continue
        where = tmp_path / which  # the same directory for both: the project's path is in what Gemini sends
        expected = resume(gemini, whole, where, standin)
        shutil.rmtree(where)
        assert resume(gemini, slimmed, where, standin)["contents"] == expected["contents"]


@pytest.mark.parametrize("name", LINES)
def test_gemini_goes_on_working_from_a_slimmed_chat(name, original, gemini, standin, tmp_path):
    """Resumed from the slimmed chat compacted once, Gemini runs the tool call the stand-in asks
    for next, in the project, and sends its result."""
    result = CliRunner().invoke(cli, ["slim", "-q"], input=compacted(original(name), name, "once"), prog_name="transcompact")
    assert result.exit_code == 0, result.output
    place = Place(tmp_path).make()
    (place.project / "notes.txt").write_text("went on\n")
    session = session_of(result.stdout_bytes)
    (place.chats / f"session-2026-01-01T00-00-{session[:8]}.jsonl").write_bytes(result.stdout_bytes)
    standin.script.extend([Response("", (("read_file", {"file_path": "notes.txt"}),)), Response(REPLY)])
    standin.reply = REPLY
    sent = place.run(gemini, standin, "--yolo", "--resume", session, "-p", PROMPT)
    assert not standin.script and len(sent) == 2, f"Gemini sent {len(sent)} turns"
    responses = [part["functionResponse"] for content in sent[1]["contents"] for part in content.get("parts", [])
                 if "functionResponse" in part and part["functionResponse"].get("name") == "read_file"]
    assert responses and "went on" in json.dumps(responses[-1])
