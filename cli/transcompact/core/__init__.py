"""The lowest layer, which every other imports: `errors` (errors, exit codes, how a file's name is
shown), `settings` (the defaults), `format_names` (the registry of formats: one record each, read without importing them),
`words` (how a count is written), `jsondata` (JSON data kept as read), `model` (the transcript
model), `violation` (what `check` reports), `media` (image and document sizes), and
`summary_text` (the text a summary message shares between the operations and the formats).
"""
