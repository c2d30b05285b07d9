"""Where the work stands, one signal at a time, on the shapes the agents write (work_state.py),
and the checkpoint sections built from them (ops/compaction/checkpoint/)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from transcompact.core.model import ASSISTANT, USER, Message, Text, ToolCall, ToolResult
from transcompact.formats import BY_NAME
from transcompact.ops.compaction.checkpoint import checkpoint, find_facts, own_words, sections
from transcompact.ops.compaction.output_errors import error_lines
from transcompact.ops.compaction.work_state import DONE, IN_PROGRESS, PENDING, Task, find_work_state

from .conftest import CORPUS


def call(number: int, name: str, **arguments) -> Message:
    return Message(ASSISTANT, (ToolCall(f"call_{number}", name, arguments),))


def result(number: int, output: str, is_error: bool = False) -> Message:
    return Message(USER, (ToolResult(f"call_{number}", output, is_error=is_error),))


def state_of(*messages: Message):
    return find_work_state(messages)


# --- task lists ----------------------------------------------------------------------------------


def test_claude_codes_todowrite_the_last_list_wins():
    first = [{"content": "Analyze codebase structure and files", "status": "in_progress", "activeForm": "Analyzing"},
             {"content": "Create CLAUDE.md with essential information", "status": "pending", "activeForm": "Creating"}]
    last = [{**first[0], "status": "completed"}, {**first[1], "status": "in_progress"}]
    state = state_of(call(1, "TodoWrite", todos=first), result(1, "Todos have been modified successfully."),
                     call(2, "TodoWrite", todos=last), result(2, "Todos have been modified successfully."))
    assert state.tasks == (Task("Analyze codebase structure and files", DONE),
                           Task("Create CLAUDE.md with essential information", IN_PROGRESS))
    assert state.next_step == "Create CLAUDE.md with essential information"


def test_claude_codes_task_tools_build_the_list_from_their_results():
    state = state_of(
        call(1, "TaskCreate", subject="Add EndedAt field to session State struct", description="…", activeForm="Adding"),
        result(1, "Task #1 created successfully: Add EndedAt field to session State struct"),
        call(2, "TaskCreate", subject="Run verification (fmt, lint, tests)", description="…", activeForm="Running"),
        result(2, "Task #2 created successfully: Run verification (fmt, lint, tests)"),
        call(3, "TaskUpdate", taskId="1", status="in_progress"), result(3, "Updated task #1 status"),
        call(4, "TaskUpdate", taskId="1", status="completed"), result(4, "Updated task #1 status"))
    assert state.tasks == (Task("Add EndedAt field to session State struct", DONE),
                           Task("Run verification (fmt, lint, tests)", PENDING))
    assert state.next_step == "Run verification (fmt, lint, tests)"


@pytest.mark.parametrize("name, arguments", [
    ("update_plan", {"explanation": "x", "plan": [{"step": "Read the parser", "status": "completed"},
                                                  {"step": "Fix the off-by-one", "status": "in_progress"}]}),
    ("write_todos", {"todos": [{"description": "Read the parser", "status": "completed"},
                               {"description": "Fix the off-by-one", "status": "in_progress"}]}),
    ("task_tracker", {"command": "plan", "task_list": [{"id": "1", "title": "Read the parser", "status": "done"},
                                                       {"id": "2", "title": "Fix the off-by-one", "status": "in_progress"}]}),
], ids=["codex update_plan", "gemini write_todos", "openhands task_tracker"])
def test_the_other_agents_planning_tools(name, arguments):
    state = state_of(call(1, name, **arguments), result(1, "Plan updated"))
    assert state.tasks == (Task("Read the parser", DONE), Task("Fix the off-by-one", IN_PROGRESS))


# --- commits, files, runs, the open problem -------------------------------------------------------


def test_a_commit_is_its_subject_and_the_hash_git_printed():
    heredoc = "git add -A && git commit -m \"$(cat <<'EOF'\nFix session end on Gemini\n\nLonger body.\nEOF\n)\""
    state = state_of(call(1, "Bash", command=heredoc),
                     result(1, "[alex/ent-109 09bd59e] Fix session end on Gemini\n 3 files changed, 40 insertions(+)"),
                     call(2, "Bash", command='git commit -m "Nothing here"'),
                     result(2, "On branch main\nnothing to commit, working tree clean\nExit code 1", is_error=True),
                     call(3, "Bash", command='git commit -am "Bump version"'), result(3, ""))
    assert [(c.hash, c.subject) for c in state.commits] == [("09bd59e", "Fix session end on Gemini"), (None, "Bump version")]


def test_files_modified_apart_from_files_only_read():
    patch = "*** Begin Patch\n*** Update File: src/parser.rs\n@@\n-a\n+b\n*** Add File: src/lexer.rs\n+x\n*** End Patch"
    state = state_of(call(1, "Read", file_path="/repo/README.md"), result(1, "# readme"),
                     call(2, "Edit", file_path="/repo/cli/explain.go", old_string="a", new_string="b"), result(2, "ok"),
                     call(3, "Read", file_path="/repo/cli/explain.go"), result(3, "package cli"),
                     call(4, "str_replace_editor", command="view", path="/testbed/a.py"), result(4, "…"),
                     call(5, "str_replace_editor", command="str_replace", path="/testbed/b.py"), result(5, "…"),
                     call(6, "apply_patch", input=patch), result(6, "Done!"))
    assert state.modified == ("src/lexer.rs", "src/parser.rs", "/testbed/b.py", "/repo/cli/explain.go")
    assert state.read == ("/testbed/a.py", "/repo/README.md")


def test_a_failed_edit_modified_no_file_and_a_deleted_file_is_listed_no_more():
    state = state_of(call(1, "Write", file_path="/repo/CLAUDE.md", content="x"),
                     result(1, "Claude requested permissions to write to /repo/CLAUDE.md, but you haven't granted it yet.",
                            is_error=True),
                     call(2, "Write", file_path="docs/blue.md", content="blue"), result(2, "ok"),
                     call(3, "Read", file_path="docs/notes.md"), result(3, "notes"),
                     call(4, "Bash", command="rm docs/blue.md && rm -f ./docs/notes.md"), result(4, ""),
                     call(5, "Bash", command='echo -e "\\n# Red" >> docs/color.md'), result(5, ""),
                     call(6, "Bash", command="sed -i 's/a/b/' src/a.py | tee build.log"), result(6, ""),
                     call(7, "Bash", command="rm src/missing.py"),
                     result(7, "Exit code 1\nrm: cannot remove 'src/missing.py': No such file or directory", is_error=True))
    assert state.modified == ("build.log", "src/a.py", "docs/color.md")
    assert state.read == ()
    assert state.deleted == ("docs/blue.md", "./docs/notes.md")


def test_a_file_written_again_after_it_was_deleted_is_modified():
    state = state_of(call(1, "Bash", command="rm -rf out.txt"), result(1, ""),
                     call(2, "Bash", command="cat > out.txt << 'EOF'\nrm out.txt\nEOF"), result(2, ""))
    assert state.modified == ("out.txt",) and state.deleted == ()


def test_the_checkpoint_lists_no_file_deleted_since_nor_one_a_call_failed_to_write():
    messages = [Message(USER, (Text("Tidy the docs folder up, please."),)),
                call(1, "Read", file_path="docs/blue.md"), result(1, "# Blue"),
                call(2, "Write", file_path="docs/CLAUDE.md", content="x"), result(2, "permission denied", is_error=True),
                call(3, "Glob", pattern="*.md", path="docs"), result(3, "docs/blue.md"),
                call(4, "Bash", command="rm docs/blue.md"), result(4, ""),
                call(5, "Bash", command="echo '# Red' >> docs/color.md"), result(5, "")]
    headings = {h3: items for _, h3, items in sections(checkpoint(find_facts(messages, {}, {}), 2000, 0.25))}
    assert headings["Files modified (newest first)"] == ["- `docs/color.md`"]
    assert "Files read (newest first)" not in headings


def test_a_search_that_found_nothing_is_no_open_problem():
    nothing = state_of(call(1, "Bash", command='grep -A 5 "Detected truecolor" src/theme.ts'),
                       result(1, "Command exited with code 1", is_error=True))
    assert nothing.problem is None
    missing = state_of(call(1, "Bash", command="grep x src/gone.ts"),
                       result(1, "Exit code 2\ngrep: src/gone.ts: No such file or directory", is_error=True))
    assert missing.problem is not None and missing.problem.error == "grep: src/gone.ts: No such file or directory"


def test_openhands_grep_that_found_nothing_is_no_error_and_no_open_problem():
    output = "\n[The command completed with exit code 1.]\n[Current working directory: /workspace]\n[Command finished with exit code 1]"
    state = state_of(call(1, "execute_bash", command='grep -n "iso" src/match.c'), result(1, output))
    assert state.problem is None
    facts = find_facts([call(1, "execute_bash", command='grep -n "iso" src/match.c'), result(1, output)], {}, {})
    assert facts.errors == ()


def test_an_open_problems_command_of_several_lines_says_it_shows_the_first():
    command = "cd /testbed && sed -i '750i\\\n    def pre_save(self, model_instance, add):\\\n        pass' f.py"
    state = state_of(call(1, "Bash", command=command), result(1, "Exit code 1\nsed: -e expression #1: unknown command", is_error=True))
    text = checkpoint(find_facts([call(1, "Bash", command=command), result(1, "Exit code 1\nsed: -e expression #1: unknown command",
                                                                               is_error=True)], {}, {}), 2000, 0.25)
    assert state.problem is not None
    assert "- `cd /testbed && sed -i '750i\\ … (2 more lines)` failed: sed: -e expression #1: unknown command" in text


def test_the_last_run_of_each_check_with_its_result_line():
    state = state_of(
        call(1, "Bash", command="pytest -q 2>&1 | tail -5"),
        result(1, "..F\nFAILED tests/test_a.py::test_x - AssertionError\n=== 12 passed, 1 failed in 0.31s ===\nExit code 1",
               is_error=True),
        call(2, "Bash", command="go test ./..."), result(2, "ok  \tentire.io/cli\t0.412s"),
        call(3, "Bash", command="pytest -q 2>&1 | tail -5"), result(3, "============ 13 passed in 0.30s ============"))
    assert [(r.command, r.result, r.failed) for r in state.runs] == [
        ("pytest -q 2>&1 | tail -5", "13 passed in 0.30s", False), ("go test ./...", "ok  \tentire.io/cli\t0.412s", False)]
    assert state.problem is None  # the same check succeeded since


def test_the_open_problem_is_the_last_failure_nothing_since_fixed():
    state = state_of(call(1, "Bash", command="mix compile"),
                     result(1, "Compiling 3 files (.ex)\n** (CompileError) lib/spotter.ex:12: undefined function foo/0\n"
                               "Exit code 1", is_error=True),
                     call(2, "Bash", command="git status"), result(2, "On branch main"))
    assert state.problem.command == "mix compile"
    assert state.problem.error == "** (CompileError) lib/spotter.ex:12: undefined function foo/0"


def test_a_check_piped_into_tail_that_counts_failures_failed_whatever_its_status():
    """`pytest … | tail -3` exits 0 with the pipe's last command: its summary's `1 failed` says the
    run failed, so the error stays open, not "(fixed since)" by itself (found using compact as a user)."""
    failing = "FAILED tests/test_cart.py::test_total - TypeError: unsupported operand\n1 failed in 0.12s"
    messages = (call(1, "Bash", command="pytest tests/test_cart.py -x"), result(1, failing, is_error=True),
                call(2, "Edit", file_path="src/cart.py", old_string="a+b", new_string="a + b"), result(2, "Edited"),
                call(3, "Bash", command="pytest tests/test_cart.py -x 2>&1 | tail -3"), result(3, failing))
    state = state_of(*messages)
    assert state.problem is not None and state.problem.command == "pytest tests/test_cart.py -x 2>&1 | tail -3"
    assert [run.failed for run in state.runs] == [True]
    errors = find_facts(messages, {"call_1": "Bash", "call_3": "Bash"}, {}).errors
    assert [line for _, line in errors] == ["FAILED tests/test_cart.py::test_total - TypeError: unsupported operand"] * 2


@pytest.mark.parametrize("status", ["exit status 1", "Process exited with code 1", "[The command completed with exit code 1.]"],
                         ids=["go", "runner", "openhands"])
def test_a_status_said_after_the_output_fails_the_run(status):
    """Go, a runner, OpenHands say the status on the output's last line: a run ending so failed
    (found using compact as a user: such runs were listed `ok`, with their errors listed apart)."""
    traceback = "Traceback (most recent call last):\n  File \"t.py\", line 3\nKeyError: 'missing'\n"
    output = "".join(f"collecting item {k}\n" for k in range(150)) + traceback + status
    state = state_of(call(1, "bash", command="pytest -x tests/test_cart.py"), result(1, output))
    assert [(run.result, run.failed) for run in state.runs] == [("KeyError: 'missing'", True)]
    assert state.problem is not None and state.problem.error == "KeyError: 'missing'"
    passed = state_of(call(1, "bash", command="go test ./..."), result(1, "ok  \tcart\t0.1s\nexit status 0"))
    assert [run.failed for run in passed.runs] == [False]


# --- errors are error messages ---------------------------------------------------------------------


@pytest.mark.parametrize("output, wanted", [
    ("Getting extensions in current project...\nerror: could not find `Cargo.toml`\nExit code 1", ["error: could not find `Cargo.toml`"]),
    ("Checking 1 source file ...\nlib/a.ex:3: warning\nFound 1 issue\nExit code 1", ["Found 1 issue"]),
    ("Exit code 1", []),
    ("[Old tool result content cleared]", []),
    ("Pre-commit validation failed:\\n\\n[FORMAT] Code is not formatted.\\nRun 'mix format' to fix.",
     ["Pre-commit validation failed:"]),
    ("  1) test shows the badge (SpotterWeb.LiveTest)\n     Assertion with =~ failed\n     code: assert html =~ \"badge\"",
     ["Assertion with =~ failed"]),
    ("✘ [ERROR] Could not resolve \"js/app.js\"\n\n1 error", ["✘ [ERROR] Could not resolve \"js/app.js\""]),
    ("gh: Not Found (HTTP 404)", ["gh: Not Found (HTTP 404)"]),
    ("Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your edit commmand.\n\n"
     "ERRORS:\n- E999 SyntaxError: unmatched ']'\n\nThis is how your edit would have looked if applied\n"
     "[File: /repo/numpy_handler.py (373 lines total)]\n282:            \"Unable to convert the pixel data: one of Pixel Data\"\n"
     "1481:        except (TypeError, ValueError) as error:\n1482:            raise self.make_error(\"invalid\") from error",
     ["E999 SyntaxError: unmatched ']'"]),
    ("ERROR:\nNo replacement was performed. Multiple occurrences of old_str `return x;` in lines [317, 449].",
     ["ERROR: No replacement was performed. Multiple occurrences of old_str `return x;` in lines [317, 449]."]),
    ("\n[The command completed with exit code 2.]\n[Current working directory: /workspace]\n[Command finished with exit code 2]", []),
], ids=["not the progress line", "the line that says why", "an exit status alone", "a placeholder",
        "a heading with a literal \\n", "ExUnit", "esbuild", "gh", "SWE-agent's lint, not the lines of its file window",
        "OpenHands' editor: its label with the reason after it", "OpenHands' shell: its status and directory alone"])
def test_errors_are_error_messages(output, wanted):
    assert error_lines(output, failed=True) == wanted


@pytest.mark.parametrize("output, wanted", [
    ("collected 1 item\r\nFAILED tests/t.py::test_x - assert 1 == 2\r\n= 1 failed in 0.02s =\r\n", ["FAILED tests/t.py::test_x - assert 1 == 2"]),
    ("Downloading 10%\rDownloading 100%\rerror: checksum mismatch\r", ["error: checksum mismatch"]),
    ("résumé\u2028panic: runtime error: index out of range\u2028goroutine 1", ["panic: runtime error: index out of range"]),
    ("npm ERR! code E404\nnpm ERR! 404 Not Found", ["npm ERR! code E404", "npm ERR! 404 Not Found"]),
    ("ok\n\u3000\u3000FAIL: TestParse (0.00s)\n", ["FAIL: TestParse (0.00s)"]),
    ("Traceback (most recent call last):\n  File \"a.py\", line 3, in f\n    FAILED = check()\nValueError: a\n\n"
     "During handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n"
     "  File \"a.py\", line 5, in <module>\nKeyError: 'b'\nExit code 1", ["ValueError: a", "KeyError: 'b'"]),
    ("Traceback (most recent call last):\n  File \"a.py\", line 3, in f\n", []),
    ("<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"a.py\", line 3, in f\n</output>", []),
    ("src/main.rs:12:5: error: mismatched types\nwarning: unused variable\nthe build failed", [
        "src/main.rs:12:5: error: mismatched types", "the build failed"]),
], ids=["CRLF", "carriage returns", "a Unicode line separator", "on the first line", "indented with ideographic spaces",
        "each traceback's exception, not its frames", "a traceback cut before its exception",
        "a traceback cut before its exception, in its wrapper", "a compiler's, and a line that ends saying it"])
def test_error_lines_whatever_the_line_breaks_and_the_spaces_around_them(output, wanted):
    assert error_lines(output, failed=False) == wanted


@pytest.mark.parametrize("output, wanted", [
    ("=== 12 passed in 0.31s ===\n" + "warning: deprecated call\n" * 400, "12 passed in 0.31s"),
    ("running 3 tests\r\ntest result: ok. 3 passed; 0 failed\r\n", "test result: ok. 3 passed; 0 failed"),
    ("Finished `dev` profile [unoptimized] target(s) in 2.1s\n   Compiling nothing", "Finished `dev` profile [unoptimized] target(s) in 2.1s"),
    ("5 Examples, 0 Failures\n", "5 Examples, 0 Failures"),
    ("\u3000== OK ==\n", "OK"),
    ("compiled\nno summary here\n", "ok"),
    # npm's banner names the package's version and the script: `29 test` is no count of tests (found using compact as a user).
    ("\n> @mariozechner/pi-tui@0.7.29 test\n> node --test test/*.test.ts\n\nCommand aborted", "ok"),
], ids=["far above the end", "CRLF", "a phrase", "in capitals", "between rules and spaces", "none", "an npm banner"])
def test_a_check_s_result_line_wherever_it_is(output, wanted):
    state = state_of(call(1, "Bash", command="make test"), result(1, output))
    assert state.runs[0].result == wanted


# --- only the user's words are the user's ----------------------------------------------------------


def test_what_an_agent_injects_is_not_the_users():
    said = ("<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"
            "<system-reminder>The date is 2026-01-01.</system-reminder>\nPlease fix the login bug.")
    assert own_words(said) == "Please fix the login bug."
    assert own_words("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>") == ""
    skill = Message(USER, (Text("Base directory for this skill: /x\n\n# Commit\nWrite a commit message."),),
                    raw={"type": "user", "isMeta": True, "sourceToolUseID": "toolu_1"})
    observation = Message(USER, (Text("OBSERVATION:\nfile.py:1: x"),), raw={"role": "user", "message_type": "observation"})
    own = Message(USER, (Text("Ship it."),), raw={"type": "user"})
    claude_code = BY_NAME["claude-code"]  # whose skill messages the agent writes whole (`isMeta`)
    facts = find_facts([skill, observation, own], {}, {},
                       injected=lambda message: "" if claude_code.written_by_agent(message) else message.blocks[0].text)
    assert facts.goal == "Ship it."


def test_a_single_turn_session_keeps_its_opening_request_as_the_goal():
    messages = [Message(USER, (Text("Port the parser to Rust."),)), call(1, "Bash", command="cargo build"),
                result(1, "Finished `dev` profile")]
    assert find_facts(messages, {}, {}).goal == "Port the parser to Rust."



def test_a_results_command_is_its_calls_among_the_messages_read():
    """find_facts takes a call's input from the call it reads before the result (the inputs given
    are only those of calls elsewhere): a failed run that the same command later passes is fixed."""
    messages = [Message(USER, (Text("Make the tests pass."),)), call(1, "Bash", command="pytest -q"),
                result(1, "Exit code 1\nFAILED tests/test_cart.py::test_total - AssertionError: assert 3 == 4", is_error=True),
                call(2, "Bash", command="pytest -q"), result(2, "Exit code 0\n12 passed in 0.4s")]
    assert find_facts(messages, {}, {}).errors == (
        (2, "(fixed since) FAILED tests/test_cart.py::test_total - AssertionError: assert 3 == 4"),)


# --- the checkpoint's sections, and merging without growing -------------------------------------------


def work_log(round_: int) -> list[Message]:
    todos = [{"content": f"Step {n} of round {round_}", "status": "completed" if n < 2 else "pending"} for n in range(4)]
    return [Message(USER, (Text(f"Round {round_}: carry on."),)), call(10 * round_, "TodoWrite", todos=todos),
            result(10 * round_, "ok"),
            call(10 * round_ + 1, "Bash", command=f'git commit -am "Round {round_} done"'),
            result(10 * round_ + 1, f"[main abc{round_}def] Round {round_} done\n 1 file changed"),
            call(10 * round_ + 2, "Edit", file_path=f"src/round_{round_}.py"), result(10 * round_ + 2, "ok"),
            call(10 * round_ + 3, "Bash", command="pytest -q"), result(10 * round_ + 3, f"{round_} passed in 0.1s"),
            Message(ASSISTANT, (Text(f"Round {round_} committed."),))]


def test_the_checkpoint_says_where_the_work_stands():
    text = checkpoint(find_facts(work_log(1), {}, {}), 2000, 0.25)
    for expected in ("### Tasks (the agent's last list)\n- [x] Step 0 of round 1\n- [x] Step 1 of round 1\n- [ ] Step 2 of round 1",
                     "### Commits\n- `abc1def` Round 1 done", "### Next step\n- Step 2 of round 1",
                     "### Last test and build runs (newest first)\n- `pytest -q`: 1 passed in 0.1s",
                     "### Files modified (newest first)\n- `src/round_1.py`"):
        assert expected in text


def test_a_later_checkpoint_merges_the_earlier_newer_state_replacing_older():
    counts = Counter()
    first = checkpoint(find_facts(work_log(1), {}, {}), 2000, 0.25)
    second = checkpoint(find_facts(work_log(2), {}, {}), 2000, 0.25, previous=first, counts=counts)
    headings = {h3: items for _, h3, items in sections(second)}
    assert headings["Tasks (the agent's last list)"][0] == "- [x] Step 0 of round 2"  # the newer list replaces the older
    assert headings["Commits"] == ["- `abc1def` Round 1 done", "- `abc2def` Round 2 done"]  # commits accumulate
    assert headings["Last test and build runs (newest first)"] == ["- `pytest -q`: 2 passed in 0.1s"]
    assert headings["Files modified (newest first)"] == ["- `src/round_2.py`", "- `src/round_1.py`"]
    assert counts["held commits"] == counts["kept commits"] == 1


def test_every_later_checkpoint_stays_within_its_budget():
    """A model's long summary before ours is kept by its start and its end, inside the budget."""
    earlier = "## Summary\n" + "\n".join(f"{n}. A long paragraph the model wrote about step {n}, " * 3 for n in range(400))
    body = earlier
    for round_ in range(1, 6):
        body = checkpoint(find_facts(work_log(round_) * 20, {}, {}), 900, 0.25, previous=body)
        assert len(body) * 0.25 <= 900, round_


