"""How much of what compact drops survives in its output, and what its checkpoint says that the
dropped part itself contradicts. Shared by tests/test_retention.py,
tests/test_checkpoint_precision.py and bench (bench/run.py, bench/summary_recall.py).

Recall: the facts of the dropped part found again in the output. The facts are defined here,
apart from the checkpoint's own code:
- user words: each message the user wrote, whole when short, else its first and last 150
  characters (in a trajectory only the task, the first); without what the agent wrote in the
  user's turn of its own (`<system-reminder>`, `<environment_context>`, a command's wrappers, a
  skill's body on Claude Code's `isMeta` lines, …);
- file paths: every path-like argument of a tool call (`path`, `file_path`, `paths`, `dir`, …, a
  string or a list of them; not the directory a command runs in), and the files a patch names
  (`*** Update File: x`: Codex `apply_patch`, as its own tool or as an argv);
- whole commands: a call's `command` or `cmd`, a string or an argv list (`bash -lc SCRIPT` is
  SCRIPT, another argv is its words joined by spaces; an `apply_patch` argv is an edit, not a
  command); a trajectory's `action`, else the last fenced block of the assistant's message. A
  here-document's body is the content of the file it writes, not part of the command: such a
  command is found when what surrounds the body is;
- real error messages: what a failed command says went wrong. A command failed when its result
  is an error (`is_error`, pi's `isError`), when it exited non-zero however the agent records it
  (`Exit code 1` / `Exit code: 1` / `Process exited with code 1` / `"exit_code": 1` (Codex),
  `Exit Code: 1` (Gemini), `Command exited with code 1` (pi), `<returncode>1</returncode>`
  (mini-swe-agent), `[The command completed with exit code 1.]` and its metadata (OpenHands)),
  or when it printed a traceback. The message is a traceback's exception line; else the first
  line that starts by saying what went wrong (`FAILED …`, `error: …`, `fatal: …`, `KeyError: …`),
  else the first with an error's words, else the last line; never the agent's own
  framing of the output (`Exit code: 1`, `Wall time: …`, `Output:`, `Error: (none)`, …), nor a
  tool use the user turned down;
- last state: the assistant's last words before the cut (their first 200 characters).
A fact is found when its text is in the output, whitespace aside. Two baselines get the same
token budget as compact's output: dropping the oldest turns, and masking old tool results (then
dropping).

Precision (`contradictions`): what a checkpoint states that a later event of the part it
summarizes contradicts (see there).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from transcompact.core.jsondata import compact_json
from transcompact.core.model import ASSISTANT, USER, Text, ToolCall, ToolResult, result_text
from transcompact.core.summary_text import text_of
from transcompact.counting.counter import TokenCounter
from transcompact.formats import adapter, dumps, loads
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.cut import starts_turn
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.compaction.summary_message import find_previous, is_summary_message
from transcompact.ops.pruning.prune import PruneOptions, prune

RECORDED = Path(__file__).parent / "recorded"
KINDS = ("user", "paths", "errors", "commands", "last_state")
LABELS = {"user": "user words", "paths": "file paths", "errors": "real error messages", "commands": "whole commands",
          "last_state": "last state"}
# What bench holds the checkpoint to, per kind (bench/run.py `summaries`).
TARGETS = {"user": 0.95, "paths": 0.95, "errors": 0.90, "commands": 0.90, "last_state": 0.95}
WINDOWS = (2000, 5000)
_FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.S)


def norm(text: str) -> str:
    return " ".join(text.split())


# --- the facts -------------------------------------------------------------------------------

_HEREDOC_START = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?\s*(?:[;&|>].*)?$")


def _command_fact(command: str) -> list[str]:
    pieces, current, ending = [], [], None
    for line in command.split("\n"):
        if ending is not None:  # inside a here-document's body
            if line.strip() == ending:
                ending = None
                current = [line]
            continue
        current.append(line)
        if match := _HEREDOC_START.search(line):
            pieces.append(norm("\n".join(current)))
            current, ending = [], match.group(1)
    if current:
        pieces.append(norm("\n".join(current)))
    return [p for p in pieces if p]


# What an agent writes in the user's turn of its own (context, reminders, its commands' wrappers): not the user's words.
_INJECTED = re.compile(
    r"<(system-reminder|task-notification|command-name|command-message|command-args|local-command-stdout|"
    r"local-command-stderr|local-command-caveat|bash-notification|user-prompt-submit-hook|environment_context|"
    r"user_instructions|skills_instructions|permissions instructions|turn_aborted|session_context)>.*?</\1>"
    r"|^Caveat: The messages below were generated by the user while running local commands\..*?$"
    r"|^# AGENTS\.md instructions for .*", re.S | re.M)


def own_words(text: str) -> str:
    return _INJECTED.sub("", text).strip()


def _user_fact(text: str) -> list[str]:
    text = norm(text)
    return [text] if len(text) <= 300 else [text[:150], text[-150:]]


# A key whose value names a file or a directory (not the one a command runs in).
_PATH_KEY = re.compile(r"(?:^|_)(?:path|paths|file|files|filename|filenames|filepath|dir|directory)$|^file_name$")
_NOT_A_TARGET = frozenset({"cwd", "workdir", "working_directory", "working_dir"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)
# An editor tool's verb under `command` (SWE-agent's str_replace_editor, Anthropic's text editor): not a command run.
_EDITOR_VERBS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "write", "edit"})


def _patch_text(arguments: Any) -> str | None:
    """The text of a patch a call applies: Codex's `apply_patch` (its input as a string, under
    `input` or `patch`, or the last word of an argv)."""
    if isinstance(arguments, str):
        return arguments if "*** " in arguments else None
    if not isinstance(arguments, dict):
        return None
    for key in ("input", "patch"):
        if isinstance(arguments.get(key), str) and "*** " in arguments[key]:
            return arguments[key]
    for key in ("command", "cmd"):
        value = arguments.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            found = next((v for v in value if "*** Begin Patch" in v), None)
            if found is not None:
                return found
    return None


def call_paths(arguments: Any) -> list[str]:
    """Every path a call names: its path-like arguments, and the files of a patch it applies."""
    found: list[str] = []
    if isinstance(arguments, dict):
        for key, value in arguments.items():
            if key.lower() in _NOT_A_TARGET or not _PATH_KEY.search(key.lower()):
                continue
            for each in value if isinstance(value, list) else [value]:
                if isinstance(each, str) and each.strip() and "\n" not in each.strip() and len(each) <= 500:
                    found.append(each.strip())
    patch = _patch_text(arguments)
    if patch is not None:
        found += [m.strip() for m in _PATCH_FILE.findall(patch)]
    return found


def call_command(arguments: Any) -> str | None:
    """The command a call runs, whole: `command` or `cmd`, a string or an argv list."""
    if not isinstance(arguments, dict):
        return None
    for key in ("command", "cmd"):
        value = arguments.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            if value[0] in ("apply_patch", "applypatch"):
                return None  # an edit: its files are paths
            if value[0] in ("bash", "sh", "zsh") and len(value) >= 3 and value[1] in ("-c", "-lc", "-ic"):
                value = value[-1]
            else:
                value = " ".join(value)
        if isinstance(value, str) and value.strip():
            if value.strip() in _EDITOR_VERBS and any(_PATH_KEY.search(k.lower()) for k in arguments):
                return None
            return value.strip()
    return None


def trajectory_command(message) -> str | None:
    """The command an assistant message of a trajectory runs: SWE-agent's `action`, else its last fenced block."""
    raw = message.raw if isinstance(message.raw, dict) else {}
    if isinstance(raw.get("action"), str) and raw["action"].strip():
        return raw["action"].strip()
    blocks = _FENCE.findall(text_of(message))
    return blocks[-1].strip() or None if blocks else None


