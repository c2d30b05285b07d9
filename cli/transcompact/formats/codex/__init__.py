"""Codex CLI's rollouts (`~/.codex/sessions/**/rollout-*.jsonl`): the reader and writer, and
its rewrites (compaction, injected context).
"""
