# transcompact — `make test` and `make run` work on a fresh machine with only Python 3.10+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-fast lint run bench snapshots docs agents agents-latest clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

## Run the whole test suite, a test process per core (corpus tests run when ../shared/corpus is present).
test: $(STAMP)
	$(BIN)/pytest -q -n auto

## The inner loop: every test but the slow ones (fuzz, equivalence, growth, the agents' resume, the largest corpus files).
test-fast: $(STAMP)
	$(BIN)/pytest -q -n auto -m "not slow"

## Lint, types, and the package's layers (import-linter's contracts in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check cli tests bench docs
	$(BIN)/mypy
	$(BIN)/lint-imports

## The main job on a shipped example, with no API key and no network: compact falls back to the
## emergency mode (no model call), then the output is checked; then a broken Claude Code log is repaired.
run: $(STAMP)
	$(BIN)/transcompact estimate --top 3 fixtures/anthropic/long-session.json
	env -u ANTHROPIC_API_KEY $(BIN)/transcompact compact --force --keep-recent-tokens 3000 \
		--report $(VENV)/report.json fixtures/anthropic/long-session.json > $(VENV)/compacted.json
	cat $(VENV)/report.json
	$(BIN)/transcompact check $(VENV)/compacted.json && echo "the compacted transcript passes check"
	$(BIN)/transcompact repair fixtures/claude-code/broken-session.jsonl > $(VENV)/repaired.jsonl
	$(BIN)/transcompact check $(VENV)/repaired.jsonl && echo "the repaired log passes check"

## Speed and memory as ratios against baselines in the same run, and accuracy on the corpus (not a test).
bench: $(STAMP)
	$(BIN)/python bench/run.py

## The real agents (Claude Code, Codex, Gemini CLI, pi; npm, pinned, into .venv/agents/) that the
## tests/test_*_resume.py tests resume our compacted logs with; those tests skip without them (under
## CI=true they install them themselves). CLAUDE_CODE_VERSION=…, CODEX_VERSION=… pick other releases.
agents: $(STAMP)
	$(BIN)/python -m tests.npm_agent

## The newest release of each agent (npm's `latest`), installed beside the pinned ones, judges too:
## the resume tests run against them (not part of `make test` nor CI). It prints the versions it ran.
RESUME_TESTS := tests/test_claude_resume.py tests/test_codex_resume.py tests/test_gemini_resume.py tests/test_pi_resume.py
agents-latest: $(STAMP)
	$(BIN)/python -m tests.npm_agent --latest > $(VENV)/agents-latest.env
	env $$(cat $(VENV)/agents-latest.env) $(BIN)/pytest -q -n auto $(RESUME_TESTS); status=$$?; \
		echo "agents-latest ran the resume tests against: $$(cat $(VENV)/agents-latest.env)"; exit $$status

## Rewrite the parts of README.md and docs/*.md that come from the code (--help texts, the command
## list, the check rules, the model table); tests/test_docs.py fails when they drift.
docs: $(STAMP)
	$(BIN)/python docs/generate.py

## Update the syrupy snapshots after a deliberate change of output.
snapshots: $(STAMP)
	$(BIN)/pytest -q --snapshot-update

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
