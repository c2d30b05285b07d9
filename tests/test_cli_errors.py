"""Exit status and error shape of the command line (docs/design.md §4), one test per case.

Each error must end with its exit status and one line `transcompact: error: ...` on stderr (and a
`hint:` line where there is one), never a traceback.
"""

from __future__ import annotations

import gzip
import os
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from transcompact.cli.main import cli
from transcompact.core.errors import ExitCode, InputError, TranscompactError
from transcompact.formats import NAMES

from .builders import ORPHAN, env_name
from .builders import run_cli as run
from .conftest import FIXTURES

ROOT = Path(__file__).resolve().parent.parent
JSONL_HINT = "hint: every line of a JSON Lines file must be one complete JSON value"
TRIED = f"not a transcript in a format transcompact reads (tried {', '.join(NAMES)})"

# An Anthropic request body (a top-level `system` makes the dialect certain) with a full tool loop.
VALID = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "system": "You are a careful assistant.",
    "messages": [
        {"role": "user", "content": "Read app.py"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "app.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "print('hi')"}]},
        {"role": "assistant", "content": "It prints hi."},
        {"role": "user", "content": "Thanks."},
    ],
}
ORPHAN_REPAIRED = {"system": "s", "messages": [{"role": "user", "content": [{"type": "text", "text": "go"}]}]}
ENDS_ON_ASSISTANT = {
    "system": "s",
    "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    """Run in tmp_path (short relative names in messages)."""
    monkeypatch.chdir(tmp_path)


def write(path: Path | str, value) -> Path:
    path = Path(path)
    path.write_bytes(value if isinstance(value, bytes) else orjson.dumps(value) + b"\n")
    return path




def stderr_lines(result) -> list[str]:
    return result.stderr.splitlines()


def files_under(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


# --- exit 0 and 1: check --------------------------------------------------------------------


def test_check_valid_request_body_exits_0_silently():
    write("valid.json", VALID)
    result = run("check", "valid.json")
    assert result.exit_code == ExitCode.OK
    assert result.stdout == ""
    assert result.stderr == ""


def test_check_orphan_tool_result_exits_1_and_names_file_message_rule():
    write("orphan.json", ORPHAN)
    result = run("check", "orphan.json")
    assert result.exit_code == ExitCode.VIOLATIONS
    assert result.stdout.splitlines() == [
        "orphan.json: message 0: A1 tool_result toolu_gone has no tool_use in the previous assistant message"
    ]
    assert result.stderr == ""


def test_check_warning_alone_exits_0():
    write("warn.json", ENDS_ON_ASSISTANT)
    result = run("check", "warn.json")
    assert result.exit_code == ExitCode.OK
    # The warning is shown (as a warning), but does not fail the check.
    assert "warn.json: message 1: A7 (warning) the last message is assistant" in result.stdout


def test_check_strict_turns_warning_into_exit_1():
    write("warn.json", ENDS_ON_ASSISTANT)
    result = run("check", "--strict", "warn.json")
    assert result.exit_code == ExitCode.VIOLATIONS
    assert result.stdout.splitlines() == [
        "warn.json: message 1: A7 the last message is assistant: models without prefill need a user message last"
    ]


# --- exit 2: usage --------------------------------------------------------------------------


def test_unknown_flag_exits_2():
    write("valid.json", VALID)
    result = run("check", "--nosuch", "valid.json")
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""
    assert stderr_lines(result) == [
        "transcompact: error: No such option '--nosuch'.",
        "hint: see 'transcompact check --help'",
    ]


def test_unknown_format_name_exits_2():
    write("valid.json", VALID)
    result = run("check", "--format", "nosuch", "valid.json")
    assert result.exit_code == ExitCode.USAGE
    assert stderr_lines(result) == [
        "transcompact: error: Invalid value for '--format': 'nosuch' is not one of "
        f"{', '.join(repr(name) for name in NAMES)}.",
        "hint: see 'transcompact check --help'",
    ]


def test_a_directory_with_no_transcript_exits_3(tmp_path):
    (tmp_path / "notes.txt").write_text("not a transcript")
    result = run("check", str(tmp_path))
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == [f"transcompact: error: {tmp_path}: no file matching *.json or *.jsonl in this directory "
                                    "(see --glob)"]


def test_repair_several_inputs_without_i_or_output_dir_exits_2():
    write("a.json", ORPHAN)
    write("b.json", ORPHAN)
    result = run("repair", "a.json", "b.json")
    assert result.exit_code == ExitCode.USAGE
    assert stderr_lines(result) == ["transcompact: error: several inputs need -i or --output-dir"]
    assert result.stdout == ""
    assert orjson.loads(Path("a.json").read_bytes()) == ORPHAN  # nothing rewritten


def test_output_with_in_place_exits_2():
    write("a.json", ORPHAN)
    result = run("repair", "-o", "out.json", "-i", "a.json")
    assert result.exit_code == ExitCode.USAGE
    assert stderr_lines(result) == ["transcompact: error: -o and -i cannot be used together"]
    assert not Path("out.json").exists()
    assert orjson.loads(Path("a.json").read_bytes()) == ORPHAN


def test_messages_path_to_nothing_is_a_usage_error():
    write("valid.json", VALID)
    result = run("check", "--messages-path", "nosuch", "valid.json")
    assert result.exit_code == ExitCode.USAGE
    assert stderr_lines(result) == ["transcompact: error: --messages-path nosuch: the input has nothing at 'nosuch'"]


# Every numeric flag and TRANSCOMPACT_* variable: a finite number in its range, or exit 2 naming it.
@pytest.mark.parametrize("args, env, message", [
    (["estimate", "--ratio", "nan"], {}, "Invalid value for '--ratio' (env var: 'TRANSCOMPACT_RATIO'): nan is not a finite number."),
    (["estimate", "--ratio", "inf"], {}, "Invalid value for '--ratio' (env var: 'TRANSCOMPACT_RATIO'): inf is not a finite number."),
    (["cut-point", "--ratio", "1e308"], {}, "Invalid value for '--ratio' (env var: 'TRANSCOMPACT_RATIO'): 1e308 is not in the range 0<x<=10."),
    (["estimate"], {"TRANSCOMPACT_RATIO": "nan"}, "Invalid value for '--ratio' (env var: 'TRANSCOMPACT_RATIO'): nan is not a finite number."),
    (["estimate", "--threshold", "inf"], {}, "Invalid value for '--threshold' (env var: 'TRANSCOMPACT_THRESHOLD'): inf is not a finite number."),
    (["compact"], {"TRANSCOMPACT_THRESHOLD": "inf"}, "Invalid value for '--threshold' (env var: 'TRANSCOMPACT_THRESHOLD'): inf is not a finite number."),
    (["summarize"], {"TRANSCOMPACT_TIMEOUT": "nan"}, "Invalid value for '--timeout' (env var: 'TRANSCOMPACT_TIMEOUT'): nan is not a finite number."),
    (["estimate"], {"TRANSCOMPACT_WINDOW": "1" + "0" * 23},
     "Invalid value for '--window' (env var: 'TRANSCOMPACT_WINDOW'): 100000000000000000000000 is not in the range 1<=x<=1000000000."),
    (["prune", "--head", "1.5"], {}, "Invalid value for '--head' (env var: 'TRANSCOMPACT_HEAD'): '1.5' is not a whole number."),
])
def test_a_numeric_flag_or_variable_out_of_range_exits_2(args, env, message):
    write("valid.json", VALID)
    result = CliRunner().invoke(cli, [*args, "valid.json"], env=env, prog_name="transcompact")
    assert result.exit_code == ExitCode.USAGE
    assert stderr_lines(result) == [f"transcompact: error: {message}", f"hint: see 'transcompact {args[0]} --help'"]


@pytest.mark.parametrize("args", [["compact", "--max-output", "300000"], ["compact", "--window", "8000", "--max-output", "8000"],
                                  ["estimate", "--window", "8000", "--max-output", "9000"]])
def test_max_output_not_below_the_window_exits_2(args):
    write("valid.json", VALID)
    result = run(*args, "valid.json")
    assert result.exit_code == ExitCode.USAGE
    assert result.stdout == ""
    assert stderr_lines(result)[0].startswith("transcompact: error: --max-output (")
    assert "must be below --window" in stderr_lines(result)[0]


def test_an_empty_variable_counts_as_unset():
    write("valid.json", VALID)
    plain = run("estimate", "--json", "valid.json")
    result = CliRunner().invoke(cli, ["estimate", "--json", "valid.json"], prog_name="transcompact",
                                env={"TRANSCOMPACT_TOKENIZER": "", "TRANSCOMPACT_RATIO": "", "TRANSCOMPACT_WINDOW": ""})
    assert result.exit_code == ExitCode.OK
    assert result.stdout == plain.stdout


# --- exit 3: input --------------------------------------------------------------------------


def test_missing_file_exits_3():
    result = run("check", "missing.json")
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == ["transcompact: error: missing.json: no such file"]


def test_empty_file_exits_3():
    write("empty.json", b"")
    result = run("check", "empty.json")
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == ["transcompact: error: empty.json: the input is empty"]


def test_blank_stdin_exits_3():
    result = run("check", input=b"  \n\n")
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == ["transcompact: error: <stdin>: the input is empty"]


def test_malformed_json_document_names_line_and_column():
    result = run("check", input=b'{"messages": [\n    x\n]}')
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == [
        "transcompact: error: <stdin>:2:5: malformed JSON: unexpected character, expected a JSON value"
    ]


def test_malformed_jsonl_line_names_that_line_with_hint():
    write("chat.jsonl", b'{"role":"user","content":"a"}\n{"role":"assistant",\n{"role":"user","content":"b"}\n')
    result = run("check", "chat.jsonl")
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == [
        "transcompact: error: chat.jsonl:2:21: malformed JSON line: unexpected end of data",
        JSONL_HINT,
    ]


def test_unknown_format_names_the_formats_tried():
    write("other.json", {"foo": 1})
    result = run("check", "other.json")
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == [f"transcompact: error: other.json: {TRIED}"]


def test_bad_message_content_is_a_shape_error_naming_the_message():
    write("bad.json", {"system": "s", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": 7}]})
    result = run("check", "bad.json")
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == [
        "transcompact: error: bad.json: message 1: `content` must be a string or a list of blocks, not a number"
    ]


def test_message_that_is_not_an_object_is_a_shape_error_naming_it():
    write("bad.json", {"messages": [{"role": "user", "content": "hi"}, 3]})
    result = run("check", "bad.json")
    assert result.exit_code == ExitCode.INPUT
    lines = stderr_lines(result)
    assert lines[0].startswith("transcompact: error: bad.json: message 1: a message must be an object")
    assert not any("--messages-path" in line for line in lines)


@pytest.fixture
def bpe_package(monkeypatch, tmp_path):
    """A stand-in for the package that carries the BPE files, and tiktoken with nothing built yet."""
    import tiktoken.registry

    from transcompact.counting import tokenizers

    package = tmp_path / "site" / "fake_bpe"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(tokenizers, "_DATA_PACKAGE", "fake_bpe")
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # tiktoken keeps what it built, too
    tokenizers.encoding.cache_clear()
    yield package / "data"
    tokenizers.encoding.cache_clear()


@pytest.mark.parametrize("content, message", [
    (None, "cannot read the o200k_base BPE file of the fake_bpe package: No such file or directory"),
    (b"not gzip at all", "cannot read the o200k_base BPE file of the fake_bpe package: Not a gzipped file (b'no')"),
    (gzip.compress(b"x" * 1000)[:-8], "the o200k_base BPE file of the fake_bpe package is damaged: "
                                      "Compressed file ended before the end-of-stream marker was reached"),
    (gzip.compress(b"eA== 0\n"), "the o200k_base BPE file of the fake_bpe package is damaged: "
                                 "its sha256 is not the one tiktoken pins"),
], ids=["missing", "not-gzip", "cut-short", "not-the-pinned-file"])
def test_damaged_tokenizer_data_is_an_installation_error_exit_3_with_a_hint(bpe_package, content, message):
    if content is not None:
        (bpe_package / "o200k_base.tiktoken.gz").write_bytes(content)
    write("valid.json", VALID)
    result = run("estimate", "--tokenizer", "o200k", "valid.json")
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == [f"transcompact: error: {message}",
                                    "hint: reinstall fake_bpe: its data is missing or damaged"]


# --- settings in library errors, flags on the command line -----------------------------------


def test_a_library_error_names_the_setting_and_the_cli_names_the_flag():
    from transcompact.core.errors import UsageError
    from transcompact.formats import loads

    with pytest.raises(UsageError) as raised:
        loads(orjson.dumps(VALID), "valid.json", messages_path="nosuch")
    assert str(raised.value) == "messages_path='nosuch': the input has nothing at 'nosuch'"
    assert raised.value.for_command_line() == ("--messages-path nosuch: the input has nothing at 'nosuch'", None)
    write("other.json", {"steps": VALID["messages"]})
    assert stderr_lines(run("check", "other.json"))[1] == "hint: messages may sit under 'steps': try --messages-path steps"


def test_the_option_marker_spells_a_setting_for_each_reader():
    from transcompact.core.errors import ProviderError, option

    error = ProviderError(f"no answer within {option('timeout', 30)} s", hint=f"raise {option('max_output')}")
    assert (str(error), error.message, error.hint) == (
        "no answer within timeout='30' s", "no answer within timeout='30' s", "raise max_output")
    assert error.for_command_line() == ("no answer within --timeout 30 s", "raise --max-output")
    assert error.args == (str(error),) and "\ue000" not in repr(error)


# Messages that name a flag in the library, left to the refactoring of these modules:
# they should say `option(...)` instead. Remove each pair when its message is changed.
LEFT = {
    ("ops/compaction/checkpoint/layout.py", "--checkpoint-tokens"),  # the checkpoint's own text (what did not fit), not an error
    # What a report says of how it was made (its notes, the reason for the emergency mode), which
    # `estimate` and `compact` print as they are:
    ("ops/compaction/compact.py", "--emergency"), ("ops/compaction/compact.py", "--force"), ("counting/counter.py", "--calibrate"),
    # What `compact --batch-api` prints while it watches its batches: a progress line, not an error.
    ("run/batch_api.py", "--resume"),
    # sed's and rm's own options, read in a shell command an agent ran (what it wrote: `sed -i`; removed: `rm -r`).
    ("ops/compaction/work_state.py", "--in-place"), ("ops/compaction/work_state.py", "--expression"),
    ("ops/compaction/work_state.py", "--file"), ("ops/compaction/work_state.py", "--recursive"),
}


def test_library_messages_do_not_name_flags():
    """Every string in the library (not the command line's; docstrings aside) that names a flag."""
    import ast
    import re

    package = ROOT / "cli" / "transcompact"
    flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
    found = set()
    for path in sorted(package.rglob("*.py")):
        module = path.relative_to(package).as_posix()
        if module.startswith("cli/"):
            continue
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        found |= {(module, name) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                  for name in flag.findall(node.value)}
    assert found <= LEFT, sorted(found - LEFT)


# --- exit 5: output -------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["afile/out.json", "nodir/out.json"], ids=["under-a-file", "missing-dir"])
def test_output_that_cannot_be_written_exits_5_and_leaves_nothing(tmp_path, target):
    write("a.json", ORPHAN)
    write("afile", b"not a directory\n")
    before = files_under(tmp_path)
    result = run("repair", "-q", "-o", target, "a.json")
    assert result.exit_code == ExitCode.OUTPUT
    reason = "Not a directory" if target.startswith("afile") else "No such file or directory"
    assert stderr_lines(result) == [f"transcompact: error: {target}: cannot write: {reason}"]
    assert result.stdout == ""
    assert files_under(tmp_path) == before  # no temporary or partial file anywhere
    assert Path("afile").read_bytes() == b"not a directory\n"


def test_nothing_to_compact_is_not_an_output_error(tmp_path):
    """Exit 5 is for a write that fails or a broken post-condition; a rewrite that gains nothing
    is the input written back as it was, with status 0 and a note."""
    write("valid.json", VALID)
    result = run("compact", "--force", "--emergency", "valid.json")
    assert result.exit_code == ExitCode.OK
    assert result.stdout_bytes == Path("valid.json").read_bytes()
    assert stderr_lines(result) == ["valid.json: not compacted (41 tokens, 5 messages): nothing to compact: "
                                    "neither pruning nor a summary makes it smaller"]


def test_output_dir_that_cannot_be_created_exits_5(tmp_path):
    write("a.json", ORPHAN)
    write("afile", b"x")
    result = run("repair", "-q", "--output-dir", "afile/sub", "a.json")
    assert result.exit_code == ExitCode.OUTPUT
    assert stderr_lines(result)[0].startswith("transcompact: error: afile/sub")


# --- atomic writes --------------------------------------------------------------------------


def test_in_place_rewrites_atomically_and_keeps_the_mode(tmp_path):
    write("a.json", ORPHAN)
    os.chmod("a.json", 0o640)
    result = run("repair", "-i", "a.json")
    assert result.exit_code == ExitCode.OK
    assert result.stdout == ""
    assert stderr_lines(result) == ["a.json: message 0: A1 fixed: removed tool_result toolu_gone that answers no tool_use"]
    assert files_under(tmp_path) == {"a.json"}  # no .tmp left beside it
    assert orjson.loads(Path("a.json").read_bytes()) == ORPHAN_REPAIRED
    assert stat.S_IMODE(Path("a.json").stat().st_mode) == 0o640


def test_output_file_is_written_whole(tmp_path):
    write("a.json", ORPHAN)
    result = run("repair", "-q", "-o", "out.json", "a.json")
    assert result.exit_code == ExitCode.OK
    assert result.stdout == ""
    assert files_under(tmp_path) == {"a.json", "out.json"}
    assert orjson.loads(Path("out.json").read_bytes()) == ORPHAN_REPAIRED
    assert orjson.loads(Path("a.json").read_bytes()) == ORPHAN  # the input is untouched


def test_output_dir_writes_dir_slash_name(tmp_path):
    write("a.json", ORPHAN)
    write("b.json", VALID)
    result = run("repair", "-q", "--output-dir", "out", "a.json", "b.json")
    assert result.exit_code == ExitCode.OK
    assert result.stdout == ""
    assert files_under(tmp_path) == {"a.json", "b.json", "out", "out/a.json", "out/b.json"}
    assert orjson.loads(Path("out/a.json").read_bytes()) == ORPHAN_REPAIRED
    assert Path("out/b.json").read_bytes() == Path("b.json").read_bytes()  # valid: written back unchanged


def test_new_output_file_gets_the_usual_mode():
    write("a.json", ORPHAN)
    old = os.umask(0o022)
    try:
        result = run("repair", "-q", "-o", "out.json", "a.json")
    finally:
        os.umask(old)
    assert result.exit_code == ExitCode.OK
    assert stat.S_IMODE(Path("out.json").stat().st_mode) == 0o644


# --- --traceback and broken pipes -------------------------------------------------------------


def test_traceback_flag_reraises_the_input_error():
    result = CliRunner().invoke(cli, ["check", "--traceback", "missing.json"], prog_name="transcompact")
    assert isinstance(result.exception, TranscompactError)
    assert isinstance(result.exception, InputError)
    assert result.exception.exit_code == ExitCode.INPUT
    assert str(result.exception) == "missing.json: no such file"
    assert "transcompact: error:" not in result.stderr  # re-raised, not rendered as one line


def test_traceback_is_asked_for_each_run_not_remembered():
    assert isinstance(CliRunner().invoke(cli, ["check", "--traceback", "missing.json"]).exception, InputError)
    assert not any(key.endswith("TRACEBACK") for key in os.environ)  # it travels with the run, not the environment
    result = run("check", "missing.json")
    assert result.exit_code == ExitCode.INPUT
    assert stderr_lines(result) == ["transcompact: error: missing.json: no such file"]


def test_traceback_flag_keeps_exit_status_3_in_a_process(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "transcompact", "check", "--traceback", "missing.json"],
        cwd=tmp_path, env=env_name(), capture_output=True, timeout=30,
    )
    assert "Traceback" in done.stderr.decode()
    assert done.returncode == ExitCode.INPUT




# Buffered stdout (the default) raises BrokenPipeError, which the handler must silence; with
# PYTHONUNBUFFERED=1 the raw write just stops short. Both must end quietly with status 0.
@pytest.mark.parametrize(
    "unbuffered",
    [
        pytest.param(False, id="buffered"),
        pytest.param(True, id="unbuffered"),
    ],
)
def test_broken_pipe_ends_quietly(tmp_path, unbuffered):
    messages = []
    for i in range(1000):
        messages.append({"role": "user", "content": f"question {i}: " + "x" * 150})
        messages.append({"role": "assistant", "content": f"answer {i}: " + "y" * 150})
    messages.append({"role": "user", "content": "done"})
    big = write(tmp_path / "big.json", {"system": "s", "messages": messages})
    assert big.stat().st_size > 256 * 1024  # far more than a pipe buffer holds
    process = subprocess.Popen(
        [sys.executable, "-m", "transcompact", "repair", str(big)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env_name(PYTHONUNBUFFERED="1") if unbuffered else env_name(),
    )
    head = process.stdout.read(10)
    process.stdout.close()
    try:
        stderr = process.stderr.read()
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert head == b'{"system":'
    assert stderr.decode() == ""
    assert code == 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_on_a_full_disk_exits_5(tmp_path):
    write(tmp_path / "a.json", VALID)
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "transcompact", "repair", "a.json"],
            cwd=tmp_path, env=env_name(), stdout=full, stderr=subprocess.PIPE, timeout=30,
        )
    stderr = done.stderr.decode()
    assert "internal error" not in stderr
    assert stderr.startswith("transcompact: error: ")
    assert done.returncode == ExitCode.OUTPUT