@pytest.mark.skipif(not (CORPUS / "claude-code").is_dir(), reason="the shared corpus is not here")
def test_the_corpus_task_tools_give_the_task_list():
    """The real shapes: Claude Code's TaskCreate / TaskUpdate session, and a TodoWrite one."""
    from transcompact import loads

    path = CORPUS / "claude-code" / "entire-cli-session-062a8bdd-user-pasted-image.jsonl"
    state = find_work_state(loads(path.read_bytes(), path.name).messages)
    assert [t.status for t in state.tasks] == [DONE] * 5
    assert state.tasks[0].text == "Add EndedAt field to session State struct"
    path = CORPUS / "claude-code" / "ccviewer-session-1af7fc5e.jsonl"
    state = find_work_state(loads(path.read_bytes(), path.name).messages)
    assert state.tasks and {t.status for t in state.tasks} <= {DONE, IN_PROGRESS, PENDING}
    assert json.dumps([t.text for t in state.tasks])


def test_an_edit_swe_agent_refused_is_left_behind_by_the_next_edit():
    """Its lint's errors were never in the code (the edit was not applied): the next edit, applied
    or refused in turn, leaves them behind (found by the bench's probe of stale statements)."""
    def ran(command: str) -> Message:
        return Message(ASSISTANT, (Text(f"Let me try.\n```\n{command}\n```"),))

    refused = ("Your proposed edit has introduced new syntax error(s). Please understand the fixes and retry your edit "
               "commmand.\n\nERRORS:\n- E999 SyntaxError: unmatched '{}'\n\nThis is how your edit would have looked if applied")
    messages = [Message(USER, (Text("Fix the pixel data check in numpy_handler.py, please."),)),
                ran("edit 287:295\n    required = [\n    ]]\nend_of_edit"), Message(USER, (Text(refused.format("]")),)),
                ran("edit 287:295\n    required = [\n    ))\nend_of_edit"), Message(USER, (Text(refused.format(")")),)),
                ran("edit 287:296\n    required = []\nend_of_edit"), Message(USER, (Text("[File: numpy_handler.py (373 lines total)]"),)),
                ran("python reproduce_bug.py"), Message(USER, (Text("Script completed successfully, no errors."),))]
    errors = [line for _, line in find_facts(messages, {}, {}).errors]
    assert errors == ["(fixed since) E999 SyntaxError: unmatched ']'", "(fixed since) E999 SyntaxError: unmatched ')'"]


