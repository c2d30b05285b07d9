"""A transcript held in one JSON document: a request body, a bare array, or an envelope.

Shared by the `anthropic` and `openai` formats, which differ only in the dialect of their
messages. The messages sit at a path in the document (`[]` for a bare array, `["messages"]`
for a request body, `--messages-path` for other wrappers); writing puts the rewritten
messages back at that path and leaves every other key where it was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .. import dialects
from ..core.errors import Location, ShapeError, UsageError, option
from ..core.jsondata import BOM, Layout, Parsed, first_line_is_a_value, kind_of, nested_value, without_lone_surrogates
from ..core.model import Message, Transcript
from .adapter import Format

# Keys holding the messages of a wrapper, tried in order when no --messages-path is given.
COMMON_MESSAGE_KEYS = ("messages", "history")


@dataclass(frozen=True)
class DocumentSource:
    document: Any
    path: tuple[Any, ...]
    parent: Any  # the object that holds the messages (and `system`, `tools`)
    layout: Layout
    data: bytes  # what was read: written back as it was when nothing changed
    # Each message's bytes as `read_quickly` found them (`_Spans`): one it read whole, left as it
    # was, is written back as them, escapes and spacing as they were (None: the whole reading's).
    spans: Any = None


def split_path(messages_path: str | None) -> tuple[Any, ...] | None:
    """`trajectory.0.messages` → ("trajectory", 0, "messages")."""
    if messages_path is None:
        return None
    if not messages_path:
        return ()
    return tuple(int(part) if part.isdigit() else part for part in messages_path.split("."))


def find_messages(document: Any, messages_path: str | None) -> tuple[tuple[Any, ...], Any, list] | None:
    """(path, parent, messages) when the document holds a list of message objects, else None."""
    path = split_path(messages_path)
    if path is not None:
        node, parent = document, None
        for key in path:
            try:
                parent, node = node, node[key]
            except (KeyError, IndexError, TypeError):
                raise UsageError(
                    f"{option('messages_path', messages_path)}: the input has nothing at {key!r}"
                ) from None
        return (path, parent, node) if _is_message_list(node) else None
    if _is_message_list(document):
        return (), None, document
    if isinstance(document, dict):
        for key in COMMON_MESSAGE_KEYS:
            if _is_message_list(document.get(key)):
                return (key,), document, document[key]
    return None


def _is_message_list(value: Any) -> bool:
    """A list whose objects have a `role` (an empty list is an empty conversation).

    A list that holds messages and something else is still a message list: reading it names the
    item that is not a message, which says more than "unknown format".
    """
    if not isinstance(value, list):
        return False
    roles = [isinstance(m, dict) and isinstance(m.get("role"), str) for m in value]
    return not roles or (any(roles) and all(ok or not isinstance(m, dict) for ok, m in zip(roles, value)))


def detect_dialect(parsed: Parsed, messages_path: str | None) -> str | None:
    """The dialect of the document's messages, or None when it holds none; scanned once per input."""
    key = ("document-dialect", messages_path)
    if key not in parsed.detected:
        parsed.detected[key] = _scan_dialect(parsed, messages_path)
    return parsed.detected[key]


def _scan_dialect(parsed: Parsed, messages_path: str | None) -> str | None:
    if not parsed.is_document or parsed.document is None:
        return None
    if isinstance(parsed.document, dict) and "role" in parsed.document:
        return None  # one message on its own: that is JSON Lines with a single line
    found = find_messages(parsed.document, messages_path)
    if found is None:
        return None
    _, parent, messages = found
    return dialects.detect(messages, request=parent if isinstance(parent, dict) else None)


