"""`prune`: the spec's algorithm in every format, the options, the properties (the archive: test_archive.py)."""

from __future__ import annotations

import gc
import json
import tracemalloc

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from transcompact.cli.main import cli
from transcompact.core.model import Thinking, ToolCall
from transcompact.formats import dumps, loads
from transcompact.ops.compaction.output_errors import is_placeholder, result_error_lines
from transcompact.ops.compaction.work_state import find_work_state
from transcompact.ops.pruning.key_lines import KEY_LINES_CHARS
from transcompact.ops.pruning.prune import PLACEHOLDER, PruneOptions, prune
from transcompact.ops.pruning.truncate import is_truncated

from .builders import loads_checked, prompt, properties, prune_and_expand, results, session, text_of
from .conftest import FIXTURES, supported_corpus_files
from .strategies import transcripts


def test_the_spec_algorithm_with_its_defaults():
    transcript = loads(session(), "s.json")
    pruned, report = prune(transcript)
    texts = [text_of(r) for r in results(pruned)]
    # 10 tool-result messages: the first 4 are older than the last 6 (cleared), the last 2 are protected,
    # the 4 between are longer than 4000 characters (soft-trimmed). The failed one keeps its last line: why it failed.
    originals = [text_of(r) for r in results(transcript)]
    assert texts[:4] == [PLACEHOLDER, f"{PLACEHOLDER}\n{originals[1].splitlines()[-1]}", PLACEHOLDER, PLACEHOLDER]
    for text, original in zip(texts[4:8], originals[4:8]):
        head, marker, tail = text[:1500], text[1500:-1500], text[-1500:]
        assert marker == "\n\n--- trimmed (kept 1500 head + 1500 tail of 6000 chars) ---\n\n"
        assert (head, tail) == (original[:1500], original[-1500:])
    assert texts[8:] == [text_of(r) for r in results(transcript)][8:]
    assert (report.cleared, report.soft_trimmed, report.protected) == (4, 4, 2)
    assert report.tokens_after < report.tokens_before
    # is_error and every other field stay; the user's note beside the results is untouched.
    wire = orjson.loads(dumps(pruned))["messages"]
    assert wire[4]["content"][0]["is_error"] is True and wire[4]["content"][0]["content"] == texts[1]
    assert [m["content"][1] for m in wire[2:-2:2]] == [m["content"][1] for m in json.loads(session())["messages"][2:-2:2]]


def test_soft_trim_keeps_the_real_numbers():
    pruned, _ = prune(loads(session(rounds=3, size=9000), "s.json"), PruneOptions(keep_last=0, head=100, tail=50))
    assert "\n\n--- trimmed (kept 100 head + 50 tail of 9000 chars) ---\n\n" in text_of(results(pruned)[0])
    assert len(text_of(results(pruned)[0])) == 100 + 50 + len("\n\n--- trimmed (kept 100 head + 50 tail of 9000 chars) ---\n\n")


def test_openai_tool_runs_count_as_one_tool_result_message():
    transcript = loads(session(rounds=8, dialect="openai"), "s.json")
    pruned, report = prune(transcript)
    texts = [text_of(r) for r in results(pruned)]
    # 8 runs of 2 tool messages: runs 0-1 cleared, runs 2-5 trimmed, runs 6-7 protected.
    assert texts[:4] == [PLACEHOLDER] * 4
    assert report.protected == 4 and report.cleared == 4
    assert texts[12:] == [text_of(r) for r in results(transcript)][12:]


def test_images_and_excluded_tools_are_left_alone():
    data = (FIXTURES / "anthropic/every-block.json").read_bytes()
    pruned, report = prune(loads(data, "x.json"), PruneOptions(keep_last=0, hard_clear_after=0))
    assert report.untouched_media == 1  # the screenshot result holds an image
    assert dumps(pruned) != data  # the other result was cleared
    transcript = loads(session(), "s.json")
    pruned, report = prune(transcript, PruneOptions(exclude_tools=frozenset({"read"})))
    read_ids = {b.id for m in transcript.messages for b in m.blocks if isinstance(b, ToolCall) and b.name == "read"}
    assert all(r == o for r, o in zip(results(pruned), results(transcript)) if r.tool_call_id in read_ids)
    assert report.excluded == len(read_ids) - 1  # the protected one is counted as protected


def test_a_result_shorter_than_the_placeholder_is_not_cleared():
    transcript = loads(session(rounds=9, size=20), "s.json")
    pruned, report = prune(transcript)
    assert report.cleared == 0 and pruned is transcript  # nothing pruned: the same transcript, counted once


