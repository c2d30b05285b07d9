# transcompact — `make test` and `make run` work on a fresh machine with only Python 3.10+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test run bench snapshots clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

## Run the whole test suite (corpus tests run when ../shared/corpus is present).
test: $(STAMP)
	$(BIN)/pytest -q

## The main job on a shipped example, with no API key and no network: estimate, check, repair.
run: $(STAMP)
	$(BIN)/transcompact estimate fixtures/claude-code/broken-session.jsonl
	$(BIN)/transcompact check fixtures/claude-code/broken-session.jsonl || true
	$(BIN)/transcompact repair fixtures/claude-code/broken-session.jsonl > $(VENV)/repaired.jsonl
	$(BIN)/transcompact check $(VENV)/repaired.jsonl && echo "the repaired log passes check"

## Speed and memory as ratios against baselines in the same run, and accuracy on the corpus (not a test).
bench: $(STAMP)
	$(BIN)/python bench/run.py

## Update the syrupy snapshots after a deliberate change of output.
snapshots: $(STAMP)
	$(BIN)/pytest -q --snapshot-update

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
