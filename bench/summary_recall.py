"""Our summary against the agents' own: what each keeps of the part it summarizes, by kind of fact.

The Claude Code logs of the corpus hold compactions Claude wrote itself (an `isCompactSummary`
line after a `compact_boundary`). For each, the part it summarizes is what the log held before
that boundary (its active view then: the lines read up to the boundary), and its size is the
summary's own. transcompact's emergency summary of the same part, at the same size (without a
model: `compact.summary_text` over the whole part), is set beside it.

The facts are defined here, apart from the checkpoint's code, each by a key token that a
summary in the agent's own words can hold as well as ours: a user message by five consecutive
content words of it; a path by its basename; a command by its program and first argument; an
error by its exception name or code (else five content words of the line that says what
failed); the last assistant words by five of their content words; a task item by five words of
its text on a line that gives its status; a commit by five words of its subject; a modified file
by its basename; the last test result by its count ("12 passed").

And the other way round, precision: what our checkpoint states that a later event of the part it
summarizes contradicts (`contradicted`: an error listed as open that a later passing run of the
same command fixed, a failing run stated as the last when a later one passed, a next step a later
commit or task list closed, last words saying something fails when a later test run passed). The
probe is tests/retention.py's `contradictions`, which the tests run too.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("user words", "paths", "commands", "errors", "last assistant words", "tasks with status", "commits",
         "modified files", "last test result")
_WORD = re.compile(r"[A-Za-z0-9_][\w'./-]*")
_STOP = frozenset("the a an and or to of in on for is it this that with be as at by i you we can do please let me my "
                  "your our are was were so if not no yes but from into then there here have has had will would "
                  "should could just now also all any".split())
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|\b(?:TS|E|CS|SC)\d{3,5}\b|\bHTTP \d{3}\b")
_ERROR_WORDS = re.compile(r"(?i)\b(?:error|exception|fatal|failed|failure|panic|denied|not found|cannot|unable|invalid)\b")
_GIT_COMMIT = re.compile(r"^\[[^\]\s]+(?: \([^)]*\))? [0-9a-f]{7,40}\] (.+)$", re.M)
_COUNT = re.compile(r"\b\d+ (?:passed|failed|passing|failing)\b")
_EXIT = re.compile(r"^(?:Exit code|Command exited with code) ([1-9]\d*)", re.M)
PATH_KEYS = ("path", "file_path", "filename", "notebook_path")
EDITS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
STATUS_WORDS = {"done": ("[x]", "done", "completed", "complete", "finished", "✓", "✅", "committed", "fixed", "implemented"),
                "pending": ("[ ]", "pending", "todo", "next", "remaining", "not yet", "to do"),
                "in progress": ("in progress", "in-progress", "[ ]", "current", "working on", "ongoing")}


def words(text: str) -> list[str]:
    return [w.lower().strip("'.") for w in _WORD.findall(text) if w.lower() not in _STOP]


def five(text: str) -> list[tuple[str, ...]]:
    """Every run of five consecutive content words (all of them when fewer)."""
    found = words(text)
    return [tuple(found)] if len(found) <= 5 else [tuple(found[i:i + 5]) for i in range(len(found) - 4)]


def holds(summary_words: str, runs: list[tuple[str, ...]]) -> bool:
    return any(run and f" {' '.join(run)} " in summary_words for run in runs)


@dataclass
class Fact:
    kind: str
    runs: list[tuple[str, ...]] = field(default_factory=list)  # found when one is in the summary's words
    token: str | None = None  # or found when this is in the summary's text
    status: str | None = None  # a task's: the summary's line that holds it must say it


def facts_of(messages, agent_lines: frozenset[int] = frozenset()) -> list[Fact]:
    """The facts of `messages`; `agent_lines` are the lines Claude Code wrote in the user's turn (a skill's body)."""
    from transcompact.core.model import ASSISTANT, USER, Text, ToolCall, ToolResult, result_text

    found: list[Fact] = []
    calls: dict[str, ToolCall] = {}
    tasks: dict[str, tuple[str, str]] = {}
    last_result = None
    for message in messages:
        raw = message.raw if isinstance(message.raw, dict) else {}
        if message.role == USER and not raw.get("isMeta") and not raw.get("isCompactSummary"):
            text = "\n".join(b.text for b in message.blocks if isinstance(b, Text) and b.line not in agent_lines).strip()
            text = re.sub(r"<(system-reminder|task-notification|command-\w+|local-command-\w+)>.*?</\1>", "", text, flags=re.S)
            if text.strip():
                found.append(Fact("user words", five(text)))
        for block in message.blocks:
            if isinstance(block, ToolCall):
                calls[block.id] = block
                arguments = block.input if isinstance(block.input, dict) else {}
                for key in PATH_KEYS:
                    if isinstance(arguments.get(key), str) and arguments[key].strip():
                        base = Path(arguments[key].strip()).name
                        found.append(Fact("paths", token=base))
                        if block.name in EDITS:
                            found.append(Fact("modified files", token=base))
                if isinstance(arguments.get("command"), str) and arguments["command"].strip():
                    found.append(Fact("commands", token=program_and_argument(arguments["command"])))
                if block.name == "TodoWrite" and isinstance(arguments.get("todos"), list):
                    tasks = {str(i): (t.get("content", ""), t.get("status", "pending")) for i, t in enumerate(arguments["todos"])
                             if isinstance(t, dict)}
                if block.name == "TaskCreate" and isinstance(arguments.get("subject"), str):
                    tasks[str(len(tasks) + 1)] = (arguments["subject"], "pending")
                if block.name == "TaskUpdate" and str(arguments.get("taskId")) in tasks and "status" in arguments:
                    tasks[str(arguments["taskId"])] = (tasks[str(arguments["taskId"])][0], arguments["status"])
            elif isinstance(block, ToolResult):
                text = result_text(block)
                call = calls.get(block.tool_call_id)
                failed = bool(block.is_error) or bool(_EXIT.search(text[:200]))
                if failed or "Traceback (most recent call last)" in text:
                    found.append(error_fact(text))
                if call is not None and isinstance(call.input, dict) and isinstance(call.input.get("command"), str):
                    if "commit" in call.input["command"] and (match := _GIT_COMMIT.search(text)):
                        found.append(Fact("commits", five(match.group(1))))
                    if match := _COUNT.search(text[-2000:]):
                        last_result = match.group(0)
    for text, status in tasks.values():
        status = {"completed": "done", "in_progress": "in progress"}.get(status, status)
        found.append(Fact("tasks with status", five(text), status=status))
    last = next((t for m in reversed(messages) if m.role == ASSISTANT
                 for t in ["\n".join(b.text for b in m.blocks if isinstance(b, Text)).strip()] if t), None)
    if last:
        found.append(Fact("last assistant words", five(last)))
    if last_result:
        found.append(Fact("last test result", token=last_result))
    unique: dict[tuple, Fact] = {}  # a fact said twice is one fact
    for fact in found:
        unique.setdefault((fact.kind, fact.token, tuple(fact.runs), fact.status), fact)
    return list(unique.values())


def program_and_argument(command: str) -> str:
    line = command.strip().split("\n")[0]
    line = re.split(r"\s*&&\s*", line)[-1] if line.startswith("cd ") else line
    try:
        parts = shlex.split(line, posix=True)
    except ValueError:
        parts = line.split()
    return " ".join(parts[:2])


def error_fact(text: str) -> Fact:
    """An exception's name or an error's code; else five words of any line that says what failed (else the last)."""
    if match := _EXCEPTION.search(text):
        return Fact("errors", token=match.group(0))
    lines = [line for line in text.splitlines() if _ERROR_WORDS.search(line)] or text.strip().splitlines()[-1:]
    return Fact("errors", [run for line in lines for run in five(line)])


def kept(fact: Fact, summary: str, summary_words: str) -> bool:
    if fact.token is not None:
        return fact.token.lower() in summary.lower()
    if fact.status is None:
        return holds(summary_words, fact.runs)
    for line in summary.splitlines():
        if holds(" " + " ".join(words(line)) + " ", fact.runs):
            return any(w in line.lower() for w in STATUS_WORDS.get(fact.status, (fact.status,)))
    return False


@dataclass
class Recall:
    found: Counter = field(default_factory=Counter)
    total: Counter = field(default_factory=Counter)

    def add(self, facts: list[Fact], summary: str) -> None:
        summary_words = " " + " ".join(words(summary)) + " "
        for fact in facts:
            self.total[fact.kind] += 1
            self.found[fact.kind] += kept(fact, summary, summary_words)

    def of(self, kind: str) -> float | None:
        return self.found[kind] / self.total[kind] if self.total[kind] else None


ROOT = Path(__file__).resolve().parent.parent


def _tests_importable() -> None:
    """The repository's root on the path, so that `tests.retention` (the probe, the facts) imports."""
    import sys

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def contradicted(dropped, checkpoint: str) -> list:
    """The statements of `checkpoint` (compact's, of the messages `dropped`) that a later event of
    `dropped` contradicts, each a `Contradiction` (kind, statement, evidence)."""
    _tests_importable()
    from tests.retention import contradictions

    return contradictions(dropped, checkpoint)


