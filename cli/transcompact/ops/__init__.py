"""The operations, each a plain function over the transcript model, by pipeline:

- counting: `estimate`;
- validity: `check` (the rules), `repair` (the smallest change that meets them), `postcondition`
  (what every rewrite must leave: no error its input did not have);
- pruning: `prune` (trim and clear old tool results), `truncate` (a result cut by the kind of
  output its tool gives), `context_editing` (the same as Anthropic's context editing asks it),
  `archive` (what a rewrite replaced, kept), `expand` (put back from the archive);
- compaction: `cut` (where the recent window begins), `summary_message` (an earlier summary, and
  the message a new one goes in), `summarize` (by a model), `output_errors` and `work_state`
  (what the dropped part's outputs say: errors, commands, tests, commits, tasks), `checkpoint`
  (the summary built without a model), `compact` (the pipeline), `events` (what it reports as it
  goes);
- the rest: `convert` (the active view as a plain request body), `diff` (what a rewrite changed).
"""
