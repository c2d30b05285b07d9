"""The two wire shapes of a message (Anthropic and OpenAI), shared by every file format."""

from . import anthropic, openai

DIALECTS = {anthropic.NAME: anthropic, openai.NAME: openai}


def detect(messages: list, *, has_system_key: bool = False) -> str:
    """The dialect of a list of message objects: the one whose own shapes it shows most.

    A list that shows neither (plain role/content strings) reads the same in both; it is taken
    as Anthropic when the request has a top-level `system`, else as OpenAI.
    """
    a, o = anthropic.signals(messages), openai.signals(messages)
    if a > o or (a == o and has_system_key):
        return anthropic.NAME
    return openai.NAME
