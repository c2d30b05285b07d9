"""The operations, each a plain function over the transcript model, a folder per pipeline:
`estimate` (counting), `validity` (the rules, repair, the post-condition of every rewrite),
`pruning` (trimming and clearing old tool results without a model, and their archive),
`compaction` (the cut, the summary by a model or without one, the pipeline); then what stands
beside them: `convert` (the active view as a plain request body), `diff` (what a rewrite
changed) and `sessions` (the sessions agents have stored, a line each). Each folder's docstring names its modules in pipeline order.
"""
