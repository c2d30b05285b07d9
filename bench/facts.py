"""Fact finding alone, per MB of the outputs it reads: `python bench/facts.py MEGABYTES ROUNDS`.

The facts are what a compaction's checkpoint finds in the part it drops (`find_facts`: errors,
commands, files, where the work stands) and what prune keeps of each output it clears
(`key_lines`: exit status, commit, errors, a check's summary line), over one agent session of
error-heavy outputs (`shapes.agent_messages`: server logs with errors, test runs with tracebacks,
compiler logs, diffs, JSON payloads, text in several scripts) read whole beforehand, as if all of
it were dropped and every result cleared. The floor is one `str.splitlines` pass over the same
outputs: a reading of each output's lines at its barest.

Prints, as JSON, the outputs' size in MB and the seconds each took, the best of ROUNDS (the
three taking turns in each round).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "cli"))

from shapes import agent_messages, as_request_body  # noqa: E402 (found beside this file)

from transcompact.core.model import ToolResult, result_text, tool_inputs, tool_names  # noqa: E402
from transcompact.formats import loads  # noqa: E402
from transcompact.ops.compaction.checkpoint import find_facts  # noqa: E402
from transcompact.ops.pruning.key_lines import key_lines  # noqa: E402


def main(megabytes: float, rounds: int) -> None:
    messages = loads(as_request_body(agent_messages(int(megabytes * 1024 * 1024))), "facts.json").messages
    names, inputs = tool_names(messages), tool_inputs(messages)
    results = [block for message in messages for block in message.blocks if isinstance(block, ToolResult)]
    outputs = [result_text(result) for result in results]
    measures = {
        "find_facts": lambda: find_facts(messages, names, inputs),
        "key_lines": lambda: [key_lines(result, names.get(result.tool_call_id), inputs.get(result.tool_call_id))
                              for result in results],
        "splitlines": lambda: [output.splitlines() for output in outputs],
    }
    times: dict[str, list[float]] = {name: [] for name in measures}
    for _ in range(rounds):
        for name, measure in measures.items():
            start = time.perf_counter()
            measure()
            times[name].append(time.perf_counter() - start)
    size = sum(len(output.encode()) for output in outputs) / 1e6
    print(orjson.dumps({"megabytes": size, **{name: min(taken) for name, taken in times.items()}}).decode())


if __name__ == "__main__":
    main(float(sys.argv[1]), int(sys.argv[2]))