def test_clear_tool_inputs_and_clear_thinking():
    transcript = loads(session(), "s.json")
    pruned, report = prune(transcript, PruneOptions(clear_tool_inputs=True))
    calls = [b for m in pruned.messages for b in m.blocks if isinstance(b, ToolCall)]
    assert [c.input for c in calls[:4]] == [{}] * 4 and calls[4].input == {"n": 4}
    assert [c.name for c in calls] == [b.name for m in transcript.messages for b in m.blocks if isinstance(b, ToolCall)]
    assert report.inputs_cleared == 4

    messages = json.loads(session(rounds=3))["messages"]
    for m in messages:
        if m["role"] == "assistant" and isinstance(m["content"], list):
            m["content"].insert(0, {"type": "thinking", "thinking": "hmm", "signature": "sig"})
    messages += [{"role": "assistant", "content": [{"type": "thinking", "thinking": "now", "signature": "s"},
                                                   {"type": "text", "text": "ok"}]}, {"role": "user", "content": "go on"}]
    thinking = loads(json.dumps({"messages": messages}).encode(), "t.json")
    pruned, report = prune(thinking, PruneOptions(clear_thinking=True))
    assert report.thinking_removed == 3
    assert [any(isinstance(b, Thinking) for b in m.blocks) for m in pruned.messages if m.role == "assistant"] == [
        False, False, False, False, True]


def test_claude_code_changes_message_content_only_unless_asked():
    path = FIXTURES / "claude-code/broken-session.jsonl"
    lines = [json.loads(line) for line in path.read_bytes().splitlines()]
    result = CliRunner().invoke(cli, ["prune", "--keep-last", "0", "--hard-clear-after", "0", str(path)])
    assert result.exit_code == 0, result.stderr
    out = [json.loads(line) for line in result.stdout_bytes.splitlines()]
    changed = [(a, b) for a, b in zip(lines, out) if a != b]
    assert all({k for k in a if a[k] != b[k]} == {"message"} for a, b in changed)
    content = [(a, b) for a, b in changed if a["message"]["content"] != b["message"]["content"]]
    assert len(content) == 1
    before, after = content[0]
    assert after["message"]["content"][0]["content"] == PLACEHOLDER
    # The last response recorded a prompt that held the old result: restated, its usage only.
    last = [(a["message"], b["message"]) for a, b in changed if (a, b) not in content]
    last_id = next(line["message"]["id"] for line in reversed(lines) if line.get("type") == "assistant")
    assert last and all(a["id"] == last_id and b == {**a, "usage": b["usage"]} and prompt(b["usage"]) < prompt(a["usage"])
                        for a, b in last)
    ui = CliRunner().invoke(cli, ["prune", "--keep-last", "0", "--hard-clear-after", "0", "--prune-ui-copy", str(path)])
    changed = [(a, json.loads(b)) for a, b in zip(lines, ui.stdout_bytes.splitlines()) if a != json.loads(b)]
    assert changed[0][1]["toolUseResult"] == PLACEHOLDER


def test_report_line_and_json(tmp_path):
    runner = CliRunner()
    (tmp_path / "s.json").write_bytes(session())
    result = runner.invoke(cli, ["prune", "--report", str(tmp_path / "report.json"), str(tmp_path / "s.json")])
    assert result.stderr == f"{tmp_path / 's.json'}: pruned 4 soft-trimmed, 4 cleared (2 protected): 15,189 → 6,312 tokens\n"
    (line,) = (tmp_path / "report.json").read_text().splitlines()  # JSON Lines: one per file
    report = json.loads(line)
    assert report["soft_trimmed"] == 4 and report["tokens_before"] == 15189 and report["file"] == str(tmp_path / "s.json")
    assert (report["command"], report["status"], report["output"], report["written"]) == ("prune", "changed", "<stdout>", True)


def test_numeric_defaults_are_variables(tmp_path):
    (tmp_path / "s.json").write_bytes(session())
    result = CliRunner().invoke(cli, ["prune", "-q", str(tmp_path / "s.json")], env={"TRANSCOMPACT_KEEP_LAST": "10"})
    assert json.loads(result.stdout) == json.loads(session())


# --- key lines: what a pruned result keeps of what it held -------------------------------------

REJECTED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
            "the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
            "keep the build folder, clean only dist/")
FAILED_TESTS = ("Exit code 1\n============================= test session starts ==============================\n"
                + "".join(f"tests/test_cart.py::test_case_{n} PASSED\n" for n in range(12))
                + "Traceback (most recent call last):\n  File \"src/shop/cart.py\", line 12, in total\n    return a + b\n"
                "TypeError: unsupported operand type(s) for +: 'int' and 'str'\n"
                "FAILED tests/test_cart.py::test_total - TypeError: unsupported operand\n"
                "========================= 1 failed, 12 passed in 0.52s =========================")
COMMITTED = ("[main 67cdb2e] Fix the cart total\n 3 files changed, 41 insertions(+), 7 deletions(-)\n"
             " create mode 100644 src/shop/totals.py\n create mode 100644 tests/test_totals.py")