def read(parsed: Parsed, dialect: str, messages_path: str | None, known: Sequence[Message] = ()) -> Transcript:
    """The transcript the document holds. `known`: the messages a rewrite wrote it from, when it
    is read back (the post-condition); one that went out as it was read comes back as the same
    object, since reading the same values again gives it back, and it is not built twice."""
    codec = dialects.DIALECTS[dialect]
    found = find_messages(parsed.document, messages_path)
    if found is None:
        raise ShapeError("no list of messages found", location=Location(parsed.name))
    path, parent, raw_messages = found
    messages = []
    for index, obj in enumerate(raw_messages):
        same = known[index] if index < len(known) else None
        if same is not None and same.raw == obj and codec.is_unchanged(same):
            messages.append(same)
            continue
        try:
            messages.append(codec.read_message(obj, index=index))
        except ShapeError as error:
            raise ShapeError(error.message, location=Location(parsed.name)) from None
    try:
        system, tools, request = _around_messages(parent, dialect, path)
    except ShapeError as error:
        raise ShapeError(error.message, location=Location(parsed.name)) from None
    source = DocumentSource(document=parsed.document, path=path, parent=parent, layout=Layout.of(parsed.data),
                            data=parsed.data)
    return Transcript(
        format=dialect,
        dialect=dialect,
        messages=tuple(messages),
        system=system,
        tools=tools,
        request=request,
        name=parsed.name,
        source=source,
    )


def _around_messages(parent: Any, dialect: str, path: tuple[Any, ...]) -> tuple[tuple, tuple, dict]:
    """(system, tools, request fields) of the object that holds the messages; none for a list."""
    if not isinstance(parent, dict):
        return (), (), {}
    system = dialects.DIALECTS[dialect].read_system(parent.get("system")) if dialect == "anthropic" else ()
    tools = parent.get("tools")
    if tools is not None and not isinstance(tools, list):  # written back as a list, it would be silently replaced
        raise ShapeError(f"`tools` must be a list of tool definitions, not {kind_of(tools)}")
    request = {k: v for k, v in parent.items() if k not in ("messages", "system", "tools", path[-1])}
    return system, tuple(tools or ()), request


def write(transcript: Transcript) -> bytes:
    """The document with the transcript's messages (and system, tools) put back in place; the
    bytes read, as they were, when nothing changed."""
    source: DocumentSource = transcript.source
    codec = dialects.DIALECTS[transcript.dialect]
    parent = source.parent
    old_messages = parent[source.path[-1]] if source.path else source.document
    # A message still as it was read from its own bytes (`read_quickly`) is those bytes.
    messages = [m.data if m.data is not None else codec.write_message(m) for m in transcript.messages]
    new_parent = dict(parent) if isinstance(parent, dict) else None
    changed = len(messages) != len(old_messages) or any(a is not b for a, b in zip(messages, old_messages))
    if new_parent is not None:
        if transcript.dialect == "anthropic":
            old_system = parent.get("system")
            if transcript.system or old_system is not None:
                system = codec.write_system(transcript.system, old_system)
                if system is not old_system:
                    new_parent["system"] = system
                    changed = True
        if transcript.tools != tuple(parent.get("tools") or ()):
            new_parent["tools"] = list(transcript.tools)
            changed = True
    if not changed:
        return source.data
    # A message still as it was read is written as its bytes, escapes and spacing as they were:
    # split off by `read_quickly`, or now from the bytes the whole reading read.
    spans: Any = source.spans if source.spans is not None else _message_spans(source.data, source.path)
    place = {id(value): index for index, value in enumerate(old_messages)} if spans is not None else {}
    messages = [orjson.Fragment(bytes(w)) if m.data is not None
                else orjson.Fragment(bytes(spans[index])) if (index := place.get(id(w))) is not None and old_messages[index] is w
                else w for m, w in zip(transcript.messages, messages)]
    if not source.path:
        document = messages
    else:
        # A list holds them (`--messages-path trajectory.0`): it has no system or tools of its own.
        container: dict[Any, Any] | list[Any] = new_parent if new_parent is not None else list(parent)
        container[source.path[-1]] = messages
        document = _replace_at(source.document, source.path[:-1], container)
    return source.layout.dumps(document)


def _message_spans(data: bytes, path: tuple[Any, ...]) -> list | None:
    """The bytes of each message of the list at `path` in the document `data` (None where its
    bytes do not hold that list as the reading found it). A document with a lone surrogate escape,
    which the decoder refuses, is split where the same document with U+FFFD escaped there (as
    long) splits: the spans are the input's own bytes at those places."""
    import msgspec

    text = data[len(BOM):] if data.startswith(BOM) else data
    for document in dict.fromkeys((text, without_lone_surrogates(text))):
        node: Any = document
        try:
            for key in path:
                node = msgspec.json.decode(node, type=dict[str, msgspec.Raw] if isinstance(key, str) else list[msgspec.Raw])[key]
            spans = msgspec.json.decode(node, type=list[msgspec.Raw])
        except (msgspec.MsgspecError, RecursionError, ValueError, KeyError, IndexError):
            continue
        return spans if document is text else _at_the_same_places(spans, document, text)
    return None