# How each agent records an exit status in what the command printed (Codex's JSON wrapper aside).
_EXIT_STATUS = re.compile(
    r"^(?:Exit code:? |Process exited with code |Command exited with code |Exit Code: |exit code: )(-?\d+)\b"
    r"|<returncode>(-?\d+)</returncode>|\[The command completed with exit code (-?\d+)\.\]"
    r"|\[Command finished with exit code (-?\d+)\]", re.M)
# The agents' framing of an output: what a line says about the run, not what the command said.
_FRAMING = re.compile(
    r"^(?:Exit code:? -?\d+|Process exited with code -?\d+|Command exited with code -?\d+|Exit Code: -?\d+|"
    r"Wall time: .*|Chunk ID: .*|Original token count: .*|Process running with session ID .*|Output:|"
    r"Command: .*|Directory: .*|Error: \(none\)|Signal: .*|Background PIDs: .*|Process Group PGID: .*|"
    r"<returncode>-?\d+</returncode>|</?output>|</?error>|<warning>.*|</warning>|"
    r"\[The command completed with exit code -?\d+\.\]|\[Current working directory: .*\]|"
    r"\[Python interpreter: .*\]|\[Command finished with exit code -?\d+\]|\[Command finished execution\]|"
    r"Total output lines: \d+|<\/?\w+>)$|(?:\.\.\.|…)$")
_ERROR_WORDS = re.compile(r"(?i)\b(?:\w*error|\w*exception|fatal|failed|failure|panic|denied|not found|no such|cannot|"
                          r"can't|unable|invalid|refused)\b")
# A line that starts by saying what went wrong (a test runner's summary, a compiler's or a tool's error, an exception).
_SAYS_SO = re.compile(r"(?:FAILED|FAIL:?|ERROR:?|Error:|error(?:\[\w+\])?:|fatal:|panic:|npm ERR!)\s|"
                      r"[A-Za-z_][\w.]*(?:Error|Exception)(?::|$)")