# --- formats only read ---------------------------------------------------------------------------


@pytest.mark.parametrize("fixture, format_name", [("copilot/events.jsonl", "copilot"),
                                                  ("openhands-v0/trajectory.json", "openhands-v0")])
@pytest.mark.parametrize("command", (["prune"], ["compact", "--emergency", "--force"], ["repair"]), ids=lambda c: c[0])
def test_a_writing_command_refuses_a_format_only_read_with_exit_2_and_leaves_the_file(command, fixture, format_name, tmp_path):
    path = tmp_path / Path(fixture).name
    path.write_bytes((FIXTURES / fixture).read_bytes())
    result = run(*command, "-i", str(path))
    assert result.exit_code == ExitCode.USAGE
    assert result.stderr.splitlines() == [
        f"transcompact: error: {path}: transcompact does not write the {format_name} format: it only reads it "
        "(estimate, check, cut-point, summarize)",
        "hint: write its conversation as a request body instead: --to anthropic or --to openai"]
    assert path.read_bytes() == (FIXTURES / fixture).read_bytes()


def test_an_error_names_the_variable_a_value_came_from(monkeypatch):
    """TRANSCOMPACT_* settings are named as such: the user set no flag."""
    long = str(FIXTURES / "anthropic/long-session.json")
    monkeypatch.setenv("TRANSCOMPACT_WINDOW", "1000")
    monkeypatch.setenv("TRANSCOMPACT_MAX_OUTPUT", "2000")
    for command in ("estimate", "compact"):
        result = run(command, long)
        assert result.exit_code == ExitCode.USAGE
        assert stderr_lines(result)[0] == \
            "transcompact: error: TRANSCOMPACT_MAX_OUTPUT (2,000) must be below TRANSCOMPACT_WINDOW (1,000)", command
    mixed = run("estimate", "--max-output", "2000", long)
    assert stderr_lines(mixed)[0] == "transcompact: error: --max-output (2,000) must be below TRANSCOMPACT_WINDOW (1,000)"


