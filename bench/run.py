"""`make bench`: speed and memory as ratios against baselines measured in the same run.

Builds a deterministic ~50 MB Anthropic transcript with thousands of tool call/result pairs and
prints:
- `transcompact estimate FILE`, `prune FILE` and `compact --emergency FILE` against an orjson
  load + dump of the same file (each a fresh process);
- `--tokenizer o200k` against bare tiktoken `encode_ordinary` over the same text (each a fresh
  process that builds the encoding);
- `transcompact --help` start-up against `python -c "import click"`;
- a batch of 1,000 small transcripts through `compact --emergency --jobs 2` against one process
  that reads, orjson-loads, dumps and writes the same files, and files per second;
- the peak memory of `transcompact estimate FILE` as a multiple of the input size, and of every
  command on a 100,000-line Claude Code log (`claude_code_log.py`);
- with the shared corpus present: the accuracy of each way of counting against the usage the
  corpus's Claude Code logs recorded (median error on the later half of each log's responses).

Times are the best of several runs. Targets (issues 4, 5, 7): estimate ≤ 1.0×, prune ≤ 1.5×, compact --emergency ≤ 2×, o200k ≤ 1.2×,
--help ≤ 1.3×, memory ≤ 4× the input.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "cli"))
sys.path.insert(0, str(ROOT / "bench"))

TARGET_BYTES = 50 * 1024 * 1024
PAIRS = 4000
CLAUDE_CODE_LINES = 100_000
BATCH_FILES = 1000
PYTHON = sys.executable
# The console script, as a user runs it (`python -m transcompact` when it is not installed).
_SCRIPT = Path(PYTHON).parent / "transcompact"
TRANSCOMPACT = [str(_SCRIPT)] if _SCRIPT.exists() else [PYTHON, "-m", "transcompact"]


def transcript() -> dict:
    """A deterministic agent session: a request, then PAIRS rounds of tool call and result."""
    rng = random.Random(20261122)
    words = ["def", "return", "self", "import", "value", "error", "path", "config", "result", "index", "data",
             "request", "session", "token", "window", "message", "assert", "None", "True", "for", "in", "if",
             "else", "class", "yield", "lambda", "0", "1", "42", "==", "+=", "(", ")", ":", "[", "]", "{", "}"]
    pool = "".join(
        " ".join(rng.choice(words) for _ in range(rng.randint(3, 14))) + ("\n" if rng.random() < 0.9 else "\n\n")
        for _ in range(40_000)
    )
    size = (TARGET_BYTES - 2_000_000) // PAIRS
    messages = [{"role": "user", "content": "Find and fix the failing tests in the repository."}]
    for i in range(PAIRS):
        start = rng.randrange(0, len(pool) - 2 * size)
        output = pool[start : start + rng.randint(size // 2, size * 3 // 2)]
        call_id = f"toolu_{i:06d}"
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": f"Step {i}: reading the next file."},
            {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": f"src/module_{i % 97}.py"}},
        ]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": output}]})
    messages.append({"role": "assistant", "content": "All tests pass now."})
    messages.append({"role": "user", "content": "Thanks."})
    return {
        "model": "claude-sonnet-4-5",
        "system": "You are a coding agent.",
        "tools": [{"name": "read_file", "description": "Read a file.",
                   "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "messages": messages,
    }


def best(command: list[str], runs: int, **kwargs) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, **kwargs)
        times.append(time.perf_counter() - start)
    return min(times)


def peak_rss_bytes(command: list[str]) -> int:
    """The peak resident memory of `command`, measured by a parent that runs nothing else; exit 1
    (what check and repair say of a log with errors) is a finding, not a failure."""
    probe = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
             "done.returncode > 1 and sys.exit(done.returncode); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    return int(subprocess.run([PYTHON, "-c", probe, *command], check=True, capture_output=True, text=True).stdout) * 1024


def row(name: str, ours: float, baseline: float, target: float, unit: str = "s") -> str:
    ratio = ours / baseline
    verdict = "ok" if ratio <= target else "OVER TARGET"
    return f"  {name:28s} {ours:8.3f} {unit} vs {baseline:8.3f} {unit}  = {ratio:5.2f}×  (target ≤ {target}×, {verdict})"


def speed(workdir: Path) -> None:
    path = workdir / "session.json"
    path.write_bytes(orjson.dumps(transcript()))
    size = path.stat().st_size
    print(f"synthetic transcript: {size / 1e6:.1f} MB, {PAIRS} tool call/result pairs\n")

    # The same text the o200k count encodes, for the bare tiktoken baseline.
    from transcompact.estimate import pieces
    from transcompact.formats import loads

    loaded = loads(path.read_bytes(), str(path))
    texts = [v for m in loaded.messages for b in m.blocks for _, v in pieces(b) if isinstance(v, str)]
    text_path = workdir / "texts.json"
    text_path.write_bytes(orjson.dumps(texts))
    del loaded, texts

    roundtrip = ["-c", "import orjson, sys; orjson.dumps(orjson.loads(open(sys.argv[1], 'rb').read()))", str(path)]
    bare = ["-c", "import orjson, sys; from transcompact.tokenizers import encoding; "
                  "encode = encoding('o200k').encode_ordinary; "
                  "sum(len(encode(t)) for t in orjson.loads(open(sys.argv[1], 'rb').read()))", str(text_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "cli")}
    print("speed (best of 5; each a fresh process):")
    print(row("estimate", best([*TRANSCOMPACT, "estimate", str(path)], 5, env=env),
              best([PYTHON, *roundtrip], 5, env=env), 1.0))
    print(row("prune", best([*TRANSCOMPACT, "prune", "-q", str(path)], 5, env=env),
              best([PYTHON, *roundtrip], 5, env=env), 1.5))
    print(row("compact --emergency", best([*TRANSCOMPACT, "compact", "--emergency", "-q", str(path)], 3, env=env),
              best([PYTHON, *roundtrip], 5, env=env), 2.0))
    print(row("estimate --tokenizer o200k", best([*TRANSCOMPACT, "estimate", "--tokenizer", "o200k", str(path)], 3, env=env),
              best([PYTHON, *bare], 3, env=env), 1.2))
    print(row("--help", best([*TRANSCOMPACT, "--help"], 10, env=env), best([PYTHON, "-c", "import click"], 10, env=env), 1.3))
    rss = peak_rss_bytes([*TRANSCOMPACT, "estimate", str(path)])
    print(f"  {'peak memory of estimate':28s} {rss / 1e6:8.1f} MB for {size / 1e6:.1f} MB of input = {rss / size:5.2f}×"
          f"  (target ≤ 4×, {'ok' if rss / size <= 4 else 'OVER TARGET'})")

    batch(workdir, env)

    from claude_code_log import generate

    log = workdir / "session.jsonl"
    log.write_bytes(generate(CLAUDE_CODE_LINES))
    size = log.stat().st_size
    print(f"\npeak memory on a {CLAUDE_CODE_LINES:,}-line Claude Code log ({size / 1e6:.1f} MB; issue 12 asks ≤ 4× for every command):")
    for command in (["estimate"], ["check"], ["prune", "-q"], ["compact", "--emergency", "--force", "-q"], ["repair", "-q"]):
        rss = peak_rss_bytes([*TRANSCOMPACT, *command, str(log)])
        print(f"  {' '.join(command[:1]):28s} {rss / 1e6:8.1f} MB = {rss / size:5.2f}×  ({'ok' if rss / size <= 4 else 'OVER TARGET'})")


def batch(workdir: Path, env: dict) -> None:
    """Many small files (issue 14): `compact --emergency --jobs 2` over a directory, against one
    process reading, orjson-loading, dumping and writing the same files."""
    source = workdir / "batch"
    source.mkdir()
    data = (ROOT / "fixtures" / "anthropic" / "tool-loop.json").read_bytes()
    for i in range(BATCH_FILES):
        (source / f"session-{i:04d}.json").write_bytes(data)
    baseline = ["-c", "import orjson, pathlib, sys; out = pathlib.Path(sys.argv[2]); out.mkdir(exist_ok=True); "
                      "[(out / p.name).write_bytes(orjson.dumps(orjson.loads(p.read_bytes()))) "
                      "for p in sorted(pathlib.Path(sys.argv[1]).glob('*.json'))]", str(source), str(workdir / "copied")]
    ours = best([*TRANSCOMPACT, "compact", "--emergency", "--force", "-q", "--jobs", "2",
                 "--output-dir", str(workdir / "compacted"), str(source)], 3, env=env)
    print(f"\nbatch of {BATCH_FILES:,} small transcripts ({len(data) / 1e3:.1f} KB each; best of 3):")
    print(row("compact --emergency --jobs 2", ours, best([PYTHON, *baseline], 3, env=env), 2.0)
          + f"  {BATCH_FILES / ours:,.0f} files/s")


def accuracy(corpus: Path) -> None:
    """Each way of counting against what the API recorded, on the later half of each log's responses."""
    from transcompact.calibrate import usage_tokens
    from transcompact.estimate import Options, estimate
    from transcompact.formats import loads

    logs = sorted(corpus.glob("claude-code/*.jsonl"))
    if not logs:
        return
    print(f"\naccuracy against recorded usage ({len(logs)} Claude Code logs of the corpus; "
          "median |estimate − recorded| / recorded over the later half of each log's responses):")
    print(f"  {'log':58s} {'responses':>9s} {'chars/4':>8s} {'o200k':>8s} {'calibrate':>9s}")
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
        print(f"  {path.name[:58]:58s} {len(recorded):9d} {' '.join(cells)}")
    print(f"  {'median over the logs':58s} {'':9s} " + " ".join(
        f"{100 * median(v):{8 if n != 'calibrate' else 9}.1f}%" if v else "-" for n, v in columns.items()))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="transcompact-bench-") as workdir:
        speed(Path(workdir))
    corpus = Path(os.environ.get("TRANSCOMPACT_CORPUS", ROOT.parent / "shared" / "corpus"))
    if corpus.is_dir():
        accuracy(corpus)


if __name__ == "__main__":
    main()