_TRACEBACK = "Traceback (most recent call last):"
# What a result says when the user turned the call down or stopped it, or the agent cancelled it
# because another call of the same response failed: not an error of its own.
_NOT_ITS_OWN = ("The user doesn't want to proceed", "[Request interrupted by user", "User rejected", "Tool use was rejected",
                "The user denied", "Sibling tool call errored", "Command aborted")


def _unwrapped(text: str) -> tuple[str, int | None]:
    """What the command printed, out of Codex's JSON wrapper (`{"output": …, "metadata": {"exit_code": 1}}`),
    and the exit status the wrapper records."""
    stripped = text.strip()
    if stripped.startswith("{") and '"output"' in stripped[:40]:
        try:
            value = json.loads(stripped)
        except ValueError:
            return text, None
        if isinstance(value, dict) and isinstance(value.get("output"), str):
            metadata = value.get("metadata")
            status = metadata.get("exit_code") if isinstance(metadata, dict) else None
            return value["output"], status if isinstance(status, int) else None
    return text, None


def exit_status(text: str, raw: Any = None) -> int | None:
    """The exit status a result records (in its text, or its message's record), None when it records none."""
    if isinstance(raw, dict):
        extras = raw.get("extras")
        for holder in (raw.get("extra"), extras.get("metadata") if isinstance(extras, dict) else None):
            if isinstance(holder, dict):
                for key in ("returncode", "exit_code"):
                    if isinstance(holder.get(key), int):
                        return holder[key]
    text, status = _unwrapped(text)
    if status is not None:
        return status
    match = _EXIT_STATUS.search(text[:4000]) or _EXIT_STATUS.search(text[-600:])
    if match is None:
        return None
    return int(next(group for group in match.groups() if group is not None))


def printed(text: str) -> str:
    """What a command printed, its lines as they were, out of the agent's framing (Codex's JSON
    wrapper and its header lines, Gemini's `Output: ` and status lines, mini-swe-agent's tags)."""
    lines = _unwrapped(text)[0].split("\n")
    return "\n".join(re.sub(r"^(?:Output|Error): (?!\(none\))", "", line) for line in lines if not _FRAMING.search(line.strip()))


