"""A checkpoint a resumed agent can trust: the goal is the request the work was for, an error
later work fixed says so, the last words say what happened after them, and an earlier summary a
model wrote is merged by its sections (its request and the user's messages first), never cut in
the middle, its next step dropped once later work closed it."""

from __future__ import annotations

from collections import Counter

from transcompact.core.summary_text import SummaryText
from transcompact.ops.compaction.checkpoint import Facts, artifact_trail, checkpoint
from transcompact.ops.compaction.compact import CompactOptions, summary_text
from transcompact.ops.compaction.cut import Cut
from transcompact.ops.compaction.work_state import Commit, WorkState

from .builders import anthropic, assistant, text, tool_use, user


def bash(call_id: str, command: str) -> dict:
    return tool_use(call_id, input={"command": command})


def output(call_id: str, content: str, failed: bool = False) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": failed}


def summary_of(*messages: dict) -> SummaryText:
    """The emergency summary of `messages`, the part a cut drops (a last exchange is the window)."""
    transcript = anthropic(*messages, user("Thanks, that is all."), assistant("You're welcome."))
    end = len(transcript.messages) - 2
    return summary_text(transcript, Cut(end, len(transcript.messages), 0, 0, False, end), None, CompactOptions())


def checkpoint_of(*messages: dict) -> str:
    return summary_of(*messages).body


def goal(summary: str) -> str:
    return summary.split("## Goal\n", 1)[1].split("\n\n", 1)[0]


WARM_UP = "Look around this repo and tell me how pricing works."
REQUEST = "Add a discount code feature to checkout, with tests, and commit it."


def test_the_goal_is_the_request_the_work_was_for_not_a_warm_up():
    summary = summary_of(
        user(WARM_UP), assistant([text("Reading."), bash("t1", "cat pricing.py")]),
        user([output("t1", "def price(): ...")]), assistant("Pricing is in pricing.py."),
        user(REQUEST), *[m for n in range(2, 6) for m in (
            assistant([text(f"Step {n}."), bash(f"t{n}", f"edit {n}")]), user([output(f"t{n}", "ok")]))],
        assistant("Done: the discount code works."))
    assert goal(summary.body) == REQUEST
    assert summary.words == (WARM_UP,)  # the warm-up stays, in the user's words


def test_the_goal_is_the_request_a_task_list_was_made_from():
    plan = tool_use("p1", name="TodoWrite", input={"todos": [{"content": "Add the code", "status": "pending"}]})
    summary = checkpoint_of(
        user(REQUEST), assistant([text("Planning."), plan]), user([output("p1", "Todos updated")]),
        user("Also, what does the tax module do?"), *[m for n in range(2, 8) for m in (
            assistant([text(f"Looking {n}."), bash(f"t{n}", f"cat tax{n}.py")]), user([output(f"t{n}", "tax")]))],
        assistant("That is the tax module."))
    assert goal(summary) == REQUEST


def test_a_short_reply_is_not_the_goal_however_much_work_follows_it():
    summary = checkpoint_of(
        user(REQUEST), assistant("Shall I start?"), user("yes"),
        *[m for n in range(1, 6) for m in (assistant([text(f"Step {n}."), bash(f"t{n}", f"edit {n}")]),
                                           user([output(f"t{n}", "ok")]))],
        assistant("Done."))
    assert goal(summary) == REQUEST


FAILURE = "FAILED tests/test_cart.py::test_set_quantity_zero_removes - AssertionError: 1 != 0"


def test_an_error_a_later_passing_run_fixed_is_shown_as_fixed():
    summary = checkpoint_of(
        user(REQUEST), assistant([text("Testing."), bash("t1", "pytest -q")]),
        user([output("t1", f"{FAILURE}\n1 failed, 10 passed", failed=True)]),
        assistant([text("Fixing."), tool_use("e1", name="Edit", input={"file_path": "cart.py", "old_string": "a",
                                                                         "new_string": "b"})]),
        user([output("e1", "The file cart.py has been updated.")]),
        assistant([text("Again."), bash("t2", "pytest -q")]), user([output("t2", "11 passed")]),
        assistant("All green."))
    errors = summary.split("### Errors seen (newest first)\n", 1)[1].split("\n###", 1)[0]
    assert f"- (fixed since) {FAILURE}" in errors.split("\n")
    assert "### Open problem" not in summary