def shell_session(*runs: tuple[str, str, bool]) -> bytes:
    """An agent session of shell commands: (command, what it printed, whether the result is an error)."""
    messages: list[dict] = [{"role": "user", "content": "Fix the cart total."}]
    for n, (command, output, is_error) in enumerate(runs):
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{n:02d}", "name": "Bash", "input": {"command": command}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{n:02d}", "content": output, "is_error": is_error}]})
    messages += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks."}]
    return json.dumps({"model": "m", "messages": messages}).encode()


RUNS = (("rm -rf build", REJECTED, True), ("pytest tests/", FAILED_TESTS, True), ('git commit -am "Fix the cart total"', COMMITTED, False))
CLEAR_ALL = PruneOptions(keep_last=0, hard_clear_after=0)


def test_a_cleared_result_keeps_its_key_lines_under_the_placeholder():
    pruned, report = prune(loads(shell_session(*RUNS), "s.json"), CLEAR_ALL)
    assert report.cleared == 3
    assert [text_of(r) for r in results(pruned)] == [
        f"{PLACEHOLDER}\nThe user doesn't want to proceed with this tool use. … the user said:\nkeep the build folder, clean only dist/",
        f"{PLACEHOLDER}\nExit code 1\nTypeError: unsupported operand type(s) for +: 'int' and 'str'\n"
        "FAILED tests/test_cart.py::test_total - TypeError: unsupported operand\n1 failed, 12 passed in 0.52s",
        f"{PLACEHOLDER}\n[main 67cdb2e] Fix the cart total"]
    properties(shell_session(*RUNS), "s.json", CLEAR_ALL)  # pruning twice is pruning once, among others


def test_the_checkpoint_reads_a_cleared_result_s_key_lines_as_it_read_the_output():
    transcript = loads(shell_session(*RUNS), "s.json")
    pruned, _ = prune(transcript, CLEAR_ALL)
    assert all(is_placeholder(text_of(r)) for r in results(pruned))
    state = find_work_state(pruned.messages)
    assert state == find_work_state(transcript.messages)
    assert [c.hash for c in state.commits] == ["67cdb2e"] and state.runs[0].result == "1 failed, 12 passed in 0.52s"
    assert state.problem is not None and state.problem.error.startswith("FAILED tests/test_cart.py::test_total")
    inputs = [c.input for m in transcript.messages for c in m.tool_calls]
    assert [result_error_lines(r, "Bash", i) for r, i in zip(results(pruned), inputs)] == [
        result_error_lines(r, "Bash", i) for r, i in zip(results(transcript), inputs)]


def test_placeholders_with_and_without_key_lines():
    assert is_placeholder(PLACEHOLDER) and is_placeholder("[Old tool result content cleared]")
    assert is_placeholder(f"{PLACEHOLDER}\nExit code 1\nerror: no such file")
    assert not is_placeholder(f"{PLACEHOLDER} and what came after it") and not is_placeholder("Exit code 1\n" + PLACEHOLDER)


def test_the_key_lines_fit_in_their_budget():
    errors = "".join(f"src/shop/cart_{n}.py:{n}:1: error: " + "this line says at length what went wrong " * 6 + "\n"
                     for n in range(5))
    pruned, _ = prune(loads(shell_session(("mypy src", "Exit code 1\n" + errors, True)), "s.json"), CLEAR_ALL)
    notice, *kept = text_of(results(pruned)[0]).split("\n")
    assert notice == PLACEHOLDER and kept[0] == "Exit code 1" and kept[1].startswith("src/shop/cart_0.py:0:1: error:")
    assert len("\n".join(kept)) < KEY_LINES_CHARS and kept[-1].endswith(" …")  # the last that fits, cut at a word


def test_a_soft_trimmed_result_keeps_the_key_lines_of_its_middle_under_the_marker():
    filler = "".join(f"tests/test_cart.py::test_case_{n} PASSED\n" for n in range(150))
    output = f"Exit code 1\n{filler}FAILED tests/test_cart.py::test_total - AssertionError: assert 3 == 4\n{filler}1 failed in 2.1s"
    options = PruneOptions(keep_last=0)
    pruned, report = prune(loads(shell_session(("pytest", output, True)), "s.json"), options)
    assert report.soft_trimmed == 1
    marker = f"\n\n--- trimmed (kept 1500 head + 1500 tail of {len(output)} chars) ---\n"
    # The exit status is in the head and the summary in the tail: only the failure was in the middle.
    assert text_of(results(pruned)[0]) == (output[:1500] + marker + "FAILED tests/test_cart.py::test_total - AssertionError: assert 3 == 4"
                                          + "\n\n" + output[-1500:])
    properties(shell_session(("pytest", output, True)), "s.json", options)
    cut, _ = prune(loads(shell_session(("pytest", output, True)), "s.json"), PruneOptions(keep_last=0, by_kind=True, result_token_cap=300))
    text = text_of(results(cut)[0])
    assert text.endswith(" omitted ...]\nFAILED tests/test_cart.py::test_total - AssertionError: assert 3 == 4") and is_truncated(text)


