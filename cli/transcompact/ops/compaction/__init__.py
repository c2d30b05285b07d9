"""Compaction, in pipeline order: `cut` (where the recent window begins), `summary_message`
(an earlier summary, and the message a new one goes in), `summarize` (by a model),
`output_errors` and `work_state` (what the dropped part's outputs say: errors, commands, tests,
commits, tasks; the lines that say it found by `line_scan`'s few scans of each output, not a regex
per line), `checkpoint` (the summary built without a model), `compact` (the pipeline),
`events` (what it reports as it goes)."""
