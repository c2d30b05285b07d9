"""pi's sessions (`~/.pi/agent/sessions/**/*.jsonl`): the reader and writer, the session's own
rules (check, repair), and its rewrites (compaction).
"""