def precision(corpus: Path, windows: tuple[int, ...] = (2000, 5000)) -> tuple[int, int, Counter]:
    """(statements contradicted, checkpoints probed, contradicted per kind): compact --emergency of
    every corpus conversation at each window, and of each session the agents recorded
    (tests/recorded/) at the window that keeps what follows its first commit."""
    _tests_importable()
    from tests.retention import Conversation, checkpoint_of, compacted, corpus_conversations, recorded_sessions, window_after_first_commit

    found: Counter = Counter()
    probed = 0
    runs = [(c, keep) for c in corpus_conversations(corpus) for keep in windows]
    runs += [(Conversation(path), None) for path in recorded_sessions()]
    for conversation, keep in runs:
        try:
            transcript = conversation.load()
        except Exception:  # noqa: BLE001 - not one conversation compact reads
            continue
        done = compacted(conversation, keep if keep is not None else window_after_first_commit(transcript), transcript)
        if done is None:
            continue
        probed += 1
        found.update(c.kind for c in contradicted(done[2], checkpoint_of(done[1])))
    return sum(found.values()), probed, found


def compactions(corpus: Path):
    """(name, the part a compaction of Claude's summarizes, Claude's summary text) for each in the corpus."""
    import json

    from transcompact.formats import loads

    for path in sorted(corpus.glob("claude-code/*.jsonl")):
        lines = path.read_bytes().splitlines(keepends=True)
        for index, line in enumerate(lines):
            if b'"compact_boundary"' not in line or index + 1 >= len(lines):
                continue
            following = json.loads(lines[index + 1])
            if not following.get("isCompactSummary"):
                continue
            content = following["message"]["content"]
            text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
            part = loads(b"".join(lines[:index]), path.name)
            if part.messages:
                yield path.name, part, text


