"""The formats transcompact reads, one registration each, in the order detection tries them (most
specific first): all that is said of a format without importing its reader.

Everything that lists the formats is made from `FORMATS`: what --format accepts (`FORMAT_NAMES`,
taken as the command line's flags are parsed, so that this module imports nothing), the registry
of adapters (formats/__init__.py: `MODULES`, `TRIMMED`, `OWN_SUMMARIES`), the tests' lists of the
shipped fixtures (tests/conftest.py) and the two tables of the documentation (the README's and
docs/formats.md's, written by `make docs`: docs/generate.py). A new format is one more
`Registration` here; its adapter (its module's `FORMAT`) says the rest, and the registry checks the
two agree as it imports the adapter.
"""

from __future__ import annotations

from typing import NamedTuple

from .errors import option


class Registration(NamedTuple):
    """One format as it is registered."""

    name: str  # what --format takes and `Transcript.format` says; its fixtures are under fixtures/<name>/
    module: str  # the module that declares its adapter (`FORMAT`), relative to `transcompact.formats`
    # What the documentation's tables say of it, in Markdown; a setting of ours is named as a message
    # names one (`core.errors.option`), which the tables spell as the command line's flag.
    what: str  # docs/formats.md: what it is
    detected_by: str  # docs/formats.md: what detection takes for it
    reads: str  # the README: what transcompact reads of it
    compaction: str = ""  # the README: a compaction as the format records it (a format transcompact writes)
    writes: bool = True  # False: transcompact reads it, and a command that would write it stops (`Format.writes`)
    # Its adapter has a trim (`Format.trim`, `lazy_trim`) or a line view (`line_view`), which
    # parsing runs before the format is known: only such formats are imported to read a file of
    # JSON Lines.
    trims: bool = False
    # Its agent writes a summary of what came before into the log (`Format.is_earlier_summary`),
    # which compact looks for in a message alone, before the format is known.
    own_summaries: bool = False
    # The first key of the documents its agent writes, where its adapter reads one quickly
    # (`Format.read_quickly`): a document read for counting that begins with it is offered to it.
    document_first_key: str = ""


FORMATS = (
    Registration(
        "claude-code", ".claude_code", trims=True, own_summaries=True,
        what="Claude Code session log (`~/.claude/projects/*/<session>.jsonl`)",
        detected_by="lines with `uuid`, `parentUuid`, `sessionId`",
        reads="Claude Code session logs (`.jsonl`)",
        compaction="a `compact_boundary` line and a summary line, where Claude Code resumes the session"),
    Registration(
        "codex", ".codex", trims=True,
        what="Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`)",
        detected_by='lines that are all `{"timestamp", "type", "payload"}`, with `session_meta`, `response_item`, '
                    "`compacted`, `turn_context` or `event_msg` types",
        reads="Codex CLI rollouts",
        compaction="a `compacted` line with the `replacement_history`, and a `context_compacted` event"),
    Registration(
        "gemini", ".gemini", trims=True, document_first_key="sessionId",
        what="Gemini CLI chat (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, legacy `.json`)",
        detected_by="a first record (or the whole file) with string `sessionId` and `projectHash` (a whole file needs "
                    "only `sessionId` when every message is a record with `id` and `type`), then records with `id`, "
                    "`$set` or `$rewindTo`",
        reads="Gemini CLI chats (`.jsonl`, legacy `.json`)",
        compaction="a `$set` of the messages (the legacy `.json`: its `messages` rewritten)"),
    Registration(
        "pi", ".pi", trims=True,
        what="pi coding-agent session (`~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`, versions 1–3)",
        detected_by='a first line `{"type": "session", "id": "…"}`, then objects that all have a `type`',
        reads="pi sessions, versions 1–3",
        compaction="a `compaction` entry (`summary`, `firstKeptEntryId`, read and modified files)"),
    Registration(
        "openhands", ".openhands",
        what="OpenHands conversation (`<persistence_dir>/<conversation_id>/`: `base_state.json` and "
             "`events/event-NNNNN-<id>.json`), or its events as JSON Lines",
        detected_by="a directory holding `base_state.json` and `events/`; JSON Lines whose lines are events (string "
                    "`kind`, `id`, `source`), after an optional `base_state` line",
        reads="OpenHands V1 conversations (a directory, or its events as JSON Lines)",
        compaction="the next event file, a `Condensation` (forgotten ids and the summary)"),
    Registration(
        "openhands-v0", ".openhands.v0", writes=False,
        what="legacy OpenHands (V0) event list, read only: a JSON array of events (`tests/runtime/trajs/*.json`), or an "
             "evaluation output holding one under `history` (`output.jsonl`: one run a line; a resolver's output, one "
             "issue a line, its history's entries that are not events left out)",
        detected_by="a list whose items all have a string `source` and an `action` or `observation` type (and no "
                    "`kind`), or such a list under `history`; in a file of several runs, the one "
                    f"`{option('messages_path', 'N.history')}` names (a file of one run reads as it is, and `0.history` "
                    "names it too)",
        reads=f"legacy OpenHands (V0) event lists and evaluation outputs (one run: `{option('messages_path', 'N.history')}`)"),
    Registration(
        "copilot", ".copilot", writes=False,
        what="GitHub Copilot CLI session (`~/.copilot/session-state/<id>/events.jsonl`), read only",
        detected_by="lines that are all events: a string `type` and `id`, a `data` object, a `parentId`",
        reads="GitHub Copilot CLI sessions"),
    Registration(
        "jsonl", ".jsonl",
        what="JSON Lines, one message object per line, in either dialect",
        detected_by="every line is an object with a `role`",
        reads="one message per line, either dialect",
        compaction="a summary message and its answer before the recent window, one message per line"),
    Registration(
        "responses", ".responses",
        what="OpenAI Responses API `input`: a request body or a bare array of items",
        detected_by="a body with an `input` list (and no `messages`), else an array holding a typed item "
                    '(`function_call`, `reasoning`, `compaction`, `"type": "message"`, …) or a Responses part '
                    "(`input_text`, `output_text`, …)",
        reads="OpenAI Responses `input` (a body or a bare list)",
        compaction="a summary message after the newest `compaction` item, which is kept as it is"),
    Registration(
        "anthropic", ".anthropic",
        what="Anthropic Messages request body (`system`, `tools`, `messages`) or a bare array of messages",
        detected_by="request fields (`system`, `thinking`, tools with `input_schema`, …), else Anthropic block types "
                    "(`tool_use`, `tool_result`, `thinking`, …)",
        reads="Anthropic Messages request bodies, bare message lists, trajectories",
        compaction="a summary message and its answer before the recent window"),
    Registration(
        "openai", ".openai",
        what="OpenAI Chat Completions request body or bare array",
        detected_by="request fields (`response_format`, tools with `function`, …), else `tool_calls`, roles `tool` / "
                    "`developer`, OpenAI part types",
        reads="OpenAI Chat Completions request bodies, bare message lists, trajectories",
        compaction="a summary message and its answer before the recent window"),
)

REGISTERED = {registration.name: registration for registration in FORMATS}
if len(REGISTERED) != len(FORMATS):
    raise ImportError("a format is registered twice: each name once")
FORMAT_NAMES = tuple(REGISTERED)  # what --format accepts, in the order detection tries them