def test_estimate_refuses_a_budget_of_nothing_before_it_reads_a_file(monkeypatch):
    """Named by where the max output came from (a model's entry in the table, not a flag the user
    gave), and before any file is read: --json printed an empty report on stdout beside the error
    (found using it as a user)."""
    long = str(FIXTURES / "anthropic/long-session.json")
    by_model = run("estimate", "--json", "--model", "claude-sonnet-4-5", "--window", "50000", long)
    assert by_model.exit_code == ExitCode.USAGE and by_model.stdout == ""
    assert stderr_lines(by_model)[0] == "transcompact: error: claude-sonnet-4-5's max output (64,000) must be below --window (50,000)"
    flagged = run("estimate", "--json", "--window", "1000", "--max-output", "2000", long)
    assert flagged.exit_code == ExitCode.USAGE and flagged.stdout == ""
    assert stderr_lines(flagged)[0] == "transcompact: error: --max-output (2,000) must be below --window (1,000)"


def test_a_model_after_the_table_works_with_its_window():
    long = str(FIXTURES / "anthropic/long-session.json")
    result = run("estimate", "--model", "claude-imaginary-9-9", "--window", "300000", long)
    assert result.exit_code == 0, result.stderr
    assert "input budget  284,000 (window 300,000 − max output 16,000)" in result.stdout
    assert stderr_lines(result) == ["transcompact: note: claude-imaginary-9-9 is not in the table of docs/counting.md#models: "
                                    "counted with the window given (300,000) and a max output of 16,000"]
    unknown = run("estimate", "--model", "claude-imaginary-9-9", long)
    assert unknown.exit_code == ExitCode.USAGE and "unknown model 'claude-imaginary-9-9'" in unknown.stderr