def test_an_error_nothing_fixed_stays_open():
    summary = checkpoint_of(
        user(REQUEST), assistant([text("Testing."), bash("t1", "pytest -q")]),
        user([output("t1", f"{FAILURE}\n1 failed, 10 passed", failed=True)]),
        assistant("I'll fix that next."))
    assert f"- {FAILURE}" in summary.split("\n") and "(fixed since)" not in summary


def test_the_last_words_say_what_happened_after_them():
    summary = checkpoint_of(
        user(REQUEST), assistant([text("`test_set_quantity_zero_removes` fails; I'll fix that next."),
                                  bash("t1", "pytest -q")]),
        user([output("t1", "11 passed in 0.2s")]),
        assistant([bash("c1", "git commit -am 'Fix quantity zero'")]),
        user([output("c1", "[main b57ca46] Fix quantity zero\n 1 file changed")]))
    last = summary.split("### Last state (the assistant's last words before this checkpoint)\n", 1)[1].split("\n\n", 1)[0]
    assert "I'll fix that next." in last
    assert "- Since these words: `pytest -q`: 11 passed in 0.2s; committed `b57ca46` Fix quantity zero" in last.split("\n")


CLAUDE_SUMMARY = "\n".join([
    "Analysis:", "Let me analyze the conversation chronologically:", "",
    *[f"{n}. **Point {n}**:\n   - what happened at step {n} of the long session, in some detail" for n in range(1, 13)], "",
    "Summary:",
    "1. Primary Request and Intent:", "   The user asked to fix the PR feedback on branch `feature-x` and reply to every comment.",
    "2. Key Technical Concepts:", *[f"   - concept {n} the model found worth a line" for n in range(12)],
    "3. Files and Code Sections:", *[f"   - `src/file{n}.go`: a long excerpt of its code, line {n}" for n in range(20)],
    "4. Errors and fixes:", "   - `undefined: logging`: added the import",
    "6. All user messages:", '   - "1. lint failing 2. update from main 3. new comments"', '   - "fix them all"',
    "7. Pending Tasks:", "   - Reply to comment 2738999764",
    "8. Current Work:", "   Fixing the last lint error before the commit.",
    "9. Optional Next Step:", "   Commit the fix and reply to comment 2738999764.",
])


def facts_with(**work) -> Facts:
    return Facts(None, "Committed.", (), (), (), Counter(), 4, work=WorkState(**work))


def test_an_earlier_summary_a_model_wrote_is_kept_by_its_sections_its_request_and_user_messages_first():
    body = checkpoint(facts_with(), 700, 0.25, previous=CLAUDE_SUMMARY)
    assert "1. Primary Request and Intent:\n   The user asked to fix the PR feedback" in body
    assert '6. All user messages:\n   - "1. lint failing 2. update from main 3. new comments"\n   - "fix them all"' in body
    assert "9. Optional Next Step:\n   Commit the fix" in body  # nothing closed a step since
    left_out = next(line for line in body.split("\n") if line.startswith("[… of the earlier summary, not kept: "))
    assert "Analysis" in left_out and "3. Files and Code Sections" in left_out
    # A section is there whole or not at all.
    assert ("concept 11" in body) == ("concept 0 " in body) and ("src/file19.go" in body) == ("src/file0.go" in body)


def test_an_earlier_next_step_pending_tasks_and_current_work_a_later_commit_closed_are_dropped():
    """Found using compact as a user: an earlier summary's pending task and current work stayed
    in the checkpoint after the old part had closed, committed and pushed it."""
    body = checkpoint(facts_with(commits=(Commit("Fix the PR feedback", "b57ca46"),)), 700, 0.25, previous=CLAUDE_SUMMARY)
    for title in ("9. Optional Next Step", "7. Pending Tasks", "8. Current Work"):
        assert title not in body.replace(f"{title} (", "")  # named among what was left out
    assert "Commit the fix and reply" not in body and "Reply to comment" not in body and "Fixing the last lint" not in body
    assert "1. Primary Request and Intent:" in body


