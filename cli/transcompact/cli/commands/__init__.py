"""One module per command: parse its flags, call the library, render. In the pipeline's order:
`estimate`, `check`, `repair`, `prune`, `slim`, `expand`, `cut_point`, `summarize`, `compact`; `sessions`, over
the logs agents have stored.
"""