def test_swe_agents_editor_modifies_the_file_it_opened_or_created():
    """Found using compact as a user: a SWE-agent trajectory's checkpoint had no file modified (its
    editor runs as commands: `open`, `create`, then `edit` and `insert` of the file open)."""
    def ran(command: str) -> Message:
        return Message(ASSISTANT, (Text(f"Next.\n```\n{command}\n```"),))

    messages = [Message(USER, (Text("Fix the pixel data check in numpy_handler.py, please."),)),
                ran("create reproduce_bug.py"), Message(USER, (Text("[File: /repo/reproduce_bug.py (1 lines total)]"),)),
                ran("edit 1:1\nimport numpy\nend_of_edit"), Message(USER, (Text("File updated."),)),
                ran('open "pydicom/numpy_handler.py" 293'), Message(USER, (Text("[File: numpy_handler.py (373 lines total)]"),)),
                ran("edit 287:296\n    required = []\nend_of_edit"), Message(USER, (Text("File updated."),)),
                ran("open setup.py"), Message(USER, (Text("[File: setup.py (40 lines total)]"),))]
    headings = {h3: items for _, h3, items in sections(checkpoint(find_facts(messages, {}, {}), 2000, 0.25))}
    assert headings["Files modified (newest first)"] == ["- `pydicom/numpy_handler.py`", "- `reproduce_bug.py`"]
    assert headings["Files read (newest first)"] == ["- `setup.py`"]