def ours(part, size_tokens: int) -> str:
    """transcompact's emergency summary of the whole part, at `size_tokens` (checkpoint and user words shared)."""
    from transcompact.core.summary_text import compose
    from transcompact.ops.compaction.compact import CompactOptions, summary_text
    from transcompact.ops.compaction.cut import Cut

    end = len(part.messages)
    options = CompactOptions(emergency=True, checkpoint_tokens=size_tokens // 2, keep_user_tokens=size_tokens - size_tokens // 2)
    return compose(summary_text(part, Cut(end, end, 0, 0, False, end), None, options))


def agent_lines(part) -> frozenset[int]:
    from transcompact.formats import adapter

    return adapter(part).agent_lines(part)


def measure(corpus: Path) -> tuple[Recall, Recall, int]:
    agent, mine, count = Recall(), Recall(), 0
    for _, part, theirs in compactions(corpus):
        size = max(200, len(theirs) // 4)
        facts = facts_of(part.messages, agent_lines(part))
        agent.add(facts, theirs)
        mine.add(facts, ours(part, size))
        count += 1
    return agent, mine, count


def task_recall(corpus: Path, keep: int = 2000) -> Recall:
    """Task items with their status: compact --emergency of each corpus log that holds a task list,
    the facts of the part it drops against its summary."""
    from transcompact.core.summary_text import text_of
    from transcompact.formats import loads
    from transcompact.ops.compaction.compact import CompactOptions, compact
    from transcompact.ops.compaction.summarize import SummaryOptions
    from transcompact.ops.compaction.summary_message import is_summary_message

    recall = Recall()
    for path in sorted(corpus.glob("claude-code/*.jsonl")):
        data = path.read_bytes()
        if b'"TodoWrite"' not in data and b'"TaskCreate"' not in data:
            continue
        transcript = loads(data, path.name)
        options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep))
        compacted, report = compact(transcript, options)
        if report.cut is None:
            continue
        summary = next(text_of(m) for m in compacted.messages if is_summary_message(m))
        facts = [f for f in facts_of(transcript.messages[:report.cut], agent_lines(transcript)) if f.kind == "tasks with status"]
        recall.add(facts, summary)
    return recall


def worst_growth(corpus: Path) -> float:
    """The largest summary of a second compaction, over the budget of the summary message
    (--checkpoint-tokens + --keep-user-tokens), across the corpus."""
    from transcompact.formats import dumps, loads
    from transcompact.ops.compaction.compact import CompactOptions, compact
    from transcompact.ops.compaction.summarize import SummaryOptions

    worst = 0.0
    for path in sorted(p for p in corpus.glob("*/*") if p.suffix in (".json", ".jsonl")):
        try:
            transcript = loads(path.read_bytes(), path.name)
        except Exception:  # a file that holds several conversations, or one only read: not this measure's
            continue
        for keep in (5000, 2000):
            options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep))
            compacted, report = compact(transcript, options)
            if report.cut is None:
                break
            transcript = loads(bytes(dumps(compacted)), path.name)
        else:
            budget = options.checkpoint_tokens + options.keep_user_tokens
            worst = max(worst, report.summary_chars * options.counting.ratio / budget)
    return worst
