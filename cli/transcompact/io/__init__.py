"""Where transcripts come from and go, in the order a run uses them: `inputs` (the files a
command's arguments name: files, directories, globs), `files` (reading, and writing atomically),
`compression` (gzip, zstd, bzip2 and xz inputs and outputs), `urls` (fsspec URLs),
`openhands_store` (OpenHands conversation directories), `clashes` (every path a run writes,
compared with its inputs and each other before anything is written), `outputs` (where an output
goes: a file or a conversation directory); and `sessions` (where each agent stores its sessions,
and a glance at a stored log's two ends).
"""
