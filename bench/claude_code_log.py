"""A deterministic Claude Code session log of any length, as Claude Code 2.1 writes one: per turn an
assistant text line, a tool_use line, three progress lines and the tool_result line (with its
`toolUseResult` UI copy), each in the full envelope (uuid, parentUuid, session, cwd, version).

With `branchy`, the log has the branches a long real session grows, many of them:
- the progress lines of each tool call hang off its tool_use line and the result follows the
  tool_use line, so each call leaves a progress leaf;
- every 7th turn the user rewinds: a new prompt follows the result of two turns before, which
  leaves those two turns on an abandoned branch;
- every 11th turn (after the first 64 KB, where `check` forbids sidechains) runs a subagent whose
  five lines are written inline as a sidechain (`isSidechain`, its own root), between the Task
  call and its result.
"""

from __future__ import annotations

import json
import random
import sys
import uuid
from datetime import datetime, timedelta, timezone

REWIND_EVERY = 7
SUBAGENT_EVERY = 11
SIDECHAIN_FREE_BYTES = 64 * 1024
_FRAMING = 16  # the characters' worth of tokens the API adds for each message (its role, its block markers)


def generate(lines_wanted: int, seed: int = 7, branchy: bool = False) -> bytes:
    """`lines_wanted` lines of one session, the same bytes for the same arguments."""
    rng = random.Random(seed)
    words = ["def", "return", "self", "import", "value", "error", "path", "config", "result", "index", "data", "request",
             "session", "token"]
    session = str(uuid.UUID(int=rng.getrandbits(128)))
    start = datetime(2026, 2, 10, 22, 0, tzinfo=timezone.utc)
    out: list[str] = []
    written = 0
    said = 0  # the characters of the conversation so far, which each response's usage grows with
    usages: dict[str, dict] = {}  # the usage of each response, by its message id

    def line(kind: str, parent: str | None, sidechain: bool = False, **fields) -> str:
        """Append one line after `parent`; its uuid."""
        nonlocal written
        uid = str(uuid.UUID(int=rng.getrandbits(128)))
        value = {"parentUuid": parent, "isSidechain": sidechain, "userType": "external", "cwd": "/home/ada/projects/shop",
                 "sessionId": session, "version": "2.1.38", "gitBranch": "master", "type": kind, **fields, "uuid": uid,
                 "timestamp": (start + timedelta(milliseconds=250 * len(out))).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"}
        out.append(json.dumps(value, separators=(",", ":")))
        written += len(out[-1]) + 1
        return uid

    def text(k: int) -> str:
        return " ".join(rng.choice(words) for _ in range(k))

    def assistant(parent: str | None, message_id: str, content: list, sidechain: bool = False, **fields) -> str:
        nonlocal said
        # The prompt a response recorded: a system prompt and tools of about 20,000 tokens, and the
        # conversation before it, as a real log's usage grows; each line of the response repeats it.
        first = message_id not in usages  # a response's lines are one message to the API
        usage = usages.setdefault(message_id, {"input_tokens": 3, "cache_creation_input_tokens": 120,
                                               "cache_read_input_tokens": 20000 + said // 4, "output_tokens": 80})
        said += _FRAMING * first + sum(len(block["text"]) if block["type"] == "text" else
                               len(block["name"]) + len(json.dumps(block["input"], separators=(",", ":"))) for block in content)
        message = {"model": "claude-sonnet-4-5", "id": message_id, "type": "message", "role": "assistant",
                   "stop_reason": None, "usage": usage, "content": content}
        return line("assistant", parent, sidechain, message=message, **fields)

    def result(parent: str, tool: str, output: str, sidechain: bool = False, **fields) -> str:
        nonlocal said
        said += _FRAMING + len(output)
        content = [{"tool_use_id": tool, "type": "tool_result", "content": output, "is_error": False}]
        return line("user", parent, sidechain, message={"role": "user", "content": content},
                    toolUseResult={"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
                    sourceToolAssistantUUID=parent, **fields)

    def subagent(turn: int) -> str:
        """A Task call, its subagent's sidechain lines, and the Task result; the result's uuid."""
        task, request = f"toolu_task_{turn:015d}", f"req_{turn:020d}"
        call = assistant(tip, f"msg_task_{turn:020d}", [{"type": "tool_use", "id": task, "name": "Task",
                                                          "input": {"description": "Look around", "prompt": text(20)}}],
                         requestId=request)
        agent = f"a{turn:07x}"
        side = line("user", None, True, agentId=agent, message={"role": "user", "content": text(20)})
        side = assistant(side, f"msg_sub_{turn:020d}_0", [{"type": "text", "text": text(30)}], True, agentId=agent)
        read = f"toolu_sub_{turn:016d}"
        side = assistant(side, f"msg_sub_{turn:020d}_1", [{"type": "tool_use", "id": read, "name": "Read",
                                                           "input": {"file_path": f"/src/m{turn % 40}.py"}}], True, agentId=agent)
        side = result(side, read, text(80), True, agentId=agent)
        assistant(side, f"msg_sub_{turn:020d}_2", [{"type": "text", "text": text(40)}], True, agentId=agent)
        return result(call, task, text(40))

    tip = line("user", None, message={"role": "user", "content": "Find and fix the failing tests."})
    turn_ends = [tip]  # the last line of each turn, which a rewind goes back to
    turn = 0
    while len(out) < lines_wanted:
        if branchy and turn % REWIND_EVERY == REWIND_EVERY - 1 and len(turn_ends) > 2:
            tip = line("user", turn_ends[-3], message={"role": "user", "content": "No, go back and try another way."})
        if branchy and turn % SUBAGENT_EVERY == SUBAGENT_EVERY - 1 and written > SIDECHAIN_FREE_BYTES:
            tip = subagent(turn)
        mid, request = f"msg_{turn:024d}", f"req_{turn:020d}"
        tip = assistant(tip, mid, [{"type": "text", "text": text(rng.randint(10, 60))}], requestId=request)
        tool = f"toolu_{turn:020d}"
        call = tip = assistant(tip, mid, [{"type": "tool_use", "id": tool, "name": "Bash",
                                             "input": {"command": f"pytest -q tests/test_{turn % 50}.py",
                                                       "description": "Run tests"}}], requestId=request)
        for p in range(3):
            tip = line("progress", tip, data={"type": "bash_progress", "output": text(20), "fullOutput": text(40),
                                              "elapsedTimeSeconds": p, "totalLines": p},
                       toolUseID=f"bash-progress-{p}", parentToolUseID=tool)
        output = "\n".join(text(rng.randint(5, 15)) for _ in range(rng.randint(5, 30)))
        tip = result(call if branchy else tip, tool, output)
        turn_ends.append(tip)
        turn += 1
    return ("\n".join(out[:lines_wanted]) + "\n").encode()


if __name__ == "__main__":
    sys.stdout.buffer.write(generate(int(sys.argv[1]), branchy="--branchy" in sys.argv[2:]))
