"""The Responses format's part of `compact`: the new `input` of the request."""

from __future__ import annotations

from ...core.jsondata import parse
from ...core.model import ASSISTANT, Message, Opaque, Transcript
from ...core.summary_text import SUMMARY_ACK, SUMMARY_PREFIX
from .._log import Prompts
from ..codex.reader import assistant_item, user_item
from ..codex.writer import message_items
from .reader import COMPACTION, InputSource, read
from .writer import with_items

# Messages kept in front of the summary: the API's own compaction (opaque: no summary can take in
# what it holds) and the instructions of the system and developer messages.
LEADING_ROLES = frozenset({"system", "developer"})


def append_compaction(transcript: Transcript, summary: str, recent: tuple[Message, ...], pre_tokens: int,
                      *, drop_history: bool = False, prompts: Prompts | None = None) -> Transcript:
    """The items written in place of `input`: the leading messages (the newest `compaction` item, system
    and developer messages), the summary as a user message, the assistant's acknowledgement unless the
    window starts inside an assistant turn (a cut that split a turn), then the window's items as they
    are now. The items before the newest compaction are dropped, as the API drops them: `drop_history`
    changes nothing. Read back as a transcript."""
    source: InputSource = transcript.source
    leading = []
    for message in transcript.messages[:len(transcript.messages) - len(recent)]:
        if not (message.role in LEADING_ROLES or _is_compaction(message)):
            break
        leading.append(message)
    values = [value for message in leading for _, value in message_items(message, source.items)]
    values.append(user_item(SUMMARY_PREFIX + summary))
    if not (recent and recent[0].role == ASSISTANT):
        values.append(assistant_item(SUMMARY_ACK))
    values += [value for message in recent for _, value in message_items(message, source.items)]
    data = source.layout.dumps(with_items(source, values))
    return read(parse(data, transcript.name))


def _is_compaction(message: Message) -> bool:
    return any(isinstance(b, Opaque) and b.type == COMPACTION for b in message.blocks)
