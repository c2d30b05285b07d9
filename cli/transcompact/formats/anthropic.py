"""Anthropic Messages API: a request body (`system`, `tools`, `messages`) or a bare array of messages."""

from __future__ import annotations

from ._document import DocumentFormat

FORMAT = DocumentFormat("anthropic", "Anthropic Messages request body or array of messages")
NAME, DESCRIPTION, LINES = FORMAT.name, FORMAT.description, FORMAT.lines
detect, read, write = FORMAT.detect, FORMAT.read, FORMAT.write
