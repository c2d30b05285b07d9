"""Running an operation over many inputs: `tasks` (one file's work, as a worker runs it), `batch`
(the files in a pool of processes: progress, reports, the exit status), `cluster` (the same on a
Dask cluster), `batch_api` (the summaries through the providers' batch APIs).
"""
