"""A deterministic Claude Code session log of any length, as Claude Code 2.1 writes one: per turn an
assistant text line, a tool_use line, three progress lines and the tool_result line (with its
`toolUseResult` UI copy), each in the full envelope (uuid, parentUuid, session, cwd, version)."""

from __future__ import annotations

import json
import random
import sys
import uuid
from datetime import datetime, timedelta, timezone


def generate(lines_wanted: int, seed: int = 7) -> bytes:
    """`lines_wanted` lines of one session, the same bytes for the same arguments."""
    rng = random.Random(seed)
    words = "def return self import value error path config result index data request session token".split()
    session = str(uuid.UUID(int=rng.getrandbits(128)))
    start = datetime(2026, 2, 10, 22, 0, tzinfo=timezone.utc)
    out, parent, n = [], None, 0
    def env(kind, **fields):
        nonlocal parent, n
        uid = str(uuid.UUID(int=rng.getrandbits(128)))
        value = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ada/projects/shop",
                 "sessionId": session, "version": "2.1.38", "gitBranch": "master", "type": kind, **fields,
                 "uuid": uid, "timestamp": (start + timedelta(milliseconds=250 * n)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"}
        out.append(json.dumps(value, separators=(",", ":")))
        parent, n = uid, n + 1
        return uid
    def text(k):
        return " ".join(rng.choice(words) for _ in range(k))
    env("user", message={"role": "user", "content": "Find and fix the failing tests."})
    turn = 0
    while len(out) < lines_wanted:
        mid = f"msg_{turn:024d}"
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 120, "cache_read_input_tokens": 20000 + turn, "output_tokens": 80}
        msg = {"model": "claude-sonnet-4-5", "id": mid, "type": "message", "role": "assistant", "stop_reason": None, "usage": usage}
        env("assistant", message={**msg, "content": [{"type": "text", "text": text(rng.randint(10, 60))}]}, requestId=f"req_{turn:020d}")
        tool = f"toolu_{turn:020d}"
        env("assistant", message={**msg, "content": [{"type": "tool_use", "id": tool, "name": "Bash",
                                                        "input": {"command": f"pytest -q tests/test_{turn % 50}.py", "description": "Run tests"}}]},
            requestId=f"req_{turn:020d}")
        for p in range(3):
            env("progress", data={"type": "bash_progress", "output": text(20), "fullOutput": text(40), "elapsedTimeSeconds": p,
                                  "totalLines": p}, toolUseID=f"bash-progress-{p}", parentToolUseID=tool)
        output = "\n".join(text(rng.randint(5, 15)) for _ in range(rng.randint(5, 30)))
        env("user", message={"role": "user", "content": [{"tool_use_id": tool, "type": "tool_result", "content": output, "is_error": False}]},
            toolUseResult={"stdout": output, "stderr": "", "interrupted": False, "isImage": False}, sourceToolAssistantUUID=parent)
        turn += 1
    return ("\n".join(out[:lines_wanted]) + "\n").encode()



if __name__ == "__main__":
    sys.stdout.buffer.write(generate(int(sys.argv[1])))
