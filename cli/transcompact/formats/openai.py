"""OpenAI Chat Completions: a request body (`messages`, `tools`), a bare array, or an envelope (SWE-agent `history`)."""

from __future__ import annotations

from ._document import DocumentFormat

FORMAT = DocumentFormat("openai", "OpenAI Chat Completions request body or array of messages")
NAME, DESCRIPTION, LINES = FORMAT.name, FORMAT.description, FORMAT.lines
detect, read, write = FORMAT.detect, FORMAT.read, FORMAT.write