def test_credentials_in_a_url_are_never_shown(monkeypatch, tmp_path):
    """`ANTHROPIC_BASE_URL=http://user:secret@host`: the messages, the report and the events name
    the host alone."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://user:secret@127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-shown")
    long = str(FIXTURES / "anthropic/long-session.json")
    failed = run("summarize", "--all", "--retries", "0", "--timeout", "2", long)
    assert failed.exit_code == ExitCode.PROVIDER
    assert "cannot reach the Anthropic API at http://127.0.0.1:9" in failed.stderr
    fallback = run("compact", "--force", "--keep-recent-tokens", "1000", "--retries", "0", "--timeout", "2", "--report", str(tmp_path / "report.jsonl"),
                   "--events", str(tmp_path / "events.jsonl"), "-o", str(tmp_path / "out.json"), long)
    assert fallback.exit_code == 0, fallback.stderr
    shown = fallback.stderr + (tmp_path / "report.jsonl").read_text() + (tmp_path / "events.jsonl").read_text()
    assert "127.0.0.1:9" in shown and "secret" not in shown and "sk-ant-never-shown" not in shown + failed.stderr


def test_a_key_in_a_url_s_query_is_never_shown(monkeypatch):
    """Some services take a key in the base URL's query: the message names the endpoint, its path
    where it goes (it went after the query), and not the query (found using summarize as a user)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    failed = run("summarize", "--provider", "openai", "--base-url", "http://u:secret@127.0.0.1:9/v1?key=secret", "--retries", "0",
                 "--keep-recent-tokens", "1000", str(FIXTURES / "anthropic/long-session.json"))
    assert failed.exit_code == ExitCode.PROVIDER
    assert "transcompact: error: cannot reach http://127.0.0.1:9/v1/chat/completions?…: " in failed.stderr
    assert "secret" not in failed.stderr


