"""Gemini CLI's chat recordings (`~/.gemini/tmp/*/chats/*.json[l]`): the reader and writer, and
its rewrites (compaction, UI copies).
"""