def _lines(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "\\n" in text:  # a part that came as a JSON string: its `\n` are its lines
        lines = [part.strip() for line in lines for part in line.split("\\n") if part.strip()]
    # Gemini's `Output: <first line>`, Claude Code's `<tool_use_error>…</tool_use_error>`: the line inside.
    lines = [re.sub(r"^(?:Output|Error): (?!\(none\))", "", line) for line in lines]
    return [re.sub(r"^<tool_use_error>(.*?)(?:</tool_use_error>)?$", r"\1", line) for line in lines]


def error_message(text: str) -> str | None:
    """What a failed command says went wrong: a traceback's exception line; else its first line that
    starts by saying so; else its first line with an error's words; else its last line (its framing aside)."""
    text = _unwrapped(text)[0]
    if _TRACEBACK in text:
        after = text.split(_TRACEBACK)[-1].splitlines()
        exception = next((line.strip() for line in after[1:] if line.strip() and not line.startswith((" ", "\t"))), None)
        if exception and not _FRAMING.search(exception):
            return exception
    candidates = [line for line in _lines(text) if not _FRAMING.search(line)]
    return next((line for line in candidates if _SAYS_SO.match(line)),
                next((line for line in candidates if _ERROR_WORDS.search(line)), candidates[-1] if candidates else None))


def failed(result: ToolResult, raw: Any = None) -> bool:
    """Whether a tool result says its command failed: an error result, or a non-zero exit status."""
    text = result_text(result)
    if result.is_error or (isinstance(raw, dict) and raw.get("isError") is True):
        return not _lines(text) or not _lines(text)[0].startswith(_NOT_ITS_OWN)
    return exit_status(text, raw) not in (None, 0)


def _error_fact(text: str, failure: bool) -> list[str] | None:
    if not failure and _TRACEBACK not in text:
        return None
    message = error_message(text)
    return [norm(message)[:120]] if message else None


def facts(messages, trajectory: bool, agent_lines: frozenset[int] = frozenset()) -> dict[str, list[list[str]]]:
    """kind → [the pieces that must all be found]. `agent_lines`: the lines of a log the agent wrote
    in the user's turn itself (Claude Code's `isMeta` lines: a skill's body), not the user's words."""
    found: dict[str, list[list[str]]] = {kind: [] for kind in KINDS}
    seen_task = False
    command_before = False  # in a trajectory: the assistant message before ran a command
    for message in messages:
        raw = message.raw if isinstance(message.raw, dict) else {}
        if message.role == USER and not is_summary_message(message) and not raw.get("isMeta") and not raw.get("is_demo"):
            text = (text_of(message) if not agent_lines else
                    "\n".join(b.text for b in message.blocks if isinstance(b, Text) and b.line not in agent_lines)).strip()
            if trajectory and seen_task and command_before and text:  # an observation: what the command printed
                if fact := _error_fact(text, exit_status(text) not in (None, 0)):
                    found["errors"].append(fact)
            elif own_words(text) and not (trajectory and seen_task):
                found["user"].append(_user_fact(own_words(text)))
                seen_task = True
        results = [b for b in message.blocks if isinstance(b, ToolResult)]
        for block in message.blocks:
            if isinstance(block, ToolCall):
                found["paths"] += [[norm(path)] for path in call_paths(block.input)]
                if (command := call_command(block.input)) is not None:
                    found["commands"].append(_command_fact(command))
            elif isinstance(block, ToolResult):
                # A message's raw record speaks for its result when it holds one only.
                if fact := _error_fact(result_text(block), failed(block, raw if len(results) == 1 else None)):
                    found["errors"].append(fact)
        if trajectory and message.role == ASSISTANT:
            command = trajectory_command(message)
            command_before = command is not None
            if command:
                found["commands"].append(_command_fact(command))
    last = next((text_of(m) for m in reversed(messages) if m.role == ASSISTANT and text_of(m).strip()), None)
    if last:
        found["last_state"].append([norm(last)[:200]])
    for kind in KINDS:  # a fact said twice is one fact
        unique = []
        for pieces in found[kind]:
            if pieces not in unique:
                unique.append(pieces)
        found[kind] = unique
    return found


def output_text(transcript) -> str:
    parts = []
    for message in transcript.messages:
        for block in message.blocks:
            if isinstance(block, ToolCall):
                parts.append(compact_json(block.input))
                if isinstance(block.input, dict) and isinstance(block.input.get("command"), str):
                    parts.append(block.input["command"])
            elif isinstance(block, ToolResult):
                parts.append(result_text(block))
        parts.append(text_of(message))
    # A quoted line (the user's words, the last state) reads as the line itself.
    return norm("\n".join(line[2:] if line.startswith("> ") else line for line in "\n".join(parts).split("\n")))


@dataclass
class Score:
    found: dict = field(default_factory=lambda: {k: 0 for k in KINDS})
    total: dict = field(default_factory=lambda: {k: 0 for k in KINDS})

    def add(self, wanted: dict, text: str) -> None:
        for kind, items in wanted.items():
            self.total[kind] += len(items)
            self.found[kind] += sum(1 for pieces in items if all(p in text for p in pieces))

    def merge(self, other: Score) -> None:
        for kind in KINDS:
            self.found[kind] += other.found[kind]
            self.total[kind] += other.total[kind]

    def recall(self, kind: str) -> float | None:
        return self.found[kind] / self.total[kind] if self.total[kind] else None


def drop_oldest(transcript, budget: int, options) -> object:
    tokens = TokenCounter(transcript, options).per_message(transcript)
    total = sum(tokens)
    start = 0
    while total > budget and start < len(tokens) - 1:
        total -= tokens[start]
        start += 1
    while start < len(transcript.messages) and not starts_turn(transcript.messages[start]):
        start += 1
    return transcript.with_messages(transcript.messages[start:])


def mask_old_results(transcript, budget: int, options) -> object:
    masked = prune(transcript, PruneOptions(hard_clear_after=2, keep_last=2))[0]
    return drop_oldest(masked, budget, options)


# --- the corpus --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conversation:
    """One conversation compact compacts: a file, and where in it (`--messages-path`) for a file of several."""

    path: Path
    messages_path: str | None = None

    @property
    def name(self) -> str:
        return self.path.name + (f"#{self.messages_path}" if self.messages_path else "")

    def load(self):
        """The conversation; one of a file of several as `--messages-path` reads it, the file parsed once."""
        if self.messages_path is None:
            return loads(self.path.read_bytes(), str(self.path))
        value = _document(self.path)
        for key in self.messages_path.split("."):
            value = value[int(key)] if isinstance(value, list) else value[key]
        return loads(orjson.dumps(value), self.name)


@functools.lru_cache(maxsize=2)
def _document(path: Path) -> Any:
    data = path.read_bytes()
    return orjson.loads(data) if path.suffix == ".json" else [orjson.loads(line) for line in data.splitlines() if line.strip()]


def corpus_conversations(corpus: Path | None = None) -> list[Conversation]:
    """Every conversation of the corpus (the tests', unless `corpus` names one) that compact writes:
    each file of a format it writes, and each conversation of a file of several (tau-bench's
    trajectories; OpenHands' runs are of a format compact only reads). None when the corpus is absent."""
    from .conftest import CORPUS, READ_ONLY, READ_ONLY_FORMATS, UNSUPPORTED

    corpus = corpus or CORPUS
    if not corpus.is_dir():
        return []
    found = []
    for path in sorted(p for p in corpus.glob("*/*") if p.suffix in (".json", ".jsonl")):
        name = str(path.relative_to(corpus))
        if name in READ_ONLY:
            continue
        if name not in UNSUPPORTED:
            found.append(Conversation(path))
            continue
        where = UNSUPPORTED[name].split()[-1]  # "--messages-path 0.history": 0 is the conversation
        each = [Conversation(path, where.replace("0", str(index), 1)) for index in range(len(_document(path)))]
        if each and each[0].load().format not in READ_ONLY_FORMATS:
            found += each
    return found


def compacted(conversation: Conversation, keep: int, transcript=None, *, prune_may_win: bool = True):
    """compact --emergency --force at `keep`: (the input, the output read back, the dropped
    messages (an earlier summary's left out), the report); None when nothing was dropped.

    Where pruning alone leaves less than the compaction, compact prunes (nothing is dropped): a
    session the agents recorded is small, and its old results cleared may weigh less than a
    checkpoint. `prune_may_win=False` holds back that pruning (an edit of the results that saves
    fewer tokens than the whole is not made: `clear_at_least`), so that the old part is dropped
    behind the checkpoint that is measured; the window is the same."""
    transcript = transcript if transcript is not None else conversation.load()
    pruning = PruneOptions() if prune_may_win else PruneOptions(clear_at_least=1 << 62)
    options = CompactOptions(force=True, emergency=True, pruning=pruning, summary=SummaryOptions(keep_recent_tokens=keep))
    out, report = compact(transcript, options)
    if report.cut is None:
        return None
    out = loads(dumps(out), conversation.name)
    old = transcript.messages[: report.cut]
    previous = find_previous(old)
    real = [m for i, m in enumerate(old) if not (previous and i in previous.covered)]
    return transcript, out, real, report, options


def measure(path, keep: int, messages_path: str | None = None, transcript=None, *, prune_may_win: bool = True):
    """(compact's score, masking's, dropping's) for one conversation at one window size; None when
    nothing was dropped (`compacted` says when pruning alone is done instead)."""
    done = compacted(Conversation(Path(path), messages_path), keep, transcript, prune_may_win=prune_may_win)
    if done is None:
        return None
    transcript, out, real, _, options = done
    from transcompact.ops.compaction.checkpoint import is_trajectory

    wanted = facts(real, is_trajectory(real), adapter(transcript).agent_lines(transcript))
    counting = options.counting
    budget = sum(TokenCounter(out, counting).per_message(out))
    scores = []
    for candidate in (out, mask_old_results(transcript, budget, counting), drop_oldest(transcript, budget, counting)):
        score = Score()
        score.add(wanted, output_text(candidate))
        scores.append(score)
    return scores


@dataclass
class Window:
    """The scores at one window, pooled over the conversations compact cut, and each one's own."""

    keep: int
    scores: dict[str, Score] = field(default_factory=lambda: {name: Score() for name in ("compact", "mask", "drop")})
    each: dict[str, Score] = field(default_factory=dict)  # conversation → compact's score

    def table(self) -> str:
        """The figures per kind, and the conversations that miss the most."""
        lines = [f"at a {self.keep:,}-token window, {len(self.each)} conversations cut:"]
        for kind in KINDS:
            ours = self.scores["compact"]
            shown = [f"{name} {score.recall(kind):.2f}" for name, score in self.scores.items() if score.recall(kind) is not None]
            lines.append(f"  {LABELS[kind]:20s} {ours.found[kind]:4d}/{ours.total[kind]:<4d} " + ", ".join(shown))
            missed = sorted(((score.total[kind] - score.found[kind], name) for name, score in self.each.items()), reverse=True)
            lines += [f"      {lost} missed in {name}" for lost, name in missed[:3] if lost]
        return "\n".join(lines)


def measure_corpus(conversations: list[Conversation], windows=WINDOWS) -> dict[int, Window]:
    """Each window's scores over the conversations (read once each)."""
    measured = {keep: Window(keep) for keep in windows}
    for conversation in conversations:
        try:
            transcript = conversation.load()
        except Exception:  # noqa: BLE001 - a file compact does not read as one conversation
            continue
        for keep in windows:
            scores = measure(conversation.path, keep, conversation.messages_path, transcript)
            if scores is None:
                continue
            for total, score in zip(measured[keep].scores.values(), scores):
                total.merge(score)
            measured[keep].each[conversation.name] = scores[0]
    return measured


# --- precision: what a checkpoint says that the dropped part contradicts ---------------------------

_TEST_RUNNER = re.compile(r"(?:^|[\s;&|(/])(?:pytest|py\.test|tox|nox|unittest|jest|vitest|mocha|rspec|phpunit|ctest|"
                          r"go test|cargo test|cargo nextest|mix test|dotnet test|swift test|bazel test|"
                          r"(?:npm|pnpm|yarn|bun) (?:run )?test)(?=$|[\s;&|)])")
_RUNNER_SPELLINGS = re.compile(r"^(?:(?:uv run|poetry run|pipenv run|python3?(?:\.\d+)? -m)\s+)(?=pytest\b|unittest\b)")
_OUTPUT_FILTER = re.compile(r"\s*\|\s*(?:tail|head|grep|cat|less|tee|sed|awk|cut|sort|wc)\b.*$")
_REDIRECT = re.compile(r"\s+\d?>&\d|\s+\d?>\s*/dev/null|\s+&>\s*\S+")
_CD_PREFIX = re.compile(r"^(?:cd\s+\S+\s*(?:&&|;)\s*)+")
_ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
_FAILING_RESULT = re.compile(r"\b[1-9]\d* (?:failed|errors?|failing|failures?)\b|^FAILED\b|\bFAIL\b|\bERRORS?\b")
_PASSING_RESULT = re.compile(r"\b[1-9]\d* (?:passed|passing)\b|^OK\b|^ok\b|\bPASS(?:ED)?\b|test result: ok|All tests passed|"
                             r"\b[1-9]\d* tests?, 0 failures\b|^Tests: .*\bpassed\b", re.M)
_GIT_COMMIT_LINE = re.compile(r"^\[([^\]\s]+)(?: \([^)]*\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_FIXED_WORDS = re.compile(r"(?i)\b(?:fixed|resolved|since passed|passes now|passed since|now passes|no longer|"
                          r"superseded|was fixed)\b")
_FAIL_WORDS = re.compile(r"(?i)\b(?:fails?|failing|failed|failures?|broken|breaks|errors?|erroring|red)\b")
_DONE_STATUSES = frozenset({"completed", "complete", "done", "finished"})


def command_key(command: str) -> str:
    """What makes two runs runs of the same command: its first line, without a `cd …&&` before it,
    variables set for it, its redirections and a filter of its output after a pipe; a test runner
    however it is started (`python -m pytest` is `pytest`)."""
    line = command.strip().split("\n")[0]
    line = _CD_PREFIX.sub("", line.strip())
    line = _ENV_PREFIX.sub("", line)
    line = _OUTPUT_FILTER.sub("", line)
    line = _REDIRECT.sub("", line)
    line = _RUNNER_SPELLINGS.sub("", line.strip())
    return norm(line)


def is_test_run(command: str) -> bool:
    return bool(_TEST_RUNNER.search(command_key(command)))


@dataclass(frozen=True)
class Event:
    """What happened at message `at` of the dropped part: a command ran, a task list was written, a commit made."""

    at: int
    kind: str  # "run", "tasks", "commit"
    command: str = ""
    output: str = ""
    failed: bool = False
    tasks: tuple[tuple[str, str], ...] = ()  # (text, status) of a task list as written; a task update's one
    subject: str = ""  # a commit's


def _task_list(arguments: Any) -> tuple[tuple[str, str], ...] | None:
    """The whole list a planning tool wrote (Claude Code `TodoWrite`, Codex `update_plan`, Gemini
    `write_todos`, OpenHands `task_tracker`): (text, status) each."""
    if not isinstance(arguments, dict):
        return None
    for key, text_keys in (("todos", ("content", "description", "task", "title")), ("plan", ("step", "content")),
                           ("task_list", ("title", "description", "content"))):
        items = arguments.get(key)
        if isinstance(items, list) and items and all(isinstance(i, dict) for i in items):
            return tuple((norm(next((str(i[k]) for k in text_keys if i.get(k)), "")), str(i.get("status") or "pending").lower())
                         for i in items)
    return None


def events(messages) -> list[Event]:
    """The runs, task lists and commits of `messages`, in order."""
    found: list[Event] = []
    calls: dict[str, ToolCall] = {}
    created: dict[str, str] = {}  # Claude Code's TaskCreate: id → subject
    command_at: tuple[int, str] | None = None  # a trajectory's last command
    trajectory = any(m.role == ASSISTANT for m in messages) and not any(
        isinstance(b, (ToolCall, ToolResult)) for m in messages for b in m.blocks)
    for index, message in enumerate(messages):
        raw = message.raw if isinstance(message.raw, dict) else {}
        results = [b for b in message.blocks if isinstance(b, ToolResult)]
        for block in message.blocks:
            if isinstance(block, ToolCall):
                calls[block.id] = block
                listed = _task_list(block.input)
                if listed is not None:
                    found.append(Event(index, "tasks", tasks=listed))
            elif isinstance(block, ToolResult) and block.tool_call_id in calls:
                call = calls[block.tool_call_id]
                output = result_text(block)
                arguments = call.input if isinstance(call.input, dict) else {}
                if call.name == "TaskCreate" and isinstance(arguments.get("subject"), str):
                    match = re.search(r"#(\w+)", output)
                    created[match.group(1) if match else str(len(created) + 1)] = norm(arguments["subject"])
                elif call.name == "TaskUpdate" and str(arguments.get("taskId")) in created and "status" in arguments:
                    found.append(Event(index, "tasks", tasks=((created[str(arguments["taskId"])], str(arguments["status"]).lower()),)))
                command = call_command(call.input)
                if command is None:
                    continue
                failure = failed(block, raw if len(results) == 1 else None)
                output = printed(output)
                found.append(Event(index, "run", command, output, failure))
                if re.search(r"\bgit\b.*\bcommit\b", command) and not failure and (match := _GIT_COMMIT_LINE.search(output)):
                    found.append(Event(index, "commit", command, subject=norm(match.group(3))))
        if trajectory and message.role == ASSISTANT:
            command = trajectory_command(message)
            command_at = (index, command) if command else None
        elif trajectory and message.role == USER and command_at is not None:
            text = text_of(message)
            found.append(Event(index, "run", command_at[1], text, exit_status(text) not in (None, 0)))
            command_at = None
    return found


def passed(event: Event) -> bool:
    """A run that passed: a test run whose output ends saying so (a count passed, no failures); another
    command that did not fail, unless a filter of its output after a pipe had the last word."""
    if event.kind != "run" or event.failed:
        return False
    if is_test_run(event.command):
        tail = "\n".join(event.output.strip().splitlines()[-15:])
        return bool(_PASSING_RESULT.search(tail)) and not _FAILING_RESULT.search(tail)
    return not _OUTPUT_FILTER.search(event.command.strip().split("\n")[0])


def sections(checkpoint: str) -> dict[str, list[str]]:
    """A checkpoint's `### ` sections: heading → its items (a `- ` line with the lines under it;
    quoted lines as one item, unquoted)."""
    found: dict[str, list[str]] = {}
    heading = None
    for line in checkpoint.split("\n"):
        if line.startswith("#"):
            heading = line.lstrip("#").strip() if line.startswith("### ") else None
            if heading is not None:
                found.setdefault(heading, [])
            continue
        if heading is None or not line.strip():
            continue
        items = found[heading]
        if line.startswith("- ") or (line.startswith("> ") or line == ">") and not (items and items[-1].startswith(">")):
            items.append(line)
        elif items:
            items[-1] += "\n" + line
    return found


def _section(found: dict[str, list[str]], *prefixes: str) -> list[str]:
    return [item for heading, items in found.items() if heading.lower().startswith(prefixes) for item in items]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9_]{3,}", text.lower())
            if w not in {"the", "and", "for", "with", "that", "this", "from", "into", "fix", "add", "make"}}


