"""Pruning without a model, in pipeline order: `prune` (trim and clear old tool results),
`key_lines` (what a result keeps of what prune takes out: its error, commit, test summary),
`truncate` (a result cut by the kind of output its tool gives), `context_editing` (the same as
Anthropic's context editing asks it), `slim` (a stored log without what its agent never sends),
`archive` (what a rewrite replaced, kept), `expand` (put back from the archive)."""