def test_with_a_model_the_trail_lists_every_file_modified_command_and_error_as_exact_strings():
    facts = Facts(None, None, ((3, "AssertionError: 1 != 0"),), ((2, "pytest -q tests/test_cart.py"),),
                  ((1, "src/cart.py"), (2, "README.md")), Counter({"Edit": 1}), 4,
                  work=WorkState(modified=("src/cart.py",)))
    prose = ("I edited src/cart.py so that a zero quantity removes the item; pytest -q tests/test_cart.py "
             "failed with AssertionError: 1 != 0 before the fix. README.md explains the cart.")
    trail = artifact_trail(facts, 2000, 0.25, prose)
    assert "### Files modified (newest first)\n- `src/cart.py`" in trail
    assert "- `pytest -q tests/test_cart.py`" in trail and "- AssertionError: 1 != 0" in trail
    assert "README.md" not in trail  # a file only read, which the summary names


def test_the_agents_shapes_of_a_commit_a_patch_and_a_test_run_are_read():
    from transcompact.ops.compaction.work_state import check_key, git_commit, modified_paths

    # Gemini CLI's shell output puts `Output: ` before git's answer.
    assert git_commit('git commit -m "x"', "Output: [main a149dfb] x\n", False) == Commit("x", "a149dfb")
    # Codex runs a patch through the shell: a here-document in `cmd` or `command`; a move names the new file too.
    patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: calc.py\n*** Move to: maths.py\n@@\n-a\n+b\n*** End Patch\nPATCH\n"
    assert modified_paths("exec_command", {"cmd": patch}) == modified_paths("shell_command", {"command": patch}) == \
        ["calc.py", "maths.py"]
    # The same check, however its runner is started.
    assert check_key("python -m pytest -q") == check_key("pytest -q") == check_key("uv run pytest -q") == "pytest -q"


def test_a_run_of_the_same_command_from_its_directory_fixes_what_it_printed():
    summary = checkpoint_of(
        user(REQUEST), assistant([text("Checking."), bash("t1", "python check.py 2>&1")]),
        user([output("t1", "sqlite3.IntegrityError: FOREIGN KEY constraint failed")]),
        assistant([text("Again, elsewhere."), bash("t2", "python -c 'import check' 2>&1")]),
        user([output("t2", "sqlite3.IntegrityError: FOREIGN KEY constraint failed")]),
        assistant([text("Fixed; again."), bash("t3", "cd /testbed && python check.py 2>&1")]),
        user([output("t3", "all saved")]), assistant("Saved."))
    errors = summary.split("### Errors seen (newest first)\n", 1)[1].split("\n###", 1)[0].split("\n")
    # The same error printed by another command before the fix is fixed as well: listed once, fixed.
    assert errors == ["- (fixed since) sqlite3.IntegrityError: FOREIGN KEY constraint failed"]


def test_claude_codes_instruction_to_go_on_with_the_last_task_is_not_carried():
    """Found using compact as a user: a later compaction kept "Continue with the last task that you
    were asked to work on." in the middle of its checkpoint, after the task had changed."""
    from transcompact.formats.claude_code import FORMAT
    from transcompact.formats.claude_code.rewrites import COMPACT_PREAMBLE

    text = (COMPACT_PREAMBLE + "Summary:\n1. Primary Request and Intent:\n   Fix the tests.\n\nIf you need specific details from "
            "before compaction, read the full transcript at: /home/ada/.claude/projects/x.jsonl\nPlease continue the conversation "
            "from where we left it off without asking the user any further questions. Continue with the last task that you were "
            "asked to work on.")
    assert FORMAT.earlier_summary_body(text) == ("Summary:\n1. Primary Request and Intent:\n   Fix the tests.\n\nIf you need "
                                                 "specific details from before compaction, read the full transcript at: "
                                                 "/home/ada/.claude/projects/x.jsonl")
