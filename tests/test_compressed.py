"""Compressed logs (docs/input-output.md#compressed-files): a gzip, zstd, bzip2 or xz input is known
by its first bytes and read as what it holds; an output is compressed as its name says (`-o`), or
as its input was (`-i`, `--output-dir`); the bytes written are the same each time; a cut-off or
damaged compressed file is one line and exit 3, and no file is touched."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
from pathlib import Path

import pytest
import zstandard

import transcompact
from transcompact.core.errors import ExitCode
from transcompact.io import compression

from .builders import claude_log, run_with_importtime, session

COMPRESS = {
    "gzip": lambda data: gzip.compress(data, mtime=0),
    "zstd": lambda data: zstandard.ZstdCompressor(write_checksum=True).compress(data),  # as the zstd tool writes it
    "bzip2": bz2.compress,
    "xz": lzma.compress,
}
DECOMPRESS = {
    "gzip": gzip.decompress,
    "zstd": lambda data: zstandard.ZstdDecompressor().decompressobj().decompress(data),
    "bzip2": bz2.decompress,
    "xz": lzma.decompress,
}
SUFFIX = {"gzip": ".gz", "zstd": ".zst", "bzip2": ".bz2", "xz": ".xz"}
KINDS = list(COMPRESS)
PRUNE = ("prune", "-q", "--hard-clear-after", "0", "--keep-last", "0")


@pytest.fixture(autouse=True)
def _here(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def log() -> bytes:
    return claude_log(rounds=6, size=5000)


def plain_output(transcompact, *args: str, data: bytes) -> bytes:
    """What the command writes to stdout for the plain input."""
    Path("plain.jsonl").write_bytes(data)
    result = transcompact(*args, "plain.jsonl")
    assert result.exit_code == 0, result.stderr
    return result.stdout_bytes


def kind_of(path: str | Path) -> str | None:
    return compression.detect(Path(path).read_bytes())


# --- what is read --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_each_compression_is_known_by_its_first_bytes(kind):
    assert compression.detect(COMPRESS[kind](b'{"a": 1}\n')) == kind
    assert compression.detect(b'{"a": 1}\n') is None
    assert compression.detect(b"BZh") is None and compression.detect(b"BZhx") is None  # no block size: not bzip2


def test_a_compression_suffix_is_not_part_of_the_name():
    assert compression.split_suffix("logs/a.jsonl.gz") == ("logs/a.jsonl", ".gz")
    assert compression.without_suffix("a.JSON.ZST") == "a.JSON"
    assert compression.without_suffix("a.jsonl") == "a.jsonl"
    assert compression.without_suffix(".gz") == ".gz" and compression.without_suffix("logs/.xz") == "logs/.xz"
    assert [compression.by_suffix(f"o.jsonl{s}") for s in (".gz", ".zst", ".bz2", ".xz", "")] == [*KINDS, None]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("named", ["as compressed", "misleadingly"])
def test_a_compressed_input_is_read_as_what_it_holds(transcompact, log, kind, named):
    expected = plain_output(transcompact, *PRUNE, data=log)
    # Known by its bytes, not its name: `log.jsonl` holding zstd, `log.jsonl.gz` holding xz.
    name = f"log.jsonl{SUFFIX[kind]}" if named == "as compressed" else "log.jsonl" if kind != "gzip" else "log.jsonl.bz2"
    Path(name).write_bytes(COMPRESS[kind](log))
    result = transcompact(*PRUNE, name)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected  # stdout is plain whatever was read
    counted = transcompact("estimate", "--json", name)
    assert counted.exit_code == 0 and '"format": "claude-code"' in counted.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_a_compressed_stdin_is_read_as_what_it_holds(transcompact, log, kind):
    expected = plain_output(transcompact, *PRUNE, data=log)
    result = transcompact(*PRUNE, input=COMPRESS[kind](log))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected


def test_streams_one_after_the_other_are_one_input(transcompact, log):
    """`cat a.gz b.gz` (and bgzip's many members) decompresses to both, as gzip -d reads it; zero
    bytes after the last stream are padding."""
    half = log.index(b"\n", len(log) // 2) + 1
    Path("log.jsonl.gz").write_bytes(gzip.compress(log[:half]) + gzip.compress(log[half:]) + bytes(16))
    Path("log.jsonl.xz").write_bytes(lzma.compress(log[:half]) + lzma.compress(log[half:]))
    expected = plain_output(transcompact, "check", "--json", data=log).replace(b"plain.jsonl", b"NAME")
    for name in ("log.jsonl.gz", "log.jsonl.xz"):
        result = transcompact("check", "--json", name)
        assert result.stdout_bytes.replace(name.encode(), b"NAME") == expected


def test_the_library_reads_and_writes_compressed_files(log):
    Path("log.jsonl.bz2").write_bytes(bz2.compress(log))
    transcript = transcompact.load("log.jsonl.bz2")
    assert len(transcript.messages) > 6
    transcompact.dump(transcript, "copy.jsonl.zst")
    assert DECOMPRESS["zstd"](Path("copy.jsonl.zst").read_bytes()) == log


# --- what is written -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_an_output_is_compressed_as_its_name_says(transcompact, log, kind):
    expected = plain_output(transcompact, *PRUNE, data=log)
    target = f"out.jsonl{SUFFIX[kind]}"
    assert transcompact(*PRUNE, "-o", target, "plain.jsonl").exit_code == 0
    assert kind_of(target) == kind
    assert DECOMPRESS[kind](Path(target).read_bytes()) == expected
    # Twice the same bytes: no time nor name in a header.
    first = Path(target).read_bytes()
    os.remove(target)
    assert transcompact(*PRUNE, "-o", target, "plain.jsonl").exit_code == 0
    assert Path(target).read_bytes() == first


def test_a_gzip_output_has_no_time_and_no_name_in_its_header(transcompact, log):
    Path("log.jsonl").write_bytes(log)
    assert transcompact(*PRUNE, "-o", "out.jsonl.gz", "log.jsonl").exit_code == 0
    header = Path("out.jsonl.gz").read_bytes()[:10]
    assert header[3] == 0  # no flag: no file name, no comment
    assert header[4:8] == bytes(4)  # mtime 0


def test_an_output_named_plainly_is_plain_whatever_was_read(transcompact, log):
    expected = plain_output(transcompact, *PRUNE, data=log)
    Path("log.jsonl.xz").write_bytes(lzma.compress(log))
    assert transcompact(*PRUNE, "-o", "out.jsonl", "log.jsonl.xz").exit_code == 0
    assert Path("out.jsonl").read_bytes() == expected


@pytest.mark.parametrize("kind", KINDS)
def test_in_place_keeps_the_compression_the_file_was_read_in(transcompact, log, kind):
    expected = plain_output(transcompact, *PRUNE, data=log)
    names = [f"log.jsonl{SUFFIX[kind]}", "misnamed.jsonl.gz" if kind != "gzip" else "misnamed.jsonl"]
    for name in names:
        Path(name).write_bytes(COMPRESS[kind](log))
    result = transcompact(*PRUNE, "-i", *names)
    assert result.exit_code == 0, result.stderr
    for name in names:
        assert kind_of(name) == kind  # as read, not as named
        assert DECOMPRESS[kind](Path(name).read_bytes()) == expected


def test_in_place_leaves_a_compressed_file_that_does_not_change_as_it_was(transcompact, log):
    Path("log.jsonl").write_bytes(log)
    assert transcompact(*PRUNE, "-o", "pruned.jsonl.gz", "log.jsonl").exit_code == 0
    made_by_gzip = gzip.compress(gzip.decompress(Path("pruned.jsonl.gz").read_bytes()), mtime=123)
    Path("pruned.jsonl.gz").write_bytes(made_by_gzip)
    assert transcompact(*PRUNE, "-i", "pruned.jsonl.gz").exit_code == 0
    assert Path("pruned.jsonl.gz").read_bytes() == made_by_gzip


def test_a_batch_takes_a_mix_and_the_output_directory_keeps_each_name_and_compression(transcompact, log):
    request = session(rounds=4, size=3000)
    files = {"logs/a.json": (request, None), "logs/b.jsonl.gz": (log, "gzip"), "logs/sub/c.jsonl.zst": (log, "zstd"),
             "logs/sub/d.json.bz2": (request, "bzip2"), "logs/e.jsonl.xz": (log, "xz"), "logs/f.jsonl": (log, "zstd")}
    for name, (data, kind) in files.items():
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_bytes(COMPRESS[kind](data) if kind else data)
    Path("logs/notes.txt.gz").write_bytes(gzip.compress(b"not a transcript"))  # not *.json(l) once decompressed: not walked
    expected = {data: plain_output(transcompact, *PRUNE, data=data) for data in (request, log)}
    result = transcompact(*PRUNE, "--output-dir", "out", "logs")
    assert result.exit_code == 0, result.stderr
    written = sorted(str(path.relative_to("out")) for path in Path("out").rglob("*") if path.is_file())
    assert written == sorted(name.removeprefix("logs/") for name in files)
    for name, (data, kind) in files.items():
        output = Path("out", name.removeprefix("logs/"))
        assert kind_of(output) == kind
        assert (DECOMPRESS[kind](output.read_bytes()) if kind else output.read_bytes()) == expected[data]
    # Again, in place: each file keeps its compression, and a second run writes the same bytes.
    assert transcompact(*PRUNE, "-i", "logs").exit_code == 0
    assert all(kind_of(name) == kind for name, (_, kind) in files.items())
    again = transcompact(*PRUNE, "--output-dir", "again", "logs")
    assert again.exit_code == 0, again.stderr
    assert all(Path("again", name.removeprefix("logs/")).read_bytes() == Path("out", name.removeprefix("logs/")).read_bytes()
               for name in files)


def test_a_glob_matches_a_compressed_file_by_the_name_of_what_it_holds(transcompact, log):
    Path("logs").mkdir()
    Path("logs/a.jsonl.gz").write_bytes(gzip.compress(log))
    Path("logs/b.json.gz").write_bytes(gzip.compress(session(rounds=2).replace(b"\n", b"")))
    result = transcompact("estimate", "--json", "--glob", "*.jsonl", "logs")
    assert result.exit_code == 0, result.stderr
    assert '"file": "logs/a.jsonl.gz"' in result.stdout and "b.json.gz" not in result.stdout


def test_a_converted_output_keeps_its_compression_under_its_new_extension(transcompact, log):
    Path("logs").mkdir()
    Path("logs/s.jsonl.gz").write_bytes(gzip.compress(log))
    result = transcompact("prune", "-q", "--to", "anthropic", "--output-dir", "out", "logs")
    assert result.exit_code == 0, result.stderr
    assert os.listdir("out") == ["s.json.gz"]
    assert gzip.decompress(Path("out/s.json.gz").read_bytes()).lstrip().startswith(b"{")


def test_a_report_never_replaces_a_compressed_transcript_in_the_directory_it_walks(transcompact, log):
    Path("logs").mkdir()
    Path("logs/a.jsonl.gz").write_bytes(gzip.compress(log))
    result = transcompact(*PRUNE, "-i", "--report", "logs/a.jsonl.gz", "logs")
    assert result.exit_code == ExitCode.USAGE
    assert "would replace a file in logs" in result.stderr
    assert gzip.decompress(Path("logs/a.jsonl.gz").read_bytes()) == log


def test_a_compressed_claude_code_log_is_named_as_the_log_it_holds(transcompact, log):
    """Rule C1 (the file is named <session uuid>.jsonl) reads the name without its compression suffix."""
    uuid = "4d5611e5-0d1c-4b8e-9f0a-2b3c4d5e6f70"
    for name in (f"{uuid}.jsonl", f"{uuid}.jsonl.gz", "other.jsonl.gz"):
        Path(name).write_bytes(gzip.compress(log) if name.endswith(".gz") else log)
    said = {name: "C1" in transcompact("check", name).stdout for name in (f"{uuid}.jsonl", f"{uuid}.jsonl.gz", "other.jsonl.gz")}
    assert said == {f"{uuid}.jsonl": False, f"{uuid}.jsonl.gz": False, "other.jsonl.gz": True}


def test_prune_archive_and_expand_bring_a_compressed_log_back(transcompact, log):
    Path("log.jsonl.gz").write_bytes(gzip.compress(log))
    assert transcompact(*PRUNE, "--archive", "originals.jsonl", "-i", "log.jsonl.gz").exit_code == 0
    assert gzip.decompress(Path("log.jsonl.gz").read_bytes()) != log
    result = transcompact("expand", "-q", "--archive", "originals.jsonl", "-i", "log.jsonl.gz")
    assert result.exit_code == 0, result.stderr
    assert kind_of("log.jsonl.gz") == "gzip" and gzip.decompress(Path("log.jsonl.gz").read_bytes()) == log


# --- what is refused -----------------------------------------------------------------------------


def damaged(kind: str, log: bytes) -> dict[str, bytes]:
    """The ways a compressed file goes wrong: cut short, a byte changed inside, other bytes after it."""
    whole = COMPRESS[kind](log)
    changed = bytearray(whole)
    middle = len(whole) // 2
    changed[middle:middle + 8] = bytes(b ^ 0x55 for b in changed[middle:middle + 8])
    return {"cut short": whole[: len(whole) * 2 // 3], "changed": bytes(changed), "followed by junk": whole + b"junk\n"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_compressed_file_is_one_line_and_exit_3_and_left_as_it_was(transcompact, log, kind):
    for way, data in damaged(kind, log).items():  # each compression checks its data (a CRC): a changed byte is found
        name = f"bad.jsonl{SUFFIX[kind]}"
        Path(name).write_bytes(data)
        result = transcompact(*PRUNE, "-i", name)
        assert result.exit_code == ExitCode.INPUT, (way, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"transcompact: error: {name}: "), (way, lines)
        assert f"{kind} data" in lines[0] and lines[0].isprintable(), (way, lines)
        assert Path(name).read_bytes() == data, way
        assert os.listdir(".") == [name]  # no temporary file left


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_off_file_says_so(transcompact, log, kind):
    Path("cut.jsonl").write_bytes(damaged(kind, log)["cut short"])
    result = transcompact("estimate", "cut.jsonl")
    assert result.exit_code == ExitCode.INPUT
    assert result.stderr == f"transcompact: error: cut.jsonl: cut-off {kind} data: the file ends before its compressed stream does\n"


def test_a_damaged_file_in_a_batch_fails_alone(transcompact, log):
    Path("logs").mkdir()
    Path("logs/a.jsonl.gz").write_bytes(gzip.compress(log)[:-20])
    Path("logs/b.jsonl.zst").write_bytes(COMPRESS["zstd"](log))
    result = transcompact(*PRUNE, "--output-dir", "out", "logs")
    assert result.exit_code == ExitCode.INPUT
    assert "transcompact: error: logs/a.jsonl.gz: cut-off gzip data: " in result.stderr
    assert os.listdir("out") == ["b.jsonl.zst"]


# --- what is imported ----------------------------------------------------------------------------


def test_the_decompressors_are_imported_only_when_a_compressed_file_is_met(log, tmp_path):
    Path("log.jsonl").write_bytes(log)
    Path("log.jsonl.xz").write_bytes(lzma.compress(log))
    compressors = {"gzip", "zlib", "bz2", "_bz2", "lzma", "_lzma", "zstandard"}
    done, modules = run_with_importtime("estimate", str(tmp_path / "log.jsonl"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(modules & compressors) == []
    done, modules = run_with_importtime("estimate", str(tmp_path / "log.jsonl.xz"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(modules & compressors) == ["_lzma", "lzma"]
