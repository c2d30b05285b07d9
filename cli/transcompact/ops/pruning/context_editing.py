"""Anthropic's server-side context editing, offline: the `context_management` object that asks the
Messages API for what `prune` does, and what prune does that no edit can ask for.

| edit parameter | PruneOptions |
| --- | --- |
| `clear_tool_uses_20250919` `keep` | `keep_tool_uses`; without it, the tool uses in the transcript's last `hard_clear_after` tool-result messages |
| `clear_tool_uses_20250919` `trigger` | none (prune prunes at any size): as soon as there are more tool uses than are kept |
| `clear_tool_uses_20250919` `clear_at_least` | `clear_at_least` |
| `clear_tool_uses_20250919` `exclude_tools` | `exclude_tools` |
| `clear_tool_uses_20250919` `clear_tool_inputs` | `clear_tool_inputs` (True, or the tools named) |
| `clear_thinking_20251015` `keep` | `keep_thinking_turns`, with `clear_thinking` |
"""

from __future__ import annotations

from ...core.model import Transcript
from .prune import PruneOptions, tool_result_groups


def context_management(options: PruneOptions, transcript: Transcript) -> dict:
    """The `context_management` field of a Messages API request whose edits do to `transcript`
    what `prune(transcript, options)` does to its tool results, their inputs and its thinking."""
    keep = kept_tool_uses(options, transcript)
    clear_tool_uses: dict = {"type": "clear_tool_uses_20250919",
                             "trigger": {"type": "tool_uses", "value": max(1, keep)},
                             "keep": {"type": "tool_uses", "value": keep}}
    if options.clear_at_least:
        clear_tool_uses["clear_at_least"] = {"type": "input_tokens", "value": options.clear_at_least}
    if options.exclude_tools:
        clear_tool_uses["exclude_tools"] = sorted(options.exclude_tools)
    if options.clear_tool_inputs:
        clear_tool_uses["clear_tool_inputs"] = True if options.clear_tool_inputs is True else sorted(options.clear_tool_inputs)
    edits = [clear_tool_uses]
    if options.clear_thinking:  # the API wants this edit first
        edits.insert(0, {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": options.keep_thinking_turns}})
    return {"edits": edits}


def kept_tool_uses(options: PruneOptions, transcript: Transcript) -> int:
    """How many of the last tool uses keep their results: `keep_tool_uses`, else those of the last
    `hard_clear_after` tool-result messages (prune counts messages, the API tool uses)."""
    if options.keep_tool_uses is not None:
        return options.keep_tool_uses
    groups = tool_result_groups(transcript)
    recent = groups[len(groups) - options.hard_clear_after:] if options.hard_clear_after else []
    return sum(len(transcript.messages[i].tool_results) for indices in recent for i in indices)


def differences(options: PruneOptions) -> list[str]:
    """What prune does with these options that the edits do not: the server only clears."""
    if options.keep_tool_uses is not None or options.hard_clear_after <= options.keep_last:
        return []  # every result prune does not keep, it clears: as the server does
    if options.by_kind:
        how = f"cut by kind to {options.result_token_cap} tokens"
    else:
        how = f"soft-trimmed over {options.soft_trim_chars} characters"
    return [(f"results between the last {options.keep_last} and the last {options.hard_clear_after} tool-result messages "
             f"are {how} here; the server keeps them whole")]