def _same_task(step: str, other: str) -> bool:
    """Whether two texts name the same task: most of the step's words are in the other."""
    mine, theirs = _words(step), _words(other)
    return bool(mine) and len(mine & theirs) >= max(1, int(0.6 * len(mine) + 0.5))


def _status_of(step: str, tasks: tuple[tuple[str, str], ...]) -> str | None:
    """The status a task list gives the step: its task of the same text, else the one that shares
    most of its words (None when none names it)."""
    exact = [status for text, status in tasks if text.casefold() == step.casefold()]
    if exact:
        return exact[-1]
    named = [(len(_words(step) & _words(text)) / len(_words(step) | _words(text)), status)
             for text, status in tasks if _same_task(step, text)]
    return max(named)[1] if named else None


@dataclass(frozen=True)
class Contradiction:
    kind: str  # "open problem", "error not said fixed", "last run", "next step", "last state"
    statement: str  # the checkpoint's item
    evidence: str  # the later event that contradicts it

    def __str__(self) -> str:
        return f"{self.kind}: {self.statement[:160]!r}, but {self.evidence[:160]}"


def _later_pass(runs: list[Event], key: str, after: int) -> Event | None:
    return next((e for e in runs if e.at > after and command_key(e.command) == key and passed(e)), None)


def _item_command(item: str) -> str | None:
    match = re.match(r"^- `([^`\n]+)`", item)
    return match.group(1) if match else None


