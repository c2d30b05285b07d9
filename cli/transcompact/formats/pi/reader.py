"""pi coding-agent sessions (`~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl`).

A session header line (`type: session`, `version` 3; 1 and 2 are migrated on read as pi does),
then entries that form a tree by `id` / `parentId` (version 1: a list, each entry the child of
the one before; pi threads entries only in that migration, so in a later version an entry
without an `id` is on no path unless it is the leaf, and one without a `parentId` is a root).
The messages of the model are those pi sends (`buildSessionContext` then
`convertToLlm`, upstream `session-manager.ts` and `messages.ts`): the path from the leaf (the
last entry) to the root; after the newest `compaction` on it, its summary, the entries from
`firstKeptEntryId` up to it (an older compaction among them is no message), then the entries
after it. `bashExecution`, `custom` and branch summaries are sent as user text; an assistant
message that ended in `error` or `aborted` is not sent (pi-ai `transformMessages`), and neither
is a `bashExecution` excluded from the context. A call with no result reads as it is (check's
A2), where pi sends it with an error result "No result provided" (which a count counts:
`blocks_as_sent`). Every line is kept verbatim and in place; a write re-serialises only the
entries whose content changed, drops an entry left with no message (its children hang from its
parent) and threads new entries into the path.

Dialect: Anthropic. pi's blocks are Anthropic's (thinking with its signature, a redacted one
holding the API's `data` as its signature with `redacted: true`, which pi-ai sends as
`redacted_thinking`; a call's `arguments` an object, images as base64 with a media type), and
pi-ai sends the `toolResult` messages after an assistant message as one user turn of results
answering the calls of the assistant turn before it: check's A1/A2, which merge consecutive user
messages as the API does. So a `toolResult` reads as a user message holding one tool result.
Every block's pi JSON is kept in the origin for the write; thinking and image blocks keep none as
`raw`, where check and the Anthropic writer would take pi's field names for the API's.

A compaction's summary is read as transcompact's summary message (`[Previous conversation
summary]` + the summary, its split turn's part as the opening request's section, without the
file lists pi appends: compact writes them again from `details`), so that compacting again
merges it instead of quoting it; pi wraps it in its own `<summary>` text and sends the file
lists too, which a count counts as pi sends them (`blocks_as_sent`).

Recorded usage: an assistant message's `usage` (`input + cacheRead + cacheWrite` is its prompt;
calibrate.usage_tokens reads those names). An assistant message kept from before the active
compaction is read without it: it counted a context that no longer exists. pi judges the size of
its context by the last reply's `totalTokens` (compaction.ts `calculateContextTokens`: before it
sends, it compacts a context over its window less the reserve) and adds up the other parts as the
session's billed totals (its footer and stats, which fail on a reply without `usage`). So a write
that changes what a reply was sent keeps its `usage` and the billed parts, and restates its
`totalTokens` less what the change took out before it (more what it added), by pi's own estimate
of 4 characters a token: pi does not compact a pruned session it no longer needs to, nor miss one
it does, and the reader reads a `totalTokens` below the sum of the parts as the prompt, less the
output, so that `estimate` of the output says what the rewrite reported. Clearing the stale
usage, as the Gemini writer does, would break pi, and leave `estimate` no anchor for what the
log never shows (the system prompt and tools).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...core.errors import Location, ShapeError
from ...core.jsondata import BLANK, Parsed, Record, kind_of, read_again
from ...core.model import (
    ASSISTANT,
    USER,
    Block,
    Image,
    Message,
    MessageView,
    Opaque,
    RedactedThinking,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
)
from ...core.summary_text import OPENING_HEADING, SUMMARY_PREFIX, USER_WORDS_HEADING
from .._log import LineOrigin
from .parsing import NAME, ViewedEntry

UNSENT_STOP_REASONS = ("error", "aborted")  # a tuple: `in` compares, so a `stopReason` of any JSON type may be asked
REDACTED_THINKING = "[Reasoning redacted]"  # the text pi stores for a redacted_thinking block (pi-ai anthropic.ts)
# What pi wraps around the other summaries it sends (messages.ts).
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"
COMPACTION_SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
NO_RESULT = "No result provided"  # the error result pi-ai sends for a call left open (transform-messages.ts)
# How pi words the parts of its own compaction summary (compaction.ts `compact`): a split turn's
# part after the history's, then the files the summarized part read and changed (utils.ts
# `formatFileOperations`).
SPLIT_TURN = "\n\n---\n\n**Turn Context (split turn):**"
CHARS_PER_TOKEN = 4  # pi's own estimate (compaction.ts `estimateTokens`)
FILE_LISTS = re.compile(r"(?:\n\n<read-files>\n.*?\n</read-files>)?(?:\n\n<modified-files>\n.*?\n</modified-files>)?\Z",
                        re.S)


# A line as a rewrite writes it: its bytes and value (a `Record`), and the record it was read from (None: a new entry).


@dataclass(frozen=True)
class SessionSource:
    records: list[Record]
    version: int
    path: tuple[int, ...]  # entry records from the root to the leaf
    compaction: int | None  # the record of the newest compaction on the path
    message_records: frozenset[int]  # the records read into messages
    bom: bool = False


@dataclass(frozen=True, slots=True)
class _Origin(LineOrigin):
    record: int
    blocks: tuple[Block, ...]
    items: tuple[Any, ...]  # the pi JSON of each block
    string_content: bool  # `content` was a string
    writable: bool  # a message entry whose content a write can change (not a summary, a bashExecution …)
    released: bool = False  # its blocks and their JSON let go of (`rewritten`): a write reads the entry again

    def rewritten(self, raw: Any) -> tuple[Any, _Origin]:
        """What a message of an entry keeps of its reading once an operation gave it other blocks
        (`Message.with_blocks`): the entry it was read from, not the content it was read with nor
        a result's `details` (the tool's own record of the call), which a write reads again from
        the entry's line (`writer.rewritten_records`): a large session's pruned outputs are not
        held until it is written."""
        if not self.writable:
            return raw, self
        if isinstance(raw, dict) and "content" in raw:
            raw = {key: None if key == "content" else value for key, value in raw.items() if key != "details"}
        return raw, _Origin(self.record, (), (), self.string_content, True, released=True)

    @classmethod
    def unchanged(cls, message: Message) -> bool:
        origin = message.origin
        return isinstance(origin, cls) and not origin.released and message.blocks == origin.blocks


is_unchanged = _Origin.unchanged  # a message read from the log as it is


def record_of(message: Message) -> int | None:
    """The record a message was read from (None: an operation made it), an unread one's without
    reading it (its line is its entry's)."""
    if not message.is_read:
        assert message.line is not None  # (a message left unread is one of a session's entries)
        return message.line - 1
    origin = message.origin
    return origin.record if isinstance(origin, _Origin) else None


def _entry_type(value: Any) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    """A header first (`type: session` and a string `id`, what pi checks), then typed entries."""
    if parsed.records is None or messages_path is not None:
        return False
    values = parsed.values()
    return (bool(values) and _entry_type(values[0]) == "session" and isinstance(values[0].get("id"), str)
            and all(_entry_type(v) is not None for v in values[1:]))


def version_of(records: list[Record]) -> int:
    header = next((v for _, v in records if v is not BLANK), None)
    version = header.get("version") if isinstance(header, dict) else None
    return version if type(version) is int else 1


def entry_records(records: list[Record]) -> list[int]:
    """The records of the entries: every line but blank ones and the header."""
    return [i for i, (_, v) in enumerate(records) if v is not BLANK and _entry_type(v) != "session"]


def find_path(records: list[Record], version: int) -> tuple[int, ...]:
    """The entry records from the root to the leaf (the last entry), as pi walks them."""
    entries = entry_records(records)
    if not entries:
        return ()
    if version < 2:  # migrated as pi does: each entry the child of the one before
        return tuple(entries)
    by_id = {records[i][1]["id"]: i for i in entries if isinstance(records[i][1].get("id"), str)}
    path, seen = [], set()
    node: int | None = entries[-1]
    while node is not None and node not in seen:
        seen.add(node)
        path.append(node)
        parent = records[node][1].get("parentId")
        node = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    return tuple(path)


def first_kept(records: list[Record], path: tuple[int, ...], at: int, version: int) -> int | None:
    """The position in `path` of the compaction at `path[at]`'s first kept entry, None when it is not before it.

    Version 1 names it by `firstKeptEntryIndex`, an index into the file's non-blank lines (the header is 0),
    which pi's migration turns into the id; in a later version pi reads the id alone.
    """
    entry = records[path[at]][1]
    if isinstance(entry.get("firstKeptEntryId"), str):
        target = entry["firstKeptEntryId"]
        return next((k for k in range(at) if records[path[k]][1].get("id") == target), None)
    index = entry.get("firstKeptEntryIndex")
    if version < 2 and type(index) is int and index >= 0:
        lines = [i for i, (_, v) in enumerate(records) if v is not BLANK]
        if index < len(lines):
            return next((k for k in range(at) if path[k] == lines[index]), None)
    return None


def active_entries(records: list[Record], path: tuple[int, ...], version: int) -> tuple[list[int], int | None]:
    """(the entry records pi sends, in order, the summary's compaction first; that compaction's record).

    Only the newest compaction on the path is a summary: an older one inside the kept range sends
    nothing (`buildSessionContext` appends messages, custom messages and branch summaries only).
    """
    at = max((k for k, i in enumerate(path) if _entry_type(records[i][1]) == "compaction"), default=None)
    if at is None:
        return list(path), None
    start = first_kept(records, path, at, version)
    kept = [i for i in path[start:at] if _entry_type(records[i][1]) != "compaction"] if start is not None else []
    return [path[at], *kept, *path[at + 1:]], path[at]


# --- blocks ----------------------------------------------------------------------------------


def read_block(item: Any, where: str) -> Block:
    if not isinstance(item, dict):
        raise ShapeError(f"{where}: a content block must be an object, not {kind_of(item)}")
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        return Text(item["text"], raw=item)
    if kind == "thinking" and item.get("redacted") is True and isinstance(item.get("thinkingSignature"), str):
        # pi keeps the API's redacted_thinking `data` as the signature and sends it back as one.
        return RedactedThinking(item["thinkingSignature"])
    if kind == "thinking" and isinstance(item.get("thinking"), str):
        signature = item.get("thinkingSignature")
        return Thinking(item["thinking"], signature if isinstance(signature, str) else None)
    if kind == "toolCall" and isinstance(item.get("id"), str) and isinstance(item.get("name"), str):
        return ToolCall(item["id"], item["name"], item.get("arguments", {}), raw=item)
    if kind == "image" and isinstance(item.get("data"), str):
        media_type = item.get("mimeType")
        return Image(media_type if isinstance(media_type, str) else None, item["data"])
    return Opaque(kind if isinstance(kind, str) else None, raw=item)


def write_block(block: Block) -> Any:
    raw = block.raw if isinstance(block.raw, dict) else {}
    if type(block) is Text:
        return {**raw, "type": "text", "text": block.text}
    if type(block) is Thinking:
        out = {"type": "thinking", "thinking": block.thinking}
        return {**out, "thinkingSignature": block.signature} if block.signature else out
    if type(block) is RedactedThinking:
        return {"type": "thinking", "thinking": REDACTED_THINKING, "thinkingSignature": block.data, "redacted": True}
    if type(block) is ToolCall:
        return {**raw, "type": "toolCall", "id": block.id, "name": block.name, "arguments": block.input}
    if type(block) is Image and block.data is not None:
        return {"type": "image", "data": block.data, "mimeType": block.media_type or "image/png"}
    if type(block) is Opaque and block.raw is not None:
        return block.raw
    raise ShapeError(f"a pi session cannot hold a {type(block).__name__} block")


def _items(blocks, origin: _Origin | None) -> list[Any]:
    """The pi JSON of `blocks`: a block equal to one read keeps the JSON it was read from."""
    unused = list(zip(origin.blocks, origin.items)) if origin is not None else []
    out = []
    for block in blocks:
        found = next((k for k, (b, _) in enumerate(unused) if b == block), None)
        out.append(unused.pop(found)[1] if found is not None else write_block(block))
    return out


def _content(value: Any, where: str) -> tuple[tuple[Block, ...], tuple[Any, ...], bool]:
    """(blocks, their JSON, whether it was a string) of a pi `content`."""
    if isinstance(value, str):
        return (Text(value),), (value,), True
    if not isinstance(value, list):
        raise ShapeError(f"{where}: `content` must be a string or a list of blocks, not {kind_of(value)}")
    blocks = tuple(read_block(item, f"{where}: content/{k}") for k, item in enumerate(value))
    return blocks, tuple(value), False


# --- messages --------------------------------------------------------------------------------


def as_summary_message(summary: str) -> str:
    """A compaction's summary worded as transcompact's summary message (`summary_text.compose`,
    less its prefix): the split turn's part becomes the opening request's section, the file lists
    are left out."""
    summary = FILE_LISTS.sub("", summary, count=1)
    # After the user's words, if any: quoted, they hold no rule of pi's.
    at = summary.find(SPLIT_TURN, max(summary.find(USER_WORDS_HEADING), 0))
    if at < 0:
        return summary
    turn = summary[at + len(SPLIT_TURN):].removeprefix("\n\n").removeprefix(OPENING_HEADING).removeprefix("\n\n")
    return summary[:at] + "\n\n" + OPENING_HEADING + "\n\n" + turn


def bash_execution_text(message: dict) -> str:
    """What pi sends for a `!command` run (messages.ts `bashExecutionToText`)."""
    output = message.get("output")
    text = f"Ran `{message.get('command')}`\n"
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(exit_code, int) and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


def _derived(role: str, text: str, raw: Any, record: int) -> Message:
    """A message pi makes from an entry (a summary, a command run): read-only."""
    block = Text(text)
    return Message(role, (block,), raw=raw, line=record + 1, origin=_Origin(record, (block,), (text,), True, False))


def _read_entry(index: int, value: dict, compaction: int | None, name: str,
                listed: frozenset[tuple[str, str]] = frozenset()) -> Message | None:
    kind = _entry_type(value)
    where = f"line {index + 1}"
    if kind == "compaction":
        summary = value.get("summary")
        text = as_summary_message(summary) if isinstance(summary, str) else ""
        return _derived(USER, SUMMARY_PREFIX + text, value, index)
    if kind == "branch_summary":
        summary = value.get("summary")
        if not isinstance(summary, str) or not summary:
            return None
        return _derived(USER, BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX, value, index)
    if kind == "custom_message":
        blocks, items, string = _content(value.get("content"), where)
        return Message(USER, blocks, raw=value, line=index + 1, origin=_Origin(index, blocks, items, string, False))
    if kind != "message":
        return None
    message = value.get("message")
    if not isinstance(message, dict):
        raise ShapeError(f"a message entry's `message` must be an object, not {kind_of(message)}",
                         location=Location(name, index + 1))
    role = message.get("role")
    try:
        if role == "assistant":
            raw = _sent_reply(message, index, compaction)
            if raw is None:
                return None
            blocks, items, string = _content(message.get("content", []), where)
            return Message(ASSISTANT, blocks, raw=raw, line=index + 1, origin=_Origin(index, blocks, items, string, True))
        if role in ("user", "custom", "hookMessage"):  # hookMessage: version 2's name for custom
            blocks, items, string = _content(message.get("content"), where)
            return Message(USER, blocks, raw=message, line=index + 1, origin=_Origin(index, blocks, items, string, True))
        if role == "toolResult":
            call_id = message.get("toolCallId")
            if not isinstance(call_id, str):
                raise ShapeError(f"{where}: a toolResult's `toolCallId` must be a string, not {kind_of(call_id)}")
            blocks, items, string = _content(message.get("content", []), where)
            is_error = message.get("isError")
            # One text block reads as a string, as a result an operation makes is: they compare equal
            # (but for one `listed` as a block: `reload`).
            one_text = blocks[0].text if len(blocks) == 1 and type(blocks[0]) is Text else None
            one_text = None if (call_id, one_text) in listed else one_text
            # `isError: false` reads as no flag, as the results operations make have: pi writes it on every result.
            result = ToolResult(call_id, blocks if one_text is None else one_text, True if is_error is True else None)
            return Message(USER, (result,), raw=message, line=index + 1,
                           origin=_Origin(index, (result,), items, string, True))
    except ShapeError as error:
        raise ShapeError(error.message, location=Location(name, index + 1)) from None
    if role == "bashExecution":
        return None if message.get("excludeFromContext") else _derived(USER, bash_execution_text(message), message, index)
    if role == "branchSummary" and isinstance(message.get("summary"), str):
        return _derived(USER, BRANCH_SUMMARY_PREFIX + message["summary"] + BRANCH_SUMMARY_SUFFIX, message, index)
    if role == "compactionSummary" and isinstance(message.get("summary"), str):
        return _derived(USER, COMPACTION_SUMMARY_PREFIX + message["summary"] + COMPACTION_SUMMARY_SUFFIX, message, index)
    return None  # a role pi does not send


def read(parsed: Parsed, messages_path: str | None = None, listed: frozenset[tuple[str, str]] = frozenset()) -> Transcript:
    """`listed`: the (call id, text) of results that read as one text block, not as a string. An
    entry its view read (`parsing.ViewedEntry`) is a message left unread: it is read from the line's
    bytes when first asked for."""
    records = parsed.records or []
    version = version_of(records)
    path = find_path(records, version)
    order, compaction = active_entries(records, path, version)
    messages, message_records = [], []
    listed_ids = {call_id for call_id, _ in listed}
    for index in order:
        value = records[index][1]
        if type(value) is ViewedEntry and value["message"].get("toolCallId") in listed_ids:
            value = whole_value(records[index], parsed.name, index)  # a view reads one text block as a string
        if type(value) is ViewedEntry:
            message = _unread_entry(records, index, value, compaction, parsed.name)
        else:
            message = _read_entry(index, value, compaction, parsed.name, listed)
        if message is not None:
            messages.append(message)
            message_records.append(index)
    source = SessionSource(records, version, path, compaction, frozenset(message_records), parsed.bom)
    return Transcript(format=NAME, dialect="anthropic", messages=tuple(messages), name=parsed.name, source=source)


def _unread_entry(records: list[Record], index: int, value: ViewedEntry, compaction: int | None, name: str) -> Message | None:
    """The message of a viewed entry, as `_read_entry` reads it, left unread: its view counts it."""
    message = value["message"]
    replying = message["role"] == "assistant"
    record = _sent_reply(message, index, compaction) if replying else message
    if record is None:
        return None
    return Message.unread(ASSISTANT if replying else USER, MessageView(value.seen, record), None,
                          _ReadLater(records, index, compaction, name), line=index + 1)


def _sent_reply(message: dict, index: int, compaction: int | None) -> dict | None:
    """The assistant message of entry `index` as a count reads it, None when pi does not send it
    (it ended in `error` or `aborted`): its usage judged (`judged_usage`), none where it was kept
    from before the active compaction (it counted a context that no longer exists)."""
    if isinstance(message.get("stopReason"), str) and message["stopReason"] in UNSENT_STOP_REASONS:
        return None
    if compaction is not None and index < compaction:
        return {k: v for k, v in message.items() if k != "usage"}
    return judged_usage(message)


class _ReadLater:
    """The message of entry `index`, read from its line when first asked for: one per unread
    message of a session, so small (slots)."""

    __slots__ = ("records", "index", "compaction", "name")

    def __init__(self, records: list[Record], index: int, compaction: int | None, name: str) -> None:
        self.records, self.index, self.compaction, self.name = records, index, compaction, name

    def __call__(self) -> Message:
        value = read_again(self.records[self.index], self.name, self.index)
        message = _read_entry(self.index, value, self.compaction, self.name)
        assert message is not None  # its view read the same entry: a message pi sends
        return message


def whole_value(record: Record, name: str, index: int) -> Any:
    """The value of line `index` with everything in it: an entry its view read
    (`parsing.ViewedEntry`) read again from its bytes, for a write that makes a new entry of it."""
    return read_again(record, name, index) if type(record[1]) is ViewedEntry else record[1]


def blocks_as_sent(transcript: Transcript) -> dict[int, tuple[Block, ...]]:
    """What pi sends where the reading differs (`Format.blocks_as_sent`): the active compaction's
    summary in pi's wrapper with its file lists (`convertToLlm`), and after a reply's calls that no
    result answers before the next reply or request, an error result "No result provided" for each
    (pi-ai `transformMessages`), counted with that reply."""
    source: SessionSource = transcript.source
    messages = transcript.messages
    sent: dict[int, tuple[Block, ...]] = {}
    summary = None if source.compaction is None else source.records[source.compaction][1].get("summary")
    calls: list[str] = []  # the ids of the calls of the reply `calling`
    calling, answered = -1, set[str]()  # the reply whose calls are open, its calls, the results seen
    for index, message in enumerate(messages):
        if message.role == USER:
            # A toolResult reads as a user message of one result (`_read_entry`).
            if (answering := _answered_alone(message)) is not None:
                answered.add(answering)
                continue
            if isinstance(summary, str) and record_of(message) == source.compaction:
                sent[index] = (Text(COMPACTION_SUMMARY_PREFIX + summary + COMPACTION_SUMMARY_SUFFIX),)
        if calls:
            _made_results(sent, messages, calling, calls, answered)
        calls = list(message.call_ids) if message.role == ASSISTANT else []
        calling, answered = index, set() if calls else answered
    _made_results(sent, messages, calling, calls, answered)
    return sent


def _answered_alone(message: Message) -> str | None:
    """The call id a user message answers when it holds one tool result alone (a toolResult entry)."""
    if (view := message.view) is not None:
        sizes = view.blocks
        return sizes[0].call_id if len(sizes) == 1 and sizes[0].type is ToolResult else None
    blocks = message.blocks
    return blocks[0].tool_call_id if len(blocks) == 1 and type(blocks[0]) is ToolResult else None


def _made_results(sent: dict[int, tuple[Block, ...]], messages: tuple[Message, ...], calling: int, calls: list[str],
                  answered: set[str]) -> None:
    """The reply `calling` as pi sends it, with a result made for each of its calls not `answered`."""
    made = tuple(ToolResult(call_id, NO_RESULT, True) for call_id in calls if call_id not in answered)
    if made:
        sent[calling] = messages[calling].blocks + made


def reload(parsed: Parsed, written: Transcript, messages_path: str | None = None) -> Transcript:
    """The post-condition's reading of what a rewrite wrote of `written`: a result it made one text
    block (prune keeps the shape of a result of several blocks) reads as that block, not a string.
    (A message it left unread is its line's again.)"""
    listed = frozenset((b.tool_call_id, b.content[0].text) for m in written.messages if m.is_read for b in m.tool_results
                       if not isinstance(b.content, str) and len(b.content) == 1 and type(b.content[0]) is Text)
    return read(parsed, messages_path, listed)


# --- writing ---------------------------------------------------------------------------------


def judged_usage(message: dict) -> dict:
    """`message` with the prompt pi judges by as its recorded usage: a `totalTokens` below the sum
    of the parts was restated by a rewrite (`writer.restated_usage`), and is read less the output."""
    usage = message.get("usage")
    if not isinstance(usage, dict) or type(usage.get("totalTokens")) is not int:
        return message
    parts = {k: usage[k] if type(usage.get(k)) is int else 0 for k in ("input", "output", "cacheRead", "cacheWrite")}
    if usage["totalTokens"] >= sum(parts.values()):
        return message
    return {**message, "usage": {**usage, "input": max(0, usage["totalTokens"] - parts["output"]), "cacheRead": 0, "cacheWrite": 0}}