def test_an_output_in_a_directory_that_is_not_there_is_refused_before_the_model_is_asked(api, monkeypatch, tmp_path):
    """-o into a missing directory failed only after the summary was paid for (found using compact as a user)."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    target = tmp_path / "nodir/out.json"
    result = run("compact", "--force", "--keep-recent-tokens", "1000", "-o", str(target), str(FIXTURES / "anthropic/long-session.json"))
    assert result.exit_code == ExitCode.OUTPUT and result.stderr == f"transcompact: error: {target}: cannot write: No such file or directory\n"
    assert api.requests == []


def test_a_short_key_is_not_cut_out_of_the_words_around_it(monkeypatch, tmp_path):
    """A stand-in's key (`x`) is hidden where it stands alone, not in every word that holds it
    ("une…pected", "code…": found using the docs' examples as a user)."""
    from transcompact.core import errors

    monkeypatch.setattr(errors, "_SECRETS", set())  # the run's keys, this test's alone (`x` would hide every later x)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    (tmp_path / "bad.json").write_bytes(b'{"messages": [\n')
    (tmp_path / "notes.json").write_bytes(b'{"x": 1}\n')
    failed = run("compact", "--dry-run", "--retries", "0", "--timeout", "2", str(tmp_path))
    assert failed.exit_code == ExitCode.INPUT
    assert "malformed JSON: unexpected end of data" in failed.stderr and "claude-code, codex, gemini" in failed.stderr


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_key_a_service_quotes_back_is_never_shown(api, monkeypatch, tmp_path, provider):
    """A service that answers 401 quoting the credentials it was sent (the key, a bearer token, a
    URL's password as Basic auth): the message and the report show none of them (found using
    compact as a user with a stand-in server)."""
    def quoting(request):
        sent = request.headers.get("authorization") or request.headers.get("x-api-key")
        return 401, {"type": "error", "error": {"type": "authentication_error", "message": f"Incorrect API key provided: {sent}"}}

    api.answer = quoting
    host = api.url.split("://", 1)[1]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-quoted-back")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-quoted-back")
    long = str(FIXTURES / "anthropic/long-session.json")
    flags = ("--provider", "openai", "--base-url", f"http://user:pw-quoted@{host}/v1") if provider == "openai" else ()
    failed = run("summarize", *flags, "--retries", "0", "--keep-recent-tokens", "1000", long)
    assert failed.exit_code == ExitCode.PROVIDER
    assert "answered HTTP 401: Incorrect API key provided: " in failed.stderr
    fallback = run("compact", *flags, "--force", "--retries", "0", "--keep-recent-tokens", "1000", "--report", str(tmp_path / "r.jsonl"),
                   "-o", str(tmp_path / "out.json"), long)
    assert fallback.exit_code == 0, fallback.stderr
    shown = failed.stderr + fallback.stderr + (tmp_path / "r.jsonl").read_text()
    assert "quoted-back" not in shown and "pw-quoted" not in shown and "dXNlcjpwdy1xdW90ZWQ" not in shown