@pytest.mark.parametrize("command, written, deleted", [
    ("sed -i 's/x/y/' settings.py 2>&1", ("settings.py",), ()),
    ("touch .stamp 2>/dev/null", (".stamp",), ()),
    ("tee notes.txt < input.txt", ("notes.txt",), ()),
    ("touch -d yesterday a -r ref", ("a",), ()),
    ("sed --expression s/a/b/ -i f", ("f",), ()),
    ("sed --in-place=.bak s/a/b/ g", ("g",), ()),
    ('python -c "if x > limit:\n    print(1)"', (), ()),
    ("echo x > /dev/stderr", (), ()),
    ("rm -rf node_modules 2>&1", (), ("node_modules/",)),
    ("cat > f.txt << 'EOF'\nrm important\nEOF", ("f.txt",), ()),
], ids=["a descriptor redirected", "stderr to /dev/null", "an input", "touch's values", "sed's script by option",
        "sed's backup suffix", "a quoted script", "a device", "a directory", "a here-document"])
def test_what_a_shell_command_writes_and_deletes(command, written, deleted):
    """Found by a review: `2>&1` made files `2` and `1`, `< input.txt` a file `<`, a quoted
    script's `> limit:` a file `limit:`."""
    from transcompact.ops.compaction.work_state import shell_effects

    assert shell_effects(command) == (written, deleted)


def test_rm_takes_out_the_file_it_names_and_every_file_under_a_directory_it_removes():
    state = state_of(call(1, "Write", file_path="src/pkg/main.py"), result(1, "ok"),
                     call(2, "Write", file_path="build/gen/out.py"), result(2, "ok"),
                     call(3, "Bash", command="cd /tmp/scratch && rm main.py"), result(3, ""),
                     call(4, "Bash", command="rm -r build/"), result(4, ""))
    assert state.modified == ("src/pkg/main.py",)


def test_a_search_fed_by_a_here_document_that_found_nothing_is_no_open_problem():
    state = state_of(call(1, "Bash", command="cat <<EOF | grep -q TODO\nnothing to do\nEOF"), result(1, "Exit code 1", is_error=True))
    assert state.problem is None