def test_expand_restores_a_result_whose_placeholder_kept_key_lines(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.json").write_bytes(shell_session(*RUNS))
    original, pruned, expanded = prune_and_expand("--keep-last", "0", "--hard-clear-after", "0", source="s.json")
    assert "[main 67cdb2e] Fix the cart total" in pruned.decode() and json.loads(expanded) == json.loads(original)


# --- properties ------------------------------------------------------------------------------

SMALL = PruneOptions(soft_trim_chars=8, head=2, tail=2, hard_clear_after=2, keep_last=1)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])






@SETTINGS
@given(transcripts(), st.sampled_from([SMALL, PruneOptions()]))
def test_properties_on_generated_transcripts(generated, options):
    _, data = generated
    assume(loads_checked(data) is not None)  # an empty conversation is not a transcript
    properties(data, "generated", options)


@pytest.mark.parametrize("path", supported_corpus_files())
def test_properties_on_the_corpus(path):
    properties(path.read_bytes(), str(path), PruneOptions())


def test_a_rewrite_that_would_add_an_error_writes_nothing(tmp_path):
    from transcompact.core.errors import PostConditionError
    from transcompact.ops.validity.postcondition import verified

    before = loads(session(rounds=2), "s.json")
    broken = before.with_messages(before.messages[:1] + before.messages[2:])  # a result loses its call
    with pytest.raises(PostConditionError, match="prune would add A1 at message 1") as raised:
        verified(before, broken, dumps(broken), operation="prune")
    assert raised.value.exit_code == 5
    verified(broken, broken, dumps(broken), operation="prune")  # an error the input had already is not the rewrite's


def test_several_inputs_need_in_place_or_an_output_dir(tmp_path):
    paths = [str(FIXTURES / "anthropic/tool-loop.json"), str(FIXTURES / "openai/tool-calls.json")]
    assert CliRunner().invoke(cli, ["prune", *paths]).exit_code == 2
    result = CliRunner().invoke(cli, ["prune", "-q", "--output-dir", str(tmp_path), *paths])
    assert result.exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tool-calls.json", "tool-loop.json"]


@pytest.mark.parametrize("name, shape", [("body.json", "body"), ("list.json", "list"), ("chat.jsonl", "lines")])
def test_a_pruned_transcript_does_not_hold_the_outputs_it_cleared(name, shape):
    """What pruning cleared is not held by what it made (a message's content as read, the blocks
    it was read as), nor written back: a large transcript read lazily (as views of its bytes)
    holds its input once while it is pruned. The fields beside the content are written back in
    their place."""
    messages = json.loads(session(rounds=40, size=120_000))["messages"]  # 40 outputs of 120 KB: 4.8 MB
    messages[2]["id"] = 0  # a field beside the content (a message that has one is read at once)
    data = {"body": lambda: orjson.dumps({"model": "m", "messages": messages}),
            "list": lambda: orjson.dumps(messages),
            "lines": lambda: b"".join(orjson.dumps(m) + b"\n" for m in messages)}[shape]()
    transcript = loads(data, name, lazily=True)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        pruned, report = prune(transcript, PruneOptions())
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert report.cleared == 40 - 6
    assert held < 0.1 * len(data), f"the pruned transcript holds {held:,} bytes more"  # 5 MB before
    written = orjson.loads(dumps(pruned).splitlines()[2] if shape == "lines" else dumps(pruned))
    third = written if shape == "lines" else (written["messages"] if shape == "body" else written)[2]
    assert is_placeholder(third["content"][0]["content"])
    assert list(third) == list(messages[2]) and third["id"] == 0  # the other fields, in their place


def test_clear_tool_inputs_clears_a_text_input_to_empty_text():
    """Found using prune as a user: a Codex custom tool's input (apply_patch's patch, text) was
    made {}, written as the text "{}", and the post-condition stopped the run as a bug."""
    rollout = next((FIXTURES / "codex").glob("*0199c3a1*.jsonl"))
    result = CliRunner().invoke(cli, ["prune", "--keep-last", "0", "--hard-clear-after", "0", "--clear-tool-inputs", str(rollout)])
    assert result.exit_code == 0, result.stderr
    calls = [line["payload"] for line in map(json.loads, result.stdout.splitlines()) if line.get("type") == "response_item"
             and line["payload"].get("type") == "custom_tool_call"]
    assert calls and all(call["input"] == "" for call in calls)
