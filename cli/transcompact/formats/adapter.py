"""The type of a format adapter: each format declares one `Format` (its module's `FORMAT`), which
the registry (formats/__init__.py) holds and the operations call, never asking which format it is.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..core.format_names import REGISTERED
from ..core.summary_text import SummaryText, compose

if TYPE_CHECKING:
    from ..core.jsondata import Lines, Parsed
    from ..core.model import Block, Message, Transcript
    from ..core.violation import Violation
    from ._log import Prompts, Slimming

LineFix = tuple[str, str, int]  # a fix `repair_log` made: (rule, text, line)


class _Lazy:
    """A hook that is the function of the same name in a module of the adapter's package,
    imported when an operation first asks for it (`lazy`)."""

    def __init__(self, module: str) -> None:
        self.module, self.name, self.path = module, "", ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.path = name, f"{owner.__module__}.{self.module}"

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            # Looked up on the class (ABCMeta does, for each inherited abstract method, as the
            # adapter's class is made): nothing is imported.
            return self
        return getattr(importlib.import_module(self.path), self.name)


def lazy(module: str) -> Any:
    """A hook of an adapter, declared by the module of its package that has it: `check_log =
    lazy("rules")` is `rules.check_log`, imported when an operation first asks for it, so that a
    command pays only for the rules and rewrites it uses."""
    return _Lazy(module)


class Format(ABC):
    """One format transcompact reads: its name, how it is recognised, read and written, and its
    own part of the operations (the hooks below). A hook's default is what a format without one
    gets, so that an operation calls it on any transcript; a format that has one overrides it, with
    the function of its rules or rewrites imported when an operation first asks (`lazy`)."""

    name: str  # what --format and `Transcript.format` call it: its registration's (core/format_names.py)
    description: str  # a line for the user (an input not in the format named)
    lines: bool  # whether a line is the unit a rewrite changes, keeps or removes (else a message of one JSON document)
    # The rules of its log that `check_log` reports, by id: what must hold (check's table of the
    # rules, `ops.validity.check.RULES`, and docs/check.md's).
    rule_texts: Mapping[str, str] = MappingProxyType({})
    results_twice: bool = False  # the agent sends each tool result twice itself: its copy is no second answer (check)
    # A call's results belong right after the message that makes it, not after the assistant turn that
    # message begins (pi answers a call before the next message; a Gemini record holds its calls'
    # results): repair's stand-in for a missing one goes there.
    answers_each_message: bool = False
    # What of a line is kept as it is parsed (`jsondata.parse`'s trim). It runs before detection,
    # on every input: it must leave the lines of every other format as they are.
    trim: Callable[[Any], Any] | None = None
    # The trim of work that mostly counts (`loads(lazily=True)`): it may keep less of a line of this
    # format (a `PartialLine`, whose rest this format reads from the line's bytes when asked).
    lazy_trim: Callable[[Any], Any] | None = None
    # What a typed decoder reads of a line of this format instead of parsing it, for the same work
    # (`jsondata.parse`'s view): a `PartialLine` of this format's own kind, or None (the line is
    # parsed). It runs before detection too, and must give None for every other format's line.
    line_view: Callable[[memoryview], Any] | None = None
    # A document of this format read for work that mostly counts, or changes what it reads
    # (`loads(lazily=True)`, `"logs"`), its messages left unread where a typed view can count and
    # check them (its writer writes those as their bytes): the transcript `read`
    # gives, or None (the full reading decides). `loads` offers it a document whose first key is
    # the one its registration names (`document_first_key`), before the format is known.
    read_quickly: Callable[[bytes, str], Any] | None = None
    # Whether its writer writes a line its line view read (not only a count reads it): prune and
    # slim (`lazily="logs"`) read such lines by their views too.
    rewrites_viewed_lines: bool = False
    # Whether compact (`lazily="rereads"`), which reads the part it drops several times over, reads
    # such lines by their views too: each reading of a message parses its line again.
    rereads_viewed_lines: bool = False
    # The kind of `PartialLine` this format's reader takes (by its lazy trim or its line view): an
    # input read lazily whose lines were kept in part for another format is read whole again.
    partial_line: type | None = None

    @property
    def writes(self) -> bool:
        """False: transcompact only reads the format, and a command that would write it stops
        (`ensure_writable`). Its registration says (core/format_names.py)."""
        return REGISTERED[self.name].writes

    @abstractmethod
    def detect(self, parsed: Parsed, messages_path: str | None = None) -> bool:
        """Whether detection takes the input for this format (`FORMATS` asks in order)."""

    @abstractmethod
    def read(self, parsed: Parsed, messages_path: str | None = None) -> Transcript: ...

    @abstractmethod
    def write(self, transcript: Transcript) -> bytes:
        """The transcript in this format, as it was read where unchanged."""

    def write_lines(self, transcript: Transcript) -> bytes | Lines:
        """What a rewrite writes: a log's lines as they are to be joined (`Lines`), or `write`."""
        return self.write(transcript)

    def readable(self, parsed: Parsed, messages_path: str | None = None) -> bool:
        """Whether the input reads as this format when it is named so (--format, or a rewrite's
        output read back): --format overrides the choice between formats, not the shape."""
        return self.detect(parsed, messages_path)

    def reload(self, parsed: Parsed, written: Transcript, messages_path: str | None = None) -> Transcript:
        """Read what a rewrite wrote of `written` (the post-condition), as `read` or with what the
        written transcript says besides (its dialect, its messages)."""
        return self.read(parsed, messages_path)

    def read_back(self, data: bytes, written: Transcript) -> Transcript | None:
        """`reload` of a document whose output keeps most of its input's bytes, without parsing
        those again: the transcript, or None (it is parsed whole)."""
        return None

    def hint(self, parsed: Parsed) -> str | None:
        """What to tell the user of an input this format recognises but does not read as it is."""
        return None

    # --- the hooks: the format's own part of an operation ------------------------------------

    def check_log(self, transcript: Transcript, path: str | None) -> list[Violation]:
        """The rules of the log itself (check)."""
        return []

    def repair_log(self, transcript: Transcript) -> tuple[Transcript, list[LineFix]]:
        """What repair fixes of those rules."""
        return transcript, []

    def append_compaction(self, transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                          *, drop_history: bool = False, prompts: Prompts | None = None) -> Transcript | None:
        """A compaction written the way the agent writes its own (compact); None: the rebuilt
        transcript stands. `prompts`: the prompt each message of a transcript is sent after by the
        model compact counts with (`TokenCounter.prompts`; None: no model to say it), by which the
        responses the compaction keeps have their recorded usage restated (see each format's)."""
        return None

    def replace_ui_copies(self, transcript: Transcript) -> Transcript:
        """The copies of tool results only a UI shows, made to match what prune left (--prune-ui-copy)."""
        return transcript

    def rewrites_lines(self, transcript: Transcript) -> bool:
        """`lines`, for this transcript (a format with layouts of both kinds: prune's archive)."""
        return self.lines

    def injected_context(self, message: Message) -> tuple[tuple[str, str], ...] | None:
        """What a user message the agent wrote itself (its environment) says as (name, value);
        None for the user's own (compact's checkpoint)."""
        return None

    def view_before_compaction(self, transcript: Transcript) -> Transcript | None:
        """The log as the agent read it before its newest compaction, whose recorded usage still
        measures the system prompt and tools (estimate); None: no compaction."""
        return None

    def views_before_compaction(self, transcript: Transcript) -> Iterator[Transcript | None]:
        """The views before each of the log's compactions, the newest first (`view_before_compaction`
        again and again); None for one the format knows records no usage without making it (a
        count looks for the newest that records some)."""
        view = self.view_before_compaction(transcript)
        while view is not None:
            yield view
            view = self.view_before_compaction(view)

    def agent_lines(self, transcript: Transcript) -> frozenset[int]:
        """The lines (a block's `line`) the agent wrote in the user's turn itself, never the
        user's words (compact's checkpoint)."""
        return frozenset()

    def summary_wording(self, summary: SummaryText) -> str:
        """The summary message's text as the agent words its own (compact)."""
        return compose(summary)

    def unrecorded_messages(self, transcript: Transcript) -> frozenset[int]:
        """The messages (indices) that no recorded usage counted, though the agent sends them now
        (estimate's anchor counts them on top)."""
        return frozenset()

    def blocks_as_sent(self, transcript: Transcript) -> Mapping[int, tuple[Block, ...]]:
        """The blocks the agent sends for the messages (indices) whose reading is not what it
        sends: a summary it wraps in words of its own, a result it makes up for a call left open.
        A count counts these in their place; a rewrite works on the reading."""
        return {}

    def slimming(self, transcript: Transcript) -> Slimming | None:
        """What of the log its agent never sends, which `slim` drops (None: the format has no such
        part: a request body is what is sent). The agent resuming what is left must send the very
        request it sends from the whole log, and go on working."""
        return None

    # The members that tie a log's lines into a tree, a line's own id and its parent's (Claude
    # Code's `uuid` and `parentUuid`), where they do: `expand` hangs a line added after a compaction
    # it undoes from the line the session went on from (`leaf_of`), not from a line it took out.
    tree_members: tuple[str, str] | None = None

    def leaf_of(self, transcript: Transcript) -> Any:
        """The id of the line a session of a format with `tree_members` goes on from: the last of
        the path the agent resumes, which a line it appends hangs from."""
        return None

    def line_id(self, record: Any) -> Any:
        """What tells a line of the log from the others, of the record the line holds, as it is
        written (Claude Code's `uuid`); None: the format's lines have none. cut-point names the line
        the recent window starts at by it (when it is a string); prune's archive tells a line it
        rewrote from one it removed by it."""
        return None

    def is_earlier_summary(self, record: Any) -> bool:
        """Whether the message read from `record` (its `raw`, or an unread message's `view.record`)
        is a summary the agent wrote of what came before it, its own compaction: compact merges
        the next summary into it rather than quoting it. It is asked of a message alone, before
        its format is known (`formats.earlier_summary`): a format that has one is registered with
        `own_summaries` (core/format_names.py)."""
        return False

    def earlier_summary_body(self, text: str) -> str:
        """The summary such a message holds, of its text: what the agent words around it taken off."""
        return text

    def written_by_agent(self, message: Message) -> bool:
        """Whether a user message is one the agent wrote in the user's turn itself, whole (a skill's
        body, a command's expansion, a reminder): never the user's words (compact's checkpoint)."""
        return False


class ReadOnlyFormat(Format):
    """A format transcompact only reads (Copilot CLI's sessions, OpenHands V0 trajectories: records
    of finished runs that no agent resumes), registered with `writes=False`: a command that would
    write one stops (`ensure_writable`), and a transcript an operation left as it was is written
    as the bytes read (its source's `data`)."""

    def write(self, transcript: Transcript) -> bytes:
        from . import not_written

        source = transcript.source
        if transcript.messages != source.messages:
            raise not_written(transcript)
        return source.data
