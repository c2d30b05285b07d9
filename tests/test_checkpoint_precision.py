"""What the emergency checkpoint says must not be stale: no statement that a later event of the
part it summarizes contradicts (tests/retention.py `contradictions`, the probe):
- an error listed as open (the open problem, or an error listed without saying it was fixed) that
  a later passing run of the same command fixed;
- a failing run stated as the last run of its command when a later run of it passed;
- a next step that a later commit or a later task list (the step done) closed;
- last words quoted as where the work stands ("X fails, I'll fix that next") when a test run after
  them passed, with nothing beside them saying so.

First the probe itself, on checkpoints written by hand; then compact's checkpoint of small
Claude Code sessions built by hand (tests/builders.py), each a fix cycle or a step done; then of
the sessions the real agents recorded (tests/recorded/), compacted so that what
follows their first commit is kept: none may say anything stale.
"""

from __future__ import annotations

import pytest

from transcompact.counting.counter import TokenCounter
from transcompact.ops.compaction.compact import CompactOptions, compact
from transcompact.ops.compaction.summarize import SummaryOptions

from .builders import claude_code, log_assistant, log_user, text, tool_result, tool_use
from .retention import (
    Conversation,
    checkpoint_of,
    compacted,
    contradictions,
    events,
    recorded_sessions,
    window_after_first_commit,
)

PYTEST_FAILS = (
    "Exit code 1\nF.                                                                       [100%]\n"
    "=================================== FAILURES ===================================\n"
    "___________________________________ test_add ___________________________________\n\n"
    "    def test_add():\n>       assert add(2, 3) == 5\nE       assert -1 == 5\nE        +  where -1 = add(2, 3)\n\n"
    "test_calc.py:5: AssertionError\n=========================== short test summary info ============================\n"
    "FAILED test_calc.py::test_add - assert -1 == 5\n1 failed, 1 passed in 0.31s")
PYTEST_PASSES = "..                                                                       [100%]\n2 passed in 0.19s"
FIX_NEXT = "test_add fails: add() returns a - b instead of a + b. I'll fix that next."
COMMITTED = "[main a149dfb] Fix add() to return the sum\n 1 file changed, 1 insertion(+), 1 deletion(-)"
COMMIT = 'git add calc.py && git commit -m "Fix add() to return the sum"'
TASKS = ("Fix add() in calc.py", "Commit the fix", "Add subtract() with a test and commit it")
USAGE = "".join(f"{n}. `calc.add({n}, {n + 1})` gives {2 * n + 1}: the helpers take two numbers and return one.\n" for n in range(1, 80))
FAILED = "FAILED test_calc.py::test_add - assert -1 == 5"


def todos(*statuses: str) -> dict:
    return {"todos": [{"content": task, "status": status, "activeForm": task} for task, status in zip(TASKS, statuses)]}


class Session:
    """A Claude Code session built a step at a time: the user's request, the agent's calls (each
    answered in the next line) and words; then `compacted` adds a last turn and compacts the log
    so that exactly that turn is kept."""

    def __init__(self, request: str = "test_calc.py fails. Fix calc.py, commit the fix, then add subtract().") -> None:
        self.entries = [log_user(request)]
        self.calls = 0
        self.call("Read", "\n".join(f"{n}\t{line}" for n, line in enumerate(USAGE.splitlines(), 1)), file_path="/work/docs/usage.md")

    def call(self, name: str, output: str, *, error: bool = False, **arguments) -> Session:
        self.calls += 1
        call_id = f"toolu_{self.calls:02d}"
        self.entries.append(log_assistant([tool_use(call_id, name=name, input=arguments)], message_id=f"msg_{self.calls:02d}"))
        self.entries.append(log_user([{**tool_result(call_id), "content": output, **({"is_error": True} if error else {})}]))
        return self

    def say(self, words: str) -> Session:
        self.entries.append(log_assistant([text(words)], message_id=f"msg_say_{len(self.entries)}"))
        return self

    def run(self, command: str, output: str, *, error: bool = False) -> Session:
        return self.call("Bash", output, error=error, command=command, description="Run it")

    def fix_cycle(self, failing: str = "python -m pytest -q", passing: str = "python -m pytest -q") -> Session:
        """The tests fail, the agent says it will fix that next, edits, the tests pass."""
        self.run(failing, PYTEST_FAILS, error=True).say(FIX_NEXT)
        self.call("Edit", "The file /work/calc.py has been updated successfully.", file_path="/work/calc.py",
                  old_string="    return a - b", new_string="    return a + b")
        return self.run(passing, PYTEST_PASSES)

    def compacted(self) -> tuple[list, str]:
        """(the messages compact dropped, its checkpoint): the agent reads the test file, then its
        long answer, which alone is kept (the cut falls inside the turn, after that read)."""
        self.call("Read", "1\tfrom calc import add, mul\n", file_path="/work/test_calc.py")
        self.entries.append(log_assistant([text("Adding subtract(). " + "Its test goes beside test_add. " * 60)], message_id="msg_last"))
        transcript = claude_code(*self.entries)
        keep = TokenCounter(transcript, CompactOptions(force=True, emergency=True).counting).per_message(transcript)[-1]
        out, report = compact(transcript, CompactOptions(force=True, emergency=True, summary=SummaryOptions(keep_recent_tokens=keep)))
        assert report.cut == len(transcript.messages) - 1, "the last answer alone is kept"
        return list(transcript.messages[:report.cut]), checkpoint_of(out)