@pytest.mark.parametrize("data, where", [
    (b'{"role":"user","content":"hi"}\n{"role":"assistant","content":"yo"}\n\xef\xbb\xbf{"role":"user","content":"again"}\n',
     "s.jsonl:3:1"),
    (b'\xef\xbb\xbf\xef\xbb\xbf{"messages":[{"role":"user","content":"hi"}]}', "s.jsonl:1:1"),
], ids=["files joined, each with its mark", "a mark twice"])
def test_a_byte_order_mark_that_does_not_begin_the_file_is_named_where_it_is(tmp_path, monkeypatch, data, where):
    """Valid UTF-8 was called 'not valid UTF-8', with no place, and a hint (--encoding-errors
    replace) that changed nothing (found using check as a user)."""
    monkeypatch.chdir(tmp_path)
    Path("s.jsonl").write_bytes(data)
    for command in ("check", "estimate", "repair"):
        result = run(command, "s.jsonl")
        assert result.exit_code == ExitCode.INPUT
        assert result.stderr.splitlines()[0] == (f"transcompact: error: {where}: a byte-order mark (U+FEFF) begins this line: "
                                                 "only a file's first bytes may be one")


@pytest.mark.parametrize("command, flag", [("prune", "-o"), ("prune", "--report"), ("prune", "--archive"), ("prune", "--output-dir"),
                                           ("compact", "--events"), ("compact", "--resume"), ("slim", "--archive"),
                                           ("expand", "--archive")])
def test_an_empty_path_is_refused_as_naming_no_file(tmp_path, monkeypatch, command, flag):
    """Found using the tool as a user: `-o ''` wrote stdout and `--report ''` no report, exit 0."""
    monkeypatch.chdir(tmp_path)
    write("a.json", ORPHAN)
    result = run(command, flag, "", "a.json")
    assert result.exit_code == ExitCode.USAGE
    assert stderr_lines(result)[0].endswith(": an empty path names no file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_a_format_named_wrong_is_told_the_format_that_reads_the_input(tmp_path, monkeypatch):
    """Found using the tool as a user: the hint said `try --messages-path messages`, the flag already given."""
    monkeypatch.chdir(tmp_path)
    write("a.json", ORPHAN)
    for flags in (["--format", "codex"], ["--format", "codex", "--messages-path", "messages"]):
        result = run("estimate", *flags, "a.json")
        assert result.exit_code == ExitCode.INPUT
        assert stderr_lines(result)[1] == "hint: it reads as anthropic: leave out --format, or give --format anthropic"

