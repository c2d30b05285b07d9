"""`make bench`: speed and memory as ratios against baselines measured in the same run, held to
their targets, printed as one table at the end; the exit status is 1 when a target is missed.

What is measured (each command a fresh process, as a user runs it; times are the best of several
runs, the runs of the things compared taking turns so that a change of load hits both):
- `estimate`, `prune` and `compact --emergency` on a 53 MB transcript of 4,000 tool call/result
  pairs against an orjson load + dump of the same file , with the floors of the first
  two beside them (`floors.py`: each built bare, none of the product around it);
- fact finding alone (`facts.py`): the checkpoint's and prune's, per MB of the error-heavy outputs
  they read, against one `str.splitlines` pass over the same outputs;
- `estimate --tokenizer o200k` against bare tiktoken `encode_ordinary` over the same text;
- `transcompact --help` against `python -c "import click"`;
- a batch of 1,000 small transcripts through `compact --emergency --jobs 2` against one process
  that reads, orjson-loads, dumps and writes the same files, each as a temporary file renamed
  over the target as a command writes (writing in place shown for information);
- `sessions` over a home of 10,000 stored sessions of the four agents (hard links to the corpus's
  logs): the first run, which reads the end of each large log (≤ 5 s), then a run from its cache
  (≤ 5 s), then one after 1% of them were appended to; and a first run with `--unsent`, which
  reads each whole;
- the peak memory of `estimate` on the 53 MB transcript, and of every command on a 100,000-line
  Claude Code log (`claude_code_log.py`), as a multiple of the file's size; `slim` of that log
  against an orjson read and write of its lines;
- the peak memory of the three commands on 500,000 tiny messages (25 MB; 50,000 with --quick) as
  a request body and as JSON Lines, beside that of `orjson.loads` alone (for information: what
  a message costs whatever its size);
- growth: the three commands on each shape at two or three sizes (tool-call
  transcripts of 5, 50 and 200 MB, 10,000 and 100,000 tiny messages, a 5 and a 50 MB single text
  block, a 20,000- and a 200,000-line Claude Code log with branches, 1,000 and 10,000 parallel
  tool calls in one message): the time per MB, line or call at each size, and the ratio of the
  largest to the smallest (≤ 1.5×: no super-linear step). These are timed inside the process after
  a warm-up run on a tiny file of the same shape, less the time of a run on that tiny file, so that
  fixed costs (start-up, ~0.2 s; a run's own few milliseconds) do not swamp the small sizes, and a
  size ten times smaller runs three times as often;
- with the shared corpus present: the accuracy of each way of counting against the usage the
  corpus's Claude Code logs recorded (median error on the later half of each log's responses).

`--quick` (or BENCH_QUICK=1) leaves out the largest sizes (the 200 MB transcript; the Claude Code
logs are 10× smaller) and runs fewer times, for a first look in a few minutes.
Progress goes to stderr, the table to stdout. Generated files live in a temporary directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import median

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "cli"))
sys.path.insert(0, str(ROOT / "bench"))

import every_shape  # noqa: E402 (the shapes users have)
from claude_code_log import generate as claude_code_log  # noqa: E402 (found through the path above)
from shapes import as_json_lines, as_request_body, parallel_calls, single_block, tiny_messages, tool_session  # noqa: E402

QUICK = "--quick" in sys.argv[1:] or os.environ.get("BENCH_QUICK", "") not in ("", "0")
MB = 1_000_000
SPEED_FILE_BYTES = 50 * 1024 * 1024
MEMORY_LOG_LINES = 100_000 // (10 if QUICK else 1)
BATCH_FILES = 1000
BATCH_TARGET = 2.0  # the batch against the baseline that writes as a command must (a file at a time, atomically)
PYTHON = sys.executable
# Bytecode is cached as an installed package has it (pip compiles it; click's is), whatever this
# shell says: a run that compiled every module anew would measure the compiler.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT / "cli")}
# The console script, as a user runs it (`python -m transcompact` when it is not installed).
_SCRIPT = Path(PYTHON).parent / "transcompact"
TRANSCOMPACT = [str(_SCRIPT)] if _SCRIPT.exists() else [PYTHON, "-m", "transcompact"]
COMMANDS = {
    "estimate": ["estimate"],
    "prune": ["prune", "-q"],
    "compact --emergency": ["compact", "--emergency", "--force", "-q"],
}
STARTED = time.perf_counter()


def runs(normal: int) -> int:
    """How many times a measure runs: `normal`, or about half with --quick (at least twice)."""
    return max(2, normal // 2) if QUICK else normal


def note(text: str) -> None:
    print(f"[{time.perf_counter() - STARTED:4.0f} s] {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Row:
    """One line of the final table: a figure, the target it is held to (None: shown for
    information) and what it was computed from."""

    name: str
    value: float | None  # None: the command failed, `detail` says how
    target: float | None
    detail: str
    unit: str = "×"
    at_least: bool = False  # the target is a floor (a recall), not a ceiling

    @property
    def missed(self) -> bool:
        if self.target is None:
            return False
        return self.value is None or (self.value < self.target if self.at_least else self.value > self.target)

    def cells(self) -> list[str]:
        shown = "failed" if self.value is None else f"{self.value:.2f}{self.unit}"
        target = "" if self.target is None else f"{'≥' if self.at_least else '≤'} {self.target:.2f}{self.unit}"
        verdict = "" if self.target is None else ("MISSED" if self.missed else "ok")
        return [self.name, shown, target, verdict, self.detail]


class Failed(Exception):
    """A measured command exited with an error: its row says so instead of a figure."""


def _run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, check=False, stderr=subprocess.PIPE, text=True, env=ENV, **kwargs)
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or [""]
        raise Failed(f"exit {done.returncode}: {last[0][:120]}")
    return done


def wall_time(command: list[str]) -> Callable[[], float]:
    """The whole process, start-up included."""
    def measure() -> float:
        start = time.perf_counter()
        _run(command, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start
    return measure


# Runs a transcompact command in one process on a tiny file of the same shape (a warm-up: imports
# and first-use costs), then on it again and on the measured file, and prints the measured run's
# time less the tiny file's: what a command costs whatever the size (parsing its flags, opening and
# writing a file) is left out with start-up, so that only what grows with the file is compared.
_TIMED_INSIDE = """
import os, sys, time
from transcompact.cli.main import main

