"""The lowest layer, which every other imports: errors and exit codes, settings (the defaults),
the transcript model, JSON data kept as read, media sizes, and the text a summary message shares
between the operations and the formats.
"""