def kinds(found) -> list[str]:
    return [contradiction.kind for contradiction in found]


# --- the probe, on checkpoints written by hand ----------------------------------------------------


@pytest.fixture(scope="module")
def fixed_and_committed() -> list:
    """The messages of a fix cycle then a commit, the agent's list not updated since (its step "Commit the fix" in progress)."""
    session = Session().call("TodoWrite", "Todos have been modified successfully.", **todos("in_progress", "pending", "pending"))
    session.run("pytest -q", PYTEST_FAILS, error=True).say(FIX_NEXT)
    session.call("Edit", "The file /work/calc.py has been updated successfully.", file_path="/work/calc.py",
                 old_string="    return a - b", new_string="    return a + b")
    session.run("python -m pytest -q", PYTEST_PASSES)
    session.call("TodoWrite", "Todos have been modified successfully.", **todos("completed", "in_progress", "pending"))
    session.run(COMMIT, COMMITTED)
    return list(claude_code(*session.entries).messages)


@pytest.mark.parametrize(("checkpoint", "kind"), [
    ("### Open problem (nothing since succeeded at it)\n- `pytest -q` failed: " + FAILED, "open problem"),
    ("### Errors seen (newest first)\n- " + FAILED, "error not said fixed"),
    ("### Last test and build runs (newest first)\n- `pytest -q` (failed): 1 failed, 1 passed in 0.31s", "last run"),
    ("### Next step\n- Commit the fix", "next step"),
    ("### Last state (the assistant's last words before this checkpoint)\n> " + FIX_NEXT, "last state"),
], ids=["open problem", "error", "last run", "next step", "last state"])
def test_the_probe_finds_each_kind_of_stale_statement(fixed_and_committed, checkpoint, kind):
    assert kinds(contradictions(fixed_and_committed, checkpoint)) == [kind]


@pytest.mark.parametrize("checkpoint", [
    "### Errors seen (newest first)\n- (fixed since) " + FAILED,
    "### Last test and build runs (newest first)\n- `python -m pytest -q`: 2 passed in 0.19s",
    "### Next step\n- Add subtract() with a test and commit it",
    "### Last state (the assistant's last words before this checkpoint)\n> " + FIX_NEXT
    + "\n- Since these words: `python -m pytest -q`: 2 passed in 0.19s",
    "### Commits\n- `a149dfb` Fix add() to return the sum\n### Tasks (the agent's last list)\n- [x] Fix add() in calc.py",
], ids=["error said fixed", "the passing run", "the step after", "last state updated", "what is done"])
def test_the_probe_takes_what_is_still_true_as_it_is(fixed_and_committed, checkpoint):
    assert contradictions(fixed_and_committed, checkpoint) == []


def test_the_probe_leaves_a_failure_nothing_fixed_open():
    still_failing = list(claude_code(*Session().run("python -m pytest -q", PYTEST_FAILS, error=True).say(FIX_NEXT).entries).messages)
    checkpoint = ("### Open problem (nothing since succeeded at it)\n- `python -m pytest -q` failed: " + FAILED +
                  "\n### Errors seen (newest first)\n- " + FAILED + "\n### Last state\n> " + FIX_NEXT)
    assert contradictions(still_failing, checkpoint) == []


def test_the_probe_reads_each_agent_s_runs_and_commits():
    """Every recorded session's first test run failed, a later one passed, and it committed."""
    for path in recorded_sessions():
        happened = events(Conversation(path).load().messages)
        runs = [e for e in happened if e.kind == "run" and "pytest" in e.command]
        assert runs[0].failed and not runs[-1].failed, path.parent.name
        assert [e.subject for e in happened if e.kind == "commit"][:1] == ["Fix add() to return the sum"], path.parent.name


