"""A flag that would do nothing with the others given is refused (exit 2, one line saying
why), the same way for every such pair; a TRANSCOMPACT_* variable set for every run is not."""

from __future__ import annotations

import pytest

from .conftest import FIXTURES

TRANSCRIPT = str(FIXTURES / "anthropic/long-session.json")

IDLE = {
    "poll-interval-without-batch-api": (["compact", "--poll-interval", "5"], "--poll-interval has no effect without --batch-api"),
    "resume-without-batch-api": (["compact", "--resume", "state.json"], "--resume has no effect without --batch-api"),
    "batch-api-with-emergency": (["compact", "--batch-api", "--emergency"], "--batch-api has no effect with --emergency"),
    "model-with-emergency": (["compact", "--emergency", "--model", "m"], "--model has no effect with --emergency"),
    "instructions-with-emergency": (["compact", "--emergency", "--instructions", "focus"],
                                    "--instructions has no effect with --emergency"),
    "base-url-with-emergency": (["compact", "--emergency", "--base-url", "http://127.0.0.1:9"],
                                "--base-url has no effect with --emergency"),
    # (found using the tool as a user: the summary given was ignored in silence)
    "previous-summary-with-emergency": (["compact", "--emergency", "--previous-summary", TRANSCRIPT],
                                        "--previous-summary has no effect with --emergency"),
    "head-with-by-kind": (["prune", "--by-kind", "--head", "10"], "--head has no effect with --by-kind"),
    "cap-without-by-kind": (["prune", "--result-token-cap", "5"], "--result-token-cap has no effect without --by-kind"),
    "kind-without-by-kind": (["compact", "--kind", "Bash=head-tail"], "--kind has no effect without --by-kind"),
    "keep-last-with-keep-tool-uses": (["prune", "--keep-tool-uses", "2", "--keep-last", "3"],
                                      "--keep-last has no effect with --keep-tool-uses"),
    "no-archive-without-in-place": (["slim", "--no-archive"], "--no-archive has no effect without --in-place"),
}


@pytest.mark.parametrize("args, said", IDLE.values(), ids=IDLE.keys())
def test_a_flag_that_does_nothing_is_refused(transcompact, args, said):
    result = transcompact(*args, TRANSCRIPT)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0].startswith(f"transcompact: error: {said}: ")
    assert result.stdout == ""


def test_a_variable_set_for_every_run_is_not_refused(transcompact, monkeypatch):
    monkeypatch.setenv("TRANSCOMPACT_MODEL", "m")
    monkeypatch.setenv("TRANSCOMPACT_POLL_INTERVAL", "5")
    result = transcompact("compact", "--emergency", "-q", TRANSCRIPT)
    assert result.exit_code == 0, result.stderr