def _at_the_same_places(spans: list, document: bytes, text: bytes) -> list[bytes]:
    """The bytes of `text` where each of `spans` sits in `document`, `text` with some escapes made
    others as long (each found after the one before: the spans are in order)."""
    places, at = [], 0
    for span in spans:
        part = bytes(span)
        start = document.find(part, at)
        places.append(text[start:start + len(part)])
        at = start + len(part)
    return places


# Top-level keys that make a document another format's, or one line of JSON Lines (`parse`):
# such a document is read the whole way, where detection tries every format.
_OTHER_FORMATS_KEYS = ("role", "type", "uuid", "sessionId", "history", "input")
_AN_OBJECT = re.compile(rb"\s*\{")  # a document that is an object (matched, not stripped: no copy of it)
_AN_ARRAY = re.compile(rb"\s*\[")


def read_quickly(data: bytes, name: str, dialect: str | None, split: bool = False) -> Transcript | None:
    """A request body (`messages` at the top) or a bare array of messages read as `read` reads
    it, without building what a command may never look at: each message whose shape
    `dialects.views` names is left unread, with its view and its bytes, and is written back as
    those bytes while it is unchanged.

    None when the input is anything else, or anything is wrong with it: the whole reading then
    decides, and says where. `dialect`: as named (--format), else detected. `split`: each
    message's bytes split off at once (a rewrite writes most of them back, its archive compares
    them: `msgspec.Raw`), else when first asked for.
    """
    text = data[len(BOM):] if data.startswith(BOM) else data
    is_array = _AN_ARRAY.match(text) is not None
    if not (is_array or _AN_OBJECT.match(text)) or first_line_is_a_value(text):
        return None  # not one object or array: a log, JSON Lines (the decoder is not even imported)
    import msgspec

    parent: dict[str, Any] | None = None
    array: Any
    if is_array:
        array, depth = text, 2  # the array, a message
    else:
        try:
            top = msgspec.json.decode(text, type=dict[str, msgspec.Raw])
            array = top.get("messages")
            parent = {key: [] if key == "messages" else nested_value(bytes(raw), 2) for key, raw in top.items()}
        except (msgspec.MsgspecError, RecursionError, ValueError):
            return None
        if array is None or any(key in parent for key in _OTHER_FORMATS_KEYS):
            return None
        depth = 3  # the document, its `messages`, a message
        dialect = dialect or dialects.named_by(parent)
    read = _read_views(array, depth, shapes=dialect is None, split=split)
    if read is None or not read and parent is None:  # not messages; an empty array: the whole reading says what it is
        return None
    spans = [span for span, _, _ in read]
    if dialect is None:
        shapes = [viewed.shape if viewed is not None else value for _, viewed, value in read]
        dialect = dialects.detect(shapes, request=None if parent is None else {**parent, "messages": shapes})
    codec = dialects.DIALECTS[dialect]
    shared = read[0][0].spans if read and type(read[0][0]) is _Span else _Spans(None, depth, list(spans))  # (`as_read` changes)
    shared.codec = codec  # how each message left unread is read
    messages = []
    as_read = spans  # what `write` finds a message unchanged by: its bytes, or the value it was read from
    try:
        for index, (span, viewed, value) in enumerate(read):
            if viewed is not None and (
                    dialect == "anthropic" or viewed.string_content and viewed.role not in ("tool", "function")):
                messages.append(Message.unread(viewed.role, viewed.view, span, span if type(span) is _Span else _Span(shared, index)))
            else:
                as_read[index] = value if value is not None else nested_value(bytes(span), depth)
                messages.append(codec.read_message(as_read[index], index=index))
        request: dict[str, Any] = {}
        if parent is None:
            system, tools = (), ()
        else:
            parent["messages"] = as_read
            system, tools, request = _around_messages(parent, dialect, ("messages",))
    except (ShapeError, ValueError):
        return None
    source = (DocumentSource(document=as_read, path=(), parent=None, layout=Layout.of(data), data=data, spans=shared) if parent is None
              else DocumentSource(document=parent, path=("messages",), parent=parent, layout=Layout.of(data), data=data, spans=shared))
    return Transcript(format=dialect, dialect=dialect, messages=tuple(messages), system=system, tools=tools, request=request,
                      name=name, source=source)