def run(argv):
    sys.argv = ["transcompact", *argv]
    try:
        main()
    except SystemExit as done:
        if done.code:
            raise
    sys.stdout.flush()

warm_up, path, *command = sys.argv[1:]
report = os.dup(1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
run([*command, warm_up])
start = time.perf_counter()
run([*command, warm_up])
fixed = time.perf_counter() - start
start = time.perf_counter()
run([*command, path])
os.write(report, f"{time.perf_counter() - start - fixed}\\n".encode())
"""


# The baseline of the growth rows, timed the same way: reading the file and an orjson load + dump
# of it (line by line for JSON Lines), orjson already imported.
_ORJSON_INSIDE = """
import sys, time
import orjson

path = sys.argv[1]
start = time.perf_counter()
data = open(path, "rb").read()
if path.endswith(".jsonl"):
    [orjson.dumps(orjson.loads(line)) for line in data.splitlines()]
else:
    orjson.dumps(orjson.loads(data))
print(time.perf_counter() - start)
"""
GROWTH_BASELINE = "orjson load + dump"


def time_inside(script: str, args: list[str], repeats: int) -> Callable[[], float]:
    """The time `script` prints, the fastest of `repeats` processes."""
    timed = [PYTHON, "-c", script, *args]
    return lambda: min(float(_run(timed, stdout=subprocess.PIPE).stdout) for _ in range(repeats))


def best(measures: dict[Hashable, Callable[[], float]], rounds: int) -> dict[Hashable, float | Failed]:
    """The fastest of `rounds` runs of each measure, the measures taking turns in each round; a
    measure that fails is not run again."""
    times: dict[Hashable, list[float]] = {name: [] for name in measures}
    failed: dict[Hashable, Failed] = {}
    for _ in range(rounds):
        for name, measure in measures.items():
            if name not in failed:
                try:
                    times[name].append(measure())
                except Failed as error:
                    failed[name] = error
    return {name: failed[name] if name in failed else min(times[name]) for name in measures}


def ratio_row(name: str, ours: float | Failed, baseline: float | Failed, target: float | None, baseline_name: str) -> Row:
    for time_taken in (ours, baseline):
        if isinstance(time_taken, Failed):
            return Row(name, None, target, str(time_taken))
    detail = f"{ours:.3f} s vs {baseline:.3f} s for {baseline_name}"
    note(f"  {name}: {detail}")
    return Row(name, ours / baseline, target, detail)


def peak_rss_bytes(command: list[str]) -> int:
    """The peak resident memory of `command`, measured by a parent that runs nothing else; exit 1
    (what check and repair say of a log with errors) is a finding, not a failure."""
    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
             "done.returncode > 1 and sys.exit(done.returncode); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(_run([PYTHON, "-c", probe, *command], stdout=subprocess.PIPE).stdout) * 1024


def memory_row(name: str, command: list[str], path: Path, target: float | None) -> Row:
    size = path.stat().st_size
    try:
        rss = peak_rss_bytes(command)
    except Failed as error:
        return Row(name, None, target, str(error))
    detail = f"{rss / MB:.0f} MB for {size / MB:.1f} MB"
    note(f"  {name}: {detail}")
    return Row(name, rss / size, target, detail)


def speed(workdir: Path) -> list[Row]:
    path = workdir / "session.json"
    path.write_bytes(tool_session(SPEED_FILE_BYTES))
    size = path.stat().st_size
    note(f"speed: a {size / MB:.0f} MB transcript of tool calls and results")

    # The same text the o200k count encodes, for the bare tiktoken baseline.
    from transcompact.counting.counter import pieces
    from transcompact.formats import loads

    loaded = loads(path.read_bytes(), str(path))
    texts = [v for m in loaded.messages for b in m.blocks for _, v in pieces(b) if isinstance(v, str)]
    text_path = workdir / "texts.json"
    text_path.write_bytes(orjson.dumps(texts))
    del loaded, texts

    roundtrip = [PYTHON, "-c", "import orjson, sys; orjson.dumps(orjson.loads(open(sys.argv[1], 'rb').read()))", str(path)]
    # The floors (bench/floors.py): the least each command could do, built bare.
    floors = {f"floor of {name}": wall_time([PYTHON, str(ROOT / "bench" / "floors.py"), name, str(path)])
              for name in ("estimate", "prune")}
    times = best({"orjson": wall_time(roundtrip), **floors,
                  **{name: wall_time([*TRANSCOMPACT, *args, str(path)]) for name, args in COMMANDS.items()}}, runs(5))
    targets = {"estimate": 0.8, "prune": 1.3, "compact --emergency": 1.5}
    rows = [ratio_row(f"{name}, {size / MB:.0f} MB transcript", times[name], times["orjson"], target, "orjson load + dump")
            for name, target in targets.items()]
    for name in floors:
        row = ratio_row(f"{name} (bench/floors.py), {size / MB:.0f} MB transcript", times[name], times["orjson"],
                        None, "orjson load + dump")
        target = targets[name.removeprefix("floor of ")]
        rows.append(replace(row, detail=f"{row.detail}; the target of {name.removeprefix('floor of ')} is {target}×"))

    bare = [PYTHON, "-c", ("import orjson, sys; from transcompact.counting.tokenizers import encoding; "
                           "encode = encoding('o200k').encode_ordinary; "
                           "sum(len(encode(t)) for t in orjson.loads(open(sys.argv[1], 'rb').read()))"), str(text_path)]
    times = best({"ours": wall_time([*TRANSCOMPACT, "estimate", "--tokenizer", "o200k", str(path)]),
                  "bare": wall_time(bare)}, runs(2))
    rows.append(ratio_row("estimate --tokenizer o200k", times["ours"], times["bare"], 1.2, "bare tiktoken"))
    times = best({"ours": wall_time([*TRANSCOMPACT, "--help"]),
                  "click": wall_time([PYTHON, "-c", "import click"])}, runs(10))
    rows.append(ratio_row("--help", times["ours"], times["click"], 1.2, "import click"))
    rows.append(memory_row(f"peak memory: estimate, {size / MB:.0f} MB transcript",
                           [*TRANSCOMPACT, "estimate", str(path)], path, 2.5))
    rows.append(memory_row(f"peak memory: orjson.loads alone, {size / MB:.0f} MB transcript",
                           [PYTHON, "-c", "import orjson, sys; orjson.loads(open(sys.argv[1], 'rb').read())", str(path)],
                           path, None))
    return rows


# The baseline of the batch row: one process that reads, orjson-loads, dumps and writes each file
# as every command does, a temporary file renamed over the target, so that no reader ever sees
# half a file (the atomic write is the product's behaviour; emptying the old file in place, the
# other baseline, is cheaper and shown for information).
_ATOMIC_WRITES = """
import orjson, os, pathlib, sys
out = pathlib.Path(sys.argv[2])
out.mkdir(exist_ok=True)
for i, p in enumerate(sorted(pathlib.Path(sys.argv[1]).glob('*.json'))):
    temporary = out / f'.{p.name}.{os.getpid()}-{i}.tmp'
    temporary.write_bytes(orjson.dumps(orjson.loads(p.read_bytes())))
    os.replace(temporary, out / p.name)
"""


def batch(workdir: Path) -> list[Row]:
    """Many small files: `compact --emergency --jobs 2` over a directory, against one
    process reading, orjson-loading, dumping and writing the same files; and, for information,
    against that process writing each file as a command does."""
    source = workdir / "batch"
    source.mkdir()
    data = (ROOT / "fixtures" / "anthropic" / "tool-loop.json").read_bytes()
    for i in range(BATCH_FILES):
        (source / f"session-{i:04d}.json").write_bytes(data)
    note(f"batch: {BATCH_FILES:,} transcripts of {len(data) / 1e3:.1f} KB")
    baseline = [PYTHON, "-c", ("import orjson, pathlib, sys; out = pathlib.Path(sys.argv[2]); out.mkdir(exist_ok=True); "
                               "[(out / p.name).write_bytes(orjson.dumps(orjson.loads(p.read_bytes()))) "
                               "for p in sorted(pathlib.Path(sys.argv[1]).glob('*.json'))]"),
                str(source), str(workdir / "copied")]
    atomic = [PYTHON, "-c", _ATOMIC_WRITES, str(source), str(workdir / "renamed")]
    ours = [*TRANSCOMPACT, "compact", "--emergency", "--force", "-q", "--jobs", "2",
            "--output-dir", str(workdir / "compacted"), str(source)]
    # Five rounds: a small file's write costs what the disk makes of it at the moment.
    times = best({"ours": wall_time(ours), "baseline": wall_time(baseline), "atomic": wall_time(atomic)}, runs(5))
    name = f"batch of {BATCH_FILES:,} files, compact --emergency --jobs 2"
    # The target is held against the baseline that writes as a command must; the one
    # that empties each file in place is shown for information.
    row = ratio_row(name, times["ours"], times["atomic"], BATCH_TARGET, "one orjson process, temporary file + rename")
    if row.value is not None:
        row = replace(row, detail=f"{row.detail}; {BATCH_FILES / times['ours']:,.0f} files/s")
    return [row, ratio_row(f"{name}, against writing in place", times["ours"], times["baseline"], None,
                           "one orjson process writing in place")]


# Fact finding's time per MB of the outputs it reads, at most this many times one str.splitlines pass over them.
FACTS_TARGET = 10.0


def facts() -> list[Row]:
    """Fact finding alone (bench/facts.py): the checkpoint's and prune's, each against one
    `str.splitlines` pass over the same outputs, in one process."""
    megabytes = 10 if QUICK else 50
    note(f"facts: the fact finding over {megabytes} MB of error-heavy outputs")
    names = {"find_facts": "the checkpoint's (find_facts)", "key_lines": "prune's (key_lines of each output)"}
    try:
        done = _run([PYTHON, str(ROOT / "bench" / "facts.py"), str(megabytes), str(runs(3))], stdout=subprocess.PIPE)
    except Failed as failed:
        return [Row(f"facts per MB: {name}", None, FACTS_TARGET, str(failed)) for name in names.values()]
    measured = orjson.loads(done.stdout)
    size, floor = measured["megabytes"], measured["splitlines"]
    rows = []
    for key, name in names.items():
        detail = (f"{1e3 * measured[key] / size:.1f} ms/MB vs {1e3 * floor / size:.1f} ms/MB for one str.splitlines pass "
                  f"over the same {size:.0f} MB")
        note(f"  {name}: {detail}")
        rows.append(Row(f"facts per MB: {name}, error-heavy outputs", measured[key] / floor, FACTS_TARGET, detail))
    return rows


SESSIONS = 10_000 // (10 if QUICK else 1)


def session_tree(home: Path, count: int, corpus: Path | None) -> int:
    """A home of `count` stored sessions of the four agents, each in its own place: hard links to
    the corpus's logs of each agent (real sizes), else to the shipped fixtures; the bytes in all."""
    sources: dict[str, list[Path]] = {
        "claude-code": sorted((ROOT / "fixtures" / "claude-code").glob("*.jsonl")),
        "codex": sorted((ROOT / "fixtures" / "codex").glob("*.jsonl")),
        "gemini": sorted((ROOT / "fixtures" / "gemini").glob("*.json*")),
        "pi": sorted((ROOT / "fixtures" / "pi").glob("*.jsonl")),
    }
    if corpus is not None:
        sources["claude-code"] += sorted((corpus / "claude-code").glob("*.jsonl"))
        sources["codex"] += sorted((corpus / "other").glob("codex-*.jsonl"))
        sources["gemini"] += sorted((corpus / "other").glob("*gemini*.json"))
        sources["pi"] += sorted((corpus / "trajectories").glob("pi-*.jsonl"))
    held = home / "sources"
    held.mkdir(parents=True)
    copies = {agent: [] for agent in sources}
    for agent, paths in sources.items():
        for i, path in enumerate(paths):
            copy = held / f"{agent}-{i}{''.join(path.suffixes[-1:])}"
            copy.write_bytes(path.read_bytes())
            copies[agent].append(copy)
    # Claude Code's sessions are most of a real home: 70% of them, the others 10% each.
    shares = {"claude-code": 0.7, "codex": 0.1, "gemini": 0.1, "pi": 0.1}
    size = 0
    for agent, share in shares.items():
        for i in range(int(count * share)):
            source = copies[agent][i % len(copies[agent])]
            project = f"p{i % 50:02d}"
            if agent == "claude-code":
                target = home / ".claude" / "projects" / f"-home-ada-{project}" / f"{i:08d}-0000-4000-8000-000000000000.jsonl"
            elif agent == "codex":
                target = home / ".codex" / "sessions" / "2026" / "01" / f"{1 + i % 28:02d}" / f"rollout-2026-01-01T00-00-00-{i:08d}.jsonl"
            elif agent == "gemini":
                target = home / ".gemini" / "tmp" / project / "chats" / f"session-2026-01-01T00-00-{i:08d}{source.suffix}"
            else:
                target = home / ".pi" / "agent" / "sessions" / f"--home-ada-{project}--" / f"2026-01-01_{i:08d}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:  # a file system without hard links
                target.write_bytes(source.read_bytes())
            size += source.stat().st_size
    return size


def sessions_listing(workdir: Path) -> list[Row]:
    """`transcompact sessions` over a home of SESSIONS stored sessions: the first run (the end of
    each large log read, the target: ≤ 5 s), then a run with the cache of the first (≤ 5 s), then
    one after the agents appended to 1% of them; then a first run with `--unsent`, which reads
    every file whole (for information)."""
    corpus = Path(os.environ.get("TRANSCOMPACT_CORPUS", ROOT.parent / "shared" / "corpus"))
    home = workdir / "home"
    size = session_tree(home, SESSIONS, corpus if corpus.is_dir() else None)
    note(f"sessions: {SESSIONS:,} stored sessions, {size / MB:,.0f} MB")
    env = {**ENV, "HOME": str(home)}
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR"):
        env.pop(name, None)

    def timed(*args: str, cache: str = "cache") -> float:
        start = time.perf_counter()
        done = subprocess.run([*TRANSCOMPACT, "sessions", "--json", *args], check=False, capture_output=True,
                              env={**env, "XDG_CACHE_HOME": str(workdir / cache)})
        if done.returncode != 0 or len(orjson.loads(done.stdout)["files"]) != SESSIONS:
            raise Failed(f"exit {done.returncode}: {done.stderr.decode()[-120:]}")
        return time.perf_counter() - start

    rows = []
    try:
        cold = timed()
        rows.append(Row(f"sessions: {SESSIONS:,} stored sessions, first run", cold, 5.0,
                        f"{SESSIONS / cold:,.0f} files/s: the end of each large log, small ones whole", unit=" s"))
        warm = min(timed() for _ in range(runs(3)))
        rows.append(Row(f"sessions: {SESSIONS:,} stored sessions, from the cache", warm, 5.0,
                        "stat, head and tail of each file; the whole of none", unit=" s"))
        touched = sorted(home.glob(".claude/projects/*/*.jsonl"))[:: 70][: SESSIONS // 100]
        for path in touched:  # an agent appends: a new inode here (the hard link is left alone)
            data = path.read_bytes()
            path.unlink()
            path.write_bytes(data + b"\n")
        appended = timed()
        rows.append(Row(f"sessions: {SESSIONS:,} stored sessions, {len(touched)} appended to since", appended, None,
                        "those read again", unit=" s"))
        whole = timed("--unsent", cache="cache-unsent")
        rows.append(Row(f"sessions --unsent: {SESSIONS:,} stored sessions, first run", whole, None,
                        f"each read whole: {SESSIONS / whole:,.0f} files/s, {size / MB / whole:,.0f} MB/s", unit=" s"))
    except Failed as failed:
        rows.append(Row(f"sessions: {SESSIONS:,} stored sessions", None, 5.0, str(failed), unit=" s"))
    return rows


def claude_code_memory(workdir: Path) -> list[Row]:
    log = workdir / "memory.jsonl"
    log.write_bytes(claude_code_log(MEMORY_LOG_LINES))
    note(f"peak memory on a {MEMORY_LOG_LINES:,}-line Claude Code log ({log.stat().st_size / MB:.0f} MB)")
    rows = [memory_row(f"peak memory: {name}, {MEMORY_LOG_LINES // 1000}K-line Claude Code log",
                       [*TRANSCOMPACT, *args, str(log)], log, 3.0)
            for name, args in (*COMMANDS.items(), ("check", ["check"]), ("repair", ["repair", "-q"]), ("slim", ["slim", "-q"]))]
    # slim against reading and writing the log's lines with orjson, as the issue measures it.
    lines = [PYTHON, "-c", ("import orjson, sys; data = open(sys.argv[1], 'rb').read(); "
                            "open(sys.argv[2], 'wb').write(b'\\n'.join(orjson.dumps(orjson.loads(l)) for l in data.splitlines()))"),
             str(log), str(workdir / "memory-copy.jsonl")]
    floor = [PYTHON, str(ROOT / "bench" / "floors.py"), "slim", str(log), "log"]
    times = best({"ours": wall_time([*TRANSCOMPACT, "slim", "-q", "-o", str(workdir / "memory-slim.jsonl"), str(log)]),
                  "orjson": wall_time(lines), "floor": wall_time(floor)}, runs(2))
    rows.append(ratio_row(f"slim, {MEMORY_LOG_LINES // 1000}K-line Claude Code log", times["ours"], times["orjson"], 1.5,
                          "orjson read + write of its lines"))
    row = ratio_row(f"floor of slim (bench/floors.py), {MEMORY_LOG_LINES // 1000}K-line Claude Code log", times["floor"],
                    times["orjson"], None, "orjson read + write of its lines")
    rows.append(replace(row, detail=f"{row.detail}; the target of slim is 1.5×") if row.value is not None else row)
    return rows


def tiny_messages_memory(workdir: Path) -> list[Row]:
    """Each command's peak memory on many tiny messages, where what a message costs whatever its
    size (its objects, its view, its count) is most of it; for information, beside the peak of
    `orjson.loads` alone of the same file (of JSON Lines, line by line)."""
    count = 50_000 if QUICK else 500_000
    messages = orjson.loads(tiny_messages(count))["messages"]
    rows = []
    for shape, suffix, data, load in (
            ("request body", "json", as_request_body(messages), "orjson.loads(open(sys.argv[1], 'rb').read())"),
            ("JSON Lines", "jsonl", as_json_lines(messages), "[orjson.loads(l) for l in open(sys.argv[1], 'rb').read().splitlines()]")):
        path = workdir / f"tiny-messages.{suffix}"
        path.write_bytes(data)
        name = f"{count:,} tiny messages, {shape} ({path.stat().st_size / MB:.0f} MB)"
        peaks = {command: memory_row(f"peak memory: {command}, {name}", [*TRANSCOMPACT, *args, str(path)], path, None)
                 for command, args in COMMANDS.items()}
        alone = memory_row(f"peak memory: orjson.loads alone, {name}", [PYTHON, "-c", f"import orjson, sys; {load}", str(path)],
                           path, None)
        largest = max(peaks.values(), key=lambda row: -1 if row.value is None else row.value)
        shown = ", ".join(f"{command} {'failed' if row.value is None else f'{row.value:.2f}×'}" for command, row in peaks.items())
        alone_shown = "failed" if alone.value is None else f"{alone.value:.2f}×"
        rows.append(Row(f"peak memory: {name}", largest.value, None, f"{shown}; orjson.loads alone {alone_shown}"))
        path.unlink()
    return rows


@dataclass(frozen=True)
class Shape:
    """A kind of transcript measured at several sizes, per MB of the file or per thing counted."""

    name: str  # with {} where the sizes go
    make: Callable[[int], bytes]
    sizes: tuple[int, ...]  # the arguments of `make`, smallest first
    tiny: int  # the size of the warm-up file
    counts: str  # what the argument of `make` counts: "bytes", "messages", "lines", "calls"
    per: str  # "MB" of the file, or "line", "call": one of what `make` counts
    rounds: int  # the slowest shapes run fewer, to keep `make bench` near ten minutes
    suffix: str = ".json"

    def units(self, size: int, path: Path) -> float:
        return path.stat().st_size / MB if self.per == "MB" else size

    def label(self, size: int, path: Path) -> str:
        """The size as the row names it: MB of the file, or thousands of what `make` counts."""
        return f"{path.stat().st_size / MB:.0f}" if self.counts == "bytes" else f"{size // 1000}K"


def shapes() -> list[Shape]:
    largest = () if QUICK else (200 * MB,)
    log_lines = (2_000, 20_000) if QUICK else (20_000, 200_000)
    return [
        Shape("{} MB of tool calls", tool_session, (5 * MB, 50 * MB, *largest), 20_000, "bytes", "MB", 3),
        Shape("{} tiny messages", tiny_messages, (10_000, 100_000), 10, "messages", "MB", 3),
        Shape("{} MB single text block", single_block, (5 * MB, 50 * MB), 1_000, "bytes", "MB", 5),
        Shape("{}-line Claude Code log with branches", lambda n: claude_code_log(n, branchy=True), log_lines, 60,
              "lines", "line", 2, ".jsonl"),
        Shape("{} parallel tool calls", parallel_calls, (1_000, 10_000), 10, "calls", "call", 5),
    ]


def growth(workdir: Path) -> list[Row]:
    rows = []
    for shape in shapes():
        warm_up = workdir / f"tiny{shape.suffix}"
        warm_up.write_bytes(shape.make(shape.tiny))
        paths = []
        for size in shape.sizes:
            paths.append(workdir / f"growth-{size}{shape.suffix}")
            paths[-1].write_bytes(shape.make(size))
        described = shape.name.format(" → ".join(shape.label(size, path) for size, path in zip(shape.sizes, paths)))
        note(f"growth: {described}")
        # A moment of load weighs more on a run ten times shorter: the small sizes run three times as often.
        repeats = [3 if 10 * size <= shape.sizes[-1] else 1 for size in shape.sizes]
        measures = {}
        for i, path in enumerate(paths):
            for name, args in COMMANDS.items():
                measures[name, i] = time_inside(_TIMED_INSIDE, [str(warm_up), str(path), *args], repeats[i])
            measures[GROWTH_BASELINE, i] = time_inside(_ORJSON_INSIDE, [str(path)], repeats[i])
        times = best(measures, runs(shape.rounds))
        for name in (*COMMANDS, GROWTH_BASELINE):
            rows.append(growth_row(shape, name, described, [(times[name, i], shape.units(size, path))
                                                          for i, (size, path) in enumerate(zip(shape.sizes, paths))]))
        for path in paths:
            path.unlink()
    return rows


def growth_row(shape: Shape, command: str, described: str, measured: list[tuple[float | Failed, float]]) -> Row:
    """A command's growth is held to 1.5×; the baseline's is shown, to tell ours from the machine's
    (caches, memory) at the larger sizes."""
    name = f"growth: {command}, {described}"
    target = None if command == GROWTH_BASELINE else 1.5
    for time_taken, _ in measured:
        if isinstance(time_taken, Failed):
            return Row(name, None, target, str(time_taken))
    per_unit = [time_taken / units for time_taken, units in measured]
    scale, shown = (1e3, "ms/MB") if shape.per == "MB" else (1e6, f"µs/{shape.per}")
    detail = f"{', '.join(f'{scale * t:.1f}' for t in per_unit)} {shown}"
    note(f"  {command}: {detail}")
    return Row(name, max(per_unit) / min(per_unit), target, detail)


def accuracy(corpus: Path) -> list[Row]:
    """Each way of counting against what the API recorded, on the later half of each log's responses."""
    from transcompact.counting.calibrate import usage_tokens
    from transcompact.counting.counter import Options
    from transcompact.formats import loads
    from transcompact.ops.estimate import estimate

    logs = sorted(corpus.glob("claude-code/*.jsonl"))
    if not logs:
        return []
    note(f"accuracy against recorded usage ({len(logs)} Claude Code logs of the corpus; "
         "median |estimate − recorded| / recorded over the later half of each log's responses):")
    note(f"  {'log':58s} {'responses':>9s} {'chars/4':>8s} {'o200k':>8s} {'calibrate':>9s}")
    columns: dict[str, list[float]] = {"chars/4": [], "o200k": [], "calibrate": []}
    for path in logs:
        transcript = loads(path.read_bytes(), str(path))
        recorded = [(i, tokens) for i, m in enumerate(transcript.messages) if (tokens := usage_tokens(m))]
        later = recorded[len(recorded) // 2:] if len(recorded) >= 2 else []
        cells = []
        for name, options in (("chars/4", Options()), ("o200k", Options(tokenizer="o200k"))):
            report = estimate(transcript, options)
            # What the estimate says of the prompt a response answered: every message before it.
            before = [m.running - m.tokens for m in report.per_message]
            if later:
                error = median(abs(before[i] - t) / t for i, t in later)
                columns[name].append(error)
                cells.append(f"{100 * error:7.1f}%")
            else:
                cells.append(f"{'-':>8s}")
        fit = estimate(transcript, Options(calibrate=True)).calibration
        if fit is not None and fit.error is not None:
            columns["calibrate"].append(fit.error)
            cells.append(f"{100 * fit.error:8.1f}%")
        else:
            cells.append(f"{'-':>9s}")
        note(f"  {path.name[:58]:58s} {len(recorded):9d} {' '.join(cells)}")
    return [Row(f"accuracy: {name}, median error against recorded usage", 100 * median(errors), None,
                f"{len(errors)} Claude Code logs of the corpus", unit=" %")
            for name, errors in columns.items() if errors]


def summaries(corpus: Path) -> list[Row]:
    """What our summary keeps of the part it summarizes, against the agents' own summaries of the
    same part at the same size (bench/summary_recall.py), and across the corpus at 2,000- and
    5,000-token windows (tests/retention.py), each kind of fact at each window; what the checkpoint
    says that the part it summarizes contradicts (`summary_recall.precision`); and whether a later
    compaction stays within its budget."""
    import summary_recall

    agent, ours, count = summary_recall.measure(corpus)
    if not count:
        return []
    note(f"summary recall against Claude Code's own compactions ({count} in the corpus), by key token:")
    rows = []
    for kind in summary_recall.KINDS:
        if ours.total[kind]:
            rows.append(Row(f"summary recall: {kind}, ours (Claude's own: {agent.of(kind):.2f})", ours.of(kind), agent.of(kind),
                            f"{ours.total[kind]} facts in {count} compactions", unit="", at_least=True))
    tasks = summary_recall.task_recall(corpus)
    if tasks.total["tasks with status"]:
        rows.append(Row("summary recall: task items with their status (logs with a task list, 2,000-token window)",
                        tasks.of("tasks with status"), 0.90, f"{tasks.total['tasks with status']} task items", unit="",
                        at_least=True))
    sys.path.insert(0, str(ROOT))
    from tests.retention import KINDS, LABELS, TARGETS, WINDOWS, corpus_conversations, measure_corpus

    conversations = corpus_conversations(corpus)
    for keep, window in measure_corpus(conversations).items():
        ours = window.scores["compact"]
        for kind in KINDS:
            if ours.total[kind]:
                rows.append(Row(f"retention at a {keep:,}-token window: {LABELS[kind]}", ours.recall(kind), TARGETS[kind],
                                f"{ours.total[kind]} facts of {len(window.each)} corpus conversations cut; masking keeps "
                                f"{window.scores['mask'].recall(kind):.2f}", unit="", at_least=True))
    contradicted, probed, by_kind = summary_recall.precision(corpus, WINDOWS)
    rows.append(Row("checkpoint statements a later event of the dropped part contradicts", contradicted, None,
                    f"{probed} checkpoints (corpus at {' and '.join(f'{w:,}' for w in WINDOWS)} tokens, the recorded sessions "
                    f"after their first commit): " + (", ".join(f"{n} {kind}" for kind, n in by_kind.most_common()) or "none"),
                    unit=""))
    rows.append(Row("a later compaction's summary against its budget (largest, corpus)", summary_recall.worst_growth(corpus),
                    1.0, "compact --emergency twice, 5,000 then 2,000 tokens", unit="×"))
    return rows


def table(rows: list[Row]) -> str:
    """A Markdown table, its columns padded so that it also reads as plain text."""
    lines = [["measure", "figure", "target", "", "from"], *(row.cells() for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    out = ["| " + " | ".join(cell.ljust(width) for cell, width in zip(line, widths)) + " |" for line in lines]
    out.insert(1, "| " + " | ".join("-" * width for width in widths) + " |")
    return "\n".join(out)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="transcompact-bench-") as name:
        workdir = Path(name)
        rows = [*speed(workdir), *every_shape.measure(workdir, sys.modules[__name__]), *facts(),
                *batch(workdir), *sessions_listing(workdir), *claude_code_memory(workdir), *tiny_messages_memory(workdir),
                *growth(workdir)]
    corpus = Path(os.environ.get("TRANSCOMPACT_CORPUS", ROOT.parent / "shared" / "corpus"))
    if corpus.is_dir():
        rows += accuracy(corpus) + summaries(corpus)
    missed = [row for row in rows if row.missed]
    print(table(rows))
    # The load says how much other work shared the machine: the higher, the noisier the figures.
    print(f"\n{time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} CPUs, load {os.getloadavg()[1]:.1f} "
          f"(5-minute average)"
          f"{', --quick' if QUICK else ''}; "
          f"{len(rows)} figures, {len(missed)} of {sum(row.target is not None for row in rows)} targets missed; "
          f"{(time.perf_counter() - STARTED) / 60:.1f} min")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
