"""Where transcripts come from and go: files and standard streams (written atomically), URLs
(fsspec), the inputs of a command (files, directories, globs), OpenHands conversation directories.
"""