def contradictions(dropped, checkpoint: str) -> list[Contradiction]:
    """The statements of `checkpoint` that a later event of `dropped` (the messages it summarizes)
    contradicts:
    - an open problem (`- `command` failed: …`) when a later run of the same command passed;
    - an error listed without saying it was fixed, when the command whose output holds it (its
      last failing run) passed later;
    - a run listed as failing (`(failed)`, or a result that counts failures) as the last run of
      its command, when a later run of it passed;
    - a next step that a later commit (its subject names the step, or the step, in progress, is to
      commit) or a later task list or update (the task done) closed;
    - last words that say something fails when a test run after them passed (unless the section
      says, beside the quote, what passed since or that it was fixed).
    An item that says it was fixed since (or superseded) is not stale. Same command: `command_key`."""
    found: list[Contradiction] = []
    found += _stale(dropped, checkpoint)
    return [c for c in found if not _FIXED_WORDS.search(c.statement)]


def _stale(dropped, checkpoint: str) -> list[Contradiction]:
    found: list[Contradiction] = []
    happened = events(dropped)
    runs = [e for e in happened if e.kind == "run"]
    listed = sections(checkpoint)

    for item in _section(listed, "open problem"):
        command = _item_command(item)
        if command is None:
            continue
        key = command_key(command.rstrip(" …"))
        failures = [e for e in runs if not passed(e) and (command_key(e.command) == key or command_key(e.command).startswith(key))]
        if not failures:
            continue
        later = _later_pass(runs, command_key(failures[-1].command), failures[-1].at)
        if later is not None:
            found.append(Contradiction("open problem", item, f"`{later.command}` passed later (message {later.at})"))

    for item in _section(listed, "errors"):
        text = norm(item[2:]).rstrip(" …").strip()
        if not text or text.startswith("…"):
            continue
        sources = [e for e in runs if (e.failed or _TRACEBACK in e.output or _FAILING_RESULT.search(e.output))
                   and text in norm(e.output)]
        if not sources:
            continue
        last = sources[-1]
        later = _later_pass(runs, command_key(last.command), last.at)
        if later is not None:
            found.append(Contradiction("error not said fixed", item,
                                       f"`{later.command}` passed after the run that printed it (message {later.at})"))

    for item in _section(listed, "last test", "last run", "runs"):
        command = _item_command(item)
        result = item.split("`:", 1)[-1] if command else item
        if command is None or not ("(failed)" in item or _FAILING_RESULT.search(result)):
            continue
        key = command_key(command)
        failures = [e for e in runs if command_key(e.command) == key and not passed(e)]
        if not failures:
            continue
        later = _later_pass(runs, key, failures[-1].at)
        if later is not None:
            found.append(Contradiction("last run", item, f"a later run, `{later.command}`, passed (message {later.at})"))

    for item in _section(listed, "next step"):
        step = norm(item[2:] if item.startswith("- ") else item)
        stated = [(e.at, status) for e in happened if e.kind == "tasks"
                  and (status := _status_of(step, e.tasks)) is not None and status not in _DONE_STATUSES]
        after, status = stated[-1] if stated else (-1, "")
        # A commit closes the step it names, or the step of committing the agent was doing.
        committing = status.replace("-", "_") == "in_progress" and re.search(r"(?i)\bcommit", step)
        for event in happened:
            if event.at <= after:
                continue
            if event.kind == "tasks" and _status_of(step, event.tasks) in _DONE_STATUSES:
                found.append(Contradiction("next step", item, f"a later task list marks it done (message {event.at})"))
                break
            if event.kind == "commit" and (_same_task(step, event.subject) or committing):
                found.append(Contradiction("next step", item, f"a later commit closed it: {event.subject!r} (message {event.at})"))
                break

    last_state = _section(listed, "last state")
    # A note beside the quote that says what passed since (or that it was fixed) updates it.
    updated = any(_FIXED_WORDS.search(i) or _PASSING_RESULT.search(i) for i in last_state if not i.startswith(">"))
    for item in [] if updated else last_state:
        said = norm(re.sub(r"(?m)^> ?", "", item))
        if not _FAIL_WORDS.search(said):
            continue
        start = said[:80].rstrip(" …")
        at = next((i for i in range(len(dropped) - 1, -1, -1)
                   if dropped[i].role == ASSISTANT and start and start in norm(text_of(dropped[i]))), None)
        if at is None:
            continue
        later = next((e for e in runs if e.at > at and is_test_run(e.command) and passed(e)), None)
        if later is not None:
            found.append(Contradiction("last state", item, f"a later test run, `{later.command}`, passed (message {later.at})"))
    return found


def checkpoint_of(transcript) -> str:
    """The text of the summary message compact wrote ("" when there is none)."""
    return next((text_of(m) for m in transcript.messages if is_summary_message(m)), "")


def recorded_sessions() -> list[Path]:
    """The sessions the agents recorded (tests/recorded/<agent>/, see its README.md)."""
    return sorted(p for p in RECORDED.glob("*/*.json*") if p.is_file())


def window_after_first_commit(transcript) -> int:
    """The --keep-recent-tokens that keeps what follows a session's first commit: the tokens from
    the first assistant message after it to the end."""
    happened = events(transcript.messages)
    commit = next(e.at for e in happened if e.kind == "commit")
    start = next(i for i in range(commit + 1, len(transcript.messages)) if transcript.messages[i].role == ASSISTANT)
    counting = CompactOptions(force=True, emergency=True).counting
    return sum(TokenCounter(transcript, counting).per_message(transcript)[start:])
