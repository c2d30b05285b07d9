"""The shapes users have, each measured as `make bench` measures the request body: `estimate`,
`prune` and `compact --emergency` against an orjson load + dump of the same file (line by line
for JSON Lines), with the floors of the first two (`floors.py`) and each command's peak memory.

The shapes: one agent session of realistic messages (`shapes.agent_messages`: non-ASCII text,
logs with warnings and errors, tracebacks, diffs, JSON payloads) as a request body, a bare list
and JSON Lines of messages; and Claude Code, Codex, Gemini CLI and pi logs built from the corpus's
real sessions (`agent_logs.replicated`; the fixtures without the corpus), Gemini CLI's both as the
legacy document and as the JSON Lines log Gemini CLI 0.61 writes (`agent_logs.as_gemini_lines`). Each is ≥ 50 MB (10 MB
with --quick). A shape's figures are shown for information; the slowest shape of each command is
the figure held to its target.

`measure(workdir, bench)` gives the rows; `bench` is bench/run.py's module, whose timing and rows
it uses.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from agent_logs import AGENTS, as_gemini_lines, replicated
from shapes import agent_messages, as_bare_list, as_json_lines, as_request_body

# Each command's target on the slowest shape (× the orjson load + dump), and its peak memory's (× the file).
TARGETS = {"estimate": 1.0, "prune": 1.5, "compact --emergency": 1.7}
PEAK_TARGETS = {"estimate": 2.5, "prune": 3.0, "compact --emergency": 3.0}


def _files(workdir: Path, size: int, corpus: Path | None) -> dict[str, tuple[Path, str]]:
    """Each shape's file and the floor that reads it (`floors.py`'s SHAPE), by the shape's name."""
    messages = agent_messages(size)
    made = {
        "request body": ("body.json", "body", as_request_body(messages)),
        "bare list": ("list.json", "list", as_bare_list(messages)),
        "JSON Lines of messages": ("messages.jsonl", "jsonl", as_json_lines(messages)),
    }
    del messages
    for agent, suffix in AGENTS.items():
        made[f"{agent} log"] = (f"{agent}{suffix}", "gemini" if agent == "gemini" else "log", replicated(agent, size, corpus))
    # (From a smaller document: a model turn's line is written twice, its calls pending then done.)
    made["gemini JSON Lines log"] = ("gemini-lines.jsonl", "gemini-lines", as_gemini_lines(replicated("gemini", size * 3 // 5, corpus)))
    files = {}
    for name, (file_name, floor, data) in made.items():
        path = workdir / f"shape-{file_name}"
        path.write_bytes(data)
        files[name] = (path, floor)
    return files


def _orjson_round_trip(bench: ModuleType, path: Path) -> list[str]:
    """The baseline: an orjson load + dump of the file, line by line for JSON Lines."""
    script = ("import orjson, sys; data = open(sys.argv[1], 'rb').read(); "
              + ("[orjson.dumps(orjson.loads(line)) for line in data.splitlines()]" if path.suffix == ".jsonl"
                 else "orjson.dumps(orjson.loads(data))"))
    return [bench.PYTHON, "-c", script, str(path)]


def measure(workdir: Path, bench: ModuleType) -> list:
    """Each shape's rows (its three commands, its largest peak), then the slowest shape's of each
    command and the largest peaks, held to the targets."""
    corpus = Path(os.environ.get("TRANSCOMPACT_CORPUS", bench.ROOT.parent / "shared" / "corpus"))
    size = (10 if bench.QUICK else 50) * 1024 * 1024
    files = _files(workdir, size, corpus if corpus.is_dir() else None)
    rows, ratios, peaks, floor_peaks = [], {}, {}, {}
    for shape, (path, floor) in files.items():
        megabytes = path.stat().st_size / bench.MB
        bench.note(f"shapes: {shape}, {megabytes:.0f} MB")
        floors = {f"floor of {name}": bench.wall_time([bench.PYTHON, str(bench.ROOT / "bench" / "floors.py"), name, str(path), floor])
                  for name in ("estimate", "prune")}
        commands = {name: bench.wall_time([*bench.TRANSCOMPACT, *args, str(path)]) for name, args in bench.COMMANDS.items()}
        times = bench.best({"orjson": bench.wall_time(_orjson_round_trip(bench, path)), **floors, **commands}, bench.runs(3))
        for name in bench.COMMANDS:
            row = bench.ratio_row(f"shape: {name}, {shape} ({megabytes:.0f} MB)", times[name], times["orjson"], None,
                                  "orjson load + dump")
            floor_time = times.get(f"floor of {name}")
            if row.value is not None and isinstance(floor_time, float):
                row = replace(row, detail=f"{row.detail}; floor {floor_time / times['orjson']:.2f}×")
            rows.append(row)
            ratios[name, shape] = row
        for name, args in bench.COMMANDS.items():
            peaks[name, shape] = bench.memory_row(f"peak memory: {name}, {shape}", [*bench.TRANSCOMPACT, *args, str(path)], path, None)
        # The floor of estimate holds what a count needs of every message (floors.py): its peak beside ours.
        floor_peaks[shape] = bench.memory_row(f"peak memory: floor of estimate, {shape}",
                                              [bench.PYTHON, str(bench.ROOT / "bench" / "floors.py"), "estimate", str(path), floor], path, None)
        each = {name: peaks[name, shape] for name in bench.COMMANDS}
        shown = ", ".join(f"{name} {'failed' if row.value is None else f'{row.value:.2f}×'}" for name, row in each.items())
        rows.append(replace(_slowest(bench, f"peak memory: {shape}", each, None), detail=f"{shown}; floor of estimate {_times(floor_peaks[shape])}"))
    for name, target in TARGETS.items():
        rows.append(_slowest(bench, f"{name}, the slowest shape", {shape: ratios[name, shape] for shape in files}, target))
    largest = _slowest(bench, "peak memory: estimate, the largest of any shape",
                       {shape: peaks["estimate", shape] for shape in files}, PEAK_TARGETS["estimate"])
    rows.append(replace(largest, detail=f"{largest.detail}; floor of estimate on each agent log "
                        + ", ".join(f"{_times(floor_peaks[shape])} ({shape.removesuffix(' log')})" for shape in files if shape.endswith("log"))))
    rows.append(_slowest(bench, "peak memory: every command, the largest of any shape",
                         {f"{name}, {shape}": peaks[name, shape] for name in bench.COMMANDS for shape in files},
                         max(PEAK_TARGETS.values())))
    for path, _ in files.values():
        path.unlink()
    return rows


def _times(row) -> str:
    return "failed" if row.value is None else f"{row.value:.2f}×"


def _slowest(bench: ModuleType, name: str, rows: dict, target: float | None):
    """The row with the highest figure (a failed one first), named by its key, held to `target`."""
    failed = [key for key, row in rows.items() if row.value is None]
    worst = failed[0] if failed else max(rows, key=lambda key: rows[key].value)
    return bench.Row(f"{name} ({worst})", rows[worst].value, target, rows[worst].detail)