def _read_views(array: Any, depth: int, shapes: bool, split: bool) -> list[tuple[Any, Any, Any]] | None:
    """(bytes, view, value) of each message of an array's bytes whose messages sit `depth` deep:
    the view of each that has one (its value None), else its value read whole; None when the array
    holds anything but message objects or is not JSON. `split`: as `read_quickly` says."""
    import msgspec

    from ..dialects import views

    every = views.view_all(array, depth, shapes=shapes)
    if every is not None and not split:  # the common case: one decoder call, and each message's bytes split off if ever needed
        spans = _Spans(array, depth)
        return [(_Span(spans, index), viewed, None) for index, viewed in enumerate(every)]
    read = []
    try:
        split_off = msgspec.json.decode(array, type=list[msgspec.Raw])
    except (msgspec.MsgspecError, RecursionError, ValueError):
        return None
    for index, span in enumerate(split_off):
        viewed = every[index] if every is not None else views.view(span, depth)
        try:
            value = nested_value(bytes(span), depth) if viewed is None else None
        except ValueError:
            return None
        if viewed is None and not (isinstance(value, dict) and isinstance(value.get("role"), str)):
            return None
        read.append((span, viewed, value))
    return read


class _Spans:
    """The bytes of each message of a document's array, split off when first asked for (or at
    once: `split`), and how each is read: the dialect's codec (set once detection has named it),
    how deep its messages sit."""

    __slots__ = ("array", "split", "codec", "depth")

    def __init__(self, array: Any, depth: int, split: list | None = None):
        self.array = array
        self.split = split
        self.codec: Any = None
        self.depth = depth

    def __getitem__(self, index: int) -> Any:
        if self.split is None:
            import msgspec

            self.split = msgspec.json.decode(self.array, type=list[msgspec.Raw])
        return self.split[index]


class _Span:
    """One message's bytes (`bytes(span)`), as `_Spans` splits them off; called, the message read
    from them (`Message.unread`'s `read`: one object a message, where a `partial` made three)."""

    __slots__ = ("spans", "index")

    def __init__(self, spans: _Spans, index: int):
        self.spans = spans
        self.index = index

    def __bytes__(self) -> bytes:
        return bytes(self.spans[self.index])

    def __call__(self) -> Message:
        spans = self.spans
        return spans.codec.read_message(nested_value(bytes(self), spans.depth), index=self.index)


def _replace_at(node: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    key, rest = path[0], path[1:]
    copy = list(node) if isinstance(node, list) else dict(node)
    copy[key] = _replace_at(node[key], rest, value)
    return copy


class DocumentFormat(Format):
    """The adapter of a document whose messages are in the dialect it is named after: one each
    (anthropic.py, openai.py), which differ only in the name and the description."""

    lines = False  # the document is written again whole

    def __init__(self, name: str, description: str) -> None:
        self.name, self.description = name, description

    def detect(self, parsed: Parsed, messages_path: str | None = None) -> bool:
        return detect_dialect(parsed, messages_path) == self.name

    def readable(self, parsed: Parsed, messages_path: str | None = None) -> bool:
        """A document in either dialect: --format chooses the dialect it is read in."""
        return detect_dialect(parsed, messages_path) is not None

    def read(self, parsed: Parsed, messages_path: str | None = None) -> Transcript:
        return read(parsed, self.name, messages_path)

    def reload(self, parsed: Parsed, written: Transcript, messages_path: str | None = None) -> Transcript:
        """A document is parsed whole: the messages it kept are not built again (`read`'s `known`)."""
        return read(parsed, self.name, messages_path, written.messages)

    def write(self, transcript: Transcript) -> bytes:
        return write(transcript)
