"""The operations, each a plain function over the transcript model: estimate, prune, truncate,
cut, summarize, the checkpoint, compact, check, repair, convert, diff, expand, archive, events.
"""
