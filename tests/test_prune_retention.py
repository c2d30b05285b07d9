"""What `prune` (its defaults) keeps of the results it clears and trims, on the corpus: the facts
a later turn needs, defined here apart from prune's own code (ops/pruning/key_lines.py).

- An error message: of a failed result (an error result, or one that states a non-zero exit), the
  first line with an error's words, else its last line (never an exit status alone, a tag, or a
  line that says what it is doing); of a traceback, its exception line.
- A commit: the hash in the `[branch hash] subject` line of a `git commit`'s output.
- A rejection: the words a user typed when they rejected a call (Claude Code records them in the
  result, after "the user said:").

A fact is kept when the pruned result still holds its text (its first 120 characters for an
error, 300 for a rejection), whitespace aside.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from transcompact.core.model import ToolCall, ToolResult, result_text
from transcompact.formats import dumps, loads
from transcompact.ops.pruning.prune import prune

from .conftest import CORPUS, supported_corpus_files

KINDS = ("errors", "commits", "rejections")
_TRACEBACK = "Traceback (most recent call last):"
_ERROR_WORDS = re.compile(r"(?i)\b(?:\w*error|\w*exception|fatal|failed|failure|panic|denied|not found|no such|cannot|"
                          r"can't|unable|invalid|refused)\b")
_NOT_A_MESSAGE = re.compile(r"^(?:Exit code:? -?\d+|Command exited with code -?\d+|<returncode>-?\d+</returncode>|<\/?\w+>)$"
                            r"|(?:\.\.\.|…)$", re.I)
_NON_ZERO_EXIT = re.compile(r"^(?:Exit code:?|Command exited with code|Process exited with code) -?[1-9]\d*\b"
                            r"|<returncode>-?[1-9]\d*</returncode>", re.I | re.M)
_GIT_COMMIT = re.compile(r"\bgit\b[^\n|;&]*\bcommit\b")
_COMMIT = re.compile(r"^\[[^\]\s]+(?: \([^)]*\))? ([0-9a-f]{7,40})\] \S.*$", re.M)
_REJECTED = "doesn't want to proceed with this tool use"
_USER_SAID = re.compile(r"the user said:\s*(.+)", re.S)


def norm(text: str) -> str:
    return " ".join(text.split())


def _lines(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "\\n" in text:  # a part that came as a JSON string: its `\n` are its lines
        lines = [part.strip() for line in lines for part in line.split("\\n") if part.strip()]
    return lines


def facts(result: ToolResult, call: ToolCall | None) -> list[tuple[str, str]]:
    """(kind, text) of each fact the result holds."""
    text = result_text(result)
    found = []
    if _REJECTED in text:
        if said := _USER_SAID.search(text):
            found.append(("rejections", norm(said.group(1))[:300]))
        return found
    if (result.is_error or _NON_ZERO_EXIT.search(text[:200])) and _TRACEBACK not in text:
        candidates = [line for line in _lines(text) if not _NOT_A_MESSAGE.search(line)]
        message = next((line for line in candidates if _ERROR_WORDS.search(line)), candidates[-1] if candidates else None)
        if message:
            found.append(("errors", norm(message)[:120]))
    if _TRACEBACK in text:
        after = text.split(_TRACEBACK)[-1].splitlines()[1:]
        exception = next((line.strip() for line in after if line.strip() and not line.startswith((" ", "\t"))), None)
        if exception:
            found.append(("errors", norm(exception)[:120]))
    command = call.input.get("command") if call is not None and isinstance(call.input, dict) else None
    if isinstance(command, str) and _GIT_COMMIT.search(command):
        found += [("commits", commit_hash) for commit_hash in _COMMIT.findall(text)]
    return found


def kept(data: bytes, name: str) -> tuple[Counter, Counter]:
    """(facts found, facts kept) by kind, of one transcript pruned with the defaults."""
    transcript = loads(data, name)
    calls = {c.id: c for m in transcript.messages for c in m.tool_calls}
    pruned = loads(dumps(prune(transcript)[0]), name)
    after = {r.tool_call_id: norm(result_text(r)) for m in pruned.messages for r in m.tool_results}
    total, found = Counter(), Counter()
    for message in transcript.messages:
        for result in message.tool_results:
            for kind, text in facts(result, calls.get(result.tool_call_id)):
                total[kind] += 1
                found[kind] += text in after.get(result.tool_call_id, "")
    return total, found


def test_prune_keeps_the_error_messages_commits_and_rejections_it_clears():
    if not CORPUS.is_dir():
        pytest.skip("the shared corpus is not here")
    total, found = Counter(), Counter()
    for param in supported_corpus_files():
        path = param.values[0]
        each_total, each_found = kept(path.read_bytes(), str(path))
        total += each_total
        found += each_found
    # Measured: errors 59 of 59, commits 7 of 7 (before prune kept key lines: 18 of 59, 2 of 7). No
    # rejection with words is in a part of a log that is read (the corpus's one is before a compaction).
    for kind in ("errors", "commits"):
        assert total[kind] and found[kind] / total[kind] >= 0.95, (kind, found, total)
    assert found["rejections"] == total["rejections"]


def test_the_facts_are_found_as_defined():
    failed = ToolResult("t1", "Exit code 1\nRunning the tests...\nFAILED test_a - assert 1 == 2\nmore", True)
    assert facts(failed, None) == [("errors", "FAILED test_a - assert 1 == 2")]
    traceback = ToolResult("t2", f"{_TRACEBACK}\n  File \"a.py\", line 1\nKeyError: 'x'\n", False)
    assert facts(traceback, None) == [("errors", "KeyError: 'x'")]
    commit = ToolCall("t3", "Bash", {"command": "git add -A && git commit -m 'Fix it'"})
    assert facts(ToolResult("t3", "[main 67cdb2e] Fix it\n 1 file changed", False), commit) == [("commits", "67cdb2e")]
    rejected = ToolResult("t4", f"The user {_REJECTED}. … the user said:\nnot that file", True)
    assert facts(rejected, None) == [("rejections", "not that file")]
