"""OpenAI Chat Completions: a request body (`messages`, `tools`), a bare array, or an envelope (SWE-agent `history`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.jsondata import Parsed
from ..core.model import Message, Transcript
from . import _document

NAME = "openai"
DESCRIPTION = "OpenAI Chat Completions request body or array of messages"
LINES = False  # the document is written again whole


def detect(parsed: Parsed, messages_path: str | None = None) -> bool:
    return _document.detect_dialect(parsed, messages_path) == NAME


def read(parsed: Parsed, messages_path: str | None = None, known: Sequence[Message] = ()) -> Transcript:
    return _document.read(parsed, NAME, messages_path, known)


def write(transcript: Transcript) -> bytes:
    return _document.write(transcript)


class OpenAIFormat(_document.DocumentFormat):
    name, description, lines = NAME, DESCRIPTION, LINES


FORMAT = OpenAIFormat()