# --- compact's checkpoint of sessions built by hand ----------------------------------------------


def test_a_fix_cycle_leaves_no_open_problem():
    dropped, checkpoint = Session().fix_cycle().compacted()
    assert "open problem" not in kinds(contradictions(dropped, checkpoint)), checkpoint


def test_an_error_a_later_run_fixed_is_not_listed_as_open():
    dropped, checkpoint = Session().fix_cycle().compacted()
    assert contradictions(dropped, checkpoint) == [], checkpoint


def test_a_passing_run_closes_the_open_problem_however_the_runner_is_spelled():
    dropped, checkpoint = Session().fix_cycle(failing="pytest -q").compacted()
    assert "open problem" not in kinds(contradictions(dropped, checkpoint)), checkpoint


def test_a_failing_run_is_not_a_last_run_once_a_later_run_passed():
    dropped, checkpoint = Session().fix_cycle(failing="pytest -q").compacted()
    assert "last run" not in kinds(contradictions(dropped, checkpoint)), checkpoint


def test_the_last_run_of_a_command_is_its_newest():
    dropped, checkpoint = Session().fix_cycle().compacted()
    assert "last run" not in kinds(contradictions(dropped, checkpoint)), checkpoint
    assert "`python -m pytest -q`: 2 passed" in checkpoint


def test_the_next_step_is_not_a_step_a_later_commit_closed():
    session = Session().call("TodoWrite", "Todos have been modified successfully.", **todos("completed", "in_progress", "pending"))
    dropped, checkpoint = session.run(COMMIT, COMMITTED).compacted()
    assert "next step" not in kinds(contradictions(dropped, checkpoint)), checkpoint


def test_the_next_step_follows_the_agent_s_list_as_it_marks_steps_done():
    session = Session().call("TodoWrite", "Todos have been modified successfully.", **todos("completed", "in_progress", "pending"))
    session.run(COMMIT, COMMITTED).call("TodoWrite", "Todos have been modified successfully.", **todos("completed", "completed", "pending"))
    dropped, checkpoint = session.compacted()
    assert contradictions(dropped, checkpoint) == [], checkpoint
    assert "### Next step\n- Add subtract() with a test and commit it" in checkpoint


def test_the_last_state_is_not_a_failure_a_later_test_run_fixed():
    dropped, checkpoint = Session().fix_cycle().compacted()
    assert "last state" not in kinds(contradictions(dropped, checkpoint)), checkpoint


def test_a_failure_nothing_fixed_stays_the_open_problem():
    dropped, checkpoint = Session().run("python -m pytest -q", PYTEST_FAILS, error=True).say(FIX_NEXT).compacted()
    assert contradictions(dropped, checkpoint) == [], checkpoint
    assert "### Open problem (nothing since succeeded at it)\n- `python -m pytest -q` failed: " + FAILED in checkpoint


# --- compact's checkpoint of the sessions the agents recorded ------------------------------------

KINDS = ("open problem", "error not said fixed", "last run", "next step", "last state")
AGENTS = [path.parent.name for path in recorded_sessions()]


@pytest.fixture(scope="module")
def recorded_checkpoints() -> dict[str, tuple[list, str]]:
    """Each recorded session compacted so that what follows its first commit is kept: (dropped, checkpoint)."""
    found = {}
    for path in recorded_sessions():
        conversation = Conversation(path)
        transcript = conversation.load()
        done = compacted(conversation, window_after_first_commit(transcript), transcript, prune_may_win=False)
        assert done is not None, path
        _, out, dropped, _, _ = done
        happened = events(dropped)
        assert any(e.kind == "commit" for e in happened) and any(e.kind == "run" and e.failed for e in happened), path
        found[path.parent.name] = (dropped, checkpoint_of(out))
    return found


@pytest.mark.parametrize(("agent", "kind"), [
    pytest.param(agent, kind, id=f"{agent}-{kind}")
    for agent in AGENTS for kind in KINDS])
def test_a_recorded_session_s_checkpoint_says_nothing_stale(recorded_checkpoints, agent, kind):
    dropped, checkpoint = recorded_checkpoints[agent]
    assert kind not in kinds(contradictions(dropped, checkpoint)), checkpoint


def test_every_agent_recorded_a_session():
    assert sorted(AGENTS) == ["claude-code", "codex", "gemini", "pi"]
