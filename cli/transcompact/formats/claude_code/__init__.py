"""Claude Code's session logs (`~/.claude/projects/*/*.jsonl`): the reader and writer, the
log's own rules (check, repair), and its rewrites (compaction, UI copies).
"""
