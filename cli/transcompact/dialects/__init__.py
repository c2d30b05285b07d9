"""The two wire shapes of a message, shared by every file format: `anthropic` and `openai` (a
message's blocks read from and written to each), `_shape` (what both check of a value's type),
`views` (what a command needs of a message without reading it whole)."""

from . import anthropic, openai

DIALECTS = {anthropic.NAME: anthropic, openai.NAME: openai}


def detect(messages: list, *, request: dict | None = None) -> str:
    """The dialect of a list of message objects and of the request body that holds them, if any.

    A request whose own fields name one API (a parameter or a tool definition only that API has)
    is in its dialect: no rewrite changes those fields, so what a rewrite writes reads back as it
    was written, whatever messages it removed. Otherwise the messages decide: shapes only one
    dialect has (`signals`: Anthropic tool_use, tool_result and thinking blocks; OpenAI tool_calls,
    `tool` and `developer` roles, image_url parts), by the number of messages that show them.

    A list that shows neither is a plain conversation, which both read alike, and which a rewrite
    leaves whenever it removes the last such shape (repair an orphan result, compact the old
    turns). It is taken as Anthropic when it holds something only Anthropic's rules accept and
    nothing only OpenAI's accept, else as OpenAI: one that is valid in the dialect it was written
    in reads back valid.
    """
    named = named_by(request) if request is not None else None
    if named is not None:
        return named
    a, o = anthropic.signals(messages), openai.signals(messages)
    if a != o:
        return anthropic.NAME if a > o else openai.NAME
    if anthropic.only_it_accepts(messages) and not openai.only_it_accepts(messages):
        return anthropic.NAME
    return openai.NAME


def named_by(request: dict) -> str | None:
    """The dialect a request body's own fields name, if they name one (see `detect`)."""
    named = [d.NAME for d in (anthropic, openai) if d.names_request(request)]
    return named[0] if len(named) == 1 else None
