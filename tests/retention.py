"""How much of what compact drops survives in its output: facts of the dropped part found again.

The facts are defined here, apart from the checkpoint's own code: what the user wrote (each
message, whole when short, else its first and last 150 characters), the file paths tool calls
named, the real error messages (what an error result says went wrong: its first line with an
error's words, else its last; a traceback's exception line),
the commands run (whole, but a here-document's body is the content of the file it writes, not
part of the command: such a command is found when what surrounds the body is), and the assistant's last words before the cut. A fact is found when
its text is in the output, whitespace aside. Two baselines get the same token budget as
compact's output: dropping the oldest turns, and masking old tool results (then dropping).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from transcompact.core.jsondata import compact_json
from transcompact.core.model import ASSISTANT, USER, ToolCall, ToolResult, result_text
from transcompact.core.summary_text import text_of
from transcompact.counting.counter import TokenCounter
from transcompact.formats import dumps, loads
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.cut import starts_turn
from transcompact.ops.compaction.summarize import SummaryOptions
from transcompact.ops.compaction.summary_message import find_previous, is_summary_message
from transcompact.ops.pruning.prune import PruneOptions, prune

KINDS = ("user", "paths", "errors", "commands", "last_state")
PATH_KEYS = ("path", "file_path", "filename", "notebook_path")
_FENCE = re.compile(r"```[\w-]*\n(.*?)```", re.S)


def norm(text: str) -> str:
    return " ".join(text.split())


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


def _user_fact(text: str) -> list[str]:
    text = norm(text)
    return [text] if len(text) <= 300 else [text[:150], text[-150:]]


_ERROR_WORDS = re.compile(r"(?i)\b(?:\w*error|\w*exception|fatal|failed|failure|panic|denied|not found|no such|cannot|"
                          r"can't|unable|invalid|refused)\b")
_NOT_A_MESSAGE = re.compile(r"^(?:Exit code -?\d+|Command exited with code -?\d+|<\/?\w+>)$|(?:\.\.\.|…)$")


def _error_message(lines: list[str]) -> str | None:
    """What an error result says went wrong: its first line with an error's words, else its last
    line (never an exit status alone, a tag, or a line that says what it is doing)."""
    candidates = [line for line in lines if not _NOT_A_MESSAGE.search(line) and not line.startswith("Traceback (most recent")]
    return next((line for line in candidates if _ERROR_WORDS.search(line)), candidates[-1] if candidates else None)


def facts(messages, trajectory: bool) -> dict[str, list[list[str]]]:
    """kind → [the pieces that must all be found]."""
    found: dict[str, list[list[str]]] = {kind: [] for kind in KINDS}
    seen_task = False
    for message in messages:
        raw = message.raw if isinstance(message.raw, dict) else {}
        if message.role == USER and not is_summary_message(message) and not raw.get("isMeta") and not raw.get("is_demo"):
            text = text_of(message).strip()
            if text and not (trajectory and seen_task):
                found["user"].append(_user_fact(text))
                seen_task = True
        for block in message.blocks:
            if isinstance(block, ToolCall) and isinstance(block.input, dict):
                for key in PATH_KEYS:
                    if isinstance(block.input.get(key), str) and block.input[key].strip():
                        found["paths"].append([norm(block.input[key])])
                if isinstance(block.input.get("command"), str) and block.input["command"].strip():
                    found["commands"].append(_command_fact(block.input["command"]))
            elif isinstance(block, ToolResult):
                text = result_text(block)
                lines = [line.strip() for line in text.splitlines() if line.strip()]
                if "\\n" in text:  # a part that came as a JSON string: its `\n` are its lines
                    lines = [part.strip() for line in lines for part in line.split("\\n") if part.strip()]
                if block.is_error and "Traceback (most recent call last):" not in text:
                    message = _error_message(lines)
                    if message:
                        found["errors"].append([norm(message)[:120]])
                if "Traceback (most recent call last):" in text:
                    after = text.split("Traceback (most recent call last):")[-1].splitlines()
                    exception = next((line.strip() for line in after[1:] if line.strip() and not line.startswith((" ", "\t"))), None)
                    if exception:
                        found["errors"].append([norm(exception)[:120]])
        if trajectory and message.role == ASSISTANT:
            blocks = _FENCE.findall(text_of(message))
            if blocks:
                found["commands"].append(_command_fact(blocks[-1]))
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


def measure(path, keep: int):
    """(compact's score, masking's, dropping's) for one file at one window size; None when nothing was dropped."""
    data = path.read_bytes()
    transcript = loads(data, str(path))
    options = CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep))
    compacted, report = compact(transcript, options)
    if report.cut is None:
        return None
    out = loads(dumps(compacted), str(path))
    old = transcript.messages[: report.cut]
    previous = find_previous(old)
    real = [m for i, m in enumerate(old) if not (previous and i in previous.covered)]
    from transcompact.ops.compaction.checkpoint import is_trajectory

    wanted = facts(real, is_trajectory(real))
    counting = options.counting
    budget = sum(TokenCounter(out, counting).per_message(out))
    scores = []
    for candidate in (out, mask_old_results(transcript, budget, counting), drop_oldest(transcript, budget, counting)):
        score = Score()
        score.add(wanted, output_text(candidate))
        scores.append(score)
    return scores
